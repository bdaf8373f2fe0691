// The Monitor step's drawing (ui/js/views/monitor/) in a fake DOM (scripts/fake-dom.mjs, node, no
// dependencies): a streamed launch log is APPENDED to its rank's pane — one new text node per new
// line, the oldest dropped past the cap — with nothing else on the Run tab redrawn; the Live tab's
// columns update in place on each sample. Counts nodes and mutations, never time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { find, findAll, installFakeDom } from './fake-dom.mjs';

const HOST = { label: 'box', user: 'root', address: '10.0.0.1', port: 22, released_ms: null };
/** @type {{ cmd: string, args: Record<string, any>, resolve: (v: unknown) => void }[]} */
const calls = [];
const { doc, frames } = installFakeDom({
  invoke: (cmd, args) =>
    cmd === 'host_list'
      ? Promise.resolve([HOST])
      : new Promise((resolve) => calls.push({ cmd, args, resolve })),
});
const banner = doc.createElement('div');
banner.id = 'banner';
doc.body.append(banner);

const { renderRun } = await import('../ui/js/views/monitor/run.js');
const { renderMonitor } = await import('../ui/js/views/monitor/monitor.js');

const byId = (/** @type {string} */ id) => /** @type {any} */ (doc.getElementById(id));
const pane = (/** @type {string} */ rank) =>
  find(doc.body, (n) => n.tagName === 'PRE' && n.getAttribute('data-rank') === rank);
/** Let the promises of a click settle (the invoke is reached through a few awaits). */
const settle = () => new Promise((r) => setTimeout(r, 0));

/** Mutations since `from` of nodes on the page outside `inside` (nodes being built are not on it). @param {number} from @param {any} inside */
const outside = (from, inside) =>
  doc.mutations.slice(from).filter((m) => doc.body.contains(m.node) && !inside.contains(m.node));

test('Run tab: streamed launch lines are appended to their pane, the rest is not redrawn', async (t) => {
  const screen = new AbortController();
  t.after(() => screen.abort());
  const root = doc.createElement('div');
  doc.body.append(root);
  renderRun(/** @type {any} */ (root), [/** @type {any} */ (HOST)], () => [], screen.signal);
  frames();
  byId('launch-run').click();
  await settle();
  const call = calls.find((c) => c.cmd === 'launch_run');
  assert.ok(call, 'launch_run was invoked');
  const line = (/** @type {number | null} */ rank, /** @type {string} */ text) =>
    call.args.onLine.onmessage({ rank, line: text });
  frames();
  line(null, 'torchrun: starting 2 ranks');
  line(0, 'r0 line 0');
  line(1, 'r1 line 0');
  frames();
  const p0 = pane('0');
  const p1 = pane('1');
  assert.ok(p0 && p1 && pane('torchrun'), 'one pane per rank and torchrun');
  const logs = byId('launch-logs');
  const order = findAll(logs, (n) => n.tagName === 'PRE').map((p) => p.getAttribute('data-rank'));
  assert.deepEqual(order, ['torchrun', '0', '1']);

  // 300 more lines of rank 0, drawn every 10 lines (frames): the same pane, one node per line,
  // and no node outside the launch's logs touched.
  const created0 = doc.created;
  const mutated0 = doc.mutations.length;
  for (let i = 1; i <= 300; i++) {
    line(0, `r0 line ${i}`);
    if (i % 10 === 0) frames();
  }
  assert.ok(pane('0') === p0, 'the pane of rank 0 is kept, not rebuilt');
  assert.ok(pane('1') === p1, 'the pane of rank 1 is kept');
  assert.equal(p0.textContent.trimEnd().split('\n').length, 301);
  assert.equal(p0.textContent.trimEnd().split('\n')[300], 'r0 line 300');
  const created = doc.created - created0;
  assert.ok(created <= 300, `${created} nodes created for 300 lines`);
  assert.deepEqual(
    outside(mutated0, logs).map((m) => m.node.id || m.node.tagName),
    [],
    'nothing outside the logs was redrawn',
  );
  assert.deepEqual(
    outside(mutated0, p0).map((m) => m.node.id || m.node.tagName),
    [],
    'nothing outside the pane of rank 0 was redrawn',
  );

  // Past the cap (2000 lines) the oldest go: the pane holds the newest 2000, still the same node.
  for (let i = 301; i <= 2100; i++) {
    line(0, `r0 line ${i}`);
    if (i % 50 === 0) frames();
  }
  frames();
  const before = doc.created;
  for (let i = 2101; i <= 2150; i++) line(0, `r0 line ${i}`);
  frames();
  assert.ok(doc.created - before <= 50, `${doc.created - before} nodes for 50 lines at the cap`);
  const text = p0.textContent.trimEnd().split('\n');
  assert.ok(pane('0') === p0);
  assert.equal(text.length, 2000);
  assert.equal(text[0], 'r0 line 151');
  assert.equal(text[1999], 'r0 line 2150');
  assert.equal(p0.scrollTop, p0.scrollHeight, 'scrolled to the newest line');

  // The exit status is drawn below; the panes stay.
  call.resolve({ status: 0, hints: [], explanation: null });
  await settle();
  frames();
  assert.ok(find(byId('launch-result'), (n) => n.getAttribute('data-status') === '0'));
  assert.ok(pane('0') === p0);
  assert.equal(pane('1')?.textContent.trim(), 'r1 line 0');

  // A second launch starts with empty panes.
  byId('launch-run').click();
  await settle();
  frames();
  assert.equal(pane('0'), null, 'the old logs are gone');
  const again = calls.filter((c) => c.cmd === 'launch_run')[1];
  again.args.onLine.onmessage({ rank: 0, line: 'second run' });
  frames();
  assert.equal(pane('0')?.textContent.trim(), 'second run');
  again.resolve({ status: 0, hints: [], explanation: null });
  await settle();
});

