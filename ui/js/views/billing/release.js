// The release checklist dialog (docs/release.md). Before a machine is released: result folders on
// it that changed since they were last downloaded (with a "download first" hint), the disks the
// release deletes, what stopping instead would cost, and a button that saves the environment
// recipe. `confirmRelease(instanceId)` resolves true only when the user confirms; the caller then
// sends the release itself (instance_action). Text is set with textContent only (dom.js).
import { releaseChecklist, releaseSaveRecipe } from '../../api.js';
import { el, clear, newestOnly } from '../../dom.js';
import { t, errorText } from '../../i18n.js';
import { money as moneyOf } from '../../money.js';

/** @typedef {import('../../../bindings/ReleaseChecklist').ReleaseChecklist} ReleaseChecklist */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * An amount of the machine's, in its billing currency (`c.currency`).
 * @param {number} v @param {ReleaseChecklist['currency']} currency
 */
const money = (v, currency) => moneyOf(v, currency, v >= 10 ? 0 : 2);

/**
 * The checklist's parts as nodes.
 * @param {ReleaseChecklist} c
 * @returns {HTMLElement}
 */
function render(c) {
  const box = el('div', { class: 'release-body', id: 'release-body' });
  if (c.remote_error) {
    box.append(
      el('p', {
        class: 'bad-text small',
        id: 'release-remote-error',
        text: t('release.unreachable', { code: c.remote_error.code }),
      }),
    );
  }
  if (c.notes.includes('no_host')) box.append(el('p', { class: 'small', text: t('release.no_host') }));

  const folders = el(
    'section',
    { class: 'release-folders', id: 'release-changed' },
    el('h4', { text: t('release.folders.title') }),
  );
  if (c.folders.length === 0) folders.append(el('p', { class: 'small', text: t('release.folders.none') }));
  for (const f of c.changed) {
    const why =
      f.reason === 'never_downloaded'
        ? t('release.folder.never')
        : t('release.folder.changed', { n: String(f.files_changed) });
    folders.append(
      el(
        'div',
        { class: 'release-folder changed', 'data-path': f.path },
        el('strong', { text: t('release.download_first') }),
        el('code', { text: f.path }),
        el('span', { class: 'small', text: why }),
        f.sample.length
          ? el('span', { class: 'small muted', text: t('release.folder.example', { path: f.sample[0] }) })
          : null,
      ),
    );
  }
  for (const p of c.unchanged)
    folders.append(
      el(
        'div',
        { class: 'release-folder ok', 'data-path': p },
        el('code', { text: p }),
        el('span', { class: 'small', text: t('release.folder.up_to_date') }),
      ),
    );
  for (const p of c.missing)
    folders.append(
      el(
        'div',
        { class: 'release-folder missing', 'data-path': p },
        el('code', { text: p }),
        el('span', { class: 'small', text: t('release.folder.missing') }),
      ),
    );
  for (const p of c.unchecked)
    folders.append(
      el(
        'div',
        { class: 'release-folder changed unchecked', 'data-path': p },
        el('strong', { text: t('release.folder.unchecked') }),
        el('code', { text: p }),
      ),
    );
  if (c.notes.includes('incomplete_read'))
    folders.append(el('p', { class: 'bad-text small', id: 'release-incomplete', text: t('release.incomplete_read') }));
  box.append(folders);

  if (c.disks.length) {
    const disks = el(
      'section',
      { class: 'release-disks', id: 'release-disks' },
      el('h4', { text: t('release.disks.title') }),
    );
    for (const d of c.disks) {
      const size =
        d.size_gb === null ? t('release.disk.size_unknown') : t('release.disk.size', { gb: String(d.size_gb) });
      disks.append(el('p', { text: t(`release.disk.${d.kind}`, { size }) }));
    }
    box.append(disks);
  }

  const s = c.stop_instead;
  if (s) {
    let text;
    if (!s.possible) text = t('release.stop.impossible');
    else if (s.keeps_disk) text = t('release.stop.keeps', { month: money(s.usd_per_month, c.currency) });
    else text = t('release.stop.wipes', { month: money(s.usd_per_month, c.currency) });
    box.append(
      el(
        'section',
        { class: 'release-stop', id: 'release-stop' },
        el('h4', { text: t('release.stop.title') }),
        el('p', { text }),
      ),
    );
  }
  const nowKey = c.ledger_state === 'provisioning' ? 'release.now.starting' : 'release.now';
  box.append(
    el('p', {
      class: 'small',
      id: 'release-now',
      'data-state': c.ledger_state ?? '',
      text: t(nowKey, { rate: money(c.usd_per_hour_now, c.currency) }),
    }),
  );
  return box;
}

