// Sessions: the list, creating one, and a live conversation.
import {h, clear, badge, money, num, when, field, scroller, errorBox, announce, labelCells} from './dom.js';
import {get, post, del, enc, Stream} from './api.js';
import {connState} from './runs.js';
import {Conversation} from './conversation.js';
import {sandboxView} from './sandbox.js';

const modes = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];

/** sessionsPage lists sessions and creates one. */
export function sessionsPage(el) {
  const list = h('div', {'aria-busy': 'true'});
  el.append(h('h1', {}, 'Sessions'), createForm(), h('h2', {}, 'All sessions'), list);
  const load = async () => {
    try {
      const data = await get('/api/sessions');
      const all = Array.isArray(data) ? data : (data && data.sessions) || [];
      clear(list).removeAttribute('aria-busy');
      if (!all.length) { list.append(h('p', {class: 'muted'}, 'No sessions yet.')); return; }
      const names = ['Session', 'Status', 'Repository', 'Model', 'Turns', 'Cost', 'Created'];
      list.append(scroller('Sessions', h('table', {class: 'grid cards', id: 'sessions'},
        h('thead', {}, h('tr', {}, names.map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, all.map((s) => labelCells(h('tr', {'data-session': s.id},
          h('th', {scope: 'row'}, h('a', {href: '#/sessions/' + enc(s.id)}, s.name || s.id)),
          h('td', {}, badge(s.status), s.damage ? h('span', {class: 'reason'}, ' ' + s.damage) : ''),
          h('td', {}, s.repo || ''),
          h('td', {}, s.model || ''),
          h('td', {class: 'n'}, num(s.num_turns)),
          h('td', {class: 'n'}, money(s.cost_usd)),
          h('td', {}, when(s.created_at))), names))))));
    } catch (err) { clear(list).append(errorBox(err)); }
  };
  load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}

function createForm() {
  const repo = h('input', {type: 'text', name: 'repo', required: true, spellcheck: 'false'});
  const base = h('input', {type: 'text', name: 'base', spellcheck: 'false', placeholder: 'HEAD'});
  const name = h('input', {type: 'text', name: 'name'});
  const model = h('input', {type: 'text', name: 'model', spellcheck: 'false', list: 'models'});
  const mode = h('select', {name: 'permission_mode'}, modes.map((m) => h('option', {value: m}, m)));
  const prompts = h('input', {type: 'checkbox', id: 'np-prompts', name: 'permission_prompt', checked: true});
  const policy = h('textarea', {name: 'policy', rows: '4', spellcheck: 'false', placeholder: '{"allow": ["Read", "Grep"]}'});
  const msg = h('div');
  return h('form', {class: 'card', id: 'new-session', on: {submit: async (e) => {
    e.preventDefault();
    clear(msg);
    const body = {repo: repo.value.trim(), permission_mode: mode.value};
    if (base.value.trim()) body.base = base.value.trim();
    if (name.value.trim()) body.name = name.value.trim();
    if (model.value.trim()) body.model = model.value.trim();
    if (prompts.checked) body.permission_prompt = 'client';
    if (policy.value.trim()) {
      try { body.policy = JSON.parse(policy.value); } catch (err) {
        policy.setAttribute('aria-invalid', 'true');
        msg.append(errorBox('Policy is not valid JSON: ' + err.message));
        policy.focus();
        return;
      }
    }
    policy.removeAttribute('aria-invalid');
    try {
      const s = await post('/api/sessions', body);
      location.hash = '#/sessions/' + enc(s.id);
    } catch (err) { msg.append(errorBox(err)); }
  }}},
  h('h2', {}, 'New session'),
  h('div', {class: 'row'},
    field('Repository', repo, 'Path of a git repository on the server.'),
    field('Base', base),
    field('Name', name),
    field('Model', model),
    field('Permission mode', mode)),
  h('datalist', {id: 'models'}, ['claude-sonnet-4-5', 'claude-opus-4-1', 'claude-haiku-4-5'].map((m) => h('option', {value: m}))),
  field('Policy (JSON)', policy, 'Optional: which tools are allowed, denied or asked about.'),
  h('div', {class: 'check'}, prompts, h('label', {for: 'np-prompts'}, 'Ask me in this console when a tool needs permission')),
  msg,
  h('button', {type: 'submit', class: 'primary'}, 'Create session'));
}

/**
 * switchForm switches the running session's model or permission mode and
 * shows the CLI's acknowledgement (or the server's refusal) in a live status.
 */
function switchForm(id) {
  const model = h('input', {type: 'text', id: 'switch-model', spellcheck: 'false', placeholder: 'claude-sonnet-4-5'});
  const mode = h('select', {id: 'switch-mode'}, modes.map((m) => h('option', {value: m}, m)));
  const result = h('p', {id: 'switch-status', role: 'status', 'aria-live': 'polite'});
  const ack = (r) => r.pending ? 'pending: applied when the session next runs' : 'acknowledged' + (r.response ? ' ' + JSON.stringify(r.response) : '');
  const run = async (what, path, body) => {
    result.textContent = what + '…';
    try {
      const r = await post(`/api/sessions/${enc(id)}/${path}`, body);
      result.textContent = `${what}: ${ack(r || {})}`;
    } catch (err) { result.textContent = `${what} failed: ${err.message}`; }
  };
  return h('form', {class: 'card row', id: 'session-switch', on: {submit: (e) => e.preventDefault()}},
    h('label', {for: 'switch-model'}, 'Model'), model,
    h('button', {type: 'button', id: 'switch-model-go', on: {click: () => run('Model ' + (model.value.trim() || '(session default)'), 'model', {model: model.value.trim()})}}, 'Switch model'),
    h('label', {for: 'switch-mode'}, 'Permission mode'), mode,
    h('button', {type: 'button', id: 'switch-mode-go', on: {click: () => run('Mode ' + mode.value, 'permission-mode', {mode: mode.value})}}, 'Switch mode'),
    result);
}

/** sessionPage is one live session: its conversation and a composer. */
export function sessionPage(el, id) {
  const state = h('span', {class: 'conn', role: 'status'});
  const status = h('span', {id: 'session-status'});
  const cost = h('span', {id: 'session-cost'}, money(0));
  const turns = h('span', {id: 'session-turns'}, '0');
  const meta = h('span', {class: 'muted'});
  const sandbox = h('section', {class: 'sandbox', id: 'session-sandbox'});
  const title = h('code', {}, id);
  const log = h('div', {class: 'log', id: 'conversation', role: 'log', 'aria-label': 'Conversation', tabindex: '0'});
  let stream = null;
  const send = (msg) => {
    if (stream && stream.send(msg)) return Promise.resolve();
    const b = enc(id);
    if (msg.type === 'user_message') return post(`/api/sessions/${b}/messages`, {content: msg.content, client_msg_id: msg.client_msg_id});
    if (msg.type === 'interrupt') return post(`/api/sessions/${b}/interrupt`);
    if (msg.type === 'permission_response') {
      const {request_id: rid, type: _, ...rest} = msg;
      return post(`/api/sessions/${b}/permissions/${enc(rid)}`, rest);
    }
    return Promise.resolve();
  };
  const conv = new Conversation(log, send);
  const setStatus = (s) => {
    clear(status).append(badge(s));
    interrupt.disabled = !(s === 'running' || s === 'waiting_permission');
  };
  const setSession = (s) => {
    if (!s) return;
    if (s.status) setStatus(s.status);
    if (s.cost_usd !== undefined) cost.textContent = money(s.cost_usd);
    if (s.num_turns !== undefined) turns.textContent = num(s.num_turns);
    if (s.name) title.textContent = s.name;
    meta.textContent = [s.model, s.repo, s.branch].filter(Boolean).join(' · ');
    sandboxView(sandbox, s.sandbox || null);
  };
  const input = h('textarea', {id: 'composer', rows: '2', placeholder: 'Message Claude', 'aria-describedby': 'composer-hint'});
  const submit = () => {
    const text = input.value;
    if (!text.trim()) return;
    input.value = '';
    conv.sendUser(text).catch((err) => log.append(errorBox(err)));
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  const interrupt = h('button', {type: 'button', id: 'interrupt', disabled: true, on: {click: () => { send({type: 'interrupt'}); announce('Interrupt sent'); }}}, 'Interrupt');
  const close = h('button', {type: 'button', class: 'danger', on: {click: async () => {
    try { await del('/api/sessions/' + enc(id)); } catch (err) { log.append(errorBox(err)); }
  }}}, 'End session');
  el.append(h('p', {}, h('a', {href: '#/sessions'}, '← Sessions')),
    h('div', {class: 'title'}, h('h1', {}, 'Session ', title), state),
    h('p', {class: 'stats'}, status, ' · cost ', cost, ' · turns ', turns, ' ', meta),
    sandbox,
    switchForm(id),
    log,
    h('form', {class: 'composer', on: {submit: (e) => { e.preventDefault(); submit(); }}},
      h('label', {for: 'composer', class: 'visually-hidden'}, 'Message'),
      input,
      h('div', {class: 'actions'},
        h('span', {id: 'composer-hint', class: 'hint'}, 'Enter sends, Shift+Enter adds a line.'),
        h('button', {type: 'submit', class: 'primary'}, 'Send'), interrupt, close)));
  get('/api/sessions/' + enc(id)).then(setSession).catch((err) => log.append(errorBox(err)));
  stream = new Stream(`/api/sessions/${enc(id)}/ws`, {
    onState: (s) => connState(state, s),
    onEvent: (ev) => {
      if (ev.type === 'session_snapshot') setSession(ev.session);
      if (ev.type === 'status_change') setStatus(ev.status);
      if (ev.type === 'sandbox_update') sandboxView(sandbox, ev);
      if (ev.type === 'result') {
        if (ev.total_cost_usd !== undefined) cost.textContent = money(ev.total_cost_usd);
        if (ev.num_turns !== undefined) turns.textContent = num(ev.num_turns);
      }
      conv.apply(ev);
    },
  });
  return () => stream.close();
}
