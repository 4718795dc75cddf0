// A session's conversation built from its events: user messages, streamed
// assistant text, thinking and tool calls folded with their results, and
// permission requests as cards. Every piece of it is text.
import {h, clear, money, announce} from './dom.js';
import {toolDiff} from './diff.js';
import {resultText} from './streamline.js';

function summarize(input) {
  if (!input || typeof input !== 'object') return '';
  const v = input.command ?? input.file_path ?? input.path ?? input.pattern ?? input.url ?? input.description ?? '';
  return String(v).split('\n')[0].slice(0, 120);
}

/** Conversation renders events into a log element. */
export class Conversation {
  constructor(log, send) {
    this.log = log;
    this.send = send;
    this.tools = new Map(); // tool_use_id → {el, result, state}
    this.pending = new Map(); // client_msg_id → element of a message not yet echoed
    this.live = null; // the assistant message being streamed: {el, blocks: Map(index → {el, kind, stopped})}
    this.cards = new Map(); // request_id → card
  }

  add(el) {
    const stick = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 40;
    this.log.append(el);
    if (stick) this.log.scrollTop = this.log.scrollHeight;
    return el;
  }

  /** sendUser shows a message at once and sends it. */
  sendUser(text) {
    const id = 'c' + Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
    const el = this.add(h('div', {class: 'msg user pending', 'data-client-id': id}, h('div', {class: 'who'}, 'You'), h('div', {class: 'text'}, text)));
    this.pending.set(id, el);
    return this.send({type: 'user_message', content: text, client_msg_id: id});
  }

  apply(ev) {
    const f = this['on_' + ev.type];
    if (f) f.call(this, ev);
  }

  note(text, cls) {
    return this.add(h('p', {class: 'note ' + (cls || '')}, text));
  }

  on_user_message(ev) {
    const mine = ev.client_msg_id && this.pending.get(ev.client_msg_id);
    if (mine) {
      mine.classList.remove('pending');
      mine.dataset.seq = ev.seq;
      this.pending.delete(ev.client_msg_id);
      return;
    }
    this.add(h('div', {class: 'msg user', 'data-seq': ev.seq}, h('div', {class: 'who'}, 'You'), h('div', {class: 'text'}, resultText(ev.content))));
  }

  liveMessage() {
    if (!this.live) {
      const el = this.add(h('div', {class: 'msg assistant streaming', 'aria-busy': 'true'}, h('div', {class: 'who'}, 'Claude')));
      this.live = {el, blocks: new Map()};
    }
    return this.live;
  }

  on_stream_event(ev) {
    const e = ev.event || {};
    if (ev.parent_tool_use_id) return; // a subagent's stream: its final messages are enough
    if (e.type === 'message_start') { this.finishLive(true); this.liveMessage(); return; }
    if (e.type === 'content_block_start') {
      const b = e.content_block || {};
      const live = this.liveMessage();
      const kind = b.type === 'thinking' ? 'thinking' : b.type === 'text' ? 'text' : 'other';
      const el = kind === 'thinking'
        ? h('details', {class: 'thinking'}, h('summary', {}, 'Thinking…'), h('div', {class: 'text'}))
        : h('div', {class: 'text' + (kind === 'other' ? ' muted' : '')}, kind === 'other' ? `${b.name || b.type || ''}…` : '');
      live.el.append(el);
      live.blocks.set(e.index, {el, kind, stopped: false});
      return;
    }
    if (e.type === 'content_block_delta') {
      const d = e.delta || {};
      const live = this.liveMessage();
      let b = live.blocks.get(e.index);
      if (!b) { this.on_stream_event({event: {type: 'content_block_start', index: e.index, content_block: {type: d.type === 'thinking_delta' ? 'thinking' : 'text'}}}); b = live.blocks.get(e.index); }
      const target = b.kind === 'thinking' ? b.el.querySelector('.text') : b.el;
      if (d.type === 'text_delta' && b.kind === 'text') target.append(d.text || '');
      if (d.type === 'thinking_delta' && b.kind === 'thinking') target.append(d.thinking || '');
      return;
    }
    if (e.type === 'content_block_stop') {
      const b = this.live && this.live.blocks.get(e.index);
      if (b) b.stopped = true;
      return;
    }
    if (e.type === 'message_stop') this.finishLive(false);
  }

