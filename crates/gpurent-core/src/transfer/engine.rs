//! Running one journalled transfer to the end: connect, run the item (file or folder, up or
//! down), and on a lost connection reconnect and resume from the last verified chunk, up to
//! `retries` times; then leave it `partial` (resumable later). Cancel and hard failures remove the
//! temporary files. A process-wide limit keeps at most [`MAX_ACTIVE`] transfers moving at once.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::infra::cancel::CancelToken;
use crate::infra::ipc::Coded;
use crate::remote::{shell_quote, Connection};
use crate::transfer::ctx::{Ctx, Journal};
use crate::transfer::journal::{self, Record};
use crate::transfer::{
    file_down, file_up, proc, tree, Direction, ItemKind, TransferError, TransferState,
    TransferSummary,
};

/// At most this many transfers move at once in this process (others wait their turn).
pub const MAX_ACTIVE: usize = 3;

static ACTIVE: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// A slot of the process-wide limit; freed on drop.
#[derive(Debug)]
pub struct Slot(());

impl Drop for Slot {
    fn drop(&mut self) {
        let mut n = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
        FREED.notify_one();
    }
}

/// Wait for a free slot (cancellable).
pub fn slot(cancel: &CancelToken) -> Result<Slot, TransferError> {
    let mut n = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    while *n >= MAX_ACTIVE {
        cancel.check()?;
        n = FREED
            .wait_timeout(n, Duration::from_millis(200))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
    *n += 1;
    Ok(Slot(()))
}

/// Transfers running in this process (journal, id), so one cannot be resumed (or discarded)
/// twice at once.
static RUNNING: Mutex<Vec<(String, i64)>> = Mutex::new(Vec::new());

/// Marks a transfer as running in this process until dropped.
#[derive(Debug)]
pub struct Running((String, i64));

impl Running {
    /// `transfer_busy` when the transfer is already running here.
    pub fn claim(journal: &dyn Journal, id: i64) -> Result<Running, TransferError> {
        let key = (journal.journal_key(), id);
        let mut r = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        if r.contains(&key) {
            return Err(TransferError::Busy { transfer_id: id });
        }
        r.push(key.clone());
        Ok(Running(key))
    }
}

/// Whether transfer `id` of `journal` is running in this process now.
pub fn is_running(journal: &dyn Journal, id: i64) -> bool {
    let key = (journal.journal_key(), id);
    RUNNING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&key)
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut r = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
        r.retain(|x| *x != self.0);
    }
}

/// Run (or resume) journalled transfer `id` to the end.
pub fn run(ctx: &Ctx<'_>, id: i64) -> Result<TransferSummary, TransferError> {
    let _running = Running::claim(ctx.journal, id)?;
    if ctx.cancel.is_cancelled() {
        return Err(stopped(ctx, id));
    }
    let _slot = slot(ctx.cancel).map_err(|_| stopped(ctx, id))?;
    let rec = ctx.j(|s| journal::require(s, id))?;
    if rec.summary.state == TransferState::Done {
        return Ok(rec.summary);
    }
    let retries = rec.options.retries.unwrap_or(3);
    let mut lost = 0u32;
    loop {
        let now = ctx.now();
        ctx.j(|s| journal::begin_attempt(s, id, now))?;
        let result = (ctx.connect)(ctx.cancel)
            .map_err(TransferError::from)
            .and_then(|conn| {
                let rec = ctx.j(|s| journal::require(s, id))?;
                let r = run_item(ctx, &conn, &rec);
                if let Err(e) = &r {
                    let keep = ctx.cancel.is_paused()
                        || e.is_link_failure()
                        || matches!(e, TransferError::AlreadyExists { .. });
                    if !keep {
                        cleanup(ctx, Some(&conn), &rec);
                    }
                }
                r
            });
        let e = match result {
            Ok(s) => return Ok(s),
            Err(e) => e,
        };
        if ctx.cancel.is_cancelled() || e.code() == "cancelled" {
            return Err(stopped(ctx, id));
        }
        let now = ctx.now();
        if e.is_link_failure() {
            let detail = e.to_string();
            ctx.j(|s| {
                journal::set_state(
                    s,
                    id,
                    TransferState::Partial,
                    Some(("connection_lost", &detail)),
                    now,
                )
            })?;
            if lost < retries {
                lost += 1;
                ctx.log(format!(
                    "connection lost ({detail}); resuming (try {lost} of {retries})"
                ));
                let wait = Duration::from_millis(250 << lost.min(4));
                std::thread::sleep(wait);
                continue;
            }
            return Err(TransferError::ConnectionLost {
                transfer_id: id,
                detail,
            });
        }
        let msg = e.to_string();
        ctx.j(|s| journal::set_state(s, id, TransferState::Failed, Some((e.code(), &msg)), now))?;
        return Err(e);
    }
}

