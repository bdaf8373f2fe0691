// ui/js/screen.js, the screens' one teardown: each helper stops at the signal's abort (node, no
// dependencies; run by scripts/check-all.sh). Waits poll up to 5 s (a loaded CI machine), and
// every test aborts its signal at the end, so a failing test cannot leave a timer running.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { debounced, every, later, listen, redraws } from '../ui/js/screen.js';

/** Poll until `ok()` holds (or 5 s pass). @param {() => boolean} ok */
async function until(ok) {
  for (const end = Date.now() + 5000; !ok() && Date.now() < end; ) await sleep(5);
  return ok();
}

test('every runs until the signal aborts, and never on an aborted one', async (t) => {
  const c = new AbortController();
  t.after(() => c.abort());
  let n = 0;
  every(c.signal, 5, () => n++);
  assert.ok(await until(() => n >= 2), `ran ${n} times`);
  c.abort();
  const at = n;
  await sleep(50);
  assert.equal(n, at);
  every(c.signal, 5, () => n++);
  await sleep(50);
  assert.equal(n, at);
});

test('later runs once, unless the signal aborts first', async (t) => {
  const c = new AbortController();
  t.after(() => c.abort());
  let n = 0;
  later(c.signal, 5, () => n++);
  assert.ok(await until(() => n === 1));
  await sleep(30);
  assert.equal(n, 1);
  later(c.signal, 10, () => n++);
  c.abort();
  await sleep(50);
  assert.equal(n, 1);
});

test('debounced runs once after the calls pause, and not after an abort', async (t) => {
  const c = new AbortController();
  t.after(() => c.abort());
  let n = 0;
  const poke = debounced(c.signal, 20, () => n++);
  poke();
  poke();
  poke();
  assert.ok(await until(() => n >= 1));
  await sleep(60);
  assert.equal(n, 1);
  poke();
  c.abort();
  poke();
  await sleep(60);
  assert.equal(n, 1);
});

test('listen keeps a listener in the store until the signal aborts', () => {
  const c = new AbortController();
  /** @type {Set<() => void>} */
  const set = new Set();
  const fn = () => {};
  listen(set, fn, c.signal);
  assert.ok(set.has(fn));
  c.abort();
  assert.equal(set.size, 0);
  listen(set, fn, c.signal);
  assert.equal(set.size, 0, 'an aborted signal adds nothing');
});

test('redraws: each drawing aborts the last; the screen aborts the current', () => {
  const screen = new AbortController();
  const next = redraws(screen.signal);
  const first = next();
  const second = next();
  assert.ok(first.aborted);
  assert.ok(!second.aborted);
  screen.abort();
  assert.ok(second.aborted);
  assert.ok(next().aborted, 'a drawing started after the screen went is aborted at once');
});
