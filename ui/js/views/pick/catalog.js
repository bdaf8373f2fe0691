// Pick a card → GPU catalog: a filterable, sortable table and a detail panel per card.
// Filtering runs in the core (the same code as `gpurent cards`); sorting is presentation.
import { catalogCard, catalogList } from '../../api.js';
import { showError, hideError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { num, t } from '../../i18n.js';

/** @typedef {import('../../../bindings/Card').Card} Card */
/** @typedef {import('../../../bindings/CardFilter').CardFilter} CardFilter */
/** @typedef {import('../../../bindings/CardDetail').CardDetail} CardDetail */
/** @typedef {import('../../../bindings/Segment').Segment} Segment */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * @typedef {object} Column
 * @property {string} key     sort key and data-col attribute
 * @property {string} label   i18n key
 * @property {(c: Card) => number | string | null} value
 * @property {string} [field] Card field whose "unverified" mark applies
 * @property {boolean} [numeric]
 */

/** @type {Column[]} */
const COLUMNS = [
  { key: 'name', label: 'catalog.col.name', value: (c) => c.name },
  { key: 'segment', label: 'catalog.col.segment', value: (c) => c.segment },
  { key: 'vram', label: 'catalog.col.vram', value: (c) => c.vram_gb, field: 'vram_gb', numeric: true },
  { key: 'bw', label: 'catalog.col.bw', value: (c) => c.mem_bw_gbps, field: 'mem_bw_gbps', numeric: true },
  {
    key: 'bf16',
    label: 'catalog.col.bf16',
    value: (c) => c.bf16_dense_tflops,
    field: 'bf16_dense_tflops',
    numeric: true,
  },
  { key: 'fp8', label: 'catalog.col.fp8', value: (c) => c.fp8_dense_tflops, field: 'fp8_dense_tflops', numeric: true },
  { key: 'cc', label: 'catalog.col.cc', value: (c) => Number(c.compute_capability), numeric: true },
  {
    key: 'nvlink',
    label: 'catalog.col.nvlink',
    value: (c) => c.nvlink_gbps ?? (c.nvlink ? 0 : null),
    field: 'nvlink_gbps',
    numeric: true,
  },
  { key: 'tdp', label: 'catalog.col.tdp', value: (c) => c.tdp_w, field: 'tdp_w', numeric: true },
];

const VRAM_STEPS = [16, 24, 40, 48, 80, 141];

/** Screen state survives language switches (the screen is re-rendered). */
const state = {
  /** @type {CardFilter} */
  filter: {},
  sort: { key: 'vram', desc: true },
  /** @type {string | null} */
  selected: null,
};

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderCatalog(root, signal) {
  // Escape closes the detail drawer.
  document.addEventListener(
    'keydown',
    (ev) => {
      if (ev.key === 'Escape') document.getElementById('card-detail-close')?.click();
    },
    { signal },
  );
  const table = el('table', { id: 'catalog-table', class: 'data' });
  const count = el('span', { id: 'catalog-count', class: 'muted' });
  const detail = el('aside', { id: 'card-detail', class: 'detail', 'aria-live': 'polite', hidden: true });

  root.append(
    el('h1', { text: t('catalog.title') }),
    el('p', { class: 'lead', text: t('catalog.intro') }),
    filters(() => refresh()),
    el('div', { class: 'table-wrap' }, table),
    el(
      'p',
      { class: 'legend' },
      count,
      ' · ',
      el('span', { text: t('catalog.legend.unverified') }),
      ' · ',
      el('span', { text: t('catalog.sort.hint') }),
      ' · ',
      el('span', { text: t('catalog.detail.hint') }),
    ),
    detail,
  );

  async function refresh() {
    try {
      const cards = await catalogList(state.filter);
      if (signal.aborted) return;
      hideError();
      renderTable(table, cards, refresh, (id) => showDetail(detail, id, refresh));
      count.textContent = t('catalog.count', { n: cards.length });
    } catch (e) {
      if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    }
  }
  await refresh();
  if (state.selected && !signal.aborted) await showDetail(detail, state.selected, refresh);
}

/** @param {() => void} onChange */
function filters(onChange) {
  const search = /** @type {HTMLInputElement} */ (
    el('input', {
      id: 'catalog-search',
      type: 'search',
      placeholder: t('catalog.search.placeholder'),
      value: state.filter.text ?? '',
    })
  );
  search.addEventListener('input', () => {
    state.filter = { ...state.filter, text: search.value || undefined };
    onChange();
  });

  const vram = /** @type {HTMLSelectElement} */ (el('select', { id: 'filter-vram' }));
  vram.append(el('option', { value: '', text: t('catalog.vram.any') }));
  for (const gb of VRAM_STEPS)
    vram.append(el('option', { value: String(gb), text: `≥ ${gb} GB`, selected: state.filter.min_vram_gb === gb }));
  vram.addEventListener('change', () => {
    state.filter = { ...state.filter, min_vram_gb: vram.value ? Number(vram.value) : undefined };
    onChange();
  });

  const segment = /** @type {HTMLSelectElement} */ (el('select', { id: 'filter-segment' }));
  segment.append(el('option', { value: '', text: t('catalog.segment.any') }));
  for (const s of /** @type {Segment[]} */ (['consumer', 'workstation', 'datacenter'])) {
    segment.append(el('option', { value: s, text: t(`segment.${s}`), selected: state.filter.segment === s }));
  }
  segment.addEventListener('change', () => {
    state.filter = { ...state.filter, segment: segment.value ? /** @type {Segment} */ (segment.value) : undefined };
    onChange();
  });

  return el(
    'div',
    { class: 'filters' },
    el('label', { class: 'field' }, el('span', { text: t('catalog.search') }), search),
    el('label', { class: 'field' }, el('span', { text: t('catalog.vram') }), vram),
    el('label', { class: 'field' }, el('span', { text: t('catalog.segment') }), segment),
  );
}

/**
 * @param {Card} card
 * @param {Column} col
 */
function cellText(card, col) {
  if (col.key === 'segment') return t(`segment.${card.segment}`);
  if (col.key === 'nvlink')
    return card.nvlink ? (card.nvlink_gbps ? `${num(card.nvlink_gbps)} GB/s` : t('catalog.yes')) : t('catalog.no');
  if (col.key === 'cc') return card.compute_capability;
  const v = col.value(card);
  if (v === null || v === undefined) return t('spec.none');
  return typeof v === 'number' ? num(v) : v;
}

/**
 * @param {Card[]} cards
 */
function sorted(cards) {
  const col = COLUMNS.find((c) => c.key === state.sort.key) ?? COLUMNS[0];
  const dir = state.sort.desc ? -1 : 1;
  return [...cards].sort((a, b) => {
    const x = col.value(a);
    const y = col.value(b);
    if (x === y) return a.name.localeCompare(b.name);
    if (x === null) return 1; // unknowns last in either direction
    if (y === null) return -1;
    return (x < y ? -1 : 1) * dir;
  });
}

/**
 * @param {HTMLElement} table
 * @param {Card[]} cards
 * @param {() => void} rerender
 * @param {(id: string) => void} onSelect
 */
function renderTable(table, cards, rerender, onSelect) {
  clear(table);
  const head = el('tr');
  for (const col of COLUMNS) {
    const active = state.sort.key === col.key;
    const th = el(
      'th',
      {
        scope: 'col',
        'data-col': col.key,
        class: col.numeric ? 'num' : undefined,
        'aria-sort': active ? (state.sort.desc ? 'descending' : 'ascending') : undefined,
      },
      el('button', {
        type: 'button',
        class: 'sort',
        title: t('catalog.sort.hint'),
        text: `${t(col.label)}${active ? (state.sort.desc ? ' ▼' : ' ▲') : ''}`,
      }),
    );
    th.addEventListener('click', () => {
      state.sort = { key: col.key, desc: active ? !state.sort.desc : col.numeric === true };
      rerender();
    });
    head.append(th);
  }
  const body = el('tbody');
  for (const card of sorted(cards)) {
    const row = el('tr', {
      'data-card-id': card.id,
      tabindex: '0',
      class: state.selected === card.id ? 'selected' : undefined,
    });
    for (const col of COLUMNS) {
      const unverified = col.field !== undefined && card.unverified.includes(col.field);
      const td = el('td', {
        class: [col.numeric ? 'num' : '', unverified ? 'unverified' : ''].join(' ').trim() || undefined,
        title: unverified ? t('catalog.unverified') : undefined,
        text: cellText(card, col) + (unverified ? '*' : ''),
      });
      row.append(td);
    }
    const select = () => {
      state.selected = card.id;
      for (const r of body.querySelectorAll('tr.selected')) r.classList.remove('selected');
      row.classList.add('selected');
      onSelect(card.id);
    };
    row.addEventListener('click', select);
    row.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') select();
    });
    body.append(row);
  }
  table.append(el('thead', {}, head), body);
  if (cards.length === 0) table.append(el('caption', { class: 'muted', text: t('catalog.empty') }));
}

