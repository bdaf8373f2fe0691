//! The notices the second guard sent (`notices_sent`): each is kept under its key, so it goes out
//! once across ticks and restarts. Plain functions over the [`Store`].

use std::collections::HashSet;

use rusqlite::params;

use crate::infra::error::CoreError;
use crate::infra::store::Store;
use crate::second_guard::notice::Notice;

/// The keys of every notice sent.
pub fn keys(store: &Store) -> Result<HashSet<String>, CoreError> {
    let mut st = store.conn().prepare("SELECT key FROM notices_sent")?;
    let rows = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<HashSet<_>, _>>()?;
    Ok(rows)
}

/// Remember a notice as sent at `now_ms` (a key already kept stays as it was).
pub fn remember(store: &Store, n: &Notice, now_ms: i64) -> Result<(), CoreError> {
    let kind = serde_json::to_value(n.kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let json = serde_json::to_string(n).unwrap_or_default();
    store.conn().execute(
        "INSERT OR IGNORE INTO notices_sent(key, kind, json, sent_ms) VALUES (?1, ?2, ?3, ?4)",
        params![n.key, kind, json, now_ms],
    )?;
    Ok(())
}

/// Notices sent so far, newest first.
pub fn recent(store: &Store, limit: u32) -> Result<Vec<Notice>, CoreError> {
    let mut st = store
        .conn()
        .prepare("SELECT json FROM notices_sent ORDER BY sent_ms DESC, rowid DESC LIMIT ?1")?;
    let rows = st
        .query_map([limit], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|j| serde_json::from_str(&j).ok())
        .collect())
}
