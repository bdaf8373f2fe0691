//! Transfers on the [`App`] facade, by host label: put, get, resume, the journal, a pre-flight
//! scan of local folders, and the remote file pane (list, mkdir, rename, delete). Put, get and
//! resume are registered operations (`Started{op_id}` first, cancellable by id, recorded). The key
//! comes from the keychain (`host_key_for`), or is passed in (`*_as`, e.g. the CLI's
//! `--identity`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::events::ProgressSink;
use crate::infra::ipc::Coded;
use crate::infra::store::Store;
use crate::remote::{shell_quote, Connection, Host, RemoteError};
use crate::transfer::ctx::{self, Ctx, Journal};
use crate::transfer::engine;
use crate::transfer::journal::{self, NewTransfer};
use crate::transfer::meter::Meter;
use crate::transfer::{
    base_name, proc, remote_dir, remote_fs, remote_join, scan, temp_name, Direction, ItemKind,
    RemoteListing, ScanReport, TransferError, TransferOptions, TransferReport, TransferState,
    TransferSummary,
};

impl Journal for App {
    fn with_journal(
        &self,
        f: &mut dyn FnMut(&Store) -> Result<(), TransferError>,
    ) -> Result<(), TransferError> {
        let mut r = Ok(());
        self.with_store(|s| {
            r = f(s);
            Ok(())
        })?;
        r
    }
    fn journal_now_ms(&self) -> i64 {
        self.now_ms()
    }
    fn journal_key(&self) -> String {
        self.paths().database().to_string_lossy().into_owned()
    }
}

/// How to reach a saved host for one put/get/resume. A connection opened for a first step (the
/// `mkdir -p`, the downloads' stat) is kept and handed to the first transfer instead of opening
/// another: a connection costs a TCP + SSH handshake and login (~50 ms on loopback, several round
/// trips on a long link).
struct Login<'a> {
    host: &'a Host,
    env: &'a SshEnv,
    key: &'a LoginKey,
    spare: std::sync::Mutex<Option<Connection>>,
}

impl<'a> Login<'a> {
    fn new(host: &'a Host, env: &'a SshEnv, key: &'a LoginKey) -> Self {
        Login {
            host,
            env,
            key,
            spare: std::sync::Mutex::new(None),
        }
    }

    /// The kept connection if there is one, else a new one.
    fn connect(&self, cancel: &CancelToken) -> Result<Connection, RemoteError> {
        let kept = self.spare.lock().ok().and_then(|mut s| s.take());
        match kept {
            Some(c) => Ok(c),
            None => connect_saved(self.host, self.env, self.key, cancel),
        }
    }

    /// Keep a connection for the next step.
    fn keep(&self, conn: Connection) {
        if let Ok(mut s) = self.spare.lock() {
            *s = Some(conn);
        }
    }

    /// `mkdir -p` on the host (the folder an upload goes into).
    fn make_dir(&self, dir: &str, cancel: &CancelToken) -> Result<(), TransferError> {
        let conn = self.connect(cancel)?;
        let q = shell_quote(dir)?;
        let script = format!("mkdir -p -- {q}");
        proc::run_ok(&conn, "mkdir", dir, &script, None, cancel)?;
        self.keep(conn);
        Ok(())
    }
}

/// The key to log in with: given by the caller, or loaded from the keychain for the host.
enum KeyRef<'a> {
    Given(&'a LoginKey),
    Loaded(LoginKey),
}

impl std::ops::Deref for KeyRef<'_> {
    type Target = LoginKey;
    fn deref(&self) -> &LoginKey {
        match self {
            KeyRef::Given(k) => k,
            KeyRef::Loaded(k) => k,
        }
    }
}

