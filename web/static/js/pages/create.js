// The create form. Everything the browser can check is checked before
// sending (name, SSH keys, user data size); the API's errors name a field
// in extensions.field and are shown beside it, like the browser's own.
import { h, replace, mib, plural } from '../dom.js';
import { gql, describe, ApiError } from '../api.js';
import { loading, failure, pageHead, empty } from '../ui.js';
import { parseKeys, KEY_TYPES, MAX_KEYS } from '../sshkey.js';

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
  const idempotencyKey = crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2);

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
    const fields = {};
    const field = (key, label, control, hint) => {
      const hintId = `f-${key}-hint`;
      const errId = `f-${key}-error`;
      control.id = `f-${key}`;
      control.setAttribute('aria-describedby', hint ? `${hintId} ${errId}` : errId);
      const err = h('p', { class: 'field-error', id: errId });
      fields[key] = { control, err };
      const isCheck = control.type === 'checkbox';
      return h('div', { class: `field${isCheck ? ' field-check' : ''}`, dataset: { field: key } },
        isCheck ? [control, h('label', { for: control.id }, label)] : h('label', { for: control.id }, label),
        hint && h('p', { class: 'hint', id: hintId }, hint),
        isCheck ? null : control,
        err);
    };
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
    const summary = h('div', { class: 'alert', role: 'alert', id: 'form-errors', tabindex: '-1' });
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

    const setError = (key, msg) => {
      const f = fields[key];
      if (!f) return false;
      f.err.textContent = msg || '';
      if (msg) f.control.setAttribute('aria-invalid', 'true');
      else f.control.removeAttribute('aria-invalid');
      return true;
    };
    const clearErrors = () => {
      for (const k of Object.keys(fields)) setError(k, '');
      replace(summary);
      summary.classList.remove('shown');
    };
    // showErrors puts each error at its field, lists them on top and moves
    // focus to the first field in error.
    const showErrors = (errs, general) => {
      const items = [];
      for (const [key, msg] of errs) {
        setError(key, msg);
        items.push(h('li', null, h('a', { href: `#/instances/new`, dataset: { target: key }, onclick: (e) => { e.preventDefault(); fields[key].control.focus(); } }, `${labelOf(key)}: ${msg}`)));
      }
      replace(summary,
        h('p', null, h('strong', null, general || (errs.length === 1 ? 'The instance was not created: fix the field below.' : `The instance was not created: fix the ${errs.length} fields below.`))),
        items.length ? h('ul', null, items) : null);
      summary.classList.add('shown');
      if (errs.length) fields[errs[0][0]].control.focus();
      else summary.focus();
    };
    const labelOf = (key) => fields[key].control.closest('.field').querySelector('label').textContent;

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
        sshKeys: parsed.keys.map((k) => k.key), desiredState: start.checked ? 'RUNNING' : 'STOPPED', idempotencyKey,
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
        showApiError(err);
      }
    });

    // showApiError puts each error that names a field at that field; any
    // other error goes in the summary.
    function showApiError(err) {
      if (!(err instanceof ApiError)) {
        showErrors([], describe(err));
        return;
      }
      const errs = [];
      let general = '';
      for (const e of err.errors) {
        const ext = e.extensions || {};
        let msg = e.message || 'is not valid';
        if (ext.field && msg.startsWith(`${ext.field}: `)) msg = msg.slice(ext.field.length + 2);
        const line = /^sshKeys\[(\d+)\]$/.exec(ext.field || '');
        const key = line ? 'sshKeys' : API_FIELD[ext.field];
        if (line && parsed?.keys[Number(line[1])]) msg = `line ${parsed.keys[Number(line[1])].line}: ${msg}`;
        if (ext.code === 'QUOTA_EXCEEDED') {
          // A flavor too big for what is left; or no instance left at all.
          const what = { instances: 'instances', vcpus: 'vCPUs', memoryMb: 'memory', gpus: 'GPUs' }[ext.limit] || ext.limit;
          const text = `your tenant's quota of ${what} would be exceeded (${msg})`;
          if (ext.limit === 'instances') general = `The instance was not created: ${text}.`;
          else errs.push(['flavor', text]);
        } else if (key && fields[key]) {
          errs.push([key, msg]);
        } else {
          general = `The instance was not created: ${describe(err)}`;
        }
      }
      showErrors(errs, general);
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
