//! Billing on the facade: a pasted host's own rate (the user enters it; gpurent has no provider
//! to ask) and what each such host costs — so far, per hour now, and by a chosen time — through
//! the pure functions of [`crate::billing`]. Provider machines plug in the same way once the
//! instance ledger lands: their `(at_ms, state)` rows and [`Tariff::from_rules`].

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::App;
use crate::billing::budget::{self, Level, Period};
use crate::billing::{
    cost_so_far, cost_until, spent_between, state_at, usd_per_hour_now, CostBreakdown, Increment,
    InstanceState, PastedRate, StateChange, Traffic,
};
use crate::error::CoreError;
use crate::remote::RemoteError;

/// A pasted host's rate as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostRate {
    pub host: String,
    pub rate: PastedRate,
    /// Billed (running) since.
    pub since_ms: i64,
    /// Stopped since (storage still bills); `None` while it runs.
    pub stopped_ms: Option<i64>,
}

impl HostRate {
    /// The host's timeline as the cost functions take it.
    pub fn timeline(&self) -> Vec<StateChange> {
        let mut t = vec![StateChange {
            at_ms: self.since_ms,
            state: InstanceState::Running,
        }];
        if let Some(s) = self.stopped_ms {
            t.push(StateChange {
                at_ms: s,
                state: InstanceState::Stopped,
            });
        }
        t
    }
}

/// What one machine costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MachineCost {
    pub host: String,
    /// `running` or `stopped`.
    pub state: Option<InstanceState>,
    /// The billing rule (`per-second`, `per-minute`, `per-hour-rounded-up`).
    pub rule: String,
    pub since_ms: i64,
    pub now_ms: i64,
    pub so_far: CostBreakdown,
    pub usd_per_hour_now: f64,
    /// What it will have cost by the chosen time if it stays as it is.
    pub projected: Option<CostBreakdown>,
}

/// Every pasted host with a rate, and the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CostReport {
    pub machines: Vec<MachineCost>,
    pub total_so_far_usd: f64,
    pub total_usd_per_hour_now: f64,
    pub total_projected_usd: Option<f64>,
}

/// A `host_rates` row: label, USD/h, rule, storage USD/day, since, stopped.
type RateRow = (String, f64, String, Option<f64>, i64, Option<i64>);

fn row_to_rate(r: &rusqlite::Row<'_>) -> rusqlite::Result<RateRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
    ))
}

fn to_rate(
    (host, usd, rule, storage, since, stopped): (
        String,
        f64,
        String,
        Option<f64>,
        i64,
        Option<i64>,
    ),
) -> Result<HostRate, CoreError> {
    let rule = Increment::from_rule_name(&rule)
        .ok_or_else(|| CoreError::BundledData(format!("host_rates: unknown rule '{rule}'")))?;
    Ok(HostRate {
        host,
        rate: PastedRate {
            usd_per_hour: usd,
            rule,
            storage_usd_per_day: storage,
        },
        since_ms: since,
        stopped_ms: stopped,
    })
}

const SELECT: &str = "SELECT host_label, usd_per_hour, rule, storage_usd_per_day, since_ms, stopped_ms FROM host_rates";

impl App {
    /// Save a pasted host's rate; it has been billed since `started_ago_ms` before now.
    pub fn host_rate_set(
        &self,
        label: &str,
        rate: PastedRate,
        started_ago_ms: i64,
    ) -> Result<HostRate, RemoteError> {
        rate.validate()?;
        if started_ago_ms < 0 {
            return Err(RemoteError::invalid(
                "started_ago",
                "must not be in the future",
            ));
        }
        self.host_get(label)?;
        let now = self.now_ms();
        let since = now - started_ago_ms;
        self.with_store(|s| {
            s.conn().execute(
                "INSERT INTO host_rates(host_label, usd_per_hour, rule, storage_usd_per_day, since_ms, stopped_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6)
                 ON CONFLICT(host_label) DO UPDATE SET usd_per_hour = excluded.usd_per_hour,
                   rule = excluded.rule, storage_usd_per_day = excluded.storage_usd_per_day,
                   since_ms = excluded.since_ms, stopped_ms = NULL, updated_ms = excluded.updated_ms",
                params![label, rate.usd_per_hour, rate.rule.rule_name(), rate.storage_usd_per_day, since, now],
            )?;
            Ok(())
        })?;
        Ok(HostRate {
            host: label.to_string(),
            rate,
            since_ms: since,
            stopped_ms: None,
        })
    }

