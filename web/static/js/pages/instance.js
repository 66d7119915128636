// One instance: what it is, its state as it changes (a timeline of its
// recorded history, then of the events since the page opened), and
// start/stop/delete with a confirmation.
import { h, replace, time, mib, fmtTime } from '../dom.js';
import { gql, ApiError } from '../api.js';
import { badge, loading, failure, empty, pageHead } from '../ui.js';
import { actionBar } from './actions.js';

const QUERY = `query Instance($id: ID!) { instance(id: $id) {
  id name state desiredState stateReason addresses version createdAt updatedAt imageVerified hostCertified hostCertValidBefore
  pool { id name class } flavor { name vcpus memoryMb diskGb gpuCount gpuModel }
  image { name format } sshKeys { type fingerprint comment } tenant { name } host { name } history { from to at } } }`;

const FIELDS = 'id name state desiredState stateReason addresses hostCertified hostCertValidBefore version updatedAt';
const ACTIONS = {
  start: { mutation: 'startInstance', verb: 'Start', busy: 'Starting…', body: 'It will boot and run again.' },
  stop: { mutation: 'stopInstance', verb: 'Stop', busy: 'Stopping…', body: 'Its guest is shut down; its disk and addresses are kept, and you can start it again.' },
  delete: { mutation: 'deleteInstance', verb: 'Delete', busy: 'Deleting…', body: 'Its disk is destroyed and its addresses are released. This cannot be undone.', danger: true },
};

