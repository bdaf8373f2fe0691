//! The Setup step on the [`App`] facade. Offline: diagnose a saved probe's raw output. Over SSH: probe a saved host in one exec and diagnose it
//! with the same code as `--from-probe` (every raw probe is kept under `probes/`), run a fix's
//! commands with live output and pip byte progress (cancel kills them on the host; re-running is
//! safe) ending with a re-probe, and run the GPU check with the host's best Python.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::infra::events::{Progress, ProgressSink};
use crate::infra::ipc::Coded;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec_collect, ExecOptions};
use crate::remote::job::{kill_job, run_job, JobOutcome};
use crate::remote::quote::shell_quote;
use crate::setup::pip::{PipFailure, PipOutcome, PipProgress};
use crate::setup::redact::redact_credentials;
use crate::setup::verify::VerifyIssue;
use crate::setup::{
    probe, verify, Facts, FixKind, Report, SetupOptions, Severity, Verdict, VerifyReport,
};

/// Where fix jobs keep their pid file on the host (expanded by the host's shell).
pub const JOB_DIR: &str = "$HOME/.gpurent/jobs";
/// The probe waits at most ~10 s per tool; a whole probe well under this.
const PROBE_TIMEOUT: Duration = Duration::from_secs(300);
/// The GPU check: a few seconds on a healthy card, minutes when the first CUDA init is slow.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);

/// `setup_probe`'s answer: the report (same fields as `--from-probe`) plus the host and where
/// its raw probe was saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostReport {
    pub host: String,
    /// The raw probe output, kept under the data dir (`probes/<label>-<ms>.txt`).
    pub probe_path: String,
    #[serde(flatten)]
    pub report: Report,
}

/// What a finished fix did, and the host afterwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct FixReport {
    pub host: String,
    /// The commands that ran, in order.
    pub commands: Vec<String>,
    /// Bytes pip downloaded (cumulative over every command).
    pub downloaded_bytes: u64,
    /// How pip's last run ended, as its output says (`unknown` when no pip ran).
    pub pip: PipOutcome,
    /// The re-probe after the fix.
    pub after: HostReport,
}

/// `doctor_verify`'s answer: the GPU check and the interpreter it ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostVerify {
    pub host: String,
    pub python: String,
    /// The probe whose facts chose the interpreter.
    pub probe_path: String,
    #[serde(flatten)]
    pub verify: VerifyReport,
}

/// Outcomes of the SSH wizard (stable codes; the SSH and key errors keep their own).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The report has no fix gpurent can run (ready, or blocked: reboot, new host, manual).
    #[error("there is nothing gpurent can run here: {0}")]
    NothingToRun(String),
    /// The host did not run the probe script (no `@@gpurent@@` sections came back: no `sh`, a
    /// login shell that prints instead of running the command, a forced command). What did come
    /// back is kept at `probe_path`; `stderr` is what the host said.
    #[error("the host did not run the probe (its output is saved as {probe_path}): {stderr}; check that the account has a POSIX sh and that no forced command or login script takes over the session")]
    ProbeNotRun { probe_path: String, stderr: String },
    /// A fix is still running on the host (another window, or a run that lost its connection).
    #[error("a fix is already running on this host (process group {pgid}); wait or cancel it")]
    FixBusy { pgid: u32 },
    /// A command of the fix failed. What pip got done is kept (re-running resumes).
    #[error("the fix failed: `{command}` exited with {exit_status:?}")]
    FixFailed {
        command: String,
        exit_status: Option<i32>,
        /// pip's failure kind when its output said so.
        failure: Option<PipFailure>,
        /// The line that says why (pip's error, else the last line of output).
        line: Option<String>,
        /// Bytes downloaded before it failed.
        done_bytes: u64,
    },
}

impl From<CoreError> for SetupError {
    fn from(e: CoreError) -> Self {
        SetupError::Remote(RemoteError::Core(e))
    }
}

