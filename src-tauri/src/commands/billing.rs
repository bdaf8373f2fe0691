//! Billing: what every machine costs (so far, per hour now, by a chosen time, spend over time),
//! budgets, a pasted host's own rate, and what the second guard has told the user. Each handler:
//! state → one core call → map error (docs/billing.md).

use gpurent_core::app::billing::HostRate;
use gpurent_core::app::billing::{BillingView, BudgetRow};
use gpurent_core::billing::budget::Period;
use gpurent_core::billing::platforms::PlatformRules;
use gpurent_core::billing::{Currency, Increment, Money, PastedRate, Platform};
use gpurent_core::second_guard::Notice;
use tauri::State;

use crate::commands::ops::blocking;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// The Billing screen at this moment; `by`: also what it will have cost that long from now
/// (`90m`, `2.5h`; empty or absent: no projection); `live`: ask the providers too.
#[tauri::command]
pub async fn billing_view(
    state: State<'_, AppState>,
    by: Option<String>,
    live: bool,
) -> CmdResult<BillingView> {
    let app = state.shared()?;
    blocking(move || app.billing_view_by(by.as_deref(), live).map_err(err)).await
}

#[tauri::command]
pub async fn budget_list(state: State<'_, AppState>) -> CmdResult<Vec<BudgetRow>> {
    let app = state.shared()?;
    blocking(move || app.budget_list().map_err(err)).await
}

/// Set or replace a budget (`host` absent: the total), with the user's choice to stop at 100 %.
/// `usd` is the limit in `currency` (absent: the settings' currency); it counts only the machines
/// billed in that currency.
#[tauri::command]
pub async fn budget_set(
    state: State<'_, AppState>,
    host: Option<String>,
    period: Period,
    usd: f64,
    currency: Option<Currency>,
    stop_when_spent: bool,
) -> CmdResult<BudgetRow> {
    let app = state.shared()?;
    blocking(move || {
        let currency = currency.unwrap_or_else(|| app.default_currency());
        app.budget_set_row(
            host.as_deref(),
            period,
            Money::new(usd, currency),
            stop_when_spent,
        )
        .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn budget_remove(
    state: State<'_, AppState>,
    host: Option<String>,
    period: Period,
) -> CmdResult<bool> {
    let app = state.shared()?;
    blocking(move || app.budget_remove(host.as_deref(), period).map_err(err)).await
}

/// A pasted host's own rate, billed from now; `usd_per_hour` and `storage_usd_per_day` are in
/// `currency` (absent: the settings' currency); `platform`: the platform it was rented on (its
/// billing rules apply; a rule contradicting a known rounding is `invalid_input`).
#[tauri::command]
pub async fn host_rate_set(
    state: State<'_, AppState>,
    host: String,
    usd_per_hour: f64,
    rule: Increment,
    storage_usd_per_day: Option<f64>,
    currency: Option<Currency>,
    platform: Option<Platform>,
) -> CmdResult<HostRate> {
    let app = state.shared()?;
    blocking(move || {
        let rate = PastedRate {
            usd_per_hour,
            rule,
            storage_usd_per_day,
            currency: currency.unwrap_or_else(|| app.default_currency()),
            platform,
        };
        app.host_rate_set(&host, rate, 0).map_err(err)
    })
    .await
}

/// What gpurent knows of each platform a pasted host may come from (the rate form's choice).
#[tauri::command]
pub async fn platform_rules(state: State<'_, AppState>) -> CmdResult<Vec<PlatformRules>> {
    let app = state.shared()?;
    blocking(move || app.platform_rules().map_err(err)).await
}

/// The user stopped a pasted host on its platform: compute stops billing now (storage goes on).
#[tauri::command]
pub async fn host_rate_stopped(state: State<'_, AppState>, host: String) -> CmdResult<HostRate> {
    let app = state.shared()?;
    blocking(move || app.host_rate_stopped(&host).map_err(err)).await
}

/// The user started a stopped pasted host again on its platform: compute bills from now (a rate
/// set while it was stopped never starts it).
#[tauri::command]
pub async fn host_rate_started(state: State<'_, AppState>, host: String) -> CmdResult<HostRate> {
    let app = state.shared()?;
    blocking(move || app.host_rate_started(&host).map_err(err)).await
}

/// What the second guard has told the user, newest first.
#[tauri::command]
pub async fn notices_recent(state: State<'_, AppState>) -> CmdResult<Vec<Notice>> {
    let app = state.shared()?;
    blocking(move || app.notices_recent(20).map_err(err)).await
}
