// Long operations that outlive the screen that started them. Screens are rebuilt on every
// navigation and language switch; a running operation lives here instead, with its op id (from
// its first progress event), what it reported so far, and its outcome. A rebuilt screen finds
// the operations still running for it (`running(kind, scope)`) and re-attaches its controls
// (Stop, Pause, Cancel) and its progress display (`attach`), so nothing is lost by looking at
// another step meanwhile.
import { opCancel, opPause } from './api.js';

/** @typedef {import('../bindings/Progress').Progress} Progress */

/**
 * @typedef {object} RunningOp
 * @property {number} seq
 * @property {string} kind what it is (`transfer`, `probe`, `fix`, `verify`, `host_add`, `host_check`)
 * @property {string} scope what it runs on (a host label)
 * @property {Record<string, string | number>} info what the screen needs to draw it again
 * @property {string | null} opId
 * @property {boolean} stopping a stop (cancel or pause) was asked for
 * @property {Progress[]} log progress so far (bounded), replayed to a re-attached screen
 * @property {Set<(p: Progress) => void>} listeners
 * @property {((id: string) => Promise<unknown>) | null} stop how it was asked to stop (sent again to
 *   each new op id: a step retried after the passphrase prompt runs as a new operation)
 * @property {Promise<unknown>} done settles with the operation's outcome
 */

/** @type {Map<number, RunningOp>} */
const ops = new Map();
let seq = 0;
const MAX_LOG = 2000;

/**
 * Start an operation. `run` gets the progress callback to pass to the command.
 * @template T
 * @param {string} kind @param {string} scope @param {Record<string, string | number>} info
 * @param {(on: (p: Progress) => void) => Promise<T>} run
 * @returns {{ op: RunningOp, result: Promise<T> }}
 */
export function start(kind, scope, info, run) {
  /** @type {RunningOp} */
  const op = {
    seq: ++seq,
    kind,
    scope,
    info,
    opId: null,
    stopping: false,
    log: [],
    listeners: new Set(),
    stop: null,
    done: Promise.resolve(),
  };
  /** @param {Progress} p */
  const on = (p) => {
    if (p.kind === 'started') {
      op.opId = p.op_id;
      if (op.stop) op.stop(p.op_id).catch(() => {});
    }
    remember(op, p);
    for (const l of op.listeners) l(p);
  };
  ops.set(op.seq, op);
  const result = run(on).finally(() => ops.delete(op.seq));
  op.done = result.then(
    () => undefined,
    () => undefined,
  );
  return { op, result };
}

/** Keep what a redrawn screen needs: every log line (bounded) and the latest of the others. @param {RunningOp} op @param {Progress} p */
function remember(op, p) {
  if (p.kind !== 'log') {
    const i = op.log.findIndex((x) => x.kind === p.kind);
    if (i >= 0) op.log.splice(i, 1);
  }
  op.log.push(p);
  if (op.log.length > MAX_LOG) op.log.splice(0, op.log.length - MAX_LOG);
}

/** Operations still running, oldest first. @param {string} kind @param {string} [scope] */
export function running(kind, scope) {
  return [...ops.values()].filter((o) => o.kind === kind && (scope === undefined || o.scope === scope));
}

/**
 * Follow an operation's progress while the screen that asks is on the page: what it reported so
 * far is replayed first; the listener goes when `signal` (the screen's, see screen.js) aborts.
 * @param {RunningOp} op @param {AbortSignal} signal @param {(p: Progress) => void} fn
 */
export function attach(op, signal, fn) {
  if (signal.aborted) return;
  for (const p of op.log) fn(p);
  op.listeners.add(fn);
  signal.addEventListener('abort', () => op.listeners.delete(fn), { once: true });
}

/** @param {RunningOp} op @param {(id: string) => Promise<unknown>} how */
function stopWith(op, how) {
  op.stopping = true;
  op.stop = how;
  if (op.opId) how(op.opId).catch(() => {});
}

/** Cancel an operation (before its id arrived: as soon as it does). @param {RunningOp} op */
export const cancel = (op) => stopWith(op, opCancel);

/** Pause a transfer (it keeps what arrived; resume it from the queue). @param {RunningOp} op */
export const pause = (op) => stopWith(op, opPause);