export function instancePage(ctx) {
  const { main, store, session } = ctx;
  const id = ctx.params[0];
  ctx.setTitle('Instance');
  replace(main, pageHead('Instance'), loading('the instance'));

  let inst = null; // what the query returned, with live fields merged in
  const timeline = []; // {at, state, desiredState, stateReason, version, note}
  const opened = new Date();
  const view = {};
  const actions = actionBar({
    id: 'instance-actions',
    noun: 'instance',
    actions: Object.fromEntries(Object.entries(ACTIONS).map(([k, a]) => [k, {
      ...a,
      confirm: () => ({ title: `${a.verb} ${inst.name}?`, body: a.body, ok: `${a.verb} instance` }),
      run: async () => {
        const data = await gql(`mutation Act($id: ID!) { ${a.mutation}(input: {id: $id}) { instance { ${FIELDS} } } }`, { id }, { signal: ctx.signal });
        store.merge(data[a.mutation].instance);
      },
    }])),
  });

  async function load(initial) {
    try {
      const data = await gql(QUERY, { id }, { signal: ctx.signal });
      const { history, ...fields } = data.instance;
      store.merge(fields);
      inst = store.latest(fields);
      if (initial) {
        for (const c of history) timeline.push({ at: new Date(c.at), state: c.to, note: c.from ? '' : 'created' });
        timeline.push({ at: opened, state: inst.state, desiredState: inst.desiredState, stateReason: inst.stateReason, version: inst.version, note: 'when the page opened' });
        build();
      } else {
        refresh();
      }
      ctx.markUsable('instance');
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err instanceof ApiError && err.code === 'NOT_FOUND') {
        ctx.setTitle('Instance not found');
        replace(main, pageHead('Instance not found'),
          empty('There is no instance with this ID, or it belongs to another tenant.', h('p', null, h('a', { href: '#/instances' }, 'Back to instances'))));
        return;
      }
      if (initial) replace(main, pageHead('Instance'), failure('the instance', err, () => { replace(main, pageHead('Instance'), loading('the instance')); load(true); }));
    }
  }

  function build() {
    ctx.setTitle(inst.name);
    view.badge = h('span', { id: 'instance-state' });
    view.desired = h('span', { class: 'desired', id: 'instance-desired' });
    view.reason = h('div', { id: 'instance-reason' });
    view.deleted = h('div');
    view.addresses = h('dd', { id: 'instance-addresses' });
    view.certified = h('dd', { id: 'instance-certified' });
    view.timeline = h('ol', { class: 'timeline', id: 'timeline', 'aria-live': 'polite', 'aria-relevant': 'additions' });
    const f = inst.flavor;
    // Keep focus on the heading when it is replaced (after navigation).
    const refocus = document.activeElement?.tagName === 'H1' && main.contains(document.activeElement);
    replace(main,
      h('p', { class: 'crumbs' }, h('a', { href: '#/instances' }, '← Instances')),
      pageHead(inst.name, h('span', { class: 'state-cell big' }, view.badge, view.desired)),
      view.reason,
      view.deleted,
      actions.el,
      actions.error,
      h('div', { class: 'grid-2' },
        h('section', { class: 'card', 'aria-labelledby': 'h-details' },
          h('h2', { id: 'h-details' }, 'Details'),
          h('dl', { class: 'facts' },
            h('dt', null, 'Addresses'), view.addresses,
            h('dt', null, 'Flavor'), h('dd', null, `${f.name} — ${f.vcpus} vCPU, ${mib(f.memoryMb)} memory, ${f.diskGb} GB disk${f.gpuCount ? `, ${f.gpuCount} × ${f.gpuModel || 'GPU'}` : ''}`),
            h('dt', null, 'Image'), h('dd', null, inst.image ? `${inst.image.name} (${inst.image.format.toLowerCase()}${inst.imageVerified ? ', verified' : ''})` : h('span', { class: 'muted' }, 'no longer available')),
            h('dt', null, 'Pool'), h('dd', null, `${inst.pool.name} (${inst.pool.class})`),
            h('dt', null, 'Host certificate'), view.certified,
            session.operator && [h('dt', null, 'Tenant'), h('dd', null, inst.tenant.name)],
            session.operator && [h('dt', null, 'Host'), h('dd', null, inst.host?.name || h('span', { class: 'muted' }, 'none'))],
            h('dt', null, 'ID'), h('dd', { class: 'mono' }, inst.id),
            h('dt', null, 'Created'), h('dd', null, time(inst.createdAt)),
            h('dt', null, 'SSH keys'), h('dd', null, inst.sshKeys.length
              ? h('ul', { class: 'plain' }, inst.sshKeys.map((k) => h('li', null, h('span', { class: 'mono' }, `${k.type} ${k.fingerprint}`), k.comment ? ` ${k.comment}` : '')))
              : '—'))),
        h('section', { class: 'card', 'aria-labelledby': 'h-timeline' },
          h('h2', { id: 'h-timeline' }, 'State timeline'),
          h('p', { class: 'hint' }, 'Changes since this page opened, as they arrive.'),
          view.timeline)));
    refresh();
    renderTimeline();
    if (refocus) main.querySelector('h1').focus();
  }

  function refresh() {
    if (!view.badge) return;
    replace(view.badge, badge(inst.state));
    replace(view.desired, inst.desiredState !== inst.state && inst.state !== 'DELETED' ? `→ ${inst.desiredState}` : '');
    view.desired.title = `Desired state: ${inst.desiredState}`;
    replace(view.reason, inst.stateReason ? h('p', { class: `reason ${['ERROR', 'LOST'].includes(inst.state) ? 'reason-bad' : ''}` }, h('strong', null, 'Reason: '), inst.stateReason) : '');
    replace(view.addresses, inst.addresses.length ? h('span', { class: 'mono' }, inst.addresses.join(', ')) : h('span', { class: 'muted' }, 'none yet'));
    replace(view.certified, inst.hostCertified
      ? ['certified until ', time(inst.hostCertValidBefore)]
      : h('span', { class: 'muted' }, 'not certified'));
    replace(view.deleted, inst.state === 'DELETED' ? h('p', { class: 'notice', id: 'instance-deleted' }, 'This instance is deleted. ', h('a', { href: '#/instances' }, 'Back to instances')) : '');
    renderActions();
  }

  function renderActions() {
    const gone = inst.desiredState === 'DELETED' || inst.state === 'DELETED';
    actions.update({
      start: !gone && inst.desiredState !== 'RUNNING',
      stop: !gone && inst.desiredState === 'RUNNING',
      delete: !gone,
    });
  }

  function renderTimeline() {
    replace(view.timeline, timeline.map((e) => h('li', { dataset: { state: e.state } },
      h('span', { class: 'tl-time' }, h('time', { datetime: e.at.toISOString() }, fmtTime(e.at))),
      badge(e.state),
      e.desiredState && h('span', { class: 'tl-desired' }, `desired ${e.desiredState}`),
      e.note && h('span', { class: 'tl-note' }, e.note),
      e.stateReason && h('span', { class: 'tl-reason' }, e.stateReason))));
  }

  ctx.watch((change) => {
    if (change.instance.id !== id || !inst) return;
    inst = { ...inst, ...change.instance };
    const last = timeline[timeline.length - 1];
    if (!last || last.state !== inst.state || last.desiredState !== inst.desiredState || last.stateReason !== inst.stateReason) {
      timeline.push({
        at: change.at, state: inst.state, desiredState: inst.desiredState, stateReason: inst.stateReason, version: inst.version,
        note: change.local ? 'as the API answered' : change.snapshot ? 'after reconnecting' : '',
      });
      if (view.timeline) renderTimeline();
    }
    refresh();
  });
  ctx.onResync(() => load(false));
  load(true);
}
