//! A pasted host's own rate (`host_rates`): the user enters it, since gpurent has no provider to
//! ask. Plain functions over the [`Store`]; the facade adds the host check and the clock.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::{
    Currency, Increment, InstanceState, PastedRate, Platform, StateChange, Tariff,
};
use crate::infra::error::CoreError;
use crate::infra::store::Store;

/// A pasted host's rate as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostRate {
    pub host: String,
    /// The rate now (the last one set).
    pub rate: PastedRate,
    /// Billed (running) at this rate since.
    pub since_ms: i64,
    /// Stopped (or powered off by its guard) since (storage still bills); `None` while it runs.
    pub stopped_ms: Option<i64>,
    /// Every rate set and every stop, start and guard-recorded power-off, in time order (the
    /// append-only history cost is computed from, period by period).
    #[serde(default)]
    pub history: Vec<RateEvent>,
}

/// What happened to a pasted host's billing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RateEventKind {
    /// A rate set: from `at_ms` it bills at this rate, running.
    Rate,
    /// The user said it is stopped (`gpurent rate stopped`).
    Stopped,
    /// The guard on the machine recorded that it powered the machine off.
    PoweredOff,
    /// Running again: after a power-off the guard recorded (the machine's own boot time), or the
    /// user said it is started (`gpurent rate started`, "I started it").
    Running,
}

impl RateEventKind {
    fn as_str(self) -> &'static str {
        match self {
            RateEventKind::Rate => "rate",
            RateEventKind::Stopped => "stopped",
            RateEventKind::PoweredOff => "powered_off",
            RateEventKind::Running => "running",
        }
    }

    fn parse(s: &str) -> Option<RateEventKind> {
        Some(match s {
            "rate" => RateEventKind::Rate,
            "stopped" => RateEventKind::Stopped,
            "powered_off" => RateEventKind::PoweredOff,
            "running" => RateEventKind::Running,
            _ => return None,
        })
    }
}

/// One row of a pasted host's rate history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RateEvent {
    /// When it takes effect (this computer's clock).
    pub at_ms: i64,
    pub kind: RateEventKind,
    /// The rate, for [`RateEventKind::Rate`].
    pub rate: Option<PastedRate>,
    /// `user` or `guard` (read from the machine's own record).
    pub source: String,
    pub detail: Option<String>,
    pub recorded_ms: i64,
}

/// The `detail` of a rate event set while the host was stopped: it bills from the host's next
/// start (a rate change never starts a stopped host; `gpurent rate started` / "I started it"
/// does). Kept in `detail` so the table needs no migration.
pub const RATE_WHILE_STOPPED: &str = "while_stopped";

impl RateEvent {
    /// A rate set while the host was stopped (its period begins stopped).
    pub fn is_rate_while_stopped(&self) -> bool {
        self.kind == RateEventKind::Rate && self.detail.as_deref() == Some(RATE_WHILE_STOPPED)
    }
}

/// Stopped (by the user or its guard's power-off) since when, after these events in time order
/// (`None`: running). A rate set while stopped keeps the stop and its time.
fn stopped_since(events: &[RateEvent]) -> Option<i64> {
    let mut since = None;
    for e in events {
        match e.kind {
            RateEventKind::Rate if e.is_rate_while_stopped() => {}
            RateEventKind::Rate | RateEventKind::Running => since = None,
            RateEventKind::Stopped | RateEventKind::PoweredOff => since = Some(e.at_ms),
        }
    }
    since
}

impl HostRate {
    /// The current period's timeline (since the last rate set).
    pub fn timeline(&self) -> Vec<StateChange> {
        self.periods().pop().map(|p| p.timeline).unwrap_or_else(|| {
            vec![StateChange {
                at_ms: self.since_ms,
                state: InstanceState::Running,
            }]
        })
    }

