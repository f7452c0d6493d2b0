// meshsweep dashboard - plain modern JavaScript, no framework, no bundler.
//
// Data: this node's REST API (/api/v1/sweeps, .../results, .../analysis,
// /status, /peers), kept current by the server-sent events of
// /api/v1/events (progress, result, verdict, peer, sweep; resumed with
// Last-Event-ID). Where the node has no /events (404), the page polls
// the REST routes every 2 s instead. Authentication needs no code: a
// remote user opens /?token=..., the node sets a cookie, and same-origin
// fetch and EventSource send it.
//
// Speed: on opening, the sweep list, the shown sweep's analysis (the
// plots are drawn from it, not from the rows) and the table's first page
// are fetched at once, while plotly.js still loads; the rest of the rows
// follow in the background in large pages of only the columns the table
// shows (?fields=, no curve, no platform: a run's curve is fetched when
// it is chosen), each page added and the table redrawn as it arrives.
// Rows live in one array; sorting is over all of them, but only
// one page of the table is in the DOM. Plot redraws (Plotly.react) and
// table redraws are coalesced (at most a few per second), and the
// analysis is refetched at most once a second, so a burst of results
// does not freeze the page. docs/DASHBOARD.md describes the page.
'use strict';

const API = '/api/v1';
const PAGE_ROWS = 50;           // table rows in the DOM at once
const FETCH_ROWS = 2500;        // rows per background request
// The row fields the table, the pool and the plots' point clicks read.
const TABLE_FIELDS = ['task_id', 'node_id', 'replica', 'config', 'status', 'val_accuracy',
  'test_accuracy', 'seconds_per_epoch', 'epochs', 'params', 'verdict', 'verdict_revision',
  'verdict_operators', 'counted'].join(',');
const POLL_MS = 2000;           // fallback polling interval
const POOL_POLL_MS = 5000;      // /status and /peers
const ANALYSIS_MIN_MS = 1000;   // analysis refetched at most this often
const DRAW_MIN_MS = 300;        // plots and table redrawn at most this often
const THROUGHPUT_WINDOW_S = 300; // rolling throughput plot

const state = {
  sweeps: new Map(),     // sweep_id -> summary (counts, state, name, ...)
  selected: null,        // sweep_id shown below the list
  rows: [],              // result rows of the selected sweep
  rowIndex: new Map(),   // task_id/node_id -> index in rows
  loadingRows: false,
  analysis: null,
  x: null,               // the analysis axis asked for (null: the default, depth)
  metric: null,          // the metric asked for (null: the sweep's own)
  extraKeys: [],         // config keys that vary among rows (table columns)
  sort: { key: null, dir: 1 },  // null: the node's order (task index)
  sorted: null,          // rows in display order (null = to sort again)
  page: 0,
  chosen: null,          // row whose learning curve is shown
  status: null,
  peers: [],
  throughput: [],        // [{t, finished}] samples (Date.now() ms)
  tpSeed: null,          // the throughput before the page opened (throughputSeed)
  clockSkew: 0,          // node's clock - this browser's, ms
  live: 'connecting',    // 'events' | 'polling' | 'connecting'
  lastEventId: null,
  timers: {},
  drawn: {},             // first-draw timestamps (performance.now())
};

const $ = (sel) => document.querySelector(sel);
// plotly.js loads after this script (both deferred), so that the data is
// fetched while it loads: draw only once it is there (DOMContentLoaded).
const hasPlotly = () => typeof window.Plotly !== 'undefined';
const plotlyWaiting = new Set();
let domReady = false;
document.addEventListener('DOMContentLoaded', () => {
  domReady = true;
  for (const fn of plotlyWaiting) fn();
  plotlyWaiting.clear();
});
// True when plotly.js is there; else fn runs once it may be (false).
function whenPlotly(fn) {
  if (hasPlotly()) return true;
  if (!domReady) plotlyWaiting.add(fn);
  return false;
}
const PLOT_CONFIG = { displaylogo: false, responsive: true };

// ---------------------------------------------------------------------------
// helpers

async function getJSON(path, onResponse) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  if (onResponse) onResponse(r);
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
    const err = new Error(path + ': ' + msg);
    err.status = r.status;
    throw err;
  }
  return r.json();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c));
  return e;
}

const short = (hex) => (hex ? String(hex).slice(0, 12) : '');
// A node, task or operator id as 12 hex with the whole id in a tooltip
// (an operator that is a name is shown as it is, cut with an ellipsis
// by the cell's CSS when long, also with a tooltip).
const isLongHex = (s) => typeof s === 'string' && /^[0-9a-f]{16,}$/.test(s);
function idCell(id, cls, suffix) {
  if (id === null || id === undefined || id === '') return el('td', { class: cls || '' }, '–');
  const text = String(id);
  const td = el('td', { class: ((cls || '') + ' id-cell').trim(), title: text },
    (isLongHex(text) ? short(text) : text) + (suffix || ''));
  return td;
}
function fmt(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (typeof v !== 'number') return String(v);
  return digits === undefined ? String(v) : v.toFixed(digits);
}
function fmtSeconds(s) {
  if (s === null || s === undefined) return '–';
  if (s < 0.001) return (s * 1e6).toFixed(0) + ' µs';
  if (s < 1) return (s * 1e3).toFixed(1) + ' ms';
  return s.toFixed(2) + ' s';
}

// Depth and width of a config: hidden_sizes (list) or hidden_layers and
// width, as node/derive/ms_analysis.h reads them.
function depthOf(c) {
  if (!c) return null;
  if (Array.isArray(c.hidden_sizes)) return c.hidden_sizes.length;
  return typeof c.hidden_layers === 'number' ? c.hidden_layers : null;
}
function widthOf(c) {
  if (!c) return null;
  if (Array.isArray(c.hidden_sizes)) return c.hidden_sizes.length ? Math.max(...c.hidden_sizes) : 0;
  return typeof c.width === 'number' ? c.width : null;
}

function showBanner(text) {
  const b = $('#banner');
  b.textContent = text;
  b.hidden = !text;
}

// throttle(key, ms, fn): run fn at most once per ms, the last call wins
// (trailing edge), so a burst of events costs one redraw.
function throttle(key, ms, fn) {
  const t = state.timers[key] || (state.timers[key] = { last: 0, pending: null });
  if (t.pending) return;
  const wait = Math.max(0, t.last + ms - performance.now());
  t.pending = setTimeout(() => {
    t.pending = null;
    t.last = performance.now();
    fn();
  }, wait);
}

function setLive(mode) {
  state.live = mode;
  const p = $('#live');
  p.className = 'pill ' + (mode === 'events' ? 'live' : mode === 'polling' ? 'polling' : '');
  p.textContent = mode === 'events' ? 'live (events)' : mode === 'polling' ? 'polling every 2 s' : 'connecting';
}

