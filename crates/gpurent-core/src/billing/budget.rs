//! Budgets: a limit per day or per month, for one machine or in total, and where the spending
//! stands against it (80 % warns, 100 % is over). Periods are UTC calendar days and months.
//! The one home of budgets: the types, the `budgets` table (plain functions over the [`Store`]),
//! the scope key and the spending count.

use rusqlite::params;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::{spent_between, Currency, StateChange, Tariff};
use crate::infra::error::CoreError;
use crate::infra::store::Store;

/// The window a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "BudgetPeriod")]
pub enum Period {
    Day,
    Month,
}

impl Period {
    pub fn parse(s: &str) -> Option<Period> {
        match s {
            "day" => Some(Period::Day),
            "month" => Some(Period::Month),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }

    /// The start (UTC) of the period that holds `now_ms`.
    pub fn start_ms(self, now_ms: i64) -> i64 {
        const DAY: i64 = 86_400_000;
        let day_start = now_ms.div_euclid(DAY) * DAY;
        match self {
            Period::Day => day_start,
            Period::Month => {
                let (y, m, _) = civil_from_days(now_ms.div_euclid(DAY));
                days_from_civil(y, m, 1) * DAY
            }
        }
    }
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Where spending stands against a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "BudgetLevel")]
pub enum Level {
    Ok,
    /// 80 % or more.
    Warn,
    /// 100 % or more.
    Over,
}

pub fn level(spent_usd: f64, budget_usd: f64) -> Level {
    if budget_usd <= 0.0 || spent_usd >= budget_usd {
        Level::Over
    } else if spent_usd >= 0.8 * budget_usd {
        Level::Warn
    } else {
        Level::Ok
    }
}

/// A spending limit: one machine (`host`) or all of them (`None`), per day or month (UTC), in
/// one currency: it counts only the machines billed in `currency` (nothing is converted). In
/// JSON `amount` says the limit under a neutral name beside the older `usd` ([`BudgetJson`]).
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
#[ts(as = "BudgetJson")]
pub struct Budget {
    pub host: Option<String>,
    pub period: Period,
    /// The limit, in `currency` (the name is older than currencies; see [`Budget::amount`]).
    pub usd: f64,
    /// What the limit is in (absent in JSON saved before currencies: USD).
    #[serde(default)]
    pub currency: Currency,
}

impl Budget {
    /// The limit, in [`Budget::currency`].
    pub fn amount(&self) -> f64 {
        self.usd
    }
}

/// [`Budget`] as JSON and TypeScript: `amount` beside the older `usd` (kept, the same number).
#[derive(Debug, Clone, Serialize, TS)]
pub struct BudgetJson {
    host: Option<String>,
    period: Period,
    /// The limit, in `currency`.
    amount: f64,
    /// Deprecated: the same number as `amount` (in `currency`, despite the name).
    usd: f64,
    currency: Currency,
}

impl From<Budget> for BudgetJson {
    fn from(
        Budget {
            host,
            period,
            usd,
            currency,
        }: Budget,
    ) -> Self {
        BudgetJson {
            host,
            period,
            amount: usd,
            usd,
            currency,
        }
    }
}

/// Written as [`BudgetJson`] (the neutral names beside the older ones).
impl Serialize for Budget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        BudgetJson::from(self.clone()).serialize(s)
    }
}

/// Where spending stands against a budget in the current period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BudgetStatus {
    pub budget: Budget,
    pub period_start_ms: i64,
    /// Spent in this period by the machines billed in the budget's currency, in that currency.
    #[serde(default)]
    pub spent: f64,
    /// Deprecated: the same number as `spent` (in the budget's currency, despite the name).
    pub spent_usd: f64,
    /// spent / budget (1.0 = 100 %).
    pub fraction: f64,
    /// `ok`, `warn` (80 % or more), `over` (100 % or more).
    pub level: Level,
}

/// A budget as saved, with the user's choice to stop the machine(s) at 100 %.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedBudget {
    pub budget: Budget,
    pub stop_at_100: bool,
}

/// The key a budget is saved (and its notices named) under: `host:<label>` or `total`.
pub fn scope_of(host: Option<&str>) -> String {
    host.map(|h| format!("host:{h}"))
        .unwrap_or_else(|| "total".to_string())
}

/// The machine a scope names (`None`: the total).
fn host_of(scope: &str) -> Option<String> {
    scope.strip_prefix("host:").map(String::from)
}

/// A budget's amount must be a number above zero.
pub fn check_usd(usd: f64) -> Result<(), CoreError> {
    if usd.is_finite() && usd > 0.0 {
        Ok(())
    } else {
        Err(CoreError::invalid("usd", "must be a number > 0"))
    }
}

/// Set (or replace) a budget. `stop_at_100`: the user's choice; `None` keeps what was chosen
/// before (a new budget: no stop).
pub fn set(
    store: &Store,
    budget: &Budget,
    stop_at_100: Option<bool>,
    now_ms: i64,
) -> Result<(), CoreError> {
    check_usd(budget.usd)?;
    store.conn().execute(
        "INSERT INTO budgets(scope, period, usd, stop_at_100, updated_ms, currency) VALUES (?1, ?2, ?3, COALESCE(?5, 0), ?4, ?6)
         ON CONFLICT(scope, period) DO UPDATE SET usd = excluded.usd, updated_ms = excluded.updated_ms,
           stop_at_100 = COALESCE(?5, stop_at_100), currency = excluded.currency",
        params![scope_of(budget.host.as_deref()), budget.period.name(), budget.usd, now_ms, stop_at_100, budget.currency.code()],
    )?;
    Ok(())
}