impl Coded for SetupError {
    fn code(&self) -> &'static str {
        match self {
            SetupError::Remote(e) => e.code(),
            SetupError::NothingToRun(_) => "nothing_to_fix",
            SetupError::ProbeNotRun { .. } => "probe_not_run",
            SetupError::FixBusy { .. } => "fix_already_running",
            SetupError::FixFailed { failure, .. } => match failure {
                Some(PipFailure::Network) => "fix_failed_network",
                Some(PipFailure::DiskFull) => "fix_failed_disk_full",
                _ => "fix_failed",
            },
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            SetupError::Remote(e) => e.detail(),
            SetupError::FixBusy { pgid } => Some(pgid.to_string()),
            SetupError::FixFailed {
                line, done_bytes, ..
            } => Some(format!(
                "{} ({done_bytes} bytes downloaded)",
                line.as_deref().unwrap_or("")
            )),
            SetupError::NothingToRun(_) => None,
            SetupError::ProbeNotRun { probe_path, stderr } => {
                Some(format!("{probe_path}: {stderr}"))
            }
        }
    }
    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            SetupError::Remote(e) => e.data(),
            _ => None,
        }
    }
}

/// The commands a fix runs. Without `code` (a `fixable` verdict only): the install plan, else the
/// first error's `run_here` fix. With `code`, that finding's fix (`run_here` or `optional`). The CLI and UI show exactly these
/// before asking.
pub fn fix_commands(report: &Report, code: Option<&str>) -> Result<Vec<String>, SetupError> {
    let runnable = |k: FixKind| matches!(k, FixKind::RunHere | FixKind::Optional);
    if let Some(code) = code {
        let f = report
            .findings
            .iter()
            .find(|f| f.diagnosis.code() == code)
            .ok_or_else(|| SetupError::NothingToRun(format!("no finding '{code}'")))?;
        return match &f.fix {
            Some(x) if runnable(x.kind) && !x.commands.is_empty() => Ok(x.commands.clone()),
            _ => Err(SetupError::NothingToRun(format!(
                "'{code}' has no fix gpurent can run"
            ))),
        };
    }
    match &report.verdict {
        Verdict::Fixable { .. } => {}
        Verdict::Ready => return Err(SetupError::NothingToRun("the host is ready".into())),
        Verdict::Blocked { codes, .. } => {
            return Err(SetupError::NothingToRun(format!(
                "blocked by {}: not something gpurent can fix here",
                codes.join(", ")
            )))
        }
    }
    if let Some(p) = &report.plan {
        return Ok(p.commands.clone());
    }
    report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .find_map(|f| {
            f.fix
                .as_ref()
                .filter(|x| x.kind == FixKind::RunHere && !x.commands.is_empty())
        })
        .map(|x| x.commands.clone())
        .ok_or_else(|| SetupError::NothingToRun("no fix gpurent can run here".into()))
}

/// The interpreter verify runs with: gpurent's venv once made, else the one the probe found.
pub fn best_python(facts: &Facts) -> String {
    facts
        .python
        .gpurent_venv
        .as_ref()
        .map(|v| format!("{}/bin/python", v.trim_end_matches('/')))
        .or_else(|| facts.python.executable.clone())
        .unwrap_or_else(|| "python3".into())
}

/// The probe script's output has `@@gpurent@@` section markers.
fn is_probe_output(raw: &str) -> bool {
    raw.contains("@@gpurent@@ ")
}

/// `<label>-<ms>.txt`, or `<label>-<ms>.<n>.txt` when that name is taken (same millisecond).
fn probe_file_order(label: &str, name: &str) -> Option<(i64, u32)> {
    let rest = name
        .strip_prefix(label)?
        .strip_prefix('-')?
        .strip_suffix(".txt")?;
    let (ms, n) = match rest.split_once('.') {
        Some((ms, n)) => (ms, n.parse().ok()?),
        None => (rest, 0),
    };
    if ms.is_empty() || !ms.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((ms.parse().ok()?, n))
}

