//! Per-GPU memory: weights, KV cache, activations, gradients, optimizer states and runtime
//! overhead, for inference (per engine) and training (full / LoRA / QLoRA, single and multi-GPU).
//! All functions are pure; formulas and defaults are explained in docs/estimator.md.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::job::{Engine, LoraTargets, Parallelism, Task, TrainPrecision};
use super::model::{Shape, GIB};
use super::{Resolved, Uncertain};

/// CUDA context + cuBLAS/cuDNN workspaces, not seen by `torch.cuda.max_memory_allocated`:
/// "~0.3–0.6 GiB" (estimator-validation.md, header). We take the upper half.
pub const CUDA_CONTEXT_GIB: f64 = 0.5;
/// PyTorch caching-allocator fragmentation on top of allocated bytes. gpu-catalog.md §2.8 puts
/// usable VRAM at 0.93–0.95 × nominal after the context; we budget 5 % of allocations. Assumption.
pub const ALLOCATOR_SLACK: f64 = 0.05;
/// Ollama's per-GPU `MinimumMemory` on CUDA: 457 MiB [S24].
pub const OLLAMA_RESERVE_GIB: f64 = 457.0 / 1024.0;
/// vLLM CUDA-graph + NCCL memory outside the PyTorch peak: "~0.5–2 GiB" [S23]; 1 GiB assumed.
pub const VLLM_CUDA_GRAPHS_GIB: f64 = 1.0;
/// Fraction of a card's nominal memory that CUDA reports as total: an "80 GB" A100 shows 79.3 GiB
/// (estimator-validation.md B2/B5), a 24 GB RTX 4090 23.6 GiB. Nominal sizes are binary (GiB).
pub const VISIBLE_FRACTION: f64 = 0.99;
/// llama.cpp / Ollama default `num_batch` (graph formulas use min(context, 512)) [S24].
pub const LLAMA_CPP_BATCH: f64 = 512.0;

/// GDDR cards with ECC enabled keep the check bits in ordinary memory: "the available DRAM is
/// reduced by 6.25%" [S44] (a 16 GB T4 shows 15,079 MiB; our L40S host 46,068 MiB of 49,152).
/// HBM carries ECC out of band, at no capacity cost. Data-center and pro GDDR cards (T4, A10, L4,
/// L40S, RTX A6000, …) are rented with ECC on, so it is assumed on for every GDDR card with ECC.
pub const GDDR_ECC_RESERVE: f64 = 0.0625;

/// Memory the CUDA runtime shows for a card of `vram_gb` nominal size without an ECC reserve
/// (HBM cards, GeForce), in GiB.
pub fn visible_gib(vram_gb: f64) -> f64 {
    vram_gb * VISIBLE_FRACTION
}

/// Whether the card loses [`GDDR_ECC_RESERVE`] of its memory to ECC (GDDR memory with ECC).
pub fn gddr_ecc(card: &crate::catalog::Card) -> bool {
    card.ecc && card.memory_type.to_ascii_uppercase().contains("GDDR")
}

/// The share of a card's nominal memory CUDA shows: [`VISIBLE_FRACTION`], less the ECC reserve
/// on GDDR cards with ECC (0.99 × 0.9375 ≈ 0.928).
pub fn usable_fraction(card: &crate::catalog::Card) -> f64 {
    if gddr_ecc(card) {
        VISIBLE_FRACTION * (1.0 - GDDR_ECC_RESERVE)
    } else {
        VISIBLE_FRACTION
    }
}

/// Memory the CUDA runtime shows for this card, in GiB.
pub fn usable_gib(card: &crate::catalog::Card) -> f64 {
    card.vram_gb * usable_fraction(card)
}

/// The six buckets the UI stacks in its bar (GiB per GPU).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct MemoryBreakdown {
    pub weights: f64,
    pub kv_cache: f64,
    pub activations: f64,
    pub gradients: f64,
    pub optimizer: f64,
    pub overhead: f64,
}

