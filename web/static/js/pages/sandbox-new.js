// Create a sandbox from a template: its timeout and metadata, checked in
// the browser before sending; the API's errors are shown at the fields
// they name.
import { h, replace, plural } from '../dom.js';
import { gql } from '../api.js';
import { loading, failure, pageHead, empty } from '../ui.js';
import { FIELDS, seconds } from '../sandboxes.js';
import { formKit, idempotencyKey } from './form.js';

const TEMPLATES = `query Templates { sandboxTemplates(first: 100) { nodes { id name public defaultTimeout maxTimeout warmCount pool { name } flavor { name } } } }`;
const CREATE = `mutation CreateSandbox($in: CreateSandboxInput!) { createSandbox(input: $in) { sandbox { ${FIELDS} } } }`;

// The API's limits on metadata (docs/api.md).
const MAX_ENTRIES = 32;
const MAX_KEY = 64;
const MAX_VALUE = 512;

export function sandboxNewPage(ctx) {
  const { main } = ctx;
  ctx.setTitle('New sandbox');
  replace(main, pageHead('New sandbox'), loading('the templates'));
  const key = idempotencyKey();

  async function load() {
    try {
      const data = await gql(TEMPLATES, {}, { signal: ctx.signal });
      build(data.sandboxTemplates.nodes);
      ctx.markUsable('sandbox-new');
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(main, pageHead('New sandbox'), failure('the templates', err, () => { replace(main, pageHead('New sandbox'), loading('the templates')); load(); }));
    }
  }

  function build(templates) {
    if (!templates.length) {
      replace(main, pageHead('New sandbox'), empty('No templates yet.',
        h('p', null, 'A sandbox is made from a template (its pool, flavor, image, keys, env and network policy). Create one with createSandboxTemplate (see docs/api.md).')));
      return;
    }
    const { field, summary, showErrors, clearErrors, showApiError } = formKit('sandbox');
    const wanted = ctx.query.get('template');
    const template = h('select', { name: 'template' }, templates.map((t, i) => h('option', { value: t.id, selected: wanted ? t.id === wanted : i === 0 },
      `${t.name} — ${t.flavor.name} in ${t.pool.name}${t.warmCount ? `, ${plural(t.warmCount, 'warm instance')}` : ''}${t.public ? ' (public)' : ''}`)));
    const timeout = h('input', { type: 'number', name: 'timeout', min: '1', step: '1', inputmode: 'numeric' });
    const metadata = h('textarea', { name: 'metadata', rows: '4', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', class: 'mono' });
    const timeoutHint = h('span');
    const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'sandbox-submit' }, 'Create sandbox');
    const form = h('form', { class: 'card form', id: 'sandbox-form', novalidate: true },
      summary,
      field('template', 'Template', template),
      field('timeout', 'Timeout, in seconds', timeout, timeoutHint),
      field('metadata', 'Metadata (optional)', metadata, `One key=value pair a line, at most ${MAX_ENTRIES}; keys up to ${MAX_KEY} bytes, values up to ${MAX_VALUE}. Lists filter by it.`),
      h('div', { class: 'actions' }, submit, h('a', { class: 'btn', href: '#/sandboxes' }, 'Cancel')));

    const chosen = () => templates.find((t) => t.id === template.value);
    const onTemplate = () => {
      const t = chosen();
      timeout.value = String(t.defaultTimeout);
      timeout.max = String(t.maxTimeout);
      replace(timeoutHint, `It is deleted this long after it is created unless extended; the template's default is ${t.defaultTimeout} (${seconds(t.defaultTimeout)}), at most ${t.maxTimeout} (${seconds(t.maxTimeout)}).`);
    };
    template.addEventListener('change', onTemplate);
    onTemplate();

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clearErrors();
      const errs = [];
      const t = chosen();
      const n = Number(timeout.value);
      if (!Number.isInteger(n) || n < 1 || n > t.maxTimeout) errs.push(['timeout', `enter a whole number of seconds from 1 to ${t.maxTimeout} (the template's maximum).`]);
      const md = parseMetadata(metadata.value);
      if (md.message) errs.push(['metadata', md.message]);
      if (errs.length) {
        showErrors(errs);
        return;
      }
      submit.disabled = true;
      submit.textContent = 'Creating…';
      form.setAttribute('aria-busy', 'true');
      try {
        const data = await gql(CREATE, { in: { templateId: t.id, timeout: n, metadata: md.map, idempotencyKey: key } }, { signal: ctx.signal });
        const sbx = data.createSandbox.sandbox;
        ctx.store.merge(sbx.instance);
        ctx.go(`#/sandboxes/${encodeURIComponent(sbx.id)}`);
      } catch (err) {
        if (err.name === 'AbortError') return;
        submit.disabled = false;
        submit.textContent = 'Create sandbox';
        form.removeAttribute('aria-busy');
        showApiError(err, (ext, msg) => {
          const f = (ext.field || '').replace(/[.[].*$/, '');
          const at = { templateId: 'template', timeout: 'timeout', metadata: 'metadata' }[f];
          if (ext.code === 'QUOTA_EXCEEDED') return `The sandbox was not created: your tenant's quota would be exceeded (${msg}).`;
          return at ? [at, msg] : null;
        });
      }
    });

    replace(main, h('p', { class: 'crumbs' }, h('a', { href: '#/sandboxes' }, '← Sandboxes')), pageHead('New sandbox'), form);
    template.focus();
  }

  load();
}

// parseMetadata reads key=value lines (blank ones skipped) into a map,
// or says which line is wrong.
export function parseMetadata(text) {
  const map = {};
  const size = (s) => new TextEncoder().encode(s).length;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return { message: `line ${i + 1}: write key=value.` };
    const k = line.slice(0, eq).trim();
    const v = line.slice(eq + 1).trim();
    if (size(k) > MAX_KEY) return { message: `line ${i + 1}: the key is over ${MAX_KEY} bytes.` };
    if (size(v) > MAX_VALUE) return { message: `line ${i + 1}: the value is over ${MAX_VALUE} bytes.` };
    if (k in map) return { message: `line ${i + 1}: ${k} is given twice.` };
    map[k] = v;
  }
  if (Object.keys(map).length > MAX_ENTRIES) return { message: `at most ${MAX_ENTRIES} pairs; there are ${Object.keys(map).length}.` };
  return { map };
}
