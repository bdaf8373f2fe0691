//! Billing on the facade: a pasted host's own rate (the user enters it; gpurent has no provider
//! to ask), what each machine costs — so far, per hour now, and by a chosen time — through the
//! pure functions of [`crate::billing`] (provider machines: the ledger's `(at_ms, state)` rows and
//! their tariff), the budgets, and the Billing screen's view. The rows are kept by
//! [`crate::billing::rates`] and [`crate::billing::budget`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::App;
use crate::billing::budget::{self, Period};
pub use crate::billing::budget::{Budget, BudgetStatus};
use crate::billing::platforms::{self, PlatformRules};
use crate::billing::rates;
pub use crate::billing::rates::HostRate;
use crate::billing::report;
pub use crate::billing::report::{
    AccountBalance, AccountBalanceJson, CostOptions, CostReport, CurrencyTotal, MachineCost,
    MachineKind,
};
pub use crate::billing::spend::{spend_series, SpendPoint, SpendSeries};
use crate::billing::{Currency, Money, PastedRate, StateChange, Tariff};
use crate::infra::error::CoreError;
use crate::providers::accounts::{self, Account};
use crate::providers::foreign::ForeignSeen;
use crate::providers::ledger::{self, InstanceEvent, LedgerInstance};
use crate::providers::ProviderError;
use crate::remote::RemoteError;

impl App {
    /// Save a pasted host's rate; it has been billed since `started_ago_ms` before now. A host
    /// marked stopped then stays stopped: the rate bills from its next start
    /// ([`App::host_rate_started`]); setting a rate never starts a machine.
    pub fn host_rate_set(
        &self,
        label: &str,
        rate: PastedRate,
        started_ago_ms: i64,
    ) -> Result<HostRate, RemoteError> {
        rate.validate()?;
        if let Some(p) = rate.platform {
            platforms::check_rule(&platforms::rules_for(p)?, rate.rule)?;
        }
        if started_ago_ms < 0 {
            return Err(RemoteError::invalid(
                "started_ago",
                "must not be in the future",
            ));
        }
        self.host_get(label)?;
        let now = self.now_ms();
        let since = now - started_ago_ms;
        self.with_store(|s| rates::set(s, label, &rate, since, now))?;
        self.host_rate_get(label)?.ok_or_else(|| {
            RemoteError::invalid("host", format!("'{label}': the rate was not saved"))
        })
    }

    /// Mark a pasted host stopped now (its compute stops billing; storage, if it has a rate, goes on).
    pub fn host_rate_stopped(&self, label: &str) -> Result<HostRate, RemoteError> {
        let now = self.now_ms();
        let stopped_now = self.with_store(|s| rates::mark_stopped(s, label, now))?;
        match self.host_rate_get(label)? {
            Some(r) if stopped_now || r.stopped_ms.is_some() => Ok(r),
            _ => Err(RemoteError::invalid(
                "host",
                format!("'{label}' has no rate set"),
            )),
        }
    }

    /// Mark a stopped pasted host running again now (the user started it on the platform): its
    /// compute bills from now at its current rate.
    pub fn host_rate_started(&self, label: &str) -> Result<HostRate, RemoteError> {
        let now = self.now_ms();
        let started_now = self.with_store(|s| rates::mark_started(s, label, now))?;
        match self.host_rate_get(label)? {
            Some(r) if started_now || r.stopped_ms.is_none() => Ok(r),
            _ => Err(RemoteError::invalid(
                "host",
                format!("'{label}' has no rate set"),
            )),
        }
    }

    /// What gpurent knows of each platform a pasted host may come from (the rate form's choice).
    pub fn platform_rules(&self) -> Result<Vec<PlatformRules>, CoreError> {
        platforms::all()
    }

    pub fn host_rate_get(&self, label: &str) -> Result<Option<HostRate>, CoreError> {
        self.with_store(|s| rates::get(s, label))
    }

