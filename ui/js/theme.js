// Light and dark themes. "system" follows the OS (prefers-color-scheme) and keeps following it when
// the OS switches; the CSS has one dark palette, selected by data-theme on <html>.

/** @typedef {import('../bindings/ThemePref').ThemePref} ThemePref */

const dark = window.matchMedia('(prefers-color-scheme: dark)');
/** @type {ThemePref} */
let pref = 'system';

function apply() {
  const useDark = pref === 'dark' || (pref === 'system' && dark.matches);
  document.documentElement.dataset.theme = useDark ? 'dark' : 'light';
}

dark.addEventListener('change', apply);
apply(); // before settings arrive, follow the OS

/** @param {ThemePref} next */
export function applyTheme(next) {
  pref = next;
  apply();
}
