// Live offers in Pick a card: after an estimate, when a provider account is connected, the
// connected accounts' offers for the job's GPU count are fetched and joined to the ranked cards
// by the catalog card the core matched (`card_id`): the job's cost at each price (the estimate's
// hours × the offer's price per hour), the card's verdict for this job, and whether a published
// PyTorch wheel runs on the host's CUDA (`runs_pytorch`, from the core's compat tables). Offers
// whose GPU cannot hold the job are left out (counted); those that cannot run PyTorch are marked
// and cannot be rented from here. Without an account nothing is fetched and the manual price
// entry stays the only price.
import { offersList, providerList } from '../../api.js';
import { el } from '../../dom.js';
import { language, num, t } from '../../i18n.js';
import { openRent } from '../hosts/rent.js';
import { providerErrorText, trafficText } from '../hosts/renting.js';
import { money } from '../../money.js';

/** @typedef {import('../../../bindings/Estimate').Estimate} Estimate */
/** @typedef {import('../../../bindings/CardFit').CardFit} CardFit */
/** @typedef {import('../../../bindings/ProviderOffer').ProviderOffer} ProviderOffer */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** @param {number} ms */
const hhmm = (ms) => new Date(ms).toLocaleTimeString(language(), { hour: '2-digit', minute: '2-digit' });

/**
 * Whether the job fits on this offer's GPUs (the card's verdict for the job, and enough of them).
 * @param {CardFit | undefined} f @param {ProviderOffer} o
 */
const fits = (f, o) =>
  f !== undefined && f.verdict !== 'does_not_fit' && f.verdict !== 'partial_offload' && f.gpus <= o.gpu_count;

/**
 * The job's cost at this offer's price: the estimate's hours on this card × the price per hour
 * (only when the offer has the GPU count the estimate timed; else unknown).
 * @param {CardFit | undefined} f @param {ProviderOffer} o
 */
function jobCost(f, o) {
  const hours = f?.speed?.job_hours;
  if (!f || hours === null || hours === undefined || f.gpus !== o.gpu_count) return null;
  return hours * o.price_per_hour_usd;
}

/**
 * Fetch and draw the live offers for an estimate into `root` (a slot below the ranked table).
 * Does nothing when no account is connected.
 * @param {HTMLElement} root @param {Estimate} e @param {AbortSignal} signal the estimate's drawing
 */