/// A finer line inside a bucket, for the "why" panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum MemoryItem {
    /// Quantized / 16-bit linear layers.
    LinearWeights,
    /// Embeddings and LM head kept 16-bit by GPTQ/AWQ/bnb.
    Embeddings16bit,
    KvCache,
    /// transformers keeps the prompt's MLP activations during prefill.
    PrefillActivations,
    /// vLLM's start-up profiling forward of `max_num_batched_tokens`.
    ProfileActivations,
    /// llama.cpp / Ollama compute-graph buffer.
    GraphBuffer,
    /// Saved layer activations for backward.
    LayerActivations,
    /// Logits and loss tensors (vocab × tokens).
    Logits,
    /// One dequantised bf16 weight matrix during a QLoRA forward.
    DequantBuffer,
    /// ZeRO-3/FSDP: one layer's gathered parameters and gradients.
    GatheredLayer,
    LoraAdapters,
    Gradients,
    MasterWeights,
    OptimizerStates,
    CudaContext,
    AllocatorSlack,
    CudaGraphs,
    OllamaReserve,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct MemoryLine {
    pub item: MemoryItem,
    pub gib: f64,
}

/// Memory of one GPU (all GPUs hold the same amount under the modelled parallelism).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PerGpuMemory {
    /// Sum of the breakdown, GiB.
    pub total: f64,
    pub breakdown: MemoryBreakdown,
    pub lines: Vec<MemoryLine>,
}

impl PerGpuMemory {
    fn from_lines(lines: Vec<MemoryLine>) -> PerGpuMemory {
        let mut b = MemoryBreakdown::default();
        for l in &lines {
            let slot = match l.item {
                MemoryItem::LinearWeights | MemoryItem::Embeddings16bit => &mut b.weights,
                MemoryItem::KvCache => &mut b.kv_cache,
                MemoryItem::PrefillActivations
                | MemoryItem::ProfileActivations
                | MemoryItem::GraphBuffer
                | MemoryItem::LayerActivations
                | MemoryItem::Logits
                | MemoryItem::DequantBuffer
                | MemoryItem::GatheredLayer => &mut b.activations,
                MemoryItem::LoraAdapters | MemoryItem::MasterWeights => &mut b.optimizer,
                MemoryItem::Gradients => &mut b.gradients,
                MemoryItem::OptimizerStates => &mut b.optimizer,
                MemoryItem::CudaContext
                | MemoryItem::AllocatorSlack
                | MemoryItem::CudaGraphs
                | MemoryItem::OllamaReserve => &mut b.overhead,
            };
            *slot += l.gib;
        }
        let total = b.weights + b.kv_cache + b.activations + b.gradients + b.optimizer + b.overhead;
        PerGpuMemory {
            total,
            breakdown: b,
            lines,
        }
    }

    pub fn line(&self, item: MemoryItem) -> f64 {
        self.lines
            .iter()
            .filter(|l| l.item == item)
            .map(|l| l.gib)
            .sum()
    }

    /// What PyTorch's `max_memory_allocated` would show: the total without runtime overhead.
    pub fn allocated_gib(&self) -> f64 {
        self.total - self.breakdown.overhead
    }
}

/// Bytes of prefill activations per prompt token in transformers eager mode: the MLP's gate, up
/// and product tensors (3 × intermediate, gpu-catalog.md §2.8 / validation B1) plus ~4 hidden-size
/// tensors (residual, norm output in fp32 halves, attention output). The 4·h part is calibrated on
/// S37 and documented as such.
pub fn hf_prefill_bytes_per_token(s: &Shape, tp: f64) -> Option<f64> {
    Some((3.0 * s.intermediate? / tp + 4.0 * s.hidden) * 2.0)
}

/// Bytes saved for backward per token per layer (16-bit, FlashAttention, no tensor parallel), for a
/// Llama-style block: RMSNorm inputs kept in fp32 (2 × 4h), q/k/v input (2h), q (2h), k and v
/// (2 × 2·kv·hd), attention output (2h), MLP input (2h), gate, up, SiLU output and product
/// (4 × 2I). The GPT-block equivalent is Korthikanti et al.'s 34·h (gpu-catalog.md §2.7).
/// Without FlashAttention the score matrix adds 5·heads·seq bytes (Korthikanti's 5as²b term).
pub fn layer_activation_bytes_per_token(s: &Shape, seq: f64, flash: bool) -> Option<f64> {
    let i = s.intermediate?;
    let base = 16.0 * s.hidden + 4.0 * s.kv_heads * s.head_dim + 8.0 * i;
    Some(if flash {
        base
    } else {
        base + 5.0 * s.heads * seq
    })
}

