// One line of the CLI's stream-json output, summarised as text with the
// whole line folded underneath.
import {h} from './dom.js';

function blockText(b) {
  if (!b || typeof b !== 'object') return '';
  if (b.type === 'text') return b.text || '';
  if (b.type === 'thinking') return '(thinking) ' + (b.thinking || '');
  if (b.type === 'tool_use') return `→ ${b.name}(${JSON.stringify(b.input || {}).slice(0, 200)})`;
  if (b.type === 'tool_result') return '← ' + resultText(b.content).slice(0, 300);
  return b.type || '';
}

/** resultText flattens a tool_result's content (a string or text blocks). */
export function resultText(c) {
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((x) => (x && x.type === 'text' ? x.text : x && x.type ? `[${x.type}]` : '')).join('\n');
  return c == null ? '' : JSON.stringify(c);
}

function summary(ev) {
  const m = ev.message;
  switch (ev.type) {
    case 'system':
      if (/^hook_/.test(ev.subtype || '')) return `${ev.subtype} ${ev.hook_name || ''}${ev.outcome ? ': ' + ev.outcome : ''}${ev.exit_code != null ? ` (exit ${ev.exit_code})` : ''}`;
      return `${ev.subtype || ''} ${ev.model || ''}`.trim();
    case 'assistant':
    case 'user': return m && Array.isArray(m.content) ? m.content.map(blockText).join(' ') : (m && m.content) || '';
    case 'result': return `${ev.subtype || ''}, ${ev.num_turns ?? '?'} turns, $${Number(ev.total_cost_usd || 0).toFixed(4)}${ev.result ? ': ' + ev.result : ''}`;
    case 'stream_event': {
      const d = ev.event && ev.event.delta;
      return (ev.event && ev.event.type || '') + (d && d.text ? ': ' + d.text : '');
    }
    case 'text': return ev.text;
    default: return '';
  }
}

/** streamLine renders one stream-json object as a list item. */
export function streamLine(ev) {
  const s = summary(ev || {});
  return h('li', {},
    h('details', {},
      h('summary', {}, h('span', {class: 'tag'}, String((ev && ev.type) || '?')), ' ', h('span', {class: 'sum'}, String(s).slice(0, 400))),
      h('pre', {class: 'json', tabindex: '0'}, JSON.stringify(ev, null, 2))));
}
