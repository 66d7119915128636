// The instances list: filters by pool and state, paging, and state badges
// kept live by the instanceEvents subscription.
import { h, replace, time, plural } from '../dom.js';
import { badge, loading, empty, pageHead, table, STATES } from '../ui.js';
import { pager, hrefWith, pageSize, listLoader } from './paging.js';

const QUERY = `query Instances($first: Int, $after: String, $filter: InstanceFilter) {
  instances(first: $first, after: $after, filter: $filter) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { id name state desiredState stateReason addresses version createdAt updatedAt pool { id name } flavor { name } tenant { name } }
  }
  pools { id name }
}`;

export function instancesPage(ctx) {
  const { main, query, session, store } = ctx;
  ctx.setTitle('Instances');
  const pool = query.get('pool') || '';
  const state = query.get('state') || '';
  const after = query.get('after') || '';
  const size = pageSize(query);
  const base = '#/instances';

  const poolSelect = h('select', { id: 'filter-pool', name: 'pool' }, h('option', { value: '' }, 'All pools'));
  const stateSelect = h('select', { id: 'filter-state', name: 'state' }, h('option', { value: '' }, 'All states'),
    STATES.map((s) => h('option', { value: s, selected: s === state }, s)));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter instances' },
    h('div', { class: 'field-inline' }, h('label', { for: 'filter-pool' }, 'Pool'), poolSelect),
    h('div', { class: 'field-inline' }, h('label', { for: 'filter-state' }, 'State'), stateSelect));
  const onFilter = () => ctx.go(hrefWith(base, query, { pool: poolSelect.value, state: stateSelect.value, after: '' }));
  poolSelect.addEventListener('change', onFilter);
  stateSelect.addEventListener('change', onFilter);
  filters.addEventListener('submit', (e) => { e.preventDefault(); onFilter(); });

  const summary = h('p', { class: 'summary', 'aria-live': 'polite' });
  const body = h('div', { id: 'instances-body' }, loading('instances'));
  replace(main,
    pageHead('Instances', h('a', { class: 'btn btn-primary', href: '#/instances/new', id: 'new-instance' }, 'New instance')),
    filters, summary, body);

  let rows = new Map(); // id -> {tr, inst}

  const filter = {};
  if (pool) filter.poolId = pool;
  if (state) filter.state = state;
  if (state !== 'DELETED') filter.excludeDeleted = true; // a deleted one shows until the next read

  const { load, schedule } = listLoader(ctx, {
    name: 'instances', query: QUERY, vars: { first: size, after: after || null, filter }, body, summary, render,
  });

  function render(data) {
    // The pool filter's options.
    if (poolSelect.options.length === 1) {
      for (const p of data.pools) poolSelect.append(h('option', { value: p.id, selected: p.id === pool }, p.name));
      if (pool && !data.pools.some((p) => p.id === pool)) poolSelect.append(h('option', { value: pool, selected: true }, pool));
    }
    const conn = data.instances;
    const filtered = pool || state;
    replace(summary, conn.totalCount === 0 ? '' : `${plural(conn.totalCount, 'instance')}${filtered ? ' match the filter' : ''}. States update live.`);
    rows = new Map();
    if (conn.nodes.length === 0) {
      replace(body, filtered || after
        ? empty('No instances match this filter.', h('p', null, h('a', { href: base }, 'Show all instances')))
        : empty('No instances yet.', h('p', null, 'An instance is a virtual machine in one of your pools.'),
          h('p', null, h('a', { class: 'btn btn-primary', href: '#/instances/new' }, 'Create your first instance'))));
      return;
    }
    for (const n of conn.nodes) store.merge(n);
    const cols = [
      { label: 'Name', cell: (i) => h('a', { href: `#/instances/${encodeURIComponent(i.id)}`, class: 'strong' }, i.name) },
      { label: 'State', cell: (i) => stateCell(i) },
      { label: 'Pool', cell: (i) => i.pool.name },
      { label: 'Flavor', cell: (i) => i.flavor.name },
      { label: 'Addresses', cell: (i) => addrCell(i) },
      session.operator && { label: 'Tenant', cell: (i) => i.tenant.name },
      { label: 'Created', cell: (i) => time(i.createdAt) },
    ].filter(Boolean);
    const nodes = conn.nodes.map((n) => store.latest(n));
    const t = table(cols, nodes, {
      caption: 'Instances',
      rowProps: (i) => ({ dataset: { id: i.id, state: i.state } }),
    });
    t.querySelector('table').id = 'instances-table';
    for (const tr of t.querySelectorAll('tbody tr')) {
      const inst = nodes.find((n) => n.id === tr.dataset.id);
      rows.set(inst.id, { tr, inst });
    }
    replace(body, t, pager({ base, query, pageInfo: conn.pageInfo, go: ctx.go, label: 'Instance pages' }));
  }

  ctx.watch((change) => {
    const inst = change.instance;
    const row = rows.get(inst.id);
    if (row) {
      row.inst = { ...row.inst, ...inst };
      row.tr.dataset.state = inst.state;
      const cells = row.tr.children;
      replace(cells[1], stateCell(row.inst));
      replace(cells[4], addrCell(row.inst));
      if (state && inst.state !== state) schedule(); // it left the filter
    } else if (!after && !change.local && !change.snapshot && (!state || inst.state === state) && inst.state !== 'DELETED') {
      schedule(); // perhaps a new one on the first page
    }
  });
  load(false);
}

function stateCell(i) {
  return h('span', { class: 'state-cell' },
    badge(i.state, { title: i.stateReason || null }),
    i.desiredState !== i.state && i.state !== 'DELETED' && h('span', { class: 'desired' }, `→ ${i.desiredState}`));
}

function addrCell(i) {
  return i.addresses?.length ? h('span', { class: 'mono' }, i.addresses.join(', ')) : h('span', { class: 'muted' }, '—');
}
