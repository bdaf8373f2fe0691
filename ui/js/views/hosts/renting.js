// What the rent dialog (rent.js) and the Rented machines section (rented.js) share: provider
// errors and money in words, and how each rent ended (state that outlives both screens). Both
// import it; neither imports the other.
import { DICTIONARIES, errorText, t } from '../../i18n.js';
import { money } from '../../money.js';

/** @typedef {import('../../../bindings/ProviderOffer').ProviderOffer} ProviderOffer */
/** @typedef {import('../../../bindings/InstanceView').InstanceView} InstanceView */
/** @typedef {import('../../../bindings/MoneyNote').MoneyNote} MoneyNote */
/** @typedef {import('../../../bindings/RentOptions').RentOptions} RentOptions */
/** @typedef {import('../../../bindings/ProviderKind').ProviderKind} ProviderKind */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/TrafficCost').TrafficCost} TrafficCost */

/**
 * How each rent ended, newest last, for the Rented section to show after the operation is gone
 * (the user may have been on another screen when it finished).
 * `stuck`: the billing machine a failed rent left (set when the ledger shows it).
 * @type {{ seq: number, started: number, offer: ProviderOffer, instance: InstanceView | null, error: ErrorPayload | null, stuck?: string }[]}
 */
export const outcomes = [];

/** @param {ProviderOffer} o */
export const offerTitle = (o) => `${t(`rent.provider.${o.provider}`)} · ${o.gpu_count}× ${o.gpu}`;

/**
 * A provider error in words: the renting texts first (`rent.error.<code>`: `auth_rejected` here
 * means the API key, not an SSH login), else the shared error texts.
 * @param {ErrorPayload} e
 */
export function providerErrorText(e) {
  const key = `rent.error.${e.code}`;
  const text = key in DICTIONARIES.en ? t(key, { detail: e.detail ?? e.message }) : errorText(e);
  // A rent that failed after the machine was made: it still bills; say which and how to release.
  const id = e.data?.still_billing;
  return id && e.code !== 'not_ready' ? `${text} ${t('rent.still_billing', { id })}` : text;
}

/** A provider's amount in US dollars (RunPod, Vast, Lambda; AutoDL's are in its `terms.currency`). */
export const usd = (/** @type {number} */ v, digits = 2) => money(v, 'USD', digits);

/**
 * The money of renting, line by line (key, text): price now, what a stopped machine costs, how
 * the provider bills, how long gpurent waits.
 * @param {ProviderKind} provider @param {RentOptions} o @param {number} gpus @param {string} gpu
 * @returns {[string, string][]}
 */
export function moneyLines(provider, o, gpus, gpu) {
  const p = t(`rent.provider.${provider}`);
  const cur = o.terms.currency;
  /** @type {[string, string][]} */
  const out = [
    [
      'price',
      t('rent.money.price', {
        price: money(o.price_per_hour_usd, cur, 3),
        gpus,
        gpu,
        day: money(o.price_per_hour_usd * 24, cur),
      }),
    ],
  ];
  // AutoDL quotes no price before the create: the documented rate, where it comes from.
  if (!o.terms.price_before_create)
    out.push([
      'price_source',
      t('rent.money.documented', { provider: p, source: o.price_source ? priceSourceText(o.price_source) : '—' }),
    ]);
  if (o.terms.release_after_days_off !== null)
    out.push(['release_days', t('rent.money.release_days', { provider: p, days: o.terms.release_after_days_off })]);
  const traffic = trafficText(provider, o.traffic ?? null, 'rent');
  if (traffic) out.push(['traffic', traffic]);
  if (!o.terms.can_stop) out.push(['stopped', t('rent.money.cannot_stop', { provider: p })]);
  else if (o.stopped_storage_usd_per_month !== null)
    out.push([
      'stopped',
      t('rent.money.stopped', { disk: o.disk_gb, month: money(o.stopped_storage_usd_per_month, cur) }),
    ]);
  else out.push(['stopped', t('rent.money.stopped.unlisted', { disk: o.disk_gb, provider: p })]);
  out.push(['billing', t(`rent.money.billing.${o.terms.billing}`, { provider: p })]);
  out.push(['timeout', t('rent.money.timeout', { minutes: Math.round(o.terms.ready_timeout_s / 60) })]);
  return out;
}

/**
 * What traffic costs on an offer, in words: the provider's price per GB each way where its
 * listing gives one (Vast), else that it lists none (not the same as free). `null`: unknown.
 * `form` picks the offer row's short words (`live`) or the rent confirmation's sentence (`rent`).
 * @param {ProviderKind} provider @param {TrafficCost | null} tr @param {'live' | 'rent'} form
 */
export function trafficText(provider, tr, form) {
  if (!tr) return null;
  const perGb = (/** @type {number | null} */ v) => (v === null ? '?' : usd(v, 4));
  if (tr.basis === 'listed')
    return t(`${form}.traffic.listed`, { down: perGb(tr.download_usd_per_gb), up: perGb(tr.upload_usd_per_gb) });
  return t(`${form}.traffic.not_listed`, { provider: t(`rent.provider.${provider}`) });
}

/**
 * Where a documented rate comes from, in the user's language: the provider module writes
 * `<page> (<docs|unverified>, read <YYYY-MM-DD>)` (providers/autodl.rs); any other text is shown as it is.
 * @param {string} source
 */
export function priceSourceText(source) {
  const m = /^(\S+) \((docs|unverified), read (\d{4}-\d{2}-\d{2})\)$/.exec(source);
  if (!m) return source;
  return t('rent.money.source', { page: m[1], verified: t(`rent.money.source.${m[2]}`), date: m[3] });
}

/** Two sentences as one text: Chinese sentences follow each other without a space. */
const sentences = (/** @type {string} */ a, /** @type {string} */ b) =>
  /[。！？]$/.test(a) ? `${a}${b}` : `${a} ${b}`;

/** An action's money in words (from instance_money). @param {MoneyNote} m @param {InstanceView} i */
export function actionMoneyText(m, i) {
  if (m.effect === 'gpu_billing_stops_disk_kept') {
    const provider = t(`rent.provider.${i.provider}`);
    const stop =
      m.stopped_storage_usd_per_month === null
        ? t('rented.money.stop.unlisted', { disk: m.disk_gb, provider })
        : t('rented.money.stop', { disk: m.disk_gb, month: money(m.stopped_storage_usd_per_month, i.terms.currency) });
    // A provider that releases a machine left powered off N days (AutoDL: 15) wipes its data then.
    const days = i.terms.release_after_days_off;
    return days === null ? stop : sentences(stop, t('rent.money.release_days', { provider, days }));
  }
  if (m.effect === 'gpu_billing_stops_disk_wiped') return t('rented.money.stop.wiped', { disk: m.disk_gb });
  if (m.effect === 'gpu_billing_resumes') {
    const start = t('rented.money.start', { price: money(m.price_per_hour_usd, i.terms.currency, 3) });
    // What the provider's start cannot do (AutoDL: no no-GPU mode through its API).
    const note = `rented.start.note.${i.provider}`;
    return note in DICTIONARIES.en ? sentences(start, t(note)) : start;
  }
  return t('rented.money.release', { disk: m.disk_gb });
}
