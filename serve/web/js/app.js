// The console's entry point: the token gate and hash routing to the pages.
import {h, clear, field} from './dom.js';
import {token, setToken, clearToken, takeTokenFromURL, setOnUnauthorized} from './api.js';
import {runsPage, runPage, jobPage} from './runs.js';
import {sessionsPage, sessionPage} from './sessions.js';
import {historyPage, historySessionPage} from './history.js';
import {startWatch} from './watch.js';

const routes = [
  [/^#\/runs\/([^/]+)\/jobs\/([^/]+)$/, jobPage],
  [/^#\/runs\/([^/]+)$/, runPage],
  [/^#\/runs$/, runsPage],
  [/^#\/sessions\/([^/]+)$/, sessionPage],
  [/^#\/sessions$/, sessionsPage],
  [/^#\/history\/([^/]+)$/, historySessionPage],
  [/^#\/history$/, historyPage],
];

let cleanup = null;
let gateError = '';

function main() { return document.getElementById('main'); }

function route() {
  if (cleanup) { cleanup(); cleanup = null; }
  const el = clear(main());
  const signout = document.getElementById('signout');
  if (!token()) {
    signout.hidden = true;
    gate(el);
    return;
  }
  signout.hidden = false;
  if (!location.hash || location.hash === '#' || location.hash === '#/') {
    history.replaceState(null, '', location.pathname + location.search + '#/runs');
  }
  const hash = location.hash;
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (hash.startsWith('#/' + a.dataset.nav)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, page] of routes) {
    const m = re.exec(hash);
    if (m) {
      cleanup = page(el, ...m.slice(1).map(decodeURIComponent)) || null;
      return;
    }
  }
  el.append(h('h1', {}, 'Not found'), h('p', {}, 'No page at ', h('code', {}, hash), '.'));
}

// gate asks for the access token when the URL did not carry one.
function gate(el) {
  const input = h('input', {type: 'password', name: 'token', autocomplete: 'off', required: true, spellcheck: 'false'});
  const form = h('form', {class: 'card gate', on: {submit: (e) => {
    e.preventDefault();
    if (!input.value.trim()) return;
    setToken(input.value.trim());
    gateError = '';
    if (!location.hash.startsWith('#/')) history.replaceState(null, '', location.pathname + '#/runs');
    route();
    main().focus();
  }}},
  h('h1', {}, 'Sign in'),
  h('p', {}, 'Open the address ', h('code', {}, 'pneuma serve'), ' printed, or paste its access token.'),
  gateError ? h('p', {class: 'error', role: 'alert'}, gateError) : null,
  field('Access token', input),
  h('button', {type: 'submit', class: 'primary'}, 'Sign in'));
  el.append(form);
}

setOnUnauthorized(() => {
  clearToken();
  gateError = 'The server refused the access token. Paste a current one.';
  route();
});

takeTokenFromURL();
document.getElementById('signout').addEventListener('click', () => {
  clearToken();
  gateError = '';
  route();
});
window.addEventListener('hashchange', () => {
  if (takeTokenFromURL()) { route(); return; }
  route();
  main().focus({preventScroll: true});
});
route();
startWatch();
