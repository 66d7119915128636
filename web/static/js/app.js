// The console's entry: the session (token, viewer, live connection), the
// shell (header, navigation, connection indicator, banner) and the router.
// Routes live in the URL's fragment (#/instances), so the server serves
// one index.html and reloads land on the same page.
import { h, replace } from './dom.js';
import { gql, getToken, setToken, onUnauthenticated, ApiError, describe } from './api.js';
import { Live } from './live.js';
import { Store } from './store.js';
import { pageHead, failure, loading } from './ui.js';
import { loginPage } from './pages/login.js';
import { instancesPage } from './pages/instances.js';
import { instancePage } from './pages/instance.js';
import { createPage } from './pages/create.js';
import { auditPage } from './pages/audit.js';
import { sandboxesPage } from './pages/sandboxes.js';
import { sandboxPage } from './pages/sandbox.js';
import { sandboxNewPage } from './pages/sandbox-new.js';
import { templatesPage } from './pages/templates.js';
import { usagePage } from './pages/usage.js';
import { poolsPage, hostsPage, doctorPage, flavorsPage, imagesPage, tenantsPage } from './pages/ops.js';
import { tokensPage, providersPage } from './pages/access.js';
import { hostPage } from './pages/host.js';
import { bootstrapsPage } from './pages/bootstraps.js';

const VIEWER = `query Viewer { viewer { principal { id name role } tenant { id name } } }`;

const session = {
  viewer: null, // {principal, tenant}
  live: null,
  store: new Store(),
  resyncers: new Set(),
  sandboxWatchers: new Set(), // fns given every sandboxEvents event
  bootstrapWatchers: new Set(), // fns given every providerBootstrapEvents event (operators)
  get operator() { return this.viewer?.principal.role === 'OPERATOR'; },
};

const routes = [
  { path: /^\/instances$/, page: instancesPage, nav: 'instances' },
  { path: /^\/instances\/new$/, page: createPage, nav: 'new' },
  { path: /^\/instances\/([^/]+)$/, page: instancePage, nav: 'instances' },
  { path: /^\/sandboxes$/, page: sandboxesPage, nav: 'sandboxes' },
  { path: /^\/sandboxes\/new$/, page: sandboxNewPage, nav: 'sandboxes' },
  { path: /^\/sandboxes\/([^/]+)$/, page: sandboxPage, nav: 'sandboxes' },
  { path: /^\/templates$/, page: templatesPage, nav: 'templates' },
  { path: /^\/audit$/, page: auditPage, nav: 'audit' },
  { path: /^\/usage$/, page: usagePage, nav: 'usage' },
  { path: /^\/ops\/pools$/, page: poolsPage, nav: 'pools', operator: true },
  { path: /^\/ops\/hosts$/, page: hostsPage, nav: 'hosts', operator: true },
  { path: /^\/ops\/hosts\/([^/]+)$/, page: hostPage, nav: 'hosts', operator: true },
  { path: /^\/ops\/bootstraps$/, page: bootstrapsPage, nav: 'bootstraps', operator: true },
  { path: /^\/ops\/doctor$/, page: doctorPage, nav: 'doctor', operator: true },
  { path: /^\/ops\/flavors$/, page: flavorsPage, nav: 'flavors', operator: true },
  { path: /^\/ops\/images$/, page: imagesPage, nav: 'images', operator: true },
  { path: /^\/ops\/tenants$/, page: tenantsPage, nav: 'tenants', operator: true },
  { path: /^\/ops\/tokens$/, page: tokensPage, nav: 'tokens', operator: true },
  { path: /^\/ops\/providers$/, page: providersPage, nav: 'providers', operator: true },
];

const NAV = [
  ['instances', '#/instances', 'Instances'],
  ['new', '#/instances/new', 'New instance'],
  ['sandboxes', '#/sandboxes', 'Sandboxes'],
  ['templates', '#/templates', 'Templates'],
  ['usage', '#/usage', 'Usage'],
  ['audit', '#/audit', 'Audit log'],
];
const OPS_NAV = [
  ['pools', '#/ops/pools', 'Pools'],
  ['hosts', '#/ops/hosts', 'Hosts'],
  ['bootstraps', '#/ops/bootstraps', 'Bootstraps'],
  ['doctor', '#/ops/doctor', 'Doctor'],
  ['flavors', '#/ops/flavors', 'Flavors'],
  ['images', '#/ops/images', 'Images'],
  ['tenants', '#/ops/tenants', 'Tenants'],
  ['tokens', '#/ops/tokens', 'Tokens'],
  ['providers', '#/ops/providers', 'Providers'],
];

const $header = document.getElementById('top');
const $banner = document.getElementById('banner');
const $main = document.getElementById('main');
let current = null; // {dispose}
let navigated = false;
let usableMarked = false;