// ---------------------------------------------------------------------------
// sweep list with progress bars

function counts(s) {
  const c = s.counts || {};
  const total = s.n_tasks !== undefined ? s.n_tasks
    : (c.pending || 0) + (c.claimed || 0) + (c.running || 0) + (c.done || 0) + (c.failed || 0) + (c.cancelled || 0);
  return {
    total,
    done: c.done || 0,
    failed: c.failed || 0,
    running: (c.running || 0) + (c.claimed || 0),
    pending: c.pending || 0,
    cancelled: c.cancelled || 0,
  };
}

function renderSweeps() {
  const box = $('#sweeps');
  const list = [...state.sweeps.values()].sort((a, b) => (b.created_at_ms || 0) - (a.created_at_ms || 0));
  if (!list.length) {
    box.replaceChildren(el('p', { class: 'muted' }, 'No sweeps yet: submit one with `meshsweep submit SPEC.yaml`.'));
    return;
  }
  const existing = new Map([...box.querySelectorAll('.sweep')].map((e) => [e.dataset.id, e]));
  const frag = [];
  for (const s of list) {
    const c = counts(s);
    let row = existing.get(s.sweep_id);
    if (!row) {
      row = el('div', { class: 'sweep', dataset: { id: s.sweep_id } },
        el('div', {}, el('div', { class: 'name' }), el('div', { class: 'id', title: s.sweep_id }, short(s.sweep_id))),
        el('div', { class: 'state' }),
        el('div', { class: 'bar', role: 'progressbar' },
          el('span', { class: 'b-done' }), el('span', { class: 'b-failed' }), el('span', { class: 'b-running' })),
        el('div', { class: 'counts' }));
      row.addEventListener('click', () => selectSweep(s.sweep_id));
    }
    row.querySelector('.name').textContent = s.name || '(unnamed)';
    const st = row.querySelector('.state');
    st.textContent = s.state || '';
    st.className = 'state ' + (s.state || '');
    const pct = (n) => (c.total ? (100 * n) / c.total : 0).toFixed(2) + '%';
    row.querySelector('.b-done').style.width = pct(c.done);
    row.querySelector('.b-failed').style.width = pct(c.failed);
    row.querySelector('.b-running').style.width = pct(c.running);
    const bar = row.querySelector('.bar');
    bar.setAttribute('aria-valuemax', c.total);
    bar.setAttribute('aria-valuenow', c.done);
    row.dataset.done = c.done;
    row.dataset.total = c.total;
    row.querySelector('.counts').textContent =
      `${c.done}/${c.total} done` + (c.failed ? ` · ${c.failed} failed` : '') +
      (c.running ? ` · ${c.running} running` : '') + (c.cancelled ? ` · ${c.cancelled} cancelled` : '');
    row.classList.toggle('selected', s.sweep_id === state.selected);
    frag.push(row);
  }
  box.replaceChildren(...frag);
  sampleThroughput();
}

async function loadSweeps() {
  const d = await getJSON(API + '/sweeps');
  const seen = new Set();
  for (const s of d.sweeps || []) {
    seen.add(s.sweep_id);
    const old = state.sweeps.get(s.sweep_id);
    const before = old ? finishedOf(old.counts) : null;
    state.sweeps.set(s.sweep_id, Object.assign(old || {}, s));
    if (before !== null && s.sweep_id === state.selected && before !== finishedOf(s.counts)) {
      onSelectedProgress();
    }
  }
  for (const id of [...state.sweeps.keys()]) if (!seen.has(id)) state.sweeps.delete(id);
  state.sweepsLoaded = true;
  // A sweep selected by its prefix (a link) gets its full id.
  if (state.selected && state.selected.length < 64) {
    const full = [...seen].find((id) => id.startsWith(state.selected));
    if (full) {
      state.selected = full;
      const s = state.sweeps.get(full);
      if (s && s.name) $('#sweep-title').firstChild.textContent = 'Sweep ' + s.name + ' ';
    }
  }
  renderSweeps();
  if (!state.selected && state.sweeps.size) {
    const want = new URLSearchParams(location.hash.slice(1)).get('sweep');
    const list = [...state.sweeps.values()].sort((a, b) => (b.created_at_ms || 0) - (a.created_at_ms || 0));
    const pick = (want && list.find((s) => s.sweep_id.startsWith(want))) ||
      list.find((s) => s.state === 'active') || list[0];
    selectSweep(pick.sweep_id);
  }
}

function finishedOf(c) {
  return c ? (c.done || 0) + (c.failed || 0) : -1;
}

// ---------------------------------------------------------------------------
// the selected sweep: rows, analysis, plots, table

async function selectSweep(id) {
  if (state.selected && (state.selected === id || id.startsWith(state.selected)) && state.rows.length) return;
  state.selected = id;
  history.replaceState(null, '', '#sweep=' + id.slice(0, 12));
  state.rows = [];
  state.rowIndex = new Map();
  state.sorted = null;
  state.page = 0;
  state.chosen = null;
  state.analysis = null;
  state.x = null;
  state.metric = null;
  state.drawn = { t0: performance.now() };
  renderSweeps();
  $('#sweep-card').hidden = false;
  const s = state.sweeps.get(id);
  $('#sweep-title').textContent = 'Sweep ' + (s && s.name ? s.name : '') + ' ';
  $('#sweep-title').append(el('span', { class: 'mono muted' }, short(id)));
  await Promise.all([loadRows(), loadAnalysis()]);
}

// Every row of the selected sweep: first one table page (drawn at once,
// in the node's task order), then the rest in pages of FETCH_ROWS, only
// the table's fields, each page added and the table redrawn (throttled)
// as it arrives, so the page stays responsive while a big sweep streams in.
async function loadRows() {
  const id = state.selected;
  if (state.loadingRows) { state.reloadRows = true; return; }
  state.loadingRows = true;
  try {
    const rows = [];
    let after = null;
    const fresh = !state.rows.length;
    for (let guard = 0; guard < 10000; guard++) {
      const q = new URLSearchParams({ limit: guard === 0 ? String(PAGE_ROWS) : String(FETCH_ROWS), fields: TABLE_FIELDS });
      if (after !== null) q.set('after', after);
      const page = await getJSON(`${API}/sweeps/${id}/results?${q}`);
      if (!isSelected(id)) return;
      rows.push(...page.rows);
      const more = !(page.next === null || page.next === undefined || !page.rows.length);
      if (fresh && more) {
        // Show what has come so far; the rows from events stay.
        for (const r of page.rows) upsertRow(r, true);
        state.partial = true;
        if (guard === 0) { computeExtraKeys(); drawTable(); } else scheduleTable();
      }
      if (!more) break;
      after = page.next;
    }
    state.partial = false;
    if (!isSelected(id)) return;
    state.rows = [];
    state.rowIndex = new Map();
    for (const r of rows) upsertRow(r, false);
    computeExtraKeys();
    state.sorted = null;
    scheduleTable();
    schedulePool();
  } catch (e) {
    showBanner('Cannot load results: ' + e.message);
  } finally {
    state.loadingRows = false;
    if (state.reloadRows) { state.reloadRows = false; loadRows(); }
  }
}

