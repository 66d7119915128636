// The operator's forms: each runs one mutation, checks what the browser
// can (required fields, numbers), and shows the API's errors at the field
// they name, as the create-instance form does.
import { h } from '../dom.js';
import { ApiError } from '../api.js';
import { formKit } from './form.js';

// control makes the input of a field spec: text (default), number,
// password, textarea, checkbox or select (options: [value, label] pairs).
function control(spec) {
  const common = { name: spec.key, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off' };
  switch (spec.type) {
    case 'select':
      return h('select', common, spec.options.map(([value, label]) => h('option', { value, selected: value === spec.value }, label)));
    case 'checkbox':
      return h('input', { ...common, type: 'checkbox', checked: !!spec.value });
    case 'textarea':
      return h('textarea', { ...common, rows: '3', class: 'mono' }, spec.value || '');
    case 'number':
      return h('input', { ...common, type: 'number', min: '0', step: '1', inputmode: 'numeric', value: spec.value ?? '' });
    default:
      return h('input', { ...common, type: spec.type || 'text', value: spec.value ?? '' });
  }
}

// read returns a field's value as the API takes it: null when empty and
// optional, a number, a boolean or trimmed text; undefined with an error
// message when the browser can tell it is wrong.
function read(spec, el) {
  if (spec.type === 'checkbox') return [el.checked];
  const raw = el.value.trim();
  if (raw === '') return spec.required ? [undefined, 'is required.'] : [null];
  if (spec.type === 'number') {
    if (!/^\d+$/.test(raw)) return [undefined, 'must be a whole number, 0 or more.'];
    return [Number(raw)];
  }
  return [spec.type === 'password' ? el.value : raw];
}

// adminForm returns a form with the fields specs describes, inside a
// disclosure (label) unless open. On submit it checks the fields, calls
// run(values) (values by key), and on success clears the form and shows
// what done(result) returns, beside the form (the list below is reloaded
// by done); the API's errors go to the field whose spec's api (or key)
// their extensions.field names, others to the summary.
export function adminForm({ prefix, what, verb = 'created', label, open, submit, specs, run, done }) {
  const kit = formKit(what, verb, prefix);
  const controls = {};
  const button = h('button', { type: 'submit', class: 'btn btn-primary', id: `${prefix}-submit` }, submit);
  const status = h('p', { class: 'form-done', role: 'status', id: `${prefix}-done` });
  const form = h('form', { class: 'form admin-form', id: `${prefix}-form`, novalidate: true },
    status,
    kit.summary,
    specs.map((s) => {
      controls[s.key] = control(s);
      return kit.field(s.key, s.label, controls[s.key], s.hint);
    }),
    h('div', { class: 'actions' }, button));
  const byApi = Object.fromEntries(specs.map((s) => [s.api || s.key, s.key]));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    kit.clearErrors();
    status.textContent = '';
    const values = {};
    const errs = [];
    for (const s of specs) {
      const [v, err] = read(s, controls[s.key]);
      if (err) errs.push([s.key, err]);
      else values[s.key] = v;
    }
    if (errs.length) {
      kit.showErrors(errs);
      return;
    }
    button.disabled = true;
    form.setAttribute('aria-busy', 'true');
    try {
      const result = await run(values);
      form.reset();
      status.textContent = done(result) || '';
    } catch (err) {
      if (err.name === 'AbortError') return;
      kit.showApiError(err, (ext, msg) => {
        const key = byApi[ext.field] || byApi[String(ext.field || '').split(/[.[]/)[0]];
        return key ? [key, msg] : null;
      });
    } finally {
      button.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
  if (open) return h('section', { class: 'card' }, form);
  return h('details', { class: 'card admin', id: `${prefix}-details` }, h('summary', { id: `${prefix}-open` }, label), form);
}

// optional drops the null values of an input, which the API reads as
// "not given".
export function optional(input) {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined));
}

// FieldError is a check of a field that run makes (a JSON setting, say):
// adminForm shows it at the field, as the API's own errors.
export class FieldError extends ApiError {
  constructor(field, message) {
    super([{ message, extensions: { field, code: 'INVALID_INPUT' } }], 0);
  }
}
