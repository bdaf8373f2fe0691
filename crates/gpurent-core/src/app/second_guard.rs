//! The Billing screen's reads and the app as a second guard, on the facade.
//!
//! - [`App::billing_view`]: cost per machine and in total (so far, per hour now, by a chosen
//!   time), the budgets with where they stand, and spend over time (cumulative cost sampled over
//!   the machines' own timelines — the same cost functions, not a second model).
//! - [`App::budget_set_with`] / [`App::budget_list`]: budgets with the user's own "stop at 100 %".
//! - [`App::second_guard_tick`]: one tick of the watcher the desktop shell runs every 30 s while
//!   the app is open; the decisions are [`crate::billing::watch::decide`] (pure, time passed in),
//!   this only gathers the readings, carries out a stop the user chose in advance, and remembers
//!   what was sent (`notices_sent`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::billing::{BudgetStatus, CostOptions, CostReport};
use crate::app::login::SshEnv;
use crate::app::App;
use crate::billing::budget::Period;
use crate::billing::notices_sent;
use crate::billing::watch::{
    self, BalanceReading, BudgetReading, GuardReading, MachineReading, Notice, WatchInput,
};
use crate::billing::{cost_so_far, InstanceState, StateChange, Tariff, Traffic};
use crate::cancel::CancelToken;
use crate::error::CoreError;
use crate::guard::saved;
use crate::providers::{ledger, ProviderError};
use crate::remote::RemoteError;

/// A budget as the Billing screen lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BudgetRow {
    #[serde(flatten)]
    pub status: BudgetStatus,
    /// The user chose: stop the machine(s) at 100 % (provider machines; a pasted host has no API
    /// gpurent could stop it with).
    pub stop_at_100: bool,
}

/// Cumulative cost of every machine at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct SpendPoint {
    pub at_ms: i64,
    pub usd: f64,
}

/// Spend over time: what all machines together had cost at each moment from `from_ms` to now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SpendSeries {
    pub from_ms: i64,
    pub to_ms: i64,
    pub points: Vec<SpendPoint>,
}

/// Everything the Billing screen shows, computed at one `now`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BillingView {
    pub now_ms: i64,
    pub cost: CostReport,
    pub budgets: Vec<BudgetRow>,
    pub spend: SpendSeries,
}

/// What one tick of the second guard did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct TickReport {
    pub at_ms: i64,
    /// New notices (each sent once); the shell shows them as OS notifications.
    pub notices: Vec<Notice>,
    /// Provider machines stopped because the user chose "stop at 100 %" (confirmed by the
    /// provider's answer).
    pub stopped: Vec<String>,
    /// Guarded hosts whose guard could not be read this tick (host label, error code).
    pub unreadable: Vec<(String, String)>,
    /// Provider machines gpurent stopped or released itself because their guard's deadline
    /// passed and the guard on the machine did not act (confirmed by the provider's state read
    /// back).
    #[serde(default)]
    pub deadline_acted: Vec<String>,
}

/// How many points the spend chart gets.
const SPEND_POINTS: usize = 60;

/// Sample cumulative cost over `[from_ms, to_ms]`: at each moment, what the machines had cost
/// "so far" then (with each meter's rounding), so the curve steps where an hourly rule charges.
pub fn spend_series(
    machines: &[(Vec<StateChange>, Tariff)],
    from_ms: i64,
    to_ms: i64,
    points: usize,
) -> SpendSeries {
    let points = points.max(2);
    let span = (to_ms - from_ms).max(0);
    let pts = (0..points)
        .map(|i| {
            let at = from_ms + span * i as i64 / (points as i64 - 1);
            let usd = machines
                .iter()
                .map(|(t, tariff)| cost_so_far(t, tariff, Traffic::default(), at).total_usd)
                .sum();
            SpendPoint { at_ms: at, usd }
        })
        .collect();
    SpendSeries {
        from_ms,
        to_ms,
        points: pts,
    }
}

