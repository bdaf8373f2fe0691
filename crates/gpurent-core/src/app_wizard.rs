//! The setup wizard on the [`App`] facade. The SSH path (issue "Keys and hosts") will be: run
//! [`crate::wizard::probe::SCRIPT`] on the host in one exec, save the raw output under the data
//! dir, and hand it to [`App::doctor_from_probe_with`]: the same parser and diagnosis as here.

use crate::app::App;
use crate::error::CoreError;
use crate::wizard::{self, DoctorOptions, Report};

impl App {
    /// Diagnose a host from the raw output of the probe script (offline: a saved probe).
    pub fn doctor_from_probe(&self, raw: &str) -> Result<Report, CoreError> {
        self.doctor_from_probe_with(raw, &DoctorOptions::default())
    }

    /// Same with options (a pinned PyTorch release).
    pub fn doctor_from_probe_with(
        &self,
        raw: &str,
        opts: &DoctorOptions,
    ) -> Result<Report, CoreError> {
        if !raw.contains("@@gpurent@@ ") {
            return Err(CoreError::invalid(
                "probe",
                "this is not the output of gpurent's probe script (no @@gpurent@@ sections)",
            ));
        }
        wizard::diagnose(wizard::parse::parse(raw), opts)
    }
}

impl App {
    /// The probe script to run on a host (one exec; see `wizard/probe.sh`).
    pub fn wizard_probe_script(&self) -> &'static str {
        wizard::probe::SCRIPT
    }

    /// The GPU check to run on a host with the interpreter the fix installed into.
    pub fn wizard_verify_script(&self) -> &'static str {
        wizard::verify::SCRIPT
    }

    /// Parse the verify script's output and compare each GPU with its catalog card.
    pub fn verify_from_output(&self, raw: &str) -> Result<wizard::VerifyReport, CoreError> {
        wizard::verify::parse(raw)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::FixedClock;
    use crate::paths::Paths;

    #[test]
    fn foreign_text_is_refused_and_a_probe_is_diagnosed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(1)), None).expect("open");
        match app.doctor_from_probe("hello") {
            Err(CoreError::InvalidInput { field, .. }) => assert_eq!(field, "probe"),
            other => panic!("{other:?}"),
        }
        let raw = "@@gpurent@@ probe v1\n@@gpurent@@ begin nvidia_smi\n@@gpurent@@ stderr nvidia_smi\nsh: 1: nvidia-smi: not found\n@@gpurent@@ end nvidia_smi rc=127\n";
        let r = app.doctor_from_probe(raw).expect("report");
        assert_eq!(r.codes(), vec!["no_nvidia_gpu"]);
        assert!(matches!(
            r.verdict,
            wizard::Verdict::Blocked {
                needs: wizard::Blocker::DifferentHost,
                ..
            }
        ));
        assert!(app.wizard_probe_script().starts_with("#!/bin/sh"));
        let v = app.verify_from_output("available=False\n").expect("verify");
        assert!(!v.ok);
    }
}