/// Remove a budget; `false` when there was none.
pub fn remove(store: &Store, host: Option<&str>, period: Period) -> Result<bool, CoreError> {
    Ok(store.conn().execute(
        "DELETE FROM budgets WHERE scope = ?1 AND period = ?2",
        params![scope_of(host), period.name()],
    )? > 0)
}

/// Every saved budget, by scope and period.
pub fn list(store: &Store) -> Result<Vec<SavedBudget>, CoreError> {
    let mut st = store.conn().prepare(
        "SELECT scope, period, usd, stop_at_100, currency FROM budgets ORDER BY scope, period",
    )?;
    let rows: Vec<(String, String, f64, bool, String)> = st
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(scope, period, usd, stop_at_100, currency)| {
            let period = Period::parse(&period)
                .ok_or_else(|| CoreError::stored("budgets", format!("period '{period}'")))?;
            let currency = Currency::parse(&currency)
                .filter(|c| c.code() == currency)
                .ok_or_else(|| CoreError::stored("budgets", format!("currency '{currency}'")))?;
            Ok(SavedBudget {
                budget: Budget {
                    host: host_of(&scope),
                    period,
                    usd,
                    currency,
                },
                stop_at_100,
            })
        })
        .collect()
}

/// One machine (or one rate period of a pasted host) as budgets count it.
#[derive(Debug, Clone, PartialEq)]
pub struct Billed {
    /// The saved host's label (a provider machine without one: its ledger id).
    pub host: String,
    pub currency: Currency,
    pub timeline: Vec<StateChange>,
    pub tariff: Tariff,
}

/// Where `budget` stands at `now_ms`: what the machines in its scope billed in its currency
/// spent since its period began (a machine billed in another currency is not counted: nothing
/// is converted).
pub fn status(budget: Budget, machines: &[Billed], now_ms: i64) -> BudgetStatus {
    let start = budget.period.start_ms(now_ms);
    let spent: f64 = machines
        .iter()
        .filter(|m| m.currency == budget.currency)
        .filter(|m| budget.host.as_deref().is_none_or(|x| x == m.host))
        .map(|m| spent_between(&m.timeline, &m.tariff, start, now_ms))
        .fold(0.0, |a, b| a + b);
    BudgetStatus {
        period_start_ms: start,
        spent,
        spent_usd: spent,
        fraction: spent / budget.usd,
        level: level(spent, budget.usd),
        budget,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_starts_in_utc() {
        // 2026-12-01T10:06:37Z
        let now = 1_796_119_597_000;
        assert_eq!(Period::Day.start_ms(now), 1_796_083_200_000); // 2026-12-01T00:00Z
        assert_eq!(Period::Month.start_ms(now), 1_796_083_200_000); // the 1st
                                                                    // 2024-02-29T23:59:59Z: leap day, month from 2024-02-01.
        let leap = 1_709_251_199_000;
        assert_eq!(Period::Day.start_ms(leap), 1_709_164_800_000);
        assert_eq!(Period::Month.start_ms(leap), 1_706_745_600_000);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    /// One setter: a new budget does not stop; set again without the choice, the choice made
    /// before is kept; with it, it is replaced. A row that cannot be read back is stored data,
    /// not built-in data.
    #[test]
    fn one_setter_keeps_or_replaces_the_stop_choice_and_a_damaged_row_is_stored_data() {
        use crate::infra::ipc::Coded;
        let store = Store::open_in_memory().expect("store");
        let total = |usd| Budget {
            host: None,
            period: Period::Day,
            usd,
            currency: Currency::Usd,
        };
        set(&store, &total(5.0), None, 1).expect("new");
        assert!(!list(&store).expect("list")[0].stop_at_100);
        set(&store, &total(5.0), Some(true), 2).expect("stop");
        set(&store, &total(6.0), None, 3).expect("again");
        let saved = list(&store).expect("list");
        assert_eq!((saved[0].budget.usd, saved[0].stop_at_100), (6.0, true));
        assert!(set(&store, &total(0.0), None, 4).is_err());
        assert_eq!(scope_of(Some("box")), "host:box");
        store
            .conn()
            .execute(
                "INSERT INTO budgets(scope, period, usd, stop_at_100, updated_ms) VALUES ('total', 'week', 1, 0, 1)",
                [],
            )
            .expect("row");
        let e = list(&store).expect_err("damaged");
        assert_eq!(e.code(), "stored_data_damaged");
    }

    #[test]
    fn levels() {
        assert_eq!(level(7.9, 10.0), Level::Ok);
        assert_eq!(level(8.0, 10.0), Level::Warn);
        assert_eq!(level(10.0, 10.0), Level::Over);
        assert_eq!(level(0.0, 0.0), Level::Over);
    }
}
