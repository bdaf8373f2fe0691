//! What gpurent keeps of the guards it set (`guards`) and of the decisions fetched from them
//! (`guard_decisions`, so the record stays after the machine is gone): plain functions over the
//! [`Store`]; the facade (`app/guard.rs`) does the SSH and the clock.

use rusqlite::{params, OptionalExtension};

use crate::guard::{Boot, Decision, GuardSpec};
use crate::infra::error::CoreError;
use crate::infra::store::Store;

fn boot_name(boot: Boot) -> &'static str {
    match boot {
        Boot::Systemd => "systemd",
        Boot::Crontab => "crontab",
        Boot::None => "none",
    }
}

/// Record a guard set on `label` now (replacing an earlier one, switched on again).
pub fn save(
    store: &Store,
    label: &str,
    spec: &GuardSpec,
    action_command: &str,
    deadline_host_s: Option<i64>,
    boot: Boot,
    now_ms: i64,
) -> Result<(), CoreError> {
    let spec_json = serde_json::to_string(spec)
        .map_err(|e| CoreError::invalid("spec", format!("could not be saved: {e}")))?;
    store.conn().execute(
        "INSERT INTO guards(host_label, spec_json, action_command, deadline_host_s, boot, installed_ms, off_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)
         ON CONFLICT(host_label) DO UPDATE SET spec_json = excluded.spec_json,
           action_command = excluded.action_command, deadline_host_s = excluded.deadline_host_s,
           boot = excluded.boot, installed_ms = excluded.installed_ms, off_ms = NULL",
        params![label, spec_json, action_command, deadline_host_s, boot_name(boot), now_ms],
    )?;
    Ok(())
}

/// The spec of the guard set on `label` and not switched off.
pub fn spec(store: &Store, label: &str) -> Result<Option<GuardSpec>, CoreError> {
    let json: Option<String> = store
        .conn()
        .query_row(
            "SELECT spec_json FROM guards WHERE host_label = ?1 AND off_ms IS NULL",
            [label],
            |r| r.get(0),
        )
        .optional()?;
    Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
}

/// Guards set and not switched off: label, spec, when installed (this computer's clock).
pub fn active(store: &Store) -> Result<Vec<(String, GuardSpec, i64)>, CoreError> {
    let mut st = store.conn().prepare(
        "SELECT host_label, spec_json, installed_ms FROM guards WHERE off_ms IS NULL ORDER BY host_label",
    )?;
    let rows: Vec<(String, String, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(l, j, at)| serde_json::from_str(&j).ok().map(|spec| (l, spec, at)))
        .collect())
}

/// Mark the guard on `label` switched off at `now_ms`.
pub fn mark_off(store: &Store, label: &str, now_ms: i64) -> Result<(), CoreError> {
    store.conn().execute(
        "UPDATE guards SET off_ms = ?2 WHERE host_label = ?1",
        params![label, now_ms],
    )?;
    Ok(())
}

/// The decisions kept per host: the newest, about three days of an honest guard's samples
/// (one every 30 s is ~2 900 a day). The rest are dropped, whatever the host writes into its
/// `decisions.log` (security review §7.2: a host printing 10⁶ lines a fetch grew the database
/// without bound, every 30 s).
pub const KEEP_DECISIONS: usize = 10_000;
/// The longest decision kept, as JSON (an honest one is ~400 bytes): a longer line is a host's
/// own text, not the guard's, and is not kept.
pub const MAX_DECISION_JSON: usize = 4096;

/// Keep decisions fetched from `label` (each once), the newest [`KEEP_DECISIONS`] of them.
pub fn keep_decisions(
    store: &Store,
    label: &str,
    decisions: &[Decision],
    now_ms: i64,
) -> Result<(), CoreError> {
    let mut newest: Vec<&Decision> = decisions.iter().collect();
    newest.sort_by_key(|d| std::cmp::Reverse(d.at));
    newest.truncate(KEEP_DECISIONS);
    let tx = store.conn().unchecked_transaction()?;
    for d in newest {
        let Ok(json) = serde_json::to_string(d) else {
            continue;
        };
        if json.len() > MAX_DECISION_JSON {
            continue;
        }
        tx.execute(
            "INSERT OR IGNORE INTO guard_decisions(host_label, at_s, decision, why, line_json, fetched_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![label, d.at, d.decision, d.why, json, now_ms],
        )?;
    }
    tx.execute(
        "DELETE FROM guard_decisions WHERE host_label = ?1 AND rowid NOT IN
           (SELECT rowid FROM guard_decisions WHERE host_label = ?1
            ORDER BY at_s DESC, rowid DESC LIMIT ?2)",
        params![label, KEEP_DECISIONS as i64],
    )?;
    tx.commit()?;
    Ok(())
}

