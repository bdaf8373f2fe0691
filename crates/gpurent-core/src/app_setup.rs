//! The Setup step as single calls by host label, for the desktop app: probe, fix, verify, each a
//! registered operation (its id is the first progress event, so the UI can cancel it; a cancelled
//! fix is killed on the host). The key comes from the keychain through the host's key label.

use crate::app::App;
use crate::app_doctor::{DoctorError, FixReport, HostReport, HostVerify};
use crate::app_hosts::SshEnv;
use crate::events::ProgressSink;
use crate::wizard::DoctorOptions;

impl App {
    /// Probe the host in one round trip and diagnose it (the raw probe is kept in the data dir).
    pub fn setup_probe(
        &self,
        label: &str,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostReport, DoctorError> {
        self.run_op("setup_probe", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.doctor_host(
                label,
                env,
                &key,
                &DoctorOptions::default(),
                progress,
                cancel,
            )
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
    ) -> Result<FixReport, DoctorError> {
        self.run_op("setup_fix", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            let opts = DoctorOptions::default();
            let report = match self.doctor_saved_report(label, &opts)? {
                Some((report, _)) => report,
                None => {
                    self.doctor_host(label, env, &key, &opts, progress, cancel)?
                        .report
                }
            };
            self.doctor_fix(label, env, &key, &report, code, &opts, progress, cancel)
        })
    }

    /// Prove the GPU works: timed matmul and copy on the host, compared with the catalog.
    pub fn setup_verify(
        &self,
        label: &str,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostVerify, DoctorError> {
        self.run_op("setup_verify", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.doctor_verify(label, env, &key, progress, cancel)
        })
    }
}
