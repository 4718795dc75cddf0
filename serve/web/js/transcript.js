// A transcript exported by pneuma history, shown as text.
import {h} from './dom.js';

/**
 * transcriptView shows an exported transcript. The console asks for the
 * text export and shows it in a <pre>: readable in both colour schemes, and
 * nothing of it is parsed as HTML. The HTML export cannot be shown as it is
 * meant to look: in a frame it inherits this page's Content-Security-Policy,
 * which blocks its inline <style>. A server that answers with HTML anyway
 * (a job's transcript route ignores ?format) gets transcriptFrame.
 */
export function transcriptView(text, title) {
  const s = String(text);
  if (/^\s*<(!doctype|html)/i.test(s)) return transcriptFrame(s, title);
  return h('pre', {class: 'transcript-text', tabindex: '0', role: 'region', 'aria-label': title}, s);
}

/**
 * transcriptFrame shows an HTML document in an iframe sandboxed without any
 * permission: no scripts, no same origin, no forms, no popups. The document
 * arrives through an authorised fetch, so it goes in as srcdoc; it also
 * inherits this page's Content-Security-Policy, which allows no inline script
 * (nor inline style: the export shows unstyled).
 */
export function transcriptFrame(html, title) {
  const f = h('iframe', {sandbox: '', title, class: 'transcript', referrerpolicy: 'no-referrer'});
  f.srcdoc = String(html);
  return f;
}
