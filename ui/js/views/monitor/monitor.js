// Step 6, Monitor: live telemetry of saved hosts side by side (one column each), per GPU charts
// of the last 10 or 60 minutes (utilisation, VRAM, power, temperature) with the current values,
// the processes on each GPU, the host's CPU per core and RAM, throttle reasons, and the hints with
// their evidence and next steps. The Run tab (run.js) starts Ollama, Jupyter and launches.
//
// Streams outlive the screen: each watch is an operation in ops.js and its samples go into the
// ring buffers below (module state), so looking at another step keeps the history. A watch stops
// when its host is unticked or Stop is pressed (ops.cancel → op_cancel).
import { liveHosts } from '../../api.js';
import { monitorFeed, monitorWatch } from '../../api-run.js';
import { hideError, showError } from '../../banner.js';
import { Ring, liveChart, svg } from '../../chart.js';
import { clear, el } from '../../dom.js';
import { errorText, num, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { listen, paced, redraws } from '../../screen.js';
import { renderRun } from './run.js';

/** @typedef {import('../../../bindings/WatchSample').WatchSample} WatchSample */
/** @typedef {import('../../../bindings/TelemetryEvent').TelemetryEvent} TelemetryEvent */
/** @typedef {import('../../../bindings/GpuRow').GpuRow} GpuRow */
/** @typedef {import('../../../bindings/HostSample').HostSample} HostSample */
/** @typedef {import('../../../bindings/Hint').Hint} Hint */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {{ t: number, util: number | null, mem: number | null, power: number | null, temp: number | null }} GpuPoint */

/** 60 minutes at the default 1 Hz, and a little more. */
const CAPACITY = 3700;
const WINDOWS = { 10: 10 * 60_000, 60: 60 * 60_000 };

/**
 * What is known about one host: its history per GPU (by index), the latest sample and news.
 * @typedef {object} HostData
 * @property {Map<number, Ring<GpuPoint>>} rings
 * @property {WatchSample | null} sample
 * @property {TelemetryEvent | null} status
 * @property {ErrorPayload | null} error
 * @property {Set<() => void>} listeners
 */

/** @type {Map<string, HostData>} */
const hosts = new Map();

const view = {
  /** @type {'live' | 'run'} */
  tab: 'live',
  /** @type {10 | 60} */
  window: 10,
  /** The hosts ticked (each has a column; its watch may have been stopped). @type {Set<string>} */
  picked: new Set(),
};

/** @param {string} label @returns {HostData} */
function data(label) {
  let d = hosts.get(label);
  if (!d) {
    d = { rings: new Map(), sample: null, status: null, error: null, listeners: new Set() };
    hosts.set(label, d);
  }
  return d;
}

/** The GPUs last seen on a host (for choosing GPUs by UUID in the Run tab). @param {string} label @returns {GpuRow[]} */
export const knownGpus = (label) => hosts.get(label)?.sample?.gpus ?? [];

const watching = (/** @type {string} */ label) => ops.running('watch', label)[0];

/** @param {HostData} d */
const notify = (d) => {
  for (const l of d.listeners) l();
};

/** One sample into its host's history (drawn by whoever listens). @param {HostData} d @param {WatchSample} s */
function take(d, s) {
  for (const g of s.gpus) {
    const i = g.index ?? 0;
    let r = d.rings.get(i);
    if (!r) {
      r = new Ring(CAPACITY);
      d.rings.set(i, r);
    }
    const mem =
      g.memory_used_mib !== null && g.memory_total_mib ? (100 * g.memory_used_mib) / g.memory_total_mib : null;
    r.push({ t: s.at_ms, util: g.util_gpu_pct, mem, power: g.power_draw_w, temp: g.temperature_c });
  }
  d.sample = s;
}

/** @type {Promise<unknown> | null} */
let feed = null;

/**
 * The one feed for every watch (`monitor_feed`), asked for once: a second's samples of all hosts
 * come in one message (one script evaluation in the WebView, not one per host), each host's
 * listeners told once. A host no longer watched (unticked) is skipped. Until the feed is set (or
 * where it fails) the samples come on each watch's own channel.
 */
function ensureFeed() {
  feed ??= monitorFeed((samples) => {
    /** @type {Set<HostData>} */
    const touched = new Set();
    for (const s of samples) {
      const d = hosts.get(s.host);
      if (!d) continue;
      take(d, s);
      touched.add(d);
    }
    for (const d of touched) notify(d);
  }).catch(() => {
    feed = null;
  });
}

/** @param {string} label */
function startWatch(label) {
  if (watching(label)) return;
  ensureFeed();
  const d = data(label);
  d.error = null;
  d.status = null;
  const { result } = ops.start('watch', label, {}, (on) =>
    monitorWatch(
      label,
      null,
      on,
      (s) => {
        take(d, s);
        notify(d);
      },
      (e) => {
        d.status = e;
        notify(d);
      },
    ),
  );
  result
    .catch((e) => {
      d.error = /** @type {ErrorPayload} */ (e);
    })
    .finally(() => notify(d));
}

/** @param {string} label */
function stopWatch(label) {
  const op = watching(label);
  if (op) ops.cancel(op);
}

/** @param {number | null | undefined} v @param {number} [digits] */
const n = (v, digits = 0) => (v === null || v === undefined ? '—' : num(v, digits));

/** Evidence numbers as the sentence shows them. @param {Record<string, number>} params */
function fmtParams(params) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const [k, v] of Object.entries(params)) out[k] = num(v, Math.abs(v) < 10 && !Number.isInteger(v) ? 1 : 0);
  return out;
}