/// Ollama's compute-graph sizes (partial offload, full offload) in bytes, per architecture
/// (`fs/ggml/ggml.go GraphSize`) [S24]. Unknown architectures use the llama formula (uncertain).
pub fn ollama_graph_bytes(arch: &str, s: &Shape, context: f64) -> Option<(f64, f64)> {
    let b = context.min(LLAMA_CPP_BATCH);
    let e = s.hidden;
    let v = s.vocab?;
    let h = s.heads;
    let c = context;
    match arch {
        "qwen2" => {
            let full = (4.0 * b * (e + v)).max(4.0 * b * (1.0 + 2.0 * e + c + c * h));
            let partial = (4.0 * b * (e + v) + e * v * 105.0 / 128.0)
                .max(4.0 * (b * (1.0 + 2.0 * e + c * (1.0 + h)) + e * (1.0 + c)));
            Some((partial, full))
        }
        _ => {
            let full = (4.0 * b * (1.0 + 4.0 * e + c * (1.0 + h))).max(4.0 * b * (e + v));
            let partial = 4.0 * b * e
                + (4.0 * b * (1.0 + e + c.max(e))
                    + e * e * 9.0 / 16.0
                    + 4.0 * c * (b * h + s.head_dim * s.kv_heads))
                    .max(4.0 * b * (e + v) + e * v * 105.0 / 128.0);
            Some((partial, full))
        }
    }
}

fn line(item: MemoryItem, bytes: f64) -> MemoryLine {
    MemoryLine {
        item,
        gib: bytes / GIB,
    }
}

