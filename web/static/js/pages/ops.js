// Operator pages: pools, hosts, doctor, flavors, images and tenants.
import { h, replace, time, mib, plural, fmtTime } from '../dom.js';
import { gql, describe } from '../api.js';
import { loading, failure, empty, pageHead, table, bar, tag, confirm, showOnce } from '../ui.js';
import { adminForm, optional } from './admin.js';

// choices are a select's options: none (the optional "—" choice) then the
// items by name.
export const choices = (items, none) => [...(none ? [['', none]] : []), ...items.map((x) => [x.id, x.name])];

// listPage loads query and renders it into the page, with loading, error
// and empty states; with every, it reloads on that interval (ms) while the
// page is shown and the tab is visible. render gets a reload function for
// its actions and a status line (said) they report in, which reloads leave
// alone; tools(reload, data), when given, makes the forms shown above
// the list, once the first load has their choices (data).
export function listPage(ctx, { title, what, query, render, every, id, tools }) {
  ctx.setTitle(title);
  const note = h('p', { class: 'summary', 'aria-live': 'polite' });
  const said = h('p', { class: 'summary', role: 'status', id: `${id}-said` });
  const top = h('div', { class: 'tools' });
  const body = h('div', { id }, loading(what));
  replace(ctx.main, pageHead(title), note, said, top, body);
  let loaded = false;
  let timer = 0;
  async function load() {
    clearTimeout(timer);
    try {
      const data = await gql(query, {}, { signal: ctx.signal });
      const out = render(data, note, load, said);
      replace(body, out);
      if (tools && !loaded) replace(top, tools(load, data));
      loaded = true;
      ctx.markUsable(id);
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (!loaded) replace(body, failure(what, err, () => { replace(body, loading(what)); load(); }));
      else replace(note, `Could not refresh: ${err.message}. Showing what was loaded at ${fmtTime(new Date())}.`);
    }
    if (every && !ctx.signal.aborted) timer = setTimeout(() => (document.hidden ? waitVisible() : load()), every);
  }
  function waitVisible() {
    const on = () => { document.removeEventListener('visibilitychange', on); if (!ctx.signal.aborted) load(); };
    document.addEventListener('visibilitychange', on);
    ctx.onDispose(() => document.removeEventListener('visibilitychange', on));
  }
  ctx.onDispose(() => clearTimeout(timer));
  load();
}

const none = (text = '—') => h('span', { class: 'muted' }, text);
const map = (m) => (m && Object.keys(m).length ? h('span', { class: 'mono small' }, Object.entries(m).map(([k, v]) => `${k}: ${v}`).join(', ')) : none());