/** @param {Hint} h */
function hintCard(h) {
  const card = el('div', { class: 'hint', 'data-kind': h.kind, 'data-gpu': h.gpu === null ? '' : String(h.gpu) });
  card.append(
    el(
      'div',
      { class: 'hint-head' },
      el('strong', { text: h.gpu === null ? t(h.key) : `${t('monitor.gpu', { index: h.gpu })}: ${t(h.key)}` }),
      h.heuristic
        ? el('span', { class: 'tag warn heuristic', title: t('monitor.heuristic'), text: t('monitor.heuristic.tag') })
        : el('span', { class: 'tag driver', text: t('monitor.driver.tag') }),
    ),
  );
  const ev = el('ul', { class: 'evidence' });
  for (const e of h.evidence) ev.append(el('li', { 'data-key': e.key, text: t(e.key, fmtParams(e.params)) }));
  card.append(el('div', { class: 'small muted', text: t('monitor.evidence') }), ev);
  const steps = el('ol', { class: 'next-steps' });
  for (const s of h.next_steps) steps.append(el('li', { text: t(s) }));
  card.append(el('div', { class: 'small muted', text: t('monitor.next') }), steps);
  for (const note of h.notes) card.append(el('p', { class: 'note small', 'data-note': note, text: t(note) }));
  return card;
}

/** Set a node's text only when it changed (an unchanged value costs the WebView nothing). @param {Node} node @param {string} text */
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** Set an attribute only when it changed. @param {Element} node @param {string} name @param {string} value */
function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}

/**
 * One metric: its name, the current value, the chart; `draw` updates the same nodes.
 * @param {string} metric
 */
function metricView(metric) {
  const value = el('strong', { class: 'value' });
  const c = liveChart(metric);
  const axis = el('span');
  const node = el(
    'div',
    { class: 'metric', 'data-metric': metric },
    el('div', { class: 'metric-head' }, el('span', { class: 'muted', text: t(`monitor.metric.${metric}`) }), value),
    c.node,
    el('div', { class: 'axis small muted' }, axis, el('span', { text: t('monitor.axis.now') })),
  );
  /** @param {string} text @param {GpuPoint[]} pts @param {'util' | 'mem' | 'power' | 'temp'} key @param {number} max */
  const draw = (text, pts, key, max) => {
    setText(value, text);
    const spanMs = c.draw(
      pts.map((p) => ({ t: p.t, v: p[key] })),
      WINDOWS[view.window],
      max,
    );
    setText(
      axis,
      spanMs >= 60_000
        ? t('monitor.axis.min', { n: num(spanMs / 60_000, 0) })
        : t('monitor.axis.s', { n: num(spanMs / 1000, 0) }),
    );
  };
  return { node, draw };
}

