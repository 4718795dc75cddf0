// DOM helpers. Everything here builds nodes and sets text; nothing parses
// HTML, so data from the server, the model or a tool can only ever be text.

/**
 * h builds an element: h('a', {href: '#/x', class: 'c', on: {click: fn}}, 'text', child).
 * Attribute values are set with setAttribute (never as HTML); children that are
 * strings or numbers become text nodes; null, undefined and false are skipped.
 */
export function h(tag, attrs, ...children) {
  const el = tag.includes(':')
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.split(':')[1])
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    } else if (k === 'text') {
      el.textContent = String(v);
    } else if (k === 'value' && 'value' in el) {
      el.value = v;
    } else if (k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'open' || k === 'selected') {
      el[k] = Boolean(v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

/** append adds children (nodes, strings, arrays of them) to el. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** clear removes every child of el. */
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** announce tells screen readers about a change. */
export function announce(msg) {
  const el = document.getElementById('announce');
  if (el) el.textContent = msg;
}

/** money formats US dollars. */
export function money(v) {
  const n = Number(v) || 0;
  return '$' + n.toFixed(n > 0 && n < 1 ? 4 : 2); // agents' costs are often cents: keep them exact
}

/** num formats an integer with thousands separators. */
export function num(v) {
  return (Number(v) || 0).toLocaleString('en-US');
}

/** duration formats milliseconds as 1.2s, 3m04s or 1h02m. */
export function duration(ms) {
  const s = (Number(ms) || 0) / 1000;
  if (s < 60) return s.toFixed(1) + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm' + String(Math.floor(s % 60)).padStart(2, '0') + 's';
  return Math.floor(m / 60) + 'h' + String(m % 60).padStart(2, '0') + 'm';
}

/** when formats a timestamp in the reader's locale, or '-'. */
export function when(t) {
  if (!t || t.startsWith('0001-')) return '-';
  const d = new Date(t);
  return isNaN(d) ? '-' : d.toLocaleString();
}

/** tokens sums the tokens of a usage object. */
export function tokens(u) {
  if (!u) return 0;
  return (u.input_tokens || 0) + (u.output_tokens || 0) +
    (u.cache_read_input_tokens || 0) + (u.cache_creation_input_tokens || 0);
}

/** badge is a status shown as text with a colour class. */
export function badge(status) {
  const s = String(status || 'unknown');
  return h('span', {class: 'badge s-' + s.replace(/[^a-z_]/g, ''), 'data-status': s}, s.replace(/_/g, ' '));
}

/** field is a labelled form control. */
export function field(label, control, hint) {
  const id = control.id || ('f-' + Math.random().toString(36).slice(2));
  control.id = id;
  const hintEl = hint ? h('span', {class: 'hint', id: id + '-hint'}, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', id + '-hint');
  return h('div', {class: 'field'}, h('label', {for: id}, label), control, hintEl);
}

/** scroller wraps a wide element (a table) so it scrolls sideways on a phone. */
export function scroller(label, child) {
  return h('div', {class: 'scroll', role: 'region', 'aria-label': label, tabindex: '0'}, child);
}

/**
 * labelCells gives each cell of a row its column's name (data-label): on a
 * narrow screen a table.cards shows every row as a card of labelled values.
 */
export function labelCells(tr, names) {
  [...tr.children].forEach((c, i) => { if (names[i]) c.setAttribute('data-label', names[i]); });
  return tr;
}

/** errorBox shows an error message. */
export function errorBox(err) {
  return h('p', {class: 'error', role: 'alert'}, String(err && err.message ? err.message : err));
}
