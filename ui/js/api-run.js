// Typed wrappers over the Monitor and Run commands (src-tauri/src/commands/monitor.rs, run.rs).
// Long ones take `onProgress` (its first event carries the op id that `op_cancel` stops) and a
// channel of their own data. A key with a passphrase is asked for once (`withUnlock`).
import { channel, invoke } from './tauri.js';
import { withUnlock } from './api.js';

/** @typedef {import('../bindings/Progress').Progress} Progress */
/** @typedef {import('../bindings/WatchSample').WatchSample} WatchSample */
/** @typedef {import('../bindings/TelemetryEvent').TelemetryEvent} TelemetryEvent */
/** @typedef {import('../bindings/PullProgress').PullProgress} PullProgress */
/** @typedef {import('../bindings/Loaded').Loaded} Loaded */
/** @typedef {import('../bindings/Served').Served} Served */
/** @typedef {import('../bindings/LaunchSpec').LaunchSpec} LaunchSpec */
/** @typedef {import('../bindings/LaunchReport').LaunchReport} LaunchReport */
/** @typedef {import('../bindings/RankLine').RankLine} RankLine */
/** @typedef {import('../bindings/ModelFit').ModelFit} ModelFit */
/** @typedef {import('../bindings/InstallProgress').InstallProgress} InstallProgress */
/** @typedef {import('../bindings/OllamaInstallReport').OllamaInstallReport} OllamaInstallReport */

/**
 * Watch a saved host until cancelled.
 * @param {string} label @param {number | null} intervalMs @param {(p: Progress) => void} onProgress
 * @param {(s: WatchSample) => void} onSample @param {(e: TelemetryEvent) => void} onStatus
 * @returns {Promise<null>}
 */
export const monitorWatch = (label, intervalMs, onProgress, onSample, onStatus) =>
  withUnlock(() =>
    invoke('monitor_watch', {
      label,
      intervalMs,
      onProgress: channel(onProgress),
      onSample: channel(onSample),
      onStatus: channel(onStatus),
    }),
  );

/**
 * The window's one channel for every watch's samples: once a second, all that arrived meanwhile
 * (each names its host). Once it is set, `monitor_watch` sends its samples there, not on `onSample`.
 * @param {(samples: WatchSample[]) => void} onSamples @returns {Promise<null>}
 */
export const monitorFeed = (onSamples) => invoke('monitor_feed', { onSamples: channel(onSamples) });

/** @param {string} label @param {number} port @param {string[]} gpus @param {(p: Progress) => void} onProgress @returns {Promise<Served>} */
export const ollamaServe = (label, port, gpus, onProgress) =>
  withUnlock(() => invoke('ollama_serve', { label, port, gpus, onProgress: channel(onProgress) }));

/** @param {string} label @param {number} port @param {string[]} gpus @param {(p: Progress) => void} onProgress @param {(p: InstallProgress) => void} onInstall @returns {Promise<OllamaInstallReport>} */
export const ollamaInstall = (label, port, gpus, onProgress, onInstall) =>
  withUnlock(() =>
    invoke('ollama_install', { label, port, gpus, onProgress: channel(onProgress), onInstall: channel(onInstall) }),
  );

/** @param {string} label @param {string} model @param {string[]} gpus @returns {Promise<ModelFit>} */
export const ollamaFit = (label, model, gpus) => withUnlock(() => invoke('ollama_fit', { label, model, gpus }));

/**
 * The memory check first (a model that does not fit is refused unless `force`), then the pull.
 * @param {string} label @param {number} port @param {string} model @param {string[]} gpus @param {boolean} force
 * @param {(p: Progress) => void} onProgress @param {(f: ModelFit) => void} onFit @param {(p: PullProgress) => void} onPull
 * @returns {Promise<ModelFit>}
 */
export const ollamaPull = (label, port, model, gpus, force, onProgress, onFit, onPull) =>
  withUnlock(() =>
    invoke('ollama_pull', {
      label,
      port,
      model,
      gpus,
      force,
      onProgress: channel(onProgress),
      onFit: channel(onFit),
      onPull: channel(onPull),
    }),
  );

/** @param {string} label @param {number} port @param {string} model @param {string} prompt @param {(p: Progress) => void} onProgress @param {(s: string) => void} onPiece @returns {Promise<string>} */
export const ollamaChat = (label, port, model, prompt, onProgress, onPiece) =>
  withUnlock(() =>
    invoke('ollama_chat', { label, port, model, prompt, onProgress: channel(onProgress), onPiece: channel(onPiece) }),
  );

/** @param {string} label @param {number} port @returns {Promise<Loaded[] | null>} */
export const ollamaPs = (label, port) => withUnlock(() => invoke('ollama_ps', { label, port }));

/** @param {string} label @returns {Promise<boolean>} */
export const ollamaStop = (label) => withUnlock(() => invoke('ollama_stop', { label }));

/** @param {string} label @param {number} localPort @param {number} port @param {(p: Progress) => void} onProgress @param {(port: number) => void} onOpen @returns {Promise<null>} */
export const ollamaTunnel = (label, localPort, port, onProgress, onOpen) =>
  withUnlock(() =>
    invoke('ollama_tunnel', { label, localPort, port, onProgress: channel(onProgress), onOpen: channel(onOpen) }),
  );

/**
 * @param {string} label @param {string} python @param {number} port @param {number} localPort @param {boolean} openBrowser
 * @param {(p: Progress) => void} onProgress @param {(url: string) => void} onOpen @returns {Promise<null>}
 */
export const jupyterOpen = (label, python, port, localPort, openBrowser, onProgress, onOpen) =>
  withUnlock(() =>
    invoke('jupyter_open', {
      label,
      python,
      port,
      localPort,
      openBrowser,
      onProgress: channel(onProgress),
      onOpen: channel(onOpen),
    }),
  );

/** @param {string} label @returns {Promise<boolean>} */
export const jupyterStop = (label) => withUnlock(() => invoke('jupyter_stop', { label }));

/** @param {string} label @param {LaunchSpec} spec @param {(p: Progress) => void} onProgress @param {(l: RankLine) => void} onLine @returns {Promise<LaunchReport>} */
export const launchRun = (label, spec, onProgress, onLine) =>
  withUnlock(() => invoke('launch_run', { label, spec, onProgress: channel(onProgress), onLine: channel(onLine) }));

/** @param {string} label @returns {Promise<null>} */
export const launchStop = (label) => withUnlock(() => invoke('launch_stop', { label }));

/** @param {string} name @param {string} accelerators @param {number} nodes @param {string} setup @param {string[]} script @returns {Promise<string>} */
export const exportSkypilot = (name, accelerators, nodes, setup, script) =>
  invoke('export_skypilot', { name, accelerators, nodes, setup, script });
