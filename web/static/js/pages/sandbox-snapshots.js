// The sandbox page's snapshots: a form to take one (a name), and the
// sandbox's snapshots with their state, size and sha256, each of which can
// be deleted or restored into a new sandbox. Snapshots are on no
// subscription: the list is read again whenever the sandbox's events
// arrive, and every 2 s while any snapshot is PENDING.
import { h, replace, time } from '../dom.js';
import { gql } from '../api.js';
import { tag, confirm } from '../ui.js';
import { formKit } from './form.js';

const FIELDS = 'id name state stateReason sizeBytes sha256 createdAt settledAt';
const LIST = `query Snapshots($id: ID!) { sandboxSnapshots(first: 100, filter: {sandboxId: $id}) { nodes { ${FIELDS} } } }`;
const TONE = { PENDING: 'busy', READY: 'ok', FAILED: 'bad' };
const POLL_MS = 2000;

// bytes shows a size in bytes the short way.
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

// snapshotsSection is a SECTIONS entry (see sandbox.js).
export function snapshotsSection(page) {
  const { ctx } = page;
  const form = formKit('snapshot', 'take');
  // The hyphen is escaped: browsers compile pattern with the v flag, under
  // which a bare one in a class is invalid and the pattern ignored.
  const input = h('input', { type: 'text', name: 'name', required: true, autocomplete: 'off', pattern: '[a-z0-9]([a-z0-9\\-]{0,61}[a-z0-9])?' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'snapshot-submit' }, 'Take snapshot');
  const fields = h('form', { class: 'form', id: 'snapshot-form', novalidate: true },
    form.summary,
    form.field('name', 'Name', input, 'Lowercase letters, digits and hyphens; the disk is taken without stopping the sandbox.'),
    h('div', { class: 'actions' }, submit));
  const status = h('p', { class: 'hint', 'aria-live': 'polite' });
  const list = h('ul', { class: 'history', id: 'sandbox-snapshots', 'aria-live': 'polite' });
  const el = h('section', { class: 'card', 'aria-labelledby': 'h-snapshots' }, h('h2', { id: 'h-snapshots' }, 'Snapshots'), fields, status, list);
  let timer = null;

  async function load() {
    clearTimeout(timer);
    try {
      const data = await gql(LIST, { id: page.sbx.id }, { signal: ctx.signal });
      render(data.sandboxSnapshots.nodes);
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(status, `Could not load its snapshots: ${err.message}`);
    }
  }

  function render(snaps) {
    replace(status, snaps.length ? '' : 'No snapshots yet.');
    replace(list, snaps.map(item));
    if (snaps.some((s) => s.state === 'PENDING') && !ctx.signal.aborted) timer = setTimeout(load, POLL_MS);
  }

  function item(s) {
    const restore = h('button', { type: 'button', class: 'btn', id: `snapshot-restore-${s.id}`, disabled: s.state !== 'READY' }, 'Create sandbox from it');
    const del = h('button', { type: 'button', class: 'btn btn-danger', id: `snapshot-delete-${s.id}` }, 'Delete');
    restore.addEventListener('click', () => act(restore, 'Creating…', async () => {
      const data = await gql(`mutation Restore($s: ID!) { createSandbox(input: {fromSnapshot: $s}) { sandbox { id } } }`, { s: s.id }, { signal: ctx.signal });
      ctx.go(`#/sandboxes/${encodeURIComponent(data.createSandbox.sandbox.id)}`);
    }));
    del.addEventListener('click', async () => {
      if (!await confirm({ title: `Delete snapshot ${s.name}?`, ok: 'Delete snapshot', danger: true,
        body: 'Its files are purged from its host; sandboxes made from it live on. This cannot be undone.' })) return;
      act(del, 'Deleting…', async () => {
        await gql(`mutation Del($id: ID!) { deleteSandboxSnapshot(input: {id: $id}) { sandboxSnapshot { id } } }`, { id: s.id }, { signal: ctx.signal });
        await load();
      });
    });
    return h('li', { dataset: { id: s.id, state: s.state } },
      h('strong', null, s.name), ' ', tag(s.state, TONE[s.state]), ' ',
      s.state === 'READY' && h('span', { class: 'muted' },
        h('span', { class: 'snapshot-size', title: `${s.sizeBytes} bytes` }, bytes(s.sizeBytes)), ' · sha256 ',
        h('span', { class: 'mono snapshot-sha256', title: s.sha256 }, `${s.sha256.slice(0, 12)}…`), ' · '),
      s.stateReason && h('span', { class: 'muted' }, `${s.stateReason} · `),
      time(s.createdAt), ' ', restore, ' ', del);
  }

  async function act(button, busy, run) {
    const label = button.textContent;
    button.disabled = true;
    button.textContent = busy;
    try {
      await run();
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(status, err.message);
    } finally {
      button.disabled = false;
      button.textContent = label;
    }
  }

  fields.addEventListener('submit', async (e) => {
    e.preventDefault();
    form.clearErrors();
    const name = input.value.trim();
    if (!input.checkValidity()) {
      form.showErrors([['name', 'enter 1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit.']]);
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Taking…';
    try {
      await gql(`mutation Snap($s: ID!, $n: String!) { createSandboxSnapshot(input: {sandboxId: $s, name: $n}) { sandboxSnapshot { id } } }`,
        { s: page.sbx.id, n: name }, { signal: ctx.signal });
      input.value = '';
      await load();
    } catch (err) {
      if (err.name === 'AbortError') return;
      form.showApiError(err, (ext, msg) => (ext.field === 'name' ? ['name', msg] : null));
    } finally {
      submit.disabled = false;
      submit.textContent = 'Take snapshot';
    }
  });

  ctx.watchSandboxes((ev) => { if (ev.sandbox.id === page.sbx?.id) load(); });
  ctx.onResync(load);
  ctx.onDispose(() => clearTimeout(timer));
  load();
  return {
    el,
    update() { fields.hidden = page.sbx.state !== 'RUNNING'; },
  };
}
