// Diffs rendered as text lines with a class per kind: a unified diff
// (diff.patch) and the before/after of an Edit or Write tool call.
import {h} from './dom.js';

function line(kind, text) {
  return h('span', {class: 'dl ' + kind}, text + '\n');
}

/** unified renders a unified diff (git diff output). */
export function unified(patch) {
  const files = h('div', {class: 'diff'});
  if (!String(patch).trim()) {
    files.append(h('p', {class: 'muted'}, 'No changes.'));
    return files;
  }
  let pre = null;
  const start = (name) => {
    pre = h('pre', {class: 'diff-body', tabindex: '0'});
    files.append(h('h3', {class: 'diff-file'}, name), pre);
  };
  for (const l of String(patch).split('\n')) {
    if (l.startsWith('diff --git ')) {
      const m = / b\/(.*)$/.exec(l);
      start(m ? m[1] : l.slice(11));
      continue;
    }
    if (!pre) start('changes');
    if (/^(index |--- |\+\+\+ |new file|deleted file|similarity|rename |old mode|new mode|Binary)/.test(l)) {
      pre.append(line('meta', l));
    } else if (l.startsWith('@@')) {
      pre.append(line('hunk', l));
    } else if (l.startsWith('+')) {
      pre.append(line('add', l));
    } else if (l.startsWith('-')) {
      pre.append(line('del', l));
    } else if (l !== '' || pre.childNodes.length) {
      pre.append(line('ctx', l));
    }
  }
  return files;
}

/** lines is a minimal line diff of two texts: common head and tail kept. */
export function lines(before, after) {
  const a = String(before ?? '').split('\n');
  const b = String(after ?? '').split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  let j = 0;
  while (j < a.length - i && j < b.length - i && a[a.length - 1 - j] === b[b.length - 1 - j]) j++;
  const pre = h('pre', {class: 'diff-body', tabindex: '0'});
  const ctx = (l) => pre.append(line('ctx', ' ' + l));
  a.slice(Math.max(0, i - 3), i).forEach(ctx);
  a.slice(i, a.length - j).forEach((l) => pre.append(line('del', '-' + l)));
  b.slice(i, b.length - j).forEach((l) => pre.append(line('add', '+' + l)));
  a.slice(a.length - j, Math.min(a.length, a.length - j + 3)).forEach(ctx);
  return h('div', {class: 'diff'}, pre);
}

/** toolDiff renders the change an Edit, MultiEdit or Write input asks for, or null. */
export function toolDiff(tool, input) {
  if (!input || typeof input !== 'object') return null;
  const path = input.file_path || input.path || '';
  const head = path ? h('h3', {class: 'diff-file'}, path) : null;
  if (tool === 'Edit' && 'old_string' in input) {
    return h('div', {}, head, lines(input.old_string, input.new_string));
  }
  if (tool === 'MultiEdit' && Array.isArray(input.edits)) {
    return h('div', {}, head, input.edits.map((e) => lines(e.old_string, e.new_string)));
  }
  if (tool === 'Write' && 'content' in input) {
    const pre = h('pre', {class: 'diff-body', tabindex: '0'});
    String(input.content).split('\n').forEach((l) => pre.append(line('add', '+' + l)));
    return h('div', {}, head, h('div', {class: 'diff'}, pre));
  }
  return null;
}
