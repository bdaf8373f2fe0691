//! Speed and time: decode tokens/s from memory bandwidth, prefill from dense TFLOPS, training time
//! from 6·N·D (plus the attention term) over GPUs × peak × MFU.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::job::{Engine, Parallelism, Task};
use super::{Resolved, Uncertain};
use crate::catalog::Card;

/// Share of the datasheet bandwidth a decode step achieves on the weight stream. Assumption
/// (typical achieved HBM/GDDR copy bandwidth); the per-layer overheads below absorb the rest.
pub const BANDWIDTH_EFFICIENCY: f64 = 0.9;
/// Fixed time per layer per decode step, seconds, added to the weight stream. Calibrated on
/// estimator-validation.md D4's Qwen2.5-7B BF16 rows (A100-80GB SXM, 2,039 GB/s): transformers
/// 40.38 tok/s -> 24.77 ms/token, of which 14.14 GB / (2,039 GB/s × 0.9) = 7.70 ms is the weight
/// stream: (24.77 − 7.70) / 28 layers = 0.609 ms. vLLM 84.28 tok/s -> (11.87 − 7.70) / 28 =
/// 0.149 ms. For transformers this additive form is used only for a layer split over several GPUs
/// (accelerate `device_map`), checked by D4's 72B row on 2 GPUs; one GPU is launch-bound, below.
pub const HF_LAYER_OVERHEAD_S: f64 = 0.609e-3;
/// Eager transformers decode on one GPU at batch 1 is bound by the host launching kernels, not by
/// the weight stream, which runs underneath it: a step takes `max(layers × this, stream)`. The
/// same D4 7B row: 24.77 ms / 28 layers = 0.8846 ms. Held out: Qwen2.5-14B (48 layers, 24.74
/// tok/s, our 42.5 ms vs 40.4 measured) and 32B (64 layers, 17.54 tok/s, 56.6 vs 57.0 ms); the
/// additive form ran those 10 % and 23 % slow (2026-12-02 refit). Depends on the host CPU, which
/// no row varies: marked `hf_launch_bound`.
pub const HF_LAYER_LAUNCH_S: f64 = 0.8846e-3;
pub const VLLM_LAYER_OVERHEAD_S: f64 = 0.149e-3;
/// llama.cpp uses CUDA graphs like vLLM; no absolute measurement in the snapshot (D5 has no
/// hardware), so vLLM's figure is assumed and speed is marked uncertain.
pub const LLAMA_CPP_LAYER_OVERHEAD_S: f64 = 0.149e-3;
/// Share of dense peak a prefill reaches. Assumption (no prefill measurement in the snapshot).
pub const PREFILL_EFFICIENCY: f64 = 0.5;
/// Default MFU for pre-training on a tuned stack: torchtitan measured 33.7 % (eager) and 39.0 %
/// (torch.compile) for Llama 3.1 8B on 8× H100 (validation D1/C5); Llama 3 405B reached 38–43 %
/// (D3). 0.35 sits at the eager end: a newcomer's first run is rarely compiled and tuned.
pub const MFU_PRETRAIN: f64 = 0.35;
/// Default MFU for fine-tuning with the Hugging Face Trainer / PEFT: "often 20–35 %"
/// (gpu-catalog.md §5); we take the middle-upper 0.30.
pub const MFU_FINETUNE: f64 = 0.30;

pub fn default_mfu(task: Task) -> f64 {
    match task {
        Task::Pretrain => MFU_PRETRAIN,
        _ => MFU_FINETUNE,
    }
}

/// Dense 16-bit TFLOPS used for compute-bound work: BF16 with FP32 accumulate (the GeForce
/// half-rate figure on consumer cards), or FP16 where the card has no BF16 (T4, V100).
pub fn peak_tflops(card: &Card) -> Option<f64> {
    card.bf16_dense_tflops.or(card.fp16_dense_tflops_fp16acc)
}

/// Training FLOPs per token (torchtitan / PaLM): 6·(N − N_embedding) + 6·L·H·(d_qk + d_v)·T.
/// LoRA/QLoRA skip the frozen weights' gradient matmuls: 4·(N − N_emb) (forward + input grads).
/// Without a shape only 6·N (or 4·N) is known.
pub fn train_flops_per_token(r: &Resolved) -> f64 {
    let p = &r.params;
    let n = p.total - p.embedding;
    let weight_factor = match r.job.task {
        Task::Lora | Task::Qlora => 4.0,
        _ => 6.0,
    };
    let attn = r.model.shape().map_or(0.0, |s| {
        6.0 * s.layers * s.heads * (2.0 * s.head_dim) * f64::from(r.job.context_tokens)
    });
    weight_factor * n + attn
}

