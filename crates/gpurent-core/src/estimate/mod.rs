//! The estimator: for a job (model, task, precision, context, batch, engine, GPUs) it answers how
//! much memory each GPU needs and why, which catalog cards fit on one / on N / not at all, how fast
//! and how long, what it costs under the user's prices, and a plain-language explanation as
//! structured items the UI translates. Pure functions, no I/O; every number is a breakdown with
//! its unit in the field name; values that cannot be grounded are listed in `uncertain`.
//! Formulas, defaults and sources: docs/estimator.md. Validation: tests/estimator_validation.rs.

pub mod compare;
pub mod cost;
pub mod explain;
pub mod fit;
pub mod job;
pub mod kinds;
pub mod local;
pub mod memory;
pub mod model;
pub mod speed;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::catalog::Catalog;
use crate::infra::error::CoreError;

pub use cost::{Billing, BillingRule, CostSettings, JobCost, Offer, RentVsBuy};
pub use explain::Explanation;
pub use fit::{CardFit, FitVerdict, RankedOffer};
pub use job::{
    Engine, Job, KvCacheDtype, LoraTargets, LossImpl, Optimizer, Parallelism, Task, TrainPrecision,
    TrainingSettings, VllmSettings,
};
pub use memory::{MemoryBreakdown, MemoryItem, MemoryLine, OffloadPlan, PerGpuMemory};
pub use model::{ModelCatalog, ModelSpec, ParamSplit, QuantFormat, GIB};
pub use speed::Speed;

/// A value the estimator could not ground, with a stable key for the UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Uncertain {
    pub key: String,
    /// English fallback; the UI translates by key.
    pub reason: String,
}

impl Uncertain {
    pub fn new(key: &str, reason: &str) -> Uncertain {
        Uncertain {
            key: key.to_string(),
            reason: reason.to_string(),
        }
    }
}

/// A job with its model and format looked up.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub job: Job,
    pub model: ModelSpec,
    pub params: ParamSplit,
    pub quant: QuantFormat,
}

impl Resolved {
    /// Look up the model and format and check the job makes sense.
    pub fn new(job: &Job, models: &ModelCatalog) -> Result<Resolved, CoreError> {
        let model = match (&job.custom, &job.model) {
            (Some(m), _) => {
                if !(m.params_b > 0.0 && m.params_b.is_finite()) {
                    return Err(CoreError::invalid(
                        "params_b",
                        "a custom model needs its parameter count (billions, > 0)",
                    ));
                }
                m.clone()
            }
            (None, Some(id)) => models.model(id)?.clone(),
            (None, None) => {
                return Err(CoreError::invalid(
                    "model",
                    "choose a model from the catalog or describe a custom one",
                ))
            }
        };
        let quant = models.quant(job.quant_id())?.clone();
        if job.context_tokens == 0 || job.batch == 0 || job.gpus == 0 {
            return Err(CoreError::invalid(
                "context",
                "context, batch and GPUs must be at least 1",
            ));
        }
        if let Some(m) = job.mfu {
            if !(m > 0.0 && m <= 1.0) {
                return Err(CoreError::invalid(
                    "mfu",
                    "MFU is a fraction between 0 and 1",
                ));
            }
        }
        let u = job.vllm.gpu_memory_utilization;
        if !(u > 0.0 && u <= 1.0) {
            return Err(CoreError::invalid(
                "gpu_memory_utilization",
                "a fraction between 0 and 1",
            ));
        }
        let gguf_engine = job.task == Task::Infer && job.engine == Engine::LlamaCpp;
        if quant.is_gguf() != gguf_engine && quant.family != "any" {
            return Err(CoreError::invalid(
                "quant",
                if quant.is_gguf() {
                    "GGUF formats run in llama.cpp / Ollama (engine llama_cpp, task infer)"
                } else {
                    "llama.cpp / Ollama runs GGUF formats (q4_k_m, q8_0, ...)"
                },
            ));
        }
        match job.task {
            Task::Full | Task::Pretrain if quant.bits_per_weight < 16.0 => {
                return Err(CoreError::invalid(
                    "quant",
                    "full fine-tuning and pre-training train 16-bit weights (use bf16, or LoRA / QLoRA)",
                ))
            }
            Task::Qlora if quant.bits_per_weight > 5.0 => {
                return Err(CoreError::invalid(
                    "quant",
                    "QLoRA trains on a 4-bit base (nf4_dq or nf4)",
                ))
            }
            _ => {}
        }
        let params = model.params();
        Ok(Resolved {
            job: job.clone(),
            model,
            params,
            quant,
        })
    }

