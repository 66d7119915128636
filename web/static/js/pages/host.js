// One host, for operators: what it is, the instances it holds, and what
// they actually used of it over the last hour (Host.usage), refreshed
// every REFRESH while the page is open.
import { h, replace, time, mib, plural } from '../dom.js';
import { gql, ApiError } from '../api.js';
import { loading, failure, empty, pageHead, table, bar, tag, badge } from '../ui.js';
import { linePlot } from '../plot.js';

const REFRESH = 10000;

const QUERY = `query Host($id: ID!) { node(id: $id) { ... on Host {
  id name pool { name } alive draining lastSeenAt runtime capacity { vcpus memoryMb diskGb } allocated { instances vcpus memoryMb diskGb }
  usage { at vcpusUsed memoryMb instances }
  instances { id name state tenant { name } flavor { name vcpus memoryMb } addresses } } } }`;

export function hostPage(ctx) {
  const id = ctx.params[0];
  ctx.setTitle('Host');
  replace(ctx.main, pageHead('Host'), loading('the host'));
  const body = h('div', { id: 'host-body' });
  const status = h('p', { class: 'summary', role: 'status' });
  let built = false;
  let timer = 0;

  async function load() {
    clearTimeout(timer);
    try {
      const { node: host } = await gql(QUERY, { id }, { signal: ctx.signal });
      if (!host) throw new ApiError([{ message: 'host not found', extensions: { code: 'NOT_FOUND' } }], 200);
      if (!built) {
        ctx.setTitle(host.name);
        replace(ctx.main, pageHead(host.name), status, body);
        built = true;
      }
      replace(body, render(host));
      replace(status, `Refreshed every ${REFRESH / 1000} s.`);
      ctx.markUsable('host');
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (err instanceof ApiError && err.code === 'NOT_FOUND') {
        replace(ctx.main, pageHead('Host not found'), empty('There is no host with this ID.', h('p', null, h('a', { href: '#/ops/hosts' }, 'Back to hosts'))));
        return;
      }
      if (!built) replace(ctx.main, pageHead('Host'), failure('the host', err, () => { replace(ctx.main, pageHead('Host'), loading('the host')); load(); }));
      else replace(status, `Could not refresh: ${err.message}.`);
    }
    if (!ctx.signal.aborted) timer = setTimeout(load, REFRESH);
  }

  function render(x) {
    const c = x.capacity;
    const cpu = x.usage.filter((p) => p.vcpusUsed != null).map((p) => ({ t: Date.parse(p.at), v: p.vcpusUsed }));
    const mem = x.usage.map((p) => ({ t: Date.parse(p.at), v: p.memoryMb }));
    return [
      h('section', { class: 'card', 'aria-labelledby': 'h-host' },
        h('h2', { id: 'h-host' }, 'Host ', x.alive ? tag('alive', 'ok') : tag('silent', 'bad'), x.draining ? [' ', tag('draining', 'warn')] : ''),
        h('p', { class: 'small' }, `Pool ${x.pool.name}`, x.runtime ? ` · runtime ${x.runtime}` : '', ' · last report ', x.lastSeenAt ? time(x.lastSeenAt, true) : 'never'),
        c ? h('div', { class: 'bars' },
          bar('vCPU allocated', x.allocated.vcpus, c.vcpus),
          bar('Memory allocated', x.allocated.memoryMb, c.memoryMb, mib),
          bar('Disk allocated', x.allocated.diskGb, c.diskGb, (n) => `${n} GB`)) : h('p', { class: 'muted' }, 'No capacity yet.')),
      h('section', { class: 'card', 'aria-labelledby': 'h-usage' },
        h('h2', { id: 'h-usage' }, 'Actual use, last hour'),
        h('p', { class: 'hint' }, 'What its instances used, summed, as it reports them; one point per stats interval.'),
        h('div', { class: 'plots' },
          linePlot(cpu, { id: 'plot-host-cpu', title: 'vCPUs used', unit: 'vCPU', max: c?.vcpus, fmt: (v) => v.toFixed(2), empty: 'No CPU use reported yet.' }),
          linePlot(mem, { id: 'plot-host-memory', title: 'Memory held, MiB', unit: 'MiB', max: c?.memoryMb, empty: 'No memory use reported yet.' }))),
      h('section', { class: 'card', 'aria-labelledby': 'h-instances' },
        h('h2', { id: 'h-instances' }, plural(x.instances.length, 'instance')),
        x.instances.length
          ? table([
            { label: 'Name', cell: (i) => h('a', { href: `#/instances/${encodeURIComponent(i.id)}` }, i.name) },
            { label: 'State', cell: (i) => badge(i.state) },
            { label: 'Tenant', cell: (i) => i.tenant.name },
            { label: 'Flavor', cell: (i) => `${i.flavor.name} (${i.flavor.vcpus} vCPU, ${mib(i.flavor.memoryMb)})` },
            { label: 'Addresses', cell: (i) => h('span', { class: 'mono small' }, i.addresses.join(', ') || '—') },
          ], x.instances, { caption: `Instances on ${x.name}`, rowProps: (i) => ({ dataset: { id: i.id } }) })
          : h('p', { class: 'muted' }, 'It holds no instances.')),
    ];
  }

  ctx.onDispose(() => clearTimeout(timer));
  load();
}
