//! The second guard's rules: what to tell the user (and, where they chose it, what to stop or
//! act on) on one tick, decided from plain readings with the time passed in. No I/O: the facade
//! (`App::second_guard_tick`, `app/second_guard.rs`) gathers the readings and carries out what
//! is decided.

use std::collections::HashSet;

use crate::billing::budget::{scope_of, BudgetStatus, Level, Period};
use crate::billing::platforms::Platform;
use crate::billing::Currency;
use crate::guard::{ActionKind, GuardSpec};
use crate::second_guard::notice::{NoActReason, Notice, NoticeKind};

/// Warn this long before a guard's deadline.
pub const DEADLINE_SOON_MS: i64 = 10 * 60_000;
/// A deadline counts as missed once the machine still bills this long after it (the guard on
/// the host samples every 30 s and may warn first).
pub const DEADLINE_GRACE_MS: i64 = 3 * 60_000;
/// "Runs out in about N h": notify below these many hours of balance left (once per UTC day each).
pub const BALANCE_LOW_HOURS: [f64; 2] = [24.0, 3.0];
/// A machine powered off on a platform that releases (and wipes) machines left off N days
/// (AutoDL: 15): warn when its release is this many hours away (once each, for one stop).
pub const RELEASE_SOON_HOURS: [f64; 2] = [72.0, 24.0];

/// One budget and where its current period stands.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetReading {
    /// `None`: the total.
    pub host: Option<String>,
    pub period: Period,
    pub period_start_ms: i64,
    /// The limit and what was spent, in `currency`.
    pub usd: f64,
    pub spent_usd: f64,
    pub currency: Currency,
    pub level: Level,
    pub stop_at_100: bool,
}

impl BudgetReading {
    /// A budget's standing and the user's choice to stop at 100 %.
    pub fn new(status: &BudgetStatus, stop_at_100: bool) -> BudgetReading {
        BudgetReading {
            host: status.budget.host.clone(),
            period: status.budget.period,
            period_start_ms: status.period_start_ms,
            usd: status.budget.usd,
            spent_usd: status.spent_usd,
            currency: status.budget.currency,
            level: status.level,
            stop_at_100,
        }
    }
}

/// A guarded machine as the app last knew it.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardReading {
    pub host: String,
    /// The guard's idle time (seconds) before it acts.
    pub idle_s: u64,
    /// How long the host has been idle by the guard's last fetched sample (seconds); `None` when
    /// busy or unknown.
    pub idle_for_s: Option<i64>,
    /// When the idle spell began (host clock, unix s), names the spell for de-duplication.
    pub idle_since_s: Option<i64>,
    /// The absolute deadline in this computer's clock.
    pub deadline_ms: Option<i64>,
    /// The guard's own action: at a missed deadline the app performs it itself where it is a
    /// provider action (stop, release) on a rented machine.
    pub action: ActionKind,
    /// A snooze holds until then (this computer's clock): the later of the one the guard on the
    /// machine reports and the one set from the app. While it holds the app neither acts nor
    /// says the deadline was missed; after it, the grace counts from its end.
    pub snooze_until_ms: Option<i64>,
    /// This deadline's action was done: the guard on the machine reports it fired, or the app
    /// recorded it (it acted, or saw the machine stopped after the deadline). It is never acted
    /// on again, also when the user starts the machine afterwards; a new `guard set` is a new
    /// deadline.
    pub deadline_done: bool,
    /// The guard runs but is stuck (its status says `stale`): the host time of its last sample,
    /// which names the stuck spell. Neither idle nor its deadline can fire on the machine.
    pub stale_since_s: Option<i64>,
}

impl GuardReading {
    /// A guard as set (`spec`, installed at `installed_ms` in this computer's clock) with its
    /// last fetched idle state (`idle_since_s` and the host's clock then, unix s; `None` when
    /// busy or unread). The deadline is re-checked in this computer's clock: installed + "this
    /// long from then".
    pub fn new(
        host: String,
        spec: &GuardSpec,
        installed_ms: i64,
        idle_since_s: Option<i64>,
        host_now_s: Option<i64>,
    ) -> GuardReading {
        GuardReading {
            host,
            idle_s: spec.idle_s,
            idle_for_s: idle_since_s.zip(host_now_s).map(|(s, n)| n - s),
            idle_since_s,
            deadline_ms: spec.deadline_in_s.map(|d| installed_ms + d as i64 * 1000),
            action: spec.action,
            snooze_until_ms: None,
            deadline_done: false,
            stale_since_s: None,
        }
    }
}

/// A snooze the guard reports in the host's clock (`snooze_until_s`, with the host's clock
/// `host_now_s` read at the same time) in this computer's clock (`now_ms`).
pub fn snooze_in_local_ms(
    now_ms: i64,
    snooze_until_s: Option<i64>,
    host_now_s: Option<i64>,
) -> Option<i64> {
    let (until, host_now) = snooze_until_s.zip(host_now_s)?;
    Some(now_ms + (until - host_now).saturating_mul(1000))
}

/// A machine that may bill.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineReading {
    pub host: String,
    /// The ledger key when it is a provider machine gpurent can stop.
    pub instance: Option<String>,
    /// Running (compute bills).
    pub running: bool,
    /// The provider answered this tick's reconcile for this machine's account (so `running` is
    /// the provider's word, not a stale ledger). Pasted hosts: `true` (nothing to ask).
    pub provider_read: bool,
    /// Its provider can stop it (Lambda: only release). Pasted hosts: `false`.
    pub can_stop: bool,
    /// What it bills in: a budget acts only on the machines billed in its currency.
    pub currency: Currency,
    /// The platform it is rented on, where known (an AutoDL ledger machine, a pasted host the
    /// user said is on one).
    pub platform: Option<Platform>,
    /// When that platform will release it and wipe its data if it stays powered off (its
    /// `release_after_days_off` counted from the stop in force); `None`: running, or no such rule.
    pub release_at_ms: Option<i64>,
}