/// The user stopped transfer `id`: a pause keeps its temporary file (state `paused`), a cancel
/// removes it (state `cancelled`). Returns the outcome to report.
fn stopped(ctx: &Ctx<'_>, id: i64) -> TransferError {
    let now = ctx.now();
    let Ok(rec) = ctx.j(|s| journal::require(s, id)) else {
        return TransferError::UnknownTransfer(id);
    };
    if ctx.cancel.is_paused() {
        let _ = ctx.j(|s| journal::set_state(s, id, TransferState::Paused, None, now));
        return TransferError::Paused { transfer_id: id };
    }
    // Never started: nothing to remove on either side.
    if rec.summary.attempts > 0 {
        cleanup(ctx, None, &rec);
    }
    let err = TransferError::cancelled();
    let msg = err.to_string();
    let _ = ctx.j(|s| {
        journal::set_state(
            s,
            id,
            TransferState::Cancelled,
            Some((err.code(), &msg)),
            now,
        )
    });
    err
}

/// Give up a transfer that is not running (paused, partial, failed or pending): remove its
/// temporary file or folder and mark it `cancelled`. A finished one is left as it is.
pub fn discard(ctx: &Ctx<'_>, id: i64) -> Result<TransferSummary, TransferError> {
    let _running = Running::claim(ctx.journal, id)?;
    let rec = ctx.j(|s| journal::require(s, id))?;
    if rec.summary.state == TransferState::Done {
        return Err(TransferError::AlreadyDone { transfer_id: id });
    }
    if rec.summary.direction == Direction::Upload && !rec.temp_path.is_empty() {
        // Connect first so that an unreachable host is reported, not silently skipped.
        let conn = (ctx.connect)(ctx.cancel)?;
        cleanup(ctx, Some(&conn), &rec);
    } else {
        cleanup(ctx, None, &rec);
    }
    let now = ctx.now();
    let err = TransferError::cancelled();
    let msg = err.to_string();
    ctx.j(|s| {
        journal::set_state(
            s,
            id,
            TransferState::Cancelled,
            Some((err.code(), &msg)),
            now,
        )
    })?;
    Ok(ctx.j(|s| journal::require(s, id))?.summary)
}

fn run_item(
    ctx: &Ctx<'_>,
    conn: &Connection,
    rec: &Record,
) -> Result<TransferSummary, TransferError> {
    match (rec.summary.direction, rec.summary.kind) {
        (Direction::Upload, ItemKind::File) => file_up::run(ctx, conn, rec),
        (Direction::Download, ItemKind::File) => file_down::run(ctx, conn, rec),
        (Direction::Upload, ItemKind::Tree) => tree::upload(ctx, conn, rec),
        (Direction::Download, ItemKind::Tree) => tree::download(ctx, conn, rec),
    }?;
    let id = rec.summary.id;
    Ok(ctx.j(|s| journal::require(s, id))?.summary)
}

/// Remove a transfer's temporary file or folder (remote for uploads, local for downloads).
pub fn cleanup(ctx: &Ctx<'_>, conn: Option<&Connection>, rec: &Record) {
    if rec.temp_path.is_empty() {
        return;
    }
    match rec.summary.direction {
        Direction::Download => {
            let p = std::path::Path::new(&rec.temp_path);
            let _ = std::fs::remove_dir_all(p).or_else(|_| std::fs::remove_file(p));
        }
        Direction::Upload => {
            let Ok(q) = shell_quote(&rec.temp_path) else {
                return;
            };
            let script = format!("rm -rf -- {q}");
            let fresh;
            let conn = match conn {
                Some(c) => c,
                None => match (ctx.connect)(&CancelToken::new()) {
                    Ok(c) => {
                        fresh = c;
                        &fresh
                    }
                    Err(_) => return,
                },
            };
            let _ = proc::run(conn, &script, None, &CancelToken::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::store::Store;

    struct J(&'static str);
    impl Journal for J {
        fn with_journal(
            &self,
            _f: &mut dyn FnMut(&Store) -> Result<(), TransferError>,
        ) -> Result<(), TransferError> {
            Ok(())
        }
        fn journal_now_ms(&self) -> i64 {
            0
        }
        fn journal_key(&self) -> String {
            self.0.into()
        }
    }

    #[test]
    fn a_transfer_runs_once_at_a_time_per_journal() {
        let (a, b) = (J("a.sqlite3"), J("b.sqlite3"));
        let first = Running::claim(&a, 7).expect("free");
        let again = Running::claim(&a, 7).expect_err("busy");
        assert_eq!(again.code(), "transfer_busy");
        let other_journal = Running::claim(&b, 7).expect("ids are per journal");
        assert!(is_running(&a, 7) && !is_running(&a, 8));
        drop(first);
        assert!(!is_running(&a, 7));
        let _after = Running::claim(&a, 7).expect("released on drop");
        drop(other_journal);
    }
}
