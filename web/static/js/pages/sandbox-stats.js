// The sandbox page's CPU and memory plots, from Sandbox.stats: its whole
// life on opening, then the points since the newest one every REFRESH
// while the page is open and the sandbox has not ended. Hosts report every
// few seconds and the server writes the latest every 5 s
// (BC_SANDBOX_STATS_INTERVAL), so a modest refresh is as live as a
// subscription would be.
import { h, replace } from '../dom.js';
import { gql } from '../api.js';
import { linePlot } from '../plot.js';

const REFRESH = 5000;
const MAX_POINTS = 2000; // what the API keeps answering with

const QUERY = `query SandboxStats($id: ID!, $since: DateTime) { sandbox(id: $id) { stats(since: $since) { at cpu memoryMb } } }`;

// statsSection is a SECTIONS entry (see sandbox.js).
export function statsSection(page) {
  const { ctx } = page;
  const plots = h('div', { class: 'plots' });
  const status = h('p', { class: 'hint', role: 'status' });
  const el = h('section', { class: 'card', 'aria-labelledby': 'h-usage' },
    h('h2', { id: 'h-usage' }, 'CPU and memory'),
    h('p', { class: 'hint' }, `As its host reports them, every few seconds; refreshed every ${REFRESH / 1000} s while this page is open.`),
    status, plots);
  let points = [];
  let timer = 0;
  let busy = false;

  function render() {
    const cpu = points.filter((p) => p.cpu != null).map((p) => ({ t: Date.parse(p.at), v: p.cpu * 100 }));
    const mem = points.map((p) => ({ t: Date.parse(p.at), v: p.memoryMb }));
    replace(plots,
      linePlot(cpu, { id: 'plot-cpu', title: 'CPU use, % of its vCPUs', unit: '%', max: 100, empty: 'No CPU use reported yet.' }),
      linePlot(mem, { id: 'plot-memory', title: 'Memory held, MiB', unit: 'MiB', empty: 'No memory use reported yet.' }));
  }

  async function fetchPoints() {
    if (busy) return;
    busy = true;
    try {
      const since = points.length ? points[points.length - 1].at : null;
      const data = await gql(QUERY, { id: page.sbx.id, since }, { signal: ctx.signal });
      const seen = new Set(points.map((p) => p.at));
      const fresh = data.sandbox.stats.filter((p) => !seen.has(p.at));
      if (fresh.length || !points.length) {
        points = points.concat(fresh).slice(-MAX_POINTS);
        render();
      }
      replace(status);
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(status, `Could not load its CPU and memory use: ${err.message}`);
    } finally {
      busy = false;
    }
  }

  function schedule() {
    const ended = !!page.sbx.endedAt;
    if (ended && timer) {
      clearInterval(timer);
      timer = 0;
      fetchPoints(); // the last points before it ended
    } else if (!ended && !timer) {
      timer = setInterval(fetchPoints, REFRESH);
    }
  }

  ctx.onDispose(() => clearInterval(timer));
  ctx.onResync(fetchPoints);
  render();
  fetchPoints();
  return { el, update: schedule };
}
