// The usage page: what the vps.usage job metered, by UTC day over a range
// of days (the last 7 by default), as a bar plot per measure and a table
// with the same numbers, and the same range as CSV. A member sees its
// tenant's; an operator sees every tenant's, a series per tenant. The
// numbers are the API's usage query's (docs/api.md, "Usage").
import { h, replace } from '../dom.js';
import { gql, fetchFile } from '../api.js';
import { loading, failure, empty, pageHead, table } from '../ui.js';
import { barPlot } from '../plot.js';
import { formKit } from './form.js';

const DAY = 86400000;
const MAX_DAYS = 366;

// MEASURES are what bills, as UsageTotal names them.
const MEASURES = [
  { key: 'vcpuHours', title: 'vCPU-hours', unit: 'vCPU-h' },
  { key: 'memoryGibHours', title: 'Memory GiB-hours', unit: 'GiB-h' },
  { key: 'diskGibHours', title: 'Disk GiB-hours', unit: 'GiB-h' },
  { key: 'gpuHours', title: 'GPU-hours', unit: 'GPU-h' },
];

const QUERY = `query Usage($from: DateTime!, $to: DateTime!, $groupBy: [UsageGroup!]) {
  usage(from: $from, to: $to, groupBy: $groupBy) { tenantId day vcpuHours memoryGibHours diskGibHours gpuHours } }`;
const TENANTS = `query UsageTenants { tenants { id name } }`;

const iso = (ms) => new Date(ms).toISOString().slice(0, 10);
const dayMs = (s) => (/^\d{4}-\d{2}-\d{2}$/.test(s || '') ? Date.parse(`${s}T00:00:00Z`) : NaN);

// fmt shows hours: two decimals, or two significant digits below 0.01.
function fmt(v) {
  if (!v) return '0';
  return v < 0.01 ? v.toPrecision(2) : v.toFixed(2);
}

// range reads ?from=&to= (UTC days, both included); the last 7 days
// including today by default.
function range(query) {
  const today = Math.floor(Date.now() / DAY) * DAY;
  return { from: query.get('from') || iso(today - 6 * DAY), to: query.get('to') || iso(today) };
}

// check says what is wrong with a range, as [field, message] pairs.
function check(from, to) {
  const f = dayMs(from);
  const t = dayMs(to);
  const errs = [];
  if (isNaN(f)) errs.push(['from', 'is not a day']);
  if (isNaN(t)) errs.push(['to', 'is not a day']);
  if (!errs.length && t < f) errs.push(['to', 'is before the first day']);
  if (!errs.length && (t - f) / DAY + 1 > MAX_DAYS) errs.push(['to', `is more than ${MAX_DAYS} days after the first day`]);
  return errs;
}

