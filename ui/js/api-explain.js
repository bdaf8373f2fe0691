// Typed wrapper over the Explain command (beside api.js so parallel steps do not edit one file).
import { invoke } from './tauri.js';

/** @typedef {import('../bindings/ErrorExplanation').ErrorExplanation} ErrorExplanation */

/**
 * @param {string} log the pasted or fetched text
 * @param {string | null} label a saved host whose last Setup check refines the answer
 * @returns {Promise<ErrorExplanation>}
 */
export const explainLog = (log, label) => invoke('explain_log', { log, label });
