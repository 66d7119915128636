// The audit log: the tenant's for a member, everyone's for an operator
// (who may narrow it to one tenant).
import { h, replace, time, plural } from '../dom.js';
import { gql } from '../api.js';
import { loading, failure, empty, pageHead, table, tag } from '../ui.js';
import { pager, hrefWith, pageSize } from './paging.js';

const QUERY = `query Audit($first: Int, $after: String, $filter: AuditEventFilter, $operator: Boolean!) {
  auditEvents(first: $first, after: $after, filter: $filter) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { id at principalId principalName tenantId action targetType targetId requestId outcome errorCode details }
  }
  tenants @include(if: $operator) { id name }
}`;

export function auditPage(ctx) {
  const { main, query, session } = ctx;
  ctx.setTitle('Audit log');
  const base = '#/audit';
  const outcome = query.get('outcome') || '';
  const tenant = query.get('tenant') || '';
  const action = query.get('action') || '';
  const after = query.get('after') || '';
  const size = pageSize(query, 50);

  const outcomeSel = h('select', { id: 'filter-outcome' },
    h('option', { value: '' }, 'Any outcome'),
    ['SUCCESS', 'FAILURE'].map((o) => h('option', { value: o, selected: o === outcome }, o.toLowerCase())));
  const actionInput = h('input', { id: 'filter-action', type: 'text', value: action, placeholder: 'e.g. instance.create', spellcheck: 'false' });
  const tenantSel = session.operator ? h('select', { id: 'filter-tenant' }, h('option', { value: '' }, 'All tenants')) : null;
  const apply = () => ctx.go(hrefWith(base, query, { outcome: outcomeSel.value, action: actionInput.value.trim(), tenant: tenantSel?.value || '', after: '' }));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter the audit log', onsubmit: (e) => { e.preventDefault(); apply(); } },
    h('div', { class: 'field-inline' }, h('label', { for: 'filter-outcome' }, 'Outcome'), outcomeSel),
    h('div', { class: 'field-inline' }, h('label', { for: 'filter-action' }, 'Action'), actionInput),
    tenantSel && h('div', { class: 'field-inline' }, h('label', { for: 'filter-tenant' }, 'Tenant'), tenantSel),
    h('button', { type: 'submit', class: 'btn' }, 'Apply'));
  outcomeSel.addEventListener('change', apply);
  tenantSel?.addEventListener('change', apply);

  const summary = h('p', { class: 'summary' });
  const body = h('div', { id: 'audit-body' }, loading('the audit log'));
  replace(main, pageHead(session.operator ? 'Audit log (all tenants)' : 'Audit log'), filters, summary, body);

  const filter = {};
  if (outcome) filter.outcome = outcome;
  if (tenant) filter.tenantId = tenant;
  if (action) filter.action = action;

  async function load() {
    try {
      const data = await gql(QUERY, { first: size, after: after || null, filter, operator: session.operator }, { signal: ctx.signal });
      render(data);
      ctx.markUsable('audit');
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(body, failure('the audit log', err, () => { replace(body, loading('the audit log')); load(); }));
    }
  }

  function render(data) {
    const tenants = new Map((data.tenants || []).map((t) => [t.id, t.name]));
    if (tenantSel && tenantSel.options.length === 1) {
      for (const t of data.tenants) tenantSel.append(h('option', { value: t.id, selected: t.id === tenant }, t.name));
    }
    const conn = data.auditEvents;
    replace(summary, conn.totalCount ? `${plural(conn.totalCount, 'event')}, newest first.` : '');
    if (!conn.nodes.length) {
      replace(body, empty(outcome || tenant || action || after ? 'No audit events match this filter.' : 'No audit events yet.',
        h('p', null, 'Every request that changes something is recorded here, whether it succeeded or not.')));
      return;
    }
    const cols = [
      { label: 'Time', cell: (e) => time(e.at), class: 'nowrap' },
      { label: 'Action', cell: (e) => h('span', { class: 'mono' }, e.action) },
      { label: 'Outcome', cell: (e) => e.outcome === 'SUCCESS' ? tag('success', 'ok') : [tag('failure', 'bad'), e.errorCode && h('span', { class: 'mono small' }, ` ${e.errorCode}`)] },
      { label: 'Target', cell: (e) => target(e) },
      session.operator && { label: 'Tenant', cell: (e) => e.tenantId ? (tenants.get(e.tenantId) || h('span', { class: 'mono small' }, e.tenantId)) : h('span', { class: 'muted' }, '—') },
      { label: 'By', cell: (e) => e.principalName ? h('span', { title: e.principalId }, e.principalName) : h('span', { class: 'muted' }, 'the system') },
      { label: 'Request', cell: (e) => short(e.requestId) },
      { label: 'Details', cell: (e) => details(e.details) },
    ].filter(Boolean);
    const t = table(cols, conn.nodes, { caption: 'Audit events' });
    t.querySelector('table').id = 'audit-table';
    replace(body, t, pager({ base, query, pageInfo: conn.pageInfo, go: ctx.go, label: 'Audit log pages' }));
  }

  load();
}

// short shows the start of a long ID; all of it is in the title, and
// selecting the text copies all of it.
function short(id) {
  return h('span', { class: 'mono small short', title: id }, id);
}

function target(e) {
  if (!e.targetId) return h('span', { class: 'muted' }, e.targetType || '—');
  const id = h('span', { class: 'mono small' }, e.targetId);
  if (e.targetId.startsWith('ins_')) return h('a', { href: `#/instances/${encodeURIComponent(e.targetId)}` }, id);
  return [e.targetType, ' ', id];
}

function details(d) {
  if (!d || !Object.keys(d).length) return h('span', { class: 'muted' }, '—');
  return h('details', null, h('summary', null, 'Show'), h('pre', { class: 'mono small' }, JSON.stringify(d, null, 2)));
}
