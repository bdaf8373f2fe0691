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

/**
 * One pace for many parts that redraw on streams (the Monitor's host columns, each fed by its own
 * host at its own phase of the second). A part asks with `ask(node, draw)`; the draws asked for
 * run together in one animation frame, at most once per `periodMs` (the first after a quiet
 * spell at the next frame), so N hosts cost one page repaint per period, not N. A part whose
 * `node` is out of view (an IntersectionObserver, where there is one) is not drawn: its last ask
 * waits and runs when it scrolls into view. Nothing runs after `signal` aborts.
 * @param {AbortSignal} signal @param {number} periodMs
 * @returns {(node: Element, draw: () => void) => void}
 */
export function paced(signal, periodMs) {
  /** The asked draws, by part. @type {Map<Element, () => void>} */
  const due = new Map();
  /** Parts out of view, with their waiting draw (if any). @type {Map<Element, (() => void) | null>} */
  const away = new Map();
  let last = -Infinity;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {number | undefined} */
  let frame;
  const run = () => {
    frame = undefined;
    if (signal.aborted) return;
    last = Date.now();
    const now = [...due.values()];
    due.clear();
    for (const draw of now) draw();
  };
  const schedule = () => {
    if (timer !== undefined || frame !== undefined || signal.aborted) return;
    const wait = Math.max(0, last + periodMs - Date.now());
    timer = setTimeout(() => {
      timer = undefined;
      frame = requestAnimationFrame(run);
    }, wait);
  };
  const io =
    typeof IntersectionObserver === 'function'
      ? new IntersectionObserver(
          (entries) => {
            for (const e of entries) {
              if (e.isIntersecting) {
                const waiting = away.get(e.target);
                away.delete(e.target);
                if (waiting) {
                  due.set(e.target, waiting);
                  schedule();
                }
              } else if (!away.has(e.target)) {
                const asked = due.get(e.target) ?? null;
                due.delete(e.target);
                away.set(e.target, asked);
              }
            }
          },
          { rootMargin: '200px' },
        )
      : null;
  /** @type {WeakSet<Element>} */
  const observed = new WeakSet();
  signal.addEventListener(
    'abort',
    () => {
      clearTimeout(timer);
      if (frame !== undefined) cancelAnimationFrame(frame);
      io?.disconnect();
      due.clear();
      away.clear();
    },
    { once: true },
  );
  return (node, draw) => {
    if (signal.aborted) return;
    if (io && !observed.has(node)) {
      observed.add(node);
      io.observe(node);
    }
    if (away.has(node)) {
      away.set(node, draw);
      return;
    }
    due.set(node, draw);
    schedule();
  };
}