/**
 * Show the release checklist of `instanceId` and ask. Resolves true only when the user confirms
 * the release (the caller then releases); false when closed or cancelled. `folders` fill the
 * result folders field (a recipe's), checked at once.
 * @param {string} instanceId
 * @param {string[]} [folders]
 * @returns {Promise<boolean>}
 */
export function confirmRelease(instanceId, folders = []) {
  return new Promise((resolve) => {
    /** @type {ReleaseChecklist | null} */
    let current = null;
    const body = el('div', { id: 'release-content' }, el('p', { class: 'small', text: t('release.loading') }));
    const foldersInput = /** @type {HTMLTextAreaElement} */ (
      el('textarea', {
        id: 'release-folders',
        rows: '3',
        spellcheck: 'false',
        placeholder: t('release.folders.placeholder'),
      })
    );
    foldersInput.value = folders.join('\n');
    const check = el('button', { type: 'button', id: 'release-check', text: t('release.check') });
    const save = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', id: 'release-save-recipe', disabled: true, text: t('release.recipe.save') })
    );
    const saved = el('p', { class: 'small', id: 'release-recipe-saved' });
    const ok = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        id: 'release-confirm',
        class: 'danger',
        disabled: true,
        text: t('release.confirm'),
      })
    );
    const cancel = el('button', { type: 'button', id: 'release-cancel', text: t('release.cancel') });
    const dialog = /** @type {HTMLDialogElement} */ (
      el(
        'dialog',
        { id: 'release-dialog', class: 'prompt release', 'data-instance': instanceId },
        el('h3', { text: t('release.title', { id: instanceId }) }),
        el('p', { class: 'small', text: t('release.intro') }),
        el(
          'label',
          { class: 'field', for: 'release-folders' },
          el('span', { text: t('release.folders.label') }),
          foldersInput,
        ),
        el('div', { class: 'row' }, check),
        body,
        el('div', { class: 'row' }, save, saved),
        el('div', { class: 'row' }, ok, cancel),
      )
    );

    /** @param {boolean} answer */
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };

    // Only the newest read draws: a read started when the dialog opened (no folders) must not
    // replace the answer for the folders the user asked about since.
    const reads = newestOnly();
    const load = async () => {
      const newest = reads.begin();
      const folders = foldersInput.value
        .split('\n')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
      clear(body);
      body.append(el('p', { class: 'small', text: t('release.loading') }));
      ok.disabled = true;
      save.disabled = true;
      try {
        const got = await releaseChecklist(instanceId, folders);
        if (!newest()) return;
        current = got;
        clear(body);
        body.append(render(current));
        save.disabled = !current.recipe;
        ok.disabled = false;
        ok.textContent = current.changed.length ? t('release.confirm.anyway') : t('release.confirm');
      } catch (e) {
        if (!newest()) return;
        clear(body);
        body.append(
          el('p', { class: 'bad-text', id: 'release-error', text: errorText(/** @type {ErrorPayload} */ (e)) }),
        );
        // Without a checklist the release must still be possible: a machine that cannot be read
        // may be the one that bills for nothing.
        ok.disabled = false;
        ok.textContent = t('release.confirm.anyway');
      }
    };

    check.addEventListener('click', () => {
      void load();
    });
    save.addEventListener('click', async () => {
      if (!current?.recipe) return;
      save.disabled = true;
      try {
        const path = await releaseSaveRecipe(current.recipe);
        saved.textContent = t('release.recipe.saved', { path });
      } catch (e) {
        saved.textContent = errorText(/** @type {ErrorPayload} */ (e));
        save.disabled = false;
      }
    });
    ok.addEventListener('click', () => done(true));
    cancel.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (ev) => {
      ev.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    void load();
  });
}