export function poolsPage(ctx) {
  listPage(ctx, {
    title: 'Pools', what: 'pools', id: 'pools-body',
    query: `query Pools { pools { id name class runtime placement singleTenant requireVerifiedImage requireCertifiedHosts tenant { name }
      providerAccount { name provider } ipPools { id cidr gateway rangeStart rangeEnd size leased } createdAt }
      tenants { id name } providerAccounts { id name } }`,
    tools: (reload, { tenants, providerAccounts }) => adminForm({
      prefix: 'new-pool', what: 'pool', label: 'New pool', submit: 'Create pool',
      specs: [
        { key: 'name', label: 'Name', required: true },
        { key: 'class', label: 'Class', type: 'select', options: [['vps-host', 'vps-host: our hypervisor hosts'], ['provider', 'provider: a cloud account']], value: 'vps-host' },
        { key: 'runtime', label: 'Runtime (vps-host)', hint: 'What its hosts run, one of BC_RUNTIMES (libvirt-kvm, fake); empty: the first.' },
        { key: 'providerAccountId', label: 'Provider account (provider)', type: 'select', options: choices(providerAccounts, '—') },
        { key: 'tenantId', label: 'Dedicated to tenant', type: 'select', options: choices(tenants, 'all tenants') },
      ],
      run: (v) => gql(`mutation NewPool($in: CreatePoolInput!) { createPool(input: $in) { pool { id name } } }`, { in: optional(v) }),
      done: ({ createPool: { pool } }) => { reload(); return `Created pool ${pool.name}.`; },
    }),
    render: ({ pools }, note, reload, said) => {
      replace(note, pools.length ? plural(pools.length, 'pool') : '');
      if (!pools.length) return empty('No pools yet.', h('p', null, 'Create one with createPool; hosts and IP ranges join it.'));
      return h('div', { class: 'cards' }, pools.map((p) => h('section', { class: 'card', 'aria-labelledby': `pool-${p.id}`, dataset: { id: p.id } },
        h('h2', { id: `pool-${p.id}` }, p.name, ' ', tag(p.class, 'idle')),
        h('dl', { class: 'facts' },
          p.runtime && [h('dt', null, 'Runtime'), h('dd', { class: 'mono' }, p.runtime)],
          h('dt', null, 'Placement'), h('dd', null, p.placement.toLowerCase(), p.singleTenant ? ', single tenant' : ''),
          h('dt', null, 'Dedicated to'), h('dd', null, p.tenant?.name || none('all tenants')),
          h('dt', null, 'Images'), h('dd', null, p.requireVerifiedImage ? 'verified only' : 'any'),
          p.class === 'vps-host' && [h('dt', null, 'Hosts'), h('dd', { class: 'pool-certified' }, p.requireCertifiedHosts ? 'certified only' : 'any')],
          p.providerAccount && [h('dt', null, 'Provider'), h('dd', null, `${p.providerAccount.name} (${p.providerAccount.provider.toLowerCase()})`)],
          h('dt', null, 'Created'), h('dd', null, time(p.createdAt))),
        h('h3', null, 'IP addresses'),
        p.ipPools.length
          ? p.ipPools.map((ip) => h('div', { class: 'ip-pool' },
            h('p', { class: 'mono small' }, `${ip.cidr} · ${ip.rangeStart}–${ip.rangeEnd} · gateway ${ip.gateway}`),
            bar('Leased', ip.leased, ip.size, String, `Addresses leased in ${ip.cidr}`)))
          : h('p', { class: 'muted' }, p.class === 'provider' ? 'The provider assigns addresses.' : 'No IP ranges: instances get no address.'),
        p.class === 'vps-host' ? adminForm({
          prefix: `ip-${p.id}`, what: 'IP range', label: 'Add an IP range', submit: 'Add IP range',
          specs: [
            { key: 'cidr', label: 'Network (CIDR)', required: true, hint: 'Such as 10.20.0.0/24.' },
            { key: 'gateway', label: 'Gateway', required: true },
            { key: 'rangeStart', label: 'First address leased', required: true },
            { key: 'rangeEnd', label: 'Last address leased', required: true },
          ],
          run: (v) => gql(`mutation NewIpPool($in: CreateIpPoolInput!) { createIpPool(input: $in) { pool { id } } }`, { in: { ...v, poolId: p.id } }),
          done: () => { replace(said, `Added an IP range to ${p.name}.`); reload(); },
        }) : null)));
    },
  });
}