    /// Mark a pasted host stopped now (its compute stops billing; storage, if it has a rate, goes on).
    pub fn host_rate_stopped(&self, label: &str) -> Result<HostRate, RemoteError> {
        let now = self.now_ms();
        let n = self.with_store(|s| {
            Ok(s.conn().execute(
                "UPDATE host_rates SET stopped_ms = ?2, updated_ms = ?2 WHERE host_label = ?1 AND stopped_ms IS NULL",
                params![label, now],
            )?)
        })?;
        match self.host_rate_get(label)? {
            Some(r) if n == 1 || r.stopped_ms.is_some() => Ok(r),
            _ => Err(RemoteError::invalid(
                "host",
                format!("'{label}' has no rate set"),
            )),
        }
    }

    pub fn host_rate_get(&self, label: &str) -> Result<Option<HostRate>, CoreError> {
        let row = self.with_store(|s| {
            Ok(s.conn()
                .query_row(
                    &format!("{SELECT} WHERE host_label = ?1"),
                    [label],
                    row_to_rate,
                )
                .optional()?)
        })?;
        row.map(to_rate).transpose()
    }

    fn host_rates(&self) -> Result<Vec<HostRate>, CoreError> {
        let rows = self.with_store(|s| {
            let mut st = s.conn().prepare(&format!("{SELECT} ORDER BY host_label"))?;
            let rows = st
                .query_map([], row_to_rate)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        rows.into_iter().map(to_rate).collect()
    }

    fn machine_cost(&self, r: &HostRate, ahead_ms: Option<i64>) -> MachineCost {
        let now = self.now_ms();
        let by_ms = ahead_ms.map(|a| now + a.max(0));
        let t = r.timeline();
        let tariff = r.rate.tariff();
        MachineCost {
            host: r.host.clone(),
            state: state_at(&t, now),
            rule: r.rate.rule.rule_name().to_string(),
            since_ms: r.since_ms,
            now_ms: now,
            so_far: cost_so_far(&t, &tariff, Traffic::default(), now),
            usd_per_hour_now: usd_per_hour_now(&t, &tariff, now),
            projected: by_ms.map(|by| cost_until(&t, &tariff, Traffic::default(), now, by)),
        }
    }

    /// What one pasted host costs (`ahead_ms`: also project to that long from now).
    pub fn cost_host(
        &self,
        label: &str,
        ahead_ms: Option<i64>,
    ) -> Result<MachineCost, RemoteError> {
        let r = self.host_rate_get(label)?.ok_or_else(|| {
            RemoteError::invalid(
                "host",
                format!("'{label}' has no rate: gpurent rate set {label} --usd-per-hour X --rule per-hour-rounded-up"),
            )
        })?;
        Ok(self.machine_cost(&r, ahead_ms))
    }

    /// Every pasted host with a rate, and the totals.
    pub fn cost_all(&self, ahead_ms: Option<i64>) -> Result<CostReport, CoreError> {
        let machines: Vec<MachineCost> = self
            .host_rates()?
            .iter()
            .map(|r| self.machine_cost(r, ahead_ms))
            .collect();
        Ok(CostReport {
            total_so_far_usd: machines.iter().map(|m| m.so_far.total_usd).sum(),
            total_usd_per_hour_now: machines.iter().map(|m| m.usd_per_hour_now).sum(),
            total_projected_usd: ahead_ms.map(|_| {
                machines
                    .iter()
                    .filter_map(|m| m.projected.as_ref())
                    .map(|p| p.total_usd)
                    .sum()
            }),
            machines,
        })
    }
}

/// A spending limit: one machine (`host`) or all of them (`None`), per day or month (UTC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Budget {
    pub host: Option<String>,
    pub period: Period,
    pub usd: f64,
}

/// Where spending stands against a budget in the current period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BudgetStatus {
    pub budget: Budget,
    pub period_start_ms: i64,
    pub spent_usd: f64,
    /// spent / budget (1.0 = 100 %).
    pub fraction: f64,
    /// `ok`, `warn` (80 % or more), `over` (100 % or more).
    pub level: Level,
}

