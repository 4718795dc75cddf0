// The server's HTTP and WebSocket API: the bearer token, JSON requests and
// event streams that survive a dropped connection.

const KEY = 'pneuma.token';

/** token returns the stored access token, or ''. */
export function token() {
  return sessionStorage.getItem(KEY) || '';
}

/** setToken stores the access token for this tab. */
export function setToken(t) {
  sessionStorage.setItem(KEY, t);
}

/** clearToken forgets the access token. */
export function clearToken() {
  sessionStorage.removeItem(KEY);
}

/**
 * takeTokenFromURL moves a token in the fragment (/#token=...) into session
 * storage and removes it from the address bar and the history entry.
 */
export function takeTokenFromURL() {
  const m = /^#token=([^&]+)/.exec(location.hash);
  if (!m) return false;
  setToken(decodeURIComponent(m[1]));
  history.replaceState(null, '', location.pathname + location.search + '#/runs');
  return true;
}

/** ApiError is a failed request: its HTTP status and the server's message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** onUnauthorized is called when the server refuses the token. */
export let onUnauthorized = () => {};
export function setOnUnauthorized(fn) { onUnauthorized = fn; }

/**
 * request sends an authorised request and returns the decoded JSON, the text
 * (as: 'text') or null for an empty body.
 */
export async function request(method, path, body, as) {
  const headers = {Authorization: 'Bearer ' + token()};
  const init = {method, headers, cache: 'no-store'};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  if (res.status === 401 || (res.status === 403 && /wrong token/.test(text))) {
    onUnauthorized();
    throw new ApiError(401, 'the server refused the access token');
  }
  if (!res.ok) {
    let msg = text.trim();
    try { msg = JSON.parse(text).error || msg; } catch { /* plain text */ }
    throw new ApiError(res.status, `${method} ${path}: ${res.status} ${msg}`.trim());
  }
  if (as === 'text') return text;
  if (!text) return null;
  return JSON.parse(text);
}

export const get = (path, as) => request('GET', path, undefined, as);
export const post = (path, body) => request('POST', path, body || {});
export const del = (path) => request('DELETE', path);

/** enc escapes one path segment. */
export const enc = encodeURIComponent;

/**
 * Stream is an event stream over a WebSocket: it authenticates, subscribes
 * from the last seq it has seen, hands each event to onEvent exactly once in
 * seq order, and after a dropped connection comes back with backoff,
 * reporting 'live', 'connecting', 'reconnecting' or 'closed' to onState.
 */
export class Stream {
  constructor(path, {onEvent, onState}) {
    this.path = path;
    this.onEvent = onEvent;
    this.onState = onState || (() => {});
    this.lastSeq = 0;
    this.ws = null;
    this.closed = false;
    this.tries = 0;
    this.timers = [];
    this.connect(false);
  }

  connect(again) {
    if (this.closed) return;
    this.onState(again ? 'reconnecting' : 'connecting');
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(proto + '//' + location.host + this.path);
    this.ws = ws;
    ws.addEventListener('open', () => {
      ws.send(JSON.stringify({type: 'auth', token: token()}));
      ws.send(JSON.stringify({type: 'subscribe', last_seq: this.lastSeq}));
      this.tries = 0;
      this.onState('live');
      this.ping = setInterval(() => this.send({type: 'ping'}), 25000);
    });
    ws.addEventListener('message', (m) => this.receive(m.data));
    ws.addEventListener('close', (e) => {
      clearInterval(this.ping);
      if (this.ws !== ws || this.closed) return;
      if (e.code === 4001) {
        this.onState('closed');
        onUnauthorized();
        return;
      }
      const delay = e.code === 4008 ? 0 : Math.min(5000, 250 * 2 ** this.tries++);
      this.onState('reconnecting');
      this.timers.push(setTimeout(() => this.connect(true), delay));
    });
  }

  receive(data) {
    let ev;
    try { ev = JSON.parse(data); } catch { return; }
    if (!ev || typeof ev !== 'object') return;
    // message_accepted names the seq of the message's event: a reply, not
    // an event, so it never moves lastSeq (the server sends it after the event).
    if (typeof ev.seq === 'number' && ev.seq > 0 && ev.type !== 'message_accepted') {
      if (ev.seq <= this.lastSeq) return; // already shown: a replay after reconnecting
      this.lastSeq = ev.seq;
      this.scheduleAck();
    }
    if (ev.type === 'pong') return;
    this.onEvent(ev);
  }

  scheduleAck() {
    if (this.ackTimer) return;
    this.ackTimer = setTimeout(() => {
      this.ackTimer = null;
      this.send({type: 'ack', last_seq: this.lastSeq});
    }, 500);
  }

  /** send sends a message; it returns false when the socket is not open. */
  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  /** close ends the stream for good. */
  close() {
    this.closed = true;
    this.timers.forEach(clearTimeout);
    clearTimeout(this.ackTimer);
    clearInterval(this.ping);
    if (this.ws) this.ws.close(1000);
  }
}
