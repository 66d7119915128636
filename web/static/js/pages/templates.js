// Sandbox templates: what each makes (pool, flavor, image, keys, env
// names, network policy, timeouts) and its warm pool's fill, from each
// template's metrics, read again on every sandbox step (a claim) and every
// REFRESH while the page is open (a pool refilling or rolling over).
import { h, replace, plural, mib, time } from '../dom.js';
import { gql } from '../api.js';
import { loading, failure, empty, pageHead, tag, bar } from '../ui.js';
import { seconds } from '../sandboxes.js';

const REFRESH = 5000;

const QUERY = `query Templates { sandboxTemplates(first: 100) { totalCount nodes {
  id name public tenant { id name } pool { name } flavor { name vcpus memoryMb } image { name } sshKeys { type fingerprint comment }
  envNames network { allowInternetAccess allowOut denyOut } defaultTimeout maxTimeout warmCount instanceVersion updatedAt } } }`;

// FILL is what the warm pools' meters read.
const FILL = `query WarmFill { sandboxTemplates(first: 100) { nodes {
  id name tenant { id } metrics { warmTarget warmFree warmReady } } } }`;

export function templatesPage(ctx) {
  const { main, session } = ctx;
  ctx.setTitle('Templates');
  const note = h('p', { class: 'summary', 'aria-live': 'polite' });
  const fill = h('div', { id: 'warm-fill' });
  const body = h('div', { id: 'templates-body' }, loading('templates'));
  replace(main, pageHead('Templates', h('a', { class: 'btn btn-primary', href: '#/sandboxes/new', id: 'new-sandbox' }, 'New sandbox')), note, fill, body);

  let timer = 0;
  let again = 0;

  async function load() {
    try {
      const data = await gql(QUERY, {}, { signal: ctx.signal });
      render(data.sandboxTemplates);
      ctx.markUsable('templates');
      refreshFill();
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(body, failure('templates', err, () => { replace(body, loading('templates')); load(); }));
    }
  }

  function render(conn) {
    const list = conn.nodes;
    replace(note, list.length ? `${plural(conn.totalCount, 'template')}.` : '');
    if (!list.length) {
      replace(body, empty('No templates yet.', h('p', null, 'A template says what its sandboxes are made of. Create one with createSandboxTemplate (see docs/api.md).')));
      return;
    }
    replace(body, h('div', { class: 'cards' }, list.map((t) => card(t, session))));
  }

  // refreshFill reads the fill; one read at a time, one timer pending.
  let reading = false;
  async function refreshFill() {
    if (reading) return;
    reading = true;
    clearTimeout(timer);
    try {
      const data = await gql(FILL, {}, { signal: ctx.signal });
      renderFill(data.sandboxTemplates.nodes);
    } catch (err) {
      if (err.name === 'AbortError') return;
      // The meters keep what they showed; the next refresh tries again.
    } finally {
      reading = false;
    }
    timer = setTimeout(refreshFill, REFRESH);
  }

  // renderFill shows the warm pools a member's tenant holds (an operator:
  // all of them), one meter each.
  function renderFill(list) {
    const mine = (t) => t.tenant && (session.operator || t.tenant.id === session.viewer.tenant?.id);
    const pools = list.filter((t) => mine(t) && t.metrics.warmTarget > 0);
    if (!pools.length) {
      replace(fill);
      return;
    }
    const sum = (k) => pools.reduce((n, t) => n + t.metrics[k], 0);
    const wanted = sum('warmTarget');
    const ready = sum('warmReady');
    replace(fill, h('section', { class: 'card warm-fill', 'aria-labelledby': 'h-warm' },
      h('h2', { id: 'h-warm' }, 'Warm pools'),
      pools.map((t) => bar(t.name, t.metrics.warmReady, t.metrics.warmTarget, String, `Warm instances of ${t.name} ready to be claimed`)),
      h('p', { class: 'small muted', id: 'warm-detail' },
        `${plural(ready, 'instance')} booted and paused, ${sum('warmFree') - ready} booting, of ${wanted} wanted by ${session.operator ? 'all' : 'your'} templates together. Refreshed every ${REFRESH / 1000} s and on every claim.`)));
  }

  // A sandbox's step may be a claim: read the fill again, once for a burst.
  ctx.watchSandboxes(() => {
    clearTimeout(again);
    again = setTimeout(refreshFill, 300);
  });
  ctx.onDispose(() => { clearTimeout(timer); clearTimeout(again); });
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