    pub(crate) fn host_rates(&self) -> Result<Vec<HostRate>, CoreError> {
        self.with_store(rates::list)
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
                format!("'{label}' has no rate: gpurent rate set {label} 2.5 --currency CNY --rule per-hour-rounded-up"),
            )
        })?;
        Ok(report::pasted(&r, self.now_ms(), ahead_ms))
    }

    /// Every machine with the providers asked (reconcile, their rates, balances); `ahead_ms`:
    /// also project that far.
    pub fn cost_all(&self, ahead_ms: Option<i64>) -> Result<CostReport, ProviderError> {
        self.cost_report(CostOptions {
            ahead_ms,
            live: true,
            include_closed: false,
        })
    }

    /// The cost report: pasted hosts with a rate, then the ledger's provider machines, the totals
    /// and (live) each account's balance ([`report::cost_report`]).
    pub fn cost_report(&self, opts: CostOptions) -> Result<CostReport, ProviderError> {
        report::cost_report(&CostSteps(self), self, self.clock.as_ref(), opts)
    }

    /// One provider machine (ledger id or provider id) or, when no ledger row matches, a pasted
    /// host with a rate. `live`: reconcile first and read the provider's own rate.
    pub fn cost_instance(
        &self,
        key: &str,
        ahead_ms: Option<i64>,
        live: bool,
    ) -> Result<MachineCost, ProviderError> {
        let Some(row) = self.with_db(|c| ledger::find(c, key))? else {
            return Ok(self.cost_host(key, ahead_ms)?);
        };
        let mut seen = vec![];
        if live {
            let (_, list) = self.providers_reconcile()?;
            seen = list;
        }
        let row = self.with_db(|c| ledger::get(c, &row.id))?.unwrap_or(row);
        let now = self.now_ms();
        let timeline = self.instance_timeline(&row)?;
        let remote = report::listed(&row, &seen);
        Ok(report::provider_machine(
            &row, timeline, remote, now, ahead_ms,
        ))
    }

    /// A ledger row's timeline and tariff (also what budgets count).
    pub(crate) fn instance_timeline(
        &self,
        row: &LedgerInstance,
    ) -> Result<(Vec<StateChange>, Tariff, Vec<String>), ProviderError> {
        let events = self.with_db(|c| ledger::events(c, &row.id))?;
        report::timeline(row, &events)
    }
}

/// What [`report::cost_report`] reads, from the app's store and accounts.
struct CostSteps<'a>(&'a App);

impl report::CostReads for CostSteps<'_> {
    fn rates(&self) -> Result<Vec<HostRate>, CoreError> {
        self.0.host_rates()
    }

    fn foreign_last_seen(&self) -> Vec<ForeignSeen> {
        self.0.foreign_last_seen()
    }

    fn ledger(&self) -> Result<Vec<LedgerInstance>, ProviderError> {
        self.0.with_db(ledger::list)
    }

    fn events(&self, row_id: &str) -> Result<Vec<InstanceEvent>, ProviderError> {
        self.0.with_db(|c| ledger::events(c, row_id))
    }

    fn accounts(&self) -> Result<Vec<Account>, ProviderError> {
        self.0.with_db(accounts::list)
    }

    fn balance(&self, account: &Account) -> Result<Option<f64>, ProviderError> {
        self.0.provider_client(account)?.balance()
    }
}

/// The ledger reads of a budget are store reads: their error is the store's.
fn into_core(e: ProviderError) -> CoreError {
    match e {
        ProviderError::Core(c) => c,
        other => CoreError::stored("instances", other.to_string()),
    }
}

impl App {
    /// Set (or replace) a budget (a choice to stop at 100 % made before is kept).
    pub fn budget_set(
        &self,
        host: Option<&str>,
        period: Period,
        usd: f64,
    ) -> Result<Budget, RemoteError> {
        self.budget_save(host, period, Money::new(usd, Currency::Usd), None)
    }

    /// Set (or replace) a budget in a currency: it counts only the machines billed in it.
    /// `stop_at_100`: `None` keeps the choice made before.
    pub fn budget_set_in(
        &self,
        host: Option<&str>,
        period: Period,
        limit: Money,
        stop_at_100: Option<bool>,
    ) -> Result<Budget, RemoteError> {
        self.budget_save(host, period, limit, stop_at_100)
    }

    /// The one way a budget is saved: the amount checked, the machine a saved host, then
    /// [`budget::set`].
    pub(crate) fn budget_save(
        &self,
        host: Option<&str>,
        period: Period,
        limit: Money,
        stop_at_100: Option<bool>,
    ) -> Result<Budget, RemoteError> {
        budget::check_usd(limit.amount)?;
        if let Some(h) = host {
            self.host_get(h)?;
        }
        let b = Budget {
            host: host.map(String::from),
            period,
            usd: limit.amount,
            currency: limit.currency,
        };
        let now = self.now_ms();
        self.with_store(|s| budget::set(s, &b, stop_at_100, now))?;
        Ok(b)
    }

