// The create form. Everything the browser can check is checked before
// sending (name, SSH keys, user data size); the API's errors name a field
// in extensions.field and are shown beside it, like the browser's own.
import { h, replace, mib, plural } from '../dom.js';
import { gql } from '../api.js';
import { loading, failure, pageHead, empty } from '../ui.js';
import { parseKeys, KEY_TYPES, MAX_KEYS } from '../sshkey.js';
import { formKit, idempotencyKey } from './form.js';

const CATALOG = `query Catalog($operator: Boolean!) {
  pools { id name class }
  flavors { id name vcpus memoryMb diskGb gpuCount gpuModel }
  images { id name format verified visibility }
  tenants @include(if: $operator) { id name }
}`;
const CREATE = `mutation Create($in: CreateInstanceInput!) { createInstance(input: $in) {
  instance { id name state desiredState stateReason addresses version updatedAt } } }`;

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_USER_DATA = 64 * 1024;
const INSTANCE_POOLS = new Set(['vps-host', 'provider']);

// The API's input names, by the form's fields.
const API_FIELD = { tenantId: 'tenant', poolId: 'pool', flavorId: 'flavor', imageId: 'image', name: 'name', sshKeys: 'sshKeys', userData: 'userData', desiredState: 'start' };

export function createPage(ctx) {
  const { main, session } = ctx;
  ctx.setTitle('New instance');
  replace(main, pageHead('New instance'), loading('pools, flavors and images'));
  const key = idempotencyKey();

  async function load() {
    try {
      const data = await gql(CATALOG, { operator: session.operator }, { signal: ctx.signal });
      build(data);
      ctx.markUsable('create');
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(main, pageHead('New instance'), failure('pools, flavors and images', err, () => { replace(main, pageHead('New instance'), loading('pools, flavors and images')); load(); }));
    }
  }

  function build(cat) {
    const pools = cat.pools.filter((p) => INSTANCE_POOLS.has(p.class));
    if (!pools.length || !cat.flavors.length || !cat.images.length) {
      replace(main, pageHead('New instance'), empty('Nothing to create an instance with yet.',
        h('p', null, `There ${pools.length === 1 ? 'is' : 'are'} ${plural(pools.length, 'pool')}, ${plural(cat.flavors.length, 'flavor')} and ${plural(cat.images.length, 'image')} you may use. `,
          session.operator ? 'Create them first (see the README).' : 'Ask an operator to set them up for your tenant.')));
      return;
    }
    const { fields, summary, field, setError, clearErrors, showErrors, showApiError } = formKit('instance');
    const select = (name, items, text, first) => h('select', { name },
      first && h('option', { value: '' }, first),
      items.map((it, i) => h('option', { value: it.id, selected: !first && i === 0 }, text(it))));

    const name = h('input', { type: 'text', name: 'name', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off', maxlength: '63', required: true });
    const tenant = session.operator ? select('tenant', cat.tenants, (t) => t.name, 'Choose a tenant') : null;
    const pool = select('pool', pools, (p) => `${p.name}${p.class === 'provider' ? ' (cloud provider)' : ''}`);
    const flavor = select('flavor', cat.flavors, (f) => `${f.name} — ${f.vcpus} vCPU, ${mib(f.memoryMb)}, ${f.diskGb} GB${f.gpuCount ? `, ${f.gpuCount} GPU` : ''}`);
    const image = select('image', cat.images, (i) => `${i.name}${i.verified ? '' : ' (unverified)'}${i.visibility === 'TENANT' ? ' · yours' : ''}`);
    const start = h('input', { type: 'checkbox', name: 'start', checked: true });
    const keys = h('textarea', { name: 'sshKeys', rows: '4', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', class: 'mono', required: true });
    const userData = h('textarea', { name: 'userData', rows: '5', spellcheck: 'false', autocapitalize: 'off', class: 'mono' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'create-submit' }, 'Create instance');

    const form = h('form', { class: 'card form', id: 'create-form', novalidate: true },
      summary,
      field('name', 'Name', name, 'Becomes the hostname: 1–63 lowercase letters, digits or hyphens, not starting or ending with a hyphen.'),
      tenant && field('tenant', 'Tenant', tenant, 'Operators create instances on behalf of a tenant.'),
      field('pool', 'Pool', pool),
      field('flavor', 'Flavor', flavor),
      field('image', 'Image', image),
      field('sshKeys', 'SSH public keys', keys, `One OpenSSH public key per line (${KEY_TYPES.slice(0, 3).join(', ')}, sk-…), as in authorized_keys; lines starting with # are skipped. At most ${MAX_KEYS}.`),
      field('userData', 'User data (optional)', userData, 'cloud-init user data, up to 64 KiB. It is sealed at rest and cannot be read back.'),
      field('start', 'Start it once created', start),
      h('div', { class: 'actions' }, submit, h('a', { class: 'btn', href: '#/instances' }, 'Cancel')));

    // A field in error is checked again as it is edited, so it stops
    // saying it is wrong once fixed. (Not on blur: the layout would move
    // under a click on "Create instance".)
    name.addEventListener('input', () => { if (fields.name.err.textContent) setError('name', checkName(name.value)); });
    keys.addEventListener('input', () => { if (fields.sshKeys.err.textContent) setError('sshKeys', checkKeys(keys.value).message); });

    let parsed = null;
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clearErrors();
      const errs = [];
      const n = checkName(name.value);
      if (n) errs.push(['name', n]);
      if (tenant && !tenant.value) errs.push(['tenant', 'Choose the tenant the instance is for.']);
      parsed = checkKeys(keys.value);
      if (parsed.message) errs.push(['sshKeys', parsed.message]);
      const ud = new TextEncoder().encode(userData.value).length;
      if (ud > MAX_USER_DATA) errs.push(['userData', `is ${ud} bytes; the limit is ${MAX_USER_DATA} (64 KiB).`]);
      if (errs.length) {
        showErrors(errs);
        return;
      }
      const input = {
        poolId: pool.value, flavorId: flavor.value, imageId: image.value, name: name.value.trim(),
        sshKeys: parsed.keys.map((k) => k.key), desiredState: start.checked ? 'RUNNING' : 'STOPPED', idempotencyKey: key,
      };
      if (tenant) input.tenantId = tenant.value;
      if (userData.value) input.userData = userData.value;
      submit.disabled = true;
      submit.textContent = 'Creating…';
      form.setAttribute('aria-busy', 'true');
      try {
        const data = await gql(CREATE, { in: input }, { signal: ctx.signal });
        const inst = data.createInstance.instance;
        ctx.store.merge(inst);
        ctx.go(`#/instances/${encodeURIComponent(inst.id)}`);
      } catch (err) {
        if (err.name === 'AbortError') return;
        submit.disabled = false;
        submit.textContent = 'Create instance';
        form.removeAttribute('aria-busy');
        showApiError(err, placeError);
      }
    });

    // placeError puts an API error that names a field at that field, an
    // SSH key's index turned into the line it came from.
    function placeError(ext, msg) {
      const line = /^sshKeys\[(\d+)\]$/.exec(ext.field || '');
      if (line && parsed?.keys[Number(line[1])]) msg = `line ${parsed.keys[Number(line[1])].line}: ${msg}`;
      if (ext.code === 'QUOTA_EXCEEDED') {
        // A flavor too big for what is left; or no instance left at all.
        const what = { instances: 'instances', vcpus: 'vCPUs', memoryMb: 'memory', gpus: 'GPUs' }[ext.limit] || ext.limit;
        const text = `your tenant's quota of ${what} would be exceeded (${msg})`;
        return ext.limit === 'instances' ? `The instance was not created: ${text}.` : ['flavor', text];
      }
      const key = line ? 'sshKeys' : API_FIELD[ext.field];
      return key ? [key, msg] : null;
    }

    replace(main, h('p', { class: 'crumbs' }, h('a', { href: '#/instances' }, '← Instances')), pageHead('New instance'), form);
    name.focus();
  }

  load();
}

function checkName(v) {
  const s = v.trim();
  if (!s) return 'Enter a name.';
  if (s.length > 63) return 'is longer than 63 characters.';
  if (/[A-Z]/.test(s)) return 'use lowercase letters only.';
  if (!NAME.test(s)) return 'use only lowercase letters, digits and hyphens, and start and end with a letter or digit.';
  return '';
}

function checkKeys(text) {
  const { keys, errors } = parseKeys(text);
  if (!keys.length) return { keys, message: 'Paste at least one SSH public key.' };
  if (keys.length > MAX_KEYS) return { keys, message: `At most ${MAX_KEYS} keys; there are ${keys.length}.` };
  if (errors.length) {
    return { keys, message: errors.map((e) => `line ${e.line}: ${e.message}`).join('; ') + '.' };
  }
  return { keys, message: '' };
}
