// Pieces every page uses: state badges, loading/empty/error states, tables
// that turn into cards on a narrow screen, usage bars and the confirmation
// dialog.
import { h, replace, uid, duration, fmtTime } from './dom.js';
import { describe } from './api.js';

const TONE = {
  RUNNING: 'ok',
  STOPPED: 'idle',
  PAUSED: 'warn',
  PENDING: 'busy',
  PROVISIONING: 'busy',
  STARTING: 'busy',
  STOPPING: 'busy',
  REBOOTING: 'busy',
  DELETING: 'busy',
  DELETED: 'gone',
  ERROR: 'bad',
  LOST: 'bad',
  EXPIRED: 'gone',
};

// STATES are an instance's states.
export const STATES = ['RUNNING', 'STOPPED', 'PAUSED', 'PENDING', 'PROVISIONING', 'STARTING', 'STOPPING', 'REBOOTING', 'DELETING', 'DELETED', 'ERROR', 'LOST'];

// SANDBOX_STATES are a sandbox's.
export const SANDBOX_STATES = ['STARTING', 'RUNNING', 'PAUSED', 'ERROR', 'LOST', 'EXPIRED', 'DELETED'];

// badge shows an instance's or a sandbox's state.
export function badge(state, extra = {}) {
  return h('span', { class: `badge tone-${TONE[state] || 'idle'}`, dataset: { state }, ...extra }, state);
}

// tag is a small label with a tone: ok, bad, warn, idle, busy.
export function tag(text, tone = 'idle') {
  return h('span', { class: `badge tone-${tone}` }, text);
}

export function loading(what) {
  return h('p', { class: 'state state-loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), `Loading ${what}…`);
}

// failure shows an error with a way to try again.
export function failure(what, err, retry) {
  return h('div', { class: 'state state-error', role: 'alert' },
    h('p', null, h('strong', null, `Could not load ${what}. `), describe(err)),
    retry && h('button', { type: 'button', class: 'btn', onclick: retry }, 'Try again'));
}

export function empty(title, ...body) {
  return h('div', { class: 'state state-empty' }, h('p', { class: 'state-title' }, title), ...body);
}

// pageHead is a page's heading, focusable so navigation can move focus to it.
export function pageHead(title, ...after) {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, title), ...after);
}

// table renders rows; each cell carries its column's label for the
// narrow-screen layout. columns: [{label, cell(row), class}].
export function table(columns, rows, { caption, rowProps } = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'table' },
      caption && h('caption', { class: 'sr-only' }, caption),
      h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col', class: c.class }, c.label)))),
      h('tbody', null, rows.map((r) => h('tr', rowProps ? rowProps(r) : null,
        columns.map((c) => h('td', { class: c.class, 'data-label': c.label }, c.cell(r))))))));
}

// bar shows used of total as a meter with its numbers beside it; name is
// its accessible name when the visible label is short.
export function bar(label, used, total, fmt = String, name = label) {
  const known = total != null && total > 0;
  const pct = known ? Math.min(100, Math.round((used / total) * 100)) : 0;
  const fill = h('span', { class: 'bar-fill' });
  fill.style.width = `${pct}%`; // CSSOM: allowed under the style-src policy
  const tone = !known ? 'none' : pct >= 90 ? 'bad' : pct >= 70 ? 'warn' : 'ok';
  const text = known ? `${fmt(used)} of ${fmt(total)}` : total === 0 ? `${fmt(used)} of 0` : `${fmt(used)} (no limit)`;
  return h('div', { class: 'bar-row' },
    h('span', { class: 'bar-label' }, label),
    h('span', {
      class: `bar tone-${tone}`, role: 'meter', 'aria-label': name, 'aria-valuemin': '0',
      'aria-valuemax': known ? String(total) : null, 'aria-valuenow': String(used), 'aria-valuetext': text,
    }, fill),
    h('span', { class: 'bar-text' }, text, known ? ` (${pct}%)` : ''));
}