export function hostsPage(ctx) {
  listPage(ctx, {
    title: 'Hosts', what: 'hosts', id: 'hosts-body', every: 5000,
    query: `query Hosts { hosts { id name pool { name } capacity { vcpus memoryMb diskGb } gpus { address vendor model healthy unhealthySince healthReason lastXid lastXidAt }
      allocated { instances vcpus memoryMb diskGb gpus } draining lastSeenAt alive specGeneration reportedGeneration protocolVersion runtime
      certified certValidBefore bearerCredential } pools { id name class } }`,
    tools: (reload, { pools }) => adminForm({
      prefix: 'new-host', what: 'host', verb: 'adopted', label: 'Adopt a host', submit: 'Adopt host',
      specs: [
        { key: 'poolId', label: 'Pool', type: 'select', options: choices(pools.filter((p) => p.class === 'vps-host')) },
        { key: 'name', label: 'Name', required: true },
        { key: 'bearerCredential', label: 'Give it a bearer credential too (for a gateway without a TLS listener)', type: 'checkbox' },
      ],
      run: (v) => gql(`mutation AdoptHost($in: CreateHostInput!) { createHost(input: $in) { host { id name } credential joinToken joinTokenExpiresAt joinCommand } }`,
        { in: { poolId: v.poolId, name: v.name, bearerCredential: v.bearerCredential } }),
      done: ({ createHost: p }) => {
        const values = [];
        if (p.joinCommand) values.push({ label: 'Join command (run it on the host)', value: p.joinCommand, id: 'once-command' });
        values.push({ label: 'Join token', value: p.joinToken, id: 'once-token' });
        if (p.credential) values.push({ label: 'Bearer credential (BC_HOST_CREDENTIAL)', value: p.credential, id: 'once-credential' });
        const shown = showOnce({ title: `Host ${p.host.name} adopted`, values,
          body: `Shown once. The join token works once, until ${fmtTime(p.joinTokenExpiresAt)}.` });
        ctx.onDispose(shown.close);
        reload();
        return `Adopted host ${p.host.name}.`;
      },
    }),
    render: ({ hosts }, note, reload) => {
      const alive = hosts.filter((x) => x.alive).length;
      replace(note, hosts.length ? `${plural(hosts.length, 'host')}, ${alive} alive. Refreshed every 5 s; last at ${fmtTime(new Date())}.` : '');
      if (!hosts.length) return empty('No hosts yet.', h('p', null, 'Adopt one with createHost and run better-compute host on it.'));
      return h('div', { class: 'cards' }, hosts.map((x) => {
        const c = x.capacity;
        return h('section', { class: 'card host', 'aria-labelledby': `host-${x.id}`, dataset: { id: x.id, alive: String(x.alive) } },
          h('h2', { id: `host-${x.id}` }, h('a', { href: `#/ops/hosts/${encodeURIComponent(x.id)}` }, x.name), ' ',
            x.alive ? tag('alive', 'ok') : tag('silent', 'bad'),
            x.draining ? [' ', tag('draining', 'warn')] : ''),
          h('p', { class: 'small' }, `Pool ${x.pool.name} · ${plural(x.allocated.instances, 'instance')} · last report `,
            x.lastSeenAt ? time(x.lastSeenAt, true) : 'never',
            x.protocolVersion ? ` · host protocol ${x.protocolVersion}` : '',
            x.runtime ? ` · runtime ${x.runtime}` : '',
            x.reportedGeneration < x.specGeneration ? ` · converging (spec ${x.specGeneration}, reported ${x.reportedGeneration})` : ''),
          c
            ? h('div', { class: 'bars' },
              bar('vCPU', x.allocated.vcpus, c.vcpus),
              bar('Memory', x.allocated.memoryMb, c.memoryMb, mib),
              bar('Disk', x.allocated.diskGb, c.diskGb, (n) => `${n} GB`),
              x.gpus.length ? bar('GPU', x.allocated.gpus, x.gpus.length) : null)
            : h('p', { class: 'muted' }, 'No capacity set yet (setHostCapacity).'),
          certificate(x),
          x.gpus.length ? gpuList(x, note, reload) : null,
          h('div', { class: 'actions' },
            drainButton(x, note, reload),
            x.certified ? revokeButton(x, note, reload) : null,
            joinTokenButton(ctx, x, note),
            x.allocated.instances ? null : deleteHostButton(x, note, reload)));
      }));
    },
  });
}

