// meshsweep dashboard - the "New sweep" panel: the 2015 workflow in the
// browser. Pick a built-in dataset, or upload a CSV (its header is read
// here to offer the label column) or an IDX pair; edit the sweep's YAML
// (prefilled with a depth sweep); submit.
//
// The files go to this node first, as `meshsweep submit` sends them
// (DESIGN.md "Datasets": the client reads the files and uploads them; no
// node opens a path from a spec): POST /api/v1/blobs stores each file's
// bytes and answers its BLAKE2b-256 hash (the browser has no BLAKE2b), then
// POST /api/v1/sweeps?files=ROLE:HASH,... hands the node the spec, whose
// dataset paths are only names here. The node checks the spec and answers
// one error naming the key; it is shown under the form as it is. The
// requests carry what the rest of the page carries: the token cookie set
// by /?token=... (same-origin only, SameSite=Strict), so the token rules are
// the API's own.
'use strict';

(function newSweepPanel() {
  const API = '/api/v1';
  const $ = (sel) => document.querySelector(sel);
  // The spec the panel starts from: how accuracy and time change with
  // depth, as the 2015 study asked.
  const DEPTH_SWEEP = [
    'name: depth-sweep',
    'dataset: fashion-mnist',
    'method: grid',
    'metric: {name: val_accuracy, goal: maximize}',
    'parameters:',
    '  hidden_layers: {values: [1, 2, 4, 8]}',
    '  width:         {value: 64}',
    '  seed:          {values: [1, 2, 3]}',
    '  epochs:        {value: 3}',
    '',
  ].join('\n');

  const form = {
    source: $('#ns-source'),
    builtin: $('#ns-builtin'),
    csvTrain: $('#ns-csv-train'),
    csvTest: $('#ns-csv-test'),
    label: $('#ns-label'),
    idx: $('#ns-idx'),
    spec: $('#ns-spec'),
    submit: $('#ns-submit'),
    status: $('#ns-status'),
  };
  if (!form.spec) return; // a page without the panel
  form.spec.value = DEPTH_SWEEP;

  function setStatus(text, cls) {
    form.status.textContent = text;
    form.status.className = 'small ' + (cls || 'muted');
  }

  // The first record of a CSV text: its fields, with RFC 4180 quoting
  // ("a ""quoted"", field"). Only the header is read here; the node parses
  // the whole file with libcsv.
  function csvHeader(text) {
    const fields = [];
    let field = '';
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (quoted) {
        if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false;
        else field += c;
      } else if (c === '"') quoted = true;
      else if (c === ',') { fields.push(field); field = ''; } else if (c === '\n' || c === '\r') break;
      else field += c;
    }
    fields.push(field);
    return fields.map((f) => f.replace(/^\uFEFF/, '').trim());
  }

  // A YAML flow scalar for a name the user chose (quoted when it needs it).
  const yamlScalar = (s) => (/^[A-Za-z0-9_.\-]+$/.test(s) ? s : JSON.stringify(s));

  // The spec's `dataset:` line for what the form shows.
  function datasetLine() {
    const src = form.source.value;
    if (src === 'builtin') return 'dataset: ' + form.builtin.value;
    if (src === 'csv') {
      const train = form.csvTrain.files[0];
      const test = form.csvTest.files[0];
      if (!train) return null;
      const label = form.label.value ? ', label: ' + yamlScalar(form.label.value) : '';
      if (!test) return 'dataset: {file: ' + yamlScalar(train.name) + label + ', split: 0.2}';
      return 'dataset: {train: ' + yamlScalar(train.name) + ', test: ' + yamlScalar(test.name) + label + '}';
    }
    const idx = idxFiles();
    if (!idx) return null;
    return 'dataset: {train: ' + yamlScalar(idx.train.name) + ', test: ' + yamlScalar(idx.test.name) + '}';
  }

  // The four IDX files by role, told apart by their names as the CLI does
  // ("images-idx3" and "labels-idx1", "train" and "t10k"/"test").
  function idxFiles() {
    const out = {};
    for (const f of form.idx.files) {
      const n = f.name.toLowerCase();
      const test = /t10k|test/.test(n);
      if (/labels?-idx1/.test(n)) out[test ? 'test_labels' : 'train_labels'] = f;
      else if (/images?-idx3/.test(n)) out[test ? 'test' : 'train'] = f;
    }
    return out.train && out.test && out.train_labels && out.test_labels ? out : null;
  }

  // Put the form's dataset into the YAML, replacing its `dataset:` line (or
  // adding one after `name:`), so what is submitted is what the user sees.
  function syncSpec() {
    const line = datasetLine();
    if (!line) return;
    const lines = form.spec.value.split('\n');
    const at = lines.findIndex((l) => /^dataset\s*:/.test(l));
    if (at >= 0) lines[at] = line;
    else lines.splice(lines[0] && /^name\s*:/.test(lines[0]) ? 1 : 0, 0, line);
    form.spec.value = lines.join('\n');
  }

  function showSource() {
    const src = form.source.value;
    for (const el of document.querySelectorAll('[data-ns-source]'))
      el.hidden = el.dataset.nsSource !== src;
    syncSpec();
  }

  async function readHeader() {
    const f = form.csvTrain.files[0];
    form.label.replaceChildren();
    if (!f) return;
    const head = csvHeader(await f.slice(0, 65536).text());
    for (const name of head) {
      const opt = document.createElement('option');
      opt.value = name;
      opt.textContent = name;
      form.label.append(opt);
    }
    // The last column is the usual place of the label (iris: species).
    form.label.value = head.includes('label') ? 'label' : head[head.length - 1];
    setStatus(head.length + ' columns in ' + f.name + '; choose the label column.');
    syncSpec();
  }

  async function answerOf(r) {
    let body = null;
    try { body = await r.json(); } catch (e) { /* not JSON */ }
    if (!r.ok) throw new Error((body && body.error) || r.status + ' ' + r.statusText);
    return body;
  }

  async function upload(file) {
    const r = await fetch(API + '/blobs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream' },
      body: file,
    });
    const body = await answerOf(r);
    return body.hash;
  }

  async function submit(ev) {
    ev.preventDefault();
    form.submit.disabled = true;
    try {
      syncSpec();
      const roles = [];
      const src = form.source.value;
      if (src === 'csv') {
        const train = form.csvTrain.files[0];
        const test = form.csvTest.files[0];
        if (!train) throw new Error('choose a CSV file');
        setStatus('uploading ' + train.name + ' …');
        const trainHash = await upload(train);
        roles.push(['train', trainHash]);
        if (test) {
          setStatus('uploading ' + test.name + ' …');
          roles.push(['test', await upload(test)]);
        } else {
          roles.push(['test', trainHash]); // `file:` + `split:`: one file in both roles
        }
      } else if (src === 'idx') {
        const idx = idxFiles();
        if (!idx) throw new Error('choose the four IDX files (train and test images and labels)');
        for (const role of ['train', 'test', 'train_labels', 'test_labels']) {
          setStatus('uploading ' + idx[role].name + ' …');
          roles.push([role, await upload(idx[role])]);
        }
      }
      const q = roles.length ? '?files=' + roles.map(([r, h]) => r + ':' + h).join(',') : '';
      setStatus('submitting …');
      const r = await fetch(API + '/sweeps' + q, {
        method: 'POST',
        headers: { 'Content-Type': 'application/yaml' },
        body: form.spec.value,
      });
      const sum = await answerOf(r);
      const id = sum.sweep_id;
      setStatus((sum.existed ? 'already submitted: ' : 'submitted: ') + id.slice(0, 12) +
        ' (' + sum.n_tasks + ' tasks)', 'ok');
      if (window.meshsweep && window.meshsweep.showSweep) {
        await window.meshsweep.refreshSweeps();
        window.meshsweep.showSweep(id);
      }
    } catch (e) {
      setStatus(e.message, 'error');
    } finally {
      form.submit.disabled = false;
    }
  }

  form.source.addEventListener('change', showSource);
  form.builtin.addEventListener('change', syncSpec);
  form.csvTrain.addEventListener('change', () => { readHeader().catch((e) => setStatus(e.message, 'error')); });
  form.csvTest.addEventListener('change', syncSpec);
  form.label.addEventListener('change', syncSpec);
  form.idx.addEventListener('change', syncSpec);
  $('#new-sweep').addEventListener('submit', submit);
  showSource();
}());
