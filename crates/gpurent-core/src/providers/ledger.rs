//! The instance ledger (SQLite tables `instances` and `instance_events`, migration 6).
//!
//! - An **intent row** (`gpurent-<random>`) is written before any create call; that id is the
//!   label the provider stores in its name/label field, so a machine whose create answer was lost
//!   (crash, timeout) is found again by it.
//! - **Every state change** is an `instance_events` row `(instance_id, at_ms, state, source,
//!   detail)` with the injected clock; `source` is `gpurent` (our own call and its answer),
//!   `provider` (a read of the provider) or `reconcile`. Billing computes cost from these.
//! - [`reconcile`] matches an account's instance list with the ledger: it adopts a labelled
//!   instance whose row has no provider id (the crash case), updates states, names rows whose
//!   instance is missing (the caller confirms each with a direct read before closing it) and lists
//!   running instances the ledger does not know ("not started by gpurent — still billing").

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{ProviderError, ProviderKind, RemoteInstance, RemoteState};

/// Ledger states (what billing reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LedgerState {
    /// Written before the create call; no machine is known yet.
    Intent,
    /// The provider has (or may have) the machine; it is not running yet. Bills on most providers.
    Provisioning,
    Running,
    /// GPU billing stopped; the disk is kept (and billed).
    Stopped,
    /// Gone: nothing bills any more.
    Terminated,
    /// The create was refused (no machine was made) or never happened.
    CreateFailed,
    /// The provider's state could not be mapped, or the answer was lost.
    Unknown,
}

impl LedgerState {
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerState::Intent => "intent",
            LedgerState::Provisioning => "provisioning",
            LedgerState::Running => "running",
            LedgerState::Stopped => "stopped",
            LedgerState::Terminated => "terminated",
            LedgerState::CreateFailed => "create_failed",
            LedgerState::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> LedgerState {
        match s {
            "intent" => LedgerState::Intent,
            "provisioning" => LedgerState::Provisioning,
            "running" => LedgerState::Running,
            "stopped" => LedgerState::Stopped,
            "terminated" => LedgerState::Terminated,
            "create_failed" => LedgerState::CreateFailed,
            _ => LedgerState::Unknown,
        }
    }

    /// A closed row never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(self, LedgerState::Terminated | LedgerState::CreateFailed)
    }

    pub fn from_remote(s: RemoteState) -> LedgerState {
        match s {
            RemoteState::Provisioning | RemoteState::Starting => LedgerState::Provisioning,
            RemoteState::Running | RemoteState::Stopping => LedgerState::Running,
            RemoteState::Stopped => LedgerState::Stopped,
            // Only the provider's own "terminated" closes a row: a machine that is still
            // terminating may bill on (and may fail to terminate).
            RemoteState::Terminated => LedgerState::Terminated,
            RemoteState::Terminating | RemoteState::Error | RemoteState::Unknown => {
                LedgerState::Unknown
            }
        }
    }
}

/// Who saw the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum EventSource {
    Gpurent,
    Provider,
    Reconcile,
}

impl EventSource {
    pub fn as_str(self) -> &'static str {
        match self {
            EventSource::Gpurent => "gpurent",
            EventSource::Provider => "provider",
            EventSource::Reconcile => "reconcile",
        }
    }
}

/// One ledger row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LedgerInstance {
    /// `gpurent-<random>`: also the label in the provider's name/label field.
    pub id: String,
    pub provider: ProviderKind,
    pub account: String,
    pub provider_instance_id: Option<String>,
    pub offer_id: String,
    pub gpu: String,
    pub gpu_count: u32,
    pub price_per_hour_usd: f64,
    pub disk_gb: u32,
    pub storage_usd_per_gb_month: Option<f64>,
    pub image: String,
    /// The saved host once the machine is ready.
    pub host_label: Option<String>,
    pub state: LedgerState,
    pub created_ms: i64,
    pub updated_ms: i64,
    pub closed_ms: Option<i64>,
}

