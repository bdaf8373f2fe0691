// The Monitor step's drawing (ui/js/views/monitor/) in a fake DOM (scripts/fake-dom.mjs, node, no
// dependencies): a streamed launch log is APPENDED to its rank's pane — one new text node per new
// line, the oldest dropped past the cap — with nothing else on the Run tab redrawn. Counts nodes
// and mutations, never time.
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

