//! Pick a card on the [`App`] facade: the estimate, the model and weight-format catalogs, the
//! local GPUs and the job on them, and the user's own prices. One call per Tauri command / CLI
//! subcommand.

use crate::app::App;
use crate::catalog::Catalog;
use crate::estimate::kinds::{self, KindCatalog, KindEstimate, KindJob};
use crate::estimate::local::{local_fits, LocalFitReport};
use crate::estimate::{self, Estimate, Job, ModelCatalog, ModelSpec, Offer, QuantFormat};
use crate::infra::error::CoreError;
use crate::localgpu::{self, GpuProbe, LocalGpuReport};
use crate::prices;

impl App {
    /// Memory, fit per card, speed, time, cost and explanation for a job.
    pub fn estimate(&self, job: &Job) -> Result<Estimate, CoreError> {
        estimate::estimate(job, ModelCatalog::bundled()?, Catalog::bundled()?)
    }

    /// A job beyond LLMs (image, video, LoRA, speech, 3DGS, rendering, simulation), sized from
    /// sourced figures: memory, verdict per card, time where measured, cost, explanation.
    pub fn kind_estimate(&self, job: &KindJob) -> Result<KindEstimate, CoreError> {
        kinds::estimate(job, KindCatalog::bundled()?, Catalog::bundled()?)
    }

    /// Every sourced figure and speed of the non-LLM job kinds (models and settings to choose).
    pub fn kind_catalog(&self) -> Result<KindCatalog, CoreError> {
        Ok(KindCatalog::bundled()?.clone())
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

    /// The job on this computer's GPUs (NVML).
    pub fn local_fit(&self, job: &Job) -> Result<LocalFitReport, CoreError> {
        self.local_fit_with(job, &localgpu::NvmlProbe)
    }

    /// Same with another probe (tests).
    pub fn local_fit_with(
        &self,
        job: &Job,
        probe: &dyn GpuProbe,
    ) -> Result<LocalFitReport, CoreError> {
        local_fits(job, localgpu::report(probe, Catalog::bundled()?.cards()))
    }

    /// Saved prices, by card id.
    pub fn prices(&self) -> Result<Vec<Offer>, CoreError> {
        self.with_store(prices::list)
    }

    /// Save (or replace) the price of one card; returns all saved prices.
    pub fn price_set(&self, offer: &Offer) -> Result<Vec<Offer>, CoreError> {
        let now = self.now_ms();
        self.with_store(|s| prices::save(s, offer, now))
    }

    /// Forget the price of one card; returns all saved prices.
    pub fn price_delete(&self, card_id: &str) -> Result<Vec<Offer>, CoreError> {
        self.with_store(|s| prices::delete(s, card_id))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::estimate::{Billing, BillingRule, FitVerdict, Task};
    use crate::infra::clock::FixedClock;
    use crate::infra::paths::Paths;

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

    #[test]
    fn kind_estimate_through_the_facade() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(1)), None).expect("open");
        let job = KindJob {
            setting: Some("bnb-nf4".into()),
            ..Default::default()
        };
        let e = app.kind_estimate(&job).expect("flux nf4");
        assert_eq!(e.figure.setting, "bnb-nf4");
        assert_eq!(e.need.as_ref().map(|n| n.value), Some(17.3));
        assert!(app
            .kind_catalog()
            .expect("catalog")
            .figures
            .iter()
            .any(|f| f.model == "whisper-large-v2"));
        let bad = KindJob {
            model: "nope".into(),
            ..Default::default()
        };
        assert!(matches!(
            app.kind_estimate(&bad),
            Err(CoreError::InvalidInput { .. })
        ));
    }

    fn offer(card: &str, price: f64) -> Offer {
        Offer {
            card_id: card.into(),
            price_per_gpu_hour: price,
            currency: " cny ".into(),
            billing: Billing {
                rule: BillingRule::PerStartedHour,
                minimum_minutes: 0.0,
            },
            ..Default::default()
        }
    }

    #[test]
    fn prices_are_remembered_across_restarts_replaced_and_deleted() {
        let tmp = tempfile::tempdir().expect("tmp");
        let open =
            || App::open(Paths::under(tmp.path()), Arc::new(FixedClock(7)), None).expect("open");
        let app = open();
        assert!(app.prices().expect("empty").is_empty());
        app.price_set(&offer("rtx-4090", 1.98)).expect("set");
        app.price_set(&offer("h100-sxm", 15.0)).expect("set");
        let all = app.price_set(&offer("rtx-4090", 2.2)).expect("replace");
        assert_eq!(all.len(), 2);
        drop(app);
        let app = open();
        let all = app.prices().expect("list");
        let p4090 = all.iter().find(|o| o.card_id == "rtx-4090").expect("4090");
        assert_eq!(p4090.price_per_gpu_hour, 2.2);
        assert_eq!(p4090.currency, "CNY");
        assert_eq!(p4090.billing.rule, BillingRule::PerStartedHour);
        let left = app.price_delete("h100-sxm").expect("delete");
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn bad_prices_are_refused_and_nothing_is_saved() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(7)), None).expect("open");
        for (bad, code_field) in [
            (offer("rtx-4090", -1.0), "price_per_gpu_hour"),
            (offer("rtx-4090", f64::NAN), "price_per_gpu_hour"),
            (
                Offer {
                    currency: "".into(),
                    ..offer("rtx-4090", 1.0)
                },
                "currency",
            ),
        ] {
            match app.price_set(&bad) {
                Err(CoreError::InvalidInput { field, .. }) => assert_eq!(field, code_field),
                other => panic!("expected InvalidInput for {code_field}, got {other:?}"),
            }
        }
        assert!(matches!(
            app.price_set(&offer("rtx-9999", 1.0)),
            Err(CoreError::UnknownCard(_))
        ));
        assert!(app.prices().expect("list").is_empty());
    }
}
