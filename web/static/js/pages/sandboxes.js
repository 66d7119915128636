// The sandboxes list: filters by template and state, paging, rows kept
// live from the sandboxEvents subscription (new sandboxes, steps, ends),
// their states refined between steps by their instances' events, and the
// time each has left counting down in the browser.
import { h, replace, time, plural } from '../dom.js';
import { loading, empty, pageHead, table, timeLeft, tickTimeLeft, SANDBOX_STATES } from '../ui.js';
import { FIELDS, live, sandboxState, stateCell, startedTag, metadataList } from '../sandboxes.js';
import { pager, hrefWith, pageSize, listLoader } from './paging.js';

const QUERY = `query Sandboxes($first: Int, $after: String, $filter: SandboxFilter) {
  sandboxes(first: $first, after: $after, filter: $filter) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { ${FIELDS} tenant { name } }
  }
  sandboxTemplates(first: 100) { nodes { id name } }
}`;

export function sandboxesPage(ctx) {
  const { main, query, session, store } = ctx;
  ctx.setTitle('Sandboxes');
  const template = query.get('template') || '';
  const state = query.get('state') || '';
  const after = query.get('after') || '';
  const size = pageSize(query);
  const base = '#/sandboxes';
  const newHref = template ? `#/sandboxes/new?template=${encodeURIComponent(template)}` : '#/sandboxes/new';

  const templateSelect = h('select', { id: 'filter-template', name: 'template' }, h('option', { value: '' }, 'All templates'));
  const stateSelect = h('select', { id: 'filter-state', name: 'state' }, h('option', { value: '' }, 'All states'),
    SANDBOX_STATES.map((s) => h('option', { value: s, selected: s === state }, s)));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter sandboxes' },
    h('div', { class: 'field-inline' }, h('label', { for: 'filter-template' }, 'Template'), templateSelect),
    h('div', { class: 'field-inline' }, h('label', { for: 'filter-state' }, 'State'), stateSelect));
  const onFilter = () => ctx.go(hrefWith(base, query, { template: templateSelect.value, state: stateSelect.value, after: '' }));
  templateSelect.addEventListener('change', onFilter);
  stateSelect.addEventListener('change', onFilter);
  filters.addEventListener('submit', (e) => { e.preventDefault(); onFilter(); });

  const summary = h('p', { class: 'summary', 'aria-live': 'polite' });
  const body = h('div', { id: 'sandboxes-body' }, loading('sandboxes'));
  replace(main,
    pageHead('Sandboxes', h('a', { class: 'btn btn-primary', href: newHref, id: 'new-sandbox' }, 'New sandbox')),
    filters, summary, body);
  ctx.onDispose(tickTimeLeft(body));

  let rows = new Map(); // instance id -> {tr, sbx}

  const filter = {};
  if (template) filter.templateId = template;
  if (state) filter.state = state;

  const { load, schedule } = listLoader(ctx, {
    name: 'sandboxes', query: QUERY, vars: { first: size, after: after || null, filter }, body, summary, render,
  });

  function render(data) {
    if (templateSelect.options.length === 1) {
      const templates = data.sandboxTemplates.nodes;
      for (const t of templates) templateSelect.append(h('option', { value: t.id, selected: t.id === template }, t.name));
      if (template && !templates.some((t) => t.id === template)) templateSelect.append(h('option', { value: template, selected: true }, template));
    }
    const conn = data.sandboxes;
    const filtered = template || state;
    replace(summary, conn.totalCount === 0 ? '' : `${plural(conn.totalCount, 'sandbox', 'sandboxes')}${filtered ? ' match the filter' : ''}. States and time left update live.`);
    rows = new Map();
    if (conn.nodes.length === 0) {
      replace(body, filtered || after
        ? empty('No sandboxes match this filter.', h('p', null, h('a', { href: base }, 'Show all sandboxes')))
        : empty('No sandboxes yet.', h('p', null, 'A sandbox is a short-lived machine made from a template; it is deleted when its time is up.'),
          h('p', null, h('a', { class: 'btn btn-primary', href: newHref }, 'Create a sandbox'), ' ', h('a', { class: 'btn', href: '#/templates' }, 'See the templates'))));
      return;
    }
    const nodes = conn.nodes.map((n) => live(n, store));
    const cols = [
      { label: 'Sandbox', cell: (s) => h('a', { href: `#/sandboxes/${encodeURIComponent(s.id)}`, class: 'strong mono' }, s.id) },
      { label: 'Template', cell: (s) => s.template.name },
      { label: 'State', cell: (s) => stateCell(s) },
      { label: 'Time left', cell: (s) => timeLeft(s.expiresAt, s.endedAt) },
      { label: 'Started', cell: (s) => startedTag(s.startedFrom) },
      { label: 'Metadata', cell: (s) => metadataList(s.metadata) },
      session.operator && { label: 'Tenant', cell: (s) => s.tenant.name },
      { label: 'Created', cell: (s) => time(s.createdAt) },
    ].filter(Boolean);
    const t = table(cols, nodes, {
      caption: 'Sandboxes',
      rowProps: (s) => ({ dataset: { id: s.id, state: s.state } }),
    });
    t.querySelector('table').id = 'sandboxes-table';
    for (const tr of t.querySelectorAll('tbody tr')) {
      const sbx = nodes.find((n) => n.id === tr.dataset.id);
      rows.set(sbx.instance.id, { tr, sbx });
    }
    replace(body, t, pager({ base, query, pageInfo: conn.pageInfo, go: ctx.go, label: 'Sandbox pages' }));
  }

  // show puts sbx, newer than what its row showed, in its row.
  function show(row, sbx) {
    row.sbx = sbx;
    row.tr.dataset.state = sbx.state;
    replace(row.tr.children[2], stateCell(sbx));
    replace(row.tr.children[3], timeLeft(sbx.expiresAt, sbx.endedAt));
    if (state && sbx.state !== state) schedule(); // it left the filter
  }

  ctx.watchSandboxes((ev) => {
    const row = [...rows.values()].find((r) => r.sbx.id === ev.sandbox.id);
    if (row) {
      if (ev.sandbox.version >= row.sbx.version) show(row, live(ev.sandbox, store));
    } else if (!after && !ev.snapshot && ev.type === 'CREATED') {
      schedule(); // a new sandbox on the first page, perhaps
    }
  });
  ctx.watch((change) => {
    const inst = change.instance;
    const row = rows.get(inst.id);
    if (!row) return;
    const sbx = { ...row.sbx, instance: { ...row.sbx.instance, ...inst } };
    sbx.state = sandboxState(sbx, sbx.instance);
    show(row, sbx);
    // How it ended (deleted or expired) and when: the server says.
    if (sbx.state === 'DELETED' && !sbx.endedAt) schedule();
  });
  load(false);
}