// doctorPage shows the doctor's findings, errors first, each with what to
// do and the objects it names: what better-compute doctor prints.
export function doctorPage(ctx) {
  listPage(ctx, {
    title: 'Doctor', what: 'findings', id: 'doctor-body', every: 15000,
    query: `query Doctor { doctor { findings { code level objects message remedy } } }`,
    render: ({ doctor: { findings } }, note) => {
      const errors = findings.filter((f) => f.level === 'ERROR').length;
      replace(note, `${plural(findings.length, 'finding')}, ${plural(errors, 'error')}. Refreshed every 15 s; last at ${fmtTime(new Date())}.`);
      if (!findings.length) return empty('No findings.', h('p', null, 'Nothing needs an operator now.'));
      return h('div', { class: 'cards' }, findings.map((f, i) => h('section', {
        class: 'card finding', 'aria-labelledby': `finding-${i}`, dataset: { code: f.code, level: f.level.toLowerCase() },
      },
      h('h2', { id: `finding-${i}` }, h('span', { class: 'mono' }, f.code), ' ', f.level === 'ERROR' ? tag('error', 'bad') : tag('warning', 'warn')),
      h('p', null, f.message),
      h('p', { class: 'small' }, h('strong', null, 'What to do: '), f.remedy),
      f.objects.length ? h('p', { class: 'mono small' }, f.objects.join(', ')) : null)));
    },
  });
}

// gpuList shows a host's GPUs with their health: an unhealthy one says which
// Xid marked it and when, with the action that clears the mark once the
// device was looked at; any shows its last Xid.
function gpuList(host, note, reload) {
  return h('ul', { class: 'gpus small', 'aria-label': `GPUs of ${host.name}` }, host.gpus.map((g) => h('li', {
    class: 'gpu', dataset: { address: g.address, healthy: String(g.healthy) },
  },
  h('span', { class: 'mono' }, g.address), ` ${g.vendor} ${g.model} `,
  g.healthy ? tag('healthy', 'ok') : tag('unhealthy', 'bad'),
  g.healthy ? '' : [' ', g.healthReason || '', ' since ', time(g.unhealthySince)],
  g.lastXid ? [' · last Xid ', String(g.lastXid), ' ', time(g.lastXidAt, true)] : '',
  g.healthy ? null : [' ', clearGpuButton(host, g, note, reload)])));
}

// clearGpuButton clears a GPU's unhealthy mark, after a confirmation.
function clearGpuButton(host, gpu, note, reload) {
  return h('button', {
    type: 'button', class: 'btn', id: `clear-gpu-${host.id}-${gpu.address}`,
    onclick: async () => {
      if (!await confirm({ title: `Clear the mark of GPU ${gpu.address} on ${host.name}?`, ok: 'Clear mark',
        body: `${gpu.healthReason}. Clear it once the device was looked at: instances will be placed on it again.` })) return;
      try {
        await gql(`mutation ClearGpu($h: ID!, $a: String!) { clearGpuHealth(input: {hostId: $h, address: $a}) { host { id } } }`,
          { h: host.id, a: gpu.address });
        reload();
      } catch (err) {
        replace(note, `Could not clear GPU ${gpu.address} of ${host.name}: ${describe(err)}`);
      }
    },
  }, 'Clear mark');
}

// certificate says how a host proves itself to the gateway: by a
// certificate until when, or by its bearer credential, or by nothing yet.
function certificate(host) {
  let text;
  if (host.certified) text = [tag('certified', 'ok'), ' until ', time(host.certValidBefore)];
  else if (host.bearerCredential) text = [tag('not certified', 'warn'), ' proves itself by its bearer credential'];
  else text = [tag('not certified', 'bad'), ' no certificate and no bearer credential: give it a join token'];
  return h('p', { class: 'small host-cert', dataset: { certified: String(host.certified) } }, 'Certificate: ', text);
}

