// Step 2, Keys: SSH keys whose private half lives only in the OS keychain. Create, import, copy
// the public key (the exact authorized_keys line), delete with confirmation.
import { keyDelete, keyImport, keyList, keyLockAll, keyNew } from '../../api.js';
import { pickPaths } from '../files/files.js';
import { hideError, showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { language, t } from '../../i18n.js';
import { platform } from '../../platform.js';

/** @typedef {import('../../../bindings/KeyInfo').KeyInfo} KeyInfo */
/** @typedef {import('../../../bindings/KeyAlgorithm').KeyAlgorithm} KeyAlgorithm */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * @param {string} id
 * @param {string} label
 * @param {HTMLElement} control
 */
const field = (id, label, control) => el('label', { class: 'field', for: id }, el('span', { text: label }), control);

/** @param {string} id @param {string} [type] @param {string} [value] */
const input = (id, type = 'text', value = '') =>
  /** @type {HTMLInputElement} */ (el('input', { id, type, value, autocomplete: 'off', spellcheck: 'false' }));

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderKeys(root, signal) {
  const list = el('div', { id: 'key-list' });
  const status = el('p', { class: 'muted', id: 'key-status', role: 'status' });

  async function refresh(/** @type {KeyInfo[] | null} */ keys = null) {
    try {
      const shown = keys ?? (await keyList());
      if (signal.aborted) return;
      renderList(list, shown, refresh, status);
      hideError();
    } catch (e) {
      if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    }
  }

  // Create
  const label = input('key-label', 'text', 'gpurent');
  const algorithm = /** @type {HTMLSelectElement} */ (
    el(
      'select',
      { id: 'key-algorithm' },
      el('option', { value: 'ed25519', text: t('keys.alg.ed25519'), selected: true }),
      el('option', { value: 'rsa4096', text: t('keys.alg.rsa4096') }),
    )
  );
  const pass = input('key-passphrase', 'password');
  const create = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'key-create', class: 'primary', text: t('keys.create') })
  );
  create.addEventListener('click', async () => {
    create.disabled = true;
    status.textContent = t('keys.creating');
    try {
      const k = await keyNew(label.value.trim(), /** @type {KeyAlgorithm} */ (algorithm.value), pass.value || null);
      pass.value = '';
      status.textContent = t('keys.created', { label: k.label });
      await refresh();
    } catch (e) {
      status.textContent = '';
      showError(/** @type {ErrorPayload} */ (e));
    } finally {
      create.disabled = false;
    }
  });

  // Import
  const impLabel = input('key-import-label', 'text', 'imported');
  const impPath = input('key-import-path', 'text');
  // `~` is the home folder (the core expands it); the example looks like this OS's own paths.
  impPath.placeholder = t(`keys.import.placeholder.${platform()}`);
  const impPick = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'key-import-pick', text: t('keys.import.pick') })
  );
  impPick.addEventListener('click', async () => {
    const [file] = await pickPaths('key_file', t('keys.import.pick.title'));
    if (file) impPath.value = file;
  });
  const impPass = input('key-import-passphrase', 'password');
  const importBtn = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'key-import', text: t('keys.import') })
  );
  importBtn.addEventListener('click', async () => {
    importBtn.disabled = true;
    try {
      const k = await keyImport(impLabel.value.trim(), impPath.value.trim(), impPass.value || null);
      impPass.value = '';
      status.textContent = t('keys.imported', { label: k.label });
      await refresh();
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    } finally {
      importBtn.disabled = false;
    }
  });

  // Unlocked keys are held in memory for this session only; forget them on demand.
  const lock = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'key-lock', text: t('keys.lock') })
  );
  lock.addEventListener('click', async () => {
    try {
      const n = await keyLockAll();
      status.textContent = t('keys.locked', { n });
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    }
  });

  root.append(
    el('h1', { text: t('keys.title') }),
    el('p', { class: 'lead', text: t('keys.intro') }),
    list,
    status,
    el(
      'div',
      { class: 'card' },
      el('h2', { text: t('keys.new') }),
      el(
        'div',
        { class: 'form-row' },
        field('key-label', t('keys.label'), label),
        field('key-algorithm', t('keys.algorithm'), algorithm),
        field('key-passphrase', t('keys.passphrase'), pass),
      ),
      el('p', { class: 'muted small', text: t('keys.passphrase.hint') }),
      create,
    ),
    el(
      'details',
      { class: 'card' },
      el('summary', { text: t('keys.import.title') }),
      el('p', { class: 'muted small', text: t('keys.import.hint') }),
      el(
        'div',
        { class: 'form-row' },
        field('key-import-label', t('keys.label'), impLabel),
        field('key-import-path', t('keys.import.path'), impPath),
        impPick,
        field('key-import-passphrase', t('keys.passphrase'), impPass),
      ),
      importBtn,
    ),
    el('div', { class: 'card' }, el('p', { class: 'muted small', text: t('keys.lock.hint') }), lock),
  );
  await refresh();
}