impl App {
    /// The saved host and the key to log in to it with (`key`, or the host's keychain key).
    fn host_and_key<'a>(
        &self,
        label: &str,
        key: Option<&'a LoginKey>,
    ) -> Result<(Host, KeyRef<'a>), TransferError> {
        let host = self.host_get(label)?;
        let key = match key {
            Some(k) => KeyRef::Given(k),
            None => KeyRef::Loaded(self.host_key_for(label, None)?),
        };
        Ok((host, key))
    }

    #[allow(clippy::too_many_arguments)]
    /// Run journalled transfers one after the other (each holds one of the process-wide slots);
    /// the first error is returned after all ran.
    fn run_transfers(
        &self,
        login: &Login<'_>,
        ids: &[i64],
        meter: &Meter<'_>,
        cancel: &CancelToken,
        t0: Instant,
    ) -> Result<TransferReport, TransferError> {
        let connect = |c: &CancelToken| login.connect(c);
        let ctx = Ctx {
            connect: &connect,
            journal: self,
            meter,
            cancel,
        };
        let mut out = Vec::new();
        let mut first_err = None;
        // After a pause or cancel each remaining transfer returns at once, marked the same way.
        for id in ids {
            match engine::run(&ctx, *id) {
                Ok(s) => out.push(s),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        meter.emit(true);
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok(TransferReport {
            transfers: out,
            wire_bytes: meter.wire_bytes(),
            elapsed_ms: t0.elapsed().as_millis() as u64,
        })
    }

    /// Upload files and folders into `remote_dir` (created if missing) on a saved host.
    pub fn transfer_put(
        &self,
        label: &str,
        locals: &[PathBuf],
        remote_dir: &str,
        opts: &TransferOptions,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError> {
        self.transfer_put_with_key(label, None, locals, remote_dir, opts, env, progress)
    }

    /// [`App::transfer_put`] with a given key instead of the host's key from the keychain.
    #[allow(clippy::too_many_arguments)]
    pub fn transfer_put_with_key(
        &self,
        label: &str,
        key: Option<&LoginKey>,
        locals: &[PathBuf],
        remote_dir_in: &str,
        opts: &TransferOptions,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError> {
        self.run_op("transfer_put", progress, |cancel| {
            let t0 = Instant::now();
            let (host, key) = self.host_and_key(label, key)?;
            let login = Login::new(&host, env, &key);
            if locals.is_empty() {
                return Err(TransferError::invalid("locals", "nothing to upload"));
            }
            let meter = Meter::new(progress);
            let mut items = Vec::new();
            for typed in locals {
                let l = &crate::infra::paths::expand_user(typed);
                let meta = std::fs::metadata(l).map_err(|e| TransferError::local(l, &e))?;
                let name = l
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(base_name)
                    .ok_or_else(|| {
                        TransferError::invalid(
                            "locals",
                            format!("{} has no usable name", l.display()),
                        )
                    })?
                    .to_string();
                let (kind, size, files) = if meta.is_dir() {
                    let entries = scan::walk(l, &opts.excludes)?;
                    let f: Vec<_> = entries
                        .iter()
                        .filter(|e| e.kind == scan::EntryKind::File)
                        .collect();
                    (
                        ItemKind::Tree,
                        f.iter().map(|e| e.size).sum(),
                        f.len() as u64,
                    )
                } else {
                    (ItemKind::File, meta.len(), 1)
                };
                items.push((l.clone(), name, kind, size, files));
            }
            let dir = remote_dir(remote_dir_in);
            let mut ids = Vec::new();
            for (l, name, kind, size, files) in &items {
                meter.add_total(Some(*size), *files);
                let local = std::path::absolute(l).unwrap_or_else(|_| l.clone());
                let fin = remote_join(&dir, name);
                let now = self.now_ms();
                let id = self.with_journal_t(|s| {
                    journal::create(
                        s,
                        &NewTransfer {
                            host_label: label,
                            direction: Direction::Upload,
                            kind: *kind,
                            local_path: &local.to_string_lossy(),
                            remote_path: &fin,
                            options: opts,
                            total_bytes: Some(*size),
                            files_total: *files,
                            source_size: None,
                            source_mtime_ms: None,
                        },
                        now,
                        |id| remote_join(&dir, &temp_name(name, id)),
                    )
                })?;
                ids.push(id);
            }
            // The journal has every item before the first remote step, so a pause or cancel
            // from here on is recorded on each of them (by `run_transfers`).
            if !dir.is_empty() && !cancel.is_cancelled() {
                if let Err(e) = login.make_dir(&dir, cancel) {
                    if !cancel.is_cancelled() {
                        let (now, msg) = (self.now_ms(), e.to_string());
                        self.with_journal_t(|s| {
                            for id in &ids {
                                journal::set_state(
                                    s,
                                    *id,
                                    TransferState::Failed,
                                    Some((e.code(), &msg)),
                                    now,
                                )?;
                            }
                            Ok(())
                        })?;
                        return Err(e);
                    }
                }
            }
            self.run_transfers(&login, &ids, &meter, cancel, t0)
        })
    }

    /// Download remote files and folders into `local_dir` (created if missing).
    pub fn transfer_get(
        &self,
        label: &str,
        remotes: &[String],
        local_dir: &Path,
        opts: &TransferOptions,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError> {
        self.transfer_get_with_key(label, None, remotes, local_dir, opts, env, progress)
    }

    /// [`App::transfer_get`] with a given key.
    #[allow(clippy::too_many_arguments)]
    pub fn transfer_get_with_key(
        &self,
        label: &str,
        key: Option<&LoginKey>,
        remotes: &[String],
        local_dir: &Path,
        opts: &TransferOptions,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError> {
        self.run_op("transfer_get", progress, |cancel| {
            let t0 = Instant::now();
            let (host, key) = self.host_and_key(label, key)?;
            let key = &*key;
            if remotes.is_empty() {
                return Err(TransferError::invalid("remotes", "nothing to download"));
            }
            let local_dir = &crate::infra::paths::expand_user(local_dir);
            std::fs::create_dir_all(local_dir).map_err(|e| TransferError::local(local_dir, &e))?;
            let local_dir =
                std::path::absolute(local_dir).unwrap_or_else(|_| local_dir.to_path_buf());
            let meter = Meter::new(progress);
            let login = Login::new(&host, env, key);
            let conn = login.connect(cancel)?;
            let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
            let mut ids = Vec::new();
            for r in remotes {
                let src = remote_dir(r);
                let name = crate::transfer::download_name(&src)?;
                let st = sftp
                    .stat(Path::new(&src))
                    .map_err(|e| crate::transfer::sftp::sftp_error(&e, &src))?;
                let kind = if st.is_dir() {
                    ItemKind::Tree
                } else {
                    ItemKind::File
                };
                let size = (kind == ItemKind::File).then(|| st.size.unwrap_or(0));
                meter.add_total(size, u64::from(kind == ItemKind::File));
                let fin = local_dir.join(&name);
                let now = self.now_ms();
                let id = self.with_journal_t(|s| {
                    journal::create(
                        s,
                        &NewTransfer {
                            host_label: label,
                            direction: Direction::Download,
                            kind,
                            local_path: &fin.to_string_lossy(),
                            remote_path: &src,
                            options: opts,
                            total_bytes: size,
                            files_total: u64::from(kind == ItemKind::File),
                            source_size: size,
                            source_mtime_ms: None,
                        },
                        now,
                        |id| {
                            local_dir
                                .join(temp_name(&name, id))
                                .to_string_lossy()
                                .into_owned()
                        },
                    )
                })?;
                ids.push(id);
            }
            drop(sftp);
            login.keep(conn);
            self.run_transfers(&login, &ids, &meter, cancel, t0)
        })
    }

    /// Continue a transfer from its last verified chunk (after a cut, a restart or a sleep).
    pub fn transfer_resume(
        &self,
        id: i64,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError> {
        self.transfer_resume_with_key(id, None, env, progress)
    }

    /// [`App::transfer_resume`] with a given key.
    pub fn transfer_resume_with_key(
        &self,
        id: i64,
        key: Option<&LoginKey>,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError> {
        self.run_op("transfer_resume", progress, |cancel| {
            let t0 = Instant::now();
            let rec = self.with_journal_t(|s| journal::require(s, id))?;
            let label = rec.summary.host_label.as_str();
            let (host, key) = self.host_and_key(label, key)?;
            let login = Login::new(&host, env, &key);
            let meter = Meter::new(progress);
            meter.add_total(rec.summary.total_bytes, rec.summary.files_total);
            // The folder may not exist yet (paused before the first byte) or any more.
            let parent = rec.summary.remote_path.rsplit_once('/').map(|(p, _)| p);
            let unfinished = rec.summary.state != TransferState::Done;
            if let (Direction::Upload, Some(dir), true) =
                (rec.summary.direction, parent, unfinished)
            {
                if !dir.is_empty() && !cancel.is_cancelled() {
                    login.make_dir(dir, cancel)?;
                }
            }
            self.run_transfers(&login, &[id], &meter, cancel, t0)
        })
    }

    /// Give up a paused, partial or failed transfer: its temporary file or folder is removed
    /// (on the host for uploads) and it is marked `cancelled`. A running one is `transfer_busy`
    /// (pause or cancel it first); a finished one `transfer_done`.
    pub fn transfer_discard(
        &self,
        id: i64,
        env: &SshEnv,
    ) -> Result<TransferSummary, TransferError> {
        self.transfer_discard_with_key(id, None, env)
    }

    /// [`App::transfer_discard`] with a given key.
    pub fn transfer_discard_with_key(
        &self,
        id: i64,
        key: Option<&LoginKey>,
        env: &SshEnv,
    ) -> Result<TransferSummary, TransferError> {
        let rec = self.with_journal_t(|s| journal::require(s, id))?;
        let label = rec.summary.host_label.as_str();
        // A download's temporary file is here: no host needed to remove it.
        let login = if rec.summary.direction == Direction::Upload {
            Some(self.host_and_key(label, key)?)
        } else {
            None
        };
        let connect = |c: &CancelToken| match &login {
            Some((h, k)) => connect_saved(h, env, k, c),
            None => Err(RemoteError::Core(crate::infra::error::CoreError::invalid(
                "host",
                "not needed for a download",
            ))),
        };
        let sink = crate::infra::events::NoProgress;
        let meter = Meter::new(&sink);
        let cancel = CancelToken::new();
        let ctx = Ctx {
            connect: &connect,
            journal: self,
            meter: &meter,
            cancel: &cancel,
        };
        engine::discard(&ctx, id)
    }

    /// The journal, newest first (one host, or all).
    pub fn transfer_list(
        &self,
        label: Option<&str>,
    ) -> Result<Vec<TransferSummary>, TransferError> {
        let mut list = self.with_journal_t(|s| journal::list(s, label))?;
        for t in &mut list {
            t.running = engine::is_running(self, t.id);
        }
        Ok(list)
    }

    /// What uploading these paths would send, and what looks unintended (`.git`,
    /// `node_modules`, virtualenvs, caches, huge files), before anything is sent.
    pub fn transfer_scan_local(
        &self,
        paths: &[PathBuf],
        excludes: &[String],
    ) -> Result<ScanReport, TransferError> {
        let paths: Vec<PathBuf> = paths
            .iter()
            .map(|p| crate::infra::paths::expand_user(p))
            .collect();
        scan::scan(&paths, excludes)
    }

    fn with_journal_t<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, TransferError>,
    ) -> Result<T, TransferError> {
        ctx::on_journal(self, f)
    }

    fn with_remote<T>(
        &self,
        label: &str,
        key: Option<&LoginKey>,
        env: &SshEnv,
        f: impl FnOnce(&Connection, &CancelToken) -> Result<T, TransferError>,
    ) -> Result<T, TransferError> {
        let (host, key) = self.host_and_key(label, key)?;
        let cancel = CancelToken::new();
        let conn = connect_saved(&host, env, &key, &cancel)?;
        f(&conn, &cancel)
    }

    /// A remote folder's entries (`""`/`~` is the login folder).
    pub fn remote_ls(
        &self,
        label: &str,
        dir: &str,
        env: &SshEnv,
    ) -> Result<RemoteListing, TransferError> {
        self.remote_ls_with_key(label, None, dir, env)
    }

    pub fn remote_ls_with_key(
        &self,
        label: &str,
        key: Option<&LoginKey>,
        dir: &str,
        env: &SshEnv,
    ) -> Result<RemoteListing, TransferError> {
        self.with_remote(label, key, env, |c, _| remote_fs::ls(c, dir))
    }

    /// Create one remote folder (its parent must exist).
    pub fn remote_mkdir(&self, label: &str, path: &str, env: &SshEnv) -> Result<(), TransferError> {
        self.with_remote(label, None, env, |c, _| remote_fs::mkdir(c, path))
    }

    /// Rename a remote file or folder (never over an existing name).
    pub fn remote_rename(
        &self,
        label: &str,
        from: &str,
        to: &str,
        env: &SshEnv,
    ) -> Result<(), TransferError> {
        self.with_remote(label, None, env, |c, _| remote_fs::rename(c, from, to))
    }

    /// Delete a remote file, link or empty folder; a folder with contents only with `recursive`
    /// (the UI asks first). The login folder, its parents and `/` are refused.
    pub fn remote_delete(
        &self,
        label: &str,
        path: &str,
        recursive: bool,
        env: &SshEnv,
    ) -> Result<(), TransferError> {
        self.with_remote(label, None, env, |c, cancel| {
            remote_fs::delete(c, path, recursive, cancel)
        })
    }
}
