// Runs: the list, a run's live job table and a job's stream, diff and transcript.
import {h, clear, append, badge, money, num, duration, tokens, when, field, scroller, errorBox, announce, labelCells} from './dom.js';
import {get, post, del, enc, Stream, ApiError} from './api.js';
import {unified} from './diff.js';
import {transcriptView} from './transcript.js';
import {streamLine} from './streamline.js';
import {sandboxView} from './sandbox.js';

const finished = new Set(['succeeded', 'failed', 'skipped', 'interrupted', 'lost']);

function runID(r) { return r.id || r.run_id || ''; }

// progress is [jobs finished, jobs in all] of a run object
// ({jobs_total, totals: of the finished jobs, report}).
function progress(r) {
  const t = r.totals || {};
  const total = r.jobs_total || (r.report && r.report.totals && r.report.totals.jobs) || t.jobs || 0;
  return [t.jobs || 0, total];
}

// runCost is what a run spent: its report's total once it has one.
function runCost(r) {
  return r.report && r.report.totals ? r.report.totals.cost_usd : r.spent_usd;
}

function progressBar(done, total, label) {
  return h('span', {class: 'progress'},
    h('progress', {max: String(total || 1), value: String(done), 'aria-label': label}),
    ` ${done}/${total}`);
}

/** runsPage lists runs and starts one. */
export function runsPage(el) {
  const list = h('div', {'aria-busy': 'true'});
  el.append(h('h1', {}, 'Runs'), startForm(), h('h2', {}, 'All runs'), list);
  const load = async () => {
    try {
      const data = await get('/api/runs');
      const runs = Array.isArray(data) ? data : (data && data.runs) || [];
      clear(list).removeAttribute('aria-busy');
      if (!runs.length) { list.append(h('p', {class: 'muted'}, 'No runs yet.')); return; }
      const names = ['Run', 'Status', 'Progress', 'Cost', 'Started'];
      list.append(scroller('Runs', h('table', {class: 'grid cards', id: 'runs'},
        h('thead', {}, h('tr', {}, names.map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, runs.map((r) => {
          const [done, total] = progress(r);
          return labelCells(h('tr', {'data-run': runID(r)},
            h('th', {scope: 'row'}, h('a', {href: '#/runs/' + enc(runID(r))}, runID(r))),
            h('td', {}, badge(r.status || 'running')),
            h('td', {}, progressBar(done, total, `Jobs finished in run ${runID(r)}`)),
            h('td', {class: 'n'}, money(runCost(r))),
            h('td', {}, when(r.started_at))), names);
        })))));
    } catch (err) { clear(list).append(errorBox(err)); }
  };
  load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}

function startForm() {
  const file = h('input', {type: 'text', name: 'jobs_file', required: true, spellcheck: 'false', placeholder: 'jobs.yaml'});
  const conc = h('input', {type: 'number', name: 'concurrency', min: '1', inputmode: 'numeric'});
  const budget = h('input', {type: 'number', name: 'budget_usd', min: '0', step: '0.01', inputmode: 'decimal'});
  const only = h('input', {type: 'text', name: 'only', spellcheck: 'false'});
  const msg = h('div');
  const form = h('form', {class: 'card', id: 'start-run', on: {submit: async (e) => {
    e.preventDefault();
    const body = {jobs_file: file.value.trim()};
    if (conc.value) body.concurrency = Number(conc.value);
    if (budget.value) body.budget_usd = Number(budget.value);
    if (only.value.trim()) body.only = only.value.split(',').map((s) => s.trim()).filter(Boolean);
    clear(msg);
    try {
      const r = await post('/api/runs', body);
      location.hash = '#/runs/' + enc(runID(r));
    } catch (err) { msg.append(errorBox(err)); }
  }}},
  h('h2', {}, 'Start a run'),
  h('div', {class: 'row'},
    field('Jobs file', file, 'A path under the server\'s root.'),
    field('Concurrency', conc),
    field('Budget (USD)', budget),
    field('Only these jobs', only, 'Comma-separated names; empty for all.')),
  msg,
  h('button', {type: 'submit', class: 'primary'}, 'Start run'));
  return form;
}

/** PAGE is how many jobs the run page's table shows at once. */
const PAGE = 100;

const cols = ['Job', 'Status', 'Reason', 'Cost', 'Tokens', 'Turns', 'Time', 'Changes', 'Branch'];

/** runPage shows one run's jobs, live from its event stream. */
export function runPage(el, id) {
  const rows = new Map();
  const body = h('tbody');
  const foot = h('tfoot');
  const head = h('div', {class: 'run-head'});
  const state = h('span', {class: 'conn', role: 'status'});
  const stop = h('button', {type: 'button', class: 'danger', on: {click: async () => {
    stop.disabled = true;
    try { await del('/api/runs/' + enc(id)); announce('Stopping the run'); } catch (err) { head.append(errorBox(err)); stop.disabled = false; }
  }}}, 'Stop run');
  let report = {run_id: id, status: 'running', jobs: []};
  const failures = h('section', {class: 'failures', id: 'failures'});
  const pager = h('nav', {class: 'pager', 'aria-label': 'Job pages'});
  el.append(h('p', {}, h('a', {href: '#/runs'}, '← Runs')),
    h('div', {class: 'title'}, h('h1', {}, 'Run ', h('code', {}, id)), state, stop), head,
    failures, pager,
    scroller('Jobs', h('table', {class: 'grid cards', id: 'jobs'},
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', {scope: 'col'}, c)))), body, foot)));

  const row = (name) => {
    if (!rows.has(name)) {
      const tr = h('tr', {'data-job': name});
      rows.set(name, {tr, job: {name, status: 'pending'}});
      body.append(tr);
    }
    return rows.get(name);
  };
  const draw = (name, patch) => {
    const r = row(name);
    Object.assign(r.job, patch);
    const j = r.job;
    clear(r.tr).append(
      h('th', {scope: 'row'}, h('a', {href: `#/runs/${enc(id)}/jobs/${enc(name)}`}, name)),
      h('td', {class: 'status'}, badge(j.status)),
      h('td', {class: 'reason'}, j.reason || ''),
      h('td', {class: 'n cost'}, money(j.cost_usd)),
      h('td', {class: 'n'}, num(tokens(j.usage))),
      h('td', {class: 'n'}, num(j.num_turns)),
      h('td', {class: 'n'}, j.duration_ms ? duration(j.duration_ms) : ''),
      h('td', {class: 'n'}, j.files_changed ? `${j.files_changed} file${j.files_changed === 1 ? '' : 's'} +${j.insertions || 0} −${j.deletions || 0}` : ''),
      h('td', {}, j.branch ? h('code', {}, j.branch) : ''));
    labelCells(r.tr, cols);
  };
  // The run's own totals (the snapshot's, then the report's): the table
  // holds one page of jobs, never all of a run of ten thousand.
  let runTotals = {};
  const totals = () => {
    const jobs = [...rows.values()].map((r) => r.job);
    const t = report.totals && finished.has(report.status) ? report.totals : runTotals;
    const done = (t.succeeded || 0) + (t.failed || 0) + (t.skipped || 0) + (t.interrupted || 0);
    clear(foot).append(labelCells(h('tr', {},
      h('th', {scope: 'row'}, 'Total'),
      h('td', {}, progressBar(done, Math.max(t.jobs || 0, report.jobs_total || 0, jobs.length), 'Jobs finished')),
      h('td'),
      h('td', {class: 'n', id: 'total-cost'}, money(t.cost_usd)),
      h('td', {class: 'n', id: 'total-tokens'}, num(tokens(t))),
      h('td', {class: 'n', id: 'total-turns'}, num(t.num_turns)),
      h('td', {colspan: '3'})), ['', 'Finished', '', 'Cost', 'Tokens', 'Turns']));
    clear(head).append(h('p', {}, 'Status ', badge(report.status), report.started_at ? ` · started ${when(report.started_at)}` : ''));
    stop.hidden = finished.has(report.status);
  };
  // A finished job counts into the totals as it arrives.
  const count = (j) => {
    runTotals = Object.assign({jobs: 0, succeeded: 0, failed: 0, skipped: 0, interrupted: 0, cost_usd: 0, num_turns: 0}, runTotals);
    runTotals.jobs++;
    if (j.status in runTotals) runTotals[j.status]++;
    runTotals.cost_usd += j.cost_usd || 0;
    runTotals.num_turns += j.num_turns || 0;
    for (const k of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) runTotals[k] = (runTotals[k] || 0) + ((j.usage || {})[k] || 0);
  };
  // live draws an event's job only when its row is shown or the page has
  // room: a big run's table stays one page.
  const live = (name, patch) => { if (rows.has(name) || rows.size < PAGE) draw(name, patch); };
  const showFailures = (list, total) => {
    clear(failures);
    if (!total) return;
    failures.append(h('h2', {}, `Failed jobs (${total})`), h('ul', {}, list.map((j) =>
      h('li', {'data-job': j.name}, h('a', {href: `#/runs/${enc(id)}/jobs/${enc(j.name)}`}, j.name), ' ', badge(j.status), j.error ? ' ' + j.error : ''))),
    list.length < total ? h('p', {}, `The first ${list.length} shown; page the table for the rest.`) : '');
  };
  // Paging: after is the first job of the page shown; next the server's cursor.
  let after = 0, next = null;
  const page = async (at) => {
    const p = await get(`/api/runs/${enc(id)}/jobs?after=${at}&limit=${PAGE}`);
    if (!p) return;
    after = at; next = p.next ?? null;
    // The first page of a live run keeps the running jobs' rows.
    if (at !== 0 || finished.has(report.status)) { rows.clear(); clear(body); }
    (p.jobs || []).forEach((j) => draw(j.name, j));
    drawPager();
  };
  const drawPager = () => {
    const total = Math.max((report.totals || {}).jobs || 0, runTotals.jobs || 0);
    const btn = (label, at, off) => h('button', {type: 'button', disabled: off, on: {click: () => page(at).catch((err) => head.append(errorBox(err)))}}, label);
    clear(pager).append(
      btn('First', 0, after === 0), btn('Previous', Math.max(0, after - PAGE), after === 0),
      h('span', {class: 'page-at', role: 'status'}, total ? ` Jobs ${after + 1}–${after + rows.size} of ${total} ` : ' '),
      btn('Next', next ?? 0, next === null), btn('Last', Math.max(0, total - PAGE), next === null || total <= PAGE));
  };
  const apply = (ev) => {
    switch (ev.type) {
      case 'run_started': report.status = 'running'; report.jobs_total = ev.jobs; break;
      case 'job_started': live(ev.job, {status: 'running', reason: '', branch: ev.branch}); break;
      case 'api_retry': live(ev.job, {reason: `API retry${ev.error_status ? ' (' + ev.error_status + ')' : ''}`}); break;
      case 'compact_boundary': live(ev.job, {reason: 'compacted'}); break;
      case 'model_fallback': live(ev.job, {reason: `fell back to ${ev.model || 'another model'}`}); break;
      case 'hook': if (hookFailed(ev.hook)) live(ev.job, {reason: `hook ${ev.hook.hook_name || ''} ${ev.hook.outcome}`}); break;
      case 'job_retry': live(ev.job, {status: 'retrying', reason: `${ev.reason || ''}, attempt ${ev.attempt + 1 || ''}`}); break;
      case 'job_finished': if (ev.result) { count(ev.result); live(ev.result.name || ev.job, ev.result); } break;
      case 'run_snapshot': if (ev.run) setRun(ev.run); break;
      case 'run_finished':
        if (ev.report) { report = Object.assign({}, ev.report, {jobs_total: report.jobs_total}); (ev.report.jobs || []).slice(0, PAGE).forEach((j) => live(j.name, j)); }
        page(after).catch((err) => head.append(errorBox(err)));
        announce('Run finished: ' + report.status);
        break;
      default: return;
    }
    totals();
  };
  // setRun takes a run object ({status, started_at, jobs_total, totals,
  // failures, failures_total, running, report}); a finished status the
  // events already gave is kept.
  const setRun = (r) => {
    if (finished.has(report.status) && !finished.has(r.status)) return;
    if (r.report) report = Object.assign({}, r.report);
    Object.assign(report, {status: r.status, started_at: r.started_at || report.started_at, jobs_total: r.jobs_total});
    if (r.totals) runTotals = Object.assign({}, r.totals);
    showFailures(r.failures || [], r.failures_total || 0);
    (r.running || []).forEach((name) => live(name, {status: 'running'}));
  };
  get('/api/runs/' + enc(id)).then((r) => {
    if (!r) return;
    setRun(r);
    totals();
    return page(0);
  }).catch((err) => head.append(errorBox(err)));
  totals();
  const stream = new Stream(`/api/runs/${enc(id)}/ws`, {onEvent: apply, onState: (s) => connState(state, s)});
  return () => stream.close();
}

/** connState shows a stream's connection state. */
export function connState(el, s) {
  el.dataset.state = s;
  el.textContent = {live: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', closed: 'Disconnected'}[s] || s;
}

/** jobPage shows one job: its stream tail, diff and transcript, as tabs. */
export function jobPage(el, id, job) {
  const base = `/api/runs/${enc(id)}/jobs/${enc(job)}`;
  const tabs = [
    ['stream', 'Stream', async (p) => {
      const refresh = h('button', {type: 'button', on: {click: () => show('stream')}}, 'Refresh');
      const data = await get(base + '/stream?tail=200', 'text');
      p.append(refresh, streamList(data));
    }],
    ['diff', 'Diff', async (p) => p.append(unified(await get(base + '/diff', 'text')))],
    ['transcript', 'Transcript', async (p) => p.append(transcriptView(await get(base + '/transcript?format=text', 'text'), `Transcript of job ${job}`))],
  ];
  const list = h('div', {role: 'tablist', 'aria-label': 'Job views', class: 'tabs'});
  const panel = h('div', {role: 'tabpanel', id: 'job-panel', tabindex: '0'});
  const buttons = {};
  const show = async (key) => {
    for (const [k, b] of Object.entries(buttons)) b.setAttribute('aria-selected', String(k === key));
    panel.setAttribute('aria-labelledby', 'tab-' + key);
    clear(panel).setAttribute('aria-busy', 'true');
    try { await tabs.find((t) => t[0] === key)[2](panel); } catch (err) { panel.append(errorBox(err)); }
    panel.removeAttribute('aria-busy');
  };
  for (const [key, label] of tabs) {
    buttons[key] = h('button', {type: 'button', role: 'tab', id: 'tab-' + key, 'aria-controls': 'job-panel', on: {click: () => show(key)}}, label);
    list.append(buttons[key]);
  }
  const sandbox = h('section', {class: 'sandbox', id: 'job-sandbox'});
  const hooks = h('p', {id: 'job-hooks', hidden: true});
  el.append(h('p', {}, h('a', {href: '#/runs/' + enc(id)}, '← Run ' + id)), h('h1', {}, 'Job ', h('code', {}, job)), sandbox, hooks, list, panel);
  findJob(id, job).then((res) => { sandboxView(sandbox, res ? (res.sandbox || null) : undefined); hooksView(hooks, res); })
    .catch(() => sandboxView(sandbox, undefined));
  show('stream');
}

/** hookFailed says whether a hook event's hook answered with an error. */
function hookFailed(hk) { return !!hk && hk.phase === 'response' && !!hk.outcome && hk.outcome !== 'success'; }

/** hooksView shows the hooks a job's CLI ran (include_hook_events). */
function hooksView(el, res) {
  if (!res || !res.hook_runs) return;
  const failed = res.hook_failures || 0;
  el.dataset.failed = String(failed);
  clear(el).append('Hooks: ', h('span', {class: 'hooks-run'}, num(res.hook_runs) + ' run'), ', ',
    h('span', {class: failed ? 'hooks-failed error' : 'hooks-failed'}, num(failed) + ' failed'));
  el.hidden = false;
}

/** findJob reads a finished job's report entry; undefined while it has none. */
async function findJob(id, job) {
  try {
    return (await get(`/api/runs/${enc(id)}/jobs/${enc(job)}`)) || undefined;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

function streamList(data) {
  let items = [];
  const t = String(data).trim();
  if (t.startsWith('[')) {
    try { items = JSON.parse(t); } catch { items = []; }
  } else {
    items = t.split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l); } catch { return {type: 'text', text: l}; } });
  }
  if (!items.length) return h('p', {class: 'muted'}, 'The stream is empty.');
  return append(h('ol', {class: 'stream'}), items.map(streamLine));
}