export async function renderLiveOffers(root, e, signal) {
  let accounts;
  try {
    accounts = await providerList();
  } catch {
    return;
  }
  if (accounts.length === 0 || signal.aborted) return;
  const status = el('p', { class: 'muted', id: 'live-status', role: 'status', text: t('live.fetching') });
  const section = el('section', { class: 'card wide', id: 'live-offers' }, el('h2', { text: t('live.title') }), status);
  root.replaceChildren(section);
  let view;
  try {
    view = await offersList({ gpu: null, count: e.gpus, min_vram_gib: null, max_price_per_hour_usd: null });
  } catch (err) {
    status.textContent = providerErrorText(/** @type {ErrorPayload} */ (err));
    return;
  }
  if (signal.aborted) return;
  for (const f of view.failed_accounts)
    section.append(
      el('p', {
        class: 'bad-text small',
        'data-account': f.account,
        text: t('live.failed', { account: f.account, why: providerErrorText({ code: f.code, message: f.message }) }),
      }),
    );
  const byCard = new Map(e.fits.map((f) => [f.card_id, f]));
  const rows = view.offers.map((o) => ({ o, f: o.card_id ? byCard.get(o.card_id) : undefined }));
  const shown = rows.filter(({ o, f }) => fits(f, o) || f === undefined);
  const hidden = rows.length - shown.length;
  // Rentable first, then the cheapest job (or hour).
  const rank = (/** @type {{ o: ProviderOffer, f: CardFit | undefined }} */ r) => (r.o.runs_pytorch === false ? 1 : 0);
  shown.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (jobCost(a.f, a.o) ?? a.o.price_per_hour_usd * 1e6) - (jobCost(b.f, b.o) ?? b.o.price_per_hour_usd * 1e6),
  );
  const fetched = view.offers[0]?.fetched_ms;
  status.textContent =
    fetched === undefined ? t('live.none') : t('live.fetched', { time: hhmm(fetched), n: shown.length });
  if (hidden > 0)
    section.append(el('p', { class: 'muted small', id: 'live-hidden', text: t('live.hidden', { n: hidden }) }));

  // The ranked table above: the live price replaces "gpurent ships no prices".
  const none = document.getElementById('est-noprices');
  if (none && fetched !== undefined) {
    none.textContent = t('live.price_line', { time: hhmm(fetched) });
    none.id = 'est-liveprices';
  }
  // Cheapest first, so each card is marked with its cheapest live offer (and, where the user
  // entered no price, the job's cost at it).
  for (const { o, f } of [...shown].sort((a, b) => a.o.price_per_hour_usd - b.o.price_per_hour_usd)) {
    if (o.runs_pytorch === false || !f) continue;
    // The cards' "live from $…" and job cost are in US dollars: an offer in another currency
    // (AutoDL, CNY) is shown in the table only, never converted onto a card.
    if (o.currency !== 'USD') continue;
    const tr = document.querySelector(`#est-cards tr[data-card-id="${CSS.escape(f.card_id)}"]`);
    if (!tr || tr.querySelector('.live-price')) continue;
    tr.querySelector('td:first-child')?.append(
      el('span', { class: 'tag live-price', text: t('live.from', { price: num(o.price_per_hour_usd, 3) }) }),
    );
    const costCell = tr.querySelector('td:last-child');
    const cost = jobCost(f, o);
    if (costCell && costCell.textContent === t('spec.none') && cost !== null) {
      costCell.textContent = t('live.cost.cell', { cost: num(cost, 2) });
      costCell.classList.add('live-cost');
    }
  }
  if (shown.length === 0) return;

  const head = el('tr');
  for (const k of ['provider', 'gpu', 'price', 'cost', 'region', 'host', 'rent'])
    head.append(el('th', { scope: 'col', text: t(`live.col.${k}`) }));
  const body = el('tbody');
  // Two accounts of one provider list the same offers: each row says whose it is (and rents with it).
  const providers = accounts.map((a) => a.provider);
  const severalAccounts = new Set(providers.filter((p, i) => providers.indexOf(p) !== i));
  for (const { o, f } of shown) {
    const cost = jobCost(f, o);
    const rent = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        class: 'primary rent-offer',
        text: t('live.rent'),
        disabled: o.runs_pytorch === false,
      })
    );
    rent.addEventListener('click', () => openRent(o));
    const tags = el('span', {});
    const tier = `live.tier.${o.tier}`;
    if (o.tier)
      tags.append(el('span', { class: 'tag', 'data-tier': o.tier, text: t(tier) === tier ? o.tier : t(tier) }));
    if (o.interruptible) tags.append(el('span', { class: 'tag warn', text: t('live.interruptible') }));
    const torch =
      o.runs_pytorch === true
        ? el('span', { class: 'ok-text small', text: t('live.torch.ok', { torch: o.best_torch ?? '?' }) })
        : o.runs_pytorch === false
          ? el('span', { class: 'bad-text small', 'data-pytorch': 'no', text: t('live.torch.no', { gpu: o.gpu }) })
          : el('span', { class: 'muted small', text: t('live.torch.unknown') });
    body.append(
      el(
        'tr',
        {
          'data-offer': o.offer_id,
          'data-provider': o.provider,
          'data-card': o.card_id ?? '',
          class: o.runs_pytorch === false ? 'offer no-torch' : 'offer',
        },
        el(
          'td',
          { 'data-account': o.account ?? '' },
          el('span', { text: t(`rent.provider.${o.provider}`) }),
          severalAccounts.has(o.provider)
            ? el('span', { class: 'muted small account', text: ` · ${o.account ?? '?'}` })
            : null,
          tags,
        ),
        el(
          'td',
          {},
          el('span', { text: `${o.gpu_count}× ${o.gpu}` }),
          el('span', { class: 'muted small', text: o.vram_gib === null ? '' : ` · ${num(o.vram_gib, 0)} GiB` }),
          f
            ? el('div', {
                class: 'muted small',
                text: f.verdict === 'fits_on_n' ? t('verdict.fits_on_n', { n: f.gpus }) : t(`verdict.${f.verdict}`),
              })
            : el('div', { class: 'muted small', text: t('live.card.unknown') }),
        ),
        el(
          'td',
          { class: 'num', 'data-currency': o.currency },
          el('span', { text: `${money(o.price_per_hour_usd, o.currency, 3)}/h` }),
          // AutoDL quotes no price before the create: the documented rate, said so.
          o.price_source === null
            ? null
            : el('div', { class: 'muted small price-documented', text: t('live.price.documented') }),
        ),
        el(
          'td',
          { class: 'num job-cost' },
          el('span', { text: cost === null ? '—' : money(cost, o.currency) }),
          // Traffic is billed apart from the hour (and not in this job's cost): said beside it.
          o.traffic
            ? el('div', {
                class: 'muted small traffic',
                'data-traffic': o.traffic.basis,
                title: o.traffic.source,
                text: trafficText(o.provider, o.traffic, 'live') ?? '',
              })
            : null,
        ),
        el('td', { text: o.region ?? '—' }),
        el(
          'td',
          {},
          el('div', {
            class: 'small',
            text: o.host_cuda ? t('live.host_cuda', { cuda: o.host_cuda }) : t('live.host_cuda.vm'),
          }),
          torch,
        ),
        el('td', {}, rent),
      ),
    );
  }
  section.append(
    el('div', { class: 'table-wrap' }, el('table', { class: 'data', id: 'live-table' }, el('thead', {}, head), body)),
    el('p', { class: 'muted small', text: t('live.cost.note') }),
  );
}