    /// Remove a budget; `false` when there was none.
    pub fn budget_remove(&self, host: Option<&str>, period: Period) -> Result<bool, CoreError> {
        self.with_store(|s| budget::remove(s, host, period))
    }

    /// Every budget and what was spent in its current period (pasted hosts with a rate and the
    /// ledger's provider machines, by their saved host label or ledger id).
    pub fn budget_status(&self) -> Result<Vec<BudgetStatus>, CoreError> {
        Ok(self
            .budgets_saved()?
            .into_iter()
            .map(|(status, _)| status)
            .collect())
    }

    /// Every saved budget, where it stands now, and whether the user chose to stop at 100 %.
    pub(crate) fn budgets_saved(&self) -> Result<Vec<(BudgetStatus, bool)>, CoreError> {
        let saved = self.with_store(budget::list)?;
        // Pasted hosts with a rate, then provider machines (closed ones included: what they
        // spent before closing counts).
        let mut machines: Vec<budget::Billed> = self
            .host_rates()?
            .into_iter()
            .flat_map(|r| {
                let host = r.host.clone();
                r.periods().into_iter().map(move |p| budget::Billed {
                    host: host.clone(),
                    currency: p.currency,
                    timeline: p.timeline,
                    tariff: p.tariff,
                })
            })
            .collect();
        for row in self.with_db(ledger::list).map_err(into_core)? {
            let (t, tariff, _) = self.instance_timeline(&row).map_err(into_core)?;
            machines.push(budget::Billed {
                currency: row.provider.spec().currency,
                host: row.host_label.unwrap_or(row.id),
                timeline: t,
                tariff,
            });
        }
        let now = self.now_ms();
        Ok(saved
            .into_iter()
            .map(|b| (budget::status(b.budget, &machines, now), b.stop_at_100))
            .collect())
    }
}

/// A budget as the Billing screen lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BudgetRow {
    #[serde(flatten)]
    pub status: BudgetStatus,
    /// The user chose: stop the machine(s) at 100 % (provider machines; a pasted host has no API
    /// gpurent could stop it with).
    pub stop_at_100: bool,
}

/// Everything the Billing screen shows, computed at one `now`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BillingView {
    pub now_ms: i64,
    pub cost: CostReport,
    pub budgets: Vec<BudgetRow>,
    pub spend: SpendSeries,
    /// The currency the rate and budget forms start in (the settings' default).
    #[serde(default)]
    pub default_currency: Currency,
}

/// How many points the spend chart gets.
const SPEND_POINTS: usize = 60;

/// The Billing screen's reads: cost per machine and in total (so far, per hour now, by a chosen
/// time), the budgets with where they stand and the user's "stop at 100 %", and spend over time.
impl App {
    /// The timelines and tariffs of every machine that cost something: pasted hosts with a rate
    /// and every ledger machine, released ones included (what they spent is spent — the same
    /// machines the budgets count).
    fn billed_timelines(&self) -> Result<Vec<(Currency, Vec<StateChange>, Tariff)>, ProviderError> {
        let mut out: Vec<(Currency, Vec<StateChange>, Tariff)> = self
            .host_rates()?
            .iter()
            .flat_map(|r| r.periods())
            .map(|p| (p.currency, p.timeline, p.tariff))
            .collect();
        for row in self.with_db(ledger::list)? {
            let (t, tariff, _) = self.instance_timeline(&row)?;
            out.push((row.provider.spec().currency, t, tariff));
        }
        Ok(out)
    }

    /// The Billing screen at this moment; `ahead_ms`: also what it will have cost that long from
    /// now; `live`: ask the providers too (reconcile, their own rates, balances) — the screen does
    /// that when it opens and every 30 s, and computes from the ledger in between. The chart runs
    /// from the first machine's start (at most 30 days back) to now.
    pub fn billing_view(
        &self,
        ahead_ms: Option<i64>,
        live: bool,
    ) -> Result<BillingView, ProviderError> {
        let now = self.now_ms();
        let cost = self.cost_report(CostOptions {
            ahead_ms,
            live,
            include_closed: false,
        })?;
        let timelines = self.billed_timelines()?;
        let first = timelines
            .iter()
            .filter_map(|(_, t, _)| t.first().map(|c| c.at_ms))
            .min()
            .unwrap_or(now);
        let from = first.max(now - 30 * 86_400_000).min(now);
        Ok(BillingView {
            now_ms: now,
            cost,
            budgets: self.budget_list()?,
            spend: spend_series(&timelines, from, now, SPEND_POINTS),
            default_currency: self.default_currency(),
        })
    }

