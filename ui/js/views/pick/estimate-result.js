// The answer to a job: memory bar against card sizes, the plain-language "why", what is
// uncertain, and every card ranked — your own GPU first — with your prices and the job's cost.
import { priceSet } from '../../api.js';
import { showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { num, t } from '../../i18n.js';
import { defaultCurrency, money, SYMBOL } from '../../money.js';

/** @typedef {import('../../../bindings/Currency').Currency} Currency */
/** @typedef {import('../../../bindings/Estimate').Estimate} Estimate */
/** @typedef {import('../../../bindings/Explanation').Explanation} Explanation */
/** @typedef {import('../../../bindings/CardFit').CardFit} CardFit */
/** @typedef {import('../../../bindings/Offer').Offer} Offer */
/** @typedef {import('../../../bindings/MemoryBreakdown').MemoryBreakdown} MemoryBreakdown */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/LocalFitReport').LocalFitReport} LocalFitReport */

/** @type {(keyof MemoryBreakdown)[]} */
const BUCKETS = ['weights', 'kv_cache', 'activations', 'gradients', 'optimizer', 'overhead'];
/** Reference card sizes drawn on the bar. */
const MARK_CARDS = ['rtx-4090', 'l40s', 'h100-sxm'];

/**
 * @param {HTMLElement} root
 * @param {Estimate} e
 * @param {LocalFitReport} local
 * @param {Offer[]} offers
 * @param {() => void} rerun
 */
export function renderResult(root, e, local, offers, rerun) {
  clear(root);
  /** @type {Map<string, string>} */
  const names = new Map(e.fits.map((f) => [f.card_id, f.card_name]));
  root.append(memoryCard(e), whyCard(e, names), cardsTable(e, local, offers, rerun));
}

/** @param {Estimate} e */
function memoryCard(e) {
  const total = e.per_gpu_gib.total;
  const marks = MARK_CARDS.map((id) => e.fits.find((f) => f.card_id === id)).filter((f) => f !== undefined);
  const scale = Math.max(total, ...marks.map((f) => f.usable_gib)) * 1.05;
  const bar = el('div', { class: 'membar', id: 'est-bar' });
  for (const b of BUCKETS) {
    const gib = e.per_gpu_gib.breakdown[b];
    if (gib <= 0) continue;
    const seg = el('div', {
      class: `seg seg-${b}`,
      'data-bucket': b,
      title: `${t(`bucket.${b}`)}: ${num(gib, 2)} GiB`,
    });
    seg.style.width = `${(gib / scale) * 100}%`;
    bar.append(seg);
  }
  for (const f of marks) {
    const m = el(
      'div',
      { class: 'mark', 'data-card': f.card_id, title: `${f.card_name}: ${num(f.usable_gib)} GiB` },
      el('span', { text: t('est.bar.card', { gb: num(f.vram_gb, 0) }) }),
    );
    m.style.left = `${(f.usable_gib / scale) * 100}%`;
    bar.append(m);
  }
  const legend = el('ul', { class: 'legend-list', id: 'est-breakdown' });
  for (const b of BUCKETS) {
    legend.append(
      el(
        'li',
        { 'data-bucket': b },
        el('span', { class: `swatch seg-${b}` }),
        el('span', { text: `${t(`bucket.${b}`)} ${num(e.per_gpu_gib.breakdown[b], 2)} GiB` }),
      ),
    );
  }
  const headline =
    e.gpus > 1 ? t('est.total.gpus', { total: num(total, 1), gpus: e.gpus }) : t('est.total', { total: num(total, 1) });
  return el(
    'section',
    { class: 'card wide' },
    el('h2', { text: t('est.memory') }),
    el('p', { class: 'big', id: 'est-total', text: headline }),
    bar,
    legend,
  );
}

/**
 * One sentence per explanation item, translated; numbers come from Rust.
 * @param {Explanation} x
 * @param {Map<string, string>} names
 * @returns {string}
 */
export function explain(x, names) {
  const card = (/** @type {string} */ id) => names.get(id) ?? id;
  const pct = (/** @type {number} */ f) => num(f * 100, 0);
  switch (x.key) {
    case 'memory_summary':
      return t('expl.memory_summary', {
        total: num(x.total_gib),
        weights: num(x.weights_gib),
        kv: num(x.kv_cache_gib),
        act: num(x.activations_gib),
        gpus: x.gpus,
      });
    case 'kv_cache_dominates':
      return t('expl.kv_cache_dominates', {
        kv: num(x.kv_gib),
        context: num(x.context, 0),
        suggested: num(x.suggested_context, 0),
        card: num(x.card_gb, 0),
      });
    case 'enable_grad_checkpointing':
      return t('expl.enable_grad_checkpointing', {
        act: num(x.activations_gib),
        act2: num(x.activations_with_checkpointing_gib),
      });
    case 'logits_large':
      return t('expl.logits_large', { logits: num(x.logits_gib), vocab: num(x.vocab, 0) });
    case 'optimizer_states_dominate':
      return t('expl.optimizer_states_dominate', { opt: num(x.optimizer_gib), opt8: num(x.optimizer_8bit_gib) });
    case 'weights_exceed_largest_card':
      return t('expl.weights_exceed_largest_card', { weights: num(x.weights_gib), card: num(x.card_gb, 0) });
    case 'bf16_unsupported':
      return t(x.training ? 'expl.bf16_unsupported.training' : 'expl.bf16_unsupported', {
        cards: x.card_ids.map(card).join(', '),
      });
    case 'best_fit':
      return t('expl.best_fit', {
        gpus: x.gpus,
        card: card(x.card_id),
        per_gpu: num(x.per_gpu_gib),
        card_gb: num(x.card_gb, 0),
      });
    case 'nvlink_matters':
      return t('expl.nvlink_matters', { gpus: x.gpus, card: card(x.card_id) });
    case 'partial_offload':
      return t('expl.partial_offload', {
        card: card(x.card_id),
        on: x.layers_on_gpu,
        total: x.layers_total,
        pct: num(x.gpu_percent, 0),
      });
    case 'vllm_reserves':
      return t('expl.vllm_reserves', {
        util: pct(x.utilization),
        reserved: num(x.reserved_gib),
        card: num(x.card_gb, 0),
        tokens: num(x.kv_capacity_tokens, 0),
      });
    case 'training_time':
      return t('expl.training_time', {
        days: num(x.days),
        gpus: x.gpus,
        card: card(x.card_id),
        mfu: pct(x.mfu),
        peak: num(x.peak_tflops),
      });
    case 'mfu_assumed':
      return t('expl.mfu_assumed', { mfu: pct(x.mfu), low: pct(x.measured_low), high: pct(x.measured_high) });
    case 'project_hours_exceed_estimate':
      return t('expl.project_hours_exceed_estimate', { eff: pct(x.effective_utilisation_8b) });
    case 'spot_needs_checkpoints':
      return x.checkpoint_interval_minutes === null
        ? t('expl.spot_needs_checkpoints', { loss: num(x.loss_per_interruption_hours), hours: num(x.job_hours) })
        : t('expl.spot_needs_checkpoints.interval', {
            interval: num(x.checkpoint_interval_minutes, 0),
            loss: num(x.loss_per_interruption_hours),
            hours: num(x.job_hours),
          });
    case 'cheapest_offer':
      if (x.total_cost !== null)
        return t('expl.cheapest_offer', {
          gpus: x.gpus,
          card: card(x.card_id),
          cost: money(x.total_cost, /** @type {Currency} */ (x.currency)),
        });
      if (x.cost_per_million_tokens !== null)
        return t('expl.cheapest_offer.tokens', {
          gpus: x.gpus,
          card: card(x.card_id),
          cost: money(x.cost_per_million_tokens, /** @type {Currency} */ (x.currency)),
        });
      return t('expl.cheapest_offer.hourly', { gpus: x.gpus, card: card(x.card_id) });
    case 'rent_vs_buy':
      return x.break_even_hours === null
        ? t('expl.rent_vs_buy.never', { card: card(x.card_id) })
        : t('expl.rent_vs_buy', {
            card: card(x.card_id),
            months: num(x.break_even_months ?? 0),
            util: pct(x.utilisation),
            hours: num(x.break_even_hours, 0),
          });
  }
}

/**
 * @param {Estimate} e
 * @param {Map<string, string>} names
 */
function whyCard(e, names) {
  const list = el('ul', { class: 'why', id: 'est-why' });
  for (const x of e.explanation) list.append(el('li', { 'data-key': x.key, text: explain(x, names) }));
  const section = el('section', { class: 'card wide' }, el('h2', { text: t('est.why') }), list);
  if (e.uncertain.length) {
    const unc = el('ul', { class: 'uncertain', id: 'est-uncertain' });
    for (const u of e.uncertain) {
      const key = `unc.${u.key}`;
      const text = t(key);
      unc.append(el('li', { 'data-key': u.key, text: text === key ? u.reason : text }));
    }
    section.append(el('h3', { text: t('est.uncertain') }), unc);
  }
  return section;
}

/** @param {CardFit} f */
function verdictText(f) {
  return f.verdict === 'fits_on_n' ? t('verdict.fits_on_n', { n: f.gpus }) : t(`verdict.${f.verdict}`);
}

/** @param {CardFit} f @param {boolean} training */
function speedText(f, training) {
  const s = f.speed;
  if (!s) return t('spec.none');
  const tps = training ? s.train_tokens_per_s : s.decode_tokens_per_s;
  return tps === null ? t('spec.none') : t('est.speed.decode', { tps: num(tps, tps < 100 ? 1 : 0) });
}

/** @param {CardFit} f */
function timeText(f) {
  const s = f.speed;
  if (!s || s.job_hours === null) return t('spec.none');
  return s.job_hours >= 48
    ? t('est.time.days', { days: num(s.job_days ?? s.job_hours / 24) })
    : t('est.time.hours', { hours: num(s.job_hours) });
}

/**
 * @param {Estimate} e
 * @param {LocalFitReport} local
 * @param {Offer[]} offers
 * @param {() => void} rerun
 */
function cardsTable(e, local, offers, rerun) {
  const training = e.task !== 'infer';
  const head = el('tr');
  for (const k of ['card', 'verdict', 'mem', 'speed', 'time', 'price', 'cost'])
    head.append(el('th', { scope: 'col', text: t(`est.col.${k}`) }));
  const body = el('tbody');
  body.append(...localRows(local, training));
  for (const f of e.fits) {
    const ranked = e.ranking.find((r) => r.card_id === f.card_id);
    const offer = offers.find((o) => o.card_id === f.card_id);
    // A price keeps the currency it was entered in (never converted); a new one starts in the
    // settings' currency.
    const currency = /** @type {Currency} */ (offer?.currency ?? defaultCurrency());
    const price = /** @type {HTMLInputElement} */ (
      el('input', {
        type: 'number',
        min: '0',
        step: 'any',
        class: 'price',
        'data-card': f.card_id,
        placeholder: t('est.price.placeholder'),
        value: offer ? String(offer.price_per_gpu_hour) : '',
      })
    );
    price.addEventListener('change', async () => {
      const v = Number(price.value);
      if (price.value.trim() === '' || !Number.isFinite(v)) return;
      try {
        await priceSet({
          ...(offer ?? {
            card_id: f.card_id,
            price_per_gpu_month: null,
            spot_price_per_gpu_hour: null,
            billing: { rule: 'per_second', minimum_minutes: 0 },
            currency,
            label: null,
          }),
          price_per_gpu_hour: v,
        });
        rerun();
      } catch (err) {
        showError(/** @type {ErrorPayload} */ (err));
      }
    });
    let cost = t('spec.none');
    if (ranked?.cost) cost = money(ranked.cost.total_cost, /** @type {Currency} */ (ranked.cost.currency));
    else if (ranked?.cost_per_million_tokens != null)
      cost = t('est.cost.per_million', { cost: money(ranked.cost_per_million_tokens, currency) });
    else if (ranked) cost = t('est.cost.per_hour', { cost: money(ranked.price_per_hour_all_gpus, currency) });
    body.append(
      el(
        'tr',
        { 'data-card-id': f.card_id, class: `fit-${f.verdict}` },
        el(
          'td',
          {},
          el('span', { text: f.card_name }),
          f.nvlink_matters && !f.card_has_nvlink ? el('span', { class: 'tag warn', text: t('est.nvlink') }) : null,
        ),
        el('td', { class: 'verdict', 'data-verdict': f.verdict, text: verdictText(f) }),
        el('td', { class: 'num', text: `${num(f.per_gpu_gib)} / ${num(f.budget_gib)} GiB` }),
        el('td', { class: 'num', text: speedText(f, training) }),
        el('td', { class: 'num', text: timeText(f) }),
        el(
          'td',
          {},
          price,
          ' ',
          el('span', {
            class: 'muted price-currency',
            'data-currency': currency,
            text: t('est.price.unit', { sign: SYMBOL[currency] ?? currency }),
          }),
        ),
        el('td', { class: 'num', text: cost }),
      ),
    );
  }
  return el(
    'section',
    { class: 'card wide' },
    el('h2', { text: t('est.cards') }),
    offers.length === 0 ? el('p', { class: 'muted', id: 'est-noprices', text: t('est.price.none') }) : null,
    el('div', { class: 'table-wrap' }, el('table', { class: 'data', id: 'est-cards' }, el('thead', {}, head), body)),
  );
}

/**
 * Your own GPUs first: the job checked against the memory CUDA reports for each. "None found" is a
 * normal answer.
 * @param {LocalFitReport} local
 * @param {boolean} training
 * @returns {HTMLElement[]}
 */
function localRows(local, training) {
  const who = (/** @type {string} */ text) =>
    el('td', {}, el('strong', { text: t('est.local') }), ' ', el('span', { class: 'muted', text }));
  if (local.status === 'no_local_gpu') {
    const label = local.reason === 'no_driver' ? t('est.local.nodriver') : t('est.local.none');
    const cell = who(label);
    cell.setAttribute('colspan', '7');
    return [el('tr', { id: 'est-local', class: 'local' }, cell)];
  }
  return local.fits.map(({ gpu, fit }, i) =>
    el(
      'tr',
      {
        id: i === 0 ? 'est-local' : `est-local-${i}`,
        class: `local fit-${fit.verdict}`,
        'data-local-index': String(gpu.index),
      },
      who(t('est.local.found', { name: gpu.name, gib: num(gpu.total_gib) })),
      el('td', { class: 'verdict', 'data-verdict': fit.verdict, text: verdictText(fit) }),
      el('td', { class: 'num', text: `${num(fit.per_gpu_gib)} / ${num(fit.budget_gib)} GiB` }),
      el('td', { class: 'num', text: speedText(fit, training) }),
      el('td', { class: 'num', text: timeText(fit) }),
      el('td', { colspan: '2' }),
    ),
  );
}
