// Step 7, Billing: what every machine costs — so far, per hour now, and by a chosen time — with
// spend over time drawn as a chart, the budgets (a banner at 80 % and 100 % on every screen), a
// pasted host's own rate, the provider machines with Stop and Release (each with its money in
// words before anything happens), and what the second guard has told the user. Every number is
// computed in the core at one `now`; this screen only asks again every few seconds while open.
import { foreignRelease, instanceAction, instanceMoney, liveHosts } from '../../api.js';
import {
  billingView,
  budgetRemove,
  budgetSet,
  hostRateSet,
  hostRateStarted,
  hostRateStopped,
  noticesRecent,
  platformRules,
} from '../../api-billing.js';
import { hideError, showError } from '../../banner.js';
import { budgetName, showBudgets, usd } from '../../budget-banner.js';
import { clear, el } from '../../dom.js';
import { language, num, t } from '../../i18n.js';
import { CURRENCIES, money, moneyFine } from '../../money.js';
import { every } from '../../screen.js';
import { renderGuard } from './guard.js';
import { confirmRelease } from './release.js';

/** @typedef {import('../../../bindings/BillingView').BillingView} BillingView */
/** @typedef {import('../../../bindings/MachineCost').MachineCost} MachineCost */
/** @typedef {import('../../../bindings/BudgetRow').BudgetRow} BudgetRow */
/** @typedef {import('../../../bindings/SpendSeries').SpendSeries} SpendSeries */
/** @typedef {import('../../../bindings/AccountBalance').AccountBalance} AccountBalance */
/** @typedef {import('../../../bindings/MoneyNote').MoneyNote} MoneyNote */
/** @typedef {import('../../../bindings/Notice').Notice} Notice */
/** @typedef {import('../../../bindings/Host').Host} Host */
/** @typedef {import('../../../bindings/BudgetPeriod').BudgetPeriod} Period */
/** @typedef {import('../../../bindings/Increment').Increment} Increment */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/Currency').Currency} Currency */
/** @typedef {import('../../../bindings/CurrencyTotal').CurrencyTotal} CurrencyTotal */
/** @typedef {import('../../../bindings/Platform').Platform} Platform */
/** @typedef {import('../../../bindings/PlatformRules').PlatformRules} PlatformRules */

/** How often the numbers are asked for again while the screen is open. */
const REFRESH_MS = 3000;
/** Every this many refreshes the providers are asked too (reconcile, their rates, balances). */
const LIVE_EVERY = 10;

/** @type {Map<string, import('../../../bindings/ProviderReported').ProviderReported | null>} */
const reportedSeen = new Map();

const state = {
  /** "What will it have cost by …" as typed. */
  by: '2h',
};

/** @param {number} ms @param {boolean} [seconds] */
const clock = (ms, seconds = false) =>
  new Intl.DateTimeFormat(language(), {
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: seconds ? '2-digit' : undefined,
  }).format(new Date(ms));

/** @param {unknown} e */
const fail = (e) => showError(/** @type {ErrorPayload} */ (e));

/**
 * After gpurent's own stop or release: the full account key a guard held could not be taken off
 * the machine first — say so (and what to do) in the banner; otherwise clear it.
 * @param {import('../../../bindings/InstanceView').InstanceView} after
 */
function keyLeft(after) {
  if (after.key_left) {
    showError({ code: 'key_left', message: 'the API key may remain on the disk', detail: after.key_left_why ?? '' });
  } else {
    hideError();
  }
}

// ---- confirm with the money in words ----

/**
 * A modal that states what an action costs or saves; resolves true on "yes".
 * @param {string} title @param {string[]} lines @param {string} yes
 * @returns {Promise<boolean>}
 */