// usable marks, once, when the first page a user can act on is on screen
// (the login form, or a logged-in page's content); the tests measure it.
// Each page marks when it first shows its content (bc-ready:<page>).
export function markUsable(what) {
  performance.mark(`bc-ready:${what}`);
  document.documentElement.dataset.ready = what;
  if (usableMarked) return;
  usableMarked = true;
  performance.mark('bc-usable', { detail: what });
  document.documentElement.dataset.usable = what;
}

function parseHash() {
  const [path, qs] = location.hash.replace(/^#/, '').split('?');
  return { path: path && path !== '/' ? path : '/instances', query: new URLSearchParams(qs || '') };
}

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  if (current) current.dispose();
  current = null;
  const ac = new AbortController();
  const disposers = [() => ac.abort()];
  current = { dispose: () => disposers.splice(0).forEach((fn) => fn()) };
  replace($main);
  $main.removeAttribute('aria-busy');
  $main.dataset.page = '';

  if (!session.viewer) {
    renderHeader(null);
    document.title = 'Log in · Better Compute';
    $main.dataset.page = 'login';
    loginPage({ main: $main, signal: ac.signal, onLogin: login, markUsable: () => markUsable('login') });
    return;
  }
  const { path, query } = parseHash();
  let match = null;
  let r = null;
  for (const candidate of routes) {
    match = path.match(candidate.path);
    if (match) { r = candidate; break; }
  }
  renderHeader(r?.nav);
  let marked = false;
  const ctx = {
    main: $main,
    params: match ? match.slice(1).map(decodeURIComponent) : [],
    query,
    signal: ac.signal,
    session,
    store: session.store,
    go,
    markUsable: (what) => { if (!marked) { marked = true; markUsable(what); } },
    setTitle: (t) => { document.title = `${t} · Better Compute`; },
    // onDispose runs fn when the page is left.
    onDispose: (fn) => disposers.push(fn),
    // onResync runs fn after the live connection comes back.
    onResync: (fn) => { session.resyncers.add(fn); disposers.push(() => session.resyncers.delete(fn)); },
    // watch runs fn on every change to the store while the page is shown.
    watch: (fn) => disposers.push(session.store.subscribe(fn)),
    // watchSandboxes runs fn on every sandboxEvents event while the page is shown.
    watchSandboxes: (fn) => { session.sandboxWatchers.add(fn); disposers.push(() => session.sandboxWatchers.delete(fn)); },
    // watchBootstraps runs fn on every providerBootstrapEvents event while the page is shown.
    watchBootstraps: (fn) => { session.bootstrapWatchers.add(fn); disposers.push(() => session.bootstrapWatchers.delete(fn)); },
  };
  if (!r) {
    ctx.setTitle('Not found');
    $main.dataset.page = 'not-found';
    replace($main, pageHead('Page not found'), h('p', null, 'There is no page at this address. ', h('a', { href: '#/instances' }, 'Go to instances')));
  } else if (r.operator && !session.operator) {
    ctx.setTitle('Operators only');
    $main.dataset.page = 'operators-only';
    replace($main, pageHead('Operators only'),
      h('p', { class: 'state state-forbidden' }, 'This page is for operators of the platform. You are logged in as ',
        h('strong', null, session.viewer.principal.name), ', a member of tenant ',
        h('strong', null, session.viewer.tenant?.name || '—'), '.'),
      h('p', null, h('a', { href: '#/instances' }, 'Back to your instances')));
    markUsable('operators-only');
  } else {
    $main.dataset.page = r.nav;
    r.page(ctx);
  }
  if (navigated) {
    const h1 = $main.querySelector('h1');
    (h1 || $main).focus({ preventScroll: false });
  }
  navigated = true;
}

function renderHeader(active) {
  const brand = h('a', { class: 'brand', href: '#/instances' }, h('img', { src: '/icon.svg', alt: '', width: 24, height: 24 }), 'Better Compute');
  if (!session.viewer) {
    replace($header, h('div', { class: 'bar-top' }, brand));
    return;
  }
  const link = ([key, href, label]) => h('li', null, h('a', { href, 'aria-current': key === active ? 'page' : null }, label));
  const p = session.viewer.principal;
  replace($header,
    h('div', { class: 'bar-top' },
      brand,
      h('span', { id: 'conn', class: 'conn', role: 'img', 'aria-label': 'Live updates: connecting' },
        h('span', { class: 'dot', 'aria-hidden': 'true' }), h('span', { class: 'conn-text', 'aria-hidden': 'true' }, 'Connecting…')),
      h('div', { class: 'who' },
        h('span', { class: 'who-name', id: 'who' }, p.name, ' ',
          h('span', { class: 'role' }, p.role === 'OPERATOR' ? 'operator' : 'member'),
          session.viewer.tenant && h('span', { class: 'who-tenant' }, ` · tenant ${session.viewer.tenant.name}`)),
        h('button', { type: 'button', class: 'btn btn-small', id: 'logout', onclick: () => logout() }, 'Log out'))),
    h('nav', { 'aria-label': 'Main' },
      h('ul', { class: 'nav' }, NAV.map(link)),
      session.operator && h('ul', { class: 'nav nav-ops', 'aria-label': 'Operations' },
        h('li', { class: 'nav-heading', 'aria-hidden': 'true' }, 'Operate:'), OPS_NAV.map(link))));
  showStatus(session.live?.status || { state: 'connecting' });
}

