//! "Is my own GPU enough?": the job checked against each local NVIDIA GPU with the memory CUDA
//! actually reports for it, shown as the first row of the ranking. A GPU that matches a catalog card
//! also gets that card's speed; an unknown one gets the memory verdict only (its bandwidth is not
//! known, so no speed is guessed).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::fit::fit_card;
use super::memory::usable_fraction;
use super::{CardFit, Job, ModelCatalog, Resolved};
use crate::catalog::{Card, Catalog, Confidence, Segment};
use crate::infra::error::CoreError;
use crate::localgpu::{LocalGpu, LocalGpuReport, NoGpuReason};

/// One local GPU and the job's verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LocalFit {
    pub gpu: LocalGpu,
    pub fit: CardFit,
}

/// The job on this computer's GPUs, or why there are none (a normal answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LocalFitReport {
    Found {
        fits: Vec<LocalFit>,
        driver_version: Option<String>,
        cuda_version: Option<String>,
    },
    NoLocalGpu {
        reason: NoGpuReason,
        detail: Option<String>,
    },
}

/// A card with the local GPU's real memory: the catalog card when the name matched, otherwise a
/// card that only knows its memory.
fn local_card(gpu: &LocalGpu, catalog: &Catalog) -> Card {
    let known = gpu
        .catalog_id
        .as_deref()
        .and_then(|id| catalog.get(id).ok())
        .cloned();
    let mut card = known.unwrap_or_else(|| Card {
        id: format!("local-{}", gpu.index),
        name: gpu.name.clone(),
        segment: Segment::Consumer,
        architecture: String::new(),
        launch_year: 0,
        vram_gb: 0.0,
        memory_type: String::new(),
        mem_bw_gbps: 0.0,
        bf16_dense_tflops: None,
        fp16_dense_tflops_fp16acc: None,
        fp8_dense_tflops: None,
        fp32_tflops: None,
        tdp_w: None,
        compute_capability: String::new(),
        bf16_supported: true,
        fp8_supported: false,
        nvlink: false,
        nvlink_gbps: None,
        pcie_gen: None,
        ecc: false,
        form_factor: String::new(),
        confidence: Confidence::Low,
        unverified: Vec::new(),
        sources: Vec::new(),
        notes: String::new(),
        advice: Vec::new(),
        decode_ceiling_tps_7b_q4: 0.0,
    });
    // The estimator takes nominal sizes and applies the visible fraction (and the ECC reserve of
    // GDDR cards); NVML already gives the visible total, so undo it to make the usable memory
    // exactly what this GPU reports.
    card.vram_gb = gpu.total_gib / usable_fraction(&card);
    card.name = gpu.name.clone();
    card
}

/// The job on each local GPU.
pub fn local_fits(job: &Job, report: LocalGpuReport) -> Result<LocalFitReport, CoreError> {
    match report {
        LocalGpuReport::NoLocalGpu { reason, detail } => {
            Ok(LocalFitReport::NoLocalGpu { reason, detail })
        }
        LocalGpuReport::Found {
            gpus,
            driver_version,
            cuda_version,
        } => {
            let catalog = Catalog::bundled()?;
            let r = Resolved::new(job, ModelCatalog::bundled()?)?;
            let fits = gpus
                .into_iter()
                .map(|gpu| {
                    let card = local_card(&gpu, catalog);
                    let mut fit = fit_card(&r, &card);
                    if gpu.catalog_id.is_none() {
                        fit.speed = None;
                    }
                    LocalFit { gpu, fit }
                })
                .collect();
            Ok(LocalFitReport::Found {
                fits,
                driver_version,
                cuda_version,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{FitVerdict, Task};
    use crate::localgpu::{self, FakeProbe as Fake, ProbeOutcome, RawGpu};

    fn one(name: &str, gib: f64) -> ProbeOutcome {
        ProbeOutcome::Devices {
            gpus: vec![RawGpu {
                name: name.into(),
                total_bytes: (gib * crate::infra::units::GIB) as u64,
                free_bytes: (gib * crate::infra::units::GIB) as u64,
            }],
            driver_version: Some("550.54.14".into()),
            cuda_driver_version: Some(12040),
        }
    }

    fn job(model: &str, task: Task) -> Job {
        Job {
            model: Some(model.into()),
            task,
            ..Default::default()
        }
    }

    fn found(r: LocalFitReport) -> Vec<LocalFit> {
        match r {
            LocalFitReport::Found { fits, .. } => fits,
            other => panic!("expected Found, got {other:?}"),
        }
    }

    #[test]
    fn a_4090_runs_a_7b_in_bf16_with_speed_but_not_a_70b() {
        let catalog = Catalog::bundled().expect("catalog");
        let gpu = Fake(one("NVIDIA GeForce RTX 4090", 23.64));
        let rep = localgpu::report(&gpu, catalog.cards());
        let fits = found(local_fits(&job("qwen2.5-7b", Task::Infer), rep).expect("fit"));
        assert_eq!(fits[0].fit.verdict, FitVerdict::FitsOn1);
        assert!((fits[0].fit.usable_gib - 23.64).abs() < 1e-6);
        assert!(
            fits[0].fit.speed.is_some(),
            "a catalog match keeps its speed"
        );
        let rep = localgpu::report(&gpu, catalog.cards());
        let fits = found(local_fits(&job("llama-3.1-70b", Task::Infer), rep).expect("fit"));
        assert_ne!(fits[0].fit.verdict, FitVerdict::FitsOn1);
    }

    /// NVML's total already has the ECC reserve taken off: a local T4 uses exactly what it reports.
    #[test]
    fn a_local_ecc_card_uses_exactly_what_it_reports() {
        let catalog = Catalog::bundled().expect("catalog");
        let gpu = Fake(one("NVIDIA T4", 14.75));
        let rep = localgpu::report(&gpu, catalog.cards());
        let fits = found(local_fits(&job("qwen2.5-7b", Task::Infer), rep).expect("fit"));
        assert_eq!(fits[0].gpu.catalog_id.as_deref(), Some("t4"));
        assert!(fits[0].fit.ecc_reserve);
        assert!((fits[0].fit.usable_gib - 14.75).abs() < 1e-6);
    }

    #[test]
    fn an_unknown_gpu_gets_a_memory_verdict_and_no_guessed_speed() {
        let catalog = Catalog::bundled().expect("catalog");
        let gpu = Fake(one("NVIDIA GeForce RTX 2060", 5.8));
        let rep = localgpu::report(&gpu, catalog.cards());
        let fits = found(local_fits(&job("qwen2.5-7b", Task::Infer), rep).expect("fit"));
        assert_eq!(fits[0].gpu.catalog_id, None);
        assert_eq!(fits[0].fit.card_name, "NVIDIA GeForce RTX 2060");
        assert_ne!(fits[0].fit.verdict, FitVerdict::FitsOn1);
        assert_eq!(fits[0].fit.speed, None);
    }

    #[test]
    fn no_gpu_is_a_normal_answer() {
        let none = Fake(ProbeOutcome::Unavailable {
            reason: NoGpuReason::NoDriver,
            detail: "libnvidia-ml.so.1: cannot open shared object file".into(),
        });
        let rep = localgpu::report(&none, Catalog::bundled().expect("c").cards());
        match local_fits(&job("qwen2.5-7b", Task::Infer), rep).expect("ok") {
            LocalFitReport::NoLocalGpu { reason, .. } => assert_eq!(reason, NoGpuReason::NoDriver),
            other => panic!("{other:?}"),
        }
    }
}
