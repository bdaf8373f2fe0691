//! Running one journalled transfer to the end: connect, run the item (file or folder, up or
//! down), and on a lost connection reconnect and resume from the last verified chunk, up to
//! `retries` times; then leave it `partial` (resumable later). Cancel and hard failures remove the
//! temporary files. A process-wide limit keeps at most [`MAX_ACTIVE`] transfers moving at once.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::error::Coded;
use crate::remote::{shell_quote, Connection, RemoteError};
use crate::store::Store;
use crate::transfer::journal::{self, Record};
use crate::transfer::meter::Meter;
use crate::transfer::{
    file_down, file_up, proc, tree, Direction, ItemKind, TransferError, TransferState,
    TransferSummary,
};

/// Opens a fresh, logged-in connection to the transfer's host.
pub type Connector<'a> = dyn Fn(&CancelToken) -> Result<Connection, RemoteError> + Sync + 'a;

/// Where the journal lives (the App's store) and the injected clock.
pub trait Journal: Sync {
    fn with_journal(
        &self,
        f: &mut dyn FnMut(&Store) -> Result<(), TransferError>,
    ) -> Result<(), TransferError>;
    fn journal_now_ms(&self) -> i64;
    /// Which journal this is (its database file): transfer ids are unique only within one.
    fn journal_key(&self) -> String;
}

/// Everything a running transfer needs.
pub struct Ctx<'a> {
    pub connect: &'a Connector<'a>,
    pub journal: &'a dyn Journal,
    pub meter: &'a Meter<'a>,
    pub cancel: &'a CancelToken,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").finish()
    }
}

/// Run `f` on a journal's store and return its value (the typed face of
/// [`Journal::with_journal`], whose callback is object-safe and returns nothing).
pub fn on_journal<T>(
    journal: &dyn Journal,
    f: impl FnOnce(&Store) -> Result<T, TransferError>,
) -> Result<T, TransferError> {
    let mut f = Some(f);
    let mut out = None;
    journal.with_journal(&mut |s| {
        if let Some(f) = f.take() {
            out = Some(f(s)?);
        }
        Ok(())
    })?;
    out.ok_or_else(|| TransferError::invalid("journal", "not reached"))
}

impl Ctx<'_> {
    /// Run `f` on the journal's store.
    pub fn j<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, TransferError>,
    ) -> Result<T, TransferError> {
        on_journal(self.journal, f)
    }

    pub fn now(&self) -> i64 {
        self.journal.journal_now_ms()
    }

    pub fn log(&self, line: impl Into<String>) {
        self.meter.log(line.into());
    }
}

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

/// Put a finished temp file/folder under its final remote name. `overwrite`: replace what is
/// there (a file atomically; a folder is moved aside, the new one moved in, the old removed).
pub fn place_remote(
    conn: &Connection,
    tmp: &str,
    fin: &str,
    overwrite: bool,
    cancel: &CancelToken,
) -> Result<(), TransferError> {
    let (t, f) = (shell_quote(tmp)?, shell_quote(fin)?);
    let o = shell_quote(&format!("{tmp}.old"))?;
    let ow = if overwrite { 1 } else { 0 };
    let script = format!(
        "T={t}; F={f}; O={o}\n\
         if [ -L \"$F\" ]; then [ {ow} = 1 ] || exit 4; rm -f -- \"$F\" || exit 3\n\
         elif [ -d \"$F\" ]; then [ {ow} = 1 ] || exit 4; mv -- \"$F\" \"$O\" || exit 3\n\
         elif [ -e \"$F\" ]; then [ {ow} = 1 ] || exit 4; if [ -d \"$T\" ]; then mv -- \"$F\" \"$O\" || exit 3; fi\n\
         fi\n\
         mv -f -- \"$T\" \"$F\" && rm -rf -- \"$O\""
    );
    let out = proc::run(conn, &script, None, cancel)?;
    match out.status {
        Some(0) => Ok(()),
        Some(4) => Err(TransferError::AlreadyExists { path: fin.into() }),
        _ => Err(TransferError::from_stderr("rename", fin, &out.stderr)),
    }
}

/// Whether a remote path exists (a dangling link counts).
pub fn remote_exists(conn: &Connection, path: &str) -> Result<bool, TransferError> {
    let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
    match sftp.lstat(std::path::Path::new(path)) {
        Ok(_) => Ok(true),
        Err(e) => match e.code() {
            ssh2::ErrorCode::SFTP(2) => Ok(false),
            _ => Err(sftp_error(&e, path)),
        },
    }
}

/// An SFTP status into an outcome (a dead link stays resumable).
pub fn sftp_error(e: &ssh2::Error, path: &str) -> TransferError {
    match e.code() {
        ssh2::ErrorCode::SFTP(2) => TransferError::RemoteFileMissing { path: path.into() },
        ssh2::ErrorCode::SFTP(3) => TransferError::PermissionDenied {
            path: path.into(),
            detail: e.to_string(),
        },
        ssh2::ErrorCode::SFTP(14) | ssh2::ErrorCode::SFTP(15) => TransferError::RemoteDiskFull {
            path: path.into(),
            detail: e.to_string(),
        },
        ssh2::ErrorCode::SFTP(_) => TransferError::RemoteCommandFailed {
            what: "sftp".into(),
            detail: format!("{path}: {e}"),
        },
        ssh2::ErrorCode::Session(_) => TransferError::ssh(e),
    }
}

/// An I/O error from an SFTP file: its ssh2 error when it carries one.
pub fn sftp_io_error(e: &std::io::Error, path: &str) -> TransferError {
    match e.get_ref().and_then(|i| i.downcast_ref::<ssh2::Error>()) {
        Some(se) => sftp_error(se, path),
        None => proc::io_lost(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
