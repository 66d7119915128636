// Small DOM helpers. Everything is built with createElement and text nodes,
// never from HTML strings, so nothing the API returns is parsed as markup.

// h(tag, props, ...children) makes an element. Props: class, dataset,
// on<event> handlers, the properties value/checked/disabled/selected, and
// any other key as an attribute (true: present, false/null: absent).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'selected') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

const pad = (n) => String(n).padStart(2, '0');

// zone names the browser's offset from UTC at d: "UTC", "UTC+01:00".
export function zone(d) {
  const off = -d.getTimezoneOffset();
  if (!off) return 'UTC';
  const a = Math.abs(off);
  return `UTC${off < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

// fmtTime shows a timestamp in the browser's time zone, to the second,
// with the zone: the one format every timestamp of the console has
// ("2026-12-03 01:49:44 UTC+01:00").
export function fmtTime(v) {
  if (!v) return '—';
  const d = v instanceof Date ? v : new Date(v);
  if (isNaN(d)) return String(v);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zone(d)}`;
}

// ago says how long ago a timestamp was, roughly.
export function ago(v, now = Date.now()) {
  if (!v) return 'never';
  const s = Math.round((now - new Date(v).getTime()) / 1000);
  if (s < 2) return 'just now';
  if (s < 90) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min ago`;
  const hr = Math.round(m / 60);
  if (hr < 36) return `${hr} h ago`;
  return `${Math.round(hr / 24)} days ago`;
}

// time is a <time> element showing v, with the exact moment as its title.
export function time(v, relative = false) {
  if (!v) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: new Date(v).toISOString(), title: fmtTime(v) }, relative ? ago(v) : fmtTime(v));
}

// duration shows milliseconds as minutes and seconds (hours and minutes
// past an hour): "4 min 05 s", "58 s", "1 h 20 min".
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${pad(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${pad(m % 60)} min`;
}

export function mib(n) {
  if (n == null) return '—';
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} GiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} GiB`;
  return `${n} MiB`;
}

export function plural(n, one, many = one + 's') {
  return `${n} ${n === 1 ? one : many}`;
}

let seq = 0;
// uid returns an id unique within the page, for label/aria wiring.
export function uid(prefix) {
  seq += 1;
  return `${prefix}-${seq}`;
}