/** A sample of `box` at second `i`: two GPUs whose values move, four cores, pid 4242 on GPU 0 from second 10. @param {number} i */
const sample = (i) => ({
  host: 'box',
  at_ms: 1_000_000 + i * 1000,
  gpus: [0, 1].map((g) => ({
    index: g,
    uuid: `GPU-${g}`,
    name: 'NVIDIA H100 80GB HBM3',
    util_gpu_pct: (i * 7 + g * 13) % 100,
    util_memory_pct: 9,
    memory_used_mib: 30000 + i,
    memory_total_mib: 81559,
    temperature_c: 40 + (i % 5),
    power_draw_w: 150 + i,
    power_limit_w: 700,
    power_default_limit_w: 700,
    clock_sm_mhz: 1980,
    clock_max_sm_mhz: 1980,
    pcie_gen: 5,
    pcie_width: 16,
    throttle: [],
  })),
  cpu: {
    uptime_s: 5000 + i,
    cpu_pct: 30 + (i % 3),
    cpu_iowait_pct: 0,
    cores_pct: [98, 8 + (i % 2), 8, 8],
    mem_total_mib: 65536,
    mem_used_mib: 32768 + i,
    disk_read_bytes: 0,
    disk_written_bytes: 0,
    disk_read_bps: 0,
    disk_write_bps: 0,
    net_rx_bytes: 0,
    net_tx_bytes: 0,
    net_rx_bps: i * 1000,
    net_tx_bps: 0,
    in_container: false,
    cpu_limit_cores: null,
  },
  apps: i >= 10 ? [{ gpu_uuid: 'GPU-0', pid: 4242, used_memory_mib: 30000 }] : [],
  hints: [],
});

/**
 * The Live tab on a fresh root with host `box` ticked (it stays ticked across screens: ticked
 * again only when it is not); its `monitor_watch` call, whose channel the test feeds.
 * @param {AbortSignal} signal
 */
async function watchBox(signal) {
  const root = doc.createElement('div');
  doc.body.append(root);
  renderMonitor(/** @type {any} */ (root), signal);
  await settle();
  const box = find(root, (n) => n.tagName === 'INPUT' && n.getAttribute('data-host') === 'box');
  assert.ok(box, 'the host to tick');
  if (!box.checked) {
    box.checked = true;
    box.fire('change');
    await settle();
  }
  const call = calls.findLast((c) => c.cmd === 'monitor_watch');
  assert.ok(call, 'monitor_watch was invoked');
  return { root, call };
}

test('Live tab: a column is updated in place on each sample, not rebuilt', async (t) => {
  const screen = new AbortController();
  t.after(() => screen.abort());
  const { root, call } = await watchBox(screen.signal);
  // The columns redraw at one pace, at most once a second (screen.js `paced`): a clock to move.
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
  const second = () => {
    t.mock.timers.tick(1000);
    frames();
  };
  call.args.onSample.onmessage(sample(1));
  second();
  const col = find(root, (n) => n.classList.contains('host-col'));
  const q = (/** @type {(n: any) => boolean} */ ok) => col && find(col, ok);
  const card = q((n) => n.classList.contains('gpu') && n.getAttribute('data-gpu') === '0');
  const util = q((n) => n.tagName === 'SVG' && n.getAttribute('data-metric') === 'util');
  const line = util && find(util, (n) => n.tagName === 'PATH' && n.getAttribute('class') === 'line');
  const cores = q((n) => n.getAttribute('class') === 'cores');
  assert.ok(col && card && util && line && cores, 'the column with its GPU card, charts and cores');
  assert.equal(col.getAttribute('data-samples'), '1');

  let d = line.getAttribute('d');
  const created0 = doc.created;
  for (let i = 2; i <= 20; i++) {
    call.args.onSample.onmessage(sample(i));
    second();
    assert.ok(find(root, (n) => n.classList.contains('host-col')) === col, `the column is kept (sample ${i})`);
    assert.ok(q((n) => n.classList.contains('gpu') && n.getAttribute('data-gpu') === '0') === card, 'the card');
    assert.ok(q((n) => n.tagName === 'SVG' && n.getAttribute('data-metric') === 'util') === util, 'the chart');
    assert.ok(q((n) => n.getAttribute('class') === 'cores') === cores, 'the cores');
    const now = line.getAttribute('d');
    assert.notEqual(now, d, `the line moved at sample ${i}`);
    d = now;
  }
  const perSample = (doc.created - created0) / 19;
  assert.ok(perSample < 40, `${perSample.toFixed(1)} nodes created per sample`);
  assert.equal(util.getAttribute('data-points'), '20');
  assert.equal(col.getAttribute('data-samples'), '20');
  // The values as text, the process that appeared at second 10, the hot core.
  const vram = q((n) => n.classList.contains('metric') && n.getAttribute('data-metric') === 'vram');
  assert.equal(vram && find(vram, (n) => n.classList.contains('value'))?.textContent, '30,020 / 81,559 MiB');
  const procs = find(card, (n) => n.tagName === 'TABLE');
  assert.ok(procs?.textContent.includes('4242'), 'the process on GPU 0');
  assert.equal(findAll(cores, (n) => n.getAttribute('class') === 'core hot').length, 1);
  assert.equal(findAll(cores, (n) => n.tagName === 'RECT').length, 4);
});