/**
 * @param {HTMLElement} panel
 * @param {string} id
 * @param {() => void} rerender
 */
async function showDetail(panel, id, rerender) {
  /** @type {CardDetail} */
  let d;
  try {
    d = await catalogCard(id);
  } catch (e) {
    showError(/** @type {ErrorPayload} */ (e));
    return;
  }
  const c = d.card;
  clear(panel);
  panel.hidden = false;
  const close = el('button', {
    type: 'button',
    class: 'ghost',
    id: 'card-detail-close',
    text: t('catalog.detail.close'),
  });
  close.addEventListener('click', () => {
    state.selected = null;
    clear(panel);
    panel.hidden = true;
    rerender();
  });
  const params = {
    bw: num(c.mem_bw_gbps, 0),
    tps: num(c.decode_ceiling_tps_7b_q4, 0),
    nvlink: num(c.nvlink_gbps ?? 0, 0),
    cc: c.compute_capability,
  };
  const advice = el('ul', { class: 'advice' });
  for (const a of c.advice) advice.append(el('li', { 'data-advice': a, text: t(`advice.${a}`, params) }));

  const specs = el('dl', { class: 'specs' });
  /** @type {[string, string | null, string?][]} */
  const rows = [
    ['architecture', c.architecture],
    ['launch_year', String(c.launch_year)],
    ['vram_gb', `${num(c.vram_gb)} GB ${c.memory_type}`],
    ['mem_bw_gbps', `${num(c.mem_bw_gbps)} GB/s`],
    ['bf16_dense_tflops', c.bf16_dense_tflops === null ? null : `${num(c.bf16_dense_tflops)} TFLOPS`],
    [
      'fp16_dense_tflops_fp16acc',
      c.fp16_dense_tflops_fp16acc === null ? null : `${num(c.fp16_dense_tflops_fp16acc)} TFLOPS`,
    ],
    ['fp8_dense_tflops', c.fp8_dense_tflops === null ? null : `${num(c.fp8_dense_tflops)} TFLOPS`],
    ['fp32_tflops', c.fp32_tflops === null ? null : `${num(c.fp32_tflops)} TFLOPS`],
    ['tdp_w', c.tdp_w === null ? null : `${num(c.tdp_w, 0)} W`],
    ['compute_capability', c.compute_capability],
    [
      'nvlink_gbps',
      c.nvlink ? (c.nvlink_gbps === null ? t('catalog.yes') : `${num(c.nvlink_gbps)} GB/s`) : t('catalog.no'),
    ],
    ['pcie_gen', c.pcie_gen === null ? null : `Gen ${c.pcie_gen}`],
    ['ecc', c.ecc ? t('catalog.yes') : t('catalog.no')],
    ['form_factor', c.form_factor],
  ];
  for (const [field, value] of rows) {
    const unverified = c.unverified.includes(field);
    specs.append(
      el('dt', { text: t(`spec.${field}`) }),
      el('dd', {
        class: unverified ? 'unverified' : undefined,
        title: unverified ? t('catalog.unverified') : undefined,
        'data-field': field,
        text: (value ?? t('spec.none')) + (unverified ? ' *' : ''),
      }),
    );
  }
  const sources = el('ul', { class: 'sources' });
  for (const s of d.sources)
    sources.append(el('li', {}, el('strong', { text: s.id }), ' ', el('span', { text: s.description })));

  panel.append(
    el('div', { class: 'detail-head' }, el('h2', { id: 'card-detail-name', text: c.name }), close),
    el(
      'p',
      { class: 'badges' },
      el('span', { class: `badge ${c.segment}`, text: t(`segment.${c.segment}`) }),
      el('span', {
        class: `badge conf-${c.confidence}`,
        text: t('catalog.detail.confidence', { level: t(`confidence.${c.confidence}`) }),
      }),
    ),
    el('h3', { text: t('catalog.detail.goodfor') }),
    advice,
    el('h3', { text: t('catalog.detail.specs') }),
    specs,
    ...(c.notes
      ? [el('h3', { text: t('catalog.detail.notes') }), el('p', { class: 'notes', lang: 'en', text: c.notes })]
      : []),
    el('h3', { text: t('catalog.detail.sources') }),
    sources,
  );
}