// revokeButton revokes every certificate of a host, after a confirmation:
// the gateway refuses them at once.
function revokeButton(host, note, reload) {
  return h('button', {
    type: 'button', class: 'btn btn-danger', id: `revoke-${host.id}`,
    onclick: async () => {
      if (!await confirm({ title: `Revoke the certificates of ${host.name}?`, ok: 'Revoke certificates', danger: true,
        body: `The gateway refuses them at once: ${host.name} cannot report${host.bearerCredential ? ' except by its bearer credential' : ''} until it joins again with a new join token.` })) return;
      try {
        await gql(`mutation RevokeHost($h: ID!) { revokeHostCertificates(input: {hostId: $h}) { host { id certified } } }`, { h: host.id });
        replace(note, `Revoked the certificates of ${host.name}.`);
        reload();
      } catch (err) {
        replace(note, `Could not revoke the certificates of ${host.name}: ${describe(err)}`);
      }
    },
  }, 'Revoke certificates');
}

// joinTokenButton gives a host a new one-time join token, after a
// confirmation, and shows it and its join command once: they live only in
// the dialog, gone when it is closed or the page is left.
function joinTokenButton(ctx, host, note) {
  return h('button', {
    type: 'button', class: 'btn', id: `join-token-${host.id}`,
    onclick: async () => {
      if (!await confirm({ title: `New join token for ${host.name}?`, ok: 'Make join token',
        body: 'A one-time token with which its host daemon joins and gets a certificate, as after its certificates were revoked or expired. It is shown once.' })) return;
      try {
        const { createHostJoinToken: p } = await gql(`mutation HostJoinToken($h: ID!) { createHostJoinToken(input: {hostId: $h}) { joinToken joinTokenExpiresAt joinCommand } }`, { h: host.id });
        const values = [{ label: 'Join token', value: p.joinToken, id: 'once-token' }];
        if (p.joinCommand) values.push({ label: 'Join command (run it on the host)', value: p.joinCommand, id: 'once-command' });
        const shown = showOnce({
          title: `Join token for ${host.name}`, values,
          body: `Shown once; it works until ${fmtTime(p.joinTokenExpiresAt)}, once.${p.joinCommand ? '' : ' This server has no host TLS listener (BC_HOST_LISTEN): give the token to better-compute host --join-token with --server and --ca-sha256.'}`,
        });
        ctx.onDispose(shown.close);
      } catch (err) {
        replace(note, `Could not make a join token for ${host.name}: ${describe(err)}`);
      }
    },
  }, 'New join token');
}

// deleteHostButton deletes a host that holds nothing, after a
// confirmation; the API refuses one that still holds snapshot files or a
// command under way, and says so in the note.
function deleteHostButton(host, note, reload) {
  return h('button', {
    type: 'button', class: 'btn btn-danger', id: `delete-host-${host.id}`,
    onclick: async () => {
      if (!await confirm({ title: `Delete ${host.name}?`, ok: 'Delete host', danger: true,
        body: 'Its daemon is refused from then on, with its certificates; its name may be given again. A host that still holds anything is not deleted.' })) return;
      try {
        await gql(`mutation DeleteHost($h: ID!) { deleteHost(input: {hostId: $h}) { host { id } } }`, { h: host.id });
        replace(note, `Deleted host ${host.name}.`);
        reload();
      } catch (err) {
        replace(note, `Could not delete ${host.name}: ${describe(err)}`);
      }
    },
  }, 'Delete');
}

// drainButton drains a host (after a confirmation) or returns it to service.
function drainButton(host, note, reload) {
  const drain = !host.draining;
  return h('button', {
    type: 'button', class: 'btn', id: `drain-${host.id}`,
    onclick: async () => {
      if (drain && !await confirm({ title: `Drain ${host.name}?`, ok: 'Drain host',
        body: 'Nothing new will be placed on it; what runs there keeps running.' })) return;
      try {
        await gql(`mutation Drain($h: ID!, $d: Boolean!) { setHostDraining(input: {hostId: $h, draining: $d}) { host { id draining } } }`,
          { h: host.id, d: drain });
        reload();
      } catch (err) {
        replace(note, `Could not ${drain ? 'drain' : 'return'} ${host.name}: ${describe(err)}`);
      }
    },
  }, drain ? 'Drain' : 'Return to service');
}