/// One timestamped state change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct InstanceEvent {
    pub instance_id: String,
    pub at_ms: i64,
    pub state: LedgerState,
    pub source: EventSource,
    pub detail: Option<String>,
}

/// What the intent row records (from the offer the user picked).
#[derive(Debug, Clone)]
pub struct Intent {
    pub provider: ProviderKind,
    pub account: String,
    pub offer_id: String,
    pub gpu: String,
    pub gpu_count: u32,
    pub price_per_hour_usd: f64,
    pub disk_gb: u32,
    pub storage_usd_per_gb_month: Option<f64>,
    pub image: String,
}

/// A fresh ledger id / provider label: `gpurent-` and 12 random hex digits.
pub fn new_id() -> Result<String, ProviderError> {
    let mut b = [0u8; 6];
    getrandom::getrandom(&mut b)
        .map_err(|e| ProviderError::Core(crate::CoreError::NoRandomness(e.to_string())))?;
    Ok(format!(
        "gpurent-{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    ))
}

const COLS: &str = "id, provider, account, provider_instance_id, offer_id, gpu, gpu_count, \
    price_per_hour_usd, disk_gb, storage_usd_per_gb_month, image, host_label, state, created_ms, \
    updated_ms, closed_ms";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LedgerInstance> {
    let provider: String = r.get(1)?;
    let state: String = r.get(12)?;
    Ok(LedgerInstance {
        id: r.get(0)?,
        provider: ProviderKind::parse(&provider).unwrap_or(ProviderKind::Runpod),
        account: r.get(2)?,
        provider_instance_id: r.get(3)?,
        offer_id: r.get(4)?,
        gpu: r.get(5)?,
        gpu_count: r.get(6)?,
        price_per_hour_usd: r.get(7)?,
        disk_gb: r.get(8)?,
        storage_usd_per_gb_month: r.get(9)?,
        image: r.get(10)?,
        host_label: r.get(11)?,
        state: LedgerState::parse(&state),
        created_ms: r.get(13)?,
        updated_ms: r.get(14)?,
        closed_ms: r.get(15)?,
    })
}

/// Write the intent row and its first event, in one transaction. Returns the new id.
pub fn insert_intent(
    conn: &Connection,
    intent: &Intent,
    now_ms: i64,
) -> Result<String, ProviderError> {
    let id = new_id()?;
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        &format!("INSERT INTO instances ({COLS}) VALUES (?1,?2,?3,NULL,?4,?5,?6,?7,?8,?9,?10,NULL,'intent',?11,?11,NULL)"),
        params![
            id,
            intent.provider.as_str(),
            intent.account,
            intent.offer_id,
            intent.gpu,
            intent.gpu_count,
            intent.price_per_hour_usd,
            intent.disk_gb,
            intent.storage_usd_per_gb_month,
            intent.image,
            now_ms
        ],
    )?;
    tx.execute(
        "INSERT INTO instance_events (instance_id, at_ms, state, source, detail) VALUES (?1, ?2, 'intent', 'gpurent', ?3)",
        params![id, now_ms, format!("offer {}", intent.offer_id)],
    )?;
    tx.commit()?;
    Ok(id)
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<LedgerInstance>, ProviderError> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLS} FROM instances WHERE id = ?1"),
            [id],
            row,
        )
        .optional()?)
}

/// A row by its ledger id, or by its provider id.
pub fn find(conn: &Connection, key: &str) -> Result<Option<LedgerInstance>, ProviderError> {
    if let Some(r) = get(conn, key)? {
        return Ok(Some(r));
    }
    Ok(conn
        .query_row(
            &format!("SELECT {COLS} FROM instances WHERE provider_instance_id = ?1 ORDER BY created_ms DESC LIMIT 1"),
            [key],
            row,
        )
        .optional()?)
}

