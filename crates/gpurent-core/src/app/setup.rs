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
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec_collect, ExecOptions};
use crate::remote::job::{kill_job, run_job, JobOutcome};
use crate::remote::quote::shell_quote;
use crate::setup::pip::{PipOutcome, PipProgress};
use crate::setup::redact::redact_credentials;
use crate::setup::verify::VerifyIssue;
use crate::setup::{probe, probe_store, verify, Report, SetupOptions, VerifyReport};

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

pub use crate::setup::error::SetupError;
pub use crate::setup::fix::fix_commands;
pub use crate::setup::verify::best_python;

impl App {
    fn probes_dir(&self) -> PathBuf {
        self.paths().data.join("probes")
    }

    /// Keep a raw probe: `probes/<label>-<ms>.txt` with the app clock.
    fn save_probe(&self, label: &str, raw: &str) -> Result<PathBuf, CoreError> {
        probe_store::save(&self.probes_dir(), label, raw, self.now_ms())
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
        probe_store::latest(&self.probes_dir(), label)
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
        if !probe_store::is_probe_output(&raw) {
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
    pub fn setup_probe_with_key(
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
    pub fn setup_fix_with_key(
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
        kill_job(&conn, JOB_DIR, "fix", crate::remote::job::DEFAULT_GRACE)?;
        Ok(())
    }

    /// Run the GPU check with the host's best Python (from its newest saved probe; probes first
    /// when there is none) and compare each GPU with its catalog card. Steps: `connect`, `verify`.
    pub fn setup_verify_with_key(
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
        if !probe_store::is_probe_output(raw) {
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
            self.setup_probe_with_key(label, env, &key, &SetupOptions::default(), progress, cancel)
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
                    self.setup_probe_with_key(label, env, &key, &opts, progress, cancel)?
                        .report
                }
            };
            self.setup_fix_with_key(label, env, &key, &report, code, &opts, progress, cancel)
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
            self.setup_verify_with_key(label, env, &key, progress, cancel)
        })
    }
}

#[cfg(test)]
#[path = "setup_tests.rs"]
mod tests;