export function flavorsPage(ctx) {
  listPage(ctx, {
    title: 'Flavors', what: 'flavors', id: 'flavors-body',
    query: `query Flavors { flavors { id name vcpus memoryMb diskGb gpuModel gpuCount providerServerTypes } }`,
    tools: (reload) => adminForm({
      prefix: 'new-flavor', what: 'flavor', label: 'New flavor', submit: 'Create flavor',
      specs: [
        { key: 'name', label: 'Name', required: true },
        { key: 'vcpus', label: 'vCPUs', type: 'number', required: true },
        { key: 'memoryMb', label: 'Memory (MiB)', type: 'number', required: true },
        { key: 'diskGb', label: 'Disk (GB)', type: 'number', required: true },
        { key: 'gpuCount', label: 'GPUs (optional)', type: 'number' },
        { key: 'gpuModel', label: 'GPU model (optional)' },
      ],
      run: (v) => gql(`mutation NewFlavor($in: CreateFlavorInput!) { createFlavor(input: $in) { flavor { id name } } }`, { in: optional(v) }),
      done: ({ createFlavor: { flavor } }) => { reload(); return `Created flavor ${flavor.name}.`; },
    }),
    render: ({ flavors }, note) => {
      replace(note, flavors.length ? plural(flavors.length, 'flavor') : '');
      if (!flavors.length) return empty('No flavors yet.', h('p', null, 'Create one with createFlavor.'));
      return table([
        { label: 'Name', cell: (f) => h('strong', null, f.name) },
        { label: 'vCPU', cell: (f) => f.vcpus, class: 'num' },
        { label: 'Memory', cell: (f) => mib(f.memoryMb), class: 'num' },
        { label: 'Disk', cell: (f) => `${f.diskGb} GB`, class: 'num' },
        { label: 'GPU', cell: (f) => (f.gpuCount ? `${f.gpuCount} × ${f.gpuModel || 'any'}` : none()) },
        { label: 'Provider server types', cell: (f) => map(f.providerServerTypes) },
      ], flavors, { caption: 'Flavors' });
    },
  });
}

export function imagesPage(ctx) {
  listPage(ctx, {
    title: 'Images', what: 'images', id: 'images-body',
    query: `query Images { images { id name sourceUrl sha256 format visibility tenant { name } verified providerImages createdAt } tenants { id name } }`,
    tools: (reload, { tenants }) => adminForm({
      prefix: 'new-image', what: 'image', verb: 'registered', label: 'Register an image', submit: 'Register image',
      specs: [
        { key: 'name', label: 'Name', required: true },
        { key: 'sourceUrl', label: 'Source URL', required: true, hint: 'Where hosts download it (https, or file:// on the hosts).' },
        { key: 'sha256', label: 'SHA-256', required: true, hint: 'As its publisher gives it: 64 hex digits. Hosts check it.' },
        { key: 'format', label: 'Format', type: 'select', options: [['QCOW2', 'qcow2'], ['RAW', 'raw']], value: 'QCOW2' },
        { key: 'visibility', label: 'Visibility', type: 'select', options: [['PUBLIC', 'public: every tenant'], ['TENANT', 'one tenant']], value: 'PUBLIC' },
        { key: 'tenantId', label: 'Tenant (when one tenant)', type: 'select', options: choices(tenants, '—') },
        { key: 'verified', label: 'Verified: its source and checksum were checked', type: 'checkbox' },
      ],
      run: (v) => gql(`mutation NewImage($in: RegisterImageInput!) { registerImage(input: $in) { image { id name } } }`, { in: optional(v) }),
      done: ({ registerImage: { image } }) => { reload(); return `Registered image ${image.name}.`; },
    }),
    render: ({ images }, note) => {
      replace(note, images.length ? plural(images.length, 'image') : '');
      if (!images.length) return empty('No images yet.', h('p', null, 'Register one with registerImage.'));
      return table([
        { label: 'Name', cell: (i) => h('strong', null, i.name) },
        { label: 'Format', cell: (i) => i.format.toLowerCase() },
        { label: 'Visibility', cell: (i) => (i.visibility === 'PUBLIC' ? 'public' : `tenant ${i.tenant?.name || ''}`) },
        { label: 'Verified', cell: (i) => (i.verified ? tag('verified', 'ok') : tag('unverified', 'warn')) },
        { label: 'Source', cell: (i) => h('span', { class: 'mono small break' }, i.sourceUrl) },
        { label: 'SHA-256', cell: (i) => h('span', { class: 'mono small', title: i.sha256 }, `${i.sha256.slice(0, 12)}…`) },
        { label: 'At providers', cell: (i) => map(i.providerImages) },
        { label: 'Registered', cell: (i) => time(i.createdAt) },
      ], images, { caption: 'Images' });
    },
  });
}