/** The processes on one GPU, as a table (or the sentence that there are none). @param {import('../../../bindings/ComputeApp').ComputeApp[]} apps */
function procsNode(apps) {
  if (!apps.length) return el('p', { class: 'small muted procs-none', text: t('monitor.proc.none') });
  const body = el('tbody');
  for (const a of apps)
    body.append(
      el(
        'tr',
        {},
        el('td', { text: String(a.pid ?? '?') }),
        el('td', { class: 'num', text: `${n(a.used_memory_mib)} MiB` }),
      ),
    );
  return el(
    'table',
    { class: 'data procs' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', { text: t('monitor.proc.pid') }),
        el('th', { class: 'num', text: t('monitor.proc.memory') }),
      ),
    ),
    body,
  );
}

/**
 * One GPU's card, built once per column and updated in place on each sample.
 * @param {GpuRow} first the GPU as first seen (its index and UUID name the card)
 */
function gpuView(first) {
  const title = el('strong');
  const info = el('span', { class: 'small muted' });
  const metrics = {
    util: metricView('util'),
    vram: metricView('vram'),
    power: metricView('power'),
    temp: metricView('temp'),
  };
  const reasons = document.createTextNode('');
  const throttle = el(
    'p',
    { class: 'throttle small' },
    el('span', { class: 'muted', text: `${t('monitor.throttle')}: ` }),
    reasons,
  );
  /** @type {HTMLElement} */
  let procs = el('p');
  let procsKey = '';
  const node = el(
    'div',
    { class: 'gpu', 'data-gpu': String(first.index ?? 0), 'data-uuid': first.uuid ?? '' },
    el('div', { class: 'gpu-head' }, title, info),
    el('div', { class: 'metrics' }, metrics.util.node, metrics.vram.node, metrics.power.node, metrics.temp.node),
    throttle,
    procs,
  );
  /** @param {GpuRow} g @param {WatchSample} s @param {Ring<GpuPoint> | undefined} ring */
  const draw = (g, s, ring) => {
    const pts = ring ? ring.items() : [];
    let maxPower = Math.max(g.power_limit_w ?? 0, 1);
    let maxTemp = 100;
    for (const p of pts) {
      if (p.power !== null && p.power > maxPower) maxPower = p.power;
      if (p.temp !== null && p.temp > maxTemp) maxTemp = p.temp;
    }
    setAttr(node, 'data-uuid', g.uuid ?? '');
    setText(title, `${t('monitor.gpu', { index: g.index ?? '?' })} · ${g.name ?? '?'}`);
    setText(
      info,
      [
        g.uuid ?? '',
        g.pcie_gen ? t('monitor.pcie', { gen: g.pcie_gen, width: g.pcie_width ?? '?' }) : '',
        g.clock_sm_mhz !== null ? t('monitor.sm', { mhz: n(g.clock_sm_mhz) }) : '',
      ]
        .filter(Boolean)
        .join(' · '),
    );
    metrics.util.draw(`${n(g.util_gpu_pct)} %`, pts, 'util', 100);
    metrics.vram.draw(`${n(g.memory_used_mib)} / ${n(g.memory_total_mib)} MiB`, pts, 'mem', 100);
    metrics.power.draw(`${n(g.power_draw_w)} / ${n(g.power_limit_w)} W`, pts, 'power', maxPower);
    metrics.temp.draw(`${n(g.temperature_c)} °C`, pts, 'temp', maxTemp);
    setAttr(throttle, 'data-reasons', (g.throttle ?? []).join(' '));
    setText(
      reasons,
      g.throttle === null
        ? t('monitor.throttle.unknown')
        : g.throttle.length === 0
          ? t('monitor.throttle.none')
          : g.throttle.map((r) => t(`monitor.reason.${r}`)).join(', '),
    );
    const apps = s.apps.filter((a) => a.gpu_uuid === g.uuid);
    const key = JSON.stringify(apps.map((a) => [a.pid, a.used_memory_mib]));
    if (key !== procsKey) {
      procsKey = key;
      const next = procsNode(apps);
      node.replaceChild(next, procs);
      procs = next;
    }
  };
  return { node, draw };
}