    /// Each rate period's timeline, tariff and currency, oldest first: a period runs from its
    /// rate's `at_ms` to the next rate's (where it ends as if released), its stops, power-offs
    /// and starts in it. Summing their costs (per currency) is the host's cost, each period at
    /// its own rate.
    pub fn periods(&self) -> Vec<RatePeriod> {
        let mut out: Vec<RatePeriod> = Vec::new();
        for e in &self.history {
            match (e.kind, e.rate) {
                (RateEventKind::Rate, Some(rate)) => {
                    if let Some(p) = out.last_mut() {
                        p.timeline.push(StateChange {
                            at_ms: e.at_ms,
                            state: InstanceState::Terminated,
                        });
                    }
                    // A rate set while the host was stopped bills from its next start: the
                    // period begins stopped (its storage, if any, bills from here).
                    out.push(RatePeriod {
                        timeline: vec![StateChange {
                            at_ms: e.at_ms,
                            state: if e.is_rate_while_stopped() {
                                InstanceState::Stopped
                            } else {
                                InstanceState::Running
                            },
                        }],
                        tariff: rate.tariff(),
                        currency: rate.currency,
                    });
                }
                (RateEventKind::Rate, None) => {}
                (kind, _) => {
                    if let Some(RatePeriod { timeline: t, .. }) = out.last_mut() {
                        t.push(StateChange {
                            at_ms: e.at_ms,
                            state: if kind == RateEventKind::Running {
                                InstanceState::Running
                            } else {
                                InstanceState::Stopped
                            },
                        });
                    }
                }
            }
        }
        if out.is_empty() {
            // A rate saved before the history existed and never migrated (not expected).
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
            out.push(RatePeriod {
                timeline: t,
                tariff: self.rate.tariff(),
                currency: self.rate.currency,
            });
        }
        out
    }
}

/// One rate period of a pasted host: its timeline, its tariff and what the tariff is in.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePeriod {
    pub timeline: Vec<StateChange>,
    pub tariff: Tariff,
    pub currency: Currency,
}

/// A `host_rates` row: label, rate/h, rule, storage/day, since, stopped, currency, platform.
type RateRow = (
    String,
    f64,
    String,
    Option<f64>,
    i64,
    Option<i64>,
    String,
    Option<String>,
);

fn row_to_rate(r: &rusqlite::Row<'_>) -> rusqlite::Result<RateRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
    ))
}

fn platform_of(table: &str, name: Option<&str>) -> Result<Option<Platform>, CoreError> {
    name.map(|n| {
        Platform::parse(n)
            .filter(|p| p.as_str() == n)
            .ok_or_else(|| CoreError::stored(table, format!("unknown platform '{n}'")))
    })
    .transpose()
}

fn currency_of(table: &str, code: Option<&str>) -> Result<Currency, CoreError> {
    match code {
        // A rate row written before migration 10 ran cannot exist (it sets 'USD'); absent: USD.
        None => Ok(Currency::Usd),
        Some(c) => Currency::parse(c)
            .filter(|x| x.code() == c)
            .ok_or_else(|| CoreError::stored(table, format!("unknown currency '{c}'"))),
    }
}

fn rule_of(table: &str, rule: &str) -> Result<Increment, CoreError> {
    Increment::from_rule_name(rule)
        .ok_or_else(|| CoreError::stored(table, format!("unknown rule '{rule}'")))
}

