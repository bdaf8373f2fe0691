// The budget banner above every screen: a budget at 80 % warns, at 100 % it is used up. It is
// read every 15 s (a local computation, no network) and right away whenever the Billing step
// has fresh numbers. Separate from the error banner, so an error never hides it.
import { budgetList } from './api-billing.js';
import { byId, clear, el } from './dom.js';
import { num, onLanguageChange, t } from './i18n.js';
import { money } from './money.js';

/** @typedef {import('../bindings/BudgetRow').BudgetRow} BudgetRow */

/** @type {BudgetRow[]} */
let last = [];

/** A US-dollar amount (provider prices and balances). @param {number} v */
export const usd = (v) => money(v, 'USD');

/** The words for one budget's scope and period. @param {BudgetRow} b */
export function budgetName(b) {
  const per = t(`billing.budget.per.${b.budget.period}`);
  return b.budget.host
    ? t('billing.budget.name.host', { host: b.budget.host, per })
    : t('billing.budget.name.total', { per });
}

/** Show the budgets at 80 % or more. @param {BudgetRow[]} rows */
export function showBudgets(rows) {
  last = rows;
  const banner = byId('budget-banner');
  clear(banner);
  const hot = rows.filter((b) => b.level !== 'ok').sort((a, b) => b.fraction - a.fraction);
  banner.hidden = hot.length === 0;
  banner.dataset.level = hot.some((b) => b.level === 'over') ? 'over' : hot.length ? 'warn' : 'ok';
  for (const b of hot) {
    const key = b.level === 'over' ? 'billing.banner.over' : 'billing.banner.warn';
    banner.append(
      el('p', {
        class: `budget-line ${b.level}`,
        'data-level': b.level,
        'data-scope': b.budget.host ?? 'total',
        'data-period': b.budget.period,
        text: t(key, {
          name: budgetName(b),
          pct: num(Math.floor(b.fraction * 100), 0),
          spent: money(b.spent, b.budget.currency),
          budget: money(b.budget.amount, b.budget.currency),
        }),
      }),
    );
  }
  if (hot.length) {
    banner.append(
      el('button', { type: 'button', class: 'link', 'data-route': 'billing', text: t('billing.banner.open') }),
    );
  }
}

async function refresh() {
  try {
    showBudgets(await budgetList());
  } catch {
    // The app could not start or the store is busy: the error banner says why elsewhere.
  }
}

/** Start the banner's own 15 s refresh (once, at start-up). */
export function startBudgetBanner() {
  refresh();
  setInterval(refresh, 15_000);
  onLanguageChange(() => showBudgets(last));
}