    /// [`App::billing_view`] with "by" as the user typed it (`90m`, `2.5h`, `1d`; empty: none).
    pub fn billing_view_by(
        &self,
        by: Option<&str>,
        live: bool,
    ) -> Result<BillingView, ProviderError> {
        let ahead_ms = match by.map(str::trim).filter(|b| !b.is_empty()) {
            None => None,
            Some(text) => Some(
                crate::guard::parse_duration(text)
                    .map_err(|e| CoreError::invalid("by", e.to_string()))? as i64
                    * 1000,
            ),
        };
        self.billing_view(ahead_ms, live)
    }

    /// Set (or replace) a budget, with the user's choice to stop at 100 %.
    pub fn budget_set_with(
        &self,
        host: Option<&str>,
        period: Period,
        usd: f64,
        stop_at_100: bool,
    ) -> Result<BudgetRow, RemoteError> {
        self.budget_set_row(host, period, Money::new(usd, Currency::Usd), stop_at_100)
    }

    /// Set (or replace) a budget in a currency, with the user's choice to stop at 100 %, as the
    /// Billing screen lists it.
    pub fn budget_set_row(
        &self,
        host: Option<&str>,
        period: Period,
        limit: Money,
        stop_at_100: bool,
    ) -> Result<BudgetRow, RemoteError> {
        let b = self.budget_save(host, period, limit, Some(stop_at_100))?;
        let status = self
            .budget_status()?
            .into_iter()
            .find(|s| s.budget == b)
            .ok_or_else(|| RemoteError::invalid("budget", "was not saved"))?;
        Ok(BudgetRow {
            status,
            stop_at_100,
        })
    }

