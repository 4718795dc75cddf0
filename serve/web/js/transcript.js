// A transcript (HTML exported by pneuma history) shown in a sandboxed frame.
import {h} from './dom.js';

/**
 * transcriptFrame shows an HTML document in an iframe sandboxed without any
 * permission: no scripts, no same origin, no forms, no popups. The document
 * arrives through an authorised fetch, so it goes in as srcdoc; it also
 * inherits this page's Content-Security-Policy, which allows no inline script.
 */
export function transcriptFrame(html, title) {
  const f = h('iframe', {sandbox: '', title, class: 'transcript', referrerpolicy: 'no-referrer'});
  f.srcdoc = String(html);
  return f;
}