  // finishLive drops the streamed preview of the blocks the final assistant
  // messages replace (all of them when all is true).
  finishLive(all) {
    if (!this.live) return;
    for (const [i, b] of this.live.blocks) {
      if (all || b.stopped) { b.el.remove(); this.live.blocks.delete(i); }
    }
    if (!this.live.blocks.size) { this.live.el.remove(); this.live = null; }
  }

  on_assistant(ev) {
    const content = (ev.message && ev.message.content) || [];
    if (this.live && !ev.parent_tool_use_id) {
      for (const [i, b] of this.live.blocks) if (b.stopped) { b.el.remove(); this.live.blocks.delete(i); }
      if (!this.live.blocks.size) { this.live.el.remove(); this.live = null; }
    }
    const el = h('div', {class: 'msg assistant' + (ev.parent_tool_use_id ? ' sub' : ''), 'data-seq': ev.seq}, h('div', {class: 'who'}, ev.parent_tool_use_id ? 'Subagent' : 'Claude'));
    for (const b of content) el.append(this.block(b));
    const at = this.live ? this.live.el : null;
    if (at) this.log.insertBefore(el, at); else this.add(el);
  }

  block(b) {
    if (!b || typeof b !== 'object') return '';
    if (b.type === 'text') return h('div', {class: 'text'}, b.text || '');
    if (b.type === 'thinking' || b.type === 'redacted_thinking') {
      return h('details', {class: 'thinking'}, h('summary', {}, 'Thinking'), h('div', {class: 'text'}, b.thinking || '(redacted)'));
    }
    if (b.type === 'tool_use') return this.toolUse(b);
    return h('div', {class: 'muted'}, `[${b.type}]`);
  }

  toolUse(b) {
    const state = h('span', {class: 'tool-state'}, 'running');
    const result = h('div', {class: 'tool-result'});
    const el = h('details', {class: 'tool', 'data-tool-use-id': b.id || ''},
      h('summary', {}, h('span', {class: 'tool-name'}, b.name || 'tool'), ' ', h('code', {}, summarize(b.input)), ' ', state),
      toolDiff(b.name, b.input) || h('pre', {class: 'json', tabindex: '0'}, JSON.stringify(b.input ?? {}, null, 2)),
      result);
    this.tools.set(b.id, {el, result, state});
    return el;
  }

  on_user(ev) {
    const content = ev.message && ev.message.content;
    if (!Array.isArray(content)) return;
    for (const b of content) {
      if (!b || b.type !== 'tool_result') continue;
      const text = resultText(b.content);
      const t = this.tools.get(b.tool_use_id);
      const out = h('pre', {class: 'out' + (b.is_error ? ' err' : ''), tabindex: '0'}, text);
      if (t) {
        clear(t.result).append(h('div', {class: 'who'}, b.is_error ? 'Error' : 'Result'), out);
        t.state.textContent = b.is_error ? 'error' : 'done';
        t.el.classList.toggle('failed', Boolean(b.is_error));
      } else {
        this.add(h('details', {class: 'tool', open: true}, h('summary', {}, 'Tool result'), out));
      }
    }
  }

