//! The transfer journal in SQLite (migration "transfers" in `store.rs`): one row per transfer
//! (file or folder) and, for files, one row per chunk with the SHA-256 of its source bytes and
//! whether it was sent or verified on the other side. Resume reads it back.

use rusqlite::{params, OptionalExtension, Row};

use crate::infra::store::Store;
use crate::transfer::{
    Direction, ItemKind, TransferError, TransferOptions, TransferState, TransferSummary,
};

/// A journal row with what resuming needs beyond the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub summary: TransferSummary,
    /// Remote temp path for uploads, local temp path for downloads.
    pub temp_path: String,
    pub options: TransferOptions,
    /// Upload source's size and mtime when it started (a changed source restarts).
    pub source_size: Option<u64>,
    pub source_mtime_ms: Option<i64>,
}

/// What a new transfer starts with.
#[derive(Debug, Clone)]
pub struct NewTransfer<'a> {
    pub host_label: &'a str,
    pub direction: Direction,
    pub kind: ItemKind,
    pub local_path: &'a str,
    pub remote_path: &'a str,
    pub options: &'a TransferOptions,
    pub total_bytes: Option<u64>,
    pub files_total: u64,
    pub source_size: Option<u64>,
    pub source_mtime_ms: Option<i64>,
}

/// A chunk of a file transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub idx: u64,
    pub offset: u64,
    pub len: u64,
    /// SHA-256 (hex) of the source bytes, once read.
    pub sha256: Option<String>,
    pub state: ChunkState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkState {
    Pending,
    /// Handed to the connection; not yet checked on the other side.
    Sent,
    /// Its hash on the other side equals the source's.
    Verified,
}

fn s_dir(d: Direction) -> &'static str {
    match d {
        Direction::Upload => "upload",
        Direction::Download => "download",
    }
}
fn s_kind(k: ItemKind) -> &'static str {
    match k {
        ItemKind::File => "file",
        ItemKind::Tree => "tree",
    }
}
pub(crate) fn s_state(s: TransferState) -> &'static str {
    match s {
        TransferState::Pending => "pending",
        TransferState::Partial => "partial",
        TransferState::Done => "done",
        TransferState::Failed => "failed",
        TransferState::Cancelled => "cancelled",
        TransferState::Paused => "paused",
    }
}
fn p_state(s: &str) -> TransferState {
    match s {
        "partial" => TransferState::Partial,
        "done" => TransferState::Done,
        "failed" => TransferState::Failed,
        "cancelled" => TransferState::Cancelled,
        "paused" => TransferState::Paused,
        _ => TransferState::Pending,
    }
}

const COLS: &str = "id, host_label, direction, kind, local_path, remote_path, state, total_bytes,
    done_bytes, files_total, files_done, sha256, verified, attempts, error_code, error_message,
    created_ms, updated_ms, temp_path, options_json, source_size, source_mtime_ms";

fn u(v: Option<i64>) -> Option<u64> {
    v.map(|x| x.max(0) as u64)
}

fn record(r: &Row<'_>) -> rusqlite::Result<Record> {
    let opts: String = r.get(19)?;
    Ok(Record {
        summary: TransferSummary {
            id: r.get(0)?,
            host_label: r.get(1)?,
            direction: if r.get::<_, String>(2)? == "download" {
                Direction::Download
            } else {
                Direction::Upload
            },
            kind: if r.get::<_, String>(3)? == "tree" {
                ItemKind::Tree
            } else {
                ItemKind::File
            },
            local_path: r.get(4)?,
            remote_path: r.get(5)?,
            state: p_state(&r.get::<_, String>(6)?),
            running: false,
            total_bytes: u(r.get(7)?),
            done_bytes: r.get::<_, i64>(8)?.max(0) as u64,
            files_total: r.get::<_, i64>(9)?.max(0) as u64,
            files_done: r.get::<_, i64>(10)?.max(0) as u64,
            sha256: r.get(11)?,
            verified: r.get::<_, i64>(12)? != 0,
            attempts: r.get::<_, i64>(13)?.max(0) as u32,
            error_code: r.get(14)?,
            error_message: r.get(15)?,
            created_ms: r.get(16)?,
            updated_ms: r.get(17)?,
        },
        temp_path: r.get(18)?,
        options: serde_json::from_str(&opts).unwrap_or_default(),
        source_size: u(r.get(20)?),
        source_mtime_ms: r.get(21)?,
    })
}