let bannerTimer = 0;
let tick = 0;

function showStatus(s) {
  const conn = document.getElementById('conn');
  const text = { live: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', down: 'Offline' }[s.state] || s.state;
  if (conn) {
    conn.className = `conn conn-${s.state}`;
    conn.dataset.state = s.state;
    conn.setAttribute('aria-label', `Live updates: ${text}`);
    replace(conn.querySelector('.conn-text'), text);
  }
  clearInterval(tick);
  clearTimeout(bannerTimer);
  if (s.state === 'down') {
    if ($banner.dataset.kind !== 'down' || $banner.dataset.reason !== s.reason) {
      // The announced words change only when the reason does; the
      // countdown beside them is not read out every second.
      setBanner('down',
        h('strong', null, 'Live updates are interrupted'), ` (${s.reason || 'connection lost'}). `,
        'What you see may be out of date. Reconnecting automatically',
        h('span', { class: 'countdown', 'aria-hidden': 'true' }), '. ',
        h('button', { type: 'button', class: 'btn btn-small', id: 'reconnect', onclick: () => session.live?.now() }, 'Reconnect now'));
      $banner.dataset.reason = s.reason;
    }
    const countdown = () => {
      const el = $banner.querySelector('.countdown');
      if (el) el.textContent = ` in ${Math.max(0, Math.ceil((s.retryAt - Date.now()) / 1000))} s`;
    };
    countdown();
    tick = setInterval(countdown, 1000);
  } else if (s.state === 'reconnecting' && $banner.dataset.kind === 'down') {
    const el = $banner.querySelector('.countdown');
    if (el) el.textContent = ' now…';
  } else if (s.state === 'live' && s.resynced) {
    setBanner('ok', 'Live updates are back; this page was refreshed.');
    bannerTimer = setTimeout(() => setBanner(''), 5000);
  } else if (s.state === 'live') {
    setBanner('');
  }
}

function setBanner(kind, ...content) {
  $banner.dataset.kind = kind;
  delete $banner.dataset.reason;
  replace($banner, kind ? h('div', { class: 'banner-inner' }, ...content) : '');
}

function startLive(token) {
  const live = new Live(token, {
    onStatus: showStatus,
    onEvent: (ev) => session.store.apply(ev),
    onSandboxEvent: (ev) => session.sandboxWatchers.forEach((fn) => fn(ev)),
    onBootstrapEvent: (ev) => session.bootstrapWatchers.forEach((fn) => fn(ev)),
    onResync: () => session.resyncers.forEach((fn) => fn()),
    onAuthFailed: (why) => logout(`${why} Log in again.`),
  }, { operator: session.operator });
  session.live = live;
  live.start();
}

async function login(token, viewer) {
  setToken(token);
  session.viewer = viewer;
  startLive(token);
  if (!location.hash || location.hash === '#/login' || location.hash === '#/') go('#/instances');
  else route();
}

export function logout(message) {
  setToken('');
  session.live?.stop();
  session.live = null;
  session.viewer = null;
  session.store.clear();
  session.resyncers.clear();
  clearInterval(tick);
  clearTimeout(bannerTimer);
  setBanner('');
  if (message) sessionStorage.setItem('bc.flash', message);
  route();
}

onUnauthenticated(() => {
  if (session.viewer) logout('Your token is no longer valid (revoked or expired). Log in again.');
});

document.getElementById('skip')?.addEventListener('click', (e) => {
  e.preventDefault();
  ($main.querySelector('h1') || $main).focus();
});

window.addEventListener('hashchange', route);

async function boot() {
  const token = getToken();
  if (!token) {
    route();
    return;
  }
  replace($main, loading('your session'));
  try {
    const data = await gql(VIEWER, {}, { bearer: token });
    session.viewer = data.viewer;
    startLive(token);
    route();
  } catch (err) {
    if (err instanceof ApiError && err.code === 'UNAUTHENTICATED') {
      setToken('');
      sessionStorage.setItem('bc.flash', 'Your token is no longer valid (revoked or expired). Log in again.');
      route();
      return;
    }
    renderHeader(null);
    replace($main, pageHead('Better Compute'), failure('your session', err, () => boot()),
      h('p', null, h('button', { type: 'button', class: 'btn', onclick: () => { setToken(''); route(); } }, 'Log in with another token')));
    console.warn(describe(err));
  }
}

boot();