  on_permission_request(ev) {
    const input = ev.input ?? {};
    const edit = h('textarea', {class: 'edit-input', rows: '6', spellcheck: 'false', 'aria-label': `Input for ${ev.tool_name}`});
    edit.value = JSON.stringify(input, null, 2);
    const editor = h('div', {class: 'editor', hidden: true}, edit,
      h('button', {type: 'button', class: 'primary', on: {click: () => {
        let updated;
        try { updated = JSON.parse(edit.value); } catch (err) { err.message = 'The edited input is not valid JSON: ' + err.message; msg.textContent = err.message; edit.setAttribute('aria-invalid', 'true'); return; }
        answer('allow', {updated_input: updated});
      }}}, 'Allow edited'));
    const msg = h('p', {class: 'error', role: 'alert'});
    const answer = (behavior, extra) => {
      buttons.querySelectorAll('button').forEach((b) => { b.disabled = true; });
      Promise.resolve(this.send({type: 'permission_response', request_id: ev.request_id, behavior, ...extra}))
        .catch((err) => { msg.textContent = err.message; buttons.querySelectorAll('button').forEach((b) => { b.disabled = false; }); });
    };
    const buttons = h('div', {class: 'actions'},
      h('button', {type: 'button', class: 'primary allow', on: {click: () => answer('allow', {})}}, 'Allow'),
      h('button', {type: 'button', class: 'danger deny', on: {click: () => answer('deny', {message: 'Denied in the console'})}}, 'Deny'),
      h('button', {type: 'button', class: 'edit', on: {click: () => { editor.hidden = !editor.hidden; if (!editor.hidden) edit.focus(); }}}, 'Allow with edit…'));
    const card = h('section', {class: 'card permission', 'data-request-id': ev.request_id, 'aria-label': `Permission request: ${ev.tool_name}`},
      h('h2', {}, 'Allow ', h('code', {}, ev.tool_name || 'tool'), '?'),
      toolDiff(ev.tool_name, input) || h('pre', {class: 'json', tabindex: '0'}, JSON.stringify(input, null, 2)),
      buttons, editor, msg);
    this.cards.set(ev.request_id, card);
    this.add(card);
    announce(`Permission needed for ${ev.tool_name}`);
  }

  on_permission_resolved(ev) {
    const card = this.cards.get(ev.request_id);
    if (!card) return;
    card.classList.add('resolved');
    card.querySelectorAll('.actions, .editor').forEach((e) => e.remove());
    card.append(h('p', {class: 'resolution'}, `${ev.behavior === 'allow' ? 'Allowed' : 'Denied'}${ev.by ? ' by ' + ev.by : ''}.`));
  }

  on_result(ev) {
    this.finishLive(true);
    const text = `${ev.is_error ? 'Turn failed' : 'Turn done'}: ${ev.num_turns ?? '?'} turns, ${money(ev.total_cost_usd)}${ev.duration_ms ? ', ' + (ev.duration_ms / 1000).toFixed(1) + 's' : ''}`;
    this.note(text, ev.is_error ? 'err' : '');
  }

  on_content_update(ev) {
    const files = (ev.files || []).map((f) => `${f.action || 'changed'} ${f.path}`).join(', ');
    if (files) this.note('Files: ' + files);
  }

  on_session_init(ev) { this.note(`Session started${ev.model ? ' with ' + ev.model : ''}.`); }
  on_cli_exited(ev) { this.note(`Claude Code exited (code ${ev.exit_code}).`, ev.exit_code ? 'err' : ''); }
  on_error(ev) { this.note('Error: ' + (ev.message || ''), 'err'); }
  on_compact_boundary(ev) { this.note('Compacted: ' + (ev.message || 'the conversation was compacted'), 'compact'); }
  on_model_fallback(ev) { this.note(ev.message || `The CLI switched to ${ev.model}.`); }
  on_session_writes_lost(ev) { this.note('Warning: ' + (ev.message || 'the CLI could not save the session'), 'err'); }
  on_background_task(ev) {
    const t = ev.task || {};
    const what = t.description || t.task_type || t.task_id || 'task';
    this.note(t.status ? `Background task ${what}: ${t.status}.` : `Background task started: ${what}.`);
  }
  on_model_changed(ev) { this.note(`Model set to ${ev.model || 'the default'}.`); }
  on_permission_mode_changed(ev) { this.note(`Permission mode set to ${ev.mode}.`); }

  /** on_cli_message shows the hook lines (include_hook_events); other kinds stay in the event log. */
  on_cli_message(ev) {
    const line = ev.line || {};
    if (String(ev.kind).startsWith('system/hook_')) {
      const outcome = line.outcome ? ` ${line.outcome}` : ev.kind === 'system/hook_started' ? ' started' : '';
      this.note(`Hook ${line.hook_name || line.hook_event || ''}${outcome}.`, 'hook');
    }
  }
}
