//! `gpurent put|get|transfers|resume|discard`: move files to and from a saved host
//! (docs/transfer.md). On a terminal a progress bar goes to stderr; with `--json`, stdout carries
//! one JSON object per line: every progress event (`{"kind": "bytes", …}`), then
//! `{"kind": "result", "report": …}`, or `{"error": {…}}` on failure. Ctrl-C pauses the transfer
//! (what arrived is kept; `gpurent resume ID` continues it); a second Ctrl-C quits at once.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use crate::interrupt::{on_ctrl_c, Second};
use clap::{Args, ValueEnum};
use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::App;
use gpurent_core::infra::events::{Progress, ProgressSink};
use gpurent_core::infra::secret::Secret;
use gpurent_core::transfer::{FileMethod, TransferError, TransferOptions, TransferReport};

use crate::output::fail;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Method {
    Stream,
    Sftp,
}

/// Options shared by put, get and resume.
#[derive(Debug, Args)]
pub struct Common {
    /// Log in with this private key file (unencrypted OpenSSH/PEM) instead of the host's
    /// keychain key.
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
    /// One JSON object per line on stdout (progress events, then the result).
    #[arg(long)]
    json: bool,
}

/// Choices for put and get.
#[derive(Debug, Args)]
pub struct Choices {
    /// Replace an existing file or folder of the same name.
    #[arg(long)]
    overwrite: bool,
    /// Leave out paths matching this gitignore-style pattern (repeatable; put also honours
    /// .gitignore files).
    #[arg(long, value_name = "PATTERN")]
    exclude: Vec<String>,
    /// Parallel connections for one large file (default: by the measured round trip).
    #[arg(long)]
    streams: Option<u32>,
    /// How large files move (default: a stream on short links, SFTP ranges on long ones).
    #[arg(long, value_enum)]
    method: Option<Method>,
    /// Reconnect-and-resume attempts after a lost connection (default 3).
    #[arg(long)]
    retries: Option<u32>,
}

impl Choices {
    fn options(&self) -> TransferOptions {
        TransferOptions {
            excludes: self.exclude.clone(),
            overwrite: self.overwrite,
            streams: self.streams,
            method: self.method.map(|m| match m {
                Method::Stream => FileMethod::Stream,
                Method::Sftp => FileMethod::Sftp,
            }),
            chunk_bytes: None,
            retries: self.retries,
        }
    }
}