/// Per-GPU memory of an inference job on `gpus` GPUs.
pub fn inference(r: &Resolved, gpus: u32, unc: &mut Vec<Uncertain>) -> PerGpuMemory {
    let job = &r.job;
    let n = f64::from(gpus.max(1));
    let par = job.parallelism_for(gpus);
    let split = if gpus > 1 { n } else { 1.0 };
    let p = &r.params;
    let mut lines = Vec::new();
    if r.quant.embeddings_16bit {
        lines.push(line(
            MemoryItem::LinearWeights,
            p.linear * r.quant.bits_per_weight / 8.0 / split,
        ));
        lines.push(line(
            MemoryItem::Embeddings16bit,
            (p.embedding + p.lm_head) * 2.0 / split,
        ));
    } else {
        lines.push(line(
            MemoryItem::LinearWeights,
            r.quant.weight_bytes(p) / split,
        ));
    }
    let tokens = f64::from(job.context_tokens) * f64::from(job.batch.max(1));
    let shape = r.model.shape();
    match r.model.kv_bytes_per_token(job.kv_cache.bytes_per_element()) {
        Some(per_tok) => {
            let kv_heads = shape.map_or(1.0, |s| s.kv_heads);
            // TP: each rank holds kv_heads / TP heads, at least one (replicated when kv_heads < TP).
            let share = match par {
                Parallelism::TensorParallel => (1.0 / n).max(1.0 / kv_heads),
                Parallelism::Pipeline => 1.0 / n,
                _ => 1.0,
            };
            lines.push(line(MemoryItem::KvCache, per_tok * tokens * share));
        }
        None => unc.push(Uncertain::new(
            "kv_cache_unknown_shape",
            "the model's layers / KV heads / head size are not given",
        )),
    }
    let tp = if par == Parallelism::TensorParallel {
        n
    } else {
        1.0
    };
    let prompt = f64::from(job.prompt_tokens.unwrap_or(job.context_tokens)) * f64::from(job.batch);
    let torch_bytes: f64;
    match job.engine {
        Engine::Transformers => {
            match shape
                .as_ref()
                .and_then(|s| hf_prefill_bytes_per_token(s, tp))
            {
                Some(b) => lines.push(line(MemoryItem::PrefillActivations, b * prompt)),
                None => unc.push(Uncertain::new(
                    "activations_unknown_shape",
                    "prefill activations need hidden and intermediate sizes",
                )),
            }
            torch_bytes = lines.iter().map(|l| l.gib).sum::<f64>() * GIB;
            lines.push(line(MemoryItem::CudaContext, CUDA_CONTEXT_GIB * GIB));
            lines.push(line(
                MemoryItem::AllocatorSlack,
                ALLOCATOR_SLACK * torch_bytes,
            ));
        }
        Engine::Vllm => {
            // vLLM 0.6 profiled max(max_model_len, 2048) tokens at once up to 32K (validation
            // B2); longer contexts use chunked prefill, whose V1 default batch is 8,192 tokens.
            let default = if job.context_tokens > 32_768 {
                8192
            } else {
                job.context_tokens.max(2048)
            };
            let prof = f64::from(job.vllm.max_num_batched_tokens.unwrap_or(default));
            match shape
                .as_ref()
                .and_then(|s| hf_prefill_bytes_per_token(s, tp))
            {
                Some(b) => lines.push(line(MemoryItem::ProfileActivations, b * prof)),
                None => unc.push(Uncertain::new(
                    "activations_unknown_shape",
                    "vLLM's profiling peak needs hidden and intermediate sizes",
                )),
            }
            unc.push(Uncertain::new(
                "vllm_profile_peak",
                "vLLM measures its activation peak at start-up; this is an approximation",
            ));
            lines.push(line(MemoryItem::CudaContext, CUDA_CONTEXT_GIB * GIB));
            if !job.vllm.enforce_eager {
                lines.push(line(MemoryItem::CudaGraphs, VLLM_CUDA_GRAPHS_GIB * GIB));
            }
        }
        Engine::LlamaCpp => {
            let arch = r.model.arch.as_deref().unwrap_or("");
            if !matches!(arch, "llama" | "qwen2" | "mistral") {
                unc.push(Uncertain::new(
                    "graph_formula_not_for_arch",
                    "Ollama's graph formula for this architecture is not modelled; llama's is used",
                ));
            }
            let ctx = f64::from(job.context_tokens) * f64::from(job.batch);
            match shape
                .as_ref()
                .and_then(|s| ollama_graph_bytes(arch, s, ctx))
            {
                Some((_, full)) => lines.push(line(MemoryItem::GraphBuffer, full)),
                None => unc.push(Uncertain::new(
                    "activations_unknown_shape",
                    "the graph buffer needs hidden size, heads and vocabulary",
                )),
            }
            lines.push(line(MemoryItem::OllamaReserve, OLLAMA_RESERVE_GIB * GIB));
        }
    }
    PerGpuMemory::from_lines(lines)
}

/// LoRA adapter parameters: rank × (d_in + d_out) per adapted matrix × layers.
pub fn lora_params(s: &Shape, rank: f64, targets: LoraTargets) -> Option<f64> {
    let h = s.hidden;
    let q = s.heads * s.head_dim;
    let kv = s.kv_heads * s.head_dim;
    let per_layer = match targets {
        LoraTargets::QV => (h + q) + (h + kv),
        LoraTargets::Attention => (h + q) + 2.0 * (h + kv) + (q + h),
        LoraTargets::AllLinear => {
            let i = s.intermediate?;
            (h + q) + 2.0 * (h + kv) + (q + h) + 3.0 * (h + i)
        }
    };
    Some(rank * per_layer * s.layers)
}