fn scope_of(host: Option<&str>) -> String {
    host.map(|h| format!("host:{h}"))
        .unwrap_or_else(|| "total".to_string())
}

impl App {
    /// Set (or replace) a budget.
    pub fn budget_set(
        &self,
        host: Option<&str>,
        period: Period,
        usd: f64,
    ) -> Result<Budget, RemoteError> {
        if !(usd.is_finite() && usd > 0.0) {
            return Err(RemoteError::invalid("usd", "must be a number > 0"));
        }
        if let Some(h) = host {
            self.host_get(h)?;
        }
        let now = self.now_ms();
        self.with_store(|s| {
            s.conn().execute(
                "INSERT INTO budgets(scope, period, usd, stop_at_100, updated_ms) VALUES (?1, ?2, ?3, 0, ?4)
                 ON CONFLICT(scope, period) DO UPDATE SET usd = excluded.usd, updated_ms = excluded.updated_ms",
                params![scope_of(host), period.name(), usd, now],
            )?;
            Ok(())
        })?;
        Ok(Budget {
            host: host.map(String::from),
            period,
            usd,
        })
    }

    /// Remove a budget; `false` when there was none.
    pub fn budget_remove(&self, host: Option<&str>, period: Period) -> Result<bool, CoreError> {
        self.with_store(|s| {
            Ok(s.conn().execute(
                "DELETE FROM budgets WHERE scope = ?1 AND period = ?2",
                params![scope_of(host), period.name()],
            )? > 0)
        })
    }

