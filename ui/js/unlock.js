// The passphrase prompt. A key protected by a passphrase makes any step that logs in with it fail
// with `passphrase_required` naming the key (error.data.key_label); api.js then asks here, once,
// calls key_unlock (the core keeps the unlocked key in memory for this app session only) and
// retries the step. Several steps waiting on the same key share one prompt.
import { el } from './dom.js';
import { t } from './i18n.js';

/** @type {Map<string, Promise<string | null>>} */
const asking = new Map();

/**
 * Ask for the passphrase of `label`; null when the user closed the prompt.
 * @param {string} label
 * @param {boolean} wrong the previous answer was wrong
 * @returns {Promise<string | null>}
 */
export function askPassphrase(label, wrong) {
  const open = asking.get(label);
  if (open) return open;
  const answer = new Promise((resolve) => {
    const input = /** @type {HTMLInputElement} */ (
      el('input', { id: 'passphrase-input', type: 'password', autocomplete: 'off', spellcheck: 'false' })
    );
    const ok = el('button', { type: 'submit', id: 'passphrase-ok', class: 'primary', text: t('unlock.ok') });
    const cancel = el('button', { type: 'button', id: 'passphrase-cancel', text: t('unlock.cancel') });
    const form = el(
      'form',
      { method: 'dialog' },
      el('h3', { text: t('unlock.title', { label }) }),
      el('p', { class: 'small', text: t('unlock.body') }),
      wrong ? el('p', { class: 'bad-text small', id: 'passphrase-wrong', text: t('error.wrong_passphrase') }) : null,
      el('label', { class: 'field', for: 'passphrase-input' }, el('span', { text: t('keys.passphrase.label') }), input),
      el('div', { class: 'row' }, ok, cancel),
    );
    const dialog = /** @type {HTMLDialogElement} */ (
      el('dialog', { id: 'passphrase-dialog', class: 'prompt', 'data-key': label }, form)
    );
    /** @param {string | null} value */
    const done = (value) => {
      input.value = '';
      dialog.close();
      dialog.remove();
      asking.delete(label);
      resolve(value);
    };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const v = input.value;
      done(v ? v : null);
    });
    cancel.addEventListener('click', () => done(null));
    dialog.addEventListener('cancel', (ev) => {
      ev.preventDefault();
      done(null);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
  asking.set(label, answer);
  return answer;
}
