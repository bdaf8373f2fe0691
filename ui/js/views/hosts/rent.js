// The rent flow, opened from a live offer in Pick a card: image → disk → key → the money
// confirm step (price now, what a stopped machine still costs, how the provider bills) → create.
// The create runs as an operation in ops.js (kind `rent`), so its live progress survives
// navigation: the Rented machines section of the Hosts step (rented.js) shows it, with Cancel,
// and its outcome (the saved host, its pinned fingerprint, "Open Setup").
import { keyList, rent, rentOptions } from '../../api.js';
import { el } from '../../dom.js';
import { DICTIONARIES, t } from '../../i18n.js';
import { money } from '../../money.js';
import * as ops from '../../ops.js';
import { moneyLines, offerTitle, outcomes, providerErrorText } from './renting.js';

/** @typedef {import('../../../bindings/ProviderOffer').ProviderOffer} ProviderOffer */
/** @typedef {import('../../../bindings/RentOptions').RentOptions} RentOptions */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * Open the rent dialog for one offer.
 * @param {ProviderOffer} offer
 */
export async function openRent(offer) {
  document.getElementById('rent-dialog')?.remove();
  const status = el('p', { class: 'muted small', id: 'rent-status', role: 'status' });
  const body = el('div', { id: 'rent-body' });
  const close = el('button', { type: 'button', id: 'rent-close', text: t('rent.close') });
  const dialog = /** @type {HTMLDialogElement} */ (
    el(
      'dialog',
      { id: 'rent-dialog', class: 'prompt rent-dialog', 'data-offer': offer.offer_id },
      el('h3', { text: t('rent.title', { offer: offerTitle(offer) }) }),
      body,
      status,
      el('div', { class: 'row end' }, close),
    )
  );
  close.addEventListener('click', () => {
    dialog.close();
    dialog.remove();
  });
  dialog.addEventListener('cancel', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();

  /** @type {RentOptions} */
  let options;
  /** @type {import('../../../bindings/KeyInfo').KeyInfo[]} */
  let keys;
  try {
    [options, keys] = await Promise.all([rentOptions(offer, null), keyList()]);
  } catch (e) {
    status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    return;
  }
  const choice = { image: options.images[0]?.image ?? '', disk: options.disk_gb, key: keys[0]?.label ?? '' };
  choose();

  /** Step 1: image, disk, key. */
  function choose() {
    status.textContent = '';
    const image = /** @type {HTMLSelectElement} */ (el('select', { id: 'rent-image' }));
    for (const i of options.images) {
      const what = i.torch ? t('rent.image.torch', { torch: i.torch, cuda: i.cuda }) : t('rent.image.default');
      image.append(el('option', { value: i.image, text: `${i.image} — ${what}`, selected: i.image === choice.image }));
    }
    const imageNote = el('p', { class: 'muted small', id: 'rent-image-note' });
    const showNote = () => {
      const i = options.images.find((x) => x.image === image.value);
      imageNote.textContent = i
        ? `${i.host_too_old ? `${t('rent.image.host_too_old', { need: i.host_cuda_min, host: offer.host_cuda ?? '?' })} ` : ''}${t('rent.image.verified', { verified: i.verified })}`
        : '';
      imageNote.classList.toggle('bad-text', Boolean(i?.host_too_old));
    };
    image.addEventListener('change', showNote);
    showNote();
    const disk = /** @type {HTMLInputElement} */ (
      el('input', { id: 'rent-disk', type: 'number', min: '10', step: '1', value: String(choice.disk) })
    );
    const key = /** @type {HTMLSelectElement} */ (el('select', { id: 'rent-key' }));
    for (const k of keys)
      key.append(
        el('option', {
          value: k.label,
          text: `${k.label} (${k.algorithm})${k.has_passphrase ? ` — ${t('rent.key.passphrase')}` : ''}`,
          selected: k.label === choice.key,
        }),
      );
    const next = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        id: 'rent-next',
        class: 'primary',
        text: t('rent.next'),
        disabled: keys.length === 0,
      })
    );
    next.addEventListener('click', async () => {
      const gb = Math.round(Number(disk.value));
      if (!Number.isFinite(gb) || gb < 10) {
        status.textContent = t('rent.disk.invalid');
        return;
      }
      Object.assign(choice, { image: image.value, disk: gb, key: key.value });
      try {
        options = await rentOptions(offer, gb);
        confirm();
      } catch (e) {
        status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
      }
    });
    body.replaceChildren(
      el('label', { class: 'field', for: 'rent-image' }, el('span', { text: t('rent.image') }), image),
      imageNote,
      el('label', { class: 'field', for: 'rent-disk' }, el('span', { text: t('rent.disk') }), disk),
      keys.length
        ? el('label', { class: 'field', for: 'rent-key' }, el('span', { text: t('rent.key') }), key)
        : el('p', { class: 'bad-text', id: 'rent-nokey', text: t('rent.key.none') }),
      el('p', {
        class: 'muted small',
        // How the key reaches the machine (AutoDL: with its root password, once).
        text:
          `rent.key.how.${offer.provider}` in DICTIONARIES.en
            ? t(`rent.key.how.${offer.provider}`)
            : t('rent.key.how', { provider: t(`rent.provider.${offer.provider}`) }),
      }),
      el('div', { class: 'row' }, next),
    );
  }

  /** Step 2: the money, stated before anything is created. */
  function confirm() {
    const list = el('ul', { class: 'money', id: 'rent-money' });
    for (const [k, text] of moneyLines(offer.provider, options, offer.gpu_count, offer.gpu))
      list.append(el('li', { 'data-money': k, text }));
    const back = el('button', { type: 'button', id: 'rent-back', text: t('rent.back') });
    const go = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        id: 'rent-create',
        class: 'primary',
        text: t('rent.create', { price: money(options.price_per_hour_usd, options.terms.currency, 3) }),
      })
    );
    back.addEventListener('click', choose);
    go.addEventListener('click', () => {
      go.disabled = true;
      start(offer, choice, options.price_per_hour_usd);
      dialog.close();
      dialog.remove();
      // Watch it on the Hosts step (the progress lives in ops.js, not in this dialog).
      document.getElementById('nav-hosts')?.click();
    });
    body.replaceChildren(
      el('p', {
        class: 'small',
        text: t('rent.confirm.intro', { image: choice.image, disk: choice.disk, key: choice.key }),
      }),
      list,
      el('div', { class: 'row' }, go, back),
    );
  }
}

