// Small plots in SVG, framework-free. linePlot: a title, a y axis from 0 to
// its maximum with its unit, a time axis labelled with its first and last
// times, and a text alternative (the SVG's desc, and a summary beside it)
// saying what the line shows in words.
import { h, uid, fmtTime } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 320;
const H = 120;
const PAD = { left: 44, right: 8, top: 8, bottom: 22 };
// The plot area: x0..x1 left to right, y0 (the axis) up to y1.
const x0 = PAD.left;
const x1 = W - PAD.right;
const y0 = H - PAD.bottom;
const y1 = PAD.top;

// s makes an SVG element (h makes HTML ones).
function s(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, String(v));
  for (const c of children) if (c != null) el.append(c instanceof Node ? c : String(c));
  return el;
}

// clock labels the time axis: the time of day of fmtTime, whose zone the
// plot's summary gives.
const clock = (t) => fmtTime(t).split(' ')[1];

// frame is a plot's SVG: its title and description (for assistive
// technology), the axes, the top grid line, the y labels (zero and top),
// the x labels (first and last; either may be empty) and marks.
function frame({ title, summary, zero, top, first, last }, ...marks) {
  const titleId = uid('plot-title');
  const descId = uid('plot-desc');
  return s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plot', role: 'img', 'aria-labelledby': `${titleId} ${descId}` },
    s('title', { id: titleId }, title),
    s('desc', { id: descId }, summary),
    s('line', { x1: x0, y1: y0, x2: x1, y2: y0, class: 'plot-axis' }),
    s('line', { x1: x0, y1: y0, x2: x0, y2: y1, class: 'plot-axis' }),
    s('line', { x1: x0, y1: y1, x2: x1, y2: y1, class: 'plot-grid' }),
    s('text', { x: x0 - 4, y: y0, class: 'plot-label', 'text-anchor': 'end', 'dominant-baseline': 'middle' }, zero),
    s('text', { x: x0 - 4, y: y1 + 4, class: 'plot-label', 'text-anchor': 'end', 'dominant-baseline': 'middle' }, top),
    first ? s('text', { x: x0, y: H - 6, class: 'plot-label' }, first) : null,
    last ? s('text', { x: x1, y: H - 6, class: 'plot-label', 'text-anchor': 'end' }, last) : null,
    ...marks);
}

// linePlot draws points ([{t: ms, v: number}], oldest first) as a figure.
// opts: id, title, unit (after numbers), max (the y axis' top; default the
// largest value), fmt (a number as text), empty (what to say with no point).
export function linePlot(points, { id, title, unit, max, fmt = (v) => v.toFixed(0), empty = 'No points yet.' }) {
  const top = max ?? Math.max(1, ...points.map((p) => p.v)) * 1.1;
  let summary;
  if (!points.length) summary = empty;
  else {
    const vs = points.map((p) => p.v);
    const last = points[points.length - 1];
    summary = `${points.length} points from ${fmtTime(points[0].t)} to ${fmtTime(last.t)}: latest ${fmt(last.v)} ${unit}, lowest ${fmt(Math.min(...vs))} ${unit}, highest ${fmt(Math.max(...vs))} ${unit}.`;
  }
  const t0 = points[0]?.t ?? 0;
  const span = Math.max(1, (points[points.length - 1]?.t ?? 0) - t0);
  const x = (t) => (points.length === 1 ? x1 : x0 + ((t - t0) / span) * (x1 - x0));
  const y = (v) => y0 - (Math.min(v, top) / top) * (y0 - y1);
  const at = (p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`;
  const svg = frame({ title, summary, zero: `0 ${unit}`, top: `${fmt(top)} ${unit}`,
    first: points.length ? clock(points[0].t) : '', last: points.length > 1 ? clock(points[points.length - 1].t) : '' },
    points.length > 1 ? s('polyline', { points: points.map(at).join(' '), class: 'plot-line' }) : null,
    points.length ? s('circle', { cx: x(points[points.length - 1].t), cy: y(points[points.length - 1].v), r: 3, class: 'plot-dot' }) : null);
  return h('figure', { class: 'plot-figure', id, dataset: { points: String(points.length) } },
    h('figcaption', null, h('strong', null, title)),
    svg,
    h('p', { class: 'hint', 'aria-hidden': 'true' }, summary));
}

// barPlot draws values by day as bars, one stack per day with a segment
// per series (series: [{key, label}], values: {day: {key: number}}, days:
// the ISO days of the axis, oldest first). Each segment carries its day,
// series and exact value as data attributes and says them in its title,
// so hovering shows the number. opts: id, title, unit, fmt (a number as
// text), by (what the series are, plural: "tenants").
export function barPlot(days, series, values, { id, title, unit, fmt, by = 'series' }) {
  const totals = days.map((d) => series.reduce((a, s) => a + (values[d]?.[s.key] || 0), 0));
  const sum = totals.reduce((a, v) => a + v, 0);
  const top = Math.max(...totals, 0) || 1;
  const busiest = totals.indexOf(Math.max(...totals));
  const summary = sum
    ? `${fmt(sum)} ${unit} over ${days.length} days${series.length > 1 ? ` by ${series.length} ${by}` : ''}; the most on ${days[busiest]}: ${fmt(totals[busiest])} ${unit}.`
    : `None over these ${days.length} days.`;
  const slot = (x1 - x0) / Math.max(1, days.length);
  const bw = Math.max(1, slot * 0.7);
  const scale = (v) => (v / top) * (y0 - y1);
  const bars = [];
  days.forEach((d, i) => {
    let base = y0;
    series.forEach((ser, k) => {
      const v = values[d]?.[ser.key] || 0;
      if (!v) return;
      const hgt = scale(v);
      base -= hgt;
      bars.push(s('rect', {
        x: (x0 + i * slot + (slot - bw) / 2).toFixed(1), y: base.toFixed(1), width: bw.toFixed(1), height: Math.max(hgt, 0.5).toFixed(1),
        class: `plot-bar plot-series-${k % 6}`, 'data-day': d, 'data-series': ser.key, 'data-value': String(v),
      }, s('title', null, `${d}${series.length > 1 ? `, ${ser.label}` : ''}: ${fmt(v)} ${unit}`)));
    });
  });
  const svg = frame({ title, summary, zero: '0', top: fmt(top), first: days[0] || '', last: days.length > 1 ? days[days.length - 1] : '' }, ...bars);
  return h('figure', { class: 'plot-figure', id, dataset: { total: String(sum) } },
    h('figcaption', null, h('strong', null, title)),
    svg,
    series.length > 1 && h('ul', { class: 'plot-legend' }, series.map((ser, k) => h('li', { class: `plot-key plot-series-${k % 6}` }, ser.label))),
    h('p', { class: 'hint', 'aria-hidden': 'true' }, summary));
}
