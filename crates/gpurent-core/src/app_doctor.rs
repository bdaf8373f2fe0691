//! The setup wizard over SSH on the [`App`] facade: probe a saved host in one exec and diagnose it
//! with the same code as `--from-probe` (every raw probe is kept under `probes/`), run a fix's
//! commands with live output and pip byte progress (cancel kills them on the host; re-running is
//! safe) ending with a re-probe, and run the GPU check with the host's best Python.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::App;
use crate::app_hosts::{verifier, LoginKey, SshEnv};
use crate::cancel::CancelToken;
use crate::error::{Coded, CoreError};
use crate::events::{Progress, ProgressSink};
use crate::remote::connect::{open, Auth, Connection, KeyVerifier};
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec_with, ExecOptions, OutStream};
use crate::remote::job::{kill_job, run_job, JobOutcome};
use crate::remote::quote::shell_quote;
use crate::wizard::pip::{PipFailure, PipOutcome, PipProgress};
use crate::wizard::{
    probe, verify, DoctorOptions, Facts, FixKind, Report, Severity, Verdict, VerifyReport,
};

/// Where fix jobs keep their pid file on the host (expanded by the host's shell).
pub const JOB_DIR: &str = "$HOME/.gpurent/jobs";
/// The probe waits at most ~10 s per tool; a whole probe well under this.
const PROBE_TIMEOUT: Duration = Duration::from_secs(300);
/// The GPU check: a few seconds on a healthy card, minutes when the first CUDA init is slow.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(600);

/// `doctor_host`'s answer: the report (same fields as `--from-probe`) plus the host and where
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
pub enum DoctorError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The report has no fix gpurent can run (ready, or blocked: reboot, new host, manual).
    #[error("there is nothing gpurent can run here: {0}")]
    NothingToRun(String),
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

impl From<CoreError> for DoctorError {
    fn from(e: CoreError) -> Self {
        DoctorError::Remote(RemoteError::Core(e))
    }
}

impl Coded for DoctorError {
    fn code(&self) -> &'static str {
        match self {
            DoctorError::Remote(e) => e.code(),
            DoctorError::NothingToRun(_) => "nothing_to_fix",
            DoctorError::FixBusy { .. } => "fix_already_running",
            DoctorError::FixFailed { failure, .. } => match failure {
                Some(PipFailure::Network) => "fix_failed_network",
                Some(PipFailure::DiskFull) => "fix_failed_disk_full",
                _ => "fix_failed",
            },
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            DoctorError::Remote(e) => e.detail(),
            DoctorError::FixBusy { pgid } => Some(pgid.to_string()),
            DoctorError::FixFailed {
                line, done_bytes, ..
            } => Some(format!(
                "{} ({done_bytes} bytes downloaded)",
                line.as_deref().unwrap_or("")
            )),
            DoctorError::NothingToRun(_) => None,
        }
    }
}