// Is id (full, or the prefix a link gave) the selected sweep?
function isSelected(id) {
  const s = state.selected;
  return !!s && !!id && (s.startsWith(id) || id.startsWith(s));
}

function rowKey(r) { return r.task_id + '/' + (r.node_id || '') + '/' + (r.replica || ''); }

function upsertRow(r, live) {
  const k = rowKey(r);
  const i = state.rowIndex.get(k);
  r.__depth = depthOf(r.config);
  r.__width = widthOf(r.config);
  if (i === undefined) {
    state.rowIndex.set(k, state.rows.length);
    state.rows.push(r);
  } else {
    state.rows[i] = r;
  }
  if (live) state.sorted = null;
  // The learning-curve plot shows the first finished run until one is
  // chosen (a click on a table row or a point), never empty axes.
  if (!state.chosen && r.status === 'ok') choose(r);
}

// The analysis along the chosen axis for the chosen metric: the node
// computes it (node/derive/ms_analysis.c: points, 95% intervals, plateau);
// the page only draws what it answers.
async function loadAnalysis() {
  const id = state.selected;
  const q = new URLSearchParams();
  if (state.x) q.set('x', state.x);
  if (state.metric) q.set('metric', state.metric);
  const want = q.toString();
  try {
    const a = await getJSON(`${API}/sweeps/${id}/analysis${want ? '?' + want : ''}`);
    if (!isSelected(id) || want !== analysisQuery()) return;
    state.analysis = a;
    fillAxisControls(a);
    schedulePlots();
  } catch (e) {
    // 422: rows the analysis refuses (e.g. no activation): say so, keep the table.
    $('#analysis-note').textContent = 'analysis: ' + e.message;
  }
}

function analysisQuery() {
  const q = new URLSearchParams();
  if (state.x) q.set('x', state.x);
  if (state.metric) q.set('metric', state.metric);
  return q.toString();
}

// The axis and metric selects offer what the analysis says it can take:
// its swept numeric parameters ("axes") and its metrics.
function fillAxisControls(a) {
  const fill = (sel, values, current, label) => {
    const have = [...sel.options].map((o) => o.value).join('\n');
    if (have !== values.join('\n')) {
      sel.replaceChildren(...values.map((v) => el('option', { value: v }, label ? label(v) : v)));
    }
    sel.value = current;
  };
  fill($('#axis-x'), a.axes || [a.x], a.x, (v) => (v === 'hidden_layers' ? 'depth (hidden_layers)' : v));
  fill($('#axis-metric'), a.metrics || [a.metric.name], a.metric.name);
  $('#axis-note').textContent = `${a.metric.name}: ${a.metric.goal}` +
    (a.x_scale === 'log' ? ` · ${a.x} spans orders of magnitude: log scale` : '');
}

function onAxisChange() {
  state.x = $('#axis-x').value || null;
  state.metric = $('#axis-metric').value || null;
  loadAnalysis();
}

// Results arrived for the selected sweep: analysis at most once a second.
function onSelectedProgress() {
  throttle('analysis', ANALYSIS_MIN_MS, loadAnalysis);
}

function groupName(g, keys) {
  let n = g.activation;
  if (g.width !== null && g.width !== undefined) n += ` · width ${g.width}`;
  if (g.hidden_layers !== undefined) n += ` · depth ${g.hidden_layers}`;
  for (const k of keys || []) if (g.params && g.params[k] !== undefined) n += ` · ${k} ${g.params[k]}`;
  return n;
}

const PALETTE = ['#3b7dd8', '#e0793b', '#2f9e5b', '#c2458a', '#7a5cc9', '#8c6d31', '#1fa4b5', '#d64545', '#5b6b7f', '#a3b61f'];

// The axis's name on a plot and in a hover.
function xTitle(a) {
  const t = a.x === 'hidden_layers' ? 'hidden layers (depth)' : a.x;
  return a.x_scale === 'log' ? t + ' (log scale)' : t;
}

// The chosen metric against x: each group's means over seeds, with the
// 95% interval the analysis gives as (asymmetric) error bars; a point of
// one seed has none (its hover says so).
function metricTraces() {
  const a = state.analysis;
  if (!a) return [];
  const xl = a.x_label || a.x;
  return (a.groups || []).map((g, i) => {
    const ds = (g.points || []).filter((d) => d.mean !== null && d.mean !== undefined);
    const has = (d) => d.lo !== null && d.lo !== undefined;
    return {
      type: 'scatter',
      mode: 'lines+markers',
      name: groupName(g, a.group_keys),
      x: ds.map((d) => d.x),
      y: ds.map((d) => d.mean),
      error_y: {
        type: 'data', symmetric: false, visible: true, thickness: 1,
        array: ds.map((d) => (has(d) ? d.hi - d.mean : 0)),
        arrayminus: ds.map((d) => (has(d) ? d.mean - d.lo : 0)),
      },
      text: ds.map((d) => (has(d) ? `n=${d.n_metric}, 95% ${fmt(d.lo, 4)} to ${fmt(d.hi, 4)}` : `n=${d.n_metric}, no interval`)),
      line: { color: PALETTE[i % PALETTE.length] },
      customdata: ds.map(() => i),
      hovertemplate: `${xl} %{x}: %{y:.4f} (%{text})<extra>%{fullData.name}</extra>`,
    };
  });
}

// Test accuracy against x (mean ± std over seeds), beside the metric.
function accuracyTraces(metric) {
  const a = state.analysis;
  if (!a) return [];
  const xl = a.x_label || a.x;
  return (a.groups || []).map((g, i) => {
    const ds = (g.points || []).filter((d) => d[metric + '_mean'] !== null && d[metric + '_mean'] !== undefined);
    return {
      type: 'scatter',
      mode: 'lines+markers',
      name: groupName(g, a.group_keys),
      x: ds.map((d) => d.x),
      y: ds.map((d) => d[metric + '_mean']),
      error_y: { type: 'data', array: ds.map((d) => d[metric + '_std'] || 0), visible: true, thickness: 1 },
      text: ds.map((d) => `n=${d.n}`),
      line: { color: PALETTE[i % PALETTE.length] },
      customdata: ds.map(() => i),
      hovertemplate: `${xl} %{x}: %{y:.4f} (%{text})<extra>%{fullData.name}</extra>`,
    };
  });
}

