// Sandbox templates: what each makes (pool, flavor, image, keys, env
// names, network policy, timeouts) and its warm pool. The API does not yet
// say which template a warm instance belongs to, so the pools' fill is
// shown for all the templates together, kept live from the warm
// instances' events (isFreeWarm).
import { h, replace, plural, mib, time } from '../dom.js';
import { gql } from '../api.js';
import { loading, failure, empty, pageHead, tag, bar } from '../ui.js';
import { isFreeWarm, seconds } from '../sandboxes.js';

const QUERY = `query Templates { sandboxTemplates(first: 100) { totalCount nodes {
  id name public tenant { id name } pool { name } flavor { name vcpus memoryMb } image { name } sshKeys { type fingerprint comment }
  envNames network { allowInternetAccess allowOut denyOut } defaultTimeout maxTimeout warmCount instanceVersion updatedAt } }
  sandboxes(first: 100) { nodes { instance { id } } } }`;

export function templatesPage(ctx) {
  const { main, store, session } = ctx;
  ctx.setTitle('Templates');
  const note = h('p', { class: 'summary', 'aria-live': 'polite' });
  const fill = h('div', { id: 'warm-fill' });
  const body = h('div', { id: 'templates-body' }, loading('templates'));
  replace(main, pageHead('Templates', h('a', { class: 'btn btn-primary', href: '#/sandboxes/new', id: 'new-sandbox' }, 'New sandbox')), note, fill, body);

  let wanted = 0;
  // Instances that run sandboxes: a claimed warm instance keeps its name,
  // and a paused sandbox's is asked to pause like a free warm one.
  const claimed = new Set();

  async function load() {
    try {
      const data = await gql(QUERY, {}, { signal: ctx.signal });
      for (const s of data.sandboxes.nodes) claimed.add(s.instance.id);
      render(data.sandboxTemplates);
      ctx.markUsable('templates');
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(body, failure('templates', err, () => { replace(body, loading('templates')); load(); }));
    }
  }

  function render(conn) {
    const list = conn.nodes;
    replace(note, list.length ? `${plural(conn.totalCount, 'template')}.` : '');
    // The warm pools a member's tenant holds (an operator: all of them).
    const mine = (t) => t.tenant && (session.operator || t.tenant.id === session.viewer.tenant?.id);
    wanted = list.filter(mine).reduce((n, t) => n + t.warmCount, 0);
    renderFill();
    if (!list.length) {
      replace(body, empty('No templates yet.', h('p', null, 'A template says what its sandboxes are made of. Create one with createSandboxTemplate (see docs/api.md).')));
      return;
    }
    replace(body, h('div', { class: 'cards' }, list.map((t) => card(t, session))));
  }

  function renderFill() {
    if (!wanted) {
      replace(fill);
      return;
    }
    const warm = store.values().filter((i) => isFreeWarm(i) && !claimed.has(i.id));
    const ready = warm.filter((i) => i.state === 'PAUSED').length;
    replace(fill, h('section', { class: 'card warm-fill', 'aria-labelledby': 'h-warm' },
      h('h2', { id: 'h-warm' }, 'Warm pools'),
      bar('Ready', ready, wanted, String, 'Warm instances ready to be claimed'),
      h('p', { class: 'small muted', id: 'warm-detail' },
        `${plural(ready, 'instance')} booted and paused, ${warm.length - ready} booting, of ${wanted} wanted by ${session.operator ? 'all' : 'your'} templates together. Live.`)));
  }

  ctx.watch((change) => {
    if (change.instance.desiredState === 'RUNNING' && change.instance.name?.startsWith('warm-')) claimed.add(change.instance.id);
    if (wanted && (change.instance.name || '').startsWith('warm-')) renderFill();
  });
  ctx.onResync(load);
  load();
}

function card(t, session) {
  const n = t.network;
  const egress = [
    n.allowInternetAccess ? 'internet allowed' : 'no internet',
    n.allowOut.length ? `allow ${n.allowOut.join(', ')}` : '',
    n.denyOut.length ? `deny ${n.denyOut.join(', ')}` : '',
  ].filter(Boolean).join('; ');
  const f = t.flavor;
  return h('section', { class: 'card template', 'aria-labelledby': `tpl-${t.id}`, dataset: { id: t.id } },
    h('h2', { id: `tpl-${t.id}` }, t.name, ' ', t.public ? tag('public', 'idle') : ''),
    h('dl', { class: 'facts' },
      h('dt', null, 'Machine'), h('dd', null, `${f.name} — ${f.vcpus} vCPU, ${mib(f.memoryMb)} · ${t.image?.name || 'image no longer available'} · pool ${t.pool.name}`),
      h('dt', null, 'Warm pool'), h('dd', { class: 'warm-count' }, t.warmCount ? `${plural(t.warmCount, 'instance')} kept booted and paused` : h('span', { class: 'muted' }, 'none: every sandbox boots cold')),
      h('dt', null, 'Timeout'), h('dd', null, `${seconds(t.defaultTimeout)} by default, at most ${seconds(t.maxTimeout)}`),
      h('dt', null, 'Env'), h('dd', null, t.envNames.length ? h('span', { class: 'mono small' }, t.envNames.join(', ')) : h('span', { class: 'muted' }, 'none'), t.envNames.length ? h('span', { class: 'muted small' }, ' (values sealed)') : ''),
      h('dt', null, 'Network'), h('dd', { class: 'small' }, egress),
      h('dt', null, 'SSH keys'), h('dd', null, t.sshKeys.length ? plural(t.sshKeys.length, 'key') : h('span', { class: 'muted' }, 'none')),
      session.operator && [h('dt', null, 'Tenant'), h('dd', null, t.tenant?.name || h('span', { class: 'muted' }, 'none (public)'))],
      h('dt', null, 'Version'), h('dd', null, `instance version ${t.instanceVersion}, changed `, time(t.updatedAt, true))),
    h('div', { class: 'actions' },
      h('a', { class: 'btn btn-primary', href: `#/sandboxes/new?template=${encodeURIComponent(t.id)}`, id: `new-from-${t.id}` }, 'New sandbox'),
      h('a', { class: 'btn', href: `#/sandboxes?template=${encodeURIComponent(t.id)}` }, 'Its sandboxes')));
}
