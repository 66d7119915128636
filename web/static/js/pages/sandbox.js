// One sandbox: its state kept live from its events and its instance's, its
// template, metadata, how it started, the time it has left counting down,
// and set timeout (extend or shorten), pause/resume and delete; its
// snapshots (take, delete, restore into a new sandbox).
//
// The page is a list of sections (SECTIONS), each built from the sandbox
// and updated as it changes: details, time left, its event history
// (sandbox-history.js) and its CPU and memory plots (sandbox-stats.js).
import { h, replace, time, fmtTime } from '../dom.js';
import { gql, ApiError } from '../api.js';
import { loading, failure, empty, pageHead, timeLeft, tickTimeLeft, dl } from '../ui.js';
import { FIELDS, live, sandboxState, stateCell, startedTag, metadataList, seconds } from '../sandboxes.js';
import { actionBar } from './actions.js';
import { formKit } from './form.js';
import { historySection } from './sandbox-history.js';
import { statsSection } from './sandbox-stats.js';
import { snapshotsSection } from './sandbox-snapshots.js';

const QUERY = `query Sandbox($id: ID!) { sandbox(id: $id) { ${FIELDS} tenant { name } } }`;

const ACTIONS = {
  pause: { mutation: 'pauseSandbox', verb: 'Pause', busy: 'Pausing…' },
  resume: { mutation: 'resumeSandbox', verb: 'Resume', busy: 'Resuming…' },
  delete: {
    mutation: 'deleteSandbox', verb: 'Delete', busy: 'Deleting…', danger: true,
    body: 'Its instance is deleted with everything in it, and its allocation released. This cannot be undone.',
  },
};

// SECTIONS are the page's cards: build(page) returns {el, update()}, and
// update runs whenever the sandbox changes (page.sbx is the newest).
const SECTIONS = [detailsSection, timeoutSection, snapshotsSection, historySection, statsSection];

export function sandboxPage(ctx) {
  const { main, store } = ctx;
  const id = ctx.params[0];
  ctx.setTitle('Sandbox');
  replace(main, pageHead('Sandbox'), loading('the sandbox'));

  const page = { ctx, sbx: null, set };
  const view = {};
  let sections = [];
  const actions = actionBar({
    id: 'sandbox-actions',
    noun: 'sandbox',
    actions: Object.fromEntries(Object.entries(ACTIONS).map(([k, a]) => [k, {
      ...a,
      confirm: () => a.body && ({ title: `${a.verb} sandbox ${id}?`, body: a.body, ok: `${a.verb} sandbox` }),
      run: async () => {
        const data = await gql(`mutation Act($id: ID!) { ${a.mutation}(input: {id: $id}) { sandbox { ${FIELDS} } } }`, { id }, { signal: ctx.signal });
        set(data[a.mutation].sandbox);
      },
    }])),
  });

  // set takes a sandbox read or returned by a mutation.
  function set(sbx) {
    page.sbx = live(sbx, store);
    refresh();
  }

  async function load(initial) {
    try {
      const data = await gql(QUERY, { id }, { signal: ctx.signal });
      page.sbx = live(data.sandbox, store);
      if (initial) build();
      else refresh();
      ctx.markUsable('sandbox');
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err instanceof ApiError && err.code === 'NOT_FOUND') {
        ctx.setTitle('Sandbox not found');
        replace(main, pageHead('Sandbox not found'),
          empty('There is no sandbox with this ID, or it belongs to another tenant.', h('p', null, h('a', { href: '#/sandboxes' }, 'Back to sandboxes'))));
        return;
      }
      if (initial) replace(main, pageHead('Sandbox'), failure('the sandbox', err, () => { replace(main, pageHead('Sandbox'), loading('the sandbox')); load(true); }));
    }
  }

  function build() {
    ctx.setTitle(`Sandbox ${id}`);
    view.state = h('span', { id: 'sandbox-state' });
    view.reason = h('div', { id: 'sandbox-reason' });
    view.ended = h('div');
    sections = SECTIONS.map((make) => make(page));
    const refocus = document.activeElement?.tagName === 'H1' && main.contains(document.activeElement);
    replace(main,
      h('p', { class: 'crumbs' }, h('a', { href: '#/sandboxes' }, '← Sandboxes')),
      pageHead(h('span', { class: 'mono' }, id), view.state),
      view.reason,
      view.ended,
      actions.el,
      actions.error,
      h('div', { class: 'grid-2' }, sections.map((s) => s.el)));
    ctx.onDispose(tickTimeLeft(main));
    refresh();
    if (refocus) main.querySelector('h1').focus();
  }

  function refresh() {
    if (!view.state) return;
    const s = page.sbx;
    replace(view.state, stateCell(s, { class: 'state-cell big' }));
    const inst = s.instance;
    replace(view.reason, inst.stateReason && ['ERROR', 'LOST'].includes(s.state)
      ? h('p', { class: 'reason reason-bad' }, h('strong', null, 'Reason: '), inst.stateReason) : '');
    replace(view.ended, s.endedAt
      ? h('p', { class: 'notice', id: 'sandbox-ended' }, `This sandbox ${s.state === 'EXPIRED' ? 'expired' : 'was deleted'} at ${fmtTime(s.endedAt)}. `, h('a', { href: '#/sandboxes' }, 'Back to sandboxes'))
      : '');
    const ending = !!s.endedAt || inst.desiredState === 'DELETED';
    actions.update({
      pause: !ending && inst.desiredState === 'RUNNING',
      resume: !ending && inst.desiredState === 'PAUSED',
      delete: !ending,
    });
    sections.forEach((sec) => sec.update());
  }

  ctx.watch((change) => {
    const s = page.sbx;
    if (!s || change.instance.id !== s.instance.id) return;
    const next = { ...s, instance: { ...s.instance, ...change.instance } };
    next.state = sandboxState(next, next.instance);
    page.sbx = next;
    refresh();
    // How it ended (deleted or expired) and when: the server says.
    if (next.state === 'DELETED' && !next.endedAt) load(false);
  });
  // Its steps, with the sandbox as each left it (ended, timeout moved).
  ctx.watchSandboxes((ev) => {
    if (page.sbx && ev.sandbox.id === page.sbx.id && ev.sandbox.version >= page.sbx.version) set(ev.sandbox);
  });
  ctx.onResync(() => load(false));
  load(true);
}