#[derive(Debug, Args)]
pub struct PutArgs {
    /// The saved host's label (`gpurent host list`).
    host: String,
    /// Local files and folders, then the remote folder (created if missing; `~` is home).
    #[arg(required = true, num_args = 2..)]
    paths: Vec<String>,
    #[command(flatten)]
    choices: Choices,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    host: String,
    /// Remote files and folders, then the local folder (created if missing).
    #[arg(required = true, num_args = 2..)]
    paths: Vec<String>,
    #[command(flatten)]
    choices: Choices,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
pub struct TransfersArgs {
    /// Only this host's transfers.
    #[arg(long)]
    host: Option<String>,
    /// Print JSON: {"transfers": [TransferSummary, …]}.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct DiscardArgs {
    /// The transfer id (`gpurent transfers`): its temporary file or folder is removed.
    id: i64,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The transfer id (`gpurent transfers`).
    id: i64,
    #[command(flatten)]
    common: Common,
}

fn identity(path: Option<&Path>) -> Result<Option<LoginKey>, TransferError> {
    let Some(p) = path else {
        return Ok(None);
    };
    let pem = std::fs::read_to_string(p).map_err(|e| TransferError::local(p, &e))?;
    Ok(Some(LoginKey {
        label: "identity-file".into(),
        pem: Secret::new(pem),
        public_line: String::new(),
    }))
}

/// Prints progress: JSON lines, or a bar on a terminal's stderr.
struct Printer {
    json: bool,
    tty: bool,
    started: Instant,
    state: Mutex<(u64, Option<u64>, u64, Option<u64>)>,
    /// The running operation (from its `Started` event), for Ctrl-C.
    op: Mutex<Option<String>>,
}

/// Run `work` so that Ctrl-C pauses its operation (a second Ctrl-C exits with 130).
fn pausable<T>(app: &App, p: &Printer, work: impl FnOnce() -> T) -> T {
    let pause = || {
        let op = p.op.lock().ok().and_then(|o| o.clone());
        let Some(op) = op else {
            return false;
        };
        if !p.json {
            eprintln!("\r\x1b[2Kpausing… (Ctrl-C again to quit at once)");
        }
        let _ = app.pause_op(&op);
        true
    };
    on_ctrl_c(Second::Exits, pause, work)
}

impl Printer {
    fn emit(&self, e: Progress) {
        if let Progress::Started { op_id } = &e {
            if let Ok(mut o) = self.op.lock() {
                *o = Some(op_id.clone());
            }
        }
        if self.json {
            if let Ok(line) = serde_json::to_string(&e) {
                println!("{line}");
            }
            return;
        }
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        match e {
            Progress::Bytes {
                done_bytes,
                total_bytes,
            } => (s.0, s.1) = (done_bytes, total_bytes),
            Progress::Units {
                done_units,
                total_units,
            } => (s.2, s.3) = (done_units, total_units),
            Progress::Log { line } => {
                // A log line can name a host's file (a FIFO, a refused name): its escapes are
                // dropped, gpurent's own line clear stays.
                let line = gpurent_core::remote::text::cleaned(&line);
                eprintln!("\r\x1b[2K{line}");
                return;
            }
            _ => return,
        }
        if !self.tty {
            return;
        }
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let rate = s.0 as f64 / secs;
        let mib = |b: f64| b / 1048576.0;
        let (pct, eta) = match s.1 {
            Some(t) if t > 0 => {
                let left = t.saturating_sub(s.0) as f64;
                (
                    s.0 as f64 / t as f64,
                    if rate > 0.0 {
                        format!("{:.0}s", left / rate)
                    } else {
                        "?".into()
                    },
                )
            }
            _ => (0.0, "?".into()),
        };
        let filled = (pct * 30.0).round() as usize;
        eprint!(
            "\r\x1b[2K[{}{}] {:>3.0}% {:.1}/{} MiB {:.1} MiB/s ETA {eta} files {}/{}",
            "#".repeat(filled.min(30)),
            ".".repeat(30 - filled.min(30)),
            pct * 100.0,
            mib(s.0 as f64),
            s.1.map(|t| format!("{:.1}", mib(t as f64)))
                .unwrap_or_else(|| "?".into()),
            mib(rate),
            s.2,
            s.3.map(|t| t.to_string()).unwrap_or_else(|| "?".into()),
        );
        let _ = std::io::stderr().flush();
    }
}

fn finish(r: Result<TransferReport, TransferError>, p: &Printer) -> ExitCode {
    if p.tty && !p.json {
        eprintln!();
    }
    match r {
        Ok(rep) => {
            if p.json {
                println!("{}", serde_json::json!({"kind": "result", "report": rep}));
            } else {
                for t in &rep.transfers {
                    println!(
                        "{} #{} {} -> {} ({} bytes, sha256 {}{})",
                        if t.verified { "verified" } else { "done" },
                        t.id,
                        t.local_path,
                        t.remote_path,
                        t.total_bytes.unwrap_or(t.done_bytes),
                        t.sha256.as_deref().unwrap_or("-"),
                        if t.attempts > 1 { ", resumed" } else { "" }
                    );
                }
                let s = rep.elapsed_ms as f64 / 1000.0;
                println!("{:.1} MiB in {s:.1} s", rep.wire_bytes as f64 / 1048576.0);
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e, p.json),
    }
}

fn printer(json: bool) -> Printer {
    Printer {
        json,
        tty: std::io::stderr().is_terminal(),
        started: Instant::now(),
        state: Mutex::new((0, None, 0, None)),
        op: Mutex::new(None),
    }
}

fn env() -> Result<SshEnv, TransferError> {
    Ok(SshEnv::detect()?)
}

fn open(data_dir: Option<&Path>) -> Result<App, TransferError> {
    Ok(crate::open::open_app(data_dir)?)
}

/// What put, get and resume share: open the app, the key and the SSH environment, run `work` so
/// that Ctrl-C pauses it, and print its progress and result.
fn moving(
    data_dir: Option<&Path>,
    c: &Common,
    work: impl FnOnce(
        &App,
        Option<&LoginKey>,
        &SshEnv,
        &dyn ProgressSink,
    ) -> Result<TransferReport, TransferError>,
) -> ExitCode {
    let p = printer(c.json);
    let sink = |e: Progress| p.emit(e);
    let r = (|| {
        let app = open(data_dir)?;
        let key = identity(c.identity.as_deref())?;
        let env = env()?;
        pausable(&app, &p, || work(&app, key.as_ref(), &env, &sink))
    })();
    finish(r, &p)
}

pub fn put(data_dir: Option<&Path>, a: &PutArgs) -> ExitCode {
    moving(data_dir, &a.common, |app, key, env, sink| {
        let (dest, locals) = a
            .paths
            .split_last()
            .ok_or_else(|| TransferError::invalid("paths", "LOCAL... REMOTE_DIR"))?;
        let locals: Vec<PathBuf> = locals.iter().map(PathBuf::from).collect();
        app.transfer_put_with_key(&a.host, key, &locals, dest, &a.choices.options(), env, sink)
    })
}

pub fn get(data_dir: Option<&Path>, a: &GetArgs) -> ExitCode {
    moving(data_dir, &a.common, |app, key, env, sink| {
        let (dest, remotes) = a
            .paths
            .split_last()
            .ok_or_else(|| TransferError::invalid("paths", "REMOTE... LOCAL_DIR"))?;
        let (dir, opts) = (Path::new(dest), a.choices.options());
        app.transfer_get_with_key(&a.host, key, remotes, dir, &opts, env, sink)
    })
}

pub fn resume(data_dir: Option<&Path>, a: &ResumeArgs) -> ExitCode {
    moving(data_dir, &a.common, |app, key, env, sink| {
        app.transfer_resume_with_key(a.id, key, env, sink)
    })
}

/// `gpurent discard ID`: give up a paused, interrupted or failed transfer and remove its
/// temporary file or folder. JSON: `{"transfer": TransferSummary}`.
pub fn discard(data_dir: Option<&Path>, a: &DiscardArgs) -> ExitCode {
    let r = (|| {
        let app = open(data_dir)?;
        let key = identity(a.common.identity.as_deref())?;
        app.transfer_discard_with_key(a.id, key.as_ref(), &env()?)
    })();
    match r {
        Ok(t) if a.common.json => {
            println!("{}", serde_json::json!({ "transfer": t }));
            ExitCode::SUCCESS
        }
        Ok(t) => {
            println!("discarded #{} {} -> {}", t.id, t.local_path, t.remote_path);
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e, a.common.json),
    }
}

pub fn list(data_dir: Option<&Path>, a: &TransfersArgs) -> ExitCode {
    let r = open(data_dir).and_then(|app| app.transfer_list(a.host.as_deref()));
    match r {
        Ok(list) if a.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "transfers": list }))
                    .unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(list) => {
            for t in list {
                println!(
                    "#{:<4} {:<9} {:<8} {:<8} {}/{} bytes  {} -> {}{}",
                    t.id,
                    format!("{:?}", t.state).to_lowercase(),
                    format!("{:?}", t.direction).to_lowercase(),
                    t.host_label,
                    t.done_bytes,
                    t.total_bytes
                        .map(|b| b.to_string())
                        .unwrap_or_else(|| "?".into()),
                    t.local_path,
                    t.remote_path,
                    t.error_code.map(|c| format!("  [{c}]")).unwrap_or_default()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e, a.json),
    }
}
