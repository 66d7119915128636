// The sandbox page's event history: every step of its life read from
// Sandbox.events (oldest first, kept after it ended), then kept live from
// the sandboxEvents subscription, ordered and deduplicated by version.
import { h, replace, time } from '../dom.js';
import { gql } from '../api.js';
import { tag } from '../ui.js';

const PAGE = `query SandboxEvents($id: ID!, $after: String) { sandbox(id: $id) {
  events(first: 100, after: $after) { nodes { type version reason at } pageInfo { hasNextPage endCursor } } } }`;

const TONE = { STARTED: 'ok', RESUMED: 'ok', PAUSED: 'warn', FAILED: 'bad', EXPIRED: 'idle', DELETED: 'idle' };

// historySection is a SECTIONS entry (see sandbox.js).
export function historySection(page) {
  const { ctx } = page;
  const list = h('ol', { class: 'history', id: 'sandbox-history', 'aria-live': 'polite' });
  const status = h('p', { class: 'hint' }, 'Loading its events…');
  const el = h('section', { class: 'card', 'aria-labelledby': 'h-history' }, h('h2', { id: 'h-history' }, 'History'), status, list);
  const byVersion = new Map();

  function add(ev) {
    if (!byVersion.has(ev.version)) byVersion.set(ev.version, ev);
  }

  function render() {
    const evs = [...byVersion.values()].sort((a, b) => a.version - b.version);
    replace(status, evs.length ? '' : 'No events yet.');
    status.hidden = evs.length > 0;
    replace(list, evs.map((ev) => h('li', { dataset: { type: ev.type, version: String(ev.version) } },
      tag(ev.type, TONE[ev.type] || 'busy'), ' ', time(ev.at),
      ev.reason && h('span', { class: 'muted' }, ` — ${ev.reason}`))));
  }

  async function load() {
    try {
      let after = null;
      for (;;) {
        const data = await gql(PAGE, { id: page.sbx.id, after }, { signal: ctx.signal });
        const conn = data.sandbox.events;
        conn.nodes.forEach(add);
        if (!conn.pageInfo.hasNextPage) break;
        after = conn.pageInfo.endCursor;
      }
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(status, `Could not load its events: ${err.message}`);
      status.hidden = false;
    }
  }

  ctx.watchSandboxes((ev) => {
    if (ev.sandbox.id !== page.sbx?.id) return;
    add(ev);
    render();
  });
  ctx.onResync(load);
  load();
  return { el, update() {} };
}