/** The host's CPU per core, RAM, disk and network, built once per column and updated in place. */
function cpuView() {
  const summary = el('span', { class: 'small muted' });
  // One bar per core, drawn as SVG (attributes, no inline styles: the CSP allows none).
  const cores = svg('svg', {
    class: 'cores',
    viewBox: '0 0 10 48',
    preserveAspectRatio: 'none',
    'data-cores': 0,
    role: 'img',
  });
  /** @type {{ bar: SVGElement, tip: SVGElement }[]} */
  let bars = [];
  const ram = el('dd');
  const disk = el('dd');
  const net = el('dd');
  const node = el(
    'div',
    { class: 'cpu' },
    el('div', { class: 'gpu-head' }, el('strong', { text: t('monitor.cpu') }), summary),
    cores,
    el(
      'dl',
      { class: 'specs small' },
      el('dt', { text: t('monitor.ram') }),
      ram,
      el('dt', { text: t('monitor.disk') }),
      disk,
      el('dt', { text: t('monitor.net') }),
      net,
    ),
  );
  const gib = (/** @type {number | null} */ m) => (m === null ? '—' : num(m / 1024, 1));
  const mbs = (/** @type {number | null} */ b) => (b === null ? '—' : num(b / 1e6, 1));
  /** @param {HostSample} c */
  const draw = (c) => {
    setText(
      summary,
      t('monitor.cpu.summary', { pct: n(c.cpu_pct), iowait: n(c.cpu_iowait_pct), cores: c.cores_pct.length }),
    );
    if (bars.length !== c.cores_pct.length) {
      clear(cores);
      bars = c.cores_pct.map((_, i) => {
        const bar = svg('rect', { x: i * 10 + 1, width: 8 });
        const tip = svg('title');
        bar.append(tip);
        cores.append(bar);
        return { bar, tip };
      });
      cores.setAttribute('viewBox', `0 0 ${Math.max(1, c.cores_pct.length) * 10} 48`);
      cores.setAttribute('data-cores', String(c.cores_pct.length));
    }
    c.cores_pct.forEach((p, i) => {
      const { bar, tip } = bars[i];
      const h = Math.max(1, Math.min(100, p)) * 0.46;
      setAttr(bar, 'class', `core${p >= 90 ? ' hot' : ''}`);
      setAttr(bar, 'y', (47 - h).toFixed(1));
      setAttr(bar, 'height', h.toFixed(1));
      setAttr(bar, 'data-pct', p.toFixed(0));
      setText(tip, t('monitor.core', { index: i, pct: num(p, 0) }));
    });
    setText(ram, t('monitor.ram.value', { used: gib(c.mem_used_mib), total: gib(c.mem_total_mib) }));
    setText(disk, t('monitor.rate', { a: mbs(c.disk_read_bps), b: mbs(c.disk_write_bps) }));
    setText(net, t('monitor.rate.net', { a: mbs(c.net_rx_bps), b: mbs(c.net_tx_bps) }));
  };
  return { node, draw };
}

/** The status line of a host. @param {HostData} d @param {boolean} live */
function statusText(d, live) {
  if (d.error) return { cls: 'bad', text: errorText(d.error) };
  if (!live) return { cls: '', text: d.sample ? t('monitor.status.stopped') : t('monitor.status.off') };
  const s = d.status;
  if (!s) return { cls: '', text: t('monitor.status.connecting') };
  if (s.kind === 'disconnected')
    return {
      cls: 'warn',
      text: t('monitor.status.disconnected', {
        seconds: num(s.retry_in_ms / 1000, 1),
        why: errorText({ code: s.code, message: s.message }),
      }),
    };
  if (s.kind === 'gpu_unavailable')
    return { cls: 'warn', text: t('monitor.status.gpu_unavailable', { message: s.message }) };
  if (s.kind === 'connected') {
    const extra = s.dropped_fields.length
      ? ` ${t('monitor.status.dropped', { fields: s.dropped_fields.join(', ') })}`
      : '';
    return { cls: 'ok', text: t('monitor.status.connected', { attempt: s.attempt }) + extra };
  }
  return { cls: 'ok', text: t('monitor.status.live') };
}

