// One teardown per screen. app.js draws each screen with an AbortSignal of its own (one
// AbortController per navigation: aborted by the next navigation or the language switch), and a
// screen ties to it whatever must end with it:
// - listeners on anything that outlives the screen (the document, an operation in ops.js, a
//   store kept across screens): `addEventListener(type, fn, { signal })`, `ops.attach(op, signal,
//   fn)`, `listen(set, fn, signal)`; listeners on the screen's own nodes go with the nodes;
// - timers: `every` and `later` below, cleared on abort;
// - async answers: after each `await`, `if (signal.aborted) return` (the screen is gone: its
//   answer must neither draw into the page nor show an error on another screen).
// A part of a screen that redraws on its own (a tab, a list, a host chosen) takes a child signal
// from `redraws(signal)`. Long operations do not end with the screen: they live in ops.js, and a
// redrawn screen re-attaches to them.

/**
 * `fn` every `ms` until `signal` aborts.
 * @param {AbortSignal} signal @param {number} ms @param {() => void} fn
 */
export function every(signal, ms, fn) {
  if (signal.aborted) return;
  const id = setInterval(fn, ms);
  signal.addEventListener('abort', () => clearInterval(id), { once: true });
}

/**
 * `fn` once after `ms`, unless `signal` aborts first.
 * @param {AbortSignal} signal @param {number} ms @param {() => void} fn
 */
export function later(signal, ms, fn) {
  if (signal.aborted) return;
  const id = setTimeout(fn, ms);
  signal.addEventListener('abort', () => clearTimeout(id), { once: true });
}

/**
 * `fn` once the calls of the returned function pause for `ms` (typing), unless `signal` aborts.
 * @param {AbortSignal} signal @param {number} ms @param {() => void} fn
 * @returns {() => void}
 */
export function debounced(signal, ms, fn) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let id;
  signal.addEventListener('abort', () => clearTimeout(id), { once: true });
  return () => {
    clearTimeout(id);
    if (!signal.aborted) id = setTimeout(fn, ms);
  };
}

/**
 * `fn` at most once per frame however often the returned function is called (a stream's samples,
 * a log's lines): the calls between two frames are drawn once, at the next animation frame (or
 * after 250 ms where frames do not come, e.g. a hidden window), unless `signal` aborts first.
 * @param {AbortSignal} signal @param {() => void} fn
 * @returns {() => void}
 */
export function framed(signal, fn) {
  let pending = false;
  /** @type {number | undefined} */
  let frame;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const run = () => {
    if (!pending) return;
    pending = false;
    if (frame !== undefined) cancelAnimationFrame(frame);
    clearTimeout(timer);
    if (!signal.aborted) fn();
  };
  signal.addEventListener(
    'abort',
    () => {
      pending = false;
      if (frame !== undefined) cancelAnimationFrame(frame);
      clearTimeout(timer);
    },
    { once: true },
  );
  return () => {
    if (pending || signal.aborted) return;
    pending = true;
    frame = requestAnimationFrame(run);
    timer = setTimeout(run, 250);
  };
}

/**
 * Keep `fn` in `set` (the listeners of a store that outlives screens) until `signal` aborts.
 * @template F @param {Set<F>} set @param {F} fn @param {AbortSignal} signal
 */
export function listen(set, fn, signal) {
  if (signal.aborted) return;
  set.add(fn);
  signal.addEventListener('abort', () => set.delete(fn), { once: true });
}

/**
 * For a part of a screen that is drawn again on its own: each call of the returned function
 * aborts the part's previous drawing and returns the signal of the new one, which also aborts
 * with the screen's `signal`.
 * @param {AbortSignal} signal
 * @returns {() => AbortSignal}
 */
export function redraws(signal) {
  /** @type {AbortController | null} */
  let current = null;
  return () => {
    current?.abort();
    const c = new AbortController();
    current = c;
    if (signal.aborted) c.abort();
    else signal.addEventListener('abort', () => c.abort(), { once: true, signal: c.signal });
    return c.signal;
  };
}
