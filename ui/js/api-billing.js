// Typed wrappers over the Billing commands (the instance actions are in api.js).
// Kept beside api.js so the steps built in parallel do not edit one file; types from ../bindings.
import { invoke } from './tauri.js';

/** @typedef {import('../bindings/BillingView').BillingView} BillingView */
/** @typedef {import('../bindings/BudgetRow').BudgetRow} BudgetRow */
/** @typedef {import('../bindings/HostRate').HostRate} HostRate */
/** @typedef {import('../bindings/Increment').Increment} Increment */
/** @typedef {import('../bindings/BudgetPeriod').BudgetPeriod} Period */
/** @typedef {import('../bindings/Notice').Notice} Notice */
/** @typedef {import('../bindings/Currency').Currency} Currency */
/** @typedef {import('../bindings/Platform').Platform} Platform */
/** @typedef {import('../bindings/PlatformRules').PlatformRules} PlatformRules */

/**
 * @param {string | null} by e.g. `2h`, `90m`; empty: no projection
 * @param {boolean} live also ask the providers (reconcile, their rates, balances)
 * @returns {Promise<BillingView>}
 */
export const billingView = (by, live) => invoke('billing_view', { by, live });

/** @returns {Promise<BudgetRow[]>} */
export const budgetList = () => invoke('budget_list');

/**
 * @param {string | null} host @param {Period} period
 * @param {number} usd the limit in `currency` (it counts only the machines billed in it)
 * @param {Currency | null} currency null: the settings' default
 * @param {boolean} stopAt100 @returns {Promise<BudgetRow>}
 */
export const budgetSet = (host, period, usd, currency, stopAt100) =>
  invoke('budget_set', { host, period, usd, currency, stopWhenSpent: stopAt100 });

/** @param {string | null} host @param {Period} period @returns {Promise<boolean>} */
export const budgetRemove = (host, period) => invoke('budget_remove', { host, period });

/**
 * @param {string} host @param {number} usdPerHour per hour, in `currency` @param {Increment} rule
 * @param {number | null} storageUsdPerDay per day, in `currency`
 * @param {Currency | null} currency null: the settings' default
 * @param {Platform | null} platform the platform it was rented on (its billing rules apply)
 * @returns {Promise<HostRate>}
 */
export const hostRateSet = (host, usdPerHour, rule, storageUsdPerDay, currency, platform) =>
  invoke('host_rate_set', { host, usdPerHour, rule, storageUsdPerDay, currency, platform });

/** What gpurent knows of each platform's billing. @returns {Promise<PlatformRules[]>} */
export const platformRules = () => invoke('platform_rules');

/** @param {string} host @returns {Promise<HostRate>} */
export const hostRateStopped = (host) => invoke('host_rate_stopped', { host });

/** The user started a stopped pasted host again: compute bills from now. @param {string} host @returns {Promise<HostRate>} */
export const hostRateStarted = (host) => invoke('host_rate_started', { host });

/** @returns {Promise<Notice[]>} */
export const noticesRecent = () => invoke('notices_recent');
