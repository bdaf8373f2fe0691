//! Ports of other tools' memory formulas, so the app can show "accelerate says X, here is why it is
//! low" and so the ports are tested against the tools' documented outputs (validation A4, A5).
//! These are not gpurent's estimate; see memory.rs for that.

/// `accelerate estimate-memory` "Training using Adam" (current code, [S21]): the **largest** of
/// four per-parameter components, not their sum. fp32: model 4, grads 4, optimizer 8, step 16 ->
/// 16 bytes/param; fp16/bf16 mixed precision: 4, 6, 8, step 8 -> 8 bytes/param. Bytes.
pub fn accelerate_training_bytes(params: f64, half_precision: bool) -> f64 {
    let components: [f64; 4] = if half_precision {
        [4.0, 6.0, 8.0, 8.0]
    } else {
        [4.0, 4.0, 8.0, 16.0]
    };
    params * components.iter().copied().fold(0.0, f64::max)
}

/// DeepSpeed ZeRO model-state estimators ([S28], `estimate_zero{2,3}_model_states_mem_needs`).
/// P = total params, G = total GPUs, largest = params of the largest layer. Bytes per GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZeroInput {
    pub params: f64,
    pub largest_layer_params: f64,
    pub gpus_per_node: f64,
    pub nodes: f64,
}

impl ZeroInput {
    fn gpus(&self) -> f64 {
        self.gpus_per_node * self.nodes
    }
}

/// DeepSpeed's CPU-side buffer factor (`additional_buffer_factor`).
pub const DS_BUFFER_FACTOR: f64 = 1.5;

/// ZeRO-2 per-GPU bytes. `older_formula`: `4·P + 16·P/G` (the docs' printout, 15.93 GiB for
/// t5-3b on 8 GPUs); otherwise the current code's `2·P + 18·P/G`. With the optimizer offloaded:
/// `2·P`. gpurent's own model (memory.rs) uses the ZeRO paper's 16 bytes/param accounting
/// (bf16 gradients, no separate fp32 gradient partition): `2·P + 14·P/G` for ZeRO-2.
pub fn zero2_gpu_bytes(z: &ZeroInput, offload_optimizer: bool, older_formula: bool) -> f64 {
    let (p, g) = (z.params, z.gpus());
    match (offload_optimizer, older_formula) {
        (true, _) => 2.0 * p,
        (false, true) => 4.0 * p + 16.0 * p / g,
        (false, false) => 2.0 * p + 18.0 * p / g,
    }
}

/// ZeRO-2 CPU bytes with the optimizer offloaded: `P · max(4·G, 16) · f`.
pub fn zero2_cpu_bytes_offload(z: &ZeroInput) -> f64 {
    z.params * (4.0 * z.gpus()).max(16.0) * DS_BUFFER_FACTOR
}

/// Where ZeRO-3 keeps things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero3Offload {
    None,
    Optimizer,
    ParamsAndOptimizer,
}

/// ZeRO-3 per-GPU bytes: `4·largest` (+ `2·P/G` when only the optimizer is offloaded, + `18·P/G`
/// without offload).
pub fn zero3_gpu_bytes(z: &ZeroInput, off: Zero3Offload) -> f64 {
    let base = 4.0 * z.largest_layer_params;
    match off {
        Zero3Offload::ParamsAndOptimizer => base,
        Zero3Offload::Optimizer => base + 2.0 * z.params / z.gpus(),
        Zero3Offload::None => base + 18.0 * z.params / z.gpus(),
    }
}

/// ZeRO-3 CPU bytes with `zero.Init`: `18·P/nodes·f`, `16·P/nodes·f`, `4·largest·n·f`.
pub fn zero3_cpu_bytes_zero_init(z: &ZeroInput, off: Zero3Offload) -> f64 {
    let f = DS_BUFFER_FACTOR;
    match off {
        Zero3Offload::ParamsAndOptimizer => 18.0 * z.params / z.nodes * f,
        Zero3Offload::Optimizer => 16.0 * z.params / z.nodes * f,
        Zero3Offload::None => 4.0 * z.largest_layer_params * z.gpus_per_node * f,
    }
}
