// Typed wrappers over the guard commands (docs/guard.md). Every call that logs in goes through
// withUnlock: a locked key asks for its passphrase once and the call is retried.
import { channel, invoke } from './tauri.js';
import { withUnlock } from './api.js';

/** @typedef {import('../bindings/GuardView').GuardView} GuardView */
/** @typedef {import('../bindings/GuardRequest').GuardRequest} GuardRequest */
/** @typedef {import('../bindings/GuardSetReport').GuardSetReport} GuardSetReport */
/** @typedef {import('../bindings/GuardStatus').GuardStatus} GuardStatus */
/** @typedef {import('../bindings/Decision').Decision} Decision */
/** @typedef {import('../bindings/DurationPreview').DurationPreview} DurationPreview */
/** @typedef {import('../bindings/Progress').Progress} Progress */

/** @param {string} label @returns {Promise<GuardView>} */
export const guardView = (label) => invoke('guard_view', { label });

/** @param {string} text like `90m`, `2.5h` @returns {Promise<DurationPreview>} */
export const guardDuration = (text) => invoke('guard_duration', { text });

/** @param {string} label @param {GuardRequest} req @param {(p: Progress) => void} onProgress @returns {Promise<GuardSetReport>} */
export const guardSet = (label, req, onProgress) =>
  withUnlock(() => invoke('guard_set', { label, req, onProgress: channel(onProgress) }));

/** @param {string} label @returns {Promise<GuardStatus>} */
export const guardStatus = (label) => withUnlock(() => invoke('guard_status', { label }));

/** @param {string} label @param {number} limit @returns {Promise<Decision[]>} */
export const guardDecisions = (label, limit) => invoke('guard_decisions', { label, limit });

/** @param {string} label @param {string} duration @returns {Promise<number>} */
export const guardSnooze = (label, duration) => withUnlock(() => invoke('guard_snooze', { label, duration }));

/** @param {string} label @returns {Promise<null>} */
export const guardOff = (label) => withUnlock(() => invoke('guard_off', { label }));
