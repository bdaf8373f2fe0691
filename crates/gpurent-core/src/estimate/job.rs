//! The job a user describes ("QLoRA a 70B with 4k sequences on 2 GPUs") and its defaults.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::cost::CostSettings;
use super::model::ModelSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Run the model (chat, batch generation).
    Infer,
    /// LoRA on a 16-bit base.
    Lora,
    /// LoRA on a 4-bit (NF4) base.
    Qlora,
    /// Full fine-tuning.
    Full,
    /// Pre-training from scratch (memory as full fine-tuning; time from the token count).
    Pretrain,
}

impl Task {
    pub fn is_training(self) -> bool {
        !matches!(self, Task::Infer)
    }
}

/// Inference engine profile: what it keeps in memory and how fast it decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// Hugging Face transformers, eager `generate` (keeps prefill activations; no reservation).
    Transformers,
    /// vLLM: reserves `gpu_memory_utilization` of the card and fills the rest with KV cache.
    Vllm,
    /// llama.cpp / Ollama: GGUF weights, compute-graph buffer, partial CPU offload when short.
    LlamaCpp,
}

/// Element type of the KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KvCacheDtype {
    /// fp16/bf16, 2 bytes (every engine's default).
    Fp16,
    /// fp8 (vLLM `kv_cache_dtype=fp8`), 1 byte.
    Fp8,
    /// llama.cpp q8_0: 34 bytes per 32 elements [S32].
    #[serde(rename = "q8_0")]
    Q8_0,
    /// llama.cpp q4_0: 18 bytes per 32 elements [S32] (needs flash attention in Ollama).
    #[serde(rename = "q4_0")]
    Q4_0,
}

impl KvCacheDtype {
    pub fn bytes_per_element(self) -> f64 {
        match self {
            KvCacheDtype::Fp16 => 2.0,
            KvCacheDtype::Fp8 => 1.0,
            KvCacheDtype::Q8_0 => 34.0 / 32.0,
            KvCacheDtype::Q4_0 => 18.0 / 32.0,
        }
    }
}

/// How the job is spread over several GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Parallelism {
    /// Every GPU holds everything (training: DDP).
    DataParallel,
    /// Optimizer states (and fp32 master weights) sharded.
    Zero1,
    /// + gradients sharded.
    Zero2,
    /// + parameters sharded (FSDP full shard).
    Zero3,
    /// Each layer's matrices split across GPUs (vLLM `tensor_parallel_size`); needs NVLink to scale.
    TensorParallel,
    /// Layers split across GPUs (transformers `device_map="auto"`, llama.cpp multi-GPU).
    Pipeline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Optimizer {
    /// AdamW with two fp32 states (8 bytes/param; 4 in pure-bf16 training).
    Adamw,
    /// bitsandbytes 8-bit AdamW (2 bytes/param).
    #[serde(rename = "adamw_8bit")]
    Adamw8bit,
    /// bitsandbytes paged AdamW (fp32 states in unified memory: may spill to host RAM).
    PagedAdamw,
    /// bitsandbytes paged 8-bit AdamW.
    #[serde(rename = "paged_adamw_8bit")]
    PagedAdamw8bit,
    /// SGD with momentum (one state).
    SgdMomentum,
    /// Plain SGD (no state).
    Sgd,
}

impl Optimizer {
    /// Optimizer-state bytes per trained parameter.
    pub fn state_bytes(self, precision: TrainPrecision) -> f64 {
        let wide = match precision {
            TrainPrecision::Mixed => 4.0,
            TrainPrecision::PureBf16 => 2.0,
        };
        match self {
            Optimizer::Adamw | Optimizer::PagedAdamw => 2.0 * wide,
            Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => 2.0,
            Optimizer::SgdMomentum => wide,
            Optimizer::Sgd => 0.0,
        }
    }

    pub fn is_paged(self) -> bool {
        matches!(self, Optimizer::PagedAdamw | Optimizer::PagedAdamw8bit)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TrainPrecision {
    /// bf16 compute with fp32 master weights and fp32 optimizer states (HF Trainer `bf16=True`,
    /// DeepSpeed, FSDP mixed precision): 2 + 2 + 4 + 8 = 16 bytes/param with AdamW.
    Mixed,
    /// Everything in bf16, no master copy (torchtune's default): 2 + 2 + 4 = 8 bytes/param.
    PureBf16,
}

/// Which linear layers get LoRA adapters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LoraTargets {
    /// q_proj + v_proj (PEFT's and torchtune's classic default).
    #[serde(rename = "qv")]
    QV,
    /// q, k, v, o.
    Attention,
    /// q, k, v, o, gate, up, down (the QLoRA recipe).
    AllLinear,
}

/// How the loss turns hidden states into logits; decides the logits memory (vocab × tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LossImpl {
    /// transformers' causal-LM loss: bf16 logits, an fp32 upcast, a shifted fp32 copy and the fp32
    /// log-softmax kept for backward = 14 bytes per (token, vocab entry).
    Unfused,
    /// Chunked cross-entropy (torchtune `CEWithChunkedOutputLoss`, 8 chunks): bf16 logits plus one
    /// fp32 chunk at a time = 3 bytes.
    Chunked,
    /// Fused linear + cross-entropy (Liger, Unsloth): logits never materialised (0 bytes).
    Fused,
}

impl LossImpl {
    pub fn bytes_per_logit(self) -> f64 {
        match self {
            LossImpl::Unfused => 14.0,
            LossImpl::Chunked => 3.0,
            LossImpl::Fused => 0.0,
        }
    }
}