function timeTraces() {
  const a = state.analysis;
  if (!a) return [];
  const xl = a.x_label || a.x;
  const out = [];
  (a.groups || []).forEach((g, i) => {
    const color = PALETTE[i % PALETTE.length];
    const ds = (g.points || []).filter((d) => d.seconds_per_epoch_mean !== null && d.seconds_per_epoch_mean !== undefined);
    out.push({
      type: 'scatter', mode: 'markers', name: groupName(g, a.group_keys),
      x: ds.map((d) => d.x), y: ds.map((d) => d.seconds_per_epoch_mean),
      marker: { color }, legendgroup: 'g' + i,
      hovertemplate: `${xl} %{x}: %{y:.3s} s/epoch<extra>%{fullData.name}</extra>`,
    });
    const f = g.time_fit;
    if (f && ds.length) {
      // The line through each x (straight on a linear axis, and drawn
      // right on a log one).
      const xs = ds.map((d) => d.x);
      out.push({
        type: 'scatter', mode: 'lines', name: `fit ${f.slope.toExponential(2)} s per ${xl}, r²=${fmt(f.r2, 3)}`,
        x: xs, y: xs.map((x) => f.intercept + f.slope * x),
        line: { color, dash: 'dot' }, legendgroup: 'g' + i,
        hovertemplate: `fit: %{y:.3s} s/epoch (slope ${f.slope.toExponential(2)}, r² ${fmt(f.r2, 3)})<extra></extra>`,
      });
    }
  });
  return out;
}

function curveTraces() {
  const r = state.chosen;
  if (!r || !Array.isArray(r.curve)) return [];
  const ep = r.curve.map((p) => p.epoch);
  const tr = [];
  const add = (key, name, axis, dash) => {
    if (r.curve.some((p) => typeof p[key] === 'number')) {
      tr.push({ type: 'scatter', mode: 'lines+markers', name, x: ep, y: r.curve.map((p) => p[key]), yaxis: axis, line: { dash } });
    }
  };
  add('train_loss', 'train loss', 'y', 'solid');
  add('val_loss', 'val loss', 'y', 'dot');
  add('val_accuracy', 'val accuracy', 'y2', 'solid');
  return tr;
}

// The legend sits at the bottom of the plot's box (yref 'container'),
// under the x axis's title: plotly reserves the room for both (automargin),
// so a legend of many rows never covers the title. A legend placed in
// paper units below the axis (y: -0.3) grew upwards over the title when
// it wrapped, as the time plot's (a point and a fit line per group) does.
function baseLayout(title, xTitle, yTitle) {
  return {
    title: { text: title, font: { size: 14 } },
    margin: { l: 55, r: 15, t: 40, b: 20 },
    xaxis: { title: { text: xTitle }, dtick: 1, zeroline: false, automargin: true },
    yaxis: { title: { text: yTitle }, zeroline: false },
    legend: { orientation: 'h', font: { size: 11 }, x: 0, xanchor: 'left', yref: 'container', y: 0, yanchor: 'bottom', maxheight: 1000 },
    hovermode: 'closest',
    paper_bgcolor: '#fff',
    plot_bgcolor: '#fff',
  };
}

// Plotly.react, then the box grows with its legend (each row of legend
// beyond the first two takes its height from the plot area otherwise),
// back to PLOT_H when the legend shrinks again.
const PLOT_H = 300;
const LEGEND_ROOM = 50; // a legend of up to two rows fits in PLOT_H
function reactPlot(id, traces, lay) {
  const gd = document.getElementById(id);
  state.plotH = state.plotH || {};
  lay.height = state.plotH[id] || PLOT_H;
  return Plotly.react(gd, traces, lay, PLOT_CONFIG).then(() => {
    const lg = gd.querySelector('.legend');
    const lh = lg && lay.showlegend !== false ? lg.getBoundingClientRect().height : 0;
    const want = Math.round(Math.max(PLOT_H, PLOT_H - LEGEND_ROOM + lh));
    if (Math.abs(want - lay.height) > 8) {
      state.plotH[id] = want;
      return Plotly.relayout(gd, { height: want });
    }
    return null;
  });
}

// The x axis of the analysis: its title, a log axis where the analysis
// says the values span orders of magnitude, one tick per layer on a
// linear depth axis.
function xLayout(lay, a) {
  lay.xaxis.title.text = xTitle(a);
  if (a.x_scale === 'log') { lay.xaxis.type = 'log'; delete lay.xaxis.dtick; }
  else if (a.x !== 'hidden_layers') delete lay.xaxis.dtick;
  return lay;
}

// A metric's y axis: the data's span with a margin (error bars
// included), kept inside [0, 1] for an accuracy.
function accuracyLayout(title, label, traces, a, bounded) {
  const lay = xLayout(baseLayout(title, '', label), a);
  let lo = Infinity, hi = -Infinity;
  for (const t of traces) {
    t.y.forEach((y, i) => {
      const up = (t.error_y && t.error_y.array[i]) || 0;
      const down = (t.error_y && (t.error_y.arrayminus || t.error_y.array)[i]) || 0;
      lo = Math.min(lo, y - down);
      hi = Math.max(hi, y + up);
    });
  }
  if (hi >= lo) {
    const pad = Math.max(bounded ? 0.01 : 1e-9, (hi - lo) * 0.1);
    lay.yaxis.range = bounded ? [Math.max(0, lo - pad), Math.min(1.005, hi + pad)] : [lo - pad, hi + pad];
  }
  return lay;
}