/// Every row, newest first.
pub fn list(conn: &Connection) -> Result<Vec<LedgerInstance>, ProviderError> {
    let mut st = conn.prepare(&format!(
        "SELECT {COLS} FROM instances ORDER BY created_ms DESC, id"
    ))?;
    let rows = st.query_map([], row)?.collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The rows of one account that are not closed.
pub fn open_rows(
    conn: &Connection,
    provider: ProviderKind,
    account: &str,
) -> Result<Vec<LedgerInstance>, ProviderError> {
    let mut st = conn.prepare(&format!(
        "SELECT {COLS} FROM instances WHERE provider = ?1 AND account = ?2 AND closed_ms IS NULL ORDER BY created_ms"
    ))?;
    let rows = st
        .query_map(params![provider.as_str(), account], row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn events(conn: &Connection, id: &str) -> Result<Vec<InstanceEvent>, ProviderError> {
    let mut st = conn.prepare(
        "SELECT instance_id, at_ms, state, source, detail FROM instance_events WHERE instance_id = ?1 ORDER BY at_ms, rowid",
    )?;
    let rows = st
        .query_map([id], |r| {
            let state: String = r.get(2)?;
            let source: String = r.get(3)?;
            Ok(InstanceEvent {
                instance_id: r.get(0)?,
                at_ms: r.get(1)?,
                state: LedgerState::parse(&state),
                source: match source.as_str() {
                    "provider" => EventSource::Provider,
                    "reconcile" => EventSource::Reconcile,
                    _ => EventSource::Gpurent,
                },
                detail: r.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Record the provider's id for a row (the create answer, or adoption by label).
pub fn set_provider_id(
    conn: &Connection,
    id: &str,
    provider_id: &str,
    state: LedgerState,
    source: EventSource,
    detail: &str,
    now_ms: i64,
) -> Result<(), ProviderError> {
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "UPDATE instances SET provider_instance_id = ?2, updated_ms = ?3 WHERE id = ?1 AND provider_instance_id IS NULL",
        params![id, provider_id, now_ms],
    )?;
    record_in(&tx, id, state, source, Some(detail), now_ms, true)?;
    tx.commit()?;
    Ok(())
}

/// Record a state (an event only when the state changes, unless `detail` must be kept anyway).
pub fn record(
    conn: &Connection,
    id: &str,
    state: LedgerState,
    source: EventSource,
    detail: Option<&str>,
    now_ms: i64,
) -> Result<bool, ProviderError> {
    let tx = conn.unchecked_transaction()?;
    let changed = record_in(&tx, id, state, source, detail, now_ms, false)?;
    tx.commit()?;
    Ok(changed)
}

/// Keep a note (same state) as an event: e.g. "ssh_ready" on a running machine.
pub fn note(
    conn: &Connection,
    id: &str,
    source: EventSource,
    detail: &str,
    now_ms: i64,
) -> Result<(), ProviderError> {
    let Some(r) = get(conn, id)? else {
        return Err(ProviderError::UnknownInstance(id.to_string()));
    };
    let tx = conn.unchecked_transaction()?;
    record_in(&tx, id, r.state, source, Some(detail), now_ms, true)?;
    tx.commit()?;
    Ok(())
}

fn record_in(
    conn: &Connection,
    id: &str,
    state: LedgerState,
    source: EventSource,
    detail: Option<&str>,
    now_ms: i64,
    always: bool,
) -> Result<bool, ProviderError> {
    let current: Option<(String, Option<i64>)> = conn
        .query_row(
            "SELECT state, closed_ms FROM instances WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((current, closed)) = current else {
        return Err(ProviderError::UnknownInstance(id.to_string()));
    };
    if closed.is_some() {
        // A closed row stays closed; a late answer is kept as a note only.
        if always || LedgerState::parse(&current) != state {
            conn.execute(
                "INSERT INTO instance_events (instance_id, at_ms, state, source, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, now_ms, current, source.as_str(), format!("after close: {} {}", state.as_str(), detail.unwrap_or(""))],
            )?;
        }
        return Ok(false);
    }
    let changed = LedgerState::parse(&current) != state;
    if !changed && !always {
        return Ok(false);
    }
    let closed_ms = state.is_terminal().then_some(now_ms);
    conn.execute(
        "UPDATE instances SET state = ?2, updated_ms = ?3, closed_ms = ?4 WHERE id = ?1",
        params![id, state.as_str(), now_ms, closed_ms],
    )?;
    conn.execute(
        "INSERT INTO instance_events (instance_id, at_ms, state, source, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, now_ms, state.as_str(), source.as_str(), detail],
    )?;
    Ok(changed)
}

/// Reopen a closed row whose machine the provider shows alive (a closed row must never hide a
/// machine that bills): the state becomes what the provider says, with an event saying why.
/// Returns whether the row was closed (and is now open).
pub fn reopen(
    conn: &Connection,
    id: &str,
    state: LedgerState,
    source: EventSource,
    detail: &str,
    now_ms: i64,
) -> Result<bool, ProviderError> {
    if state.is_terminal() {
        return Ok(false);
    }
    let tx = conn.unchecked_transaction()?;
    let n = tx.execute(
        "UPDATE instances SET state = ?2, updated_ms = ?3, closed_ms = NULL WHERE id = ?1 AND closed_ms IS NOT NULL",
        params![id, state.as_str(), now_ms],
    )?;
    if n > 0 {
        tx.execute(
            "INSERT INTO instance_events (instance_id, at_ms, state, source, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, now_ms, state.as_str(), source.as_str(), format!("reopened: {detail}")],
        )?;
    }
    tx.commit()?;
    Ok(n > 0)
}

pub fn set_host_label(
    conn: &Connection,
    id: &str,
    host_label: &str,
    now_ms: i64,
) -> Result<(), ProviderError> {
    conn.execute(
        "UPDATE instances SET host_label = ?2, updated_ms = ?3 WHERE id = ?1",
        params![id, host_label, now_ms],
    )?;
    Ok(())
}

/// When the rented machine behind saved host `host_label` was released: the newest instance
/// tied to that host is terminated (`None`: no instance, or it still exists).
pub fn released_at(conn: &Connection, host_label: &str) -> rusqlite::Result<Option<i64>> {
    let newest: Option<(String, Option<i64>, i64)> = conn
        .query_row(
            "SELECT state, closed_ms, updated_ms FROM instances WHERE host_label = ?1
             ORDER BY created_ms DESC LIMIT 1",
            [host_label],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(newest.and_then(|(state, closed, updated)| {
        (state == LedgerState::Terminated.as_str()).then_some(closed.unwrap_or(updated))
    }))
}

/// The event detail prefix that binds a row to the key it was made with ([`super::accounts::key_id`]).
pub const KEY_NOTE: &str = "account_key:";

/// The key id a row was made with (`None`: a row from before rows were bound).
pub fn bound_key(conn: &Connection, id: &str) -> Result<Option<String>, ProviderError> {
    let d: Option<String> = conn
        .query_row(
            "SELECT detail FROM instance_events WHERE instance_id = ?1 AND detail LIKE 'account_key:%' ORDER BY rowid LIMIT 1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(d.and_then(|d| d.strip_prefix(KEY_NOTE).map(String::from)))
}

/// The note a "gone" read leaves on a row until a second one confirms it (or the machine is
/// seen again, [`SEEN_AGAIN`]).
pub const GONE_READ: &str = "gone_read";
/// The note that clears a pending [`GONE_READ`]: the provider showed the machine again.
pub const SEEN_AGAIN: &str = "seen_again";
/// Two "gone" reads must be at least this far apart (injected clock) to close a row.
pub const GONE_CONFIRM_MS: i64 = 10_000;
/// A row with a provider id is not closed as gone sooner than this after its create: a listing
/// or a read can lag a create.
pub const CREATE_LAG_MS: i64 = 2 * 60 * 1000;
/// A row whose create answer was unclear (`unknown`, no provider id) closes as `create_failed`
/// only when its label has not been listed on reads spanning this long after the create.
pub const UNCLEAR_CREATE_MS: i64 = 30 * 60 * 1000;

/// The newest gone-read / seen-again note of a row.
fn last_gone_note(conn: &Connection, id: &str) -> Result<Option<(i64, String)>, ProviderError> {
    Ok(conn
        .query_row(
            "SELECT at_ms, detail FROM instance_events WHERE instance_id = ?1 AND detail IN (?2, ?3)
             ORDER BY at_ms DESC, rowid DESC LIMIT 1",
            params![id, GONE_READ, SEEN_AGAIN],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// The provider (asked with the row's own account key) said the machine is not there. The row
/// closes as `closed_as` only when an earlier such read, at least [`GONE_CONFIRM_MS`] before,
/// is still pending and the row is at least `lag_ms` old; otherwise the read is noted. Returns
/// whether the row is closed now. A transient error is never a gone read: callers pass only a
/// 404 / "no such instance" answer here.
pub fn gone_read(
    conn: &Connection,
    id: &str,
    closed_as: LedgerState,
    source: EventSource,
    reason: &str,
    lag_ms: i64,
    now_ms: i64,
) -> Result<bool, ProviderError> {
    let Some(row) = get(conn, id)? else {
        return Err(ProviderError::UnknownInstance(id.to_string()));
    };
    if row.closed_ms.is_some() {
        return Ok(true);
    }
    match last_gone_note(conn, id)? {
        Some((at, d)) if d == GONE_READ => {
            if now_ms - at >= GONE_CONFIRM_MS && now_ms - row.created_ms >= lag_ms {
                record(
                    conn,
                    id,
                    closed_as,
                    source,
                    Some(&format!(
                        "{reason} (confirmed by reads {} s apart)",
                        (now_ms - at) / 1000
                    )),
                    now_ms,
                )?;
                return Ok(true);
            }
            Ok(false)
        }
        _ => {
            note(conn, id, source, GONE_READ, now_ms)?;
            Ok(false)
        }
    }
}

/// The provider showed the machine: a pending gone read no longer counts.
pub fn seen(conn: &Connection, id: &str, now_ms: i64) -> Result<(), ProviderError> {
    if let Some((_, d)) = last_gone_note(conn, id)? {
        if d == GONE_READ {
            note(conn, id, EventSource::Provider, SEEN_AGAIN, now_ms)?;
        }
    }
    Ok(())
}

/// An instance the provider lists that gpurent did not start (or whose row is elsewhere).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ForeignInstance {
    pub provider: ProviderKind,
    pub account: String,
    pub instance: RemoteInstance,
    /// Still costs money (running, starting, …).
    pub billing: bool,
}

/// What one reconcile did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ReconcileReport {
    /// Ledger ids that got their provider id from the list (created, answer lost).
    pub adopted: Vec<String>,
    /// Ledger ids whose state changed.
    pub updated: Vec<String>,
    /// Ledger ids closed because their instance is gone.
    pub closed: Vec<String>,
    /// Closed ledger ids reopened because the provider lists their machine alive.
    #[serde(default)]
    pub reopened: Vec<String>,
    /// Instances the ledger does not know.
    pub foreign: Vec<ForeignInstance>,
    /// Accounts whose list could not be read: nothing was concluded for them.
    pub failed_accounts: Vec<AccountFailure>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AccountFailure {
    pub account: String,
    pub code: String,
    pub message: String,
}

/// Open rows the list did not contain, to be confirmed gone by a direct read before closing.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    pub ledger_id: String,
    pub provider_instance_id: Option<String>,
    pub created_ms: i64,
    pub state: LedgerState,
}

/// Match one account's instance list with its open ledger rows. Adoption and state updates are
/// written here; rows the list lacks are returned as [`Missing`] for the caller to confirm.
pub fn reconcile(
    conn: &Connection,
    provider: ProviderKind,
    account: &str,
    remote: &[RemoteInstance],
    now_ms: i64,
    report: &mut ReconcileReport,
) -> Result<Vec<Missing>, ProviderError> {
    // A closed row whose machine the provider lists alive is reopened first (it bills, so it
    // must be shown as billing), then reconciled like any open row.
    {
        let mut st = conn.prepare(&format!(
            "SELECT {COLS} FROM instances WHERE provider = ?1 AND account = ?2 AND closed_ms IS NOT NULL AND provider_instance_id IS NOT NULL"
        ))?;
        let closed = st
            .query_map(params![provider.as_str(), account], row)?
            .collect::<Result<Vec<_>, _>>()?;
        for c in closed {
            let Some(r) = remote
                .iter()
                .find(|r| Some(&r.id) == c.provider_instance_id.as_ref())
            else {
                continue;
            };
            if matches!(r.state, RemoteState::Terminated | RemoteState::Terminating) {
                continue;
            }
            if reopen(
                conn,
                &c.id,
                LedgerState::from_remote(r.state),
                EventSource::Reconcile,
                &format!("the provider lists it as {}", r.raw_status),
                now_ms,
            )? {
                report.reopened.push(c.id.clone());
            }
        }
    }
    let open = open_rows(conn, provider, account)?;
    let mut missing = vec![];
    let mut known_ids: std::collections::HashSet<String> = std::collections::HashSet::new();
    // Closed rows' provider ids are ours too (a terminated instance may still be listed briefly).
    {
        let mut st = conn.prepare("SELECT provider_instance_id FROM instances WHERE provider = ?1 AND account = ?2 AND provider_instance_id IS NOT NULL")?;
        for id in st.query_map(params![provider.as_str(), account], |r| {
            r.get::<_, String>(0)
        })? {
            known_ids.insert(id?);
        }
    }
    let mut matched: std::collections::HashSet<String> = std::collections::HashSet::new();
    for row in &open {
        let by_id = row
            .provider_instance_id
            .as_ref()
            .and_then(|pid| remote.iter().find(|r| &r.id == pid));
        let by_label = if row.provider_instance_id.is_none() {
            // Several instances with our label would be a double create; take the first and
            // let the rest show up as foreign so none is forgotten.
            remote
                .iter()
                .find(|r| r.label.as_deref() == Some(row.id.as_str()) && !known_ids.contains(&r.id))
        } else {
            None
        };
        match (by_id, by_label) {
            (Some(r), _) => {
                matched.insert(r.id.clone());
                seen(conn, &row.id, now_ms)?;
                let state = LedgerState::from_remote(r.state);
                if record(
                    conn,
                    &row.id,
                    state,
                    EventSource::Reconcile,
                    Some(&r.raw_status),
                    now_ms,
                )? {
                    report.updated.push(row.id.clone());
                }
            }
            (None, Some(r)) => {
                matched.insert(r.id.clone());
                known_ids.insert(r.id.clone());
                seen(conn, &row.id, now_ms)?;
                let state = LedgerState::from_remote(r.state);
                set_provider_id(
                    conn,
                    &row.id,
                    &r.id,
                    state,
                    EventSource::Reconcile,
                    &format!("adopted by label ({})", r.raw_status),
                    now_ms,
                )?;
                report.adopted.push(row.id.clone());
            }
            (None, None) => missing.push(Missing {
                ledger_id: row.id.clone(),
                provider_instance_id: row.provider_instance_id.clone(),
                created_ms: row.created_ms,
                state: row.state,
            }),
        }
    }
    for r in remote {
        if matched.contains(&r.id) || known_ids.contains(&r.id) {
            continue;
        }
        if r.state == RemoteState::Terminated {
            continue;
        }
        report.foreign.push(ForeignInstance {
            provider,
            account: account.to_string(),
            instance: r.clone(),
            billing: r.state.bills_gpu(),
        });
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::store::Store;

    fn intent() -> Intent {
        Intent {
            provider: ProviderKind::Runpod,
            account: "runpod".into(),
            offer_id: "secure:1:NVIDIA GeForce RTX 4090".into(),
            gpu: "NVIDIA GeForce RTX 4090".into(),
            gpu_count: 1,
            price_per_hour_usd: 0.44,
            disk_gb: 50,
            storage_usd_per_gb_month: None,
            image: "runpod/pytorch".into(),
        }
    }

    fn remote(id: &str, label: &str, state: RemoteState) -> RemoteInstance {
        RemoteInstance {
            provider: ProviderKind::Runpod,
            id: id.into(),
            label: Some(label.into()),
            state,
            raw_status: format!("{state:?}"),
            gpu: None,
            gpu_count: None,
            price_per_hour_usd: None,
            ssh: None,
            host_cuda: None,
        }
    }

    #[test]
    fn a_host_is_released_when_its_newest_instance_is_terminated() {
        let s = Store::open_in_memory().expect("db");
        let c = s.conn();
        assert_eq!(released_at(c, "box").expect("read"), None, "no instance");
        let old = insert_intent(c, &intent(), 1_000).expect("intent");
        set_host_label(c, &old, "box", 1_500).expect("label");
        record(
            c,
            &old,
            LedgerState::Running,
            EventSource::Provider,
            None,
            2_000,
        )
        .expect("run");
        assert_eq!(released_at(c, "box").expect("read"), None, "still exists");
        record(
            c,
            &old,
            LedgerState::Terminated,
            EventSource::Provider,
            None,
            3_000,
        )
        .expect("end");
        assert_eq!(released_at(c, "box").expect("read"), Some(3_000));
        // A newer machine tied to the same label is what counts.
        let new = insert_intent(c, &intent(), 4_000).expect("intent");
        set_host_label(c, &new, "box", 4_500).expect("label");
        record(
            c,
            &new,
            LedgerState::Running,
            EventSource::Provider,
            None,
            5_000,
        )
        .expect("run");
        assert_eq!(released_at(c, "box").expect("read"), None);
        assert_eq!(released_at(c, "other").expect("read"), None);
    }

    #[test]
    fn intent_then_id_then_states_are_all_timestamped() {
        let s = Store::open_in_memory().expect("db");
        let c = s.conn();
        let id = insert_intent(c, &intent(), 1_000).expect("intent");
        assert!(id.starts_with("gpurent-") && id.len() == 20, "{id}");
        set_provider_id(
            c,
            &id,
            "pod1",
            LedgerState::Provisioning,
            EventSource::Gpurent,
            "created",
            2_000,
        )
        .expect("pid");
        assert!(!record(
            c,
            &id,
            LedgerState::Provisioning,
            EventSource::Provider,
            None,
            2_500
        )
        .expect("same"));
        assert!(record(
            c,
            &id,
            LedgerState::Running,
            EventSource::Provider,
            None,
            3_000
        )
        .expect("run"));
        note(c, &id, EventSource::Gpurent, "ssh_ready", 3_500).expect("note");
        assert!(record(
            c,
            &id,
            LedgerState::Terminated,
            EventSource::Gpurent,
            None,
            9_000
        )
        .expect("term"));
        // A late answer after close does not reopen the row.
        assert!(!record(
            c,
            &id,
            LedgerState::Running,
            EventSource::Provider,
            None,
            9_500
        )
        .expect("late"));
        let r = get(c, &id).expect("get").expect("row");
        assert_eq!(
            (r.state, r.closed_ms, r.provider_instance_id.as_deref()),
            (LedgerState::Terminated, Some(9_000), Some("pod1"))
        );
        let ev: Vec<(i64, LedgerState)> = events(c, &id)
            .expect("ev")
            .iter()
            .map(|e| (e.at_ms, e.state))
            .collect();
        assert_eq!(
            ev,
            vec![
                (1_000, LedgerState::Intent),
                (2_000, LedgerState::Provisioning),
                (3_000, LedgerState::Running),
                (3_500, LedgerState::Running),
                (9_000, LedgerState::Terminated),
                (9_500, LedgerState::Terminated),
            ]
        );
        assert_eq!(find(c, "pod1").expect("find").map(|r| r.id), Some(id));
    }

    #[test]
    fn reconcile_adopts_by_label_updates_and_lists_foreign() {
        let s = Store::open_in_memory().expect("db");
        let c = s.conn();
        let crashed = insert_intent(c, &intent(), 1_000).expect("a");
        let known = insert_intent(c, &intent(), 1_000).expect("b");
        set_provider_id(
            c,
            &known,
            "pod-known",
            LedgerState::Provisioning,
            EventSource::Gpurent,
            "created",
            1_100,
        )
        .expect("pid");
        let gone = insert_intent(c, &intent(), 1_000).expect("c");
        set_provider_id(
            c,
            &gone,
            "pod-gone",
            LedgerState::Running,
            EventSource::Gpurent,
            "created",
            1_100,
        )
        .expect("pid");
        let never = insert_intent(c, &intent(), 1_000).expect("d");
        let list = vec![
            remote("pod-crashed", &crashed, RemoteState::Running),
            remote("pod-known", &known, RemoteState::Stopped),
            remote("pod-user", "my-own-pod", RemoteState::Running),
            remote("pod-old", "old", RemoteState::Terminated),
        ];
        let mut rep = ReconcileReport::default();
        let missing =
            reconcile(c, ProviderKind::Runpod, "runpod", &list, 5_000, &mut rep).expect("rec");
        assert_eq!(rep.adopted, vec![crashed.clone()]);
        assert_eq!(rep.updated, vec![known.clone()]);
        assert_eq!(rep.foreign.len(), 1);
        assert_eq!(rep.foreign[0].instance.id, "pod-user");
        assert!(rep.foreign[0].billing);
        let mut m: Vec<String> = missing.iter().map(|m| m.ledger_id.clone()).collect();
        m.sort();
        let mut want = vec![gone.clone(), never.clone()];
        want.sort();
        assert_eq!(m, want);
        let r = get(c, &crashed).expect("get").expect("row");
        assert_eq!(
            (r.provider_instance_id.as_deref(), r.state),
            (Some("pod-crashed"), LedgerState::Running)
        );
        // A second reconcile with the same list changes nothing and adopts nothing twice.
        let mut rep2 = ReconcileReport::default();
        reconcile(c, ProviderKind::Runpod, "runpod", &list, 6_000, &mut rep2).expect("rec2");
        assert!(
            rep2.adopted.is_empty() && rep2.updated.is_empty(),
            "{rep2:?}"
        );
    }

    /// Issue 19 ("`Terminating` closes before the provider confirms"): a machine the provider
    /// lists as terminating (or in a state gpurent does not know) keeps its row open — it may
    /// bill on, or fail to terminate; only the provider's own "terminated" closes the row.
    #[test]
    fn a_terminating_machine_keeps_its_row_open_until_terminated() {
        let s = Store::open_in_memory().expect("db");
        let c = s.conn();
        let id = insert_intent(c, &intent(), 1_000).expect("intent");
        set_provider_id(
            c,
            &id,
            "pod-1",
            LedgerState::Running,
            EventSource::Gpurent,
            "created",
            1_100,
        )
        .expect("pid");
        for (at, state) in [
            (5_000, RemoteState::Terminating),
            (6_000, RemoteState::Unknown),
            (7_000, RemoteState::Error),
        ] {
            let mut rep = ReconcileReport::default();
            let missing = reconcile(
                c,
                ProviderKind::Runpod,
                "runpod",
                &[remote("pod-1", &id, state)],
                at,
                &mut rep,
            )
            .expect("rec");
            assert!(missing.is_empty() && rep.closed.is_empty(), "{rep:?}");
            let r = get(c, &id).expect("get").expect("row");
            assert!(r.closed_ms.is_none(), "{state:?} closed the row: {r:?}");
            assert!(!r.state.is_terminal(), "{r:?}");
        }
        let mut rep = ReconcileReport::default();
        reconcile(
            c,
            ProviderKind::Runpod,
            "runpod",
            &[remote("pod-1", &id, RemoteState::Terminated)],
            8_000,
            &mut rep,
        )
        .expect("rec");
        let r = get(c, &id).expect("get").expect("row");
        assert_eq!(r.state, LedgerState::Terminated);
        assert_eq!(r.closed_ms, Some(8_000));
    }
}
