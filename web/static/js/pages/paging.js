// Paging through a Relay connection with the cursor in the URL
// (…?after=CURSOR). The cursors of earlier pages are remembered in memory,
// per list and filter, for "Previous page".
import { h } from '../dom.js';

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