/**
 * Start the rent operation (kind `rent`, scope = the offer id).
 * @param {ProviderOffer} offer @param {{ image: string, disk: number, key: string }} choice
 * @param {number} confirmed the price per hour stated in the money step (read at the chosen disk)
 */
function start(offer, choice, confirmed) {
  // Rented with the account that listed the offer (two accounts of one provider can both list it).
  const request = {
    provider: offer.provider,
    offer_id: offer.offer_id,
    image: choice.image || null,
    disk_gb: choice.disk,
    no_wait: false,
    ready_timeout_s: null,
    account: offer.account ?? undefined,
    // The price the user confirmed (read again at the chosen disk: Vast's price includes it) is
    // the most they are rented at (refused: price_rose).
    max_price_usd: confirmed,
  };
  const started = Date.now();
  const { op, result } = ops.start('rent', offer.offer_id, { title: offerTitle(offer) }, (on) =>
    rent(request, choice.key, on),
  );
  result
    .then(
      (instance) => outcomes.push({ seq: op.seq, started, offer, instance, error: null }),
      (/** @type {ErrorPayload} */ error) => outcomes.push({ seq: op.seq, started, offer, instance: null, error }),
    )
    .finally(() => {
      // Redraw the Rented section (and the Hosts step's list: a ready machine is a saved host).
      document.getElementById('rented')?.dispatchEvent(new CustomEvent('rent-finished', { bubbles: true }));
    });
}