/// A provider account's balance and what it burns now.
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceReading {
    pub account: String,
    pub balance_usd: f64,
    pub usd_per_hour: f64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickInput {
    pub budgets: Vec<BudgetReading>,
    pub guards: Vec<GuardReading>,
    pub machines: Vec<MachineReading>,
    pub balances: Vec<BalanceReading>,
}

/// A stop the user chose in advance ("stop at 100 %").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopOrder {
    pub instance: String,
    pub host: String,
    /// The key of the budget notice behind it.
    pub because: String,
}

/// The guard's own action, performed by the app because the deadline passed by
/// [`DEADLINE_GRACE_MS`] and the provider still reports the machine running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadlineAct {
    /// Names this deadline: remembered (as the notice's key) so it is acted on once.
    pub key: String,
    pub instance: String,
    pub host: String,
    /// `stop` or `release` (what `App::instance_action` takes).
    pub action: &'static str,
    pub deadline_ms: i64,
    /// Minutes past the deadline.
    pub minutes: i64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickDecision {
    pub notices: Vec<Notice>,
    pub stops: Vec<StopOrder>,
    /// Deadlines the guard on the machine missed, acted on by the app (until the provider
    /// confirms; then never again).
    pub acts: Vec<DeadlineAct>,
    /// Deadlines whose action is seen done this tick (the machine is stopped or gone after its
    /// deadline), by [`deadline_act_key`]: the app records them and never acts on them again.
    pub deadlines_done: Vec<String>,
}

/// The key that names one guard deadline's action by the app (and its outcome notice).
pub fn deadline_act_key(host: &str, deadline_ms: i64) -> String {
    format!("deadline_act:{host}:{deadline_ms}")
}

/// The UTC day number of `ms` (for "once a day" keys).
fn day(ms: i64) -> i64 {
    ms.div_euclid(86_400_000)
}

/// Decide one tick. `sent` holds the keys already sent; nothing in it is returned again.
pub fn decide(now_ms: i64, input: &TickInput, sent: &HashSet<String>) -> TickDecision {
    let mut out = TickDecision::default();
    let push = |out: &mut TickDecision, n: Notice| {
        if !sent.contains(&n.key) && !out.notices.iter().any(|m| m.key == n.key) {
            out.notices.push(n);
            true
        } else {
            false
        }
    };
    let running = |host: &str| input.machines.iter().any(|m| m.host == host && m.running);

    for g in &input.guards {
        // A stuck guard acts on nothing: said once per stuck spell (named by its last sample).
        if let (Some(since), true) = (g.stale_since_s, running(&g.host)) {
            let mut n = Notice::new(
                format!("guard_stale:{}:{since}", g.host),
                NoticeKind::GuardStale,
            );
            n.host = Some(g.host.clone());
            push(&mut out, n);
        }
        if let Some(idle) = g.idle_for_s {
            // Half the guard's idle time (at least a minute) in: the user can still step in.
            let half = (g.idle_s as i64 / 2).max(60);
            if idle >= half && running(&g.host) {
                // One notice per idle spell: the spell is named by when it started.
                let since = g.idle_since_s.unwrap_or(now_ms / 1000 - idle);
                let mut n =
                    Notice::new(format!("idle:{}:{}", g.host, since / 60), NoticeKind::Idle);
                n.host = Some(g.host.clone());
                n.minutes = Some(idle / 60);
                n.limit_minutes = Some(g.idle_s as i64 / 60);
                push(&mut out, n);
            }
        }
        if let Some(d) = g.deadline_ms {
            if g.deadline_done {
                // Fired once (by the guard or by the app): never again for this deadline.
                continue;
            }
            let left = d - now_ms;
            let snooze = g.snooze_until_ms.filter(|s| *s > now_ms);
            if left <= 0 {
                // Past the deadline and the machine stopped (the provider's word): the action
                // was done — recorded, so starting the machine again is the user's choice.
                let stopped = input
                    .machines
                    .iter()
                    .filter(|m| m.host == g.host)
                    .any(|m| !m.running && m.provider_read && m.instance.is_some());
                if stopped && !input.machines.iter().any(|m| m.host == g.host && m.running) {
                    out.deadlines_done.push(deadline_act_key(&g.host, d));
                    continue;
                }
            }
            // A snooze holds the deadline back; the grace counts from whichever ends later.
            let due = g.snooze_until_ms.map_or(d, |s| s.max(d));
            if snooze.is_some() && left <= 0 {
                continue;
            }
            if left > 0 && left <= DEADLINE_SOON_MS && snooze.is_none_or(|s| s < d) {
                let mut n = Notice::new(
                    format!("deadline_soon:{}:{d}", g.host),
                    NoticeKind::DeadlineSoon,
                );
                n.host = Some(g.host.clone());
                n.minutes = Some((left + 59_999) / 60_000);
                push(&mut out, n);
            } else if left <= 0 && due - now_ms <= -DEADLINE_GRACE_MS {
                // Only the deadline — never the idle signal — makes the app act itself (idle is
                // the on-machine guard's call: the app cannot read the signals as well).
                let Some(m) = input
                    .machines
                    .iter()
                    .find(|m| m.host == g.host && m.running)
                else {
                    continue;
                };
                let act = match g.action {
                    ActionKind::Stop => Some("stop"),
                    ActionKind::Release => Some("release"),
                    ActionKind::Poweroff | ActionKind::Command => None,
                };
                let minutes = -left / 60_000;
                let no_act = match (&m.instance, m.provider_read, act) {
                    (Some(instance), true, Some(action)) => {
                        let key = deadline_act_key(&g.host, d);
                        // Not yet confirmed (a failed act is tried again every tick).
                        if !sent.contains(&key) && !out.acts.iter().any(|a| a.key == key) {
                            out.acts.push(DeadlineAct {
                                key,
                                instance: instance.clone(),
                                host: g.host.clone(),
                                action,
                                deadline_ms: d,
                                minutes,
                            });
                        }
                        continue;
                    }
                    (None, _, _) => NoActReason::PastedHost,
                    (Some(_), false, _) => NoActReason::ProviderUnreadable,
                    (Some(_), true, None) => NoActReason::ActionOnMachine,
                };
                let mut n = Notice::new(
                    format!("deadline_missed:{}:{d}", g.host),
                    NoticeKind::DeadlineMissed,
                );
                n.host = Some(g.host.clone());
                n.minutes = Some(minutes);
                n.no_act = Some(no_act);
                push(&mut out, n);
            }
        }
    }

    for b in &input.budgets {
        let (kind, pct) = match b.level {
            Level::Ok => continue,
            Level::Warn => (NoticeKind::BudgetWarn, 80),
            Level::Over => (NoticeKind::BudgetOver, 100),
        };
        // The amount is in the key: a budget raised (or lowered) is a new 80 % and 100 %. So is
        // its currency (USD keys are written as before currencies existed).
        let key = format!(
            "budget:{}:{}:{}:{pct}:{:.2}{}",
            scope_of(b.host.as_deref()),
            b.period.name(),
            b.period_start_ms,
            b.usd,
            match b.currency {
                Currency::Usd => String::new(),
                c => format!(":{}", c.code()),
            }
        );
        let mut n = Notice::new(key.clone(), kind);
        n.host = b.host.clone();
        n.period = Some(b.period);
        n.spent_usd = Some(b.spent_usd);
        n.budget_usd = Some(b.usd);
        n.currency = Some(b.currency);
        push(&mut out, n);
        // Every tick while it is over (not only when the notice is new): a machine started again
        // over budget is stopped again — what the user chose.
        if kind == NoticeKind::BudgetOver && b.stop_at_100 {
            for m in &input.machines {
                let in_scope =
                    b.host.as_deref().is_none_or(|h| h == m.host) && m.currency == b.currency;
                if let (true, true, Some(i)) = (in_scope, m.running, &m.instance) {
                    if !m.can_stop {
                        // Nothing is sent: say so (once per machine and budget notice).
                        let mut n = Notice::new(
                            format!("budget_cannot_stop:{i}:{key}"),
                            NoticeKind::BudgetCannotStop,
                        );
                        n.host = Some(m.host.clone());
                        n.period = Some(b.period);
                        n.spent_usd = Some(b.spent_usd);
                        n.budget_usd = Some(b.usd);
                        n.currency = Some(b.currency);
                        push(&mut out, n);
                    } else if !out.stops.iter().any(|s| &s.instance == i) {
                        out.stops.push(StopOrder {
                            instance: i.clone(),
                            host: m.host.clone(),
                            because: key.clone(),
                        });
                    }
                }
            }
        }
    }

    // A platform that releases machines left powered off N days (AutoDL: 15) wipes their data:
    // warn before (once per threshold and stop; a later stop has another release date).
    for m in input.machines.iter().filter(|m| !m.running) {
        let Some(at) = m.release_at_ms else {
            continue;
        };
        let hours = (at - now_ms).max(0) as f64 / 3_600_000.0;
        if let Some(th) = RELEASE_SOON_HOURS
            .iter()
            .copied()
            .filter(|th| hours < *th)
            .reduce(f64::min)
        {
            let mut n = Notice::new(
                format!("release_soon:{}:{at}:{th}", m.host),
                NoticeKind::ReleaseSoon,
            );
            n.host = Some(m.host.clone());
            n.platform = m.platform;
            n.hours = Some(hours);
            push(&mut out, n);
        }
    }

    for a in &input.balances {
        if a.usd_per_hour <= 0.0 {
            continue;
        }
        let hours = a.balance_usd.max(0.0) / a.usd_per_hour;
        // The lowest threshold crossed speaks (3 h left says more than 24 h left).
        if let Some(th) = BALANCE_LOW_HOURS
            .iter()
            .copied()
            .filter(|th| hours < *th)
            .reduce(f64::min)
        {
            let mut n = Notice::new(
                format!("balance:{}:{th}:{}", a.account, day(now_ms)),
                NoticeKind::BalanceLow,
            );
            n.account = Some(a.account.clone());
            n.hours = Some(hours);
            push(&mut out, n);
        }
    }
    out
}

