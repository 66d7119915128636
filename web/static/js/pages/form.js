// Forms whose errors are shown at their fields: each control is labelled,
// described by its hint and its error, and a summary on top lists the
// errors with links to the fields. The create forms (instances, sandboxes)
// and the sandbox page's timeout form use it.
import { h, replace } from '../dom.js';
import { ApiError, describe } from '../api.js';

// formKit returns the pieces of one form. what names what the form makes
// ("instance", "sandbox") in its summary: "The sandbox was not created…".
// prefix starts its elements' IDs (<prefix>-<key>), so a page may hold
// several forms.
export function formKit(what, verb = 'created', prefix = 'f') {
  const fields = {};
  const summary = h('div', { class: 'alert', role: 'alert', id: prefix === 'f' ? 'form-errors' : `${prefix}-errors`, tabindex: '-1' });

  // field wraps control (given the id f-<key>) with its label, hint and
  // error.
  const field = (key, label, control, hint) => {
    const hintId = `${prefix}-${key}-hint`;
    const errId = `${prefix}-${key}-error`;
    control.id = `${prefix}-${key}`;
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
  const labelOf = (key) => fields[key].control.closest('.field').querySelector('label').textContent;
  // showErrors puts each [key, message] at its field, lists them on top
  // and moves focus to the first field in error (or to the summary).
  const showErrors = (errs, general) => {
    const items = errs.map(([key, msg]) => {
      setError(key, msg);
      return h('li', null, h('a', { href: location.hash, dataset: { target: key }, onclick: (e) => { e.preventDefault(); fields[key].control.focus(); } }, `${labelOf(key)}: ${msg}`));
    });
    replace(summary,
      h('p', null, h('strong', null, general || (errs.length === 1 ? `The ${what} was not ${verb}: fix the field below.` : `The ${what} was not ${verb}: fix the ${errs.length} fields below.`))),
      items.length ? h('ul', null, items) : null);
    summary.classList.add('shown');
    if (errs.length) fields[errs[0][0]].control.focus();
    else summary.focus();
  };
  // showApiError sorts the API's errors: place(extensions, message) returns
  // [key, message] for one the form shows at a field, a sentence for one
  // that belongs in the summary, or nothing (the summary says what failed).
  const showApiError = (err, place) => {
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
      const placed = place(ext, msg);
      if (Array.isArray(placed) && fields[placed[0]]) errs.push(placed);
      else general = typeof placed === 'string' ? placed : `The ${what} was not ${verb}: ${describe(err)}`;
    }
    showErrors(errs, general);
  };
  return { fields, summary, field, setError, clearErrors, showErrors, showApiError };
}

// idempotencyKey is one key per form, so a double submit makes one thing.
export function idempotencyKey() {
  return crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2);
}