    /// The same job with another context length.
    pub fn with_context(&self, tokens: u32) -> Resolved {
        let mut r = self.clone();
        r.job.context_tokens = tokens;
        if let Some(p) = r.job.prompt_tokens {
            r.job.prompt_tokens = Some(p.min(tokens));
        }
        r
    }
}

/// The whole answer for a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Estimate {
    pub model: ModelSpec,
    pub params: ParamSplit,
    pub quant: QuantFormat,
    pub task: Task,
    pub engine: Engine,
    pub gpus: u32,
    pub parallelism: Parallelism,
    /// Memory of each of the job's `gpus` GPUs.
    pub per_gpu_gib: PerGpuMemory,
    /// All GPUs together.
    pub total_gib: f64,
    /// Size of the weights as a download, decimal GB.
    pub weights_gb: f64,
    pub kv_cache_bytes_per_token: Option<f64>,
    /// Every catalog card, best first.
    pub fits: Vec<CardFit>,
    /// The user's offers priced for this job, cheapest first.
    pub ranking: Vec<RankedOffer>,
    pub rent_vs_buy: Option<RentVsBuy>,
    pub explanation: Vec<Explanation>,
    pub uncertain: Vec<Uncertain>,
}

/// Estimate a job against the card catalog.
pub fn estimate(job: &Job, models: &ModelCatalog, cards: &Catalog) -> Result<Estimate, CoreError> {
    let r = Resolved::new(job, models)?;
    let mut uncertain = Vec::new();
    if r.quant.confidence == model::QuantConfidence::Low {
        uncertain.push(Uncertain::new(
            "quant_bits_unsourced",
            "no source in the reference data for this format's bits per weight",
        ));
    }
    if r.model.sliding_window.is_some() {
        uncertain.push(Uncertain::new(
            "sliding_window_not_modelled",
            "the KV cache is budgeted for the full context; engines that honour the window need less",
        ));
    }
    let per_gpu = fit::per_gpu(&r, job.gpus, &mut uncertain);
    let mut fits: Vec<CardFit> = cards.cards().iter().map(|c| fit::fit_card(&r, c)).collect();
    for c in cards.cards() {
        // Card-dependent uncertainty (speed on unverified peaks, offload without CPU bandwidth).
        let mut u = Vec::new();
        if fits.iter().any(|f| f.card_id == c.id && f.speed.is_some()) {
            if job.task.is_training() {
                speed::training_speed(&r, c, 1, &mut u);
            } else {
                speed::inference_speed(&r, c, 1, 0.0, &mut u);
            }
        }
        for x in u {
            if !uncertain.contains(&x) {
                uncertain.push(x);
            }
        }
    }
    let no_bf16: Vec<&str> = fits
        .iter()
        .filter(|f| f.no_bf16 && f.verdict != FitVerdict::DoesNotFit)
        .map(|f| f.card_id.as_str())
        .collect();
    if !no_bf16.is_empty() {
        uncertain.push(Uncertain {
            key: "bf16_unsupported".into(),
            reason: format!(
                "{} have no bf16: this job would run in fp16 there (with loss scaling when training; some models overflow in fp16), or use a card with bf16",
                no_bf16.join(", ")
            ),
        });
    }
    fit::rank_cards(&mut fits);
    let ranking = fit::rank_offers(&fits, &job.cost.offers, &job.cost);
    let rvb = explain::rent_vs_buy_for(&r, &fits, cards);
    let explanation = explain::explain(&r, &per_gpu, &fits, &ranking, rvb.as_ref());
    Ok(Estimate {
        weights_gb: r.quant.weight_bytes(&r.params) / 1e9,
        kv_cache_bytes_per_token: r.model.kv_bytes_per_token(job.kv_cache.bytes_per_element()),
        total_gib: per_gpu.total * f64::from(job.gpus),
        per_gpu_gib: per_gpu,
        model: r.model.clone(),
        params: r.params,
        quant: r.quant.clone(),
        task: job.task,
        engine: job.engine,
        gpus: job.gpus,
        parallelism: job.parallelism_for(job.gpus),
        fits,
        ranking,
        rent_vs_buy: rvb,
        explanation,
        uncertain,
    })
}

