// Translations: zh-CN and en. `t(key, params)` looks up the current language, falls back to
// English, then to the key itself. Static text in index.html carries data-i18n="key".
import en from './i18n/en.js';
import enAccess from './i18n/en-access.js';
import enEstimate from './i18n/en-estimate.js';
import enKinds from './i18n/en-kinds.js';
import enFiles from './i18n/en-files.js';
import enPlatform from './i18n/en-platform.js';
import enSession from './i18n/en-session.js';
import enMonitor from './i18n/en-monitor.js';
import enRun from './i18n/en-run.js';
import enSetup from './i18n/en-setup.js';
import enRent from './i18n/en-rent.js';
import enRelease from './i18n/en-release.js';
import enBilling from './i18n/en-billing.js';
import enGuard from './i18n/en-guard.js';
import enExplain from './i18n/en-explain.js';
// Start from a goal.
import enGoal from './i18n/en-goal.js';
import zh from './i18n/zh-CN.js';
import zhAccess from './i18n/zh-CN-access.js';
import zhEstimate from './i18n/zh-CN-estimate.js';
import zhKinds from './i18n/zh-CN-kinds.js';
import zhFiles from './i18n/zh-CN-files.js';
import zhPlatform from './i18n/zh-CN-platform.js';
import zhSession from './i18n/zh-CN-session.js';
import zhMonitor from './i18n/zh-CN-monitor.js';
import zhRun from './i18n/zh-CN-run.js';
import zhSetup from './i18n/zh-CN-setup.js';
import zhRent from './i18n/zh-CN-rent.js';
import zhRelease from './i18n/zh-CN-release.js';
import zhBilling from './i18n/zh-CN-billing.js';
import zhGuard from './i18n/zh-CN-guard.js';
import zhExplain from './i18n/zh-CN-explain.js';
// Start from a goal.
import zhGoal from './i18n/zh-CN-goal.js';

/** @typedef {import('../bindings/Language').Language} Language */
/** @typedef {import('../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** @type {Record<Language, Record<string, string>>} */
export const DICTIONARIES = {
  en: {
    ...en,
    ...enEstimate,
    ...enKinds,
    ...enAccess,
    ...enSetup,
    ...enFiles,
    ...enSession,
    ...enPlatform,
    ...enMonitor,
    ...enRun,
    ...enRent,
    ...enRelease,
    ...enBilling,
    ...enGuard,
    ...enExplain,
    // Start from a goal.
    ...enGoal,
  },
  'zh-CN': {
    ...zh,
    ...zhEstimate,
    ...zhKinds,
    ...zhAccess,
    ...zhSetup,
    ...zhFiles,
    ...zhSession,
    ...zhPlatform,
    ...zhMonitor,
    ...zhRun,
    ...zhRent,
    ...zhRelease,
    ...zhBilling,
    ...zhGuard,
    ...zhExplain,
    // Start from a goal.
    ...zhGoal,
  },
};

/** @type {Language} */
let current = 'en';
/** @type {Set<() => void>} */
const listeners = new Set();

/** @returns {Language} */
export const language = () => current;

/** @param {Language} lang */
export function setLanguage(lang) {
  current = lang;
  document.documentElement.lang = lang;
  translateStatic(document);
  for (const l of listeners) l();
}

/** Re-render when the language changes. @param {() => void} fn */
export function onLanguageChange(fn) {
  listeners.add(fn);
}

/**
 * @param {string} key
 * @param {Record<string, string | number>} [params]
 */
export function t(key, params = {}) {
  const text = DICTIONARIES[current][key] ?? DICTIONARIES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
}

/** Translate an error payload by its code (never by its English message). @param {ErrorPayload} e */
export function errorText(e) {
  const key = `error.${e.code}`;
  return key in DICTIONARIES.en ? t(key, { detail: e.detail ?? e.message }) : e.message;
}

/** One formatter per language and digits: building an Intl.NumberFormat is costly (ICU), and the Monitor formats dozens of numbers a second. @type {Map<string, Intl.NumberFormat>} */
const formats = new Map();

/** @param {string | number} n @param {number} [digits] */
export function num(n, digits = 1) {
  const v = typeof n === 'number' ? n : Number(n);
  // -0 and what rounds to zero print as 0, never "-0".
  const shown = Math.abs(v) < 0.5 * 10 ** -digits ? 0 : v;
  const key = `${current}|${digits}`;
  let f = formats.get(key);
  if (!f) {
    f = new Intl.NumberFormat(current, { maximumFractionDigits: digits });
    formats.set(key, f);
  }
  return f.format(shown);
}

/** @param {ParentNode} root */
export function translateStatic(root) {
  for (const node of root.querySelectorAll('[data-i18n]')) {
    const key = node.getAttribute('data-i18n');
    if (key) node.textContent = t(key);
  }
}
