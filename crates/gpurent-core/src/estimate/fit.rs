//! Fit verdicts per catalog card (fits on 1 / fits on N / partial offload / doesn't fit), and the
//! ranking of cards and of user-supplied offers by cost for the job.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::cost::{job_cost, JobCost, Offer};
use super::job::{Engine, Parallelism, Task};
use super::memory::{self, usable_gib, OffloadPlan};
use super::speed::{self, Speed};
use super::{Resolved, Uncertain};
use crate::catalog::Card;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FitVerdict {
    FitsOn1,
    FitsOnN,
    /// llama.cpp/Ollama runs it with some layers on the CPU (slow).
    PartialOffload,
    DoesNotFit,
}

/// One card's answer for the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CardFit {
    pub card_id: String,
    pub card_name: String,
    pub vram_gb: f64,
    /// What CUDA shows of it (less 6.25 % on GDDR cards with ECC, see `ecc_reserve`).
    pub usable_gib: f64,
    /// GDDR memory with ECC: CUDA shows 6.25 % less (assumed on, as rented).
    pub ecc_reserve: bool,
    /// The job computes in bf16 but this card has none (compute capability < 8.0: T4, V100): it
    /// has to run in fp16 (with loss scaling when training), or on another card.
    pub no_bf16: bool,
    /// What the job may use of it (vLLM: `gpu_memory_utilization` × usable).
    pub budget_gib: f64,
    pub verdict: FitVerdict,
    /// GPUs used in this row (the fewest that fit, or the job's count if larger).
    pub gpus: u32,
    pub per_gpu_gib: f64,
    pub headroom_gib: f64,
    /// Multi-GPU with tensor parallel or sharded training: the interconnect carries every step.
    pub nvlink_matters: bool,
    pub card_has_nvlink: bool,
    /// More than 8 GPUs: several machines.
    pub multi_node: bool,
    pub offload: Option<OffloadPlan>,
    pub speed: Option<Speed>,
    /// vLLM: tokens of KV cache the leftover budget holds (all sequences together).
    pub kv_capacity_tokens: Option<f64>,
}

const GPU_COUNTS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Per-GPU memory of the job on `gpus` GPUs.
pub fn per_gpu(r: &Resolved, gpus: u32, unc: &mut Vec<Uncertain>) -> memory::PerGpuMemory {
    if r.job.task.is_training() {
        memory::training(r, gpus, unc)
    } else {
        memory::inference(r, gpus, unc)
    }
}

fn budget(r: &Resolved, usable: f64) -> f64 {
    if r.job.task == Task::Infer && r.job.engine == Engine::Vllm {
        usable * r.job.vllm.gpu_memory_utilization
    } else {
        usable
    }
}

fn allowed(r: &Resolved, n: u32) -> bool {
    let max = if r.job.task.is_training() { 64 } else { 8 };
    if n > max {
        return false;
    }
    if n > 1 && r.job.parallelism_for(n) == Parallelism::TensorParallel {
        // vLLM needs the attention heads to divide evenly.
        if let Some(h) = r.model.attention_heads {
            return h % n == 0;
        }
    }
    true
}

/// The verdict for one card.
pub fn fit_card(r: &Resolved, card: &Card) -> CardFit {
    let usable = usable_gib(card);
    let cap = budget(r, usable);
    let mut scratch = Vec::new();
    let mut found = None;
    for n in GPU_COUNTS.into_iter().filter(|&n| allowed(r, n)) {
        let m = per_gpu(r, n, &mut scratch);
        if m.total <= cap {
            found = Some((n, m));
            break;
        }
    }
    let mut offload = None;
    let (verdict, gpus, mem) = match found {
        Some((n, _)) => {
            let n = n
                .max(r.job.gpus)
                .min(if r.job.task.is_training() { 64 } else { 8 });
            let m = per_gpu(r, n, &mut scratch);
            (
                if n == 1 {
                    FitVerdict::FitsOn1
                } else {
                    FitVerdict::FitsOnN
                },
                n,
                m,
            )
        }
        None => {
            let m = per_gpu(r, 1, &mut scratch);
            if r.job.task == Task::Infer && r.job.engine == Engine::LlamaCpp {
                offload = memory::llama_cpp_offload(r, usable);
            }
            let v = if offload.as_ref().is_some_and(|o| o.layers_on_gpu > 0) {
                FitVerdict::PartialOffload
            } else {
                FitVerdict::DoesNotFit
            };
            (v, 1, m)
        }
    };
    let par = r.job.parallelism_for(gpus);
    let nvlink_matters = gpus > 1
        && match (r.job.task, par) {
            (_, Parallelism::TensorParallel) => true,
            (Task::Infer, _) => false,
            (_, Parallelism::Zero2 | Parallelism::Zero3) => true,
            _ => false,
        };
    let mut unc = Vec::new();
    let speed = (verdict != FitVerdict::DoesNotFit).then(|| {
        if r.job.task.is_training() {
            speed::training_speed(r, card, gpus, &mut unc)
        } else {
            let cpu_bytes = offload
                .as_ref()
                .map_or(0.0, |o| o.cpu_gib * super::model::GIB);
            speed::inference_speed(r, card, gpus, cpu_bytes, &mut unc)
        }
    });
    let kv_capacity_tokens = (r.job.task == Task::Infer
        && r.job.engine == Engine::Vllm
        && verdict != FitVerdict::DoesNotFit)
        .then(|| {
            let free = cap - (mem.total - mem.breakdown.kv_cache);
            let per_tok = r
                .model
                .kv_bytes_per_token(r.job.kv_cache.bytes_per_element())
                .unwrap_or(0.0)
                / super::model::GIB;
            let share = if gpus > 1 { f64::from(gpus) } else { 1.0 };
            if per_tok > 0.0 {
                free / (per_tok / share)
            } else {
                0.0
            }
        });
    CardFit {
        card_id: card.id.clone(),
        card_name: card.name.clone(),
        vram_gb: card.vram_gb,
        usable_gib: usable,
        ecc_reserve: memory::gddr_ecc(card),
        no_bf16: computes_in_bf16(r) && !card.bf16_supported,
        budget_gib: cap,
        verdict,
        gpus,
        per_gpu_gib: mem.total,
        headroom_gib: cap - mem.total,
        nvlink_matters,
        card_has_nvlink: card.nvlink,
        multi_node: gpus > 8,
        offload,
        speed,
        kv_capacity_tokens,
    }
}