/// Record a new transfer (state `pending`) and return its id; its temporary path is `temp(id)`
/// (the name contains the id).
pub fn create(
    store: &Store,
    t: &NewTransfer<'_>,
    now_ms: i64,
    temp: impl FnOnce(i64) -> String,
) -> Result<i64, TransferError> {
    let opts = serde_json::to_string(t.options).unwrap_or_else(|_| "{}".into());
    store.conn().execute(
        "INSERT INTO transfers (host_label, direction, kind, local_path, remote_path, state,
            total_bytes, done_bytes, files_total, files_done, verified, attempts, created_ms,
            updated_ms, temp_path, options_json, source_size, source_mtime_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, 0, ?7, 0, 0, 0, ?8, ?8, '', ?9, ?10, ?11)",
        params![
            t.host_label,
            s_dir(t.direction),
            s_kind(t.kind),
            t.local_path,
            t.remote_path,
            t.total_bytes.map(|b| b as i64),
            t.files_total as i64,
            now_ms,
            opts,
            t.source_size.map(|b| b as i64),
            t.source_mtime_ms,
        ],
    )?;
    let id = store.conn().last_insert_rowid();
    set_temp_path(store, id, &temp(id))?;
    Ok(id)
}

fn set_temp_path(store: &Store, id: i64, temp: &str) -> Result<(), TransferError> {
    store.conn().execute(
        "UPDATE transfers SET temp_path = ?2 WHERE id = ?1",
        params![id, temp],
    )?;
    Ok(())
}

pub fn get(store: &Store, id: i64) -> Result<Option<Record>, TransferError> {
    Ok(store
        .conn()
        .query_row(
            &format!("SELECT {COLS} FROM transfers WHERE id = ?1"),
            [id],
            record,
        )
        .optional()?)
}

pub fn require(store: &Store, id: i64) -> Result<Record, TransferError> {
    get(store, id)?.ok_or(TransferError::UnknownTransfer(id))
}