/// Seconds to process `flops` on `gpus` GPUs of `peak_tflops` at `mfu`.
pub fn compute_seconds(flops: f64, gpus: u32, peak_tflops: f64, mfu: f64) -> f64 {
    flops / (f64::from(gpus.max(1)) * peak_tflops * 1e12 * mfu)
}

/// Speed of a job on `gpus` cards of one kind. Units are in the field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Speed {
    /// Generated tokens per second for the whole batch (inference).
    pub decode_tokens_per_s: Option<f64>,
    /// Prompt tokens per second (inference).
    pub prefill_tokens_per_s: Option<f64>,
    /// Training tokens per second over all GPUs.
    pub train_tokens_per_s: Option<f64>,
    pub train_flops_per_token: Option<f64>,
    pub train_flops_total: Option<f64>,
    pub mfu: Option<f64>,
    /// Hours for the job: training tokens, or `generate_tokens` for inference.
    pub job_hours: Option<f64>,
    pub job_days: Option<f64>,
}

/// Decode and prefill speed of an inference job.
pub fn inference_speed(
    r: &Resolved,
    card: &Card,
    gpus: u32,
    offload_cpu_bytes: f64,
    unc: &mut Vec<Uncertain>,
) -> Speed {
    let job = &r.job;
    let n = f64::from(gpus.max(1));
    let par = job.parallelism_for(gpus);
    let p = &r.params;
    // Every decode step streams all weights but the input embedding table (one row is read).
    let emb_bytes = if r.quant.embeddings_16bit {
        p.embedding * 2.0
    } else {
        p.embedding * r.quant.bits_per_weight / 8.0
    };
    let stream = r.quant.weight_bytes(p) - emb_bytes;
    let avg_ctx = (f64::from(job.prompt_tokens.unwrap_or(1)) + f64::from(job.context_tokens)) / 2.0;
    let kv = r
        .model
        .kv_bytes_per_token(job.kv_cache.bytes_per_element())
        .unwrap_or(0.0)
        * avg_ctx
        * f64::from(job.batch.max(1));
    let bw = card.mem_bw_gbps * 1e9 * BANDWIDTH_EFFICIENCY;
    let gpu_bytes = (stream + kv - offload_cpu_bytes).max(0.0);
    let mem_s = match par {
        // Tensor parallel: all GPUs stream their share at once.
        Parallelism::TensorParallel if gpus > 1 => gpu_bytes / n / bw,
        // Layer split: the GPUs take turns.
        _ => gpu_bytes / bw,
    };
    let overhead = match job.engine {
        Engine::Transformers => HF_LAYER_OVERHEAD_S,
        Engine::Vllm => VLLM_LAYER_OVERHEAD_S,
        Engine::LlamaCpp => LLAMA_CPP_LAYER_OVERHEAD_S,
    };
    let layers = r.model.layers.map(f64::from);
    let peak = peak_tflops(card);
    let mut decode = None;
    if let Some(l) = layers {
        // One GPU, eager transformers: the host's kernel launches bound the step and the weight
        // stream overlaps them. A layer split adds hooks and device hops: additive form.
        let hf_launch_bound =
            job.engine == Engine::Transformers && !(par == Parallelism::Pipeline && gpus > 1);
        let mut step = if hf_launch_bound {
            unc.push(Uncertain::new(
                "hf_launch_bound",
                "eager transformers decode at batch 1 is bound by the host CPU launching kernels; calibrated on one A100 host",
            ));
            (l * HF_LAYER_LAUNCH_S).max(mem_s)
        } else {
            mem_s + l * overhead
        };
        if offload_cpu_bytes > 0.0 {
            match job.host_mem_bw_gbps {
                Some(h) => step += offload_cpu_bytes / (h * 1e9),
                None => {
                    unc.push(Uncertain::new(
                        "cpu_bandwidth_unknown",
                        "layers run on the CPU; their speed depends on host memory bandwidth",
                    ));
                    step = f64::NAN;
                }
            }
        }
        // Large batches turn compute-bound: 2·N FLOPs per token.
        if let Some(pk) = peak {
            let compute =
                2.0 * p.total * f64::from(job.batch.max(1)) / (n * pk * 1e12 * PREFILL_EFFICIENCY);
            step = step.max(compute);
        }
        if step.is_finite() {
            decode = Some(f64::from(job.batch.max(1)) / step);
        }
    } else {
        unc.push(Uncertain::new(
            "speed_unknown_shape",
            "per-layer overhead needs the layer count",
        ));
    }
    if job.engine == Engine::LlamaCpp {
        unc.push(Uncertain::new(
            "llama_cpp_speed_uncalibrated",
            "no absolute llama.cpp speed with known hardware in the reference data",
        ));
    }
    if r.quant.is_hf_low_bit() {
        unc.push(Uncertain::new(
            "low_bit_kernel_speed",
            "4-bit GPTQ/AWQ/bnb kernels are not bandwidth-bound at batch 1 in a way the data calibrates",
        ));
    }
    let prefill = peak.map(|pk| {
        let attn = r.model.shape().map_or(0.0, |s| {
            4.0 * s.layers
                * s.heads
                * s.head_dim
                * f64::from(job.prompt_tokens.unwrap_or(job.context_tokens))
                / 2.0
        });
        n * pk * 1e12 * PREFILL_EFFICIENCY / (2.0 * p.total + attn)
    });
    let job_hours = match (job.generate_tokens, decode) {
        (Some(t), Some(d)) if d > 0.0 => Some(t / d / 3600.0),
        _ => None,
    };
    Speed {
        decode_tokens_per_s: decode,
        prefill_tokens_per_s: prefill,
        train_tokens_per_s: None,
        train_flops_per_token: None,
        train_flops_total: None,
        mfu: None,
        job_hours,
        job_days: job_hours.map(|h| h / 24.0),
    }
}

