// Settings: language, theme, about, and the app's own health check (a long operation with
// progress over a channel and a cancel button).
import { opCancel, selfcheckRun, settingsGet, settingsSet } from '../../api.js';
import { clear, el } from '../../dom.js';
import { errorText, setLanguage, t } from '../../i18n.js';
import { applyTheme } from '../../theme.js';
import { setDefaultCurrency } from '../../money.js';
import { hideError, showError } from '../../banner.js';
import { accountsCard } from './accounts.js';

/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/Settings').Settings} Settings */
/** @typedef {import('../../../bindings/LanguagePref').LanguagePref} LanguagePref */
/** @typedef {import('../../../bindings/ThemePref').ThemePref} ThemePref */
/** @typedef {import('../../../bindings/Currency').Currency} Currency */
/** @typedef {import('../../../bindings/Progress').Progress} Progress */

/**
 * @param {string} id
 * @param {string} label
 * @param {[string, string][]} options value, text
 * @param {string} value
 */
function select(id, label, options, value) {
  const sel = /** @type {HTMLSelectElement} */ (el('select', { id }));
  for (const [v, text] of options) sel.append(el('option', { value: v, text, selected: v === value }));
  return { sel, row: el('label', { class: 'field', for: id }, el('span', { text: label }), sel) };
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderSettings(root, signal) {
  let view;
  try {
    view = await settingsGet();
  } catch (e) {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return;
  }
  if (signal.aborted) return;
  /** @type {Settings} */
  let settings = { ...view.settings };
  const status = el('p', { class: 'muted', id: 'settings-status', role: 'status' });

  const lang = select(
    'settings-language',
    t('settings.language'),
    [
      ['system', t('settings.language.system', { os: view.os_locale ?? '?' })],
      ['en', 'English'],
      ['zh-CN', '简体中文'],
    ],
    settings.language,
  );
  const theme = select(
    'settings-theme',
    t('settings.theme'),
    [
      ['system', t('settings.theme.system')],
      ['light', t('settings.theme.light')],
      ['dark', t('settings.theme.dark')],
    ],
    settings.theme,
  );

  const currency = select(
    'settings-currency',
    t('settings.currency'),
    [
      ['auto', t('settings.currency.auto', { currency: t(`currency.${view.effective_currency}`) })],
      ['CNY', t('currency.CNY')],
      ['USD', t('currency.USD')],
    ],
    settings.currency ?? 'auto',
  );

  /** @param {Settings} next */
  async function save(next) {
    try {
      const saved = await settingsSet(next);
      settings = saved.settings;
      hideError();
      setDefaultCurrency(saved.effective_currency);
      applyTheme(saved.settings.theme);
      setLanguage(saved.effective_language); // re-renders this screen in the new language
      const s = document.getElementById('settings-status');
      if (s) s.textContent = t('settings.saved');
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    }
  }
  lang.sel.addEventListener('change', () =>
    save({ ...settings, language: /** @type {LanguagePref} */ (lang.sel.value) }),
  );
  theme.sel.addEventListener('change', () => save({ ...settings, theme: /** @type {ThemePref} */ (theme.sel.value) }));
  currency.sel.addEventListener('change', () =>
    save({
      ...settings,
      currency: currency.sel.value === 'auto' ? null : /** @type {Currency} */ (currency.sel.value),
    }),
  );

  root.append(
    el('h1', { text: t('settings.title') }),
    el(
      'div',
      { class: 'card' },
      lang.row,
      theme.row,
      currency.row,
      el('p', { class: 'muted small', text: t('settings.currency.note') }),
      status,
    ),
    accountsCard(signal),
    selfCheckCard(),
    el(
      'div',
      { class: 'card' },
      el('h2', { text: t('settings.about') }),
      el('p', { text: t('settings.version', { v: view.version }) }),
      el('p', { class: 'muted', text: t('settings.datadir', { dir: view.data_dir }) }),
    ),
  );
}

function selfCheckCard() {
  const run = /** @type {HTMLButtonElement} */ (
    el('button', { id: 'selfcheck-run', type: 'button', class: 'primary', text: t('settings.check.run') })
  );
  const cancel = /** @type {HTMLButtonElement} */ (
    el('button', { id: 'selfcheck-cancel', type: 'button', text: t('settings.check.cancel'), hidden: true })
  );
  const progress = /** @type {HTMLProgressElement} */ (
    el('progress', { id: 'selfcheck-progress', max: '1', value: '0', hidden: true })
  );
  const line = el('p', { id: 'selfcheck-line', class: 'muted', role: 'status' });
  const results = el('ul', { id: 'selfcheck-results', class: 'checklist' });
  /** @type {string | null} */
  let opId = null;

  run.addEventListener('click', async () => {
    run.disabled = true;
    cancel.hidden = false;
    progress.hidden = false;
    clear(results);
    try {
      const report = await selfcheckRun((/** @type {Progress} */ p) => {
        if (p.kind === 'started') opId = p.op_id;
        if (p.kind === 'step') {
          const n = p.total_steps ?? 0;
          progress.max = n || 1;
          progress.value = p.index;
          line.textContent = t('settings.check.running', { step: t(`check.${p.step}`), i: p.index + 1, n });
        }
      });
      progress.value = progress.max;
      for (const c of report.checks) {
        const text = c.ok
          ? t(`check.${c.step}`)
          : `${t(`check.${c.step}`)} — ${errorText({ code: c.code ?? 'internal', message: c.detail })}`;
        results.append(el('li', { class: c.ok ? 'ok' : 'fail', 'data-step': c.step, text }));
      }
      line.textContent = report.all_ok ? t('settings.check.ok') : t('settings.check.failed');
    } catch (e) {
      const err = /** @type {ErrorPayload} */ (e);
      line.textContent = err.code === 'cancelled' ? t('settings.check.cancelled') : errorText(err);
    } finally {
      run.disabled = false;
      cancel.hidden = true;
      opId = null;
    }
  });
  cancel.addEventListener('click', () => {
    if (opId) opCancel(opId).catch(() => {});
  });

  return el(
    'div',
    { class: 'card' },
    el('h2', { text: t('settings.check.title') }),
    el('p', { class: 'muted', text: t('settings.check.intro') }),
    el('div', { class: 'row' }, run, cancel, progress),
    line,
    results,
  );
}
