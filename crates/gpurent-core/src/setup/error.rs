//! The setup wizard's outcomes over SSH, each with a stable code (the SSH and key errors keep
//! their own).

use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::remote::error::RemoteError;
use crate::setup::pip::PipFailure;

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