/// The history's rows as they take effect: in the order recorded, a rate set at `t` replaces
/// whatever was recorded before it for `t` and later (a corrected start); then in time order.
fn history(store: &Store, label: &str) -> Result<Vec<RateEvent>, CoreError> {
    let mut st = store.conn().prepare(
        "SELECT at_ms, kind, usd_per_hour, rule, storage_usd_per_day, source, detail, recorded_ms, currency, platform
         FROM host_rate_events WHERE host_label = ?1 ORDER BY rowid",
    )?;
    type Raw = (
        i64,
        String,
        Option<f64>,
        Option<String>,
        Option<f64>,
        String,
        Option<String>,
        i64,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Raw> = st
        .query_map([label], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut out: Vec<RateEvent> = Vec::new();
    for (at_ms, kind, usd, rule, storage, source, detail, recorded_ms, currency, platform) in rows {
        let kind = RateEventKind::parse(&kind).ok_or_else(|| {
            CoreError::stored("host_rate_events", format!("unknown kind '{kind}'"))
        })?;
        let rate = match (kind, usd, rule) {
            (RateEventKind::Rate, Some(usd), Some(rule)) => Some(PastedRate {
                usd_per_hour: usd,
                rule: rule_of("host_rate_events", &rule)?,
                storage_usd_per_day: storage,
                currency: currency_of("host_rate_events", currency.as_deref())?,
                platform: platform_of("host_rate_events", platform.as_deref())?,
            }),
            (RateEventKind::Rate, _, _) => {
                return Err(CoreError::stored(
                    "host_rate_events",
                    "a rate row without its rate",
                ))
            }
            _ => None,
        };
        if kind == RateEventKind::Rate {
            out.retain(|e| e.at_ms < at_ms);
        }
        out.push(RateEvent {
            at_ms,
            kind,
            rate,
            source,
            detail,
            recorded_ms,
        });
    }
    out.sort_by_key(|e| e.at_ms);
    Ok(out)
}

fn to_rate(
    store: &Store,
    (host, usd, rule, storage, since, stopped, currency, platform): RateRow,
) -> Result<HostRate, CoreError> {
    let rule = rule_of("host_rates", &rule)?;
    let currency = currency_of("host_rates", Some(&currency))?;
    let platform = platform_of("host_rates", platform.as_deref())?;
    let history = history(store, &host)?;
    // Stopped: the last stop or power-off not followed by a start or a rate set while running.
    let stopped_ms = if history.is_empty() {
        stopped
    } else {
        stopped_since(&history)
    };
    Ok(HostRate {
        host,
        rate: PastedRate {
            usd_per_hour: usd,
            rule,
            storage_usd_per_day: storage,
            currency,
            platform,
        },
        since_ms: since,
        stopped_ms,
        history,
    })
}

const SELECT: &str = "SELECT host_label, usd_per_hour, rule, storage_usd_per_day, since_ms, stopped_ms, currency, platform FROM host_rates";

/// Save a host's rate, billed at it since `since_ms` (running): the current rate is replaced,
/// the history keeps the earlier ones (each billed for its own period).
///
/// A host stopped at `since_ms` (the user's "I stopped it" or its guard's power-off, before that
/// time) stays stopped: the rate is recorded for its next start ([`RATE_WHILE_STOPPED`]), its
/// storage bills at the new rate from `since_ms`, and the stop keeps its time. Returns whether it
/// was stopped.
pub fn set(
    store: &Store,
    label: &str,
    rate: &PastedRate,
    since_ms: i64,
    now_ms: i64,
) -> Result<bool, CoreError> {
    // The state at `since_ms`: what was recorded before it (a rate at `since_ms` replaces what
    // was recorded for that time and later).
    let stopped = match get(store, label)? {
        Some(r) => {
            let before: Vec<RateEvent> = r
                .history
                .into_iter()
                .filter(|e| e.at_ms < since_ms)
                .collect();
            if before.is_empty() {
                r.stopped_ms.is_some_and(|s| s < since_ms)
            } else {
                stopped_since(&before).is_some()
            }
        }
        None => false,
    };
    let c = store.conn();
    c.execute(
        "INSERT INTO host_rates(host_label, usd_per_hour, rule, storage_usd_per_day, since_ms, stopped_ms, updated_ms, currency, platform)
         VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7, ?8)
         ON CONFLICT(host_label) DO UPDATE SET usd_per_hour = excluded.usd_per_hour,
           rule = excluded.rule, storage_usd_per_day = excluded.storage_usd_per_day,
           since_ms = excluded.since_ms,
           stopped_ms = CASE WHEN ?9 THEN host_rates.stopped_ms ELSE NULL END,
           updated_ms = excluded.updated_ms,
           currency = excluded.currency, platform = excluded.platform",
        params![label, rate.usd_per_hour, rate.rule.rule_name(), rate.storage_usd_per_day, since_ms, now_ms, rate.currency.code(), rate.platform.map(Platform::as_str), stopped],
    )?;
    c.execute(
        "INSERT INTO host_rate_events(host_label, at_ms, kind, usd_per_hour, rule, storage_usd_per_day, source, detail, recorded_ms, currency, platform)
         VALUES (?1, ?2, 'rate', ?3, ?4, ?5, 'user', ?9, ?6, ?7, ?8)",
        params![label, since_ms, rate.usd_per_hour, rate.rule.rule_name(), rate.storage_usd_per_day, now_ms, rate.currency.code(), rate.platform.map(Platform::as_str), stopped.then_some(RATE_WHILE_STOPPED)],
    )?;
    Ok(stopped)
}

/// Mark a stopped host's rate running again at `now_ms` (the user started it on the platform);
/// `false` when it has no rate or is not stopped.
pub fn mark_started(store: &Store, label: &str, now_ms: i64) -> Result<bool, CoreError> {
    mark(store, label, now_ms, false)
}

/// Mark a running host's rate stopped at `now_ms`; `false` when it has no rate or was stopped.
pub fn mark_stopped(store: &Store, label: &str, now_ms: i64) -> Result<bool, CoreError> {
    mark(store, label, now_ms, true)
}

/// Move a host's rate to stopped (`to_stopped`) or running at `now_ms`, as the user said: an
/// event, then the row; `false` when it has no rate or is in that state already.
fn mark(store: &Store, label: &str, now_ms: i64, to_stopped: bool) -> Result<bool, CoreError> {
    match get(store, label)? {
        Some(r) if r.stopped_ms.is_some() != to_stopped => {
            let kind = if to_stopped {
                RateEventKind::Stopped
            } else {
                RateEventKind::Running
            };
            append(store, label, kind, now_ms, "user", None, now_ms)?;
            store.conn().execute(
                "UPDATE host_rates SET stopped_ms = ?3, updated_ms = ?2 WHERE host_label = ?1",
                params![label, now_ms, to_stopped.then_some(now_ms)],
            )?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn append(
    store: &Store,
    label: &str,
    kind: RateEventKind,
    at_ms: i64,
    source: &str,
    detail: Option<&str>,
    now_ms: i64,
) -> Result<(), CoreError> {
    store.conn().execute(
        "INSERT INTO host_rate_events(host_label, at_ms, kind, source, detail, recorded_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![label, at_ms, kind.as_str(), source, detail, now_ms],
    )?;
    Ok(())
}

/// Record what the guard on the machine said about it (`powered_off` at the time its record
/// gives, `running` at the machine's boot time), once: `false` when the host has no rate or this
/// very event is already in the history.
pub fn record_guard_event(
    store: &Store,
    label: &str,
    kind: RateEventKind,
    at_ms: i64,
    detail: &str,
    now_ms: i64,
) -> Result<bool, CoreError> {
    if get(store, label)?.is_none() {
        return Ok(false);
    }
    let seen: i64 = store.conn().query_row(
        "SELECT COUNT(*) FROM host_rate_events WHERE host_label = ?1 AND kind = ?2 AND at_ms = ?3 AND source = 'guard'",
        params![label, kind.as_str(), at_ms],
        |r| r.get(0),
    )?;
    if seen > 0 {
        return Ok(false);
    }
    append(store, label, kind, at_ms, "guard", Some(detail), now_ms)?;
    Ok(true)
}

pub fn get(store: &Store, label: &str) -> Result<Option<HostRate>, CoreError> {
    store
        .conn()
        .query_row(
            &format!("{SELECT} WHERE host_label = ?1"),
            [label],
            row_to_rate,
        )
        .optional()?
        .map(|r| to_rate(store, r))
        .transpose()
}

/// Every saved rate, by host label.
pub fn list(store: &Store) -> Result<Vec<HostRate>, CoreError> {
    let mut st = store
        .conn()
        .prepare(&format!("{SELECT} ORDER BY host_label"))?;
    let rows = st
        .query_map([], row_to_rate)?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(|r| to_rate(store, r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::ipc::Coded;

    /// A saved rate whose rule this build does not know is damaged stored data (not built-in).
    #[test]
    fn a_rate_saved_with_an_unknown_rule_is_stored_data_damaged() {
        let store = Store::open_in_memory().expect("store");
        let rate = PastedRate {
            usd_per_hour: 1.0,
            rule: Increment::Hour,
            storage_usd_per_day: None,
            currency: Currency::Usd,
            platform: None,
        };
        assert!(!set(&store, "box", &rate, 10, 20).expect("set"));
        assert!(mark_stopped(&store, "box", 30).expect("stop"));
        assert!(!mark_stopped(&store, "box", 40).expect("again"));
        assert_eq!(
            get(&store, "box").expect("get").map(|r| r.stopped_ms),
            Some(Some(30))
        );
        store
            .conn()
            .execute("UPDATE host_rates SET rule = 'per-fortnight'", [])
            .expect("update");
        let e = list(&store).expect_err("damaged");
        assert_eq!(e.code(), "stored_data_damaged");
        assert!(
            e.detail().unwrap_or_default().contains("host_rates"),
            "{e:?}"
        );
    }
}
