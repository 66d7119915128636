// The provider bootstraps page (operators): a form that asks a provider
// account for a machine to become a host of a hosted pool, and every
// bootstrap's progress (PENDING → PROVISIONING → JOINED or FAILED), live:
// the list is read once, then kept by the session's
// providerBootstrapEvents subscription, ordered and deduped by each
// bootstrap's version, and read again when the live connection comes back.
// A bootstrap's join token is never part of what the API returns, so never
// shown.
import { h, replace, time, plural, fmtTime } from '../dom.js';
import { gql } from '../api.js';
import { BOOTSTRAP_FIELDS } from '../live.js';
import { loading, failure, empty, pageHead, tag } from '../ui.js';
import { formKit } from './form.js';

const LIST = `query Bootstraps { providerBootstraps { ${BOOTSTRAP_FIELDS} } }`;
const CHOICES = `query BootstrapChoices { providerAccounts { id name provider tenant { id } } pools { id name class } }`;
const CREATE = `mutation CreateBootstrap($in: CreateProviderBootstrapInput!) { createProviderBootstrap(input: $in) { providerBootstrap { id name state } } }`;

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const TONE = { PENDING: 'idle', PROVISIONING: 'warn', JOINED: 'ok', FAILED: 'bad' };
// The API's input names, by the form's fields.
const API_FIELD = { providerAccountId: 'account', poolId: 'pool', serverType: 'serverType', image: 'image', name: 'name' };