    /// Every budget and what was spent in its current period (pasted hosts with a rate; provider
    /// machines join once the instance ledger is there).
    pub fn budget_status(&self) -> Result<Vec<BudgetStatus>, CoreError> {
        let rows: Vec<(String, String, f64)> = self.with_store(|s| {
            let mut st = s
                .conn()
                .prepare("SELECT scope, period, usd FROM budgets ORDER BY scope, period")?;
            let rows = st
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        let rates = self.host_rates()?;
        let now = self.now_ms();
        let mut out = Vec::new();
        for (scope, period, usd) in rows {
            let period = Period::parse(&period)
                .ok_or_else(|| CoreError::BundledData(format!("budgets: period '{period}'")))?;
            let host = scope.strip_prefix("host:").map(String::from);
            let start = period.start_ms(now);
            let spent: f64 = rates
                .iter()
                .filter(|r| host.as_deref().is_none_or(|h| h == r.host))
                .map(|r| spent_between(&r.timeline(), &r.rate.tariff(), start, now))
                .sum();
            out.push(BudgetStatus {
                budget: Budget { host, period, usd },
                period_start_ms: start,
                spent_usd: spent,
                fraction: spent / usd,
                level: budget::level(spent, usd),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::FixedClock;
    use crate::paths::Paths;
    use crate::remote::HostSpec;

    const HOUR: i64 = 3_600_000;

    fn app_at(root: &std::path::Path, now: i64) -> App {
        App::open(Paths::under(root), Arc::new(FixedClock(now)), None).expect("open")
    }

    fn save_host(app: &App, label: &str) {
        let spec = HostSpec {
            address: "203.0.113.9".into(),
            port: 22,
            user: "root".into(),
            jump: None,
            provider: None,
            notes: None,
        };
        app.with_store(|s| {
            crate::remote::hosts::insert(s, label, &spec, None, 0)
                .map_err(|e| CoreError::invalid("host", e.to_string()))
        })
        .expect("save host");
    }

    /// The guides' example through the facade: started 1 h 10 min ago, per started hour.
    #[test]
    fn pasted_host_cost_so_far_now_and_projected() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let rate = PastedRate {
            usd_per_hour: 2.0,
            rule: Increment::Hour,
            storage_usd_per_day: Some(0.48),
        };
        app.host_rate_set("box", rate, 70 * 60_000).expect("set");
        assert!(app.host_rate_set("nope", rate, 0).is_err(), "unknown host");
        let c = app.cost_host("box", Some(2 * HOUR)).expect("cost");
        let compute =
            |b: &CostBreakdown| b.lines.iter().find(|l| l.meter == "compute").map(|l| l.usd);
        assert_eq!(compute(&c.so_far), Some(4.0), "1 h 10 min billed as 2 h");
        assert!((c.usd_per_hour_now - (2.0 + 0.02)).abs() < 1e-9);
        // By t0 + 2 h it has run 3 h 10 min: 4 started hours.
        assert_eq!(c.projected.as_ref().and_then(compute), Some(8.0));
        let all = app.cost_all(None).expect("all");
        assert_eq!(all.machines.len(), 1);
        assert!((all.total_so_far_usd - c.so_far.total_usd).abs() < 1e-9);
        // Stopped: compute stops, storage goes on; survives a restart of the app.
        app.host_rate_stopped("box").expect("stopped");
        drop(app);
        let app = app_at(tmp.path(), t0 + 5 * HOUR);
        let c = app.cost_host("box", None).expect("cost");
        assert_eq!(c.state, Some(InstanceState::Stopped));
        assert_eq!(compute(&c.so_far), Some(4.0));
        assert!((c.usd_per_hour_now - 0.02).abs() < 1e-9);
    }

    /// Budgets count what was spent since the start of the UTC day / month.
    #[test]
    fn budgets_count_the_current_period() {
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z; the host has run since 07:00Z at $1/h per second: $3 today.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "box");
        let rate = PastedRate {
            usd_per_hour: 1.0,
            rule: Increment::Second,
            storage_usd_per_day: None,
        };
        app.host_rate_set("box", rate, 3 * HOUR).expect("rate");
        app.budget_set(Some("box"), Period::Day, 3.5).expect("day");
        app.budget_set(None, Period::Month, 100.0).expect("month");
        assert!(app.budget_set(Some("nope"), Period::Day, 1.0).is_err());
        assert!(app.budget_set(None, Period::Day, 0.0).is_err());
        let st = app.budget_status().expect("status");
        assert_eq!(st.len(), 2);
        let day = st
            .iter()
            .find(|b| b.budget.period == Period::Day)
            .expect("day");
        assert_eq!(day.budget.host.as_deref(), Some("box"));
        assert!((day.spent_usd - 3.0).abs() < 1e-9, "{day:?}");
        assert_eq!(day.level, Level::Warn, "3.0 of 3.5 is over 80 %");
        let month = st
            .iter()
            .find(|b| b.budget.period == Period::Month)
            .expect("month");
        assert_eq!(month.level, Level::Ok);
        // Running since yesterday 22:00Z: today counts only from midnight.
        app.host_rate_set("box", rate, 12 * HOUR).expect("rate");
        let st = app.budget_status().expect("status");
        let day = st
            .iter()
            .find(|b| b.budget.period == Period::Day)
            .expect("day");
        assert!((day.spent_usd - 10.0).abs() < 1e-9, "{day:?}");
        assert_eq!(day.level, Level::Over);
        assert!(app.budget_remove(Some("box"), Period::Day).expect("rm"));
        assert_eq!(app.budget_status().expect("status").len(), 1);
    }
}
