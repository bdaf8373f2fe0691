// Light and dark themes. "system" follows the OS through CSS prefers-color-scheme.

/** @typedef {import('../bindings/ThemePref').ThemePref} ThemePref */

/** @param {ThemePref} pref */
export function applyTheme(pref) {
  const root = document.documentElement;
  if (pref === 'system') delete root.dataset.theme;
  else root.dataset.theme = pref;
}
