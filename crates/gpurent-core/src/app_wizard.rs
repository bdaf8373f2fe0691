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
