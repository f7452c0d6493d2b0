// new_sweep_test.js - the dashboard's "New sweep" panel in headless
// Chromium (Debian's /usr/bin/chromium through playwright-core) against a
// live meshsweepd: the 2015 workflow in the browser. Run by
// ms_dashboard_new_sweep_test.sh, which starts the node and writes the CSV.
//
//   URL=http://127.0.0.1:PORT/ CSV=FILE LABEL=NAME COLUMNS=a,b,... SHOT=FILE
//
// Chooses "CSV file", uploads CSV, checks that the label select offers the
// file's header (COLUMNS, in order) and picks LABEL, checks that the YAML
// now names the file, the label and the 80/20 split, submits, and waits
// (DEADLINE_S) until the panel says "submitted", the sweep is shown and
// its validation-accuracy plot has a point (counted from the Plotly graph
// div's .data). Then submits a spec that is wrong (an unknown key) and
// checks that the node's one error, naming the key, is shown. No console
// error may happen. Prints the sweep id as "sweep ID".
'use strict';

const { chromium } = require('playwright-core');

const env = process.env;
const DEADLINE_MS = Number(env.DEADLINE_S || 120) * 1000;
const t0 = Date.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exitCode = 1;
  throw new Error(msg);
}
const ok = (msg) => console.log('ok - ' + msg);

async function waitFor(page, what, fn, arg) {
  while (Date.now() - t0 < DEADLINE_MS) {
    const v = await page.evaluate(fn, arg);
    if (v) return v;
    await sleep(250);
  }
  return fail('timed out waiting for ' + what);
}

async function main() {
  const browser = await chromium.launch({
    executablePath: env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
  });
  const errors = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1400 } });
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push('page error: ' + e.message));
    await page.goto(env.URL);
    await page.selectOption('#ns-source', 'csv');
    await page.setInputFiles('#ns-csv-train', env.CSV);
    const want = env.COLUMNS.split(',');
    const got = await waitFor(page, 'the label column choices',
      (n) => { const o = [...document.querySelectorAll('#ns-label option')].map((x) => x.value); return o.length === n ? o : null; },
      want.length);
    if (got.join(',') !== want.join(',')) fail('label choices ' + got.join(',') + ', expected ' + want.join(','));
    ok('the label select offers the header: ' + got.join(', '));
    await page.selectOption('#ns-label', env.LABEL);
    const spec = await page.inputValue('#ns-spec');
    const base = env.CSV.split('/').pop();
    const line = `dataset: {file: ${base}, label: ${env.LABEL}, split: 0.2}`;
    if (!spec.includes(line)) fail('the YAML does not say "' + line + '":\n' + spec);
    ok('the YAML names the file, the label and the split');
    // A smaller sweep than the prefilled one, for the test's time: keep the
    // dataset line the panel wrote.
    // (120 training rows: small minibatches and more epochs than the
    // prefilled Fashion-MNIST sweep's 3 of 200.)
    await page.fill('#ns-spec', spec.replace('{values: [1, 2, 4, 8]}', '{values: [1, 2]}')
      .replace('{values: [1, 2, 3]}', '{values: [1, 2]}')
      .replace('epochs:        {value: 3}', 'epochs:        {value: 40}\n  batch_size:    {value: 16}'));
    await page.click('#ns-submit');
    const status = await waitFor(page, 'the submission',
      () => { const s = document.querySelector('#ns-status'); return s.classList.contains('ok') || s.classList.contains('error') ? s.textContent : null; });
    if (!/^submitted: [0-9a-f]{12}/.test(status)) fail('the panel says: ' + status);
    ok('the panel says: ' + status);
    const sweep = await waitFor(page, 'the sweep to be shown',
      () => !document.querySelector('#sweep-card').hidden && location.hash.slice(7));
    const points = await waitFor(page, 'a point in the accuracy plot', () => {
      const div = document.getElementById('plot-val');
      if (!div || !Array.isArray(div.data)) return 0;
      let n = 0;
      for (const t of div.data) for (const y of t.y || []) if (y !== null && y !== undefined) n++;
      return n;
    });
    ok(`the sweep ${sweep} is shown with ${points} point(s) plotted after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    console.log('sweep ' + sweep);
    await page.screenshot({ path: env.SHOT, fullPage: true });
    // A wrong spec: the node's error, naming the key, reaches the panel.
    await page.fill('#ns-spec', (await page.inputValue('#ns-spec')).replace('method: grid', 'method: grid\ncolour: red'));
    await page.click('#ns-submit');
    const err = await waitFor(page, 'the refusal',
      () => { const s = document.querySelector('#ns-status'); return s.classList.contains('error') ? s.textContent : null; });
    if (!/colour/.test(err)) fail('the refusal does not name the key: ' + err);
    ok('a wrong spec is refused naming the key: ' + err);
    // The refusal is an HTTP 400 the page expected: the only console line
    // Chromium logs for it is the failed resource, which is not an error of
    // the page's code.
    const real = errors.filter((e) => !/Failed to load resource: the server responded with a status of 400/.test(e));
    if (real.length) fail('console errors:\n  ' + real.join('\n  '));
    ok('no console errors');
  } finally {
    await browser.close();
  }
}

main().catch((e) => { if (!process.exitCode) { console.error(e); process.exitCode = 1; } });
