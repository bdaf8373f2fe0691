//! The plain-language explanation, as structured items: a stable `key` plus the numbers the UI
//! needs to write the sentence in zh-CN or English ("the KV cache for 32k context is 7 GiB; cut
//! context to 8k to fit a 24 GB card").

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::cost::{rent_vs_buy, spot_loss_per_interruption_hours, RentVsBuy};
use super::fit::{CardFit, FitVerdict, RankedOffer};
use super::job::{Engine, Optimizer, Task};
use super::memory::{visible_gib, PerGpuMemory};
use super::{max_context, speed, Resolved};
use crate::catalog::Catalog;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "key", rename_all = "snake_case")]
pub enum Explanation {
    /// Where the memory goes (always first).
    MemorySummary {
        total_gib: f64,
        weights_gib: f64,
        kv_cache_gib: f64,
        activations_gib: f64,
        gpus: u32,
    },
    /// The KV cache is a large share; a shorter context fits a smaller card.
    KvCacheDominates {
        kv_gib: f64,
        context: u32,
        suggested_context: u32,
        card_gb: f64,
    },
    /// Training activations dominate and checkpointing is off.
    EnableGradCheckpointing {
        activations_gib: f64,
        activations_with_checkpointing_gib: f64,
    },
    /// Logits (vocab × tokens) are a big share: a chunked or fused loss removes most of it.
    LogitsLarge { logits_gib: f64, vocab: u32 },
    /// Optimizer states (and fp32 master weights) dominate a full fine-tune.
    OptimizerStatesDominate {
        optimizer_gib: f64,
        optimizer_8bit_gib: f64,
    },
    /// The job computes in bf16, and these cards (which could hold it) have no bf16 (T4, V100):
    /// run in fp16 — with loss scaling when training — or pick a card with bf16 (CC ≥ 8.0).
    Bf16Unsupported {
        card_ids: Vec<String>,
        training: bool,
    },
    /// The weights alone exceed the largest single card.
    WeightsExceedLargestCard { weights_gib: f64, card_gb: f64 },
    /// The smallest setup that fits (fewest GPUs, then least memory, then fastest).
    BestFit {
        card_id: String,
        gpus: u32,
        per_gpu_gib: f64,
        card_gb: f64,
    },
    /// Multi-GPU over PCIe where the interconnect carries every step.
    NvlinkMatters { card_id: String, gpus: u32 },
    /// llama.cpp/Ollama would run part of the model on the CPU.
    PartialOffload {
        card_id: String,
        layers_on_gpu: u32,
        layers_total: u32,
        gpu_percent: f64,
    },
    /// vLLM takes a fixed share of the card and fills the rest with KV cache.
    VllmReserves {
        utilization: f64,
        reserved_gib: f64,
        card_gb: f64,
        kv_capacity_tokens: f64,
    },
    /// Training time on the best card.
    TrainingTime {
        days: f64,
        gpus: u32,
        card_id: String,
        mfu: f64,
        peak_tflops: f64,
    },
    /// The MFU assumption versus measurements (validation D1: 33.7–39 % on 8× H100).
    MfuAssumed {
        mfu: f64,
        measured_low: f64,
        measured_high: f64,
    },
    /// Whole-project GPU-hours of real models exceed 6·N·D (Llama 3.1 8B: 13.9 % effective, D3).
    ProjectHoursExceedEstimate { effective_utilisation_8b: f64 },
    /// Spot instances without frequent checkpoints lose work on every interruption.
    SpotNeedsCheckpoints {
        job_hours: f64,
        checkpoint_interval_minutes: Option<f64>,
        loss_per_interruption_hours: f64,
    },
    /// The cheapest offer for the job.
    CheapestOffer {
        card_id: String,
        gpus: u32,
        total_cost: Option<f64>,
        cost_per_million_tokens: Option<f64>,
        currency: String,
    },
    /// Owning the card pays off after this much use.
    RentVsBuy {
        card_id: String,
        break_even_hours: Option<f64>,
        break_even_months: Option<f64>,
        utilisation: f64,
    },
}

