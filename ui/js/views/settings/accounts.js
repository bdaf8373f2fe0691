// Settings → Accounts: connect a provider account (the API key is checked with one authenticated
// read by the core, then kept only in the OS keychain), test it, see which are connected (and
// those that come from GPURENT_<P>_API_KEY in the environment), remove one after a confirm.
// The key is read from its password field once, sent as the `Secret` argument, and the field is
// emptied at once; nothing in this file keeps it.
import { providerAdd, providerList, providerRemove, providerTest } from '../../api.js';
import { clear, el } from '../../dom.js';
import { DICTIONARIES, t } from '../../i18n.js';
import { providerErrorText } from '../hosts/renting.js';

/** @typedef {import('../../../bindings/Account').Account} Account */
/** @typedef {import('../../../bindings/ProviderKind').ProviderKind} ProviderKind */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** @type {ProviderKind[]} */
const PROVIDERS = ['runpod', 'vast', 'lambda', 'autodl'];

/** @param {number | null} ms */
const when = (ms) => (ms === null ? t('accounts.never') : new Date(ms).toLocaleString());

/** The Accounts card (it loads its list itself). @param {AbortSignal} signal the Settings screen's */
export function accountsCard(signal) {
  const list = el('ul', { class: 'accounts', id: 'accounts-list' });
  const status = el('p', { class: 'muted', id: 'accounts-status', role: 'status' });
  const provider = /** @type {HTMLSelectElement} */ (el('select', { id: 'account-provider' }));
  for (const p of PROVIDERS) provider.append(el('option', { value: p, text: t(`rent.provider.${p}`) }));
  const name = /** @type {HTMLInputElement} */ (
    el('input', {
      id: 'account-name',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: t('accounts.name.placeholder'),
    })
  );
  const key = /** @type {HTMLInputElement} */ (
    el('input', { id: 'account-key', type: 'password', autocomplete: 'off', spellcheck: 'false' })
  );
  const add = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'account-add', class: 'primary', text: t('accounts.add') })
  );
  // What a provider's key is and what its account needs (AutoDL: a real-name verified account,
  // its developer token), shown for the provider picked.
  const note = el('p', { class: 'muted small', id: 'account-provider-note' });
  const showNote = () => {
    const k = `accounts.note.${provider.value}`;
    note.textContent = k in DICTIONARIES.en ? t(k) : '';
    note.hidden = !note.textContent;
  };
  provider.addEventListener('change', showNote);
  showNote();

  async function refresh() {
    try {
      const accounts = await providerList();
      if (!signal.aborted) draw(list, accounts, status, refresh);
    } catch (e) {
      if (!signal.aborted) status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    }
  }

  add.addEventListener('click', async () => {
    if (!key.value) {
      status.textContent = t('accounts.key.empty');
      return;
    }
    const kind = /** @type {ProviderKind} */ (provider.value);
    const label = name.value.trim() || null;
    add.disabled = true;
    status.textContent = t('accounts.checking', { provider: t(`rent.provider.${kind}`) });
    // The key leaves the field now and is passed straight to the command; no variable holds it.
    const call = providerAdd(kind, label, key.value);
    key.value = '';
    try {
      const check = await call;
      name.value = '';
      status.textContent = t('accounts.added', {
        name: check.account.name,
        who: check.account.account_label ?? t(`rent.provider.${kind}`),
      });
    } catch (e) {
      status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    } finally {
      add.disabled = false;
    }
    await refresh();
  });

  refresh();
  return el(
    'div',
    { class: 'card', id: 'accounts' },
    el('h2', { text: t('accounts.title') }),
    el('p', { class: 'muted small', text: t('accounts.intro') }),
    list,
    el('h3', { text: t('accounts.add.title') }),
    el(
      'div',
      { class: 'form-row' },
      el('label', { class: 'field', for: 'account-provider' }, el('span', { text: t('accounts.provider') }), provider),
      el('label', { class: 'field', for: 'account-name' }, el('span', { text: t('accounts.name') }), name),
    ),
    note,
    el('label', { class: 'field', for: 'account-key' }, el('span', { text: t('accounts.key') }), key),
    el('p', { class: 'muted small', text: t('accounts.key.hint') }),
    el('div', { class: 'row' }, add),
    status,
  );
}

/**
 * @param {HTMLElement} list @param {Account[]} accounts @param {HTMLElement} status
 * @param {() => Promise<void>} refresh
 */
function draw(list, accounts, status, refresh) {
  clear(list);
  if (accounts.length === 0) list.append(el('li', { class: 'muted', id: 'accounts-none', text: t('accounts.none') }));
  for (const a of accounts) {
    const env = a.key_source === 'environment';
    const result = el('span', { class: 'small account-result', role: 'status' });
    const test = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: 'account-test', text: t('accounts.test') })
    );
    test.addEventListener('click', async () => {
      test.disabled = true;
      result.className = 'small account-result muted';
      result.textContent = t('accounts.testing');
      try {
        const c = await providerTest(a.name);
        result.className = 'small account-result ok-text';
        result.textContent = t('accounts.test.ok', { who: c.account.account_label ?? a.name });
      } catch (e) {
        result.className = 'small account-result bad-text';
        result.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
      } finally {
        test.disabled = false;
      }
    });
    const confirm = el('span', { class: 'confirm', hidden: true });
    const remove = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: 'danger ghost account-remove', text: t('accounts.remove') })
    );
    remove.addEventListener('click', () => {
      const yes = el('button', { type: 'button', class: 'danger account-remove-yes', text: t('accounts.remove.yes') });
      const no = el('button', { type: 'button', class: 'account-remove-no', text: t('accounts.remove.no') });
      confirm.replaceChildren(
        el('span', { class: 'small', text: t('accounts.remove.ask', { name: a.name }) }),
        ' ',
        yes,
        ' ',
        no,
      );
      confirm.hidden = false;
      no.addEventListener('click', () => {
        confirm.hidden = true;
      });
      yes.addEventListener('click', async () => {
        try {
          await providerRemove(a.name);
          status.textContent = t('accounts.removed', { name: a.name });
        } catch (e) {
          status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
        }
        await refresh();
      });
    });
    list.append(
      el(
        'li',
        { 'data-account': a.name, 'data-source': a.key_source },
        el('strong', { text: a.name }),
        ' ',
        el('span', { class: 'muted', text: t(`rent.provider.${a.provider}`) }),
        el('span', {
          class: env ? 'tag warn' : 'tag',
          text: env ? t('accounts.source.environment') : t('accounts.source.keychain'),
        }),
        a.account_label ? el('span', { class: 'small', text: ` ${a.account_label}` }) : null,
        el('span', { class: 'muted small', text: ` · ${t('accounts.checked', { when: when(a.checked_ms) })}` }),
        el(
          'div',
          { class: 'row' },
          test,
          env
            ? el('span', {
                class: 'muted small',
                text: t('accounts.env.remove', { var: `GPURENT_${a.provider.toUpperCase()}_API_KEY` }),
              })
            : remove,
          result,
        ),
        confirm,
      ),
    );
  }
}