/// Training throughput and time on `gpus` cards.
pub fn training_speed(r: &Resolved, card: &Card, gpus: u32, unc: &mut Vec<Uncertain>) -> Speed {
    let job = &r.job;
    let mfu = job.mfu.unwrap_or_else(|| default_mfu(job.task));
    let fpt = train_flops_per_token(r);
    let peak = peak_tflops(card);
    if card.unverified.iter().any(|u| u == "bf16_dense_tflops") {
        unc.push(Uncertain::new(
            "peak_tflops_unverified",
            "this card's BF16 TFLOPS are not confirmed by a primary source",
        ));
    }
    let tps = peak.map(|pk| f64::from(gpus.max(1)) * pk * 1e12 * mfu / fpt);
    let total = job.train_tokens.map(|d| d * fpt);
    let hours = match (total, peak) {
        (Some(f), Some(pk)) => Some(compute_seconds(f, gpus, pk, mfu) / 3600.0),
        _ => None,
    };
    Speed {
        decode_tokens_per_s: None,
        prefill_tokens_per_s: None,
        train_tokens_per_s: tps,
        train_flops_per_token: Some(fpt),
        train_flops_total: total,
        mfu: Some(mfu),
        job_hours: hours,
        job_days: hours.map(|h| h / 24.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_guide_example_is_24_6_days_not_27() {
        // 6 × 7e9 × 2e11 = 8.4e21 FLOPs on 8 × 989.4 TF at 50 %.
        let s = compute_seconds(6.0 * 7e9 * 2e11, 8, 989.4, 0.5);
        assert!((s / 86_400.0 - 24.57).abs() < 0.01, "{}", s / 86_400.0);
        // The guide's 27 days came from a 900 TF peak; the sparse 1,979 TF would give 12.3.
        let guide = compute_seconds(8.4e21, 8, 900.0, 0.5) / 86_400.0;
        assert!((guide - 27.0).abs() < 0.1);
        let sparse = compute_seconds(8.4e21, 8, 1979.0, 0.5) / 86_400.0;
        assert!((sparse - 12.3).abs() < 0.1);
    }

    #[test]
    fn mfu_defaults_sit_inside_the_measured_ranges() {
        // D1: 33.7–39.0 % measured on 8×H100; §5: HF Trainer 20–35 %.
        assert!((0.337..=0.39).contains(&MFU_PRETRAIN));
        assert!((0.20..=0.35).contains(&MFU_FINETUNE));
    }
}