/// Newest first; all hosts when `host_label` is `None`.
pub fn list(
    store: &Store,
    host_label: Option<&str>,
) -> Result<Vec<TransferSummary>, TransferError> {
    let mut st = store.conn().prepare(&format!(
        "SELECT {COLS} FROM transfers WHERE ?1 IS NULL OR host_label = ?1 ORDER BY id DESC"
    ))?;
    let rows = st
        .query_map([host_label], record)?
        .map(|r| r.map(|x| x.summary))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Move to a state; an error code/message is kept (or cleared with `None`).
pub fn set_state(
    store: &Store,
    id: i64,
    state: TransferState,
    error: Option<(&str, &str)>,
    now_ms: i64,
) -> Result<(), TransferError> {
    store.conn().execute(
        "UPDATE transfers SET state = ?2, error_code = ?3, error_message = ?4, updated_ms = ?5
         WHERE id = ?1",
        params![
            id,
            s_state(state),
            error.map(|e| e.0),
            error.map(|e| e.1),
            now_ms
        ],
    )?;
    Ok(())
}

/// Count a (re)start; a paused or failed transfer is moving again (`partial`).
pub fn begin_attempt(store: &Store, id: i64, now_ms: i64) -> Result<(), TransferError> {
    store.conn().execute(
        "UPDATE transfers SET attempts = attempts + 1, updated_ms = ?2,
            state = CASE WHEN state IN ('paused', 'failed') THEN 'partial' ELSE state END
         WHERE id = ?1",
        params![id, now_ms],
    )?;
    Ok(())
}

pub fn set_progress(
    store: &Store,
    id: i64,
    done_bytes: u64,
    files_done: u64,
    now_ms: i64,
) -> Result<(), TransferError> {
    store.conn().execute(
        "UPDATE transfers SET done_bytes = ?2, files_done = ?3, updated_ms = ?4,
            state = CASE WHEN state = 'pending' AND ?2 > 0 THEN 'partial' ELSE state END
         WHERE id = ?1",
        params![id, done_bytes as i64, files_done as i64, now_ms],
    )?;
    Ok(())
}

pub fn set_totals(
    store: &Store,
    id: i64,
    total_bytes: Option<u64>,
    files_total: u64,
) -> Result<(), TransferError> {
    store.conn().execute(
        "UPDATE transfers SET total_bytes = ?2, files_total = ?3 WHERE id = ?1",
        params![id, total_bytes.map(|b| b as i64), files_total as i64],
    )?;
    Ok(())
}

/// Mark done and verified with the final hash.
pub fn finish(store: &Store, id: i64, sha256: &str, now_ms: i64) -> Result<(), TransferError> {
    store.conn().execute(
        "UPDATE transfers SET state = 'done', verified = 1, sha256 = ?2, error_code = NULL,
            error_message = NULL, done_bytes = COALESCE(total_bytes, done_bytes),
            files_done = files_total, updated_ms = ?3
         WHERE id = ?1",
        params![id, sha256, now_ms],
    )?;
    Ok(())
}

// ---- chunks ----

/// Lay out the chunks of a `size`-byte file (replacing any previous layout).
pub fn chunks_init(store: &Store, id: i64, size: u64, chunk: u64) -> Result<(), TransferError> {
    let conn = store.conn();
    conn.execute("DELETE FROM transfer_chunks WHERE transfer_id = ?1", [id])?;
    let chunk = chunk.max(1);
    let n = size.div_ceil(chunk).max(1);
    let mut st = conn.prepare(
        "INSERT INTO transfer_chunks (transfer_id, idx, offset, len, state)
         VALUES (?1, ?2, ?3, ?4, 'pending')",
    )?;
    conn.execute_batch("SAVEPOINT chunks")?;
    for i in 0..n {
        let off = i * chunk;
        st.execute(params![
            id,
            i as i64,
            off as i64,
            chunk.min(size - off.min(size)) as i64
        ])?;
    }
    conn.execute_batch("RELEASE chunks")?;
    Ok(())
}

pub fn chunks(store: &Store, id: i64) -> Result<Vec<Chunk>, TransferError> {
    let mut st = store.conn().prepare(
        "SELECT idx, offset, len, sha256, state FROM transfer_chunks WHERE transfer_id = ?1
         ORDER BY idx",
    )?;
    let rows = st
        .query_map([id], |r| {
            Ok(Chunk {
                idx: r.get::<_, i64>(0)? as u64,
                offset: r.get::<_, i64>(1)? as u64,
                len: r.get::<_, i64>(2)? as u64,
                sha256: r.get(3)?,
                state: match r.get::<_, String>(4)?.as_str() {
                    "sent" => ChunkState::Sent,
                    "verified" => ChunkState::Verified,
                    _ => ChunkState::Pending,
                },
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

pub fn chunk_set(
    store: &Store,
    id: i64,
    idx: u64,
    state: ChunkState,
    sha256: Option<&str>,
) -> Result<(), TransferError> {
    let s = match state {
        ChunkState::Pending => "pending",
        ChunkState::Sent => "sent",
        ChunkState::Verified => "verified",
    };
    store.conn().execute(
        "UPDATE transfer_chunks SET state = ?3, sha256 = COALESCE(?4, sha256)
         WHERE transfer_id = ?1 AND idx = ?2",
        params![id, idx as i64, s, sha256],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_and_its_chunks_round_trip() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = Store::open(&tmp.path().join("db.sqlite")).expect("open");
        let opts = TransferOptions::default();
        let id = create(
            &store,
            &NewTransfer {
                host_label: "box",
                direction: Direction::Upload,
                kind: ItemKind::File,
                local_path: "/l/a.bin",
                remote_path: "data/a.bin",
                options: &opts,
                total_bytes: Some(10),
                files_total: 1,
                source_size: Some(10),
                source_mtime_ms: Some(5),
            },
            100,
            |id| format!("data/.a.bin.gpurent-{id}.part"),
        )
        .expect("create");
        chunks_init(&store, id, 10, 4).expect("chunks");
        let c = chunks(&store, id).expect("chunks");
        assert_eq!(
            c.iter().map(|c| (c.offset, c.len)).collect::<Vec<_>>(),
            vec![(0, 4), (4, 4), (8, 2)]
        );
        chunk_set(&store, id, 1, ChunkState::Sent, Some("ab")).expect("set");
        assert_eq!(chunks(&store, id).expect("c")[1].state, ChunkState::Sent);
        set_progress(&store, id, 4, 0, 200).expect("progress");
        let r = require(&store, id).expect("get");
        assert_eq!(r.summary.state, TransferState::Partial);
        assert_eq!(r.temp_path, "data/.a.bin.gpurent-1.part");
        finish(&store, id, "ff", 300).expect("finish");
        let s = &list(&store, Some("box")).expect("list")[0];
        assert_eq!(
            (s.state, s.done_bytes, s.verified),
            (TransferState::Done, 10, true)
        );
        assert!(list(&store, Some("other")).expect("list").is_empty());
        assert!(matches!(
            require(&store, 99),
            Err(TransferError::UnknownTransfer(99))
        ));
    }
}