impl App {
    /// The timelines and tariffs of every machine that cost something: pasted hosts with a rate
    /// and every ledger machine, released ones included (what they spent is spent — the same
    /// machines the budgets count).
    fn billed_timelines(&self) -> Result<Vec<(Vec<StateChange>, Tariff)>, ProviderError> {
        let mut out: Vec<(Vec<StateChange>, Tariff)> = self
            .host_rates()?
            .iter()
            .map(|r| (r.timeline(), r.rate.tariff()))
            .collect();
        for row in self.with_db(ledger::list)? {
            let (t, tariff, _) = self.instance_timeline(&row)?;
            out.push((t, tariff));
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
            .filter_map(|(t, _)| t.first().map(|c| c.at_ms))
            .min()
            .unwrap_or(now);
        let from = first.max(now - 30 * 86_400_000).min(now);
        Ok(BillingView {
            now_ms: now,
            cost,
            budgets: self.budget_list()?,
            spend: spend_series(&timelines, from, now, SPEND_POINTS),
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
        let b = self.budget_save(host, period, usd, Some(stop_at_100))?;
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

    /// Notices sent so far, newest first.
    pub fn notices_recent(&self, limit: u32) -> Result<Vec<Notice>, CoreError> {
        self.with_store(|s| notices_sent::recent(s, limit))
    }

    /// One tick of the app as a second guard: reconcile with the providers (so a machine that a
    /// stop or release did not really stop shows as billing), re-read every guard (one short SSH
    /// connection per guarded host, with its saved key when it needs no passphrase now), re-check
    /// each deadline in this computer's clock, the budgets and the balances; send each notice
    /// once; carry out a "stop at 100 %" the user chose, confirmed by the provider's answer (not
    /// confirmed: a `still_billing` notice).
    pub fn second_guard_tick(
        &self,
        env: &SshEnv,
        cancel: &CancelToken,
    ) -> Result<TickReport, ProviderError> {
        let now = self.now_ms();
        let mut report = TickReport {
            at_ms: now,
            ..TickReport::default()
        };
        // Reconcile first (cost_all is live): never act on a stale ledger.
        let cost = self.cost_all(None)?;
        let machines: Vec<MachineReading> = cost
            .machines
            .iter()
            .map(|m| MachineReading {
                host: m.host.clone(),
                instance: m.instance.clone(),
                running: m.state == Some(InstanceState::Running),
                provider_read: m
                    .account
                    .as_ref()
                    .is_none_or(|a| !cost.failed_accounts.iter().any(|f| &f.account == a)),
            })
            .collect();
        let balances = cost
            .balances
            .iter()
            .filter_map(|b| {
                b.balance_usd.map(|bal| BalanceReading {
                    account: b.account.clone(),
                    balance_usd: bal,
                    usd_per_hour: b.usd_per_hour,
                })
            })
            .collect();
        let budgets = self
            .budget_list()?
            .into_iter()
            .map(|b| BudgetReading {
                host: b.status.budget.host.clone(),
                period: b.status.budget.period,
                period_start_ms: b.status.period_start_ms,
                usd: b.status.budget.usd,
                spent_usd: b.status.spent_usd,
                level: b.status.level,
                stop_at_100: b.stop_at_100,
            })
            .collect();
        let mut guards = Vec::new();
        for (label, spec, installed_ms) in self.with_store(saved::active)? {
            let status = match self.host_key_for(&label, None) {
                // A released machine took its guard with it: nothing to read, nothing to act on.
                Err(crate::remote::RemoteError::HostReleased { .. }) => continue,
                key => key
                    .map_err(|e| crate::error::Coded::code(&e).to_string())
                    .and_then(|key| {
                        self.guard_status(&label, env, &key, cancel)
                            .map_err(|e| crate::error::Coded::code(&e).to_string())
                    }),
            };
            let (idle_for_s, idle_since_s) = match status {
                Ok(st) => {
                    let idle = st.idle_since.zip(st.host_now_s).map(|(s, n)| n - s);
                    (idle, st.idle_since)
                }
                Err(code) => {
                    report.unreadable.push((label.clone(), code));
                    (None, None)
                }
            };
            guards.push(GuardReading {
                host: label,
                idle_s: spec.idle_s,
                idle_for_s,
                idle_since_s,
                // Re-checked in this computer's clock: installed + "this long from then".
                deadline_ms: spec.deadline_in_s.map(|d| installed_ms + d as i64 * 1000),
                action: spec.action,
            });
        }
        let input = WatchInput {
            budgets,
            guards,
            machines,
            balances,
        };
        let sent = self.with_store(notices_sent::keys)?;
        let decision = watch::decide(now, &input, &sent);
        let mut notices = decision.notices;
        for stop in &decision.stops {
            match self.instance_action(&stop.instance, "stop", true) {
                Ok(_) => report.stopped.push(stop.instance.clone()),
                Err(e) => {
                    tracing::warn!(instance = %stop.instance, "stop at 100 %: {e}");
                    let n = watch::still_billing(stop);
                    if !sent.contains(&n.key) {
                        notices.push(n);
                    }
                }
            }
        }
        for act in &decision.acts {
            if report.stopped.contains(&act.instance) {
                // Already stopped this tick (stop at 100 %): the next tick sees it stopped.
                continue;
            }
            let n = self.act_at_deadline(act);
            if n.kind == watch::NoticeKind::DeadlineActed {
                report.deadline_acted.push(act.instance.clone());
            }
            // Remembered at once (the notice's key names the deadline): acted on once, even if
            // a later step of this tick fails.
            self.with_store(|s| notices_sent::remember(s, &n, now))?;
            notices.push(n);
        }
        for n in &notices {
            self.with_store(|s| notices_sent::remember(s, n, now))?;
        }
        report.notices = notices;
        Ok(report)
    }
}

impl App {
    /// Perform the guard's own action on a machine whose deadline it missed, through the provider
    /// with the account key gpurent holds (`instance_action(.., yes)`: the call, then a re-read of
    /// the instance whose state goes into the ledger as a provider event, and anything but the
    /// state the action leads to is an error). The outcome is the notice.
    fn act_at_deadline(&self, act: &watch::DeadlineAct) -> Notice {
        tracing::info!(
            instance = %act.instance,
            action = act.action,
            "second guard: deadline missed by the guard on the machine; acting"
        );
        match self.instance_action(&act.instance, act.action, true) {
            Ok(view) => {
                let state = view.remote.as_ref().map(|r| r.raw_status.clone());
                watch::deadline_acted(act, true, state, None)
            }
            Err(e) => {
                tracing::warn!(instance = %act.instance, "second guard: {} not confirmed: {e}", act.action);
                let state = match &e {
                    ProviderError::NotConfirmed { state, .. } => Some(state.clone()),
                    _ => None,
                };
                let code = crate::error::Coded::code(&e).to_string();
                watch::deadline_acted(act, false, state, Some(code))
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::billing::{Increment, PastedRate};

    const HOUR: i64 = 3_600_000;
    /// 2026-12-01T12:00Z.
    const NOW: i64 = 1_796_126_400_000;

    use crate::app::test_support::{app_at, save_host};

    /// The chart is cumulative cost over the machines' own timelines: per started hour it steps.
    #[test]
    fn spend_series_steps_with_the_rule() {
        let t = vec![StateChange {
            at_ms: 0,
            state: InstanceState::Running,
        }];
        let hourly = PastedRate {
            usd_per_hour: 2.0,
            rule: Increment::Hour,
            storage_usd_per_day: None,
        };
        let s = spend_series(&[(t.clone(), hourly.tariff())], 0, 2 * HOUR, 5);
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        // At 0 nothing has run; 30 min in, the first hour is owed; 1 h 30 min in, two.
        assert_eq!(usd, [0.0, 2.0, 2.0, 4.0, 4.0]);
        assert_eq!(s.points[4].at_ms, 2 * HOUR);
        let per_second = PastedRate {
            rule: Increment::Second,
            ..hourly
        };
        let s = spend_series(&[(t, per_second.tariff())], 0, 2 * HOUR, 3);
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        assert_eq!(usd, [0.0, 2.0, 4.0]);
    }

    /// A budget set low goes over; the tick says so once (also after a restart), and the
    /// screen's view carries cost, budgets and the chart at one `now`.
    #[test]
    fn tick_does_not_read_the_guard_of_a_released_machine() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = app_at(tmp.path(), NOW);
        for label in ["live", "gone"] {
            save_host(&app, label);
            let spec = serde_json::to_string(&crate::guard::GuardSpec::new(
                1800,
                crate::guard::ActionKind::Poweroff,
            ))
            .expect("spec");
            app.with_store(|s| {
                s.conn().execute(
                    "INSERT INTO guards(host_label, spec_json, action_command, boot, installed_ms)
                     VALUES (?1, ?2, 'poweroff', 'none', ?3)",
                    rusqlite::params![label, spec, NOW - HOUR],
                )?;
                Ok(())
            })
            .expect("guard row");
        }
        crate::app::test_support::released_rental(&app, "gone", NOW - 60_000);
        let env = SshEnv::under_home(tmp.path(), None);
        let t = app
            .second_guard_tick(&env, &CancelToken::new())
            .expect("tick");
        // The live host is tried (it has no key here, so it is unreadable); the released one is
        // not tried at all.
        let tried: Vec<&str> = t.unreadable.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(tried, ["live"], "{t:?}");
    }

    #[test]
    fn tick_notifies_a_budget_once_across_restarts() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = app_at(tmp.path(), NOW);
        save_host(&app, "box");
        let rate = PastedRate {
            usd_per_hour: 1.0,
            rule: Increment::Second,
            storage_usd_per_day: None,
        };
        app.host_rate_set("box", rate, 2 * HOUR).expect("rate");
        let row = app
            .budget_set_with(None, Period::Day, 2.4, true)
            .expect("budget");
        assert!(row.stop_at_100);
        assert_eq!(row.status.level, crate::billing::budget::Level::Warn);
        let env = SshEnv::under_home(tmp.path(), None);
        let t = app
            .second_guard_tick(&env, &CancelToken::new())
            .expect("tick");
        assert_eq!(t.notices.len(), 1, "{t:?}");
        assert_eq!(t.notices[0].kind, watch::NoticeKind::BudgetWarn);
        assert!(t.stopped.is_empty(), "a pasted host is never stopped");
        assert!(app
            .second_guard_tick(&env, &CancelToken::new())
            .expect("tick")
            .notices
            .is_empty());
        drop(app);
        // Half an hour later, after a restart: 2.5 h spent of 2.4 — over, once.
        let app = app_at(tmp.path(), NOW + HOUR / 2);
        let t = app
            .second_guard_tick(&env, &CancelToken::new())
            .expect("tick");
        let kinds: Vec<_> = t.notices.iter().map(|n| n.kind).collect();
        assert_eq!(kinds, [watch::NoticeKind::BudgetOver]);
        assert_eq!(app.notices_recent(10).expect("recent").len(), 2);
        let v = app.billing_view(Some(HOUR), false).expect("view");
        assert_eq!(v.now_ms, NOW + HOUR / 2);
        assert_eq!(v.budgets.len(), 1);
        assert!(v.budgets[0].stop_at_100);
        assert_eq!(v.spend.from_ms, NOW - 2 * HOUR);
        let last = v.spend.points.last().expect("points");
        assert!((last.usd - 2.5).abs() < 1e-6, "{last:?}");
        assert!((v.cost.total_projected_usd.unwrap_or(0.0) - 3.5).abs() < 1e-6);
        let by = app.billing_view_by(Some("1h"), false).expect("by");
        assert_eq!(by.cost.total_projected_usd, v.cost.total_projected_usd);
        assert!(app.billing_view_by(Some("soon"), false).is_err());
        assert!(app
            .billing_view_by(Some(" "), false)
            .expect("empty")
            .cost
            .total_projected_usd
            .is_none());
        // Set again without the choice: it is cleared.
        app.budget_set_with(None, Period::Day, 5.0, false)
            .expect("again");
        assert!(!app.budget_list().expect("list")[0].stop_at_100);
    }
}