test('Live tab: samples are drawn at one pace (at most once a second), and not while out of view', async (t) => {
  /** The column's IntersectionObserver, moved by the test. @type {((e: {target: any, isIntersecting: boolean}[]) => void)[]} */
  const observers = [];
  /** @type {any[]} */
  const observed = [];
  const g = /** @type {any} */ (globalThis);
  g.IntersectionObserver = class {
    /** @param {(e: {target: any, isIntersecting: boolean}[]) => void} cb */
    constructor(cb) {
      observers.push(cb);
    }
    /** @param {any} n */
    observe(n) {
      observed.push(n);
    }
    disconnect() {}
  };
  const screen = new AbortController();
  t.after(() => {
    screen.abort();
    delete g.IntersectionObserver;
  });
  const { root, call } = await watchBox(screen.signal);
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 2_000_000 });
  const col = () => find(root, (n) => n.classList.contains('host-col'));
  const drawn = () => col()?.getAttribute('data-samples') ?? null;
  const first = drawn();
  // A first sample after a quiet spell is drawn at the next frame.
  call.args.onSample.onmessage(sample(101));
  t.mock.timers.tick(0);
  frames();
  const afterFirst = drawn();
  assert.notEqual(afterFirst, first, 'the first sample is drawn at once');
  // Four more within the same second: nothing is drawn until the second is over, then once.
  const m0 = doc.mutations.length;
  for (let i = 102; i <= 105; i++) {
    call.args.onSample.onmessage(sample(i));
    t.mock.timers.tick(200);
    frames();
  }
  assert.equal(drawn(), afterFirst, 'not drawn again within the second');
  assert.equal(doc.mutations.length, m0, 'nothing on the page changed within the second');
  t.mock.timers.tick(200);
  frames();
  assert.equal(Number(drawn()), Number(afterFirst) + 4, 'the four samples drawn together at the second');
  // Scrolled out of view: samples are kept but not drawn; back in view: drawn at the next pace.
  assert.ok(observed.includes(col()), 'the column is watched for visibility');
  for (const cb of observers) cb([{ target: col(), isIntersecting: false }]);
  const hidden = drawn();
  for (let i = 106; i <= 108; i++) {
    call.args.onSample.onmessage(sample(i));
    t.mock.timers.tick(1000);
    frames();
  }
  assert.equal(drawn(), hidden, 'a column out of view is not drawn');
  for (const cb of observers) cb([{ target: col(), isIntersecting: true }]);
  t.mock.timers.tick(1000);
  frames();
  assert.equal(Number(drawn()), Number(hidden) + 3, 'drawn with every sample kept once back in view');
});

test('Live tab: the samples of every watch come on the one feed (monitor_feed), many in one message', async (t) => {
  const screen = new AbortController();
  t.after(() => screen.abort());
  const { root } = await watchBox(screen.signal);
  const feeds = calls.filter((c) => c.cmd === 'monitor_feed');
  assert.equal(feeds.length, 1, 'the feed is asked for once, however many watches and screens');
  const { knownGpus } = await import('../ui/js/views/monitor/monitor.js');
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 3_000_000 });
  const col = () => find(root, (n) => n.classList.contains('host-col'));
  const before = Number(col()?.getAttribute('data-samples') ?? 0);
  // One message: two samples of `box` and one of a host that is not watched.
  feeds[0].args.onSamples.onmessage([sample(301), { ...sample(302), host: 'other' }, sample(303)]);
  t.mock.timers.tick(1000);
  frames();
  assert.equal(Number(col()?.getAttribute('data-samples')), before + 2, 'both samples of box, drawn together');
  const util = find(col(), (n) => n.tagName === 'SVG' && n.getAttribute('data-metric') === 'util');
  assert.ok(Number(util?.getAttribute('data-points')) >= 2, 'on the charts');
  assert.deepEqual(knownGpus('other'), [], 'a host not watched is not kept');
  assert.equal(
    find(root, (n) => n.getAttribute('data-host') === 'other'),
    null,
    'and gets no column',
  );
});
