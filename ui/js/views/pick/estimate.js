// Pick a card → Estimate a job: presets, a job form, and the result (estimate-result.js).
// All arithmetic happens in Rust (gpurent-core::estimate); this file only edits a Job.
import { estimateDefaults, estimateModels, estimateQuants, estimateRun, localFit, pricesList } from '../../api.js';
import { hideError, showError } from '../../banner.js';
import { el, newestOnly } from '../../dom.js';
import { t } from '../../i18n.js';
import { redraws } from '../../screen.js';
import { renderResult } from './estimate-result.js';
import { renderLiveOffers } from './offers.js';

/** @typedef {import('../../../bindings/Job').Job} Job */
/** @typedef {import('../../../bindings/Task').Task} Task */
/** @typedef {import('../../../bindings/Engine').Engine} Engine */
/** @typedef {import('../../../bindings/Optimizer').Optimizer} Optimizer */
/** @typedef {import('../../../bindings/ModelSpec').ModelSpec} ModelSpec */
/** @typedef {import('../../../bindings/QuantFormat').QuantFormat} QuantFormat */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** @typedef {{ id: string, apply: (defaults: Job) => Job }} Preset */

/** A custom 1B decoder for the pre-training preset (Llama-style shape; the user can edit it). */
/** @param {Job} d @returns {ModelSpec} */
const custom1b = (d) => ({
  id: 'custom',
  hf_repo: null,
  arch: 'llama',
  params_b: 1.0,
  layers: 16,
  hidden_size: 2048,
  attention_heads: 32,
  kv_heads: 8,
  head_dim: 64,
  intermediate_size: 8192,
  vocab_size: 32000,
  tied_embeddings: true,
  qkv_bias: false,
  max_position_embeddings: d.context_tokens,
  sliding_window: null,
  context_note: '',
  source: 'custom',
});

/** @type {Preset[]} */
const PRESETS = [
  {
    id: 'ollama7b',
    apply: (d) => ({
      ...d,
      model: 'qwen2.5-7b',
      task: 'infer',
      engine: 'llama_cpp',
      quant: 'q4_k_m',
      context_tokens: 4096,
    }),
  },
  {
    id: 'lora7b',
    apply: (d) => ({
      ...d,
      model: 'qwen2.5-7b',
      task: 'lora',
      engine: 'transformers',
      quant: 'bf16',
      context_tokens: 2048,
      batch: 1,
      training: { ...d.training, grad_checkpointing: true },
    }),
  },
  // The QLoRA paper's recipe (NF4 + double quant, paged 8-bit AdamW, checkpointing), with 16-bit
  // embeddings and a chunked loss as torchtune/Unsloth do; plain PEFT defaults (fp32 upcast,
  // unfused loss) need more than 48 GB for a 70B, as the Unsloth table reports.
  {
    id: 'qlora70b',
    apply: (d) => ({
      ...d,
      model: 'llama-3.1-70b',
      task: 'qlora',
      engine: 'transformers',
      quant: 'nf4_dq',
      context_tokens: 2048,
      batch: 1,
      training: {
        ...d.training,
        grad_checkpointing: true,
        optimizer: 'paged_adamw_8bit',
        loss: 'chunked',
        upcast_unquantized_fp32: false,
      },
    }),
  },
  {
    id: 'pretrain1b',
    apply: (d) => ({
      ...d,
      model: null,
      custom: custom1b(d),
      task: 'pretrain',
      engine: 'transformers',
      quant: 'bf16',
      context_tokens: 2048,
      batch: 8,
      gpus: 8,
      train_tokens: 20e9,
    }),
  },
];

/** Screen state, kept across language switches. */
const state = {
  /** @type {Job | null} */
  job: null,
  /** @type {string | null} */
  preset: 'qlora70b',
};

/** @param {HTMLElement} root @param {AbortSignal} signal */
export function renderEstimate(root, signal) {
  const drawn = redraws(signal);
  /** Draw the estimate (again when a preset is chosen: the old drawing's signal aborts). */
  const draw = () => {
    root.replaceChildren();
    return drawEstimate(root, drawn(), draw);
  };
  return draw();
}