/**
 * @param {HTMLElement} list
 * @param {KeyInfo[]} keys
 * @param {(keys?: KeyInfo[] | null) => Promise<void>} refresh
 * @param {HTMLElement} status
 */
function renderList(list, keys, refresh, status) {
  clear(list);
  if (keys.length === 0) {
    list.append(el('p', { class: 'card muted', id: 'key-empty', text: t('keys.empty') }));
    return;
  }
  for (const k of keys) {
    const pub = el('code', { class: 'pubkey', 'data-label': k.label, text: k.public_key });
    const copy = el('button', { type: 'button', class: 'copy', 'data-label': k.label, text: t('keys.copy') });
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(k.public_key);
        status.textContent = t('keys.copied');
      } catch {
        // No clipboard permission: select the text so Ctrl/Cmd+C works.
        const range = document.createRange();
        range.selectNodeContents(pub);
        const sel = window.getSelection();
        sel?.removeAllRanges();
        sel?.addRange(range);
        status.textContent = t('keys.copy.manual');
      }
    });
    const del = el('button', { type: 'button', class: 'danger ghost', 'data-label': k.label, text: t('keys.delete') });
    const confirmBox = el(
      'div',
      { class: 'confirm', hidden: true },
      el('span', { text: t('keys.delete.confirm', { label: k.label }) }),
      ' ',
    );
    const yes = el('button', {
      type: 'button',
      class: 'danger',
      id: `key-delete-yes-${k.label}`,
      text: t('keys.delete'),
    });
    const no = el('button', { type: 'button', text: t('keys.cancel') });
    confirmBox.append(yes, ' ', no);
    del.addEventListener('click', () => {
      confirmBox.hidden = false;
    });
    no.addEventListener('click', () => {
      confirmBox.hidden = true;
    });
    yes.addEventListener('click', async () => {
      try {
        await refresh(await keyDelete(k.label));
        status.textContent = t('keys.deleted', { label: k.label });
      } catch (e) {
        showError(/** @type {ErrorPayload} */ (e));
      }
    });
    list.append(
      el(
        'div',
        { class: 'card key', 'data-key': k.label },
        el(
          'div',
          { class: 'row' },
          el('strong', { text: k.label }),
          el('span', { class: 'badge', text: k.bits ? `${k.algorithm} ${k.bits}` : k.algorithm }),
          k.has_passphrase ? el('span', { class: 'badge', text: t('keys.protected') }) : null,
          el('span', { class: 'muted small', text: new Date(k.created_ms).toLocaleString(language()) }),
        ),
        el(
          'p',
          { class: 'small' },
          el('span', { class: 'muted', text: `${t('keys.fingerprint')} ` }),
          el('code', { class: 'fingerprint', text: k.fingerprint }),
        ),
        el('p', { class: 'muted small', text: t('keys.pub.hint') }),
        pub,
        el('div', { class: 'row' }, copy, del),
        confirmBox,
      ),
    );
  }
}