/// Fine-tuning and pre-training knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct TrainingSettings {
    pub optimizer: Optimizer,
    pub precision: TrainPrecision,
    /// Activation checkpointing (recompute each layer in backward; keeps only layer inputs).
    pub grad_checkpointing: bool,
    /// FlashAttention / SDPA memory-efficient attention (no s² score matrix kept).
    pub flash_attention: bool,
    pub lora_rank: u32,
    pub lora_targets: LoraTargets,
    pub loss: LossImpl,
    /// Optimizer step fused into backward (torchtune `optimizer_in_bwd`): a gradient lives only
    /// until its parameter is updated, so at most the largest tensor's gradient is resident.
    pub optimizer_in_backward: bool,
    /// QLoRA with PEFT's `prepare_model_for_kbit_training`: the parameters that stay unquantized
    /// (embeddings, LM head, norms) are cast to fp32 (4 bytes instead of 2). On by default, as in
    /// the Hugging Face QLoRA recipe; torchtune does not do it.
    pub upcast_unquantized_fp32: bool,
}

impl Default for TrainingSettings {
    fn default() -> Self {
        TrainingSettings {
            optimizer: Optimizer::Adamw,
            precision: TrainPrecision::Mixed,
            grad_checkpointing: false,
            flash_attention: true,
            lora_rank: 16,
            lora_targets: LoraTargets::AllLinear,
            loss: LossImpl::Unfused,
            optimizer_in_backward: false,
            upcast_unquantized_fp32: true,
        }
    }
}

/// vLLM engine arguments that change memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct VllmSettings {
    /// Fraction of the card vLLM takes (default 0.9) [S23].
    pub gpu_memory_utilization: f64,
    /// No CUDA graphs (saves their memory, costs speed).
    pub enforce_eager: bool,
    /// Tokens in the start-up profiling forward; None = max(context, 2048) as vLLM 0.6 did
    /// without chunked prefill (contexts up to 32K), 8,192 (chunked prefill) above.
    pub max_num_batched_tokens: Option<u32>,
}

impl Default for VllmSettings {
    fn default() -> Self {
        VllmSettings {
            gpu_memory_utilization: 0.9,
            enforce_eager: false,
            max_num_batched_tokens: None,
        }
    }
}

/// The job to estimate. Every field has a default, so `{}` plus a model is a valid job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct Job {
    /// Catalog model id (`models.csv`); ignored when `custom` is set.
    pub model: Option<String>,
    /// A model described by hand.
    pub custom: Option<ModelSpec>,
    pub task: Task,
    /// Weight format id (`quant-formats.csv`); None = bf16 (nf4_dq for QLoRA, q4_k_m for llama.cpp).
    pub quant: Option<String>,
    pub engine: Engine,
    /// Tokens per sequence: prompt + generated for inference, the sequence length for training.
    pub context_tokens: u32,
    /// Prompt tokens processed in one prefill (inference); None = all of `context_tokens`.
    pub prompt_tokens: Option<u32>,
    /// Sequences at once (inference) or micro-batch per GPU (training).
    pub batch: u32,
    pub kv_cache: KvCacheDtype,
    /// GPUs the user wants to use (1 = one card).
    pub gpus: u32,
    /// None = the usual choice: tensor parallel in vLLM, layer split in transformers/llama.cpp,
    /// ZeRO-3/FSDP for training.
    pub parallelism: Option<Parallelism>,
    pub training: TrainingSettings,
    pub vllm: VllmSettings,
    /// Training tokens (D in 6·N·D), e.g. 2e11. None = no time or cost estimate for training.
    pub train_tokens: Option<f64>,
    /// Tokens to generate in an inference job (for its time and cost). None = per-hour figures only.
    pub generate_tokens: Option<f64>,
    /// Model FLOPs utilisation for training time; None = the default for the task (see speed.rs).
    pub mfu: Option<f64>,
    /// Host memory bandwidth in GB/s, for llama.cpp layers offloaded to the CPU. None = unknown.
    pub host_mem_bw_gbps: Option<f64>,
    pub cost: CostSettings,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            model: None,
            custom: None,
            task: Task::Infer,
            quant: None,
            engine: Engine::Transformers,
            context_tokens: 2048,
            prompt_tokens: None,
            batch: 1,
            kv_cache: KvCacheDtype::Fp16,
            gpus: 1,
            parallelism: None,
            training: TrainingSettings::default(),
            vllm: VllmSettings::default(),
            train_tokens: None,
            generate_tokens: None,
            mfu: None,
            host_mem_bw_gbps: None,
            cost: CostSettings::default(),
        }
    }
}

impl Job {
    /// The weight format id this job uses.
    pub fn quant_id(&self) -> &str {
        match (&self.quant, self.task, self.engine) {
            (Some(q), _, _) => q,
            (None, Task::Qlora, _) => "nf4_dq",
            (None, Task::Infer, Engine::LlamaCpp) => "q4_k_m",
            _ => "bf16",
        }
    }

    /// The parallelism used for `gpus` GPUs.
    pub fn parallelism_for(&self, gpus: u32) -> Parallelism {
        if let Some(p) = self.parallelism {
            return p;
        }
        if gpus <= 1 {
            return Parallelism::DataParallel;
        }
        match (self.task, self.engine) {
            (Task::Infer, Engine::Vllm) => Parallelism::TensorParallel,
            (Task::Infer, _) => Parallelism::Pipeline,
            _ => Parallelism::Zero3,
        }
    }
}
