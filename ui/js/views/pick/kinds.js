// "Pick a card → Estimate" for jobs beyond LLMs: the kind's inputs, then a verdict for every card
// with memory, time (only where a source measured that GPU) and cost, the explanation, the sources
// and the unverified / not-found marks. Figures come from Rust (estimate::kinds); text is textContent.
import { kindCatalog, kindEstimate, pricesList } from '../../api.js';
import { hideError, showError } from '../../banner.js';
import { el, newestOnly } from '../../dom.js';
import { num, t } from '../../i18n.js';
import { money } from '../../money.js';

/** @typedef {import('../../../bindings/Currency').Currency} Currency */
/** @typedef {import('../../../bindings/JobKind').JobKind} JobKind */
/** @typedef {import('../../../bindings/KindJob').KindJob} KindJob */
/** @typedef {import('../../../bindings/KindEstimate').KindEstimate} KindEstimate */
/** @typedef {import('../../../bindings/KindCatalog').KindCatalog} KindCatalog */
/** @typedef {import('../../../bindings/KindExplanation').KindExplanation} KindExplanation */
/** @typedef {import('../../../bindings/Offer').Offer} Offer */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** Inputs kept across redraws. */
const state = {
  /** @type {Record<string, string>} */
  model: {},
  /** @type {Record<string, string>} */
  setting: {},
  count: 1,
  audioHours: 1,
  cells: 8e6,
};

