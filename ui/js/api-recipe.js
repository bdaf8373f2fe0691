// Typed wrappers over the recipe commands (src-tauri/src/commands/recipe.rs, docs/recipes.md).
// The run takes `onProgress` (its first event carries the op id that `op_cancel` stops: that
// closes the tunnel) and `onReady` (the report, once the app answered through the tunnel). A key
// with a passphrase is asked for once (`withUnlock`), before anything is rented.
import { channel, invoke } from './tauri.js';
import { withUnlock } from './api.js';

/** @typedef {import('../bindings/Recipe').Recipe} Recipe */
/** @typedef {import('../bindings/RecipeOffersView').RecipeOffersView} RecipeOffersView */
/** @typedef {import('../bindings/RecipeTarget').RecipeTarget} RecipeTarget */
/** @typedef {import('../bindings/RecipeRunReport').RecipeRunReport} RecipeRunReport */
/** @typedef {import('../bindings/Progress').Progress} Progress */
/** @typedef {import('../bindings/TranscribeOptions').TranscribeOptions} TranscribeOptions */
/** @typedef {import('../bindings/TranscribeReport').TranscribeReport} TranscribeReport */
/** @typedef {import('../bindings/SavedEnvRecipe').SavedEnvRecipe} SavedEnvRecipe */
/** @typedef {import('../bindings/ReplayReport').ReplayReport} ReplayReport */

/** @returns {Promise<Recipe[]>} */
export const recipeList = () => invoke('recipe_list');

/** @param {string} name @returns {Promise<RecipeOffersView>} */
export const recipeOffers = (name) => invoke('recipe_offers', { name });

/**
 * Run recipe `name` on `target`; resolves when the operation is cancelled (the tunnel closed).
 * @param {string} name @param {RecipeTarget} target @param {(p: Progress) => void} onProgress
 * @param {(label: string) => void} onHost the host's label, once known (a rented one bills from then on)
 * @param {(r: RecipeRunReport) => void} onReady
 * @returns {Promise<null>}
 */
export const recipeRun = (name, target, onProgress, onHost, onReady) =>
  withUnlock(() =>
    invoke('recipe_run', {
      name,
      target,
      onProgress: channel(onProgress),
      onHost: channel(onHost),
      onReady: channel(onReady),
    }),
  );

/** Open the tunnel URL in the browser. @param {string} url @returns {Promise<null>} */
export const recipeOpen = (url) => invoke('recipe_open', { url });

/** @param {string} name @param {string} label @returns {Promise<boolean>} */
export const recipeStop = (name, label) => withUnlock(() => invoke('recipe_stop', { name, label }));

/**
 * Transcribe local audio `files` with the Whisper recipe running on `label` (its own tunnel; the
 * first progress event carries the op id that `op_cancel` stops).
 * @param {string} label @param {string[]} files @param {TranscribeOptions} opts @param {(p: Progress) => void} onProgress
 * @returns {Promise<TranscribeReport>}
 */
export const recipeTranscribe = (label, files, opts, onProgress) =>
  withUnlock(() => invoke('recipe_transcribe', { label, files, opts, onProgress: channel(onProgress) }));

/** The environment recipes releases saved, newest first. @returns {Promise<SavedEnvRecipe[]>} */
export const envRecipes = () => invoke('env_recipes');

/**
 * Replay saved environment recipe `name` on host `label` (its lines as `log` progress).
 * @param {string} label @param {string} name @param {(p: Progress) => void} onProgress
 * @returns {Promise<ReplayReport>}
 */
export const envReplay = (label, name, onProgress) =>
  withUnlock(() => invoke('env_replay', { label, name, onProgress: channel(onProgress) }));
