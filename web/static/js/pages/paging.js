// Paging through a Relay connection with the cursor in the URL
// (…?after=CURSOR). The cursors of earlier pages are remembered in memory,
// per list and filter, for "Previous page".
import { h, replace } from '../dom.js';
import { gql } from '../api.js';
import { loading, failure } from '../ui.js';

const stacks = new Map();

// hrefWith returns base?query with the given changes (empty values dropped).
export function hrefWith(base, query, changes) {
  const q = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const s = q.toString();
  return s ? `${base}?${s}` : base;
}

// pageSize is the list's page size: ?size=N (1 to 100, the API's limit),
// else dflt.
export function pageSize(query, dflt = 20) {
  const n = Number.parseInt(query.get('size') || '', 10);
  return n >= 1 && n <= 100 ? n : dflt;
}

export function pager({ base, query, pageInfo, go, label }) {
  const after = query.get('after') || '';
  const key = hrefWith(base, query, { after: '' });
  const stack = stacks.get(key) || [];
  stacks.set(key, stack);
  const buttons = [];
  if (after && stack.length) {
    buttons.push(h('button', { type: 'button', class: 'btn', id: 'page-prev', onclick: () => go(hrefWith(base, query, { after: stack.pop() })) }, '← Previous page'));
  } else if (after) {
    buttons.push(h('button', { type: 'button', class: 'btn', id: 'page-first', onclick: () => go(hrefWith(base, query, { after: '' })) }, '← First page'));
  }
  if (pageInfo.hasNextPage && pageInfo.endCursor) {
    buttons.push(h('button', {
      type: 'button', class: 'btn', id: 'page-next',
      onclick: () => { stack.push(after); go(hrefWith(base, query, { after: pageInfo.endCursor })); },
    }, 'Next page →'));
  }
  if (!buttons.length) return null;
  return h('nav', { class: 'pager', 'aria-label': label || 'Pages' }, buttons);
}

// listLoader reads a list page (query with vars) into render, and reads it
// again quietly when asked (schedule) or after a resync, one read at a
// time: a read asked during another runs after it. A quiet read that fails
// keeps what was shown. name names the list in messages and to
// ctx.markUsable.
export function listLoader(ctx, { name, query, vars, body, summary, render }) {
  const { main } = ctx;
  let loaded = null;
  let reloadTimer = 0;
  let inflight = false;

  async function load(quiet) {
    if (inflight) { schedule(); return; }
    inflight = true;
    if (!quiet) main.setAttribute('aria-busy', 'true');
    try {
      const data = await gql(query, vars, { signal: ctx.signal });
      loaded = data;
      render(data);
      ctx.markUsable(name);
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (!quiet || !loaded) replace(body, failure(name, err, () => { replace(body, loading(name)); load(false); }));
      else replace(summary, 'Could not refresh the list; showing what was loaded before.');
    } finally {
      inflight = false;
      main.removeAttribute('aria-busy');
    }
  }

  function schedule() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => load(true), 400);
  }
  ctx.onDispose(() => clearTimeout(reloadTimer));
  ctx.onResync(() => load(true));
  return { load, schedule };
}
