//! The estimator on the [`App`] facade: one call per Tauri command / CLI subcommand.

use crate::app::App;
use crate::catalog::Catalog;
use crate::error::CoreError;
use crate::estimate::{self, Estimate, Job, ModelCatalog, ModelSpec, QuantFormat};
use crate::localgpu::{self, GpuProbe, LocalGpuReport};

impl App {
    /// Memory, fit per card, speed, time, cost and explanation for a job.
    pub fn estimate(&self, job: &Job) -> Result<Estimate, CoreError> {
        estimate::estimate(job, ModelCatalog::bundled()?, Catalog::bundled()?)
    }

    /// The model catalog (architecture shapes with sources).
    pub fn models(&self) -> Result<Vec<ModelSpec>, CoreError> {
        Ok(ModelCatalog::bundled()?.models().to_vec())
    }

    /// Weight formats with their bits per weight.
    pub fn quant_formats(&self) -> Result<Vec<QuantFormat>, CoreError> {
        Ok(ModelCatalog::bundled()?.quants().to_vec())
    }

    /// The local NVIDIA GPUs; "none found" is a normal report, not an error.
    pub fn local_gpus(&self) -> Result<LocalGpuReport, CoreError> {
        self.local_gpus_with(&localgpu::NvmlProbe)
    }

    /// Same with another probe (tests, other back-ends).
    pub fn local_gpus_with(&self, probe: &dyn GpuProbe) -> Result<LocalGpuReport, CoreError> {
        Ok(localgpu::report(probe, Catalog::bundled()?.cards()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::FixedClock;
    use crate::estimate::{FitVerdict, Task};
    use crate::paths::Paths;

    #[test]
    fn estimate_through_the_facade() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(1)), None).expect("open");
        let job = Job {
            model: Some("qwen2.5-7b".into()),
            ..Default::default()
        };
        let e = app.estimate(&job).expect("estimate");
        assert_eq!(e.task, Task::Infer);
        let h100 = e
            .fits
            .iter()
            .find(|f| f.card_id == "h100-sxm")
            .expect("h100 row");
        assert_eq!(h100.verdict, FitVerdict::FitsOn1);
        assert_eq!(app.models().expect("models").len(), 10);
        assert!(app
            .quant_formats()
            .expect("quants")
            .iter()
            .any(|q| q.id == "q4_k_m"));
        let bad = Job {
            model: Some("nope".into()),
            ..Default::default()
        };
        assert!(matches!(
            app.estimate(&bad),
            Err(CoreError::InvalidInput { .. })
        ));
        assert!(app.local_gpus().is_ok());
    }
}
