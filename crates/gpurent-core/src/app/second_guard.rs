//! The app as a second guard, on the facade: [`App::second_guard_tick`] is one tick of the
//! watcher the desktop shell runs every 30 s while the app is open. The decisions are
//! [`crate::second_guard::decide`] (pure, time passed in); this gathers the readings, carries out
//! a stop the user chose in advance or a deadline action a guard missed, and remembers what was
//! sent ([`crate::second_guard::sent`]).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::login::SshEnv;
use crate::app::App;
use crate::billing::InstanceState;
use crate::guard::saved;
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::providers::ProviderError;
use crate::second_guard::{
    self as rules, sent, BalanceReading, BudgetReading, GuardReading, MachineReading, Notice,
    TickInput,
};

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
    /// Machines gpurent stopped or released this tick whose guard held the account's full API
    /// key and could not be reached to take it off first: it may remain on their disk (each
    /// also has a `key_left` notice).
    #[serde(default)]
    pub key_left: Vec<String>,
}

impl App {
    /// Notices sent so far, newest first.
    pub fn notices_recent(&self, limit: u32) -> Result<Vec<Notice>, CoreError> {
        self.with_store(|s| sent::recent(s, limit))
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
        let mut machines: Vec<MachineReading> = cost
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
                can_stop: m.instance.is_some() && m.provider.is_some_and(|p| p.terms().can_stop),
                currency: m.currency,
                platform: m.platform,
                release_at_ms: m.platform_release_at_ms,
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
            .map(|b| BudgetReading::new(&b.status, b.stop_at_100))
            .collect();
        let mut guards = Vec::new();
        for (label, spec, installed_ms) in self.with_store(saved::active)? {
            let mut g = GuardReading::new(label.clone(), &spec, installed_ms, None, None);
            let done_key = g.deadline_ms.map(|d| rules::deadline_act_key(&label, d));
            // The app's own record: the deadline's action was done (acted, or seen stopped).
            if let Some(k) = &done_key {
                g.deadline_done = self.with_store(|s| s.meta_get(&done_meta(k)))?.is_some();
            }
            // A snooze set from the app holds even when the machine cannot be read.
            g.snooze_until_ms = self
                .with_store(|s| s.meta_get(&snooze_meta(&label)))?
                .and_then(|v| v.parse::<i64>().ok());
            // A provider machine the ledger shows stopped: nothing runs there to read (no SSH
            // every 30 s to a machine that is off).
            let stopped = machines
                .iter()
                .any(|m| m.host == label && m.instance.is_some())
                && !machines.iter().any(|m| m.host == label && m.running);
            if stopped {
                guards.push(g);
                continue;
            }
            let status = match self.host_key_for(&label, None) {
                // A released machine took its guard with it: nothing to read, nothing to act on.
                Err(crate::remote::RemoteError::HostReleased { .. }) => continue,
                key => key
                    .map_err(|e| crate::infra::ipc::Coded::code(&e).to_string())
                    .and_then(|key| {
                        self.guard_status_with_key(&label, env, &key, cancel)
                            .map_err(|e| crate::infra::ipc::Coded::code(&e).to_string())
                    }),
            };
            match status {
                Ok(st) => {
                    // A pasted host without a rate has no cost row: its guard answered, so the
                    // machine is on (its idle and deadline notices need to know that).
                    if !machines.iter().any(|m| m.host == label) {
                        machines.push(MachineReading {
                            host: label.clone(),
                            instance: None,
                            running: true,
                            provider_read: true,
                            can_stop: false,
                            // No rate, so no cost in any currency: the user's currency is as
                            // good as any (budgets count nothing for it).
                            currency: self.default_currency(),
                            platform: None,
                            release_at_ms: None,
                        });
                    }
                    let read = GuardReading::new(
                        label.clone(),
                        &spec,
                        installed_ms,
                        st.idle_since,
                        st.host_now_s,
                    );
                    g.idle_for_s = read.idle_for_s;
                    g.stale_since_s = st.stale.then(|| st.last_sample_s.unwrap_or(0));
                    g.idle_since_s = read.idle_since_s;
                    let on_machine = rules::snooze_in_local_ms(now, st.snooze_until, st.host_now_s);
                    g.snooze_until_ms = g.snooze_until_ms.max(on_machine);
                    // The guard on the machine fired this deadline (its marker survives a
                    // restart): recorded here too, never acted on again.
                    let fired = st.last.as_ref().and_then(|d| d.deadline_fired) == Some(true);
                    if let (true, Some(k)) = (fired && spec.deadline_in_s.is_some(), &done_key) {
                        self.with_store(|s| s.meta_set(&done_meta(k), &now.to_string()))?;
                        g.deadline_done = true;
                    }
                }
                Err(code) => {
                    // A pasted host whose guard was powering it off: billing stops then.
                    self.guard_poweroff_no_answer(&label)?;
                    report.unreadable.push((label.clone(), code))
                }
            }
            guards.push(g);
        }
        let input = TickInput {
            budgets,
            guards,
            machines,
            balances,
        };
        let sent = self.with_store(sent::keys)?;
        let decision = rules::decide(now, &input, &sent);
        let mut notices = decision.notices;
        for k in &decision.deadlines_done {
            self.with_store(|s| s.meta_set(&done_meta(k), &now.to_string()))?;
        }
        for stop in &decision.stops {
            match self.instance_action_with(&stop.instance, "stop", true, Some(env), cancel) {
                Ok(view) => {
                    report.stopped.push(stop.instance.clone());
                    if view.key_left {
                        report.key_left.push(stop.instance.clone());
                        notices.push(rules::key_left(
                            &stop.host,
                            &view.ledger.id,
                            "stop",
                            view.key_left_why,
                            now,
                        ));
                    }
                }
                Err(e) => {
                    tracing::warn!(instance = %stop.instance, "stop at 100 %: {e}");
                    let n = rules::still_billing(stop);
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
            let (n, key_left) = self.act_at_deadline(act, env, cancel);
            if let Some(k) = key_left {
                report.key_left.push(act.instance.clone());
                notices.push(k);
            }
            if n.kind == rules::NoticeKind::DeadlineActed {
                report.deadline_acted.push(act.instance.clone());
                // Recorded at once: acted on once, even if a later step of this tick fails.
                self.with_store(|s| s.meta_set(&done_meta(&act.key), &now.to_string()))?;
            } else if sent.contains(&n.key) {
                // Not confirmed again: said once already; tried again next tick.
                continue;
            }
            self.with_store(|s| sent::remember(s, &n, now))?;
            notices.push(n);
        }
        for n in &notices {
            self.with_store(|s| sent::remember(s, n, now))?;
        }
        report.notices = notices;
        Ok(report)
    }
}

/// The `meta` key recording that a deadline's action was done (by [`rules::deadline_act_key`]).
pub(crate) fn done_meta(act_key: &str) -> String {
    format!("second_guard.done:{act_key}")
}

/// The `meta` key holding a snooze set from the app (this computer's clock, unix ms).
pub(crate) fn snooze_meta(label: &str) -> String {
    format!("second_guard.snooze:{label}")
}

impl App {
    /// Perform the guard's own action on a machine whose deadline it missed, through the provider
    /// with the account key gpurent holds (`instance_action(.., yes)`: the call, then a re-read of
    /// the instance whose state goes into the ledger as a provider event, and anything but the
    /// state the action leads to is an error). The outcome is the notice, and a `key_left`
    /// notice when the guard's full key could not be taken off the machine first.
    fn act_at_deadline(
        &self,
        act: &rules::DeadlineAct,
        env: &SshEnv,
        cancel: &CancelToken,
    ) -> (Notice, Option<Notice>) {
        tracing::info!(
            instance = %act.instance,
            action = act.action,
            "second guard: deadline missed by the guard on the machine; acting"
        );
        match self.instance_action_with(&act.instance, act.action, true, Some(env), cancel) {
            Ok(view) => {
                let state = view.remote.as_ref().map(|r| r.raw_status.clone());
                let left = view.key_left.then(|| {
                    rules::key_left(
                        &act.host,
                        &view.ledger.id,
                        act.action,
                        view.key_left_why.clone(),
                        self.now_ms(),
                    )
                });
                (rules::deadline_acted(act, true, state, None), left)
            }
            Err(e) => {
                tracing::warn!(instance = %act.instance, "second guard: {} not confirmed: {e}", act.action);
                let state = match &e {
                    ProviderError::NotConfirmed { state, .. } => Some(state.clone()),
                    _ => None,
                };
                let code = crate::infra::ipc::Coded::code(&e).to_string();
                (rules::deadline_acted(act, false, state, Some(code)), None)
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::billing::budget::Period;
    use crate::billing::{Increment, PastedRate};

    const HOUR: i64 = 3_600_000;
    /// 2026-12-01T12:00Z.
    const NOW: i64 = 1_796_126_400_000;

    use crate::app::test_support::{app_at, save_host};

    /// A budget set low goes over; the tick says so once (also after a restart), and the
    /// screen's view carries cost, budgets and the chart at one `now`.
    #[test]
    fn tick_does_not_read_the_guard_of_a_released_machine() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = app_at(tmp.path(), NOW);
        for label in ["live", "gone"] {
            save_host(&app, label);
            crate::app::test_support::guard_row(&app, label, NOW - HOUR);
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

    /// The tick does not connect to a machine the ledger shows stopped (it is off: nothing to
    /// read), but keeps reading a running one.
    #[test]
    fn tick_does_not_connect_to_a_stopped_machine() {
        use crate::providers::ledger::LedgerState;
        use crate::providers::ProviderKind;
        let tmp = tempfile::tempdir().expect("tmp");
        let app = app_at(tmp.path(), NOW);
        for (label, state) in [("on", LedgerState::Running), ("off", LedgerState::Stopped)] {
            save_host(&app, label);
            crate::app::test_support::guard_row(&app, label, NOW - HOUR);
            crate::app::test_support::rental(&app, label, ProviderKind::Runpod, state, NOW - HOUR);
        }
        let env = SshEnv::under_home(tmp.path(), None);
        let t = app
            .second_guard_tick(&env, &CancelToken::new())
            .expect("tick");
        let tried: Vec<&str> = t.unreadable.iter().map(|(h, _)| h.as_str()).collect();
        assert_eq!(tried, ["on"], "{t:?}");
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
            currency: crate::billing::Currency::Usd,
            platform: None,
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
        assert_eq!(t.notices[0].kind, rules::NoticeKind::BudgetWarn);
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
        assert_eq!(kinds, [rules::NoticeKind::BudgetOver]);
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
