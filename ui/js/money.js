// Money on screen: the one place an amount gets its currency's sign. Every amount the core sends
// carries its currency (ISO code, `CNY` or `USD`); nothing is ever converted, so two currencies
// are two amounts, never a sum. The number is formatted for the UI language (`num`).
import { language, num } from './i18n.js';

/** @typedef {import('../bindings/Currency').Currency} Currency */

/** The sign written before an amount. @type {Record<Currency, string>} */
export const SYMBOL = { CNY: '¥', USD: '$' };

/** The currencies gpurent knows, in the core's order. @type {Currency[]} */
export const CURRENCIES = ['CNY', 'USD'];

/**
 * An amount with its currency's sign: `$3,600`, `¥2.5`, `-$0.4`.
 * @param {number} v @param {Currency} currency @param {number} [digits] at most this many decimals
 */
export function money(v, currency, digits = 2) {
  const x = v + 0; // + 0: a sum of nothing is -0
  const sign = x < 0 && Math.abs(x) >= 0.5 * 10 ** -digits ? '-' : '';
  return `${sign}${SYMBOL[currency] ?? `${currency} `}${num(Math.abs(x), digits)}`;
}

/**
 * An amount with exactly four decimals (a cost so far, so it visibly grows).
 * @param {number} v @param {Currency} currency
 */
export function moneyFine(v, currency) {
  const f = new Intl.NumberFormat(language(), { minimumFractionDigits: 4, maximumFractionDigits: 4 });
  return `${v < 0 ? '-' : ''}${SYMBOL[currency] ?? `${currency} `}${f.format(Math.abs(v + 0))}`;
}

/** The currency new amounts are entered in (the settings' `effective_currency`). */
let entered = /** @type {Currency} */ ('USD');

/** @returns {Currency} */
export const defaultCurrency = () => entered;

/** Set when the settings are read or saved. @param {Currency} c */
export function setDefaultCurrency(c) {
  entered = c;
}
