// The error banner at the top of the main area. Errors are shown by code, translated.
import { byId, clear, el } from './dom.js';
import { errorText, t } from './i18n.js';

/** @typedef {import('../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** @param {ErrorPayload} e */
export function showError(e) {
  const banner = byId('banner');
  clear(banner);
  banner.append(
    el('strong', { text: t('error.title') }),
    ' ',
    el('span', { class: 'error-text', 'data-code': e.code, text: errorText(e) }),
  );
  if (e.detail) {
    banner.append(el('details', {}, el('summary', { text: t('error.details') }), el('code', { text: e.detail })));
  }
  banner.hidden = false;
}

export function hideError() {
  byId('banner').hidden = true;
}