/**
 * One host's column, drawn again (in place) on its samples while it is on the page.
 * @param {string} label @param {AbortSignal} signal the columns' drawing
 * @param {(node: Element, draw: () => void) => void} ask the columns' shared pace (`paced`)
 */
function hostColumn(label, signal, ask) {
  const d = data(label);
  const col = el('section', { class: 'host-col card', 'data-host': label });
  const stop = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', class: 'danger ghost small-btn', 'data-action': 'stop', text: t('monitor.stop') })
  );
  const start = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', class: 'small-btn', 'data-action': 'start', text: t('monitor.start') })
  );
  stop.onclick = () => {
    stop.disabled = true;
    stopWatch(label);
  };
  start.onclick = () => {
    startWatch(label);
    draw();
  };
  const status = el('p', { class: 'status small', role: 'status' });
  const body = el('div', { class: 'host-body' });
  col.append(el('div', { class: 'host-head' }, el('h2', { text: label }), stop, start), status, body);
  let lastHints = '';
  const hintsBox = el('div', { class: 'hints' });
  // The GPU cards and the CPU card stay on the page and are updated in place on each sample;
  // they are built again only when the host's GPUs change (another machine behind the label).
  let gpusKey = '';
  /** In the order of the sample's GPUs. @type {ReturnType<typeof gpuView>[]} */
  let gpus = [];
  /** @type {ReturnType<typeof cpuView> | null} */
  let cpu = null;
  const draw = () => {
    const live = Boolean(watching(label));
    stop.hidden = !live;
    stop.disabled = Boolean(watching(label)?.stopping);
    start.hidden = live;
    const st = statusText(d, live);
    setAttr(status, 'class', `status small ${st.cls}`);
    setText(status, st.text);
    col.dataset.live = String(live);
    const s = d.sample;
    if (!s) {
      clear(body);
      gpusKey = '';
      return;
    }
    col.dataset.samples = String(Math.max(0, ...[...d.rings.values()].map((r) => r.length)));
    const hintsKey = JSON.stringify(s.hints);
    if (hintsKey !== lastHints) {
      lastHints = hintsKey;
      clear(hintsBox);
      if (s.hints.length) {
        hintsBox.append(el('h3', { text: t('monitor.hints') }));
        for (const h of s.hints) hintsBox.append(hintCard(h));
      } else hintsBox.append(el('p', { class: 'small muted hints-none', text: t('monitor.hints.none') }));
    }
    const key = s.gpus.map((g) => `${g.index ?? 0}:${g.uuid ?? ''}`).join(',');
    if (key !== gpusKey) {
      gpusKey = key;
      clear(body);
      body.append(hintsBox);
      gpus = s.gpus.map(gpuView);
      for (const v of gpus) body.append(v.node);
      cpu = null;
    }
    s.gpus.forEach((g, i) => gpus[i].draw(g, s, d.rings.get(g.index ?? 0)));
    if (s.cpu) {
      if (!cpu) {
        cpu = cpuView();
        body.append(cpu.node);
      }
      cpu.draw(s.cpu);
    } else if (cpu) {
      cpu.node.remove();
      cpu = null;
    }
  };
  // Drawn at the Monitor's pace (with the other columns, once a second; not while out of view)
  // however many samples and status events arrived.
  listen(d.listeners, () => ask(col, draw), signal);
  draw();
  return col;
}

/**
 * A host released or deleted while watched has no column any more (nowhere to press Stop): its
 * watch is stopped here and it is unpicked. (The core ends such a watch by itself too.)
 * @param {Set<string>} live the labels of the hosts that can be watched
 */