    /// Every budget, where it stands, and whether the user chose to stop at 100 %.
    pub fn budget_list(&self) -> Result<Vec<BudgetRow>, CoreError> {
        Ok(self
            .budgets_saved()?
            .into_iter()
            .map(|(status, stop_at_100)| BudgetRow {
                status,
                stop_at_100,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::billing::budget::Level;
    use crate::billing::Increment;
    use crate::billing::{CostBreakdown, InstanceState, Platform};
    use crate::providers::ProviderKind;

    const HOUR: i64 = 3_600_000;

    use crate::app::test_support::{app_at, save_host};

    /// A pasted host's rate billed per second, no storage, no platform.
    fn per_second(per_hour: f64, currency: Currency) -> PastedRate {
        PastedRate {
            usd_per_hour: per_hour,
            rule: Increment::Second,
            storage_usd_per_day: None,
            currency,
            platform: None,
        }
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
            currency: Currency::Usd,
            platform: None,
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

    /// `rate set` again keeps the earlier rate for the time it applied: $1/h for the 3 h before
    /// the new rate, $3/h after (per second) — $6 at t0 + 2 h, not 2 h x $3. The history lists
    /// both, and survives a restart.
    #[test]
    fn a_new_rate_keeps_the_earlier_rate_history() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let one = per_second(1.0, Currency::Usd);
        app.host_rate_set("box", one, 2 * HOUR).expect("set");
        drop(app);
        let app = app_at(tmp.path(), t0 + HOUR);
        let three = PastedRate {
            usd_per_hour: 3.0,
            ..one
        };
        let r = app.host_rate_set("box", three, 0).expect("set again");
        assert_eq!(r.history.len(), 2, "{r:?}");
        drop(app);
        let app = app_at(tmp.path(), t0 + 2 * HOUR);
        let c = app.cost_host("box", Some(HOUR)).expect("cost");
        assert!((c.so_far.total_usd - 6.0).abs() < 1e-6, "{c:?}");
        assert!((c.usd_per_hour_now - 3.0).abs() < 1e-9);
        let projected = c.projected.as_ref().map(|p| p.total_usd).unwrap_or(0.0);
        assert!((projected - 9.0).abs() < 1e-6, "{c:?}");
        // The budgets and the spend chart count the same.
        app.budget_set(Some("box"), Period::Month, 100.0)
            .expect("budget");
        let st = app.budget_status().expect("status");
        assert!((st[0].spent_usd - 6.0).abs() < 1e-6, "{st:?}");
        let r = app.host_rate_get("box").expect("get").expect("rate");
        assert_eq!(r.history[0].rate.map(|x| x.usd_per_hour), Some(1.0));
        assert_eq!(r.history[1].rate.map(|x| x.usd_per_hour), Some(3.0));
        assert_eq!(r.history[1].at_ms, t0 + HOUR);
    }

    /// A pasted host its guard powered off stops costing from the guard's record — only with the
    /// machine's own evidence: a record from another boot (then running again from its boot
    /// time); a record on the current boot changes nothing until the host stops answering; a
    /// host that answers again on that boot did not go off (net nothing).
    #[test]
    fn a_guard_poweroff_stops_a_pasted_hosts_billing_on_the_machines_evidence() {
        use crate::billing::rates::RateEventKind;
        use crate::guard::ssh::Fetched;
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let rate = per_second(2.0, Currency::Usd);
        app.host_rate_set("box", rate, 3 * HOUR).expect("rate");
        // The host's clock runs 100 s ahead of this computer's.
        let host_now = t0 / 1000 + 100;
        let on_boot = |boot: &str, uptime_s: i64| Fetched {
            installed: true,
            host_now_s: Some(host_now),
            boot_id: Some(boot.into()),
            uptime_s: Some(uptime_s),
            poweroff_at_s: Some(host_now - 2 * 3600),
            poweroff_boot_id: Some("boot-a".into()),
            ..Fetched::default()
        };
        let cost = |app: &App| app.cost_host("box", None).expect("cost").so_far.total_usd;
        // The record on the boot it was written on: a power-off under way, not yet evidence.
        app.guard_poweroff_billing("box", &on_boot("boot-a", 9000))
            .expect("same boot");
        assert!((cost(&app) - 6.0).abs() < 1e-6, "{}", cost(&app));
        // The machine answers on another boot, up for 30 min: off from the record's time until
        // its boot — billed 1 h before and 30 min after: $3, not $6.
        let later = on_boot("boot-b", 1800);
        app.guard_poweroff_billing("box", &later).expect("new boot");
        app.guard_poweroff_billing("box", &later)
            .expect("again: once");
        assert!((cost(&app) - 3.0).abs() < 1e-6, "{}", cost(&app));
        let r = app.host_rate_get("box").expect("get").expect("rate");
        let guard: Vec<(RateEventKind, i64)> = r
            .history
            .iter()
            .filter(|e| e.source == "guard")
            .map(|e| (e.kind, e.at_ms))
            .collect();
        assert_eq!(
            guard,
            [
                (RateEventKind::PoweredOff, t0 - 2 * HOUR),
                (RateEventKind::Running, t0 - HOUR / 2)
            ]
        );
        assert_eq!(
            app.cost_host("box", None).expect("c").state,
            Some(InstanceState::Running)
        );

        // Another host: the record seen under way, then no answer: off from the record's time.
        save_host(&app, "box2");
        app.host_rate_set("box2", rate, 3 * HOUR).expect("rate");
        let c2 = |app: &App| app.cost_host("box2", None).expect("cost").so_far.total_usd;
        assert!(
            !app.guard_poweroff_no_answer("box2").expect("no record"),
            "no evidence"
        );
        app.guard_poweroff_billing("box2", &on_boot("boot-a", 9000))
            .expect("under way");
        assert!(app.guard_poweroff_no_answer("box2").expect("no answer"));
        assert!((c2(&app) - 2.0).abs() < 1e-6, "{}", c2(&app));
        // It answers again on the same boot: it did not go off — billed throughout.
        app.guard_poweroff_billing("box2", &on_boot("boot-a", 9000))
            .expect("same boot again");
        assert!((c2(&app) - 6.0).abs() < 1e-6, "{}", c2(&app));
    }

    /// Money in two currencies is never added up: a CNY pasted host and a USD provider machine
    /// are two lines (totals, chart); a budget in CNY counts only the CNY host, one in USD only
    /// the provider machine; the `usd` totals stay USD only.
    #[test]
    fn two_currencies_are_two_lines_and_a_budget_counts_its_own() {
        use crate::providers::{ledger::LedgerState, ProviderKind};
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z: both have run since 07:00Z.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "autodl");
        let yuan = per_second(2.5, Currency::Cny);
        app.host_rate_set("autodl", yuan, 3 * HOUR).expect("rate");
        crate::app::test_support::rental(
            &app,
            "pod",
            ProviderKind::Lambda,
            LedgerState::Running,
            now - 3 * HOUR,
        );
        let r = app
            .cost_report(CostOptions {
                ahead_ms: Some(HOUR),
                live: false,
                include_closed: false,
            })
            .expect("report");
        let host = r
            .machines
            .iter()
            .find(|m| m.host == "autodl")
            .expect("host");
        assert_eq!(host.currency, Currency::Cny);
        let pod = r.machines.iter().find(|m| m.host == "pod").expect("pod");
        assert_eq!(pod.currency, Currency::Usd);
        let lines: Vec<(Currency, f64, f64, Option<f64>)> = r
            .totals
            .iter()
            .map(|t| (t.currency, t.so_far, t.per_hour_now, t.projected))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0].0, Currency::Cny);
        assert!((lines[0].1 - 7.5).abs() < 1e-6, "{lines:?}");
        assert!((lines[0].2 - 2.5).abs() < 1e-9, "{lines:?}");
        assert!((lines[0].3.unwrap_or(0.0) - 10.0).abs() < 1e-6, "{lines:?}");
        assert_eq!(lines[1].0, Currency::Usd);
        assert!((lines[1].1 - 0.44 * 3.0).abs() < 1e-6, "{lines:?}");
        assert!((r.total_so_far_usd - 0.44 * 3.0).abs() < 1e-6, "USD only");
        assert!((r.total_usd_per_hour_now - 0.44).abs() < 1e-9, "USD only");
        // Budgets: in CNY the provider machine is not counted; in USD the pasted host is not.
        let cny = app
            .budget_set_in(None, Period::Day, Money::new(10.0, Currency::Cny), None)
            .expect("cny");
        assert_eq!(cny.currency, Currency::Cny);
        app.budget_set(None, Period::Month, 2.0).expect("usd");
        let st = app.budget_status().expect("status");
        let day = st
            .iter()
            .find(|b| b.budget.period == Period::Day)
            .expect("day");
        assert_eq!(day.budget.currency, Currency::Cny);
        assert!((day.spent_usd - 7.5).abs() < 1e-6, "{day:?}");
        assert_eq!(day.level, Level::Ok, "7.5 of 10 is under 80 %");
        let month = st
            .iter()
            .find(|b| b.budget.period == Period::Month)
            .expect("month");
        assert_eq!(month.budget.currency, Currency::Usd);
        assert!((month.spent_usd - 0.44 * 3.0).abs() < 1e-6, "{month:?}");
        // The chart: one curve per currency, the USD curve as `points`.
        let v = app.billing_view(None, false).expect("view");
        let ends: Vec<(Currency, f64)> = v
            .spend
            .by_currency
            .iter()
            .map(|c| (c.currency, c.points.last().map(|p| p.usd).unwrap_or(0.0)))
            .collect();
        assert_eq!(ends.len(), 2, "{ends:?}");
        assert!((ends[0].1 - 7.5).abs() < 1e-6 && ends[0].0 == Currency::Cny);
        let last_usd = v.spend.points.last().map(|p| p.usd).unwrap_or(0.0);
        assert!((last_usd - 0.44 * 3.0).abs() < 1e-6, "{last_usd}");
    }

    /// A host's rate set again in another currency: the earlier period stays in its own
    /// currency, beside (never inside) the new one, and in that currency's total.
    #[test]
    fn a_rate_in_another_currency_keeps_the_earlier_period_apart() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let usd = per_second(1.0, Currency::Usd);
        app.host_rate_set("box", usd, 2 * HOUR).expect("usd");
        let cny = PastedRate {
            usd_per_hour: 7.0,
            currency: Currency::Cny,
            platform: None,
            ..usd
        };
        app.host_rate_set("box", cny, HOUR).expect("cny");
        let c = app.cost_host("box", None).expect("cost");
        assert_eq!(c.currency, Currency::Cny);
        assert!((c.so_far.total_usd - 7.0).abs() < 1e-6, "{c:?}");
        assert_eq!(
            c.earlier_in_other_currencies,
            [Money::new(1.0, Currency::Usd)]
        );
        assert!(c.notes.contains(&"currency_changed".to_string()));
        let r = app.cost_report(CostOptions::default()).expect("report");
        assert_eq!(r.totals.len(), 2, "{:?}", r.totals);
        assert!((r.total_so_far_usd - 1.0).abs() < 1e-6);
    }

