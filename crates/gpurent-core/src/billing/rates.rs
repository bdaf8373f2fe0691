//! A pasted host's own rate (`host_rates`): the user enters it, since gpurent has no provider to
//! ask. Plain functions over the [`Store`]; the facade adds the host check and the clock.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::{Increment, InstanceState, PastedRate, StateChange};
use crate::infra::error::CoreError;
use crate::infra::store::Store;

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

fn to_rate((host, usd, rule, storage, since, stopped): RateRow) -> Result<HostRate, CoreError> {
    let rule = Increment::from_rule_name(&rule)
        .ok_or_else(|| CoreError::stored("host_rates", format!("unknown rule '{rule}'")))?;
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

/// Save (or replace) a host's rate, billed since `since_ms`; running again if it was stopped.
pub fn set(
    store: &Store,
    label: &str,
    rate: &PastedRate,
    since_ms: i64,
    now_ms: i64,
) -> Result<(), CoreError> {
    store.conn().execute(
        "INSERT INTO host_rates(host_label, usd_per_hour, rule, storage_usd_per_day, since_ms, stopped_ms, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6)
         ON CONFLICT(host_label) DO UPDATE SET usd_per_hour = excluded.usd_per_hour,
           rule = excluded.rule, storage_usd_per_day = excluded.storage_usd_per_day,
           since_ms = excluded.since_ms, stopped_ms = NULL, updated_ms = excluded.updated_ms",
        params![label, rate.usd_per_hour, rate.rule.rule_name(), rate.storage_usd_per_day, since_ms, now_ms],
    )?;
    Ok(())
}

/// Mark a running host's rate stopped at `now_ms`; `false` when it has no rate or was stopped.
pub fn mark_stopped(store: &Store, label: &str, now_ms: i64) -> Result<bool, CoreError> {
    Ok(store.conn().execute(
        "UPDATE host_rates SET stopped_ms = ?2, updated_ms = ?2 WHERE host_label = ?1 AND stopped_ms IS NULL",
        params![label, now_ms],
    )? == 1)
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
        .map(to_rate)
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
    rows.into_iter().map(to_rate).collect()
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
        };
        set(&store, "box", &rate, 10, 20).expect("set");
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
