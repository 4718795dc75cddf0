// History: Claude Code's past sessions (pneuma history), one transcript, and
// usage by day as a chart.
import {h, clear, money, num, tokens, when, field, scroller, errorBox, labelCells} from './dom.js';
import {get, enc} from './api.js';
import {transcriptView} from './transcript.js';
import {usageChart} from './chart.js';

/** historyPage lists sessions with a search and charts usage by day. */
export function historyPage(el) {
  const q = h('input', {type: 'search', name: 'q', spellcheck: 'false'});
  const list = h('div');
  const chart = h('div', {'aria-busy': 'true'});
  let timer = null;
  const load = async () => {
    list.setAttribute('aria-busy', 'true');
    try {
      const data = await get('/api/history/sessions' + (q.value.trim() ? '?q=' + enc(q.value.trim()) : ''));
      clear(list).append(sessionTable(Array.isArray(data) ? data : []));
    } catch (err) { clear(list).append(errorBox(err)); }
    list.removeAttribute('aria-busy');
  };
  q.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(load, 250); });
  el.append(h('h1', {}, 'History'),
    h('section', {'aria-labelledby': 'usage-h'}, h('h2', {id: 'usage-h'}, 'Usage by day'), chart),
    h('section', {'aria-labelledby': 'sessions-h'}, h('h2', {id: 'sessions-h'}, 'Sessions'),
      h('form', {role: 'search', on: {submit: (e) => { e.preventDefault(); load(); }}}, field('Search sessions', q, 'Matches the project, the first prompt or the session id.')),
      list));
  load();
  get('/api/history/usage?by=day').then((u) => {
    clear(chart).removeAttribute('aria-busy');
    chart.append(usageChart(u && Array.isArray(u.rows) ? u.rows : []));
  }).catch((err) => clear(chart).append(errorBox(err)));
  return () => clearTimeout(timer);
}

function sessionTable(rows) {
  if (!rows.length) return h('p', {class: 'muted'}, 'No sessions.');
  const names = ['Started', 'Project', 'First prompt', 'Prompts', 'Tokens', 'Cost'];
  return scroller('History sessions', h('table', {class: 'grid cards', id: 'history'},
    h('thead', {}, h('tr', {}, names.map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, rows.map((s) => labelCells(h('tr', {},
      h('td', {}, h('a', {href: '#/history/' + enc(s.session_id)}, when(s.started))),
      h('td', {}, s.project || ''),
      h('td', {class: 'prompt'}, String(s.first_prompt || '').slice(0, 160)),
      h('td', {class: 'n'}, num(s.prompts)),
      h('td', {class: 'n'}, num(tokens(s))),
      h('td', {class: 'n'}, money(s.cost_usd) + (s.unpriced_calls ? '*' : ''))), names)))));
}

/** historySessionPage shows one transcript of the history. */
export function historySessionPage(el, id) {
  const body = h('div', {'aria-busy': 'true'});
  el.append(h('p', {}, h('a', {href: '#/history'}, '← History')), h('h1', {}, 'Transcript ', h('code', {}, id)), body);
  get(`/api/history/sessions/${enc(id)}?format=text`, 'text')
    .then((text) => clear(body).append(transcriptView(text, `Transcript of session ${id}`)))
    .catch((err) => clear(body).append(errorBox(err)))
    .finally(() => body.removeAttribute('aria-busy'));
}