    /// A pasted host on AutoDL: its platform is kept with the rate (and survives a restart); its
    /// rounding was not found, so the user's rule bills and the report says so; powered off, it
    /// says when AutoDL releases it (15 days off, unverified row of data/platform-rules.csv).
    #[test]
    fn a_pasted_host_on_a_platform_carries_its_rules() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "adl");
        let rate = PastedRate {
            platform: Some(Platform::Autodl),
            ..per_second(1.98, Currency::Cny)
        };
        app.host_rate_set("adl", rate, HOUR).expect("rate");
        app.host_rate_stopped("adl").expect("stopped");
        drop(app);
        let app = app_at(tmp.path(), t0 + HOUR);
        let c = app.cost_host("adl", None).expect("cost");
        assert_eq!(c.platform, Some(Platform::Autodl));
        assert!((c.so_far.total_usd - 1.98).abs() < 1e-9, "{c:?}");
        assert!(c.notes.contains(&"platform_rounding_unknown".to_string()));
        assert_eq!(c.platform_release_at_ms, Some(t0 + 15 * 86_400_000));
        let r = app.host_rate_get("adl").expect("get").expect("rate");
        assert_eq!(r.rate.platform, Some(Platform::Autodl));
        assert_eq!(
            r.history[0].rate.and_then(|x| x.platform),
            Some(Platform::Autodl)
        );
        assert_eq!(app.platform_rules().expect("rules").len(), 5);
    }

    /// A new rate on a host the user marked stopped does not start it: the rate is recorded for
    /// the next start (compute stays off, the stop keeps its time, so the platform's "released
    /// after N days off" still counts from the real stop); starting is its own action.
    #[test]
    fn a_new_rate_on_a_stopped_host_bills_from_its_next_start() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "adl");
        let two = PastedRate {
            storage_usd_per_day: Some(0.48),
            platform: Some(Platform::Autodl),
            ..per_second(2.0, Currency::Cny)
        };
        app.host_rate_set("adl", two, 2 * HOUR).expect("rate");
        app.host_rate_stopped("adl").expect("stopped");
        drop(app);
        let app = app_at(tmp.path(), t0 + HOUR);
        let three = PastedRate {
            usd_per_hour: 3.0,
            ..two
        };
        let r = app.host_rate_set("adl", three, 0).expect("new rate");
        assert_eq!(r.stopped_ms, Some(t0), "still stopped, since the real stop");
        let compute =
            |b: &CostBreakdown| b.lines.iter().find(|l| l.meter == "compute").map(|l| l.usd);
        let c = app.cost_host("adl", None).expect("cost");
        assert_eq!(c.state, Some(InstanceState::Stopped), "{c:?}");
        assert!(
            (c.usd_per_hour_now - 0.02).abs() < 1e-9,
            "storage only: {c:?}"
        );
        assert_eq!(c.platform_release_at_ms, Some(t0 + 15 * 86_400_000));
        drop(app);
        let app = app_at(tmp.path(), t0 + 3 * HOUR);
        let c = app.cost_host("adl", None).expect("cost");
        assert!(
            (compute(&c.so_far).unwrap_or(0.0) - 4.0).abs() < 1e-9,
            "{c:?}"
        );
        // Storage: the old rate until the new one, then the new one (both 0.02/h here).
        assert!(
            (c.so_far.total_usd - (4.0 + 5.0 * 0.02)).abs() < 1e-9,
            "{c:?}"
        );
        // "I started it": compute bills from now at the new rate; once.
        let r = app.host_rate_started("adl").expect("started");
        assert_eq!(r.stopped_ms, None);
        assert!(app.host_rate_started("adl").is_ok(), "already running");
        assert!(app.host_rate_started("nope").is_err(), "no rate");
        drop(app);
        let app = app_at(tmp.path(), t0 + 4 * HOUR);
        let c = app.cost_host("adl", None).expect("cost");
        assert_eq!(c.state, Some(InstanceState::Running), "{c:?}");
        assert!(
            (compute(&c.so_far).unwrap_or(0.0) - (4.0 + 3.0)).abs() < 1e-9,
            "{c:?}"
        );
        assert!((c.per_hour_now - 3.02).abs() < 1e-9, "{c:?}");
        assert_eq!(c.platform_release_at_ms, None);
        // Stopped again, a rate back-dated to when it ran (before the stop) is a correction: it
        // replaces the stop too, so the host runs at it from then (the existing correction rule).
        app.host_rate_stopped("adl").expect("stopped");
        let r = app.host_rate_set("adl", two, HOUR / 2).expect("correction");
        assert_eq!(r.stopped_ms, None, "{r:?}");
    }

    /// Every single item's amounts are in neutral fields beside the older `usd` ones (kept, with
    /// the same numbers): a yuan rate, machine, budget, budget status, spend point, notice and
    /// balance say `per_hour`, `total`, `amount`, `spent` … with their `currency`.
    #[test]
    fn single_items_say_their_amounts_in_neutral_fields_beside_the_usd_ones() {
        use crate::second_guard::notice::{Notice, NoticeKind};
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z: the host has run since 07:00Z at ¥2.5/h and ¥0.48/day storage.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "adl");
        let yuan = PastedRate {
            storage_usd_per_day: Some(0.48),
            ..per_second(2.5, Currency::Cny)
        };
        app.host_rate_set("adl", yuan, 3 * HOUR).expect("rate");
        let close =
            |v: &serde_json::Value, want: f64| v.as_f64().is_some_and(|x| (x - want).abs() < 1e-9);
        let r = serde_json::to_value(app.host_rate_get("adl").expect("get")).expect("json");
        assert!(close(&r["rate"]["per_hour"], 2.5), "{r}");
        assert!(close(&r["rate"]["usd_per_hour"], 2.5), "kept: {r}");
        assert!(close(&r["rate"]["storage_per_day"], 0.48), "{r}");
        assert!(close(&r["history"][0]["rate"]["per_hour"], 2.5), "{r}");
        let c =
            serde_json::to_value(app.cost_host("adl", Some(HOUR)).expect("cost")).expect("json");
        assert_eq!(c["currency"], "CNY");
        assert!(close(&c["so_far"]["total"], 7.5 + 0.06), "{c}");
        assert!(close(&c["so_far"]["total_usd"], 7.5 + 0.06), "kept: {c}");
        assert!(close(&c["so_far"]["lines"][0]["amount"], 7.5), "{c}");
        assert!(close(&c["per_hour_now"], 2.52), "{c}");
        assert!(close(&c["projected"]["total"], 10.0 + 0.08), "{c}");
        let b = app
            .budget_set_in(None, Period::Day, Money::new(10.0, Currency::Cny), None)
            .expect("budget");
        let b = serde_json::to_value(b).expect("json");
        assert!(close(&b["amount"], 10.0) && close(&b["usd"], 10.0), "{b}");
        let row = serde_json::to_value(&app.budget_list().expect("list")[0]).expect("json");
        assert!(close(&row["spent"], 7.56), "{row}");
        assert!(close(&row["spent_usd"], 7.56), "kept: {row}");
        assert!(close(&row["budget"]["amount"], 10.0), "{row}");
        let v = serde_json::to_value(app.billing_view(None, false).expect("view")).expect("json");
        let cny = &v["spend"]["by_currency"][0];
        assert_eq!(cny["currency"], "CNY");
        assert!(close(&cny["points"][59]["amount"], 7.56), "{cny}");
        let mut n = Notice::new("k".into(), NoticeKind::BudgetOver);
        n.spent_usd = Some(12.0);
        n.budget_usd = Some(10.0);
        n.currency = Some(Currency::Cny);
        let n = serde_json::to_value(n).expect("json");
        assert!(
            close(&n["spent"], 12.0) && close(&n["budget_amount"], 10.0),
            "{n}"
        );
        let bal = AccountBalance {
            account: "vast".into(),
            provider: ProviderKind::Vast,
            balance_usd: Some(10.0),
            currency: Currency::Usd,
            usd_per_hour: 0.5,
            runs_out_in_h: Some(20.0),
            source: None,
            error: None,
        };
        let bal = serde_json::to_value(bal).expect("json");
        assert!(
            close(&bal["balance"], 10.0) && close(&bal["per_hour"], 0.5),
            "{bal}"
        );
    }

    /// Budgets count what was spent since the start of the UTC day / month.
    #[test]
    fn budgets_count_the_current_period() {
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z; the host has run since 07:00Z at $1/h per second: $3 today.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "box");
        let rate = per_second(1.0, Currency::Usd);
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