/// Per-GPU memory of a training job on `gpus` GPUs.
pub fn training(r: &Resolved, gpus: u32, unc: &mut Vec<Uncertain>) -> PerGpuMemory {
    let job = &r.job;
    let t = &job.training;
    let n = f64::from(gpus.max(1));
    let par = if gpus > 1 {
        job.parallelism_for(gpus)
    } else {
        Parallelism::DataParallel
    };
    let (shard_w, shard_g, shard_o) = match par {
        Parallelism::DataParallel => (1.0, 1.0, 1.0),
        Parallelism::Zero1 => (1.0, 1.0, n),
        Parallelism::Zero2 => (1.0, n, n),
        Parallelism::Zero3 | Parallelism::TensorParallel | Parallelism::Pipeline => (n, n, n),
    };
    let p = &r.params;
    let shape = r.model.shape();
    let mut lines = Vec::new();
    let base_bytes = r.quant.weight_bytes(p);
    if r.quant.embeddings_16bit {
        lines.push(line(
            MemoryItem::LinearWeights,
            p.linear * r.quant.bits_per_weight / 8.0 / shard_w,
        ));
        let bytes = if job.task == Task::Qlora && t.upcast_unquantized_fp32 {
            4.0
        } else {
            2.0
        };
        lines.push(line(
            MemoryItem::Embeddings16bit,
            (p.embedding + p.lm_head) * bytes / shard_w,
        ));
    } else {
        lines.push(line(MemoryItem::LinearWeights, base_bytes / shard_w));
    }
    let wide = match t.precision {
        TrainPrecision::Mixed => 4.0,
        TrainPrecision::PureBf16 => 2.0,
    };
    let opt_bytes = t.optimizer.state_bytes(t.precision);
    match job.task {
        Task::Full | Task::Pretrain => {
            // Gradients have the weights' type (2 bytes for bf16, 4 for an fp32 model).
            let wb = r.quant.bits_per_weight / 8.0;
            let grads = if t.optimizer_in_backward {
                p.embedding.max(p.lm_head) * wb
            } else {
                p.total * wb / shard_g
            };
            lines.push(line(MemoryItem::Gradients, grads));
            // An fp32 master copy only when the working weights are 16-bit.
            if t.precision == TrainPrecision::Mixed && wb < 4.0 {
                lines.push(line(MemoryItem::MasterWeights, p.total * 4.0 / shard_o));
            }
            lines.push(line(
                MemoryItem::OptimizerStates,
                p.total * opt_bytes / shard_o,
            ));
        }
        Task::Lora | Task::Qlora => match shape
            .as_ref()
            .and_then(|s| lora_params(s, f64::from(t.lora_rank), t.lora_targets))
        {
            Some(a) => {
                // Adapter weights + gradients in the wide type, plus the optimizer states.
                lines.push(line(
                    MemoryItem::LoraAdapters,
                    a * (2.0 * wide + opt_bytes) / shard_o,
                ));
            }
            None => unc.push(Uncertain::new(
                "lora_unknown_shape",
                "adapter size needs the model's shape",
            )),
        },
        Task::Infer => {}
    }
    if t.optimizer.is_paged() {
        unc.push(Uncertain::new(
            "paged_optimizer_residency",
            "paged optimizer states can move to host RAM under pressure; counted as resident",
        ));
    }
    let tokens = f64::from(job.batch.max(1)) * f64::from(job.context_tokens);
    let seq = f64::from(job.context_tokens);
    match shape.as_ref().and_then(|s| {
        layer_activation_bytes_per_token(s, seq, t.flash_attention).map(|per| (s, per))
    }) {
        Some((s, per)) => {
            let act_tp = if par == Parallelism::TensorParallel {
                n
            } else {
                1.0
            };
            let layers = if t.grad_checkpointing {
                s.layers * 2.0 * s.hidden + per
            } else {
                s.layers * per
            };
            lines.push(line(MemoryItem::LayerActivations, layers * tokens / act_tp));
            if let Some(v) = s.vocab {
                lines.push(line(
                    MemoryItem::Logits,
                    tokens * v * t.loss.bytes_per_logit() / act_tp,
                ));
            }
            if job.task == Task::Qlora {
                if let Some(i) = s.intermediate {
                    lines.push(line(MemoryItem::DequantBuffer, s.hidden * i * 2.0));
                }
            }
            if par == Parallelism::Zero3 && gpus > 1 {
                // One layer's parameters gathered in 16-bit plus their gradients.
                let layer = p.linear / s.layers;
                lines.push(line(MemoryItem::GatheredLayer, layer * 2.0 * 2.0));
            }
        }
        None => unc.push(Uncertain::new(
            "activations_unknown_shape",
            "activations need layers, hidden and intermediate sizes; only model states are counted",
        )),
    }
    let torch_bytes = lines.iter().map(|l| l.gib).sum::<f64>() * GIB;
    lines.push(line(MemoryItem::CudaContext, CUDA_CONTEXT_GIB * GIB));
    lines.push(line(
        MemoryItem::AllocatorSlack,
        ALLOCATOR_SLACK * torch_bytes,
    ));
    PerGpuMemory::from_lines(lines)
}

