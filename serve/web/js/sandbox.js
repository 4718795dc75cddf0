// The sandbox of a job or session: on or off, the hosts its proxy allows,
// and what it refused (connections, reads, writes).
import {h, clear, num} from './dom.js';

const listed = (items, fmt, max = 5) => {
  const shown = items.slice(0, max).map(fmt).join(', ');
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
};

/**
 * sandboxView fills el with a sandbox report (report.Sandbox: network,
 * refused, refused_count, denied, denied_reads, denied_writes); sb null
 * says the job runs without one, undefined that it is not known yet.
 */
export function sandboxView(el, sb) {
  clear(el);
  el.setAttribute('aria-label', 'Sandbox');
  if (sb === undefined) return el.append(h('span', {class: 'muted'}, 'Sandbox: not known until the job finishes.'));
  if (!sb) {
    el.dataset.sandbox = 'off';
    return el.append(h('strong', {}, 'Sandbox off'), h('span', {class: 'muted'}, ' · the agent has your user\'s access'));
  }
  el.dataset.sandbox = 'on';
  const refused = sb.refused || [];
  const denied = sb.denied || [];
  el.append(h('strong', {}, 'Sandbox on'),
    h('dl', {class: 'sandbox'},
      h('dt', {}, 'Network'), h('dd', {class: 'sandbox-network'}, (sb.network || []).join(', ') || 'none'),
      h('dt', {}, 'Refused connections'), h('dd', {class: 'sandbox-refused'}, num(sb.refused_count || 0),
        refused.length ? ' · ' + listed(refused, (r) => `${r.host} (${r.count})`) : ''),
      h('dt', {}, 'Refused reads, writes'), h('dd', {class: 'sandbox-denied'}, `${num(sb.denied_reads || 0)}, ${num(sb.denied_writes || 0)}`,
        denied.length ? ' · ' + listed(denied, (d) => `${d.op} ${d.path} (${d.count})`) : ''),
      (sb.ref_errors || []).length ? [h('dt', {}, 'Branch updates not carried out'), h('dd', {}, sb.ref_errors.join('; '))] : null));
}