/// The notice for a stop the provider did not confirm (once per instance and budget period;
/// the stop itself is tried again on the next tick).
pub fn still_billing(stop: &StopOrder) -> Notice {
    let (host, instance) = (&stop.host, &stop.instance);
    let mut n = Notice::new(
        format!("still_billing:{instance}:{}", stop.because),
        NoticeKind::StillBilling,
    );
    n.host = Some(host.to_string());
    n
}

/// The notice for a stop or release gpurent did itself (`action`) on `host` (ledger `instance`)
/// whose guard held the account's full API key, which could not be taken off the machine first
/// (`why`: the error code): it may remain on the machine's disk.
pub fn key_left(
    host: &str,
    instance: &str,
    action: &str,
    why: Option<String>,
    now_ms: i64,
) -> Notice {
    let mut n = Notice::new(format!("key_left:{instance}:{now_ms}"), NoticeKind::KeyLeft);
    n.host = Some(host.to_string());
    n.action = Some(action.to_string());
    n.error = why;
    n
}

/// The notice for a deadline the app acted on: `confirmed` when the provider's state read back
/// shows the action took (`state`: the provider's own status text); otherwise `error` says why.
/// A confirmed act carries the act's key (remembered: never again); a failed one its own key
/// (said once, the act is tried again on the next tick until the provider confirms).
pub fn deadline_acted(
    act: &DeadlineAct,
    confirmed: bool,
    state: Option<String>,
    error: Option<String>,
) -> Notice {
    let kind = if confirmed {
        NoticeKind::DeadlineActed
    } else {
        NoticeKind::DeadlineActFailed
    };
    let key = if confirmed {
        act.key.clone()
    } else {
        format!("deadline_act_failed:{}:{}", act.host, act.deadline_ms)
    };
    let mut n = Notice::new(key, kind);
    n.host = Some(act.host.clone());
    n.minutes = Some(act.minutes);
    n.action = Some(act.action.to_string());
    n.state = state;
    n.error = error;
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::second_guard::notice::*;

    /// 2026-12-01T12:00Z.
    const NOW: i64 = 1_796_126_400_000;
    const MIN: i64 = 60_000;

    fn machine(host: &str, instance: Option<&str>, running: bool) -> MachineReading {
        MachineReading {
            host: host.into(),
            instance: instance.map(String::from),
            running,
            provider_read: true,
            can_stop: instance.is_some(),
            currency: Currency::Usd,
            platform: None,
            release_at_ms: None,
        }
    }

    fn guard(host: &str, idle_for_s: Option<i64>, deadline_ms: Option<i64>) -> GuardReading {
        GuardReading {
            host: host.into(),
            idle_s: 30 * 60,
            idle_for_s,
            idle_since_s: idle_for_s.map(|i| NOW / 1000 - i),
            deadline_ms,
            action: ActionKind::Poweroff,
            snooze_until_ms: None,
            deadline_done: false,
            stale_since_s: None,
        }
    }

    fn budget(host: Option<&str>, usd: f64, spent: f64, stop: bool) -> BudgetReading {
        BudgetReading {
            host: host.map(String::from),
            period: Period::Day,
            period_start_ms: Period::Day.start_ms(NOW),
            usd,
            spent_usd: spent,
            currency: Currency::Usd,
            level: crate::billing::budget::level(spent, usd),
            stop_at_100: stop,
        }
    }

    /// What a tick said: each notice's kind and machine.
    type Said = Vec<(NoticeKind, Option<String>)>;

    fn kinds(d: &TickDecision) -> Said {
        d.notices.iter().map(|n| (n.kind, n.host.clone())).collect()
    }

    /// Table: each row one situation and what this tick says.
    #[test]
    fn what_one_tick_says() {
        use NoticeKind::*;
        let box_on = vec![machine("box", None, true)];
        let box_off = vec![machine("box", None, false)];
        let rows: Vec<(&str, TickInput, Said)> = vec![
            (
                "nothing set",
                TickInput {
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![],
            ),
            (
                "idle 14 min of 30: not yet (half is 15)",
                TickInput {
                    guards: vec![guard("box", Some(14 * 60), None)],
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![],
            ),
            (
                "idle 16 min of 30",
                TickInput {
                    guards: vec![guard("box", Some(16 * 60), None)],
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![(Idle, Some("box".into()))],
            ),
            (
                "idle but already stopped",
                TickInput {
                    guards: vec![guard("box", Some(16 * 60), None)],
                    machines: box_off.clone(),
                    ..Default::default()
                },
                vec![],
            ),
            (
                "deadline in 11 min: not yet",
                TickInput {
                    guards: vec![guard("box", None, Some(NOW + 11 * MIN))],
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![],
            ),
            (
                "deadline in 10 min",
                TickInput {
                    guards: vec![guard("box", None, Some(NOW + 10 * MIN))],
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![(DeadlineSoon, Some("box".into()))],
            ),
            (
                "deadline 2 min ago: the guard on the host may still be acting",
                TickInput {
                    guards: vec![guard("box", None, Some(NOW - 2 * MIN))],
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![],
            ),
            (
                "deadline 3 min ago and still billing",
                TickInput {
                    guards: vec![guard("box", None, Some(NOW - 3 * MIN))],
                    machines: box_on.clone(),
                    ..Default::default()
                },
                vec![(DeadlineMissed, Some("box".into()))],
            ),
            (
                "deadline passed and stopped: the guard did its job",
                TickInput {
                    guards: vec![guard("box", None, Some(NOW - 30 * MIN))],
                    machines: box_off.clone(),
                    ..Default::default()
                },
                vec![],
            ),
            (
                "budget at 79 %",
                TickInput {
                    budgets: vec![budget(None, 10.0, 7.9, false)],
                    ..Default::default()
                },
                vec![],
            ),
            (
                "budget at 80 %",
                TickInput {
                    budgets: vec![budget(None, 10.0, 8.0, false)],
                    ..Default::default()
                },
                vec![(BudgetWarn, None)],
            ),
            (
                "machine budget at 100 %",
                TickInput {
                    budgets: vec![budget(Some("box"), 10.0, 10.0, false)],
                    ..Default::default()
                },
                vec![(BudgetOver, Some("box".into()))],
            ),
            (
                "balance 30 h left",
                TickInput {
                    balances: vec![BalanceReading {
                        account: "rp".into(),
                        balance_usd: 30.0,
                        usd_per_hour: 1.0,
                    }],
                    ..Default::default()
                },
                vec![],
            ),
            (
                "balance 20 h left",
                TickInput {
                    balances: vec![BalanceReading {
                        account: "rp".into(),
                        balance_usd: 20.0,
                        usd_per_hour: 1.0,
                    }],
                    ..Default::default()
                },
                vec![(BalanceLow, None)],
            ),
            (
                "nothing burning: no runway to speak of",
                TickInput {
                    balances: vec![BalanceReading {
                        account: "rp".into(),
                        balance_usd: 0.5,
                        usd_per_hour: 0.0,
                    }],
                    ..Default::default()
                },
                vec![],
            ),
        ];
        for (name, input, want) in rows {
            let d = decide(NOW, &input, &HashSet::new());
            assert_eq!(kinds(&d), want, "{name}");
            assert!(d.stops.is_empty(), "{name}: nobody chose stop at 100 %");
        }
    }

    /// A notice goes out once: its key is remembered, the next ticks stay quiet; a new period or
    /// a new idle spell is a new notice.
    #[test]
    fn each_notice_once() {
        let input = TickInput {
            budgets: vec![budget(None, 10.0, 8.5, false)],
            guards: vec![guard("box", Some(20 * 60), Some(NOW + 5 * MIN))],
            machines: vec![machine("box", None, true)],
            ..Default::default()
        };
        let first = decide(NOW, &input, &HashSet::new());
        assert_eq!(first.notices.len(), 3, "{first:?}");
        let sent: HashSet<String> = first.notices.iter().map(|n| n.key.clone()).collect();
        // 30 s later: the same spell (idle 30 s longer), the same deadline, the same day.
        let mut later = input.clone();
        later.guards[0].idle_for_s = Some(20 * 60 + 30);
        assert!(decide(NOW + 30_000, &later, &sent).notices.is_empty());
        // The budget goes over 100 %: a new notice; tomorrow's 80 % is new again.
        let mut over = input.clone();
        over.budgets[0] = budget(None, 10.0, 10.5, false);
        let d = decide(NOW + 60_000, &over, &sent);
        assert_eq!(kinds(&d), vec![(NoticeKind::BudgetOver, None)]);
        let mut tomorrow = input.clone();
        tomorrow.budgets[0].period_start_ms += 86_400_000;
        tomorrow.guards.clear();
        assert_eq!(decide(NOW + 86_400_000, &tomorrow, &sent).notices.len(), 1);
        // Busy, then idle again an hour later: a new spell.
        let mut again = input.clone();
        again.budgets.clear();
        again.guards[0].deadline_ms = None;
        again.guards[0].idle_since_s = Some((NOW + 3_600_000) / 1000 - 20 * 60);
        let d = decide(NOW + 3_600_000, &again, &sent);
        assert_eq!(kinds(&d), vec![(NoticeKind::Idle, Some("box".into()))]);
    }

    /// Stop at 100 % only where the user chose it, only provider machines that run, and only in
    /// the budget's scope; the notice goes out once.
    #[test]
    fn stop_at_100_only_when_chosen() {
        let machines = vec![
            machine("a", Some("gpurent-a"), true),
            machine("b", Some("gpurent-b"), false),
            machine("pasted", None, true),
            machine("c", Some("gpurent-c"), true),
        ];
        let not_chosen = TickInput {
            budgets: vec![budget(None, 5.0, 6.0, false)],
            machines: machines.clone(),
            ..Default::default()
        };
        assert!(decide(NOW, &not_chosen, &HashSet::new()).stops.is_empty());
        let warn_only = TickInput {
            budgets: vec![budget(None, 5.0, 4.5, true)],
            machines: machines.clone(),
            ..Default::default()
        };
        assert!(decide(NOW, &warn_only, &HashSet::new()).stops.is_empty());
        let total = TickInput {
            budgets: vec![budget(None, 5.0, 6.0, true)],
            machines: machines.clone(),
            ..Default::default()
        };
        let d = decide(NOW, &total, &HashSet::new());
        let stopped: Vec<&str> = d.stops.iter().map(|s| s.instance.as_str()).collect();
        assert_eq!(stopped, ["gpurent-a", "gpurent-c"]);
        let sent: HashSet<String> = d.notices.iter().map(|n| n.key.clone()).collect();
        // The next tick: the notice is not sent again; a machine still running is stopped
        // again (the stop was not confirmed, or it was started again), a stopped one is not.
        let mut after = total.clone();
        after.machines[0].running = false;
        let d = decide(NOW + 30_000, &after, &sent);
        assert!(d.notices.is_empty());
        let stopped: Vec<&str> = d.stops.iter().map(|s| s.instance.as_str()).collect();
        assert_eq!(stopped, ["gpurent-c"]);
        let one = TickInput {
            budgets: vec![budget(Some("c"), 5.0, 6.0, true)],
            machines,
            ..Default::default()
        };
        let d = decide(NOW, &one, &HashSet::new());
        assert_eq!(d.stops.len(), 1);
        assert_eq!(d.stops[0].instance, "gpurent-c");
    }

    /// "Stop at 100 %" never claims a stop it cannot send: a machine whose provider has no stop
    /// (Lambda) is named in its own notice, nothing is sent for it.
    #[test]
    fn stop_at_100_names_machines_it_cannot_stop() {
        let input = TickInput {
            budgets: vec![budget(None, 5.0, 6.0, true)],
            machines: vec![
                MachineReading {
                    can_stop: false,
                    ..machine("lambda", Some("gpurent-l"), true)
                },
                machine("vast", Some("gpurent-v"), true),
            ],
            ..Default::default()
        };
        let d = decide(NOW, &input, &HashSet::new());
        let stopped: Vec<&str> = d.stops.iter().map(|s| s.instance.as_str()).collect();
        assert_eq!(stopped, ["gpurent-v"]);
        assert_eq!(
            kinds(&d),
            vec![
                (NoticeKind::BudgetOver, None),
                (NoticeKind::BudgetCannotStop, Some("lambda".into()))
            ]
        );
        let sent: HashSet<String> = d.notices.iter().map(|n| n.key.clone()).collect();
        assert!(decide(NOW + 30_000, &input, &sent).notices.is_empty());
    }

    /// A budget in yuan over 100 % with "stop" acts only on machines billed in yuan: a USD
    /// provider machine is not stopped (nothing is converted), and the notice says ¥.
    /// AutoDL releases a machine left powered off 15 days in a row and wipes its data: the
    /// second guard warns 3 days and 1 day before (once each, for this stop), in the words of the
    /// platform, and says nothing for a running machine or one far from its release.
    #[test]
    fn a_machine_left_powered_off_is_warned_before_its_platform_releases_it() {
        const H: i64 = 3_600_000;
        let off = |release_in_h: i64| TickInput {
            machines: vec![MachineReading {
                currency: Currency::Cny,
                platform: Some(Platform::Autodl),
                release_at_ms: Some(NOW + release_in_h * H),
                ..machine("pro", Some("gpurent-pro"), false)
            }],
            ..Default::default()
        };
        let mut sent = HashSet::new();
        // 10 days left: nothing yet.
        assert_eq!(kinds(&decide(NOW, &off(240), &sent)), vec![]);
        // 2 days left: the 3-day warning, once.
        let d = decide(NOW, &off(48), &sent);
        assert_eq!(
            kinds(&d),
            vec![(NoticeKind::ReleaseSoon, Some("pro".into()))]
        );
        let n = &d.notices[0];
        assert_eq!(n.platform, Some(Platform::Autodl));
        assert_eq!(n.hours, Some(48.0));
        assert!(d.stops.is_empty() && d.acts.is_empty());
        let (title, body) = notice_text(crate::infra::settings::Language::ZhCn, n);
        assert!(title.contains("AutoDL") && title.contains("48"), "{title}");
        assert!(body.contains("15 天") && body.contains("清空"), "{body}");
        let (title, body) = notice_text(crate::infra::settings::Language::En, n);
        assert!(title.contains("releases pro in about 48 h"), "{title}");
        assert!(body.contains("15 days"), "{body}");
        sent.insert(n.key.clone());
        assert_eq!(kinds(&decide(NOW, &off(48), &sent)), vec![]);
        // 20 hours left: the 1-day warning (the lowest threshold crossed speaks).
        let d = decide(NOW, &off(20), &sent);
        assert_eq!(kinds(&d).len(), 1);
        sent.insert(d.notices[0].key.clone());
        assert_eq!(kinds(&decide(NOW, &off(20), &sent)), vec![]);
        // Started again and stopped later: a new stop, a new release date, warned again.
        assert_eq!(kinds(&decide(NOW, &off(47), &sent)).len(), 1);
        // Running: no release date, nothing said.
        let on = TickInput {
            machines: vec![MachineReading {
                platform: Some(Platform::Autodl),
                ..machine("pro", Some("gpurent-pro"), true)
            }],
            ..Default::default()
        };
        assert_eq!(kinds(&decide(NOW, &on, &HashSet::new())), vec![]);
    }

    #[test]
    fn a_budget_in_another_currency_stops_nothing_billed_in_usd() {
        let input = TickInput {
            budgets: vec![BudgetReading {
                currency: Currency::Cny,
                ..budget(None, 50.0, 60.0, true)
            }],
            machines: vec![machine("vast", Some("gpurent-v"), true)],
            ..Default::default()
        };
        let d = decide(NOW, &input, &HashSet::new());
        assert!(d.stops.is_empty(), "{d:?}");
        assert_eq!(kinds(&d), vec![(NoticeKind::BudgetOver, None)]);
        let n = &d.notices[0];
        assert!(n.key.ends_with(":CNY"), "{}", n.key);
        assert_eq!(n.currency, Some(Currency::Cny));
        let (_, body) =
            crate::second_guard::notice::notice_text(crate::infra::settings::Language::ZhCn, n);
        assert!(body.contains("¥60.00") && !body.contains('$'), "{body}");
        // The same budget in USD stops it.
        let usd = TickInput {
            budgets: vec![budget(None, 50.0, 60.0, true)],
            ..input
        };
        assert_eq!(decide(NOW, &usd, &HashSet::new()).stops.len(), 1);
    }

    /// Raising a budget does not silence its next 100 %: the notice for the new amount goes out
    /// when spending reaches it.
    #[test]
    fn a_raised_budget_speaks_again() {
        let at = |usd: f64, spent: f64| TickInput {
            budgets: vec![budget(None, usd, spent, false)],
            ..Default::default()
        };
        let d = decide(NOW, &at(10.0, 10.5), &HashSet::new());
        assert_eq!(kinds(&d), vec![(NoticeKind::BudgetOver, None)]);
        let sent: HashSet<String> = d.notices.iter().map(|n| n.key.clone()).collect();
        assert!(decide(NOW, &at(10.0, 11.0), &sent).notices.is_empty());
        // Raised to $20: quiet until spending reaches it, then 100 % again.
        assert!(decide(NOW, &at(20.0, 11.0), &sent).notices.is_empty());
        let d = decide(NOW, &at(20.0, 20.5), &sent);
        let over: Vec<_> = d
            .notices
            .iter()
            .filter(|n| n.kind == NoticeKind::BudgetOver)
            .collect();
        assert_eq!(over.len(), 1, "{d:?}");
        assert_eq!(over[0].budget_usd, Some(20.0));
    }

    /// A missed deadline of a rented machine: the app performs the guard's own action, once;
    /// never for the idle signal, never on a stale ledger, never for a pasted host or an action
    /// that runs on the machine.
    #[test]
    fn missed_deadline_acts_once_where_the_app_can() {
        let rented = |running: bool, read: bool| MachineReading {
            provider_read: read,
            ..machine("pod", Some("gpurent-pod"), running)
        };
        let g = |action: ActionKind, idle: Option<i64>, deadline: Option<i64>| GuardReading {
            action,
            ..guard("pod", idle, deadline)
        };
        let past = Some(NOW - 4 * MIN);
        type Row = (
            &'static str,
            GuardReading,
            MachineReading,
            Vec<(&'static str, &'static str)>,
            Said,
            Option<NoActReason>,
        );
        let pod = || Some("pod".to_string());
        let rows: Vec<Row> = vec![
            (
                "missed + running: stop",
                g(ActionKind::Stop, None, past),
                rented(true, true),
                vec![("gpurent-pod", "stop")],
                vec![],
                None,
            ),
            (
                "missed + running: release",
                g(ActionKind::Release, None, past),
                rented(true, true),
                vec![("gpurent-pod", "release")],
                vec![],
                None,
            ),
            (
                "missed + already stopped: nothing",
                g(ActionKind::Stop, None, past),
                rented(false, true),
                vec![],
                vec![],
                None,
            ),
            (
                "missed, provider unreadable: notify, no act",
                g(ActionKind::Stop, None, past),
                rented(true, false),
                vec![],
                vec![(NoticeKind::DeadlineMissed, pod())],
                Some(NoActReason::ProviderUnreadable),
            ),
            (
                "missed, a pasted host: notify, no act",
                g(ActionKind::Stop, None, past),
                machine("pod", None, true),
                vec![],
                vec![(NoticeKind::DeadlineMissed, pod())],
                Some(NoActReason::PastedHost),
            ),
            (
                "missed, poweroff on the machine: notify, no act",
                g(ActionKind::Poweroff, None, past),
                rented(true, true),
                vec![],
                vec![(NoticeKind::DeadlineMissed, pod())],
                Some(NoActReason::ActionOnMachine),
            ),
            (
                "2 min past: within the grace, the guard may still act",
                g(ActionKind::Stop, None, Some(NOW - 2 * MIN)),
                rented(true, true),
                vec![],
                vec![],
                None,
            ),
            (
                "idle long past its limit, no deadline: notify only",
                g(ActionKind::Stop, Some(60 * 60), None),
                rented(true, true),
                vec![],
                vec![(NoticeKind::Idle, pod())],
                None,
            ),
        ];
        for (name, guard, m, want_acts, want_notices, want_why) in rows {
            let input = TickInput {
                guards: vec![guard],
                machines: vec![m],
                ..Default::default()
            };
            let d = decide(NOW, &input, &HashSet::new());
            let acts: Vec<(&str, &str)> = d
                .acts
                .iter()
                .map(|a| (a.instance.as_str(), a.action))
                .collect();
            assert_eq!(acts, want_acts, "{name}");
            assert_eq!(kinds(&d), want_notices, "{name}");
            assert_eq!(d.notices.first().and_then(|n| n.no_act), want_why, "{name}");
            assert!(d.stops.is_empty(), "{name}");
        }

        // Act once: the outcome notice carries the act's key; once it is remembered the next
        // tick does nothing more, even if the provider still says running (it was told).
        let input = TickInput {
            guards: vec![g(ActionKind::Stop, None, past)],
            machines: vec![rented(true, true)],
            ..Default::default()
        };
        let d = decide(NOW, &input, &HashSet::new());
        assert_eq!(d.acts.len(), 1);
        assert_eq!(d.acts[0].minutes, 4);
        let done = deadline_acted(&d.acts[0], true, Some("exited".into()), None);
        assert_eq!(done.key, d.acts[0].key);
        assert_eq!(done.kind, NoticeKind::DeadlineActed);
        let sent: HashSet<String> = [done.key.clone()].into();
        let again = decide(NOW + 30_000, &input, &sent);
        assert!(
            again.acts.is_empty() && again.notices.is_empty(),
            "{again:?}"
        );
        // A new deadline (the guard set again) is a new act.
        let mut new_deadline = input.clone();
        new_deadline.guards[0].deadline_ms = Some(NOW - 10 * MIN);
        assert_eq!(decide(NOW, &new_deadline, &sent).acts.len(), 1);
        // Unreadable first (a notice), then readable: it acts.
        let mut unread = input.clone();
        unread.machines[0].provider_read = false;
        let d = decide(NOW, &unread, &HashSet::new());
        let sent: HashSet<String> = d.notices.iter().map(|n| n.key.clone()).collect();
        assert_eq!(decide(NOW + 30_000, &input, &sent).acts.len(), 1);
    }

    /// A snooze holds everywhere: the app neither acts nor says "missed" while the snooze the
    /// guard reports (or the app set) holds, and gives the guard its grace after it ends.
    #[test]
    fn a_snooze_holds_the_deadline() {
        let rented = machine("pod", Some("gpurent-pod"), true);
        let at = |snooze: Option<i64>| TickInput {
            guards: vec![GuardReading {
                action: ActionKind::Stop,
                snooze_until_ms: snooze,
                ..guard("pod", None, Some(NOW - 30 * MIN))
            }],
            machines: vec![rented.clone()],
            ..Default::default()
        };
        let none = HashSet::new();
        let d = decide(NOW, &at(Some(NOW + 20 * MIN)), &none);
        assert!(d.acts.is_empty() && d.notices.is_empty(), "snoozed: {d:?}");
        let d = decide(NOW, &at(Some(NOW - MIN)), &none);
        assert!(
            d.acts.is_empty() && d.notices.is_empty(),
            "grace after: {d:?}"
        );
        let d = decide(NOW, &at(Some(NOW - 4 * MIN)), &none);
        assert_eq!(d.acts.len(), 1, "snooze over + grace: acts");
        assert_eq!(d.acts[0].minutes, 30, "minutes past the deadline");
        // A pasted host: no "missed" notice while snoozed either.
        let mut pasted = at(Some(NOW + 20 * MIN));
        pasted.machines = vec![machine("pod", None, true)];
        assert!(decide(NOW, &pasted, &none).notices.is_empty());
        // No "deadline soon" for a deadline the snooze covers.
        let mut soon = at(Some(NOW + 60 * MIN));
        soon.guards[0].deadline_ms = Some(NOW + 5 * MIN);
        assert!(decide(NOW, &soon, &none).notices.is_empty());
    }

    /// A deadline fires once: done by the guard on the machine (it reports it fired) or seen
    /// done (the machine stopped after it), a machine the user started again is left alone.
    #[test]
    fn a_deadline_fires_once() {
        let none = HashSet::new();
        let input = |done: bool, running: bool| TickInput {
            guards: vec![GuardReading {
                action: ActionKind::Stop,
                deadline_done: done,
                ..guard("pod", None, Some(NOW - 30 * MIN))
            }],
            machines: vec![machine("pod", Some("gpurent-pod"), running)],
            ..Default::default()
        };
        let d = decide(NOW, &input(true, true), &none);
        assert!(d.acts.is_empty() && d.notices.is_empty(), "{d:?}");
        // Stopped after the deadline: recorded as done.
        let d = decide(NOW, &input(false, false), &none);
        assert_eq!(d.deadlines_done, [deadline_act_key("pod", NOW - 30 * MIN)]);
        assert!(d.acts.is_empty());
        assert!(decide(NOW, &input(true, false), &none)
            .deadlines_done
            .is_empty());
    }

    /// A failed act is said once and tried again on every tick until the provider confirms;
    /// a confirmed one is never repeated.
    #[test]
    fn a_failed_deadline_act_is_retried() {
        let input = TickInput {
            guards: vec![GuardReading {
                action: ActionKind::Stop,
                ..guard("pod", None, Some(NOW - 5 * MIN))
            }],
            machines: vec![machine("pod", Some("gpurent-pod"), true)],
            ..Default::default()
        };
        let d = decide(NOW, &input, &HashSet::new());
        assert_eq!(d.acts.len(), 1);
        let failed = deadline_acted(&d.acts[0], false, None, Some("provider_http".into()));
        assert_eq!(failed.kind, NoticeKind::DeadlineActFailed);
        let sent: HashSet<String> = [failed.key.clone()].into();
        let again = decide(NOW + 30_000, &input, &sent);
        assert_eq!(again.acts.len(), 1, "tried again");
        assert_eq!(
            deadline_acted(&again.acts[0], false, None, None).key,
            failed.key,
            "the failure is said once"
        );
        let done = deadline_acted(&again.acts[0], true, Some("exited".into()), None);
        let sent: HashSet<String> = [failed.key, done.key].into();
        assert!(decide(NOW + 60_000, &input, &sent).acts.is_empty());
    }

    /// The words of the app's own action, both languages, with the provider's state.
    #[test]
    fn deadline_acted_words() {
        use crate::infra::settings::Language;
        let act = DeadlineAct {
            key: "k".into(),
            instance: "gpurent-1".into(),
            host: "pod".into(),
            action: "stop",
            deadline_ms: NOW,
            minutes: 4,
        };
        let n = deadline_acted(&act, true, Some("exited".into()), None);
        let (t, b) = notice_text(Language::En, &n);
        assert_eq!(t, "gpurent stopped pod at its deadline");
        assert_eq!(
            b,
            "The guard on the machine did not. The provider now says: exited."
        );
        let (t, b) = notice_text(Language::ZhCn, &n);
        assert_eq!(t, "gpurent 已在截止时间停止 pod");
        assert!(b.contains("exited"), "{b}");
        let failed = deadline_acted(&act, false, None, Some("provider_http".into()));
        let (_, b) = notice_text(Language::En, &failed);
        assert!(b.contains("provider_http"), "{b}");
        let mut missed = Notice::new("m".into(), NoticeKind::DeadlineMissed);
        missed.host = Some("box".into());
        missed.no_act = Some(NoActReason::PastedHost);
        let (_, b) = notice_text(Language::En, &missed);
        assert!(b.contains("pasted host"), "{b}");
    }

    /// A guard that runs but no longer samples (stuck: `guard_stale`) cannot act — neither idle
    /// nor its deadline: the app says so once per stuck spell, while the machine bills; a new
    /// spell (a later last sample) speaks again.
    #[test]
    fn a_stale_guard_is_said_once() {
        let stale = |since: i64| GuardReading {
            stale_since_s: Some(since),
            ..guard("box", None, None)
        };
        let on = vec![machine("box", None, true)];
        let input = TickInput {
            guards: vec![stale(1000)],
            machines: on.clone(),
            ..Default::default()
        };
        let d = decide(NOW, &input, &HashSet::new());
        assert_eq!(
            kinds(&d),
            vec![(NoticeKind::GuardStale, Some("box".into()))]
        );
        let sent: HashSet<String> = d.notices.iter().map(|n| n.key.clone()).collect();
        assert!(decide(NOW + MIN, &input, &sent).notices.is_empty());
        let again = TickInput {
            guards: vec![stale(5000)],
            machines: on,
            ..Default::default()
        };
        assert_eq!(decide(NOW, &again, &sent).notices.len(), 1);
        let off = TickInput {
            guards: vec![stale(1000)],
            machines: vec![machine("box", None, false)],
            ..Default::default()
        };
        assert!(decide(NOW, &off, &HashSet::new()).notices.is_empty());
        for lang in [
            crate::infra::settings::Language::En,
            crate::infra::settings::Language::ZhCn,
        ] {
            let (t, _) = notice_text(lang, &d.notices[0]);
            assert!(t.contains("box"), "{t}");
        }
    }

    /// The key left on a machine gpurent stopped: the words say where it is, why, and to revoke
    /// it, in both languages; each such stop is its own notice.
    #[test]
    fn key_left_words() {
        use crate::infra::settings::Language;
        let n = key_left(
            "pod",
            "gpurent-1",
            "release",
            Some("connect_failed".into()),
            NOW,
        );
        assert_eq!(n.kind, NoticeKind::KeyLeft);
        assert_ne!(
            n.key,
            key_left("pod", "gpurent-1", "release", None, NOW + 1).key
        );
        let (t, b) = notice_text(Language::En, &n);
        assert!(t.contains("pod") && t.contains("API key"), "{t}");
        for w in ["released", "provider.key", "connect_failed", "revoke"] {
            assert!(b.contains(w), "{w}: {b}");
        }
        let (t, b) = notice_text(Language::ZhCn, &n);
        assert!(t.contains("密钥"), "{t}");
        for w in ["释放", "provider.key", "connect_failed", "吊销"] {
            assert!(b.contains(w), "{w}: {b}");
        }
    }

    /// Every kind has words in both languages, with its numbers in them.
    #[test]
    fn notice_words_carry_the_numbers() {
        use crate::infra::settings::Language;
        let mut n = Notice::new("k".into(), NoticeKind::BudgetOver);
        n.spent_usd = Some(10.5);
        n.budget_usd = Some(10.0);
        n.period = Some(Period::Month);
        let (t, b) = notice_text(Language::En, &n);
        assert_eq!(t, "The total budget is used up this month");
        assert_eq!(b, "$10.50 of $10.00.");
        let (t, _) = notice_text(Language::ZhCn, &n);
        assert_eq!(t, "总预算本月已用完");
        n.kind = NoticeKind::Idle;
        n.host = Some("box".into());
        n.minutes = Some(16);
        n.limit_minutes = Some(30);
        let (t, b) = notice_text(Language::En, &n);
        assert_eq!(t, "box has been idle for 16 min");
        assert!(b.contains("30 min"), "{b}");
    }

    /// The balance speaks at 24 h and again at 3 h, each once a day.
    #[test]
    fn balance_low_thresholds() {
        let at = |bal: f64| TickInput {
            balances: vec![BalanceReading {
                account: "rp".into(),
                balance_usd: bal,
                usd_per_hour: 2.0,
            }],
            ..Default::default()
        };
        let mut sent = HashSet::new();
        let d = decide(NOW, &at(40.0), &sent);
        assert_eq!(d.notices.len(), 1);
        assert!((d.notices[0].hours.unwrap_or(0.0) - 20.0).abs() < 1e-9);
        sent.extend(d.notices.iter().map(|n| n.key.clone()));
        assert!(decide(NOW + MIN, &at(39.0), &sent).notices.is_empty());
        let d = decide(NOW + 2 * MIN, &at(5.0), &sent);
        assert_eq!(d.notices.len(), 1, "2.5 h left crosses the 3 h line");
        sent.extend(d.notices.iter().map(|n| n.key.clone()));
        assert!(decide(NOW + 3 * MIN, &at(4.0), &sent).notices.is_empty());
    }
}