/// Decisions kept for `label`, newest first.
pub fn decisions(store: &Store, label: &str, limit: u32) -> Result<Vec<Decision>, CoreError> {
    let mut st = store.conn().prepare(
        "SELECT line_json FROM guard_decisions WHERE host_label = ?1 ORDER BY at_s DESC, rowid DESC LIMIT ?2",
    )?;
    let rows = st.query_map(params![label, limit], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for r in rows {
        if let Ok(d) = serde_json::from_str(&r?) {
            out.push(d);
        }
    }
    Ok(out)
}

/// The `meta` key recording whether the guard on `label` holds the account's full key.
fn full_key_meta(label: &str) -> String {
    format!("guard.full_key:{label}")
}

/// Record whether the account's full key is now on `label` (`provider.key`): set by `guard set`
/// (with the consent and no key of the machine's own), cleared by `guard off` and once gpurent
/// took it off before its own stop or release.
pub fn set_full_key(store: &Store, label: &str, on: bool) -> Result<(), CoreError> {
    store.meta_set(&full_key_meta(label), if on { "1" } else { "0" })
}

/// Whether the guard on `label` may hold the account's full key: as recorded by
/// [`set_full_key`]; for a guard set before that record existed, whether its active spec gave the
/// consent (the key may be there).
pub fn holds_full_key(store: &Store, label: &str) -> Result<bool, CoreError> {
    match store.meta_get(&full_key_meta(label))?.as_deref() {
        Some("1") => Ok(true),
        Some(_) => Ok(false),
        None => Ok(spec(store, label)?.is_some_and(|s| s.allow_full_key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(at: i64, why: &str) -> Decision {
        serde_json::from_value(serde_json::json!({
            "at": at, "decision": "keep", "why": why, "gpu": "busy", "gpu_why": "utilization",
            "gpu_util_max": 90.0, "gpu_procs": 1, "ssh": "none", "ssh_conns": 0, "ssh_new": 0,
            "ollama": "absent", "jupyter": "absent",
        }))
        .expect("a decision")
    }

    fn count(store: &Store, label: &str) -> i64 {
        store
            .conn()
            .query_row(
                "SELECT count(*) FROM guard_decisions WHERE host_label = ?1",
                params![label],
                |r| r.get(0),
            )
            .expect("count")
    }

    /// Security review §7.2: whatever a host writes into its decisions.log, the database keeps
    /// the newest KEEP_DECISIONS per host, and no line longer than MAX_DECISION_JSON.
    #[test]
    fn a_host_cannot_grow_the_database_without_bound() {
        let store = Store::open_in_memory().expect("store");
        let flood: Vec<Decision> = (0..25_000).map(|i| decision(i, "gpu")).collect();
        keep_decisions(&store, "box", &flood, 1).expect("keep");
        assert_eq!(count(&store, "box"), KEEP_DECISIONS as i64);
        let more: Vec<Decision> = (25_000..30_000).map(|i| decision(i, "gpu")).collect();
        keep_decisions(&store, "box", &more, 2).expect("keep");
        assert_eq!(count(&store, "box"), KEEP_DECISIONS as i64);
        let kept = decisions(&store, "box", 1).expect("read");
        assert_eq!(kept[0].at, 29_999, "the newest are kept");
        keep_decisions(&store, "box", &[decision(40_000, &"x".repeat(1 << 20))], 3).expect("keep");
        assert_eq!(decisions(&store, "box", 1).expect("read")[0].at, 29_999);
        // Another host's decisions are its own.
        keep_decisions(&store, "other", &[decision(1, "gpu")], 4).expect("keep");
        assert_eq!(count(&store, "other"), 1);
        assert_eq!(count(&store, "box"), KEEP_DECISIONS as i64);
    }
}