function drawPlots() {
  if (!whenPlotly(schedulePlots)) return;
  const a = state.analysis;
  if (a) {
    const m = a.metric ? a.metric.name : 'val_accuracy';
    const xl = a.x_label || a.x;
    const val = metricTraces();
    const test = accuracyTraces('test_accuracy');
    reactPlot('plot-val', val, accuracyLayout(`${m} vs ${xl} (mean, 95% interval over seeds)`, m, val, a, /accuracy/.test(m)));
    reactPlot('plot-test', test, accuracyLayout(`Test accuracy vs ${xl} (mean ± std over seeds)`, 'test accuracy', test, a, true));
    reactPlot('plot-time', timeTraces(), xLayout(baseLayout(`Time per epoch vs ${xl}, with the linear fit`, '', 'seconds per epoch'), a));
    for (const id of ['plot-val', 'plot-test']) {
      const div = document.getElementById(id);
      if (!div.__clickBound) {
        div.__clickBound = true;
        div.on('plotly_click', (ev) => chooseFromPoint(ev));
      }
    }
    const plateaus = (a.groups || []).map((g) => `${groupName(g, a.group_keys)}: ${g.plateau_text}`);
    $('#analysis-note').textContent = (a.rule ? a.rule + ' — ' : '') + plateaus.join('; ');
    $('#sweep-summary').textContent = `${a.n_rows} results: ${a.n_ok} ok, ${a.n_diverged} diverged, ${a.n_failed} failed` +
      (a.n_not_counted ? `, ${a.n_not_counted} not counted` : '');
    if (!state.drawn.plots) state.drawn.plots = performance.now();
  }
  const r = state.chosen;
  const lay = baseLayout(r ? `Learning curve: ${r.config.activation}, depth ${r.__depth}, width ${r.__width}, seed ${r.config.seed} (${short(r.task_id)})` : 'Learning curve (click a table row or a point)', 'epoch', 'loss');
  // Whole epochs only: a run of a few epochs would get ticks 1, 1.2, 1.4...
  const nEp = r && Array.isArray(r.curve) ? r.curve.length : 0;
  lay.xaxis.tick0 = 1;
  lay.xaxis.dtick = Math.max(1, Math.ceil(nEp / 10));
  lay.yaxis2 = { title: { text: 'accuracy' }, overlaying: 'y', side: 'right', range: [0, 1.02], tickmode: 'linear', tick0: 0, dtick: 0.2, showgrid: false };
  lay.margin.r = 55;
  reactPlot('plot-curve', curveTraces(), lay);
}

function schedulePlots() { throttle('plots', DRAW_MIN_MS, drawPlots); }

function chooseFromPoint(ev) {
  const p = ev && ev.points && ev.points[0];
  if (!p || !state.analysis) return;
  const g = state.analysis.groups[p.data.customdata ? p.data.customdata[0] : p.curveNumber];
  if (!g) return;
  const a = state.analysis;
  const xOf = (r) => (a.x === 'hidden_layers' ? r.__depth : a.x === 'width' ? r.__width : r.config[a.x]);
  const cands = state.rows.filter((r) => r.status === 'ok' && xOf(r) === p.x &&
    r.config.activation === g.activation &&
    (g.width === null || r.__width === g.width) &&
    (g.hidden_layers === undefined || r.__depth === g.hidden_layers) &&
    Object.entries(g.params || {}).every(([k, v]) => r.config[k] === v));
  cands.sort((a, b) => (b.val_accuracy || 0) - (a.val_accuracy || 0));
  if (cands.length) choose(cands[0]);
}

// Rows come without their curve (?fields=): the chosen run's is fetched
// from its task (GET /tasks/{id} gives its rows whole).
function choose(r) {
  state.chosen = r;
  schedulePlots();
  scheduleTable();
  if (r.curve === undefined && r.task_id) {
    getJSON(`${API}/tasks/${r.task_id}`).then((t) => {
      const whole = (t.results || []).find((x) => x.node_id === r.node_id) || {};
      r.curve = Array.isArray(whole.curve) ? whole.curve : [];
      if (state.chosen === r) schedulePlots();
    }).catch((e) => { $('#analysis-note').textContent = 'curve: ' + e.message; });
  }
}

// Config keys that vary among the rows (beyond activation, depth, width
// and seed, always shown): at most five more columns.
function computeExtraKeys() {
  const skip = new Set(['activation', 'hidden_layers', 'hidden_sizes', 'width', 'seed']);
  const values = new Map();
  for (const r of state.rows) {
    for (const [k, v] of Object.entries(r.config || {})) {
      if (skip.has(k)) continue;
      let s = values.get(k);
      if (!s) values.set(k, (s = new Set()));
      if (s.size < 2) s.add(JSON.stringify(v));
    }
  }
  state.extraKeys = [...values.entries()].filter(([, s]) => s.size > 1).map(([k]) => k).sort().slice(0, 5);
}

function columns() {
  const cols = [
    { key: 'task', title: 'task', get: (r) => r.task_id, show: (r) => short(r.task_id), tip: (r) => r.task_id, cls: 'mono' },
    { key: 'activation', title: 'activation', get: (r) => r.config.activation },
    { key: 'depth', title: 'depth', get: (r) => r.__depth, cls: 'num' },
    { key: 'width', title: 'width', get: (r) => r.__width, cls: 'num' },
    { key: 'seed', title: 'seed', get: (r) => r.config.seed, cls: 'num' },
  ];
  for (const k of state.extraKeys) {
    cols.push({ key: 'config.' + k, title: k, get: (r) => r.config[k], show: (r) => fmt(r.config[k]) });
  }
  cols.push(
    { key: 'status', title: 'status', get: (r) => r.status, clsOf: (r) => 'status-' + r.status },
    { key: 'val_accuracy', title: 'val acc', get: (r) => r.val_accuracy, show: (r) => fmt(r.val_accuracy, 4), cls: 'num' },
    { key: 'test_accuracy', title: 'test acc', get: (r) => r.test_accuracy, show: (r) => fmt(r.test_accuracy, 4), cls: 'num' },
    { key: 'seconds_per_epoch', title: 's/epoch', get: (r) => r.seconds_per_epoch, show: (r) => fmtSeconds(r.seconds_per_epoch), cls: 'num' },
    { key: 'epochs', title: 'epochs', get: (r) => r.epochs, cls: 'num' },
    { key: 'params', title: 'params', get: (r) => r.params, cls: 'num' },
    { key: 'node', title: 'node', get: (r) => r.node_id, show: (r) => short(r.node_id), tip: (r) => r.node_id, cls: 'mono' },
    { key: 'verdict', title: 'verdict (rev)', get: (r) => (r.verdict || '') + '/' + String(r.verdict_revision || 0).padStart(6, '0'),
      show: (r) => `${r.verdict || '–'} r${r.verdict_revision || 0}${r.counted === false ? ' · not counted' : ''}`,
      clsOf: (r) => 'verdict-' + r.verdict },
  );
  return cols;
}