export function tenantsPage(ctx) {
  listPage(ctx, {
    title: 'Tenants', what: 'tenants', id: 'tenants-body',
    query: `query Tenants { tenants { id name createdAt quota { instances vcpus memoryMb gpus snapshots snapshotBytes usage { instances vcpus memoryMb gpus } } } }`,
    tools: (reload) => adminForm({
      prefix: 'new-tenant', what: 'tenant', label: 'New tenant', submit: 'Create tenant',
      specs: [{ key: 'name', label: 'Name', required: true }],
      run: (v) => gql(`mutation NewTenant($n: String!) { createTenant(input: {name: $n}) { tenant { id name } } }`, { n: v.name }),
      done: ({ createTenant: { tenant } }) => { reload(); return `Created tenant ${tenant.name}.`; },
    }),
    render: ({ tenants }, note, reload, said) => {
      replace(note, tenants.length ? plural(tenants.length, 'tenant') : '');
      if (!tenants.length) return empty('No tenants yet.', h('p', null, 'Create one with createTenant.'));
      return h('div', { class: 'cards' }, tenants.map((t) => {
        const q = t.quota;
        return h('section', { class: 'card', 'aria-labelledby': `tenant-${t.id}`, dataset: { id: t.id } },
          h('h2', { id: `tenant-${t.id}` }, t.name),
          h('p', { class: 'small muted' }, h('span', { class: 'mono' }, t.id), ' · since ', time(t.createdAt)),
          h('div', { class: 'bars' },
            bar('Instances', q.usage.instances, q.instances),
            bar('vCPU', q.usage.vcpus, q.vcpus),
            bar('Memory', q.usage.memoryMb, q.memoryMb, mib),
            bar('GPU', q.usage.gpus, q.gpus)),
          adminForm({
            // setQuota replaces the whole quota: every limit is in the
            // form, as it is now; an empty field is no limit.
            prefix: `quota-${t.id}`, what: 'quota', verb: 'set', label: 'Set quota', submit: 'Set quota',
            specs: [
              { key: 'instances', label: 'Instances', type: 'number', value: q.instances },
              { key: 'vcpus', label: 'vCPUs', type: 'number', value: q.vcpus },
              { key: 'memoryMb', label: 'Memory (MiB)', type: 'number', value: q.memoryMb },
              { key: 'gpus', label: 'GPUs', type: 'number', value: q.gpus },
              { key: 'snapshots', label: 'Sandbox snapshots', type: 'number', value: q.snapshots },
              { key: 'snapshotBytes', label: 'Snapshot bytes', type: 'number', value: q.snapshotBytes },
            ],
            run: (v) => gql(`mutation SetQuota($in: SetQuotaInput!) { setQuota(input: $in) { tenant { id } } }`, { in: { ...optional(v), tenantId: t.id } }),
            done: () => { replace(said, `Set the quota of ${t.name}.`); reload(); },
          }));
      }));
    },
  });
}