// detailsSection: what the sandbox is.
function detailsSection(page) {
  const body = h('div');
  const el = h('section', { class: 'card', 'aria-labelledby': 'h-details' }, h('h2', { id: 'h-details' }, 'Details'), body);
  return {
    el,
    update() {
      const s = page.sbx;
      const inst = s.instance;
      replace(body, dl([
        ['Template', h('a', { href: `#/sandboxes?template=${encodeURIComponent(s.template.id)}`, id: 'sandbox-template' }, s.template.name)],
        ['Started', h('span', { id: 'sandbox-started' }, startedTag(s.startedFrom), s.startedFrom === 'WARM' ? ' claimed a warm instance'
          : s.fromSnapshot ? ` restored from snapshot ${s.fromSnapshot.name}` : ' booted its own instance')],
        ['Template version', String(s.templateVersion)],
        ['Metadata', h('div', { id: 'sandbox-metadata' }, metadataList(s.metadata))],
        ['Addresses', inst.addresses?.length ? h('span', { class: 'mono' }, inst.addresses.join(', ')) : h('span', { class: 'muted' }, 'none yet')],
        ['Instance', h('a', { href: `#/instances/${encodeURIComponent(inst.id)}`, class: 'mono' }, inst.id)],
        page.ctx.session.operator && ['Tenant', s.tenant.name],
        ['Created', time(s.createdAt)],
      ]));
    },
  };
}

// timeoutSection: when the sandbox expires, the time it has left, and a
// form to set its timeout again (extend or shorten it).
function timeoutSection(page) {
  const { ctx } = page;
  const left = h('dd', { id: 'sandbox-left' });
  const expires = h('dd', { id: 'sandbox-expires' });
  const form = formKit('timeout', 'set');
  const input = h('input', { type: 'number', name: 'timeout', min: '1', step: '1', inputmode: 'numeric', required: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'timeout-submit' }, 'Set timeout');
  const done = h('p', { class: 'hint', id: 'timeout-done', 'aria-live': 'polite' });
  const hint = h('span');
  const fields = h('form', { class: 'form', id: 'timeout-form', novalidate: true },
    form.summary,
    form.field('timeout', 'New timeout, in seconds from now', input, hint),
    h('div', { class: 'actions' }, submit), done);
  const el = h('section', { class: 'card', 'aria-labelledby': 'h-timeout' },
    h('h2', { id: 'h-timeout' }, 'Time left'),
    h('dl', { class: 'facts' }, h('dt', null, 'Time left'), left, h('dt', null, 'Expires at'), expires),
    h('p', { class: 'hint' }, 'It is deleted at its deadline; the clock runs while it is paused. Setting the timeout moves the deadline to that many seconds from now.'),
    fields);
  let shown = '';
  let ended = null;

  fields.addEventListener('submit', async (e) => {
    e.preventDefault();
    form.clearErrors();
    replace(done);
    const max = page.sbx.template.maxTimeout;
    const n = Number(input.value);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      form.showErrors([['timeout', `enter a whole number of seconds from 1 to ${max} (the template's maximum).`]]);
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Setting…';
    try {
      const data = await gql(`mutation Timeout($id: ID!, $t: Int!) { setSandboxTimeout(input: {id: $id, timeout: $t}) { sandbox { ${FIELDS} } } }`,
        { id: page.sbx.id, t: n }, { signal: ctx.signal });
      page.set(data.setSandboxTimeout.sandbox);
      replace(done, `Done: it now expires at ${fmtTime(page.sbx.expiresAt)}.`);
    } catch (err) {
      if (err.name === 'AbortError') return;
      form.showApiError(err, (ext, msg) => (ext.field === 'timeout' ? ['timeout', msg] : null));
    } finally {
      submit.disabled = false;
      submit.textContent = 'Set timeout';
    }
  });

  return {
    el,
    update() {
      const s = page.sbx;
      // Re-made only when the deadline moves or the sandbox ends, so the
      // countdown keeps ticking in place.
      if (shown !== s.expiresAt || ended !== s.endedAt) {
        shown = s.expiresAt;
        ended = s.endedAt;
        replace(left, timeLeft(s.expiresAt, s.endedAt));
        replace(expires, time(s.expiresAt));
      }
      if (!input.value) input.value = String(s.template.defaultTimeout);
      input.max = String(s.template.maxTimeout);
      replace(hint, `At most ${s.template.maxTimeout} seconds (${seconds(s.template.maxTimeout)}), the template's maximum.`);
      fields.hidden = !!s.endedAt || s.instance.desiredState === 'DELETED';
    },
  };
}