/// Llama 3.1 8B: 6 × 8.03e9 × 15e12 FLOPs over 1.46M H100-hours at 989.4 TF (validation D3).
pub fn llama31_8b_effective_utilisation() -> f64 {
    6.0 * 8.03e9 * 15e12 / (1.46e6 * 3600.0 * 989.4e12)
}

/// Rent-vs-buy for the best fitting card that has an offer and a buy price.
pub fn rent_vs_buy_for(r: &Resolved, fits: &[CardFit], cards: &Catalog) -> Option<RentVsBuy> {
    let s = &r.job.cost;
    let buy = s.buy_price_per_gpu?;
    let tariff = s.electricity_price_per_kwh?;
    let offer = s.offers.iter().find(|o| {
        fits.iter()
            .any(|f| f.card_id == o.card_id && f.verdict != FitVerdict::DoesNotFit)
    })?;
    let power = s
        .power_w
        .or_else(|| cards.get(&offer.card_id).ok().and_then(|c| c.tdp_w))?;
    Some(rent_vs_buy(
        buy,
        power,
        tariff,
        offer.price_per_gpu_hour,
        s.utilisation,
    ))
}

pub fn explain(
    r: &Resolved,
    mem: &PerGpuMemory,
    fits: &[CardFit],
    ranking: &[RankedOffer],
    rvb: Option<&RentVsBuy>,
) -> Vec<Explanation> {
    let job = &r.job;
    let b = &mem.breakdown;
    let mut out = vec![Explanation::MemorySummary {
        total_gib: mem.total,
        weights_gib: b.weights,
        kv_cache_gib: b.kv_cache,
        activations_gib: b.activations,
        gpus: job.gpus,
    }];
    let best = fits.first().filter(|f| f.verdict != FitVerdict::DoesNotFit);
    if let Some(f) = best {
        out.push(Explanation::BestFit {
            card_id: f.card_id.clone(),
            gpus: f.gpus,
            per_gpu_gib: f.per_gpu_gib,
            card_gb: f.vram_gb,
        });
    }
    let no_bf16: Vec<String> = fits
        .iter()
        .filter(|f| f.no_bf16 && f.verdict != FitVerdict::DoesNotFit)
        .map(|f| f.card_id.clone())
        .collect();
    if !no_bf16.is_empty() {
        out.push(Explanation::Bf16Unsupported {
            card_ids: no_bf16,
            training: job.task.is_training(),
        });
    }
    let largest = fits.iter().map(|f| f.vram_gb).fold(0.0, f64::max);
    if b.weights * f64::from(job.gpus) > visible_gib(largest) {
        out.push(Explanation::WeightsExceedLargestCard {
            weights_gib: b.weights * f64::from(job.gpus),
            card_gb: largest,
        });
    }
    // KV cache: suggest the context that fits the largest card that misses on one GPU.
    if job.task == Task::Infer && b.kv_cache > 0.25 * mem.total {
        let near_miss = fits
            .iter()
            .filter(|f| f.verdict != FitVerdict::FitsOn1)
            .max_by(|a, c| a.vram_gb.total_cmp(&c.vram_gb));
        if let Some(f) = near_miss {
            if let Some(ctx) = max_context(r, 1, f.budget_gib) {
                out.push(Explanation::KvCacheDominates {
                    kv_gib: b.kv_cache,
                    context: job.context_tokens,
                    suggested_context: round_context(ctx),
                    card_gb: f.vram_gb,
                });
            }
        }
    }
    if job.task.is_training() {
        let act = mem.line(super::MemoryItem::LayerActivations);
        if !job.training.grad_checkpointing && act > 0.3 * mem.total {
            let mut with = r.clone();
            with.job.training.grad_checkpointing = true;
            let m = super::fit::per_gpu(&with, job.gpus, &mut Vec::new());
            out.push(Explanation::EnableGradCheckpointing {
                activations_gib: act,
                activations_with_checkpointing_gib: m.line(super::MemoryItem::LayerActivations),
            });
        }
        let logits = mem.line(super::MemoryItem::Logits);
        if logits > 0.15 * mem.total {
            out.push(Explanation::LogitsLarge {
                logits_gib: logits,
                vocab: r.model.vocab_size.unwrap_or(0),
            });
        }
        if matches!(job.task, Task::Full | Task::Pretrain)
            && b.optimizer > 0.4 * mem.total
            && job.training.optimizer == Optimizer::Adamw
        {
            let mut with = r.clone();
            with.job.training.optimizer = Optimizer::Adamw8bit;
            let m = super::fit::per_gpu(&with, job.gpus, &mut Vec::new());
            out.push(Explanation::OptimizerStatesDominate {
                optimizer_gib: b.optimizer,
                optimizer_8bit_gib: m.breakdown.optimizer,
            });
        }
    }
    if let Some(f) = best.filter(|f| f.nvlink_matters && !f.card_has_nvlink) {
        out.push(Explanation::NvlinkMatters {
            card_id: f.card_id.clone(),
            gpus: f.gpus,
        });
    }
    if let Some(f) = fits
        .iter()
        .find(|f| f.verdict == FitVerdict::PartialOffload)
    {
        if let Some(o) = &f.offload {
            out.push(Explanation::PartialOffload {
                card_id: f.card_id.clone(),
                layers_on_gpu: o.layers_on_gpu,
                layers_total: o.layers_total,
                gpu_percent: o.gpu_percent,
            });
        }
    }
    if job.engine == Engine::Vllm && job.task == Task::Infer {
        if let Some(f) = best {
            out.push(Explanation::VllmReserves {
                utilization: job.vllm.gpu_memory_utilization,
                reserved_gib: f.budget_gib,
                card_gb: f.vram_gb,
                kv_capacity_tokens: f.kv_capacity_tokens.unwrap_or(0.0),
            });
        }
    }
    if job.task.is_training() {
        if let Some((f, s)) = best.and_then(|f| f.speed.as_ref().map(|s| (f, s))) {
            if let (Some(days), Some(mfu)) = (s.job_days, s.mfu) {
                let peak = crate::catalog::Catalog::bundled()
                    .ok()
                    .and_then(|c| c.get(&f.card_id).ok())
                    .and_then(speed::peak_tflops)
                    .unwrap_or(0.0);
                out.push(Explanation::TrainingTime {
                    days,
                    gpus: f.gpus,
                    card_id: f.card_id.clone(),
                    mfu,
                    peak_tflops: peak,
                });
            }
            if let Some(mfu) = s.mfu {
                out.push(Explanation::MfuAssumed {
                    mfu,
                    measured_low: 0.337,
                    measured_high: 0.39,
                });
            }
        }
        if job.task == Task::Pretrain {
            out.push(Explanation::ProjectHoursExceedEstimate {
                effective_utilisation_8b: llama31_8b_effective_utilisation(),
            });
        }
    }
    if let Some(top) = ranking.first() {
        let offer = &job.cost.offers[top.offer_index];
        out.push(Explanation::CheapestOffer {
            card_id: top.card_id.clone(),
            gpus: top.gpus,
            total_cost: top.cost.as_ref().map(|c| c.total_cost),
            cost_per_million_tokens: top.cost_per_million_tokens,
            currency: offer.currency.clone(),
        });
        if offer.spot_price_per_gpu_hour.is_some() {
            let hours = top.cost.as_ref().map_or(0.0, |c| c.job_hours);
            let ck = job.cost.checkpoint_interval_minutes;
            if ck.is_none_or(|m| m > 60.0) {
                out.push(Explanation::SpotNeedsCheckpoints {
                    job_hours: hours,
                    checkpoint_interval_minutes: ck,
                    loss_per_interruption_hours: spot_loss_per_interruption_hours(hours, ck),
                });
            }
        }
    }
    if let Some(rv) = rvb {
        let card = job
            .cost
            .offers
            .iter()
            .find(|o| (o.price_per_gpu_hour - rv.rent_per_hour).abs() < 1e-12)
            .map(|o| o.card_id.clone())
            .unwrap_or_default();
        out.push(Explanation::RentVsBuy {
            card_id: card,
            break_even_hours: rv.break_even_hours,
            break_even_months: rv.break_even_months,
            utilisation: rv.utilisation,
        });
    }
    out
}

/// Round a context down to a friendly number (multiple of 1,024 above 2,048).
fn round_context(c: u32) -> u32 {
    if c > 2048 {
        c / 1024 * 1024
    } else {
        c
    }
}