export function usagePage(ctx) {
  const operator = ctx.session.operator;
  ctx.setTitle('Usage');
  const { from, to } = range(ctx.query);
  const kit = formKit('usage', 'shown');
  const fromIn = h('input', { type: 'date', name: 'from', value: from, required: true });
  const toIn = h('input', { type: 'date', name: 'to', value: to, required: true });
  const form = h('form', { class: 'form form-inline', id: 'usage-range', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    kit.clearErrors();
    const errs = check(fromIn.value, toIn.value);
    if (errs.length) kit.showErrors(errs);
    else ctx.go(`#/usage?from=${fromIn.value}&to=${toIn.value}`);
  } },
  kit.summary,
  kit.field('from', 'From (UTC day)', fromIn),
  kit.field('to', 'To (UTC day, included)', toIn),
  h('div', { class: 'actions' },
    h('button', { type: 'submit', class: 'btn', id: 'usage-show' }, 'Show'),
    h('button', { type: 'button', class: 'btn', id: 'usage-csv', onclick: () => download() }, 'Download CSV')));
  const status = h('p', { class: 'hint', role: 'status', id: 'usage-status' });
  const body = h('div', { id: 'usage-body' }, loading('usage'));
  replace(ctx.main,
    pageHead('Usage'),
    h('p', { class: 'summary' }, operator
      ? 'Every tenant\'s metered usage by UTC day, a color per tenant. '
      : 'Your tenant\'s metered usage by UTC day. ',
    'vCPU-hours bill RUNNING; memory and GPU-hours RUNNING and PAUSED; disk GiB-hours RUNNING, PAUSED and STOPPED.'),
    form, status, body);

  const errs = check(from, to);
  const vars = () => ({
    from: new Date(dayMs(from)).toISOString(),
    to: new Date(dayMs(to) + DAY).toISOString(),
    groupBy: operator ? ['TENANT', 'DAY'] : ['DAY'],
  });
  if (errs.length) {
    kit.showErrors(errs);
    replace(body);
    return;
  }
  body.dataset.from = vars().from;
  body.dataset.to = vars().to;

  async function download() {
    const v = vars();
    const qs = new URLSearchParams({ from: v.from, to: v.to, groupBy: v.groupBy.join(',') });
    replace(status, 'Downloading…');
    try {
      const blob = await fetchFile(`/usage.csv?${qs}`, { signal: ctx.signal });
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: `usage-${from}-${to}.csv`, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      replace(status, `Downloaded usage-${from}-${to}.csv.`);
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(status, `Could not download the CSV: ${err.message}`);
    }
  }

  async function load() {
    try {
      const [data, names] = await Promise.all([
        gql(QUERY, vars(), { signal: ctx.signal }),
        operator ? gql(TENANTS, {}, { signal: ctx.signal }) : null,
      ]);
      replace(body, render(data.usage, names?.tenants));
      ctx.markUsable('usage-body');
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err.field === 'to' || err.field === 'from') {
        kit.showApiError(err, (ext, msg) => [ext.field, msg]);
        replace(body);
      } else replace(body, failure('usage', err, () => { replace(body, loading('usage')); load(); }));
    }
  }

  function render(totals, tenants) {
    const days = [];
    for (let d = dayMs(from); d <= dayMs(to); d += DAY) days.push(iso(d));
    const name = new Map((tenants || []).map((t) => [t.id, t.name]));
    const key = (t) => (operator ? t.tenantId : 'own');
    const series = [...new Set(totals.map(key))]
      .map((k) => ({ key: k, label: operator ? name.get(k) || k : ctx.session.viewer.tenant?.name || 'your tenant' }))
      .sort((a, b) => a.label.localeCompare(b.label));
    if (!totals.length) return empty('No usage in these days.', h('p', null, 'Usage is metered every few minutes for each instance that exists.'));
    const plots = MEASURES.map((m) => {
      const values = {};
      for (const t of totals) {
        const d = t.day.slice(0, 10);
        values[d] = values[d] || {};
        values[d][key(t)] = (values[d][key(t)] || 0) + t[m.key];
      }
      return barPlot(days, series, values, { id: `plot-${m.key}`, title: m.title, unit: m.unit, fmt, by: 'tenants' });
    });
    const rows = [...totals].sort((a, b) => a.day.localeCompare(b.day) || (name.get(a.tenantId) || '').localeCompare(name.get(b.tenantId) || ''));
    const num = (m) => ({ label: m.title, class: 'num', cell: (t) => h('span', { dataset: { measure: m.key, value: String(t[m.key]) }, title: String(t[m.key]) }, fmt(t[m.key])) });
    return [
      h('div', { class: 'plots plots-grid' }, plots),
      table([
        { label: 'Day (UTC)', cell: (t) => t.day.slice(0, 10) },
        operator && { label: 'Tenant', cell: (t) => name.get(t.tenantId) || t.tenantId },
        ...MEASURES.map(num),
      ].filter(Boolean), rows, {
        caption: 'Usage by day', rowProps: (t) => ({ dataset: { day: t.day.slice(0, 10), tenant: t.tenantId || '' } }),
      }),
    ];
  }

  load();
}