/// The longest context (tokens per sequence) whose per-GPU memory stays within `budget_gib`, or
/// None if even one token does not fit. Memory grows with context, so bisection finds it.
pub fn max_context(r: &Resolved, gpus: u32, budget_gib: f64) -> Option<u32> {
    let mut scratch = Vec::new();
    let fits = |c: u32| fit::per_gpu(&r.with_context(c), gpus, &mut Vec::new()).total <= budget_gib;
    if fit::per_gpu(&r.with_context(1), gpus, &mut scratch).total > budget_gib {
        return None;
    }
    let (mut lo, mut hi) = (1u32, 1u32 << 22);
    if fits(hi) {
        return Some(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(model: &str, task: Task, quant: Option<&str>) -> Estimate {
        let job = Job {
            model: Some(model.into()),
            task,
            quant: quant.map(String::from),
            ..Default::default()
        };
        estimate(
            &job,
            ModelCatalog::bundled().expect("models"),
            Catalog::bundled().expect("cards"),
        )
        .expect("estimate")
    }

    fn fit<'a>(e: &'a Estimate, id: &str) -> &'a CardFit {
        e.fits.iter().find(|f| f.card_id == id).expect(id)
    }

    /// A bf16 job on cards without bf16 is flagged in the estimate itself: per card, as an
    /// explanation item, and as an uncertainty.
    #[test]
    fn bf16_jobs_on_cards_without_bf16_are_flagged() {
        for (task, quant) in [(Task::Infer, None), (Task::Lora, None)] {
            let e = est("qwen2.5-7b", task, quant);
            assert!(fit(&e, "t4").no_bf16 && fit(&e, "v100-sxm2-32gb").no_bf16);
            assert!(!fit(&e, "a100-80gb-sxm").no_bf16);
            let cards = e
                .explanation
                .iter()
                .find_map(|x| match x {
                    Explanation::Bf16Unsupported { card_ids, training } => {
                        assert_eq!(*training, task.is_training());
                        Some(card_ids.clone())
                    }
                    _ => None,
                })
                .expect("bf16_unsupported explanation");
            assert!(cards.contains(&"v100-sxm2-32gb".to_string()), "{cards:?}");
            assert!(e.uncertain.iter().any(|u| u.key == "bf16_unsupported"));
        }
        // fp16 weights: nothing to flag.
        let e = est("qwen2.5-7b", Task::Infer, Some("fp16"));
        assert!(!fit(&e, "t4").no_bf16);
        assert!(!e
            .explanation
            .iter()
            .any(|x| matches!(x, Explanation::Bf16Unsupported { .. })));
        assert!(!e.uncertain.iter().any(|u| u.key == "bf16_unsupported"));
    }

    /// GDDR cards with ECC show 6.25 % less memory [S44]; HBM and GeForce cards do not.
    #[test]
    fn gddr_cards_with_ecc_lose_the_ecc_reserve() {
        let e = est("qwen2.5-7b", Task::Infer, None);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let t4 = fit(&e, "t4");
        assert!(t4.ecc_reserve);
        assert!(
            close(t4.usable_gib, 16.0 * 0.99 * 0.9375),
            "{}",
            t4.usable_gib
        );
        assert!(close(fit(&e, "l40s").usable_gib, 48.0 * 0.99 * 0.9375));
        let h100 = fit(&e, "h100-sxm");
        assert!(!h100.ecc_reserve && close(h100.usable_gib, 80.0 * 0.99));
        assert!(close(fit(&e, "rtx-4090").usable_gib, 24.0 * 0.99));
        // 14.85 GiB: a 7B in bf16 (14.2 GiB of weights + runtime) no longer fits one T4.
        assert_ne!(t4.verdict, FitVerdict::FitsOn1);
    }
}