export function bootstrapsPage(ctx) {
  ctx.setTitle('Provider bootstraps');
  const note = h('p', { class: 'summary', 'aria-live': 'polite' });
  const formBox = h('div', { id: 'bootstrap-form-box' }, loading('provider accounts and pools'));
  const list = h('div', { id: 'bootstraps-body' }, loading('bootstraps'));
  replace(ctx.main, pageHead('Provider bootstraps'),
    h('p', null, 'Rent a machine through an operators\' provider account; it installs nothing but a join script and becomes a host of a hosted pool. Its image must carry the better-compute binary.'),
    formBox, h('h2', null, 'Bootstraps'), note, list);

  // byId holds every bootstrap shown, the newest version of each: from the
  // list, and from events, whichever is newer.
  const byId = new Map();
  let loaded = false;
  let changedAt = null;
  const keep = (b) => {
    const cur = byId.get(b.id);
    if (cur && cur.version >= b.version) return false;
    byId.set(b.id, b);
    return true;
  };
  function show() {
    const bs = [...byId.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
    replace(list, render(bs));
    const open = bs.filter((b) => b.state === 'PENDING' || b.state === 'PROVISIONING').length;
    replace(note, bs.length ? `${plural(bs.length, 'bootstrap')}, ${open} under way. Live${changedAt ? `; last change at ${fmtTime(changedAt)}` : ''}.` : '');
  }
  async function reload() {
    try {
      const { providerBootstraps: bs } = await gql(LIST, {}, { signal: ctx.signal });
      bs.forEach(keep);
      show();
      if (!loaded) ctx.markUsable('bootstraps-body');
      loaded = true;
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (!loaded) replace(list, failure('bootstraps', err, () => { replace(list, loading('bootstraps')); reload(); }));
      else replace(note, `Could not refresh: ${err.message}. Showing what was loaded at ${fmtTime(new Date())}.`);
    }
  }
  ctx.watchBootstraps((ev) => {
    if (!keep(ev.providerBootstrap) || !loaded) return;
    changedAt = new Date();
    show();
  });
  // Events may have been missed while the live connection was down.
  ctx.onResync(reload);

  async function loadForm() {
    try {
      const data = await gql(CHOICES, {}, { signal: ctx.signal });
      replace(formBox, form(data));
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(formBox, failure('provider accounts and pools', err, () => { replace(formBox, loading('provider accounts and pools')); loadForm(); }));
    }
  }
  loadForm();
  reload();
}

// render shows each bootstrap as a card with its state.
function render(bs) {
  if (!bs.length) return empty('No bootstraps yet.', h('p', null, 'Ask for a host with the form above.'));
  return h('div', { class: 'cards' }, bs.map((b) => h('section', {
    class: 'card bootstrap', 'aria-labelledby': `bootstrap-${b.id}`, dataset: { id: b.id, state: b.state },
  },
  h('h2', { id: `bootstrap-${b.id}` }, b.name, ' ', tag(b.state.toLowerCase(), TONE[b.state])),
  h('dl', { class: 'facts' },
    h('dt', null, 'Provider'), h('dd', null, `${b.providerAccount.name} (${b.providerAccount.provider.toLowerCase()}) · ${b.serverType} · ${b.image}`),
    h('dt', null, 'Pool'), h('dd', null, b.pool.name),
    h('dt', null, 'Host'), h('dd', { class: 'bootstrap-host' }, b.host ? b.host.name : h('span', { class: 'muted' }, '—')),
    b.stateReason && [h('dt', null, 'Why'), h('dd', { class: 'bootstrap-reason' }, b.stateReason)],
    b.deadline && (b.state === 'PROVISIONING') && [h('dt', null, 'Must join by'), h('dd', null, time(b.deadline))],
    h('dt', null, 'Asked for'), h('dd', null, time(b.createdAt)),
    h('dt', null, 'Last change'), h('dd', null, time(b.updatedAt, true))))));
}

// form asks for a bootstrap from an operators' account into a hosted pool.
function form({ providerAccounts, pools }) {
  const accounts = providerAccounts.filter((a) => !a.tenant);
  const hosted = pools.filter((p) => p.class === 'vps-host');
  if (!accounts.length || !hosted.length) {
    return empty('Nothing to bootstrap with yet.', h('p', null,
      `There ${accounts.length === 1 ? 'is' : 'are'} ${plural(accounts.length, 'shared provider account')} and ${plural(hosted.length, 'hosted pool')}. Create them first (createProviderAccount without a tenant, createPool of class vps-host).`));
  }
  const { summary, field, clearErrors, showErrors, showApiError } = formKit('bootstrap');
  const select = (name, items, text) => h('select', { name }, items.map((it, i) => h('option', { value: it.id, selected: i === 0 }, text(it))));
  const account = select('account', accounts, (a) => `${a.name} (${a.provider.toLowerCase()})`);
  const pool = select('pool', hosted, (p) => p.name);
  const text = (name, max) => h('input', { type: 'text', name, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off', maxlength: String(max), required: true });
  const name = text('name', 63);
  const serverType = text('serverType', 100);
  const image = text('image', 100);
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'bootstrap-submit' }, 'Rent a host');
  const el = h('form', { class: 'card form', id: 'bootstrap-form', novalidate: true },
    summary,
    field('name', 'Name', name, 'The machine\'s and the host\'s name: a lowercase slug no host has.'),
    field('account', 'Provider account', account, 'Operators\' accounts only.'),
    field('pool', 'Hosted pool', pool),
    field('serverType', 'Server type', serverType, 'Hetzner: a server type such as cx22. Proxmox: <vCPUs>x<memory MiB>, such as 4x8192.'),
    field('image', 'Image', image, 'Hetzner: an image name. Proxmox: the template\'s VMID. It must carry /usr/local/bin/better-compute.'),
    h('div', { class: 'actions' }, submit));
  el.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearErrors();
    const errs = [];
    if (!NAME.test(name.value.trim())) errs.push(['name', 'must be a lowercase slug of at most 63 characters.']);
    if (!serverType.value.trim()) errs.push(['serverType', 'is required.']);
    if (!image.value.trim()) errs.push(['image', 'is required.']);
    if (errs.length) {
      showErrors(errs);
      return;
    }
    submit.disabled = true;
    try {
      await gql(CREATE, { in: { providerAccountId: account.value, poolId: pool.value, name: name.value.trim(), serverType: serverType.value.trim(), image: image.value.trim() } });
      name.value = ''; // its card comes with its CREATED event
    } catch (err) {
      showApiError(err, (ext, msg) => (API_FIELD[ext.field] ? [API_FIELD[ext.field], msg] : null));
    } finally {
      submit.disabled = false;
    }
  });
  return el;
}