/** @param {HTMLElement} root @param {AbortSignal} signal @param {JobKind} kind */
export async function renderKinds(root, signal, kind) {
  /** @type {KindCatalog} */
  let cat;
  /** @type {Offer[]} */
  let offers;
  try {
    [cat, offers] = await Promise.all([kindCatalog(), pricesList()]);
  } catch (e) {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return;
  }
  if (signal.aborted) return;
  const rows = cat.figures.filter((f) => f.kind === kind && f.variant !== 'component');
  const models = [...new Set(rows.map((f) => f.model))];
  const modelSel = /** @type {HTMLSelectElement} */ (el('select', { id: 'kind-model' }));
  for (const m of models) modelSel.append(el('option', { value: m, text: m }));
  modelSel.value = state.model[kind] ?? models[0] ?? '';
  const settingSel = /** @type {HTMLSelectElement} */ (el('select', { id: 'kind-setting' }));
  const fillSettings = () => {
    settingSel.replaceChildren();
    for (const f of rows.filter((r) => r.model === modelSel.value)) {
      settingSel.append(el('option', { value: f.setting, text: `${f.setting} — ${f.setting_text}` }));
    }
    const keep = state.setting[modelSel.value];
    if (keep) settingSel.value = keep;
  };
  fillSettings();
  const number = (/** @type {string} */ id, /** @type {number} */ v) =>
    /** @type {HTMLInputElement} */ (el('input', { id, type: 'number', min: '0', step: 'any', value: String(v) }));
  const count = number('kind-count', state.count);
  const hours = number('kind-audio-hours', state.audioHours);
  const cells = number('kind-cells', state.cells);
  const field = (/** @type {string} */ key, /** @type {HTMLElement} */ input) =>
    el('label', { class: 'field' }, el('span', { text: t(key) }), input);
  const form = el(
    'div',
    { class: 'kind-form' },
    el('p', { class: 'hint', text: t('kind.intro') }),
    field('kind.model', modelSel),
    field('kind.setting', settingSel),
    kind === 'image' || kind === 'video' ? field('kind.count', count) : null,
    kind === 'speech' ? field('kind.audio_hours', hours) : null,
    kind === 'simulation' ? field('kind.cells', cells) : null,
  );
  const out = el('div', { class: 'kind-result', id: 'kind-result' });
  root.append(form, out);
  const newest = newestOnly();

  const run = async () => {
    state.model[kind] = modelSel.value;
    state.setting[modelSel.value] = settingSel.value;
    state.count = Math.max(1, Math.round(Number(count.value) || 1));
    state.audioHours = Number(hours.value) || 1;
    state.cells = Number(cells.value) || 0;
    /** @type {KindJob} */
    const job = {
      kind,
      model: modelSel.value,
      setting: settingSel.value || null,
      count: state.count,
      audio_hours: state.audioHours,
      cells: kind === 'simulation' ? state.cells : null,
      offers,
    };
    const mine = newest.begin();
    try {
      const e = await kindEstimate(job);
      if (!mine() || signal.aborted) return;
      hideError();
      out.replaceChildren(...drawResult(e));
      out.dataset.figure = `${e.figure.model}/${e.figure.setting}`;
    } catch (e) {
      if (mine() && !signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    }
  };
  modelSel.addEventListener('change', () => {
    fillSettings();
    run();
  });
  for (const input of [settingSel, count, hours, cells]) input.addEventListener('change', run);
  await run();
}

/** @param {number} s */
function duration(s) {
  if (s < 120) return `${num(s, 0)} s`;
  if (s < 7200) return `${num(s / 60, 1)} min`;
  return `${num(s / 3600, 1)} h`;
}

/** @param {KindEstimate} e @returns {HTMLElement[]} */
function drawResult(e) {
  const f = e.figure;
  const parts = [];
  const names = new Map(e.fits.map((x) => [x.card_id, x.card_name]));
  parts.push(el('ul', { class: 'explanation' }, ...e.explanation.map((x) => el('li', { text: explain(x, names) }))));
  if (e.components.length) {
    const list = e.components.map((c) => `${c.text} ${num(c.gb, 3)}`).join(', ');
    parts.push(el('p', { class: 'hint', text: t('kind.components', { parts: list }) }));
  }
  const head = el(
    'tr',
    {},
    ...['card', 'vram', 'verdict', 'setting', 'need', 'time', 'cost'].map((k) =>
      el('th', { text: t(`kind.col.${k}`) }),
    ),
  );
  const body = el('tbody');
  for (const x of e.fits) {
    const offer = e.ranking.find((o) => o.card_id === x.card_id);
    const need = x.need ? t(`kind.need.${x.need.basis}`, { value: num(x.need.value, 1) }) : '—';
    const time = x.time_s === null ? '—' : duration(x.time_s);
    let cost = '—';
    if (offer?.cost) cost = money(offer.cost.total_cost, /** @type {Currency} */ (offer.currency));
    else if (offer)
      cost = t('kind.per_hour', { price: money(offer.price_per_hour, /** @type {Currency} */ (offer.currency)) });
    const timeCell = el('td', { text: time });
    if (x.time_card_unverified)
      timeCell.append(el('span', { class: 'mark-unverified', text: ' *', title: t('kind.time_unverified') }));
    body.append(
      el(
        'tr',
        { class: `verdict-${x.verdict}`, 'data-card': x.card_id },
        el('td', { text: x.card_name }),
        el('td', { text: `${num(x.vram_gb, 0)} GB` }),
        el('td', { class: 'verdict', text: t(`kind.verdict.${x.verdict}`) }),
        el('td', { text: x.setting }),
        el('td', { text: need }),
        timeCell,
        el('td', { text: cost }),
      ),
    );
  }
  parts.push(el('table', { class: 'fits kind-fits' }, el('thead', {}, head), body));
  parts.push(el('p', { class: 'source', text: t('kind.source', { source: f.source, confidence: f.confidence }) }));
  if (f.notes) parts.push(el('p', { class: 'hint', text: t('kind.source_note', { note: f.notes }) }));
  if (e.unverified.length) {
    parts.push(el('p', { class: 'mark-unverified', text: t('kind.unverified', { items: e.unverified.join('; ') }) }));
  }
  if (e.not_found.length) {
    parts.push(el('p', { class: 'mark-not-found', text: t('kind.not_found', { items: e.not_found.join(', ') }) }));
  }
  return parts;
}

/** @param {KindExplanation} x @param {Map<string, string>} names card id → name @returns {string} */
function explain(x, names) {
  switch (x.key) {
    case 'memory_figure': {
      const peak =
        x.peak_gib !== null && x.loaded_gib !== null ? t('kind.x.peak', { loaded: num(x.loaded_gib, 1) }) : '';
      if (x.figure === 'minimum') return t('kind.x.memory_figure.minimum', { value: num(x.value, 1) });
      if (x.figure === 'approx') return t('kind.x.memory_figure.approx', { value: num(x.value, 1) });
      if (x.figure === 'upper_bound') return t('kind.x.memory_figure.upper_bound', { value: num(x.value, 1) });
      return t('kind.x.memory_figure.measured', { value: num(x.value, 2), peak });
    }
    case 'cells_formula':
      return t('kind.x.cells_formula', { cells: num(x.cells, 0), bpc: num(x.bytes_per_cell, 0), gib: num(x.gib, 2) });
    case 'no_memory_figure':
      return t(x.not_found ? 'kind.x.no_memory_figure.not_found' : 'kind.x.no_memory_figure.found');
    case 'smallest_fit':
      return t('kind.x.smallest_fit', { card: names.get(x.card_id) ?? x.card_id, gb: num(x.vram_gb, 0) });
    case 'no_card_fits':
      return t('kind.x.no_card_fits');
    case 'use_other_setting':
      return t('kind.x.use_other_setting', {
        gb: num(x.vram_gb, 0),
        verdict: t(`kind.verdict.${x.verdict}`),
        setting: x.setting,
      });
    case 'offload_is_slower':
      return t('kind.x.offload_is_slower');
    case 'time_measured_only_on':
      return t('kind.x.time_measured_only_on', {
        gpu: x.measured_on,
        time: duration(x.total_s),
        units: num(x.units, 0),
        unit: t(x.units === 1 ? `kind.unit.${x.work_unit}.one` : `kind.unit.${x.work_unit}`),
      });
    case 'relative_speed_only':
      return t('kind.x.relative_speed_only', { speed: num(x.relative_speed, 0), gpu: x.measured_on });
    case 'no_speed_figure':
      return t('kind.x.no_speed_figure');
    case 'needs_compute_capability':
      return t('kind.x.needs_compute_capability', { cc: x.min_cc });
    case 'needs_host_driver':
      return t('kind.x.needs_host_driver', { driver: x.min_driver });
  }
}