/// How llama.cpp / Ollama splits a model that does not fit: layers on the GPU, the rest on the CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct OffloadPlan {
    pub layers_total: u32,
    pub layers_on_gpu: u32,
    /// Whether the output layer also fits on the GPU.
    pub output_on_gpu: bool,
    pub gpu_gib: f64,
    pub cpu_gib: f64,
    /// Share of the model's footprint on the GPU, 0–100 (what `ollama ps` shows as "GPU").
    pub gpu_percent: f64,
}

/// Ollama's layer placement on one GPU of `capacity_gib` (old `estimateGPULayers` logic, [S24]):
/// reserve + partial-offload graph first, one spare layer kept free, then repeating layers, then the
/// output layer. Returns None when the whole model fits (full offload).
pub fn llama_cpp_offload(r: &Resolved, capacity_gib: f64) -> Option<OffloadPlan> {
    let s = r.model.shape()?;
    let job = &r.job;
    let ctx = f64::from(job.context_tokens) * f64::from(job.batch);
    let arch = r.model.arch.as_deref().unwrap_or("");
    let (partial, full) = ollama_graph_bytes(arch, &s, ctx)?;
    let p = &r.params;
    let bpw = r.quant.bits_per_weight / 8.0;
    let output = (if r.model.tied_embeddings {
        p.embedding
    } else {
        p.lm_head
    }) * bpw;
    let kv_layer = r
        .model
        .kv_bytes_per_token(job.kv_cache.bytes_per_element())?
        / s.layers
        * ctx;
    let layer = p.linear * bpw / s.layers + kv_layer;
    let reserve = OLLAMA_RESERVE_GIB * GIB;
    let cap = capacity_gib * GIB;
    let weights_all = r.quant.weight_bytes(p);
    let kv_all = kv_layer * s.layers;
    if reserve + full + weights_all + kv_all <= cap {
        return None;
    }
    let avail = (cap - reserve - partial - layer).max(0.0);
    let on_gpu = (avail / layer).floor().clamp(0.0, s.layers);
    let mut gpu = reserve + partial + on_gpu * layer;
    let output_on_gpu = on_gpu >= s.layers && gpu + output <= cap;
    if output_on_gpu {
        gpu += output;
    }
    let footprint = reserve + partial + weights_all + kv_all;
    let cpu = (footprint - gpu).max(0.0);
    Some(OffloadPlan {
        layers_total: s.layers as u32,
        layers_on_gpu: on_gpu as u32,
        output_on_gpu,
        gpu_gib: gpu / GIB,
        cpu_gib: cpu / GIB,
        gpu_percent: 100.0 * gpu / footprint,
    })
}

/// Ollama's whole-model footprint when partially offloaded (what `ollama ps` reports as SIZE):
/// reserve + partial-offload graph + all weights + all KV, in GiB.
pub fn llama_cpp_partial_footprint_gib(r: &Resolved) -> Option<f64> {
    let s = r.model.shape()?;
    let ctx = f64::from(r.job.context_tokens) * f64::from(r.job.batch);
    let (partial, _) = ollama_graph_bytes(r.model.arch.as_deref().unwrap_or(""), &s, ctx)?;
    let kv = r
        .model
        .kv_bytes_per_token(r.job.kv_cache.bytes_per_element())?
        * ctx;
    Some((OLLAMA_RESERVE_GIB * GIB + partial + r.quant.weight_bytes(&r.params) + kv) / GIB)
}