/** @param {HTMLElement} root @param {AbortSignal} signal @param {() => void} again */
async function drawEstimate(root, signal, again) {
  /** @type {Job} */
  let defaults;
  /** @type {ModelSpec[]} */
  let models;
  /** @type {QuantFormat[]} */
  let quants;
  try {
    [defaults, models, quants] = await Promise.all([estimateDefaults(), estimateModels(), estimateQuants()]);
  } catch (e) {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return;
  }
  if (signal.aborted) return;
  if (!state.job) state.job = (PRESETS.find((p) => p.id === state.preset) ?? PRESETS[0]).apply(defaults);

  const result = el('div', { id: 'est-result' });
  const form = el('form', { id: 'est-form', class: 'est-form' });
  const presets = el('div', { class: 'presets' }, el('span', { class: 'muted', text: t('est.presets') }));
  for (const p of PRESETS) {
    const b = el('button', {
      type: 'button',
      id: `preset-${p.id}`,
      class: state.preset === p.id ? 'chip active' : 'chip',
      text: t(`preset.${p.id}`),
    });
    b.addEventListener('click', () => {
      state.preset = p.id;
      state.job = p.apply(defaults);
      again();
    });
    presets.append(b);
  }

  // Runs overlap when the user edits while one is in flight: only the newest one draws (an older
  // answer arriving late must not replace the newer result), and none once this drawing is gone. `data-pending` is set while the
  // newest run — live offers included — is still drawing.
  const runs = newestOnly();
  async function run() {
    if (!state.job) return;
    const begun = runs.begin();
    const newest = () => begun() && !signal.aborted;
    result.dataset.pending = 'true';
    try {
      // The user's saved prices price the job (gpurent ships none).
      const offers = await pricesList();
      const job = { ...state.job, cost: { ...state.job.cost, offers } };
      const [estimate, local] = await Promise.all([estimateRun(job), localFit(job)]);
      if (!newest()) return;
      hideError();
      renderResult(result, estimate, local, offers, run);
      // Live offers from connected provider accounts (network: drawn when they arrive).
      const live = el('div', { id: 'live-slot' });
      // Above the ranked cards (the last section), which it annotates with the live prices.
      result.insertBefore(live, result.lastElementChild);
      await renderLiveOffers(live, estimate, signal);
    } catch (e) {
      if (newest()) showError(/** @type {ErrorPayload} */ (e));
    } finally {
      if (newest()) delete result.dataset.pending;
    }
  }

  buildForm(form, state.job, models, quants, (next) => {
    state.job = next;
    state.preset = null;
    for (const b of presets.querySelectorAll('.chip.active')) b.classList.remove('active');
    run();
  });

  root.append(
    el('h1', { text: t('est.title') }),
    el('p', { class: 'lead', text: t('est.intro') }),
    presets,
    form,
    result,
  );
  await run();
}

/**
 * @param {string} id
 * @param {string} label
 * @param {HTMLElement} control
 */
const field = (id, label, control) => el('label', { class: 'field', for: id }, el('span', { text: label }), control);

/**
 * @param {string} id
 * @param {[string, string][]} options
 * @param {string} value
 */
function select(id, options, value) {
  const s = /** @type {HTMLSelectElement} */ (el('select', { id }));
  for (const [v, text] of options) s.append(el('option', { value: v, text, selected: v === value }));
  return s;
}

/**
 * @param {string} id
 * @param {number | null} value
 * @param {{ min?: number, step?: string }} [opts]
 */
function number(id, value, opts = {}) {
  return /** @type {HTMLInputElement} */ (
    el('input', {
      id,
      type: 'number',
      inputmode: 'decimal',
      min: String(opts.min ?? 0),
      step: opts.step ?? 'any',
      value: value === null ? '' : String(value),
    })
  );
}

/** Read a number input; empty or invalid gives null (the core then reports what is missing). @param {HTMLInputElement} i */
const readNum = (i) => (i.value.trim() === '' || !Number.isFinite(Number(i.value)) ? null : Number(i.value));

/**
 * @param {HTMLElement} form
 * @param {Job} job
 * @param {ModelSpec[]} models
 * @param {QuantFormat[]} quants
 * @param {(job: Job) => void} onChange
 */
