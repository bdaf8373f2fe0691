// Small time-series charts drawn as SVG (no library), and the ring buffer that feeds them.

const SVG = 'http://www.w3.org/2000/svg';
/** The drawing's own units; the SVG scales to its box (strokes keep their width, see monitor.css). */
export const W = 300;
export const H = 64;
/** At most this many points per line: longer windows are averaged into buckets. */
const MAX_POINTS = 300;
/** A pause longer than this between two samples breaks the line (a lost connection). */
const GAP_MS = 10_000;
/** The shortest span drawn while a watch is young. */
const MIN_SPAN_MS = 10_000;

/** A fixed-size buffer that drops the oldest item when full. @template T */
export class Ring {
  /** @param {number} capacity */
  constructor(capacity) {
    this.capacity = capacity;
    /** @type {T[]} */
    this.buf = [];
    this.start = 0;
  }

  /** @param {T} item */
  push(item) {
    if (this.buf.length < this.capacity) this.buf.push(item);
    else {
      this.buf[this.start] = item;
      this.start = (this.start + 1) % this.capacity;
    }
  }

  get length() {
    return this.buf.length;
  }

  /** Oldest first. @returns {T[]} */
  items() {
    return this.start === 0 ? this.buf.slice() : this.buf.slice(this.start).concat(this.buf.slice(0, this.start));
  }

  /** @returns {T | undefined} */
  last() {
    if (!this.buf.length) return undefined;
    return this.buf[(this.start + this.buf.length - 1) % this.buf.length];
  }
}

/**
 * @param {string} tag @param {Record<string, string | number>} [attrs]
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  return n;
}

/** @typedef {{ t: number, v: number | null }} Point */

/** Average into at most MAX_POINTS buckets (a null counts as a gap only when a whole bucket is null). @param {Point[]} pts */
function bucket(pts) {
  if (pts.length <= MAX_POINTS) return pts;
  const step = Math.ceil(pts.length / MAX_POINTS);
  /** @type {Point[]} */
  const out = [];
  for (let i = 0; i < pts.length; i += step) {
    const group = pts.slice(i, i + step);
    const vals = group.map((p) => p.v).filter((v) => v !== null);
    out.push({
      t: group[group.length - 1].t,
      v: vals.length ? vals.reduce((a, b) => a + /** @type {number} */ (b), 0) / vals.length : null,
    });
  }
  return out;
}

/**
 * The path of `pts` over the last `windowMs` before the newest point, scaled to 0..max. Until the
 * window is full the chart spans the data it has (30 s at least), so a new watch is not a sliver at
 * the right edge. Returns the line, the area under it, the span drawn and how many points it holds.
 * @param {Point[]} all @param {number} windowMs @param {number} max
 */
export function linePath(all, windowMs, max) {
  if (!all.length) return { line: '', area: '', spanMs: 0, count: 0 };
  const newest = all[all.length - 1].t;
  const inWindow = all.filter((p) => p.t >= newest - windowMs);
  const spanMs = Math.min(windowMs, Math.max(MIN_SPAN_MS, newest - inWindow[0].t));
  const pts = bucket(inWindow);
  const x = (/** @type {number} */ t) => W - ((newest - t) / spanMs) * W;
  const y = (/** @type {number} */ v) => H - (Math.max(0, Math.min(v, max)) / max) * (H - 2) - 1;
  let line = '';
  let area = '';
  /** @type {{ x: number, y: number }[]} */
  let run = [];
  const flush = () => {
    if (!run.length) return;
    line += run.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('');
    const first = run[0];
    const lastP = run[run.length - 1];
    area +=
      `M${first.x.toFixed(1)},${H}` +
      run.map((p) => `L${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('') +
      `L${lastP.x.toFixed(1)},${H}Z`;
    run = [];
  };
  let prevT = -Infinity;
  for (const p of pts) {
    if (p.v === null || p.t - prevT > GAP_MS) flush();
    if (p.v !== null) run.push({ x: x(p.t), y: y(p.v) });
    prevT = p.t;
  }
  // A single point is drawn as a short flat line so it is visible.
  if (run.length === 1) run.unshift({ x: run[0].x - 2, y: run[0].y });
  flush();
  return { line, area, spanMs, count: inWindow.length };
}

/**
 * One chart drawn again in place: grid lines at 25 % steps, the area and the line; `draw` sets
 * the paths (and `data-points`, `data-span-ms`) of the same nodes and returns the span drawn.
 * @param {string} metric
 * @returns {{ node: SVGElement, draw: (pts: Point[], windowMs: number, max: number) => number }}
 */
export function liveChart(metric) {
  const root = svg('svg', {
    class: 'chart',
    viewBox: `0 0 ${W} ${H}`,
    preserveAspectRatio: 'none',
    'data-metric': metric,
    role: 'img',
  });
  for (const f of [0.25, 0.5, 0.75])
    root.append(svg('line', { class: 'grid', x1: 0, x2: W, y1: (H * f).toFixed(1), y2: (H * f).toFixed(1) }));
  const areaPath = svg('path', { class: 'area', d: '' });
  const lineNode = svg('path', { class: 'line', d: '' });
  root.append(areaPath, lineNode);
  /** @param {Point[]} pts @param {number} windowMs @param {number} max */
  const draw = (pts, windowMs, max) => {
    const { line, area, spanMs, count } = linePath(pts, windowMs, max);
    root.setAttribute('data-points', String(count));
    root.setAttribute('data-span-ms', String(Math.round(spanMs)));
    areaPath.setAttribute('d', area);
    lineNode.setAttribute('d', line);
    return spanMs;
  };
  return { node: root, draw };
}

/**
 * One chart, drawn once (see `liveChart`).
 * @param {string} metric @param {Point[]} pts @param {number} windowMs @param {number} max
 */
export function chart(metric, pts, windowMs, max) {
  const c = liveChart(metric);
  c.draw(pts, windowMs, max);
  return c.node;
}
