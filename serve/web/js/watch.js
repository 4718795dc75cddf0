// The console notifies while it is open: the tab's title counts the
// permission requests waiting across sessions, and, once the user allowed
// it from a click on "Turn on notifications", the browser's Notifications
// API tells of each new permission request and each finished run. It polls
// the session and run lists; nothing is asked of the browser unprompted.
import {get, token, enc} from './api.js';
import {announce} from './dom.js';

const every = 4000;
const countPrefix = /^\(\d+\) /;

let timer = null;
let seenRequests = null; // "session/request" keys; null before the first poll
let runStatus = null;    // run id → status; null before the first poll

/** startWatch begins polling and offers the notifications button. */
export function startWatch() {
  offerButton();
  if (timer !== null) return;
  const tick = async () => {
    try {
      if (token()) await poll();
    } catch {
      // The pages show API errors; the next tick tries again.
    } finally {
      timer = setTimeout(tick, every);
    }
  };
  timer = setTimeout(tick, 0);
}

// list accepts a bare array or an object holding one (a paged answer).
function list(v, key) {
  if (Array.isArray(v)) return v;
  return (v && Array.isArray(v[key])) ? v[key] : [];
}

async function poll() {
  const sessions = list(await get('/api/sessions'), 'sessions');
  const keys = new Set();
  for (const s of sessions) {
    for (const p of s.pending_permissions || []) {
      const key = s.id + '/' + p.request_id;
      keys.add(key);
      if (seenRequests && !seenRequests.has(key)) {
        show(`${s.name || s.id} asks to use ${p.tool_name}`, 'A permission request waits for you.', '#/sessions/' + enc(s.id));
      }
    }
  }
  seenRequests = keys;
  setCount(keys.size);

  const runs = list(await get('/api/runs'), 'runs');
  const status = new Map();
  for (const r of runs) {
    status.set(r.id, r.status);
    const before = runStatus ? runStatus.get(r.id) : undefined;
    const finished = r.status && r.status !== 'running';
    if (runStatus && finished && (before === 'running' || before === undefined)) {
      show(`Run ${r.id} ${r.status}`, `${r.jobs_total || 0} jobs, $${Number(r.spent_usd || 0).toFixed(4)}`, '#/runs/' + enc(r.id));
    }
  }
  runStatus = status;
}

// setCount puts "(N) " before the page's own title, or takes it away.
function setCount(n) {
  const base = document.title.replace(countPrefix, '');
  document.title = n > 0 ? `(${n}) ${base}` : base;
}

function show(title, body, hash) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  const n = new Notification(title, {body, tag: hash});
  n.onclick = () => {
    window.focus();
    location.hash = hash;
    n.close();
  };
}

// offerButton shows "Turn on notifications" while the browser has not been
// asked; a click asks once, and the button goes either way.
function offerButton() {
  if (!('Notification' in window) || Notification.permission !== 'default' || document.getElementById('notify-on')) return;
  const btn = document.createElement('button');
  btn.type = 'button';
  btn.id = 'notify-on';
  btn.className = 'link';
  btn.textContent = 'Turn on notifications';
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    const answer = await Notification.requestPermission();
    btn.remove();
    announce(answer === 'granted' ? 'Notifications on.' : 'Notifications stay off.');
  });
  const signout = document.getElementById('signout');
  signout.parentNode.insertBefore(btn, signout);
}