function buildForm(form, job, models, quants, onChange) {
  const model = select(
    'est-model',
    [
      ...models.map((m) => /** @type {[string, string]} */ ([m.id, `${m.id} (${m.params_b}B)`])),
      ['custom', t('est.model.custom')],
    ],
    job.custom ? 'custom' : (job.model ?? 'custom'),
  );
  const task = select(
    'est-task',
    ['infer', 'lora', 'qlora', 'full', 'pretrain'].map((k) => [k, t(`task.${k}`)]),
    job.task,
  );
  const quant = select(
    'est-quant',
    [
      ['', t('est.quant.auto')],
      ...quants.map((q) => /** @type {[string, string]} */ ([q.id, `${q.name} · ${q.bits_per_weight.toFixed(2)} bpw`])),
    ],
    job.quant ?? '',
  );
  const engine = select(
    'est-engine',
    ['transformers', 'vllm', 'llama_cpp'].map((k) => [k, t(`engine.${k}`)]),
    job.engine,
  );
  const context = number('est-context', job.context_tokens, { min: 1, step: '1' });
  const batch = number('est-batch', job.batch, { min: 1, step: '1' });
  const gpus = number('est-gpus', job.gpus, { min: 1, step: '1' });
  const tokens = number('est-tokens', job.train_tokens === null ? null : job.train_tokens / 1e9);
  const optimizer = select(
    'est-optimizer',
    ['adamw', 'adamw_8bit', 'paged_adamw', 'paged_adamw_8bit', 'sgd_momentum', 'sgd'].map((k) => [
      k,
      t(`optimizer.${k}`),
    ]),
    job.training.optimizer,
  );
  const ckpt = /** @type {HTMLInputElement} */ (
    el('input', { id: 'est-gradckpt', type: 'checkbox', checked: job.training.grad_checkpointing })
  );

  const c = job.custom;
  const custom = {
    params: number('est-c-params', c?.params_b ?? null),
    layers: number('est-c-layers', c?.layers ?? null, { step: '1' }),
    hidden: number('est-c-hidden', c?.hidden_size ?? null, { step: '1' }),
    heads: number('est-c-heads', c?.attention_heads ?? null, { step: '1' }),
    kvheads: number('est-c-kvheads', c?.kv_heads ?? null, { step: '1' }),
    headdim: number('est-c-headdim', c?.head_dim ?? null, { step: '1' }),
    vocab: number('est-c-vocab', c?.vocab_size ?? null, { step: '1' }),
    tied: /** @type {HTMLInputElement} */ (
      el('input', { id: 'est-c-tied', type: 'checkbox', checked: c?.tied_embeddings ?? false })
    ),
  };
  const customBox = el(
    'fieldset',
    { class: 'custom', hidden: !c },
    field('est-c-params', t('est.custom.params'), custom.params),
    field('est-c-layers', t('est.custom.layers'), custom.layers),
    field('est-c-hidden', t('est.custom.hidden'), custom.hidden),
    field('est-c-heads', t('est.custom.heads'), custom.heads),
    field('est-c-kvheads', t('est.custom.kvheads'), custom.kvheads),
    field('est-c-headdim', t('est.custom.headdim'), custom.headdim),
    field('est-c-vocab', t('est.custom.vocab'), custom.vocab),
    el('label', { class: 'check' }, custom.tied, el('span', { text: t('est.custom.tied') })),
    el('p', { class: 'muted small', text: t('est.custom.hint') }),
  );

  const training = el(
    'div',
    { class: 'form-row training' },
    field('est-tokens', t('est.tokens'), tokens),
    field('est-optimizer', t('est.optimizer'), optimizer),
    el('label', { class: 'check' }, ckpt, el('span', { text: t('est.gradckpt') })),
  );
  const cost = job.cost;
  const money = {
    gen: number('est-gen-tokens', job.generate_tokens === null ? null : job.generate_tokens / 1e6),
    storageGb: number('est-storage-gb', cost.storage_gb || null),
    storagePrice: number('est-storage-price', cost.storage_price_per_gb_month || null),
    egressGb: number('est-egress-gb', cost.egress_gb || null),
    egressPrice: number('est-egress-price', cost.egress_price_per_gb || null),
    ckpt: number('est-ckpt', cost.checkpoint_interval_minutes),
    buy: number('est-buy', cost.buy_price_per_gpu),
    kwh: number('est-kwh', cost.electricity_price_per_kwh),
    util: number('est-util', Math.round(cost.utilisation * 100)),
  };
  const costBox = el(
    'details',
    { class: 'cost-box', id: 'est-cost', open: cost.buy_price_per_gpu !== null || undefined },
    el('summary', { text: t('est.cost.title') }),
    el(
      'div',
      { class: 'form-row' },
      field('est-gen-tokens', t('est.cost.gen'), money.gen),
      field('est-storage-gb', t('est.cost.storage_gb'), money.storageGb),
      field('est-storage-price', t('est.cost.storage_price'), money.storagePrice),
      field('est-egress-gb', t('est.cost.egress_gb'), money.egressGb),
      field('est-egress-price', t('est.cost.egress_price'), money.egressPrice),
    ),
    el(
      'div',
      { class: 'form-row' },
      field('est-ckpt', t('est.cost.ckpt'), money.ckpt),
      field('est-buy', t('est.cost.buy'), money.buy),
      field('est-kwh', t('est.cost.kwh'), money.kwh),
      field('est-util', t('est.cost.util'), money.util),
    ),
    el('p', { class: 'muted small', text: t('est.cost.hint') }),
  );
  const engineField = field('est-engine', t('est.engine'), engine);
  const sync = () => {
    const isTraining = task.value !== 'infer';
    training.hidden = !isTraining;
    engineField.hidden = isTraining;
    customBox.hidden = model.value !== 'custom';
  };
  sync();

  /** @returns {Job} */
  const read = () => {
    const isCustom = model.value === 'custom';
    const int = (/** @type {HTMLInputElement} */ i) => {
      const v = readNum(i);
      return v === null ? null : Math.round(v);
    };
    const tok = readNum(tokens);
    const gen = readNum(money.gen);
    const util = readNum(money.util);
    return {
      ...job,
      model: isCustom ? null : model.value,
      custom: isCustom
        ? {
            ...(job.custom ?? custom1b(job)),
            params_b: readNum(custom.params) ?? 0,
            layers: int(custom.layers),
            hidden_size: int(custom.hidden),
            attention_heads: int(custom.heads),
            kv_heads: int(custom.kvheads),
            head_dim: int(custom.headdim),
            vocab_size: int(custom.vocab),
            tied_embeddings: custom.tied.checked,
            intermediate_size:
              int(custom.hidden) === job.custom?.hidden_size ? (job.custom?.intermediate_size ?? null) : null,
          }
        : null,
      task: /** @type {Task} */ (task.value),
      quant: quant.value || null,
      engine: /** @type {Engine} */ (engine.value),
      context_tokens: int(context) ?? 0,
      batch: int(batch) ?? 0,
      gpus: int(gpus) ?? 0,
      train_tokens: tok === null ? null : tok * 1e9,
      training: {
        ...job.training,
        optimizer: /** @type {Optimizer} */ (optimizer.value),
        grad_checkpointing: ckpt.checked,
      },
      generate_tokens: gen === null ? null : gen * 1e6,
      cost: {
        ...job.cost,
        storage_gb: readNum(money.storageGb) ?? 0,
        storage_price_per_gb_month: readNum(money.storagePrice) ?? 0,
        egress_gb: readNum(money.egressGb) ?? 0,
        egress_price_per_gb: readNum(money.egressPrice) ?? 0,
        checkpoint_interval_minutes: readNum(money.ckpt),
        buy_price_per_gpu: readNum(money.buy),
        electricity_price_per_kwh: readNum(money.kwh),
        utilisation: util === null ? job.cost.utilisation : Math.min(Math.max(util / 100, 0), 1),
      },
    };
  };
  form.addEventListener('change', () => {
    sync();
    job = read();
    onChange(job);
  });
  form.addEventListener('submit', (ev) => ev.preventDefault());

  form.append(
    el(
      'div',
      { class: 'form-row' },
      field('est-model', t('est.model'), model),
      field('est-task', t('est.task'), task),
      field('est-quant', t('est.quant'), quant),
      engineField,
    ),
    customBox,
    el(
      'div',
      { class: 'form-row' },
      field('est-context', t('est.context'), context),
      field('est-batch', t('est.batch'), batch),
      field('est-gpus', t('est.gpus'), gpus),
    ),
    training,
    costBox,
  );
}