/// The commands a fix runs. Without `code` (a `fixable` verdict only): the install plan, else the
/// first error's `run_here` fix. With `code`, that finding's fix (`run_here` or `optional`). The CLI and UI show exactly these
/// before asking.
pub fn fix_commands(report: &Report, code: Option<&str>) -> Result<Vec<String>, DoctorError> {
    let runnable = |k: FixKind| matches!(k, FixKind::RunHere | FixKind::Optional);
    if let Some(code) = code {
        let f = report
            .findings
            .iter()
            .find(|f| f.diagnosis.code() == code)
            .ok_or_else(|| DoctorError::NothingToRun(format!("no finding '{code}'")))?;
        return match &f.fix {
            Some(x) if runnable(x.kind) && !x.commands.is_empty() => Ok(x.commands.clone()),
            _ => Err(DoctorError::NothingToRun(format!(
                "'{code}' has no fix gpurent can run"
            ))),
        };
    }
    match &report.verdict {
        Verdict::Fixable { .. } => {}
        Verdict::Ready => return Err(DoctorError::NothingToRun("the host is ready".into())),
        Verdict::Blocked { codes, .. } => {
            return Err(DoctorError::NothingToRun(format!(
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
        .ok_or_else(|| DoctorError::NothingToRun("no fix gpurent can run here".into()))
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
        Err(CoreError::invalid("probe", "no free file name"))
    }

    /// The host's newest saved probe, diagnosed, and its path; `None` when nothing is saved.
    pub fn doctor_saved_report(
        &self,
        label: &str,
        opts: &DoctorOptions,
    ) -> Result<Option<(Report, String)>, DoctorError> {
        let Some(path) = self.doctor_latest_probe(label)? else {
            return Ok(None);
        };
        let raw = std::fs::read_to_string(&path).map_err(|e| CoreError::io(&path, e))?;
        let report = self.doctor_from_probe_with(&raw, opts)?;
        Ok(Some((report, path.display().to_string())))
    }

    /// The newest saved raw probe of a host, if any.
    pub fn doctor_latest_probe(&self, label: &str) -> Result<Option<PathBuf>, CoreError> {
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
    fn doctor_connect(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<Connection, RemoteError> {
        let host = self.host_get(label)?;
        let jump = host.jump_endpoint();
        // Keys the user's known_hosts vouches for are accepted but not pinned here (host check does).
        let mut to_pin = Vec::new();
        let mut conn = {
            let mut verify = verifier(Some(&host), env, &[], None, &mut to_pin);
            let verify: &mut KeyVerifier<'_> = &mut verify;
            open(
                &host.target(),
                jump.as_ref().map(|j| (j, Auth::Key(&key.pem))),
                &env.connect,
                verify,
                cancel,
            )?
        };
        conn.login(&host.user, Auth::Key(&key.pem))?;
        Ok(conn)
    }

    /// Run the probe in one exec (`sh -s`, the script on stdin), save it, diagnose it.
    fn probe_over(
        &self,
        conn: &Connection,
        label: &str,
        opts: &DoctorOptions,
        cancel: &CancelToken,
    ) -> Result<HostReport, DoctorError> {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let exec_opts = ExecOptions {
            stdin: Some(probe::SCRIPT.as_bytes()),
            timeout: Some(PROBE_TIMEOUT),
        };
        exec_with(
            conn,
            "sh -s",
            &exec_opts,
            &mut |s, d| match s {
                OutStream::Stdout => stdout.extend_from_slice(d),
                OutStream::Stderr => stderr.extend_from_slice(d),
            },
            cancel,
        )?;
        let raw = String::from_utf8_lossy(&stdout).into_owned();
        let path = self.save_probe(label, &raw)?;
        let report = self
            .doctor_from_probe_with(&raw, opts)
            .map_err(|e| match e {
                CoreError::InvalidInput { field, .. } => CoreError::InvalidInput {
                    field,
                    reason: format!(
                        "the host did not run the probe (saved as {}): {}",
                        path.display(),
                        String::from_utf8_lossy(&stderr).trim()
                    ),
                },
                other => other,
            })?;
        Ok(HostReport {
            host: label.to_string(),
            probe_path: path.display().to_string(),
            report,
        })
    }

    /// Probe a saved host over SSH and diagnose it (same parser and diagnosis as `--from-probe`).
    /// Steps: `connect`, `probe`.
    pub fn doctor_host(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        opts: &DoctorOptions,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostReport, DoctorError> {
        let step = crate::events::steps(progress, Some(2));
        step("connect", 0);
        let conn = self.doctor_connect(label, env, key, cancel)?;
        step("probe", 1);
        self.probe_over(&conn, label, opts, cancel)
    }

    /// Run the fix for `report` (see [`fix_commands`]) on the host: each command as a supervised
    /// job (own process group; a cancel kills it there), its output as `Log` lines, pip's
    /// downloads as cumulative `Bytes`; then re-probe. Safe to re-run after a failure or cancel.
    /// Steps: `connect`, `fix_command` (one per command), `recheck`.
    #[allow(clippy::too_many_arguments)]
    pub fn doctor_fix(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        report: &Report,
        code: Option<&str>,
        opts: &DoctorOptions,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<FixReport, DoctorError> {
        let commands = fix_commands(report, code)?;
        let total = Some(commands.len() as u32 + 2);
        let step = crate::events::steps(progress, total);
        step("connect", 0);
        let conn = self.doctor_connect(label, env, key, cancel)?;
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
                JobOutcome::Busy(pgid) => return Err(DoctorError::FixBusy { pgid }),
                JobOutcome::Exited(Some(0)) => {}
                JobOutcome::Exited(exit_status) => {
                    let (failure, line) = match pip.outcome() {
                        PipOutcome::Failed { failure, line } => (Some(failure), Some(line)),
                        _ => (None, last_line),
                    };
                    return Err(DoctorError::FixFailed {
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
    pub fn doctor_fix_stop(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<(), DoctorError> {
        let conn = self.doctor_connect(label, env, key, cancel)?;
        kill_job(&conn, JOB_DIR, "fix")?;
        Ok(())
    }

    /// Run the GPU check with the host's best Python (from its newest saved probe; probes first
    /// when there is none) and compare each GPU with its catalog card. Steps: `connect`, `verify`.
    pub fn doctor_verify(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostVerify, DoctorError> {
        let step = crate::events::steps(progress, Some(2));
        step("connect", 0);
        let conn = self.doctor_connect(label, env, key, cancel)?;
        let (facts, probe_path) =
            match self.doctor_saved_report(label, &DoctorOptions::default())? {
                Some((report, path)) => (report.facts, path),
                None => {
                    let r = self.probe_over(&conn, label, &DoctorOptions::default(), cancel)?;
                    (r.report.facts, r.probe_path)
                }
            };
        step("verify", 1);
        let python = best_python(&facts);
        let (raw, stderr, status) = run_verify(&conn, &python, cancel)?;
        let mut verify = self.verify_from_output(&raw)?;
        if status != Some(0) && verify.errors.is_empty() {
            verify.errors.push(format!(
                "{python} exited with {status:?}: {}",
                stderr.lines().last().unwrap_or("").trim()
            ));
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
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let opts = ExecOptions {
        stdin: Some(verify::SCRIPT.as_bytes()),
        timeout: Some(VERIFY_TIMEOUT),
    };
    let info = exec_with(
        conn,
        &cmd,
        &opts,
        &mut |s, d| match s {
            OutStream::Stdout => stdout.extend_from_slice(d),
            OutStream::Stderr => stderr.extend_from_slice(d),
        },
        cancel,
    )?;
    Ok((
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
        info.exit_status,
    ))
}

#[cfg(test)]
#[path = "app_doctor_tests.rs"]
mod tests;
