// What the sandbox pages share: the fields they read, a sandbox's state
// kept live from its instance's events, and how metadata is shown.
import { h } from './dom.js';
import { badge, tag } from './ui.js';

// INSTANCE is what the store keeps of an instance (store.js).
const INSTANCE = 'id name state desiredState stateReason addresses version updatedAt';

// FIELDS are a sandbox's fields every page reads.
export const FIELDS = `id state startedFrom templateVersion metadata expiresAt endedAt createdAt updatedAt version
  template { id name defaultTimeout maxTimeout } fromSnapshot { id name } instance { ${INSTANCE} }`;

// sandboxState is a sandbox's state made of its instance's, as the
// database's sandbox_state makes it: a claimed warm instance still paused
// is resuming (STARTING), one pausing is RUNNING until it is PAUSED. An
// ended sandbox keeps the state it ended with.
export function sandboxState(sbx, inst) {
  if (sbx.endedAt) return sbx.state;
  switch (inst.state) {
    case 'RUNNING':
    case 'REBOOTING':
      return 'RUNNING';
    case 'PAUSED':
      return inst.desiredState === 'PAUSED' ? 'PAUSED' : 'STARTING';
    case 'DELETING':
    case 'DELETED':
      return 'DELETED';
    case 'ERROR':
    case 'LOST':
      return inst.state;
    default:
      return 'STARTING';
  }
}

// live returns sbx with its instance as the store knows it (when newer)
// and the state that makes; it records a newer instance in the store.
export function live(sbx, store) {
  store.merge(sbx.instance);
  const inst = store.latest(sbx.instance);
  return { ...sbx, instance: inst, state: sandboxState(sbx, inst) };
}

// settling says where a live sandbox is going when its instance is not
// there yet: pausing, resuming, deleting.
export function settling(sbx) {
  if (sbx.endedAt) return '';
  const want = { RUNNING: 'RUNNING', PAUSED: 'PAUSED', DELETED: 'DELETED' }[sbx.instance.desiredState];
  return want && want !== sbx.state ? want : '';
}

// stateCell is a sandbox's badge with where it is going.
export function stateCell(sbx, extra = {}) {
  const to = settling(sbx);
  return h('span', { class: 'state-cell', ...extra },
    badge(sbx.state, { title: sbx.instance.stateReason || null }),
    to && h('span', { class: 'desired' }, `→ ${to}`));
}

export function startedTag(from) {
  return tag(from, from === 'WARM' ? 'ok' : 'idle');
}

// metadataList shows a map of strings as key = value lines.
export function metadataList(md) {
  const entries = Object.entries(md || {});
  if (!entries.length) return h('span', { class: 'muted' }, 'none');
  return h('ul', { class: 'plain mono small' }, entries.map(([k, v]) => h('li', null, `${k} = ${v}`)));
}

// seconds shows a number of seconds in the largest unit that divides it.
export function seconds(n) {
  if (n % 3600 === 0) return `${n / 3600} h`;
  if (n % 60 === 0) return `${n / 60} min`;
  return `${n} s`;
}
