// dashboard_test.js - drive the dashboard in headless Chromium (Debian's
// /usr/bin/chromium, through playwright-core) against a live meshsweepd.
// Run by ms_dashboard_browser_test.sh (live) and
// ms_dashboard_10k_test.sh (big); see there for the setup.
//
//   MODE=live URL=http://127.0.0.1:PORT/ SUBMIT="cmd to submit" SHOT=FILE
//       opens the page before the sweep exists, submits it (SUBMIT runs
//       in a shell), then checks that the page is live through
//       /api/v1/events (the stream answers 200 text/event-stream, the
//       pill says "live (events)" and never "polling"; results reach the
//       table and the bar moves between two readings with no REST request
//       of the rows or the sweep list in between: pushed, not polled),
//       that the sweep appears, that its progress bar advances (two
//       increasing readings of done), that the validation-accuracy-vs-
//       depth plot gains points as results arrive (points counted from the
//       Plotly graph div's .data; every point at least MIN_ACC), that the
//       table fills and a click on a row draws that run's learning curve,
//       and that no console error or page error happened (none is
//       expected: the node serves /api/v1/events); saves a screenshot to
//       SHOT.
//   MODE=big URL=... SWEEP=ID N=ROWS SHOT=FILE
//       times the navigation to a finished sweep of N results until its
//       plots and its table are drawn, and prints the figure.
'use strict';

const { chromium } = require('playwright-core');
const { execSync } = require('child_process');

const env = process.env;
const MODE = env.MODE || 'live';
const URL = env.URL;
const SHOT = env.SHOT;
const DEADLINE_MS = Number(env.DEADLINE_S || 150) * 1000;
const t0 = Date.now();

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exitCode = 1;
  throw new Error(msg);
}
function ok(msg) { console.log('ok - ' + msg); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const browser = await chromium.launch({
    executablePath: env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
  });
  const errors = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const text = m.text();
      const where = (m.location() && m.location().url) || '';
      errors.push(text + (where ? ' (' + where + ')' : ''));
    });
    page.on('pageerror', (e) => errors.push('page error: ' + e.message));

    if (MODE === 'big') {
      await big(page);
    } else {
      await live(page);
    }
    await page.screenshot({ path: SHOT, fullPage: true });
    console.log('screenshot: ' + SHOT);
    if (errors.length) fail('console errors:\n  ' + errors.join('\n  '));
    ok('no console errors');
  } finally {
    await browser.close();
  }
}