function forgetGone(live) {
  for (const op of ops.running('watch')) if (!live.has(op.scope)) ops.cancel(op);
  for (const label of [...view.picked])
    if (!live.has(label)) {
      view.picked.delete(label);
      hosts.delete(label);
    }
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
export function renderMonitor(root, signal) {
  const drawn = redraws(signal);
  /** Draw the screen (again on each tab switch: the old tab's signal aborts). */
  const draw = () => {
    clear(root);
    return drawMonitor(root, drawn(), draw);
  };
  return draw();
}

/** @param {HTMLElement} root @param {AbortSignal} signal @param {() => void} again */
async function drawMonitor(root, signal, again) {
  hideError();
  let loaded = true;
  const list = await liveHosts().catch((e) => {
    loaded = false;
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return [];
  });
  if (signal.aborted) return;
  if (loaded) forgetGone(new Set(list.map((h) => h.label)));
  root.append(el('h1', { text: t('monitor.title') }), el('p', { class: 'lead', text: t('monitor.intro') }));
  const tabs = el('div', { class: 'tabs', role: 'tablist' });
  for (const id of /** @type {const} */ (['live', 'run'])) {
    const b = el('button', {
      type: 'button',
      class: `tab${view.tab === id ? ' active' : ''}`,
      role: 'tab',
      id: `monitor-tab-${id}`,
      'aria-selected': String(view.tab === id),
      text: t(`monitor.tab.${id}`),
    });
    b.onclick = () => {
      view.tab = id;
      again();
    };
    tabs.append(b);
  }
  root.append(tabs);
  if (list.length === 0) {
    root.append(el('p', { class: 'card', id: 'monitor-nohosts', text: t('setup.nohosts') }));
    return;
  }
  if (view.tab === 'run') {
    const panel = el('div', { id: 'run-panel' });
    root.append(panel);
    renderRun(panel, list, knownGpus, signal);
    return;
  }
  const picker = el(
    'fieldset',
    { class: 'host-pick', id: 'monitor-hosts' },
    el('legend', { text: t('monitor.hosts') }),
  );
  const columns = el('div', { class: 'host-cols', id: 'monitor-cols' });
  const shown = () => list.filter((h) => view.picked.has(h.label));
  const columnsDrawn = redraws(signal);
  const drawColumns = () => {
    const drawing = columnsDrawn();
    // Samples arrive at 1 Hz per host, each host at its own phase: one repaint a second for all.
    const ask = paced(drawing, 1000);
    clear(columns);
    for (const h of shown()) columns.append(hostColumn(h.label, drawing, ask));
    columns.dataset.count = String(shown().length);
    if (!shown().length) columns.append(el('p', { class: 'muted', id: 'monitor-empty', text: t('monitor.pick') }));
  };
  for (const h of list) {
    const box = /** @type {HTMLInputElement} */ (
      el('input', { type: 'checkbox', value: h.label, 'data-host': h.label, checked: view.picked.has(h.label) })
    );
    box.onchange = () => {
      if (box.checked) {
        view.picked.add(h.label);
        startWatch(h.label);
      } else {
        view.picked.delete(h.label);
        stopWatch(h.label);
        hosts.delete(h.label);
      }
      drawColumns();
    };
    picker.append(
      el('label', { class: 'check' }, box, el('span', { text: `${h.label} — ${h.user}@${h.address}:${h.port}` })),
    );
  }
  const win = el(
    'div',
    { class: 'row window-toggle', role: 'group', id: 'monitor-window' },
    el('span', { class: 'muted small', text: t('monitor.window') }),
  );
  for (const m of /** @type {const} */ ([10, 60])) {
    const b = el('button', {
      type: 'button',
      class: `small-btn${view.window === m ? ' primary' : ''}`,
      'data-window': String(m),
      'aria-pressed': String(view.window === m),
      text: t('monitor.window.min', { n: m }),
    });
    b.onclick = () => {
      view.window = m;
      for (const x of win.querySelectorAll('button')) {
        const on = x.getAttribute('data-window') === String(m);
        x.classList.toggle('primary', on);
        x.setAttribute('aria-pressed', String(on));
      }
      drawColumns();
    };
    win.append(b);
  }
  root.append(el('div', { class: 'monitor-bar' }, picker, win), columns);
  drawColumns();
}
