// The live state of instances, kept from events and query results, ordered
// and deduplicated by each instance's version.

const LIVE_FIELDS = ['id', 'name', 'state', 'desiredState', 'stateReason', 'addresses', 'hostCertified', 'hostCertValidBefore', 'version', 'updatedAt'];

export class Store {
  constructor() {
    this.byId = new Map();
    this.listeners = new Set();
  }

  get(id) {
    return this.byId.get(id);
  }

  // latest returns inst with the live fields of what the store knows, when
  // that is newer.
  latest(inst) {
    const cur = this.byId.get(inst.id);
    if (!cur || cur.version <= inst.version) return inst;
    return { ...inst, ...cur };
  }

  // apply takes an instanceEvents event; it returns false for one already
  // seen (same or older version).
  apply(ev) {
    const inst = ev.instance;
    const cur = this.byId.get(inst.id);
    if (cur && cur.version >= ev.version) return false;
    const next = pick({ ...inst, version: ev.version });
    this.byId.set(inst.id, next);
    const change = { type: ev.type, snapshot: ev.snapshot, instance: next, known: !!cur, at: new Date() };
    this.listeners.forEach((fn) => fn(change));
    return true;
  }

  // merge records an instance read by a query or returned by a mutation.
  merge(inst) {
    if (!inst?.id || inst.version == null) return;
    const cur = this.byId.get(inst.id);
    if (cur && cur.version >= inst.version) return;
    const next = pick({ ...(cur || {}), ...inst });
    this.byId.set(inst.id, next);
    const change = { type: 'UPDATED', snapshot: false, instance: next, known: !!cur, at: new Date(), local: true };
    this.listeners.forEach((fn) => fn(change));
  }

  // values returns every instance the store knows.
  values() {
    return [...this.byId.values()];
  }

  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  clear() {
    this.byId.clear();
  }
}

function pick(o) {
  const out = {};
  for (const k of LIVE_FIELDS) if (k in o) out[k] = o[k];
  return out;
}