async function live(page) {
  // The REST requests the page makes (rows and the sweep list), to tell
  // what events brought from what a fetch brought; and the event stream.
  const net = { results: 0, sweeps: 0, inFlight: 0, events: [] };
  const isRows = (u) => /\/api\/v1\/sweeps\/[0-9a-f]+\/results/.test(u);
  const isList = (u) => /\/api\/v1\/sweeps(\?|$)/.test(u);
  page.on('request', (r) => {
    const u = r.url();
    if (isRows(u)) { net.results++; net.inFlight++; }
    if (isList(u)) { net.sweeps++; net.inFlight++; }
  });
  const settled = (r) => { if (isRows(r.url()) || isList(r.url())) net.inFlight--; };
  page.on('requestfinished', settled);
  page.on('requestfailed', settled);
  page.on('response', (r) => {
    if (/\/api\/v1\/events/.test(r.url())) {
      net.events.push(`${r.status()} ${r.headers()['content-type'] || ''}`);
    }
  });

  await page.goto(URL, { waitUntil: 'load' });
  const hasPlotly = await page.evaluate(() => typeof window.Plotly !== 'undefined');
  if (!hasPlotly) fail('the page has no Plotly (vendor/plotly.min.js not served)');
  ok('page loaded with the plotting library');
  // Live through events before anything happens: the pill turns to
  // "live (events)" when the EventSource opens.
  await page.waitForFunction(() => document.querySelector('#live').textContent === 'live (events)',
    null, { timeout: 20000 }).catch(async () => fail('the page did not go live through events: the pill says "' +
      (await page.$eval('#live', (e) => e.textContent)) + '"; /api/v1/events answers: ' + JSON.stringify(net.events)));
  if (!net.events.length || !/^200 text\/event-stream/.test(net.events[0])) {
    fail('/api/v1/events did not answer 200 text/event-stream: ' + JSON.stringify(net.events));
  }
  ok(`live through /api/v1/events (${net.events[0]}; pill "live (events)")`);
  execSync(env.SUBMIT, { stdio: ['ignore', 'inherit', 'inherit'] });
  const sweep = (await page.waitForSelector('#sweeps .sweep', { timeout: 20000 })) &&
    (await page.$eval('#sweeps .sweep', (e) => e.dataset.id));
  ok('the sweep appears in the list: ' + sweep.slice(0, 12));

  const done = [];   // distinct readings of the progress bar's done count
  const points = []; // distinct readings of the val-vs-depth point count
  const modes = new Set();
  let pushedRows = 0;  // rows that reached the table with no fetch of rows
  let pushedBar = 0;   // bar moves with no fetch of the sweep list
  let prev = null;
  let total = 0;
  let lastPoints = -1;
  while (Date.now() - t0 < DEADLINE_MS) {
    const before = { results: net.results, sweeps: net.sweeps, idle: net.inFlight === 0 };
    const r = await page.evaluate((id) => {
      const row = document.querySelector(`#sweeps .sweep[data-id="${id}"]`);
      const bar = row && row.querySelector('.b-done');
      const rc = /^\((\d+)\)$/.exec(document.querySelector('#rows-count').textContent);
      let minY = 1;
      const points = (function (id2) {
        const div = document.getElementById(id2);
        if (!div || !Array.isArray(div.data)) return 0;
        let n = 0;
        for (const t of div.data) for (const y of t.y || []) if (y !== null && y !== undefined) { n++; minY = Math.min(minY, y); }
        return n;
      })('plot-val');
      return {
        done: row ? Number(row.dataset.done) : -1,
        total: row ? Number(row.dataset.total) : 0,
        width: bar ? bar.style.width : '',
        text: row ? row.querySelector('.counts').textContent : '',
        rows: rc ? Number(rc[1]) : -1,
        mode: document.querySelector('#live').textContent,
        points,
        minY,
      };
    }, sweep);
    r.net = before;
    modes.add(r.mode);
    total = r.total;
    // Between the previous reading and this one, no fetch started and
    // none was running at either end: what changed came by events.
    if (prev && prev.net.idle && before.idle && before.results === prev.net.results) {
      if (prev.rows >= 0 && r.rows > prev.rows) pushedRows += r.rows - prev.rows;
    }
    if (prev && prev.net.idle && before.idle && before.sweeps === prev.net.sweeps && r.done > prev.done) {
      pushedBar++;
    }
    prev = r;
    if (!done.length || r.done !== done[done.length - 1].done) {
      done.push(r);
      console.log(`  progress: ${r.text} (bar ${r.width}; table ${r.rows} rows; ${r.mode}) at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    if (r.points !== lastPoints) {
      points.push(r.points);
      lastPoints = r.points;
      console.log(`  val-vs-depth plot: ${r.points} points (lowest ${r.minY.toFixed(4)}) at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    if (total > 0 && r.done === total && r.rows === total && r.points >= Number(env.EXPECT_POINTS || 1)) break;
    await sleep(250);
  }
  if ([...modes].some((m) => m !== 'live (events)')) fail('the page left the event stream: pill read ' + [...modes].join(', '));
  ok('the pill said "live (events)" at every reading');
  if (pushedRows < 1) fail(`no result reached the table without a fetch of the rows (${net.results} fetches of rows)`);
  ok(`${pushedRows} of ${total} results reached the table by events, with no fetch of rows in between ` +
    `(${net.results} fetches of rows in all, ${net.sweeps} of the sweep list)`);
  if (pushedBar < 1) fail('the progress bar never moved without a fetch of the sweep list');
  ok(`the progress bar moved ${pushedBar} times by events, with no fetch of the sweep list in between`);
  // The bar advanced: two readings, the later one higher, and it moved
  // visibly (its width follows done).
  const inc = done.filter((r) => r.done > 0 && r.done < total);
  if (inc.length < 2 || !(inc[1].done > inc[0].done)) {
    fail('the progress bar did not show two increasing readings before the end: ' + JSON.stringify(done.map((r) => r.done)));
  }
  ok(`progress bar advanced: ${done.map((r) => r.done).join(' -> ')} of ${total}`);
  if (done[done.length - 1].done !== total) fail(`the sweep did not finish in time (${done[done.length - 1].done}/${total})`);
  const grew = points.filter((n, i) => i > 0 && n > points[i - 1]).length;
  const firstNonZero = points.find((n) => n > 0);
  if (grew < 2 || firstNonZero === undefined || firstNonZero >= points[points.length - 1]) {
    fail('the accuracy-vs-depth plot did not gain points as results arrived: ' + points.join(' -> '));
  }
  ok(`accuracy-vs-depth plot gained points: ${points.join(' -> ')}`);
  const want = Number(env.EXPECT_POINTS || 0);
  if (want && points[points.length - 1] !== want) fail(`plot has ${points[points.length - 1]} points, expected ${want}`);
  const minAcc = Number(env.MIN_ACC || 0);
  if (minAcc && !(prev.minY >= minAcc)) fail(`a point of the val-vs-depth plot is below ${minAcc}: ${prev.minY}`);
  if (minAcc) ok(`every point of the val-vs-depth plot is at least ${minAcc} (lowest ${prev.minY.toFixed(4)})`);

  // The table holds every result; clicking a row draws its learning curve.
  await page.waitForFunction((n) => document.querySelectorAll('#results tbody tr').length === Math.min(n, 50) &&
    document.querySelector('#rows-count').textContent === `(${n})`, total, { timeout: 10000 });
  ok(`results table: ${total} rows`);
  await page.click('#results thead th[data-key="val_accuracy"]');
  await page.click('#results thead th[data-key="val_accuracy"]'); // descending
  const col = await page.$$eval('#results thead th', (ths) => ths.findIndex((th) => th.dataset.key === 'val_accuracy'));
  const accs = await page.$$eval('#results tbody tr', (trs, c) => trs.map((tr) => tr.children[c].textContent), col);
  const best = accs[0];
  if (!/^[01]\.\d{4}$/.test(best)) fail('val acc column reads ' + best);
  const sorted = [...accs].sort((a, b) => Number(b) - Number(a));
  if (JSON.stringify(accs) !== JSON.stringify(sorted)) fail('the table is not sorted by val acc: ' + accs.join(','));
  ok('table sorts by validation accuracy (best ' + best + ')');
  await page.click('#results tbody tr');
  await page.waitForFunction(() => {
    const d = document.getElementById('plot-curve');
    return d && Array.isArray(d.data) && d.data.length > 0 && d.data[0].x.length > 1;
  }, null, { timeout: 10000 });
  ok('clicking a row draws its learning curve');
  const timePts = await page.evaluate(() => document.getElementById('plot-time').data.length);
  if (timePts < 2) fail('time-per-epoch plot has no fit lines');
  ok('time-per-epoch plot with fit lines (' + timePts + ' traces)');
  await axes(page);
  await page.waitForFunction(() => document.querySelectorAll('#nodes tbody tr').length >= 1, null, { timeout: 10000 });
  ok('pool table shows this node');
  // The pool card polls /status every 5 s: wait until it shows the sweep
  // finished, so the screenshot does not show a stale "1 running".
  await page.waitForFunction((n) => document.querySelector('#pool-summary').textContent
    .includes(`store: ${n} done, 0 running, 0 pending`), total, { timeout: 15000 })
    .catch(() => fail('the pool card does not show the finished sweep: ' + JSON.stringify(total)));
  ok('pool card: ' + (await page.$eval('#pool-summary', (e) => e.textContent)));
  await page.mouse.move(0, 0);
}

// What a plot shows: its titles, and each trace's x values and error
// bars.
function plotOf(page, id) {
  return page.evaluate((pid) => {
    const d = document.getElementById(pid);
    const lay = d.layout || {};
    const t = (a) => (a && a.title && (a.title.text !== undefined ? a.title.text : a.title)) || '';
    return {
      title: t(lay), x: t(lay.xaxis), y: t(lay.yaxis), xtype: (lay.xaxis || {}).type || '',
      traces: (d.data || []).map((tr) => ({
        name: tr.name, x: [...(tr.x || [])], y: [...(tr.y || [])],
        up: tr.error_y && tr.error_y.array ? [...tr.error_y.array] : [],
        down: tr.error_y && tr.error_y.arrayminus ? [...tr.error_y.arrayminus] : [],
      })),
    };
  }, id);
}

// Wait until the metric plot's axis titles match (a RegExp source per
// axis, 'xaxis' and/or 'yaxis'), else fail with what.
async function waitTitles(page, want, what) {
  await page.waitForFunction((w) => {
    const d = document.getElementById('plot-val');
    return Object.entries(w).every(([axis, src]) => {
      const t = d && d.layout && d.layout[axis] && d.layout[axis].title;
      return t && new RegExp(src).test(t.text !== undefined ? t.text : t);
    });
  }, want, { timeout: 10000 }).catch(() => fail(what));
}

// The axis and metric selects: the sweep's swept numeric parameters
// (depth, width) are offered; choosing width redraws the metric plot
// against width (its axis title and its points change: one line per
// depth, at widths 32 and 64, each point with its 95% interval over the
// 3 seeds, as GET .../analysis?x=width answers); choosing test_loss
// changes the metric plot's y axis; back to depth and val_accuracy.
async function axes(page) {
  const offered = await page.$$eval('#axis-x option', (os) => os.map((o) => o.value));
  if (JSON.stringify(offered) !== JSON.stringify(['hidden_layers', 'width'])) {
    fail('the axis select offers ' + JSON.stringify(offered) + ', not hidden_layers and width');
  }
  const before = await plotOf(page, 'plot-val');
  if (!/^hidden layers/.test(before.x)) fail('the metric plot\'s x axis reads "' + before.x + '"');
  await page.selectOption('#axis-x', 'width');
  await waitTitles(page, { xaxis: '^width$' }, 'choosing width did not change the plot\'s x axis title');
  const after = await plotOf(page, 'plot-val');
  const xs = [...new Set(after.traces.flatMap((t) => t.x))].sort((a, b) => a - b);
  if (JSON.stringify(xs) !== '[32,64]') fail('against width the points are at ' + JSON.stringify(xs));
  if (after.traces.length !== 4 || !after.traces.every((t) => / · depth \d+$/.test(t.name))) {
    fail('against width: not one line per depth: ' + after.traces.map((t) => t.name).join(', '));
  }
  if (JSON.stringify(after.traces.map((t) => t.x)) === JSON.stringify(before.traces.map((t) => t.x))) {
    fail('the points did not change with the axis');
  }
  const sweep = await page.evaluate(() => window.meshsweep.state.selected);
  const api = await page.evaluate(async (id) => (await fetch(`/api/v1/sweeps/${id}/analysis?x=width`)).json(), sweep);
  after.traces.forEach((t, i) => {
    const g = api.groups[i];
    g.points.forEach((p, k) => {
      if (Math.abs(t.y[k] - p.mean) > 1e-12 || Math.abs(t.up[k] - (p.hi - p.mean)) > 1e-12 ||
          Math.abs(t.down[k] - (p.mean - p.lo)) > 1e-12 || !(t.up[k] > 0)) {
        fail(`point ${k} of ${t.name}: drawn ${t.y[k]} +${t.up[k]} -${t.down[k]}, the API says ${JSON.stringify(p)}`);
      }
    });
  });
  ok(`choosing width redraws the metric plot: x axis "${before.x}" -> "${after.x}", ` +
    `${after.traces.length} lines (one per depth) at widths ${xs.join(', ')}, each point with the API's 95% interval`);
  const timeX = await plotOf(page, 'plot-time');
  if (timeX.x !== 'width') fail('the time plot does not follow the axis: "' + timeX.x + '"');
  await page.selectOption('#axis-metric', 'test_loss');
  await waitTitles(page, { yaxis: '^test_loss$' }, 'choosing test_loss did not change the metric plot\'s y axis');
  const loss = await plotOf(page, 'plot-val');
  if (!/^test_loss vs width/.test(loss.title)) fail('the metric plot\'s title reads "' + loss.title + '"');
  ok(`choosing test_loss: "${loss.title}"; the time plot follows the axis too`);
  await page.selectOption('#axis-metric', 'val_accuracy');
  await page.selectOption('#axis-x', 'hidden_layers');
  await waitTitles(page, { xaxis: '^hidden layers', yaxis: '^val_accuracy$' },
    'back to depth and val_accuracy: the plot did not follow');
  ok('back to depth and val_accuracy');
}

async function big(page) {
  const n = Number(env.N);
  const nav = Date.now();
  await page.goto(URL + '#sweep=' + env.SWEEP, { waitUntil: 'load' });
  // Drawn: both accuracy plots and the time plot hold data, and the
  // table shows its first page.
  await page.waitForFunction(() => {
    const has = (id) => { const d = document.getElementById(id); return d && Array.isArray(d.data) && d.data.length > 0; };
    return has('plot-val') && has('plot-test') && has('plot-time') &&
      document.querySelectorAll('#results tbody tr').length > 0;
  }, null, { timeout: 60000, polling: 'raf' });
  const ms = Date.now() - nav;
  // Then every row loaded (the table sortable over all of them).
  await page.waitForFunction((rows) => document.querySelector('#rows-count').textContent === `(${rows})`,
    n, { timeout: 60000, polling: 100 });
  const allMs = Date.now() - nav;
  const inner = await page.evaluate(() => {
    const d = window.meshsweep.state.drawn;
    return { plots: d.plots - d.t0, table: d.table - d.t0 };
  });
  console.log(`dashboard with ${n} results: navigation to plots and table drawn: ${ms} ms ` +
    `(in the page, from selecting the sweep: plots ${inner.plots.toFixed(0)} ms, first table page ${inner.table.toFixed(0)} ms; ` +
    `target < 2000 ms, not asserted); all ${n} rows loaded and sortable: ${allMs} ms`);
  // Sorting all rows stays quick.
  const sortMs = await page.evaluate(async () => {
    const t = performance.now();
    document.querySelector('#results thead th[data-key="test_accuracy"]').click();
    return performance.now() - t;
  });
  console.log(`sorting ${n} rows by test accuracy and redrawing the page of rows: ${sortMs.toFixed(0)} ms`);
  ok('big sweep drawn');
}

main().catch((e) => {
  if (!process.exitCode) {
    console.error('FAIL: ' + (e && e.stack ? e.stack : e));
    process.exitCode = 1;
  }
});