/// Training always computes in bf16 here (mixed or pure bf16); inference does when its weights
/// are bf16.
pub fn computes_in_bf16(r: &Resolved) -> bool {
    r.job.task.is_training() || r.quant.id == "bf16"
}

/// Catalog cards in the order a newcomer wants without prices: fits on one, then on few; among
/// those the smallest card that is enough (memory is what costs), then the faster.
pub fn rank_cards(fits: &mut [CardFit]) {
    fits.sort_by(|a, b| {
        a.verdict
            .cmp(&b.verdict)
            .then(a.gpus.cmp(&b.gpus))
            .then_with(|| a.vram_gb.total_cmp(&b.vram_gb))
            .then_with(|| speed_key(b).total_cmp(&speed_key(a)))
    });
}

fn speed_key(f: &CardFit) -> f64 {
    f.speed.as_ref().map_or(0.0, |s| {
        s.decode_tokens_per_s
            .or(s.train_tokens_per_s)
            .unwrap_or(0.0)
    })
}

/// One offer, priced for the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RankedOffer {
    /// Index into the job's offers.
    pub offer_index: usize,
    pub card_id: String,
    pub verdict: FitVerdict,
    pub gpus: u32,
    pub price_per_hour_all_gpus: f64,
    /// The bill for the job (needs training tokens or `generate_tokens`).
    pub cost: Option<JobCost>,
    /// Inference: price per million generated tokens at the estimated decode speed.
    pub cost_per_million_tokens: Option<f64>,
}

impl RankedOffer {
    fn key(&self) -> f64 {
        self.cost
            .as_ref()
            .map(|c| c.total_cost)
            .or(self.cost_per_million_tokens)
            .unwrap_or(self.price_per_hour_all_gpus)
    }
}

/// 0 when the job runs fully on GPUs, 1 when partly on the CPU.
fn runs_on_gpu(v: FitVerdict) -> u8 {
    u8::from(v == FitVerdict::PartialOffload)
}

/// Price every offer whose card fits (on 1, on N, or partially) and sort cheapest first.
/// Offers for unknown or non-fitting cards are left out.
pub fn rank_offers(
    fits: &[CardFit],
    offers: &[Offer],
    settings: &super::cost::CostSettings,
) -> Vec<RankedOffer> {
    let by_id: HashMap<&str, &CardFit> = fits.iter().map(|f| (f.card_id.as_str(), f)).collect();
    let mut out: Vec<RankedOffer> = offers
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let f = by_id.get(o.card_id.as_str())?;
            if f.verdict == FitVerdict::DoesNotFit
                || !o.price_per_gpu_hour.is_finite()
                || o.price_per_gpu_hour < 0.0
            {
                return None;
            }
            let per_hour = o.price_per_gpu_hour * f64::from(f.gpus);
            let sp = f.speed.as_ref();
            let cost = sp
                .and_then(|s| s.job_hours)
                .map(|h| job_cost(h, f.gpus, o, settings));
            let cpm = sp
                .and_then(|s| s.decode_tokens_per_s)
                .filter(|t| *t > 0.0)
                .map(|t| per_hour / (t * 3600.0) * 1e6);
            Some(RankedOffer {
                offer_index: i,
                card_id: o.card_id.clone(),
                verdict: f.verdict,
                gpus: f.gpus,
                price_per_hour_all_gpus: per_hour,
                cost,
                cost_per_million_tokens: cpm,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        runs_on_gpu(a.verdict)
            .cmp(&runs_on_gpu(b.verdict))
            .then_with(|| a.key().total_cmp(&b.key()))
    });
    out
}