function confirmMoney(title, lines, yes) {
  return new Promise((resolve) => {
    const ok = el('button', { type: 'button', id: 'billing-confirm-yes', class: 'primary danger', text: yes });
    const no = el('button', { type: 'button', id: 'billing-confirm-no', text: t('billing.confirm.cancel') });
    const dialog = /** @type {HTMLDialogElement} */ (
      el(
        'dialog',
        { id: 'billing-confirm', class: 'prompt' },
        el('h3', { text: title }),
        ...lines.map((l) => el('p', { class: 'money-words', text: l })),
        el('div', { class: 'row' }, ok, no),
      )
    );
    /** @param {boolean} v */
    const done = (v) => {
      dialog.close();
      dialog.remove();
      resolve(v);
    };
    ok.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (ev) => {
      ev.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** The money of a stop in words. @param {MoneyNote} m @param {string} id */
function moneyWords(m, id) {
  const price = usd(m.price_per_hour_usd);
  const disk = num(m.disk_gb, 0);
  const storage = m.stopped_storage_usd_per_month;
  if (m.effect === 'gpu_billing_stops_disk_wiped') {
    // RunPod: the container disk is wiped on stop; saying "kept" would lose the user's work.
    return [t('billing.money.stop', { id, price }), t('billing.money.stop.disk_wiped', { disk })];
  }
  return [
    t('billing.money.stop', { id, price }),
    storage !== null
      ? t('billing.money.stop.disk', { disk, storage: usd(storage) })
      : t('billing.money.stop.disk_unknown', { disk }),
  ];
}

/**
 * Release a provider machine: the release checklist (changed result folders, the disks deleted,
 * what stopping instead costs, the environment recipe), the user's yes, then the action
 * (confirmed against the provider's answer by the core). The one place a release starts from
 * this screen.
 * @param {string} id @param {() => void} after
 */
export async function releaseMachine(id, after) {
  try {
    if (!(await confirmRelease(id))) return;
    keyLeft(await instanceAction(id, 'release'));
  } catch (e) {
    fail(e);
  }
  after();
}

/**
 * Release a machine gpurent did not start ("not started by gpurent — still billing"): what it
 * is and costs, the user's yes, then the release by its provider id on its account (confirmed
 * against the provider's answer by the core). Also the Hosts step's Release of such a machine.
 * @param {{ id: string, account: string, name: string, price: number | null }} m
 * @param {() => void} after
 */
export async function releaseForeign(m, after) {
  const lines = [
    t('billing.foreign.release.what', {
      name: m.name,
      account: m.account,
      price: m.price === null ? '—' : `${usd(m.price)}/h`,
    }),
    t('billing.foreign.release.deletes'),
  ];
  try {
    if (
      !(await confirmMoney(t('billing.foreign.release.title', { id: m.id }), lines, t('billing.foreign.release.yes')))
    )
      return;
    await foreignRelease(m.id, m.account);
    hideError();
  } catch (e) {
    fail(e);
  }
  after();
}

/** Stop a provider machine, after its money in words. @param {string} id @param {() => void} after */
async function stopMachine(id, after) {
  try {
    const m = await instanceMoney(id, 'stop');
    if (!(await confirmMoney(t('billing.stop.title', { id }), moneyWords(m, id), t('billing.stop.yes')))) return;
    keyLeft(await instanceAction(id, 'stop'));
  } catch (e) {
    fail(e);
  }
  after();
}

/** A pasted host cannot be stopped by gpurent: the user stops it on the platform, then marks it. @param {MachineCost} m @param {() => void} after */
async function markStopped(m, after) {
  const storage = m.so_far.lines.some((l) => l.meter === 'storage');
  const lines = [
    t('billing.pasted.stop.how'),
    storage ? t('billing.pasted.stop.storage') : t('billing.pasted.stop.nostorage'),
  ];
  if (!(await confirmMoney(t('billing.pasted.stop.title', { host: m.host }), lines, t('billing.pasted.stop.yes'))))
    return;
  try {
    await hostRateStopped(m.host);
    hideError();
  } catch (e) {
    fail(e);
  }
  after();
}

/**
 * The user started a stopped pasted host again on its platform: its compute bills from now (a rate
 * set while it was stopped waits for this). @param {MachineCost} m @param {() => void} after
 */
async function markStarted(m, after) {
  try {
    await hostRateStarted(m.host);
    hideError();
  } catch (e) {
    fail(e);
  }
  after();
}

// ---- the parts of the screen ----

/**
 * The totals: one line per currency (amounts in two currencies are never added up). With one
 * currency (or none) the line's figures carry the plain ids; with two, each id ends in the code.
 * @param {BillingView} v @param {HTMLElement} box
 */
function renderSummary(v, box) {
  clear(box);
  const c = v.cost;
  /** @type {CurrencyTotal[]} */
  const lines = c.totals.length
    ? c.totals
    : [
        {
          currency: v.default_currency,
          so_far: 0,
          per_hour_now: 0,
          projected: c.total_projected_usd === null ? null : 0,
        },
      ];
  const several = lines.length > 1;
  for (const line of lines) {
    const cur = line.currency;
    const id = (/** @type {string} */ base) => (several ? `${base}-${cur.toLowerCase()}` : base);
    box.append(
      el(
        'div',
        { class: 'billing-totals', 'data-currency': cur },
        several ? el('span', { class: 'chip currency-chip', text: t(`currency.${cur}`) }) : null,
        el(
          'div',
          { class: 'total' },
          el('span', { class: 'muted small', text: t('billing.total.so_far') }),
          el('strong', {
            id: id('billing-total'),
            'data-usd': String(line.so_far),
            'data-currency': cur,
            text: moneyFine(line.so_far, cur),
          }),
        ),
        el(
          'div',
          { class: 'total' },
          el('span', { class: 'muted small', text: t('billing.total.per_hour') }),
          el('strong', { id: id('billing-per-hour'), text: `${money(line.per_hour_now, cur)}/h` }),
          c.foreign_count > 0 && cur === 'USD'
            ? el('span', {
                class: 'muted small',
                id: 'billing-foreign',
                text: t('billing.total.foreign', { n: num(c.foreign_count, 0), price: usd(c.foreign_usd_per_hour) }),
              })
            : null,
        ),
        el(
          'div',
          { class: 'total' },
          el('span', { class: 'muted small', text: t('billing.total.by', { by: state.by || '—' }) }),
          el('strong', {
            id: id('billing-projected'),
            text: line.projected !== null ? money(line.projected, cur) : '—',
          }),
        ),
      ),
    );
  }
}

/** @param {string} rule */
const ruleText = (rule) => t(`billing.rule.${rule}`);

/** @param {BillingView} v @param {HTMLElement} box @param {() => void} again */
function renderMachines(v, box, again) {
  clear(box);
  box.classList.toggle('table-wrap', v.cost.machines.length > 0);
  if (v.cost.machines.length === 0) {
    box.append(el('p', { class: 'muted', id: 'billing-empty', text: t('billing.empty') }));
    return;
  }
  const head = el(
    'tr',
    {},
    ...['machine', 'state', 'rule', 'so_far', 'per_hour', 'by', 'actions'].map((k) =>
      el('th', { text: k === 'by' ? t('billing.col.by', { by: state.by || '—' }) : t(`billing.col.${k}`) }),
    ),
  );
  const body = el('tbody');
  for (const m of v.cost.machines) {
    const running = m.state === 'running';
    const actions = el('div', { class: 'actions' });
    const id = m.instance;
    if (m.kind === 'provider' && id) {
      if (running) {
        const stop = el('button', {
          type: 'button',
          class: 'small-btn',
          'data-action': 'stop',
          text: t('billing.stop'),
        });
        stop.addEventListener('click', () => stopMachine(id, again));
        actions.append(stop);
      }
      const rel = el('button', {
        type: 'button',
        class: 'small-btn danger',
        'data-action': 'release',
        text: t('billing.release'),
      });
      rel.addEventListener('click', () => releaseMachine(id, again));
      actions.append(rel);
    } else if (m.kind === 'foreign' && m.provider_instance_id && m.account) {
      const foreign = { id: m.provider_instance_id, account: m.account, name: m.host, price: m.per_hour_now };
      const rel = el('button', {
        type: 'button',
        class: 'small-btn danger',
        'data-action': 'release-foreign',
        text: t('billing.release'),
      });
      rel.addEventListener('click', () => releaseForeign(foreign, again));
      actions.append(rel);
    } else {
      if (running) {
        const b = el('button', {
          type: 'button',
          class: 'small-btn',
          'data-action': 'mark-stopped',
          text: t('billing.pasted.stop'),
        });
        b.addEventListener('click', () => markStopped(m, again));
        actions.append(b);
      } else if (m.state === 'stopped') {
        const b = el('button', {
          type: 'button',
          class: 'small-btn',
          'data-action': 'mark-started',
          title: t('billing.pasted.start.note'),
          text: t('billing.pasted.start'),
        });
        b.addEventListener('click', () => markStarted(m, again));
        actions.append(b);
      }
      actions.append(el('span', { class: 'muted small', text: t('billing.pasted.release') }));
    }
    const account = m.account && m.account !== m.provider ? ` · ${m.account}` : '';
    const kind =
      m.kind === 'provider'
        ? t('billing.kind.provider', { provider: `${m.provider ?? ''}${account}` })
        : m.kind === 'foreign'
          ? t('billing.kind.foreign', { provider: `${m.provider ?? ''}${account}` })
          : t('billing.kind.pasted');
    // The provider's own rate is read live (every 30 s); in between its last answer is shown.
    if (id && v.cost.live) reportedSeen.set(id, m.reported);
    const r = m.reported ?? (id ? (reportedSeen.get(id) ?? null) : null);
    const reported = r
      ? el('span', {
          class: `muted small reported${r.differs ? ' differs' : ''}`,
          'data-differs': String(r.differs),
          text: t(r.differs ? 'billing.reported.differs' : 'billing.reported', {
            theirs: `${money(r.usd_per_hour, m.currency)}/h`,
            ours: `${money(r.gpurent_usd_per_hour, m.currency)}/h`,
          }),
        })
      : null;
    body.append(
      el(
        'tr',
        { 'data-host': m.host, 'data-state': m.state ?? 'none', 'data-kind': m.kind, 'data-instance': id ?? undefined },
        el('td', {}, el('strong', { text: m.host }), el('span', { class: 'muted small kind', text: kind })),
        el('td', {
          class: `state ${m.state ?? ''}`,
          text: t(`billing.state.${m.state ?? 'none'}${m.state === 'stopped' && m.per_hour_now > 0 ? '.storage' : ''}`),
        }),
        el('td', { text: ruleText(m.rule) }),
        el(
          'td',
          { class: 'num so-far', 'data-usd': String(m.so_far.total), 'data-currency': m.currency },
          el('span', { text: moneyFine(m.so_far.total, m.currency) }),
          m.kind === 'foreign' ? el('span', { class: 'muted small', text: t('billing.foreign.so_far') }) : null,
          m.platform_release_at_ms !== null
            ? el('span', {
                class: 'bad-text small platform-release',
                'data-release-ms': String(m.platform_release_at_ms),
                text: t('billing.platform.release', {
                  platform: t(`platform.${m.platform ?? 'other'}`),
                  at: clock(m.platform_release_at_ms),
                }),
              })
            : null,
          m.notes.includes('platform_rounding_unknown')
            ? el('span', {
                class: 'muted small',
                text: t('billing.platform.rounding_unknown', { platform: t(`platform.${m.platform ?? 'other'}`) }),
              })
            : null,
          ...m.earlier_in_other_currencies.map((e) =>
            el('span', {
              class: 'muted small earlier',
              text: t('billing.earlier', { amount: money(e.amount, e.currency) }),
            }),
          ),
        ),
        el('td', { class: 'num per-hour' }, el('span', { text: `${money(m.per_hour_now, m.currency)}/h` }), reported),
        el('td', { class: 'num projected', text: m.projected ? money(m.projected.total, m.currency) : '—' }),
        el('td', {}, actions),
      ),
    );
  }
  box.append(el('table', { class: 'data billing-table' }, el('thead', {}, head), body));
}

const SVG = 'http://www.w3.org/2000/svg';
/** @param {string} tag @param {Record<string, string | number>} attrs @param {string} [text] */
function svg(tag, attrs, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

/**
 * Spend over time: one chart per currency (never a sum across currencies), each cumulative cost
 * drawn as an SVG line over an area. @param {SpendSeries} s @param {HTMLElement} box
 */
function renderChart(s, box) {
  clear(box);
  const curves = s.by_currency.filter((c) => c.points.some((p) => p.amount > 0));
  if (curves.length === 0 || s.to_ms <= s.from_ms) {
    box.append(el('p', { class: 'muted small', id: 'billing-chart-empty', text: t('billing.chart.empty') }));
    return;
  }
  curves.forEach((c, i) => {
    if (curves.length > 1) box.append(el('p', { class: 'chart-currency', text: t(`currency.${c.currency}`) }));
    box.append(chartOf(s, c.points, c.currency, i === 0 ? 'billing-chart-svg' : `billing-chart-svg-${c.currency}`));
  });
}

/**
 * @param {SpendSeries} s @param {SpendSeries['points']} pts @param {Currency} cur @param {string} id
 * @returns {SVGElement}
 */
function chartOf(s, pts, cur, id) {
  const max = Math.max(...pts.map((p) => p.amount), 0);
  const [W, H, L, R, T, B] = [640, 200, 64, 16, 12, 28];
  const x = (/** @type {number} */ ms) => L + ((ms - s.from_ms) / (s.to_ms - s.from_ms)) * (W - L - R);
  const y = (/** @type {number} */ v) => T + (1 - v / max) * (H - T - B);
  const line = pts.map((p) => `${x(p.at_ms).toFixed(1)},${y(p.amount).toFixed(1)}`).join(' ');
  const area = `${x(s.from_ms).toFixed(1)},${y(0).toFixed(1)} ${line} ${x(s.to_ms).toFixed(1)},${y(0).toFixed(1)}`;
  const short = s.to_ms - s.from_ms < 2 * 3_600_000;
  const root = svg('svg', {
    viewBox: `0 0 ${W} ${H}`,
    class: 'spend-chart',
    id,
    'data-currency': cur,
    role: 'img',
    'aria-label': t('billing.chart.title'),
    'data-points': pts.length,
  });
  root.append(
    svg('line', { x1: L, y1: y(0), x2: W - R, y2: y(0), class: 'axis' }),
    svg('line', { x1: L, y1: T, x2: L, y2: y(0), class: 'axis' }),
    svg('line', { x1: L, y1: y(max), x2: W - R, y2: y(max), class: 'grid' }),
    svg('polygon', { points: area, class: 'spend-area' }),
    svg('polyline', { points: line, class: 'spend-line' }),
    svg(
      'text',
      { x: L - 6, y: y(max) + 4, 'text-anchor': 'end', class: 'label' },
      max < 1 ? moneyFine(max, cur) : money(max, cur),
    ),
    svg('text', { x: L - 6, y: y(0) + 4, 'text-anchor': 'end', class: 'label' }, money(0, cur)),
    svg('text', { x: L, y: H - 8, 'text-anchor': 'start', class: 'label' }, clock(s.from_ms, short)),
    svg(
      'text',
      { x: W - R, y: H - 8, 'text-anchor': 'end', class: 'label' },
      t('billing.chart.now', { at: clock(s.to_ms, short) }),
    ),
  );
  return root;
}

/** @param {BudgetRow[]} rows @param {HTMLElement} box @param {() => void} again */
function renderBudgets(rows, box, again) {
  clear(box);
  if (rows.length === 0) {
    box.append(el('p', { class: 'muted small', id: 'budgets-none', text: t('billing.budgets.none') }));
    return;
  }
  const list = el('ul', { class: 'budget-list' });
  for (const b of rows) {
    const bar = /** @type {HTMLProgressElement} */ (el('progress', { class: `budget-bar ${b.level}`, max: '1' }));
    bar.value = Math.min(b.fraction, 1);
    const rm = el('button', {
      type: 'button',
      class: 'small-btn',
      'data-budget-remove': `${b.budget.host ?? ''}|${b.budget.period}`,
      text: t('billing.budget.remove'),
    });
    rm.addEventListener('click', async () => {
      try {
        await budgetRemove(b.budget.host, b.budget.period);
      } catch (e) {
        fail(e);
      }
      again();
    });
    list.append(
      el(
        'li',
        {
          class: `budget ${b.level}`,
          'data-scope': b.budget.host ?? 'total',
          'data-period': b.budget.period,
          'data-level': b.level,
          'data-currency': b.budget.currency,
        },
        el(
          'div',
          { class: 'budget-head' },
          el('strong', { text: budgetName(b) }),
          el('span', {
            class: 'budget-nums',
            text: t('billing.budget.spent', {
              spent: money(b.spent, b.budget.currency),
              budget: money(b.budget.amount, b.budget.currency),
              pct: num(Math.floor(b.fraction * 100), 0),
            }),
          }),
          el('span', { class: `chip level-${b.level}`, text: t(`billing.level.${b.level}`) }),
          b.stop_at_100 ? el('span', { class: 'chip stop-chip', text: t('billing.budget.stops') }) : null,
          rm,
        ),
        bar,
      ),
    );
  }
  box.append(list);
}

/** @param {Notice} n */
export function noticeText(n) {
  const per = n.period ? t(`billing.budget.per.${n.period}`) : '';
  const name = n.host ? t('billing.budget.name.host', { host: n.host, per }) : t('billing.budget.name.total', { per });
  return t(`billing.notice.${n.kind}`, {
    host: n.host ?? '',
    account: n.account ?? '',
    minutes: num(n.minutes ?? 0, 0),
    limit: num(n.limit_minutes ?? 0, 0),
    hours: num(n.hours ?? 0, 0),
    spent: money(n.spent ?? 0, n.currency ?? 'USD'),
    budget: money(n.budget_amount ?? 0, n.currency ?? 'USD'),
    name,
    action: n.action ?? '',
    state: n.state ?? n.error ?? '',
    platform: t(`platform.${n.platform ?? 'other'}`),
  });
}

/** @param {Notice[]} list @param {HTMLElement} box */
function renderNotices(list, box) {
  clear(box);
  if (list.length === 0) {
    box.append(el('p', { class: 'muted small', id: 'notices-none', text: t('billing.notices.none') }));
    return;
  }
  box.append(
    el('ul', { class: 'notice-list' }, ...list.map((n) => el('li', { 'data-kind': n.kind, text: noticeText(n) }))),
  );
}

/** Account balances: what is left, what burns now, and when it runs out. @param {AccountBalance[]} list @param {HTMLElement} box */
function renderBalances(list, box) {
  clear(box);
  if (list.length === 0) {
    box.append(el('p', { class: 'muted small', id: 'balances-none', text: t('billing.balances.none') }));
    return;
  }
  const ul = el('ul', { class: 'balance-list' });
  for (const b of list) {
    /** @type {(HTMLElement | null)[]} */
    const parts = [el('strong', { text: b.account }), el('span', { class: 'muted small', text: b.provider })];
    if (b.balance !== null) {
      parts.push(
        el('span', {
          class: 'balance',
          text: t('billing.balance.left', {
            usd: money(b.balance, b.currency),
            rate: `${money(b.per_hour, b.currency)}/h`,
          }),
        }),
      );
      if (b.runs_out_in_h !== null) {
        const soon = b.runs_out_in_h < 24;
        parts.push(
          el('span', {
            class: `runs-out${soon ? ' soon' : ''}`,
            'data-hours': String(b.runs_out_in_h),
            text: t('billing.balance.runs_out', { hours: num(b.runs_out_in_h, b.runs_out_in_h < 10 ? 1 : 0) }),
          }),
        );
        parts.push(el('span', { class: `small${soon ? ' bad-text' : ' muted'}`, text: t('billing.balance.warning') }));
      }
    } else {
      parts.push(
        el('span', {
          class: 'muted small',
          text: b.error ? t('billing.balance.error', { code: b.error }) : t('billing.balance.none'),
        }),
      );
    }
    ul.append(el('li', { class: 'balance-row', 'data-account': b.account }, ...parts));
  }
  box.append(ul);
}

/** @param {string} id @param {string} label @param {HTMLElement} control */
const field = (id, label, control) => el('label', { class: 'field', for: id }, el('span', { text: label }), control);

/**
 * The currency of a form's amounts: it starts at the settings' default (set when the first view
 * arrives, unless the user already chose).
 * @param {string} id
 */
function currencySelect(id) {
  const sel = /** @type {HTMLSelectElement} */ (
    el(
      'select',
      { id, class: 'currency-select' },
      ...CURRENCIES.map((c) => el('option', { value: c, text: t(`currency.${c}`) })),
    )
  );
  sel.value = 'USD';
  sel.addEventListener('change', () => {
    sel.dataset.chosen = 'true';
  });
  return sel;
}

/** @param {Currency} c */
function defaultCurrencies(c) {
  for (const sel of document.querySelectorAll('select.currency-select')) {
    const s = /** @type {HTMLSelectElement} */ (sel);
    if (!s.dataset.chosen) s.value = c;
  }
}

/** @param {Host[]} hosts @param {() => void} again */
function budgetForm(hosts, again) {
  const scope = /** @type {HTMLSelectElement} */ (
    el(
      'select',
      { id: 'budget-scope' },
      el('option', { value: '', text: t('billing.budget.scope.total') }),
      ...hosts.map((h) => el('option', { value: h.label, text: h.label })),
    )
  );
  const period = /** @type {HTMLSelectElement} */ (
    el(
      'select',
      { id: 'budget-period' },
      el('option', { value: 'day', text: t('billing.budget.per.day') }),
      el('option', { value: 'month', text: t('billing.budget.per.month') }),
    )
  );
  const amount = /** @type {HTMLInputElement} */ (
    el('input', { id: 'budget-usd', type: 'number', min: '0.01', step: '0.01', placeholder: '20' })
  );
  const currency = currencySelect('budget-currency');
  const stop = /** @type {HTMLInputElement} */ (el('input', { id: 'budget-stop', type: 'checkbox' }));
  const save = el('button', { type: 'submit', id: 'budget-save', class: 'primary', text: t('billing.budget.save') });
  const form = el(
    'form',
    { class: 'budget-form' },
    el(
      'div',
      { class: 'form-row' },
      field('budget-scope', t('billing.budget.scope'), scope),
      field('budget-period', t('billing.budget.period'), period),
      field('budget-usd', t('billing.budget.amount'), amount),
      field('budget-currency', t('billing.currency'), currency),
      save,
    ),
    el('label', { class: 'check-line', for: 'budget-stop' }, stop, el('span', { text: t('billing.budget.stop') })),
    el('p', { class: 'muted small', text: t('billing.budget.stop.note') }),
    el('p', { class: 'muted small', text: t('billing.budget.currency.note') }),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await budgetSet(
        scope.value || null,
        /** @type {Period} */ (period.value),
        Number(amount.value),
        /** @type {Currency} */ (currency.value),
        stop.checked,
      );
      hideError();
    } catch (e) {
      fail(e);
    }
    again();
  });
  return form;
}

/**
 * @param {Host[]} hosts @param {() => void} again
 * @param {PlatformRules[]} platforms what gpurent knows of each platform's billing
 */
function rateForm(hosts, again, platforms) {
  if (hosts.length === 0) return el('p', { class: 'muted small', id: 'rate-nohosts', text: t('billing.rate.nohosts') });
  const host = /** @type {HTMLSelectElement} */ (
    el('select', { id: 'rate-host' }, ...hosts.map((h) => el('option', { value: h.label, text: h.label })))
  );
  const amount = /** @type {HTMLInputElement} */ (
    el('input', { id: 'rate-usd', type: 'number', min: '0', step: '0.001', placeholder: '2.50' })
  );
  const currency = currencySelect('rate-currency');
  const platform = /** @type {HTMLSelectElement} */ (
    el(
      'select',
      { id: 'rate-platform' },
      el('option', { value: '', text: t('billing.platform.none') }),
      ...platforms.map((p) => el('option', { value: p.platform, text: t(`platform.${p.platform}`) })),
    )
  );
  const platformNote = el('p', { class: 'muted small', id: 'rate-platform-note' });
  const rule = /** @type {HTMLSelectElement} */ (
    el(
      'select',
      { id: 'rate-rule' },
      ...['second', 'minute', 'hour'].map((r) =>
        el('option', { value: r, text: t(`billing.rule.per-${r === 'hour' ? 'hour-rounded-up' : r}`) }),
      ),
    )
  );
  const storage = /** @type {HTMLInputElement} */ (
    el('input', {
      id: 'rate-storage',
      type: 'number',
      min: '0',
      step: '0.01',
      placeholder: t('billing.rate.storage.none'),
    })
  );
  const save = el('button', { type: 'submit', id: 'rate-save', class: 'primary', text: t('billing.rate.save') });
  const form = el(
    'form',
    { class: 'rate-form' },
    el(
      'div',
      { class: 'form-row' },
      field('rate-host', t('billing.rate.host'), host),
      field('rate-usd', t('billing.rate.amount'), amount),
      field('rate-currency', t('billing.currency'), currency),
      field('rate-platform', t('billing.platform'), platform),
      field('rate-rule', t('billing.rate.rule'), rule),
      field('rate-storage', t('billing.rate.storage'), storage),
      save,
    ),
    platformNote,
    el('p', { class: 'muted small', text: t('billing.rate.note') }),
    el('p', { class: 'muted small', id: 'rate-while-stopped', text: t('billing.rate.while_stopped') }),
  );
  // A platform picked: its known rounding becomes the rule; what is not known is said.
  platform.addEventListener('change', () => {
    const p = platforms.find((x) => x.platform === platform.value);
    platformNote.textContent = p ? platformText(p) : '';
    if (p?.increment) rule.value = p.increment;
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await hostRateSet(
        host.value,
        Number(amount.value),
        /** @type {Increment} */ (rule.value),
        storage.value === '' ? null : Number(storage.value),
        /** @type {Currency} */ (currency.value),
        platform.value ? /** @type {Platform} */ (platform.value) : null,
      );
      hideError();
    } catch (e) {
      fail(e);
    }
    again();
  });
  return form;
}

/** What gpurent knows of a platform's billing, in words. @param {PlatformRules} p */
export function platformText(p) {
  const name = t(`platform.${p.platform}`);
  const unverified = p.facts.some((f) => f.verified === 'unverified' && f.value !== 'unknown');
  return [
    p.increment
      ? t('billing.platform.rounding', {
          platform: name,
          rule: ruleText(`per-${p.increment === 'hour' ? 'hour-rounded-up' : p.increment}`),
        })
      : t('billing.platform.rounding_unknown', { platform: name }),
    p.release_after_days_off !== null
      ? t('billing.platform.release_days', { platform: name, days: num(p.release_after_days_off, 0) })
      : '',
    p.no_gpu_cny_per_hour !== null
      ? t('billing.platform.no_gpu', { platform: name, price: money(p.no_gpu_cny_per_hour, 'CNY') })
      : '',
    unverified ? t('billing.platform.unverified') : '',
  ]
    .filter(Boolean)
    .join(' ');
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderBilling(root, signal) {
  const hosts = await liveHosts().catch((e) => {
    if (!signal.aborted) fail(e);
    return /** @type {Host[]} */ ([]);
  });
  if (signal.aborted) return;
  const platforms = await platformRules().catch(() => /** @type {PlatformRules[]} */ ([]));
  if (signal.aborted) return;
  const by = /** @type {HTMLInputElement} */ (
    el('input', { id: 'billing-by', type: 'text', value: state.by, placeholder: '2h', spellcheck: 'false', size: '8' })
  );
  const summary = el('div', { id: 'billing-summary' });
  const machines = el('div', { id: 'billing-machines' });
  const chart = el('div', { id: 'billing-chart', class: 'chart-box' });
  const balances = el('div', { id: 'billing-balances' });
  let ticks = 0;
  const budgets = el('div', { id: 'billing-budgets' });
  const notices = el('div', { id: 'billing-notices' });

  const refresh = async () => {
    const live = ticks++ % LIVE_EVERY === 0;
    try {
      const v = await billingView(state.by.trim() || null, live);
      if (signal.aborted) return;
      if (live) renderBalances(v.cost.balances, balances);
      defaultCurrencies(v.default_currency);
      by.classList.remove('bad');
      renderSummary(v, summary);
      renderMachines(v, machines, again);
      renderChart(v.spend, chart);
      renderBudgets(v.budgets, budgets, refresh);
      showBudgets(v.budgets);
      const recent = await noticesRecent();
      if (signal.aborted) return;
      renderNotices(recent, notices);
      root.dataset.refreshedMs = String(v.now_ms);
    } catch (e) {
      if (signal.aborted) return;
      const err = /** @type {ErrorPayload} */ (e);
      if (err.code === 'invalid_input') by.classList.add('bad');
      fail(e);
    }
  };
  /** After a stop, release or new rate: ask the providers again. */
  const again = () => {
    ticks = 0;
    refresh();
  };
  by.addEventListener('change', () => {
    state.by = by.value;
    refresh();
  });

  root.append(
    el('h1', { text: t('billing.title') }),
    el('p', { class: 'lead', text: t('billing.intro') }),
    el(
      'section',
      { class: 'card wide billing-now' },
      el(
        'div',
        { class: 'billing-now-head' },
        el('h2', { text: t('billing.now.title') }),
        el('label', { class: 'field by-field', for: 'billing-by' }, el('span', { text: t('billing.by') }), by),
      ),
      summary,
      machines,
    ),
    el(
      'section',
      { class: 'card wide' },
      el('h2', { text: t('billing.chart.title') }),
      el('p', { class: 'muted small', text: t('billing.chart.intro') }),
      chart,
    ),
    el(
      'section',
      { class: 'card wide', id: 'billing-balances-card' },
      el('h2', { text: t('billing.balances.title') }),
      balances,
    ),
    el(
      'section',
      { class: 'card wide', id: 'billing-budgets-card' },
      el('h2', { text: t('billing.budgets.title') }),
      el('p', { class: 'muted small', text: t('billing.budgets.intro') }),
      budgets,
      budgetForm(hosts, refresh),
    ),
    el(
      'section',
      { class: 'card wide' },
      el('h2', { text: t('billing.rate.title') }),
      rateForm(hosts, again, platforms),
    ),
    el(
      'section',
      { class: 'card wide' },
      el('h2', { text: t('billing.notices.title') }),
      el('p', { class: 'muted small', text: t('billing.notices.intro') }),
      notices,
    ),
  );
  renderGuard(root, signal).catch(fail);
  await refresh();
  every(signal, REFRESH_MS, refresh);
}
