//! Multi-GPU launch on the facade: `torchrun` on N GPUs of a saved host as a supervised job;
//! a cancel (or [`App::launch_stop`]) kills every rank on the host.

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::infra::events::ProgressSink;
use crate::multigpu::{
    nccl_hints, rank_line, torchrun_command, LaunchReport, LaunchSpec, RankLine, JOB_DIR, JOB_NAME,
    STOP_GRACE,
};
use crate::remote::error::RemoteError;
use crate::remote::job::{kill_job, run_job_with, JobOutcome};

impl App {
    /// Run `spec` on saved host `label`, each output line (with its rank) to `on_line`, until it
    /// exits or `cancel` (which kills the whole process group on the host).
    pub fn launch_run(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        spec: &LaunchSpec,
        on_line: &mut dyn FnMut(RankLine),
        cancel: &CancelToken,
    ) -> Result<JobOutcome, RemoteError> {
        let command = torchrun_command(spec)?;
        let host = self.host_get(label)?;
        let conn = match key {
            Some(k) => connect_saved(&host, env, k, cancel)?,
            None => connect_saved(&host, env, &self.host_key_for(label, None)?, cancel)?,
        };
        run_job_with(
            &conn,
            JOB_DIR,
            JOB_NAME,
            &command,
            STOP_GRACE,
            &mut |l| on_line(rank_line(l)),
            cancel,
        )
    }

    /// [`App::launch_run_report`] as the registered operation `launch_run` (cancelling it kills
    /// every rank).
    pub fn launch_run_op(
        &self,
        label: &str,
        env: &SshEnv,
        spec: &LaunchSpec,
        on_line: &mut dyn FnMut(RankLine),
        progress: &dyn ProgressSink,
    ) -> Result<LaunchReport, RemoteError> {
        self.run_op("launch_run", progress, |token| {
            self.launch_run_report(label, env, spec, on_line, token)
        })
    }

    /// [`App::launch_run`] for the desktop: a launch already running on the host is an error,
    /// and the report carries the NCCL hints over the last 200 lines.
    pub fn launch_run_report(
        &self,
        label: &str,
        env: &SshEnv,
        spec: &LaunchSpec,
        on_line: &mut dyn FnMut(RankLine),
        cancel: &CancelToken,
    ) -> Result<LaunchReport, RemoteError> {
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let outcome = self.launch_run(
            label,
            env,
            None,
            spec,
            &mut |l| {
                tail.push_back(l.line.clone());
                if tail.len() > 200 {
                    tail.pop_front();
                }
                on_line(l)
            },
            cancel,
        )?;
        match outcome {
            JobOutcome::Exited(status) => {
                let tail = Vec::from(tail);
                // A failed launch is explained without asking (a broken explanation never hides
                // the exit status).
                let explanation = (status != Some(0))
                    .then(|| self.explain_log(&tail.join("\n"), Some(label)).ok())
                    .flatten();
                Ok(LaunchReport {
                    status,
                    hints: nccl_hints(&tail).into_iter().map(String::from).collect(),
                    explanation,
                })
            }
            JobOutcome::Busy(pid) => Err(CoreError::invalid(
                "launch",
                format!(
                    "a launch is already running on the host (process group {pid}); stop it first"
                ),
            )
            .into()),
        }
    }

    /// Stop a launch left running on the host: every process that carries the launch's marker
    /// (every rank, even in its own session), `TERM`, then `KILL` after [`STOP_GRACE`].
    pub fn launch_stop(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<(), RemoteError> {
        let host = self.host_get(label)?;
        let conn = match key {
            Some(k) => connect_saved(&host, env, k, cancel)?,
            None => connect_saved(&host, env, &self.host_key_for(label, None)?, cancel)?,
        };
        kill_job(&conn, JOB_DIR, JOB_NAME, STOP_GRACE)
    }
}