// confirm asks with a modal dialog; it resolves true when confirmed.
export function confirm({ title, body, ok, danger }) {
  return new Promise((resolve) => {
    const titleId = uid('dlg-title');
    const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, id: 'confirm-dialog' },
      h('form', { method: 'dialog' },
        h('h2', { id: titleId }, title),
        h('p', null, body),
        h('div', { class: 'actions' },
          h('button', { type: 'submit', value: 'cancel', class: 'btn', id: 'confirm-cancel', autofocus: true }, 'Cancel'),
          h('button', { type: 'submit', value: 'ok', class: `btn ${danger ? 'btn-danger' : 'btn-primary'}`, id: 'confirm-ok' }, ok))));
    const opener = document.activeElement;
    dlg.addEventListener('close', () => {
      resolve(dlg.returnValue === 'ok');
      dlg.remove();
      if (opener && opener.isConnected) opener.focus();
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// showOnce shows secrets the API returns once (a join token, a command
// holding it) in a modal dialog, each read-only with a copy button. They
// live only in the dialog: closing it removes it, and nothing else keeps
// them. It resolves when closed; close() closes it from outside (the page
// is left).
export function showOnce({ title, body, values }) {
  let close = () => {};
  const done = new Promise((resolve) => {
    const titleId = uid('dlg-title');
    const rows = values.map(({ label, value, id }) => {
      const field = h('input', { type: 'text', readonly: true, class: 'mono secret', id, value, spellcheck: 'false', 'aria-label': label });
      const copy = h('button', { type: 'button', class: 'btn btn-small', id: `${id}-copy` }, 'Copy');
      copy.addEventListener('click', async () => {
        field.focus();
        field.select();
        let copied = false;
        try {
          await navigator.clipboard.writeText(field.value);
          copied = true;
        } catch {
          try {
            copied = document.execCommand('copy');
          } catch {
            copied = false;
          }
        }
        // Not copied: it is selected, for the user to copy.
        copy.dataset.copied = copied ? 'true' : 'selected';
        replace(copy, copied ? 'Copied' : 'Press Ctrl+C');
      });
      return h('div', { class: 'field' }, h('label', { for: id }, label), h('div', { class: 'copy-row' }, field, copy));
    });
    const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, id: 'once-dialog' },
      h('form', { method: 'dialog' },
        h('h2', { id: titleId }, title),
        h('p', null, body),
        rows,
        h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'btn btn-primary', id: 'once-done' }, 'Done'))));
    const opener = document.activeElement;
    dlg.addEventListener('close', () => {
      dlg.querySelectorAll('input').forEach((i) => { i.value = ''; i.removeAttribute('value'); });
      dlg.remove();
      if (opener && opener.isConnected) opener.focus();
      resolve();
    });
    close = () => { if (dlg.open) dlg.close(); };
    document.body.append(dlg);
    dlg.showModal();
  });
  return { done, close: () => close() };
}

// alertBox is a region for errors of an action, announced when filled.
export function alertBox() {
  const el = h('div', { class: 'alert', role: 'alert' });
  return {
    el,
    show(msg) { replace(el, msg); el.classList.add('shown'); },
    clear() { replace(el); el.classList.remove('shown'); },
  };
}

// timeLeft shows the time until expiresAt, counting down as
// tickTimeLeft updates it; ended (a time) stops it.
export function timeLeft(expiresAt, ended) {
  const el = h('time', { class: 'time-left', datetime: new Date(expiresAt).toISOString(), title: `Expires at ${fmtTime(expiresAt)}` });
  if (ended) el.dataset.ended = 'true';
  tick(el, Date.now());
  return el;
}

function tick(el, now) {
  if (el.dataset.ended) {
    el.textContent = '—';
    return;
  }
  const ms = new Date(el.getAttribute('datetime')).getTime() - now;
  el.dataset.left = String(Math.max(0, Math.floor(ms / 1000)));
  el.textContent = ms > 0 ? duration(ms) : 'due now';
  el.classList.toggle('time-short', ms < 60000);
}

// tickTimeLeft counts down every timeLeft in root once a second, with the
// browser's clock, until the returned function is called.
export function tickTimeLeft(root) {
  const every = setInterval(() => {
    const now = Date.now();
    root.querySelectorAll('.time-left').forEach((el) => tick(el, now));
  }, 1000);
  return () => clearInterval(every);
}

// dl renders pairs as a description list.
export function dl(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}