function compare(a, b) {
  const an = a === null || a === undefined, bn = b === null || b === undefined;
  if (an || bn) return an === bn ? 0 : an ? 1 : -1; // missing values last
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

function sortedRows() {
  if (state.sorted) return state.sorted;
  const col = columns().find((c) => c.key === state.sort.key);
  if (!col) return (state.sorted = state.rows.slice());
  const dir = state.sort.dir;
  // Decorate once, then sort: 10,000 rows take a few milliseconds.
  const dec = state.rows.map((r, i) => [col.get(r), i, r]);
  dec.sort((x, y) => {
    const c = compare(x[0], y[0]);
    if (x[0] === null || x[0] === undefined || y[0] === null || y[0] === undefined) return c || x[1] - y[1];
    return dir * c || x[1] - y[1];
  });
  state.sorted = dec.map((d) => d[2]);
  return state.sorted;
}

function drawTable() {
  const cols = columns();
  const thead = $('#results thead');
  const head = el('tr', {});
  for (const c of cols) {
    const th = el('th', { dataset: { key: c.key } }, c.title);
    if (c.key === state.sort.key) th.className = state.sort.dir > 0 ? 'sorted-asc' : 'sorted-desc';
    th.addEventListener('click', () => {
      state.sort = { key: c.key, dir: state.sort.key === c.key ? -state.sort.dir : 1 };
      state.sorted = null;
      state.page = 0;
      drawTable();
    });
    head.append(th);
  }
  thead.replaceChildren(head);
  const rows = sortedRows();
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
  state.page = Math.min(state.page, pages - 1);
  const first = state.page * PAGE_ROWS;
  const body = [];
  for (const r of rows.slice(first, first + PAGE_ROWS)) {
    const tr = el('tr', { dataset: { task: r.task_id } });
    if (r === state.chosen) tr.className = 'chosen';
    for (const c of cols) {
      const v = c.show ? c.show(r) : fmt(c.get(r));
      const td = el('td', c.tip ? { title: c.tip(r) || '' } : {}, v);
      const cls = [c.cls, c.clsOf ? c.clsOf(r) : null].filter(Boolean).join(' ');
      if (cls) td.className = cls;
      tr.append(td);
    }
    tr.addEventListener('click', () => choose(r));
    body.push(tr);
  }
  $('#results tbody').replaceChildren(...body);
  $('#rows-count').textContent = state.partial ? `(${rows.length} so far, loading…)` : `(${rows.length})`;
  $('#page-info').textContent = rows.length ? `${first + 1}–${Math.min(first + PAGE_ROWS, rows.length)} of ${rows.length}` : 'none yet';
  if (!state.drawn.table && rows.length) state.drawn.table = performance.now();
}

function scheduleTable() { throttle('table', DRAW_MIN_MS, drawTable); }

// ---------------------------------------------------------------------------
// the pool

async function loadPool() {
  try {
    // The node's clock against this browser's (its Date header, whole
    // seconds): sweeps' updated_at_ms are the node's.
    const onStatus = (r) => {
      const d = Date.parse(r.headers.get('Date') || '');
      if (!Number.isNaN(d)) state.clockSkew = d + 500 - Date.now();
    };
    const [st, peers] = await Promise.all([getJSON(API + '/status', onStatus), getJSON(API + '/peers')]);
    state.status = st;
    state.statusAt = Date.now();
    state.peers = Array.isArray(peers) ? peers : [];
    $('#node').textContent = 'node ' + short(st.node_id) + (st.version ? ' · v' + st.version : '');
    schedulePool();
  } catch (e) {
    $('#pool-summary').textContent = 'pool: ' + e.message;
  }
}

function drawPool() {
  const st = state.status;
  if (!st) return;
  const perNode = new Map();
  for (const r of state.rows) perNode.set(r.node_id, (perNode.get(r.node_id) || 0) + 1);
  const trs = [];
  const selfRow = el('tr', { class: 'self' },
    idCell(st.node_id, 'mono', ' (this node)'),
    el('td', { class: 'peer-alive' }, 'alive'),
    idCell(st.operator, isLongHex(st.operator) ? 'mono operator' : 'operator'),
    el('td', {}, `${st.workers_busy || 0}/${st.workers || 0} busy`),
    el('td', { class: 'num' }, perNode.get(st.node_id) || 0),
    el('td', {}, '–'),
    el('td', {}, 'now'));
  trs.push(selfRow);
  for (const p of state.peers) {
    trs.push(el('tr', {},
      idCell(p.node_id, 'mono'),
      el('td', { class: 'peer-' + p.state }, p.state || '?'),
      idCell(p.operator, isLongHex(p.operator) ? 'mono operator' : 'operator'),
      el('td', {}, p.n_workers !== undefined ? `${p.n_busy || 0}/${p.n_workers} busy` : '–'),
      el('td', { class: 'num' }, perNode.get(p.node_id) || 0),
      el('td', {}, p.rtt_ms !== null && p.rtt_ms !== undefined ? p.rtt_ms + ' ms' : '–'),
      el('td', {}, p.last_heard_ms_ago !== null && p.last_heard_ms_ago !== undefined ? (p.last_heard_ms_ago / 1000).toFixed(1) + ' s ago' : '–')));
  }
  $('#nodes tbody').replaceChildren(...trs);
  const pc = st.pool_counters || {};
  const t = st.tasks || {};
  const leases = typeof pc.leases === 'number'
    ? `${pc.leases} leases in this node's lease table (held by the pool's nodes; /peers gives no per-node count)`
    : 'leases held: not available from this node (no pool)';
  $('#pool-summary').textContent =
    `${state.peers.length} peer${state.peers.length === 1 ? '' : 's'} · this node trained ${st.tasks_trained_total || 0} tasks since it started` +
    ` · store: ${t.done || 0} done, ${t.running || 0} running, ${t.pending || 0} pending · ${leases}`;
  drawThroughput();
}

function schedulePool() { throttle('pool', DRAW_MIN_MS, drawPool); }

// Throughput: tasks finished per second over every sweep of this node's
// store, drawn over a fixed window (the last THROUGHPUT_WINDOW_S seconds,
// ending now) from the first draw on, so that a page opened after the
// sweeps finished shows zeros rather than an empty axis.
//
// What the page measures itself: the finished count (done + failed over
// the sweeps it holds, kept current by events or polling) sampled at most
// every 2 s; each interval between two samples gets the rate over the
// last 10 s (one task per sample would make a comb otherwise).
//
// What came before the page opened is seeded once, from what the node
// knows (throughputSeed): nothing finishes in a node's store while the
// node is down (before now - /status uptime_seconds), nor in a sweep
// outside its span, from its created_at_ms (when this node got it) to
// its updated_at_ms (its last count change). A sweep this node got since
// it started finished its done + failed tasks inside its span; the
// sweeps it held before then finished, since then, what
// metrics.tasks_completed_total (tasks this store saw finish since the
// node started) leaves. Each count is spread evenly over its span (an
// average: drawn lighter than what the page measured itself). What no
// figure tells (a node without them) is left blank, "not known".
function sampleThroughput(noDraw) {
  const now = Date.now();
  let finished = 0;
  for (const s of state.sweeps.values()) { const c = counts(s); finished += c.done + c.failed; }
  const tp = state.throughput;
  if (tp.length && now - tp[tp.length - 1].t < 2000) { tp[tp.length - 1].finished = Math.max(tp[tp.length - 1].finished, finished); return; }
  tp.push({ t: now, finished });
  // Keep one sample older than the window (the first interval's start).
  while (tp.length > 2 && now - tp[1].t > THROUGHPUT_WINDOW_S * 1000) tp.shift();
  if (!noDraw) schedulePool();
}

// The seed: [[from_ms, to_ms, tasks_per_s or null (unknown)], ...] in
// this browser's clock, in order, covering the window before /status
// answered. Once, when both /status and the sweep list are there.
function throughputSeed() {
  const st = state.status;
  if (state.tpSeed || !st || !state.sweepsLoaded) return state.tpSeed;
  const t0 = state.statusAt;
  const from = t0 - THROUGHPUT_WINDOW_S * 1000;
  const m = st.metrics || {};
  const skew = state.clockSkew || 0;
  const num = (v) => typeof v === 'number' && Number.isFinite(v);
  const started = num(st.uptime_seconds) ? t0 - st.uptime_seconds * 1000 : null;
  // Boxes [a, b, tasks per second or null]: where they overlap, rates add.
  const boxes = [];
  const older = [];  // spans of the sweeps held before the node started
  let counted = 0;   // tasks of the sweeps got since
  for (const s of state.sweeps.values()) {
    const c = counts(s);
    const n = c.done + c.failed;
    const b = num(s.updated_at_ms) ? Math.min(t0, s.updated_at_ms - skew) : t0;
    const a0 = num(s.created_at_ms) ? s.created_at_ms - skew : null;
    if (started !== null && a0 !== null && a0 >= started) {
      const a = Math.min(a0, b - 1000); // one instant (a catch-up): a second
      if (n > 0) boxes.push([a, b, (n * 1000) / (b - a)]);
      counted += n;
    } else if (started === null || b > started) {
      older.push([started === null ? -Infinity : started, b]);
    }
  }
  if (older.length) {
    const rest = started !== null && num(m.tasks_completed_total) ? Math.max(0, m.tasks_completed_total - counted) : null;
    older.sort((x, y) => x[0] - y[0]);
    const merged = [];
    for (const [a, b] of older) {
      if (merged.length && a <= merged[merged.length - 1][1]) merged[merged.length - 1][1] = Math.max(merged[merged.length - 1][1], b);
      else merged.push([a, b]);
    }
    const ms = merged.reduce((t, [a, b]) => t + (b - a), 0);
    for (const [a, b] of merged) {
      if (rest !== 0) boxes.push([a, b, rest === null || !(ms > 0) ? null : (rest * 1000) / ms]);
    }
  }
  // The sum of the boxes over [from, t0], piece by piece.
  const edges = [...new Set([from, t0, ...boxes.flatMap(([a, b]) => [a, b])])]
    .filter((t) => t >= from && t <= t0).sort((x, y) => x - y);
  const iv = [];
  for (let i = 1; i < edges.length; i++) {
    const a = edges[i - 1], b = edges[i];
    let r = 0;
    for (const [x, y, rate] of boxes) if (x < b && y > a) r = r === null || rate === null ? null : r + rate;
    const last = iv[iv.length - 1];
    if (last && last[2] === r) last[1] = b; else iv.push([a, b, r]);
  }
  state.tpSeed = iv;
  return iv;
}

// A time as plotly's date axis reads it, in this browser's local time.
function localTime(ms) {
  const d = new Date(ms);
  const p = (n, w) => String(n).padStart(w || 2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}
const clock = (ms) => localTime(ms).slice(11, 19);

function drawThroughput() {
  if (!whenPlotly(schedulePool)) return;
  sampleThroughput(true);
  const now = Date.now();
  const from = now - THROUGHPUT_WINDOW_S * 1000;
  const tp = state.throughput;
  // Intervals [a, b, rate, seeded]: the seed up to the page's first
  // sample, then the page's own.
  const iv = [];
  const seed = throughputSeed();
  const firstSample = tp.length ? tp[0].t : now;
  for (const [a, b, r] of seed || []) if (a < firstSample) iv.push([a, Math.min(b, firstSample), r, true]);
  if (!seed) iv.push([from, firstSample, null, true]);
  let j = 0;
  for (let i = 1; i < tp.length; i++) {
    while (j < i - 1 && tp[i].t - tp[j + 1].t >= 10000) j++;
    const dt = (tp[i].t - tp[j].t) / 1000;
    if (dt > 0) iv.push([tp[i - 1].t, tp[i].t, Math.max(0, tp[i].finished - tp[j].finished) / dt, false]);
  }
  // Two step lines (seeded, measured), each with a break (null) wherever
  // two of its intervals do not touch; unknown stretches left blank.
  const line = { seeded: { x: [], y: [], end: null }, measured: { x: [], y: [], end: null } };
  let top = 0, unknown = null, quietFrom = null, end = null;
  for (const [a0, b, r, seeded] of iv) {
    if (b <= from) continue;
    const a = Math.max(a0, from);
    if (r === null) {
      if (!unknown || b - a > unknown[1] - unknown[0]) unknown = [a, b];
      continue;
    }
    const L = seeded ? line.seeded : line.measured;
    if (L.end !== null && a - L.end > 1000) { L.x.push(localTime(L.end)); L.y.push(null); }
    L.x.push(localTime(a), localTime(b));
    L.y.push(r, r);
    L.end = b;
    // The zero stretch that ends now (for the note below).
    if (r > 0) quietFrom = null;
    else if (quietFrom === null || (end !== null && a - end > 1000)) quietFrom = a;
    end = b;
    top = Math.max(top, r);
  }
  const lay = baseLayout(`Throughput (tasks finished per second, all sweeps, last ${THROUGHPUT_WINDOW_S / 60} min)`, '', 'tasks/s');
  lay.xaxis = { type: 'date', range: [localTime(from), localTime(now)], tickformat: '%H:%M', dtick: 60000, zeroline: false, automargin: true };
  lay.yaxis.rangemode = 'tozero';
  if (top === 0) lay.yaxis.range = [0, 1];
  lay.margin.b = 35;
  lay.showlegend = false;
  const notes = [];
  const note = { font: { size: 11, color: '#6b7385' }, showarrow: false, yref: 'paper', bgcolor: 'rgba(255,255,255,0.85)' };
  if (unknown && unknown[1] - unknown[0] > 20000) {
    notes.push(Object.assign({ x: localTime((unknown[0] + unknown[1]) / 2), y: 0.5, text: 'not known' }, note));
  }
  if (quietFrom !== null && end !== null && now - end < 3000 && now - quietFrom > 20000) {
    const mins = Math.floor((now - quietFrom) / 60000);
    notes.push(Object.assign({ x: localTime(now), xanchor: 'right', y: 1, yanchor: 'top',
      text: quietFrom <= from + 1000 ? `no tasks finished in the last ${THROUGHPUT_WINDOW_S / 60} min`
        : mins >= 1 ? `no tasks finished in the last ${mins} min` : `no tasks finished since ${clock(quietFrom)}` }, note));
  }
  lay.annotations = notes;
  Plotly.react('plot-throughput', [
    { type: 'scatter', mode: 'lines', fill: 'tozeroy', x: line.seeded.x, y: line.seeded.y, connectgaps: false,
      line: { color: '#2f9e5b', width: 1, dash: 'dot' }, fillcolor: 'rgba(47,158,91,0.18)',
      hovertemplate: '%{x|%H:%M:%S}: %{y:.3f} tasks/s (before this page opened: the node\'s counters, averaged)<extra></extra>' },
    { type: 'scatter', mode: 'lines', fill: 'tozeroy', x: line.measured.x, y: line.measured.y, connectgaps: false,
      line: { color: '#2f9e5b' }, hovertemplate: '%{x|%H:%M:%S}: %{y:.3f} tasks/s<extra></extra>' },
  ], lay, PLOT_CONFIG);
}

// ---------------------------------------------------------------------------
// live updates: /api/v1/events, or polling where the node has none

function onEvent(type, data) {
  if (type === 'progress') {
    const s = state.sweeps.get(data.sweep_id);
    if (!s) { throttle('sweeps', 1000, loadSweeps); return; }
    const before = finishedOf(s.counts);
    s.state = data.state || s.state;
    s.counts = Object.assign({}, s.counts, {
      pending: data.pending, running: data.running, done: data.done, failed: data.failed, cancelled: data.cancelled,
    });
    if (typeof data.total === 'number') s.n_tasks = data.total;
    throttle('render-sweeps', DRAW_MIN_MS, renderSweeps);
    if (data.sweep_id === state.selected && finishedOf(s.counts) !== before) onSelectedProgress();
  } else if (type === 'result') {
    if (data.sweep_id === state.selected && state.loadingRows) {
      state.reloadRows = true; // the page being read may miss it
    } else if (data.sweep_id === state.selected) {
      upsertRow(data, true);
      if (state.extraKeys.length === 0 && state.rows.length < 50) computeExtraKeys();
      scheduleTable();
      schedulePool();
      onSelectedProgress();
    }
  } else if (type === 'verdict') {
    if (data.sweep_id === state.selected) {
      for (const r of state.rows) {
        if (r.task_id === data.task_id) {
          r.verdict = data.verdict;
          r.verdict_revision = data.verdict_revision;
          if (data.verdict_operators) r.verdict_operators = data.verdict_operators;
        }
      }
      state.sorted = null;
      scheduleTable();
      onSelectedProgress();
    }
  } else if (type === 'peer') {
    throttle('pool-load', 1000, loadPool);
  } else if (type === 'sweep') {
    throttle('sweeps', 1000, loadSweeps);
  } else if (type === 'reset') {
    refetchAll();
  }
}

function refetchAll() {
  loadSweeps().catch(() => {});
  loadPool();
  if (state.selected) { loadRows(); onSelectedProgress(); }
}

function connectEvents() {
  if (typeof EventSource === 'undefined') { startPolling(); return; }
  const q = state.lastEventId !== null ? '?last_event_id=' + encodeURIComponent(state.lastEventId) : '';
  const es = new EventSource(API + '/events' + q);
  state.es = es;
  let opened = false;
  es.onopen = () => {
    opened = true;
    setLive('events');
    stopPolling();
  };
  for (const type of ['progress', 'result', 'verdict', 'peer', 'sweep', 'reset']) {
    es.addEventListener(type, (ev) => {
      if (ev.lastEventId) state.lastEventId = ev.lastEventId;
      let data = {};
      try { data = JSON.parse(ev.data); } catch (e) { return; }
      onEvent(type, data);
    });
  }
  es.onerror = async () => {
    // CONNECTING: the browser reconnects by itself and sends
    // Last-Event-ID. CLOSED: the answer was not a stream (404 on a node
    // without /events, 503 when the node's streams are all taken, 401).
    if (es.readyState !== EventSource.CLOSED) return;
    es.close();
    let status = 0;
    try {
      const ctl = new AbortController();
      const r = await fetch(API + '/events', { signal: ctl.signal });
      status = r.status;
      ctl.abort();
    } catch (e) { /* network down: retry below */ }
    startPolling();
    if (status === 404) return; // no events on this node: poll for good
    setTimeout(connectEvents, opened ? 1000 : 10000);
  };
}

function startPolling() {
  if (state.timers.poll) return;
  setLive('polling');
  const tick = async () => {
    const t0 = performance.now();
    try {
      await loadSweeps();
      if (state.selected) {
        const s = state.sweeps.get(state.selected);
        const f = s ? finishedOf(s.counts) : -1;
        if (f !== state.polledFinished) {
          state.polledFinished = f;
          await loadRows();
        }
      }
    } catch (e) { /* shown where it failed */ }
    // A big sweep's rows take long to fetch: wait at least 5 times that.
    const spent = performance.now() - t0;
    state.timers.poll = setTimeout(tick, Math.max(POLL_MS, 5 * spent));
  };
  state.timers.poll = setTimeout(tick, POLL_MS);
}

function stopPolling() {
  if (state.timers.poll) clearTimeout(state.timers.poll);
  state.timers.poll = null;
  if (state.live !== 'events') setLive('connecting');
}

// ---------------------------------------------------------------------------
// start

function start() {
  const checkPlotly = () => {
    if (!hasPlotly()) showBanner('The plotting library is missing: this node serves no vendor/plotly.min.js ' +
      '(it is installed by `npm ci` when meshsweep is built; see docs/DASHBOARD.md). Tables still work.');
  };
  if (whenPlotly(checkPlotly) === false && domReady) checkPlotly();
  $('#page-prev').addEventListener('click', () => { state.page = Math.max(0, state.page - 1); drawTable(); });
  $('#page-next').addEventListener('click', () => { state.page += 1; drawTable(); });
  $('#axis-x').addEventListener('change', onAxisChange);
  $('#axis-metric').addEventListener('change', onAxisChange);
  // A link to a sweep (#sweep=PREFIX) loads it at once, beside the list.
  const want = new URLSearchParams(location.hash.slice(1)).get('sweep');
  if (want && /^[0-9a-f]{12,64}$/.test(want)) selectSweep(want);
  loadSweeps().catch((e) => showBanner('Cannot reach the node: ' + e.message));
  loadPool();
  setInterval(loadPool, POOL_POLL_MS);
  // Events keep the list current; a slow refresh covers anything missed.
  setInterval(() => { if (state.live === 'events') loadSweeps().catch(() => {}); }, 15000);
  connectEvents();
}

// For tests and curious users: window.meshsweep.state in the console.
// The New sweep panel (new-sweep.js) shows what it submitted with these.
window.meshsweep = { state, refetchAll, showSweep: selectSweep, refreshSweeps: () => loadSweeps().catch(() => {}) };
start();
