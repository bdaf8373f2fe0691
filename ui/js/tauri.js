// The only module that touches window.__TAURI__. Everything else imports from here (via api.js).

/** @typedef {import('../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * Call a Rust command. Rejections are always an ErrorPayload ({code, message, detail?}).
 * @template T
 * @param {string} cmd
 * @param {Record<string, unknown>} [args]
 * @returns {Promise<T>}
 */
export async function invoke(cmd, args) {
  const tauri = window.__TAURI__;
  if (!tauri) {
    throw /** @type {ErrorPayload} */ ({ code: 'no_backend', message: 'gpurent backend is not available' });
  }
  try {
    return await tauri.core.invoke(cmd, args);
  } catch (e) {
    throw toPayload(e);
  }
}

/**
 * A per-operation channel for progress events.
 * @template T
 * @param {(message: T) => void} onMessage
 * @returns {TauriChannel<T>}
 */
export function channel(onMessage) {
  const tauri = window.__TAURI__;
  if (!tauri) throw /** @type {ErrorPayload} */ ({ code: 'no_backend', message: 'gpurent backend is not available' });
  /** @type {TauriChannel<T>} */
  const ch = new tauri.core.Channel();
  ch.onmessage = onMessage;
  return ch;
}

/**
 * @param {unknown} e
 * @returns {ErrorPayload}
 */
function toPayload(e) {
  if (e && typeof e === 'object' && 'code' in e && 'message' in e) {
    return /** @type {ErrorPayload} */ (e);
  }
  return { code: 'internal', message: String(e) };
}