impl App {
    fn probes_dir(&self) -> PathBuf {
        self.paths().data.join("probes")
    }

    /// Keep a raw probe: `probes/<label>-<ms>.txt` with the app clock.
    fn save_probe(&self, label: &str, raw: &str) -> Result<PathBuf, CoreError> {
        let dir = self.probes_dir();
        std::fs::create_dir_all(&dir).map_err(|e| CoreError::io(&dir, e))?;
        let ms = self.now_ms();
        for n in 0u32.. {
            let name = match n {
                0 => format!("{label}-{ms}.txt"),
                n => format!("{label}-{ms}.{n}.txt"),
            };
            let path = dir.join(name);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    f.write_all(raw.as_bytes())
                        .map_err(|e| CoreError::io(&path, e))?;
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(CoreError::io(&path, e)),
            }
        }
        Err(CoreError::invalid(
            "probe",
            "no free file name under probes/ for this host: remove old probes there and check again",
        ))
    }

    /// The host's newest saved probe, diagnosed, and its path; `None` when nothing is saved.
    pub fn setup_saved_report(
        &self,
        label: &str,
        opts: &SetupOptions,
    ) -> Result<Option<(Report, String)>, SetupError> {
        let Some(path) = self.setup_latest_probe(label)? else {
            return Ok(None);
        };
        let raw = std::fs::read_to_string(&path).map_err(|e| CoreError::io(&path, e))?;
        let report = self.setup_from_probe_with(&raw, opts)?;
        Ok(Some((report, path.display().to_string())))
    }

    /// The newest saved raw probe of a host, if any.
    pub fn setup_latest_probe(&self, label: &str) -> Result<Option<PathBuf>, CoreError> {
        let dir = self.probes_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CoreError::io(&dir, e)),
        };
        Ok(entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                probe_file_order(label, &name).map(|o| (o, e.path()))
            })
            .max_by_key(|(o, _)| *o)
            .map(|(_, p)| p))
    }

    /// Connect to a saved host with its pinned host key and log in with `key`.
    fn setup_connect(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<Connection, RemoteError> {
        connect_saved(&self.host_get(label)?, env, key, cancel)
    }

    /// Run the probe in one exec (`sh -s`, the script on stdin), save it, diagnose it.
    fn probe_over(
        &self,
        conn: &Connection,
        label: &str,
        opts: &SetupOptions,
        cancel: &CancelToken,
    ) -> Result<HostReport, SetupError> {
        let exec_opts = ExecOptions {
            stdin: Some(probe::SCRIPT.as_bytes()),
            timeout: Some(PROBE_TIMEOUT),
        };
        let out = exec_collect(conn, "sh -s", &exec_opts, cancel)?;
        self.keep_and_diagnose(label, &out.stdout_text(), &out.stderr_text(), opts)
    }

    /// What a probe run sent back: credentials redacted, kept under `probes/`, diagnosed. Output
    /// that is not the probe's is [`SetupError::ProbeNotRun`] with the saved path and stderr.
    pub(crate) fn keep_and_diagnose(
        &self,
        label: &str,
        stdout: &str,
        stderr: &str,
        opts: &SetupOptions,
    ) -> Result<HostReport, SetupError> {
        let raw = redact_credentials(stdout);
        let path = self.save_probe(label, &raw)?;
        if !is_probe_output(&raw) {
            return Err(SetupError::ProbeNotRun {
                probe_path: path.display().to_string(),
                stderr: redact_credentials(stderr.trim()),
            });
        }
        let report = self.setup_from_probe_with(&raw, opts)?;
        Ok(HostReport {
            host: label.to_string(),
            probe_path: path.display().to_string(),
            report,
        })
    }

    /// Probe a saved host over SSH and diagnose it (same parser and diagnosis as `--from-probe`).
    /// Steps: `connect`, `probe`.
    pub fn setup_probe_as(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        opts: &SetupOptions,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostReport, SetupError> {
        let step = crate::infra::events::steps(progress, Some(2));
        step("connect", 0);
        let conn = self.setup_connect(label, env, key, cancel)?;
        step("probe", 1);
        self.probe_over(&conn, label, opts, cancel)
    }

    /// Run the fix for `report` (see [`fix_commands`]) on the host: each command as a supervised
    /// job (own process group; a cancel kills it there), its output as `Log` lines, pip's
    /// downloads as cumulative `Bytes`; then re-probe. Safe to re-run after a failure or cancel.
    /// Steps: `connect`, `fix_command` (one per command), `recheck`.
    #[allow(clippy::too_many_arguments)]
    pub fn setup_fix_as(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        report: &Report,
        code: Option<&str>,
        opts: &SetupOptions,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<FixReport, SetupError> {
        let commands = fix_commands(report, code)?;
        let total = Some(commands.len() as u32 + 2);
        let step = crate::infra::events::steps(progress, total);
        step("connect", 0);
        let conn = self.setup_connect(label, env, key, cancel)?;
        let mut pip = PipProgress::new();
        for (i, command) in commands.iter().enumerate() {
            step("fix_command", i as u32 + 1);
            progress.emit(Progress::Log {
                line: format!("$ {command}"),
            });
            let mut last_line = None;
            let outcome = run_job(
                &conn,
                JOB_DIR,
                "fix",
                command,
                &mut |line| {
                    if let Some(b) = pip.feed(line) {
                        progress.emit(b);
                    }
                    if !line.trim().is_empty() {
                        last_line = Some(line.to_string());
                    }
                    progress.emit(Progress::Log {
                        line: line.to_string(),
                    });
                },
                cancel,
            )?;
            match outcome {
                JobOutcome::Busy(pgid) => return Err(SetupError::FixBusy { pgid }),
                JobOutcome::Exited(Some(0)) => {}
                JobOutcome::Exited(exit_status) => {
                    let (failure, line) = match pip.outcome() {
                        PipOutcome::Failed { failure, line } => (Some(failure), Some(line)),
                        _ => (None, last_line),
                    };
                    return Err(SetupError::FixFailed {
                        command: command.clone(),
                        exit_status,
                        failure,
                        line,
                        done_bytes: pip.done_bytes(),
                    });
                }
            }
        }
        step("recheck", commands.len() as u32 + 1);
        let after = self.probe_over(&conn, label, opts, cancel)?;
        Ok(FixReport {
            host: label.to_string(),
            commands,
            downloaded_bytes: pip.done_bytes(),
            pip: pip.outcome(),
            after,
        })
    }

    /// Stop a fix still running on the host (its client went away: Ctrl-C, a lost connection):
    /// kills the job's process group there. Nothing running is not an error.
    pub fn setup_fix_stop(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<(), SetupError> {
        let conn = self.setup_connect(label, env, key, cancel)?;
        kill_job(&conn, JOB_DIR, "fix")?;
        Ok(())
    }

    /// Run the GPU check with the host's best Python (from its newest saved probe; probes first
    /// when there is none) and compare each GPU with its catalog card. Steps: `connect`, `verify`.
    pub fn setup_verify_as(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostVerify, SetupError> {
        let step = crate::infra::events::steps(progress, Some(2));
        step("connect", 0);
        let conn = self.setup_connect(label, env, key, cancel)?;
        let (facts, probe_path) = match self.setup_saved_report(label, &SetupOptions::default())? {
            Some((report, path)) => (report.facts, path),
            None => {
                let r = self.probe_over(&conn, label, &SetupOptions::default(), cancel)?;
                (r.report.facts, r.probe_path)
            }
        };
        step("verify", 1);
        let python = best_python(&facts);
        let (raw, stderr, status) = run_verify(&conn, &python, cancel)?;
        let mut verify = self.verify_from_output(&raw)?;
        if status != Some(0) && verify.issues.is_empty() {
            verify.push_issue(VerifyIssue::InterpreterFailed {
                python: python.clone(),
                exit_status: status,
                stderr_line: stderr.lines().last().unwrap_or("").trim().to_string(),
            });
        }
        if status != Some(0) {
            verify.ok = false;
        }
        Ok(HostVerify {
            host: label.to_string(),
            python,
            probe_path,
            verify,
        })
    }
}

/// `PYTHON -` with the verify script on stdin: (stdout, stderr, exit status).
fn run_verify(
    conn: &Connection,
    python: &str,
    cancel: &CancelToken,
) -> Result<(String, String, Option<i32>), RemoteError> {
    // `~/…` from the probe is expanded by the host's shell; everything else is quoted.
    let cmd = match python.strip_prefix("~/") {
        Some(rest) => format!("~/{} -", shell_quote(rest)?),
        None => format!("{} -", shell_quote(python)?),
    };
    let opts = ExecOptions {
        stdin: Some(verify::SCRIPT.as_bytes()),
        timeout: Some(VERIFY_TIMEOUT),
    };
    let out = exec_collect(conn, &cmd, &opts, cancel)?;
    Ok((out.stdout_text(), out.stderr_text(), out.exit_status))
}

impl App {
    /// Diagnose a host from the raw output of the probe script (offline: a saved probe).
    pub fn setup_from_probe(&self, raw: &str) -> Result<Report, CoreError> {
        self.setup_from_probe_with(raw, &SetupOptions::default())
    }

    /// Same with options (a pinned PyTorch release).
    pub fn setup_from_probe_with(
        &self,
        raw: &str,
        opts: &SetupOptions,
    ) -> Result<Report, CoreError> {
        if !is_probe_output(raw) {
            return Err(CoreError::invalid(
                "probe",
                "this is not the output of gpurent's probe script (no @@gpurent@@ sections): save what `sh -s < probe.sh` prints on the host and pass that file",
            ));
        }
        // Credentials in index URLs never reach the report (facts, evidence, messages).
        let raw = redact_credentials(raw);
        crate::setup::diagnose(crate::setup::parse::parse(&raw), opts)
    }
}

impl App {
    /// The probe script to run on a host (one exec; see `setup/probe.sh`).
    pub fn setup_probe_script(&self) -> &'static str {
        crate::setup::probe::SCRIPT
    }

    /// The GPU check to run on a host with the interpreter the fix installed into.
    pub fn setup_verify_script(&self) -> &'static str {
        crate::setup::verify::SCRIPT
    }

    /// Parse the verify script's output and compare each GPU with its catalog card.
    pub fn verify_from_output(&self, raw: &str) -> Result<crate::setup::VerifyReport, CoreError> {
        crate::setup::verify::parse(raw)
    }
}

impl App {
    /// Probe the host in one round trip and diagnose it (the raw probe is kept in the data dir).
    pub fn setup_probe(
        &self,
        label: &str,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostReport, SetupError> {
        self.run_op("setup_probe", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.setup_probe_as(label, env, &key, &SetupOptions::default(), progress, cancel)
        })
    }

    /// Run the fix for `code` (or the whole install plan) as diagnosed from the host's newest
    /// probe, streaming its output; ends with a re-probe (`FixReport::after`).
    pub fn setup_fix(
        &self,
        label: &str,
        code: Option<&str>,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<FixReport, SetupError> {
        self.run_op("setup_fix", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            let opts = SetupOptions::default();
            let report = match self.setup_saved_report(label, &opts)? {
                Some((report, _)) => report,
                None => {
                    self.setup_probe_as(label, env, &key, &opts, progress, cancel)?
                        .report
                }
            };
            self.setup_fix_as(label, env, &key, &report, code, &opts, progress, cancel)
        })
    }

    /// Prove the GPU works: timed matmul and copy on the host, compared with the catalog.
    pub fn setup_verify(
        &self,
        label: &str,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostVerify, SetupError> {
        self.run_op("setup_verify", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.setup_verify_as(label, env, &key, progress, cancel)
        })
    }
}

#[cfg(test)]
#[path = "setup_tests.rs"]
mod tests;
