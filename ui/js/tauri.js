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

/** The DOM event the Files step listens to; the native drop handler below dispatches it. */
export const FILES_DROPPED = 'gpurent-files-dropped';

/**
 * Forward the window's native drag-and-drop (which carries real file paths; files are never read
 * in JS) as a DOM event `FILES_DROPPED` with `detail.paths`. Installed once at start-up.
 */
export function forwardFileDrops() {
  const tauri = window.__TAURI__;
  if (!tauri) return;
  tauri.event
    .listen('tauri://drag-drop', (/** @type {{ payload: { paths?: string[] } }} */ e) => {
      const paths = e.payload.paths ?? [];
      if (paths.length) document.dispatchEvent(new CustomEvent(FILES_DROPPED, { detail: { paths } }));
    })
    .catch(() => {});
}
