//! Cases D (throughput and time) of estimator-validation.md.

use gpurent_core::estimate::explain::llama31_8b_effective_utilisation;
use gpurent_core::estimate::speed::{
    compute_seconds, inference_speed, train_flops_per_token, training_speed, MFU_PRETRAIN,
};
use gpurent_core::estimate::{Engine, Explanation, Job, Task, VllmSettings};

use crate::support::*;

use crate::cases_c::titan;

/// D1: torchtitan MFU formula: 5.79e10 FLOPs/token at T = 8,192; 5,762 and 6,667 tok/s/GPU.
pub fn d1() -> Vec<Row> {
    let r = resolved(&titan(false, 8192));
    let fpt = train_flops_per_token(&r);
    let h100 = cards().get("h100-sxm").expect("h100");
    let s = training_speed(&r, h100, 8, &mut Vec::new());
    let ours = s.train_tokens_per_s.expect("tps") / 8.0;
    vec![
        cmp(
            "D1",
            "FLOPs/token, Llama 3.1 8B, T=8192",
            fpt,
            5.79e10,
            "FLOP",
            0.01,
        ),
        cmp(
            "D1",
            "MFU implied by 5,762 tok/s/GPU",
            5762.0 * fpt / 989.4e12,
            0.337,
            "fraction",
            0.01,
        ),
        cmp(
            "D1",
            "MFU implied by 6,667 tok/s/GPU",
            6667.0 * fpt / 989.4e12,
            0.390,
            "fraction",
            0.01,
        ),
        cmp(
            "D1",
            "tok/s/GPU at default MFU vs eager",
            ours,
            5762.0,
            "tok/s",
            TIME,
        )
        .with_note(&format!("default MFU {MFU_PRETRAIN}")),
        cmp(
            "D1",
            "tok/s/GPU at default MFU vs compiled",
            ours,
            6667.0,
            "tok/s",
            TIME,
        ),
    ]
}

/// D2: the user guides' example: 7B, 200B tokens, 8× H100 SXM, 50 % MFU -> 24.6 days (not 27).
pub fn d2() -> Vec<Row> {
    let j = Job {
        custom: Some(params_only("7b", 7.0)),
        task: Task::Pretrain,
        gpus: 8,
        train_tokens: Some(2e11),
        mfu: Some(0.5),
        ..Default::default()
    };
    let r = resolved(&j);
    let s = training_speed(
        &r,
        cards().get("h100-sxm").expect("h100"),
        8,
        &mut Vec::new(),
    );
    let days = s.job_days.expect("days");
    let guide = compute_seconds(8.4e21, 8, 900.0, 0.5) / 86_400.0;
    vec![
        cmp(
            "D2",
            "7B × 200B tokens, 8×H100, MFU 0.5",
            days,
            24.6,
            "days",
            0.01,
        ),
        unc(
            "D2",
            "user guide's 27 days",
            Some(guide),
            Some(27.0),
            "days",
            "the guide used a 900 TF peak; the H100 SXM dense BF16 peak is 989.4 TF",
        ),
    ]
}

/// D3: Llama 3.1 model card GPU-hours vs 6ND: whole-project hours exceed the pure estimate.
pub fn d3() -> Vec<Row> {
    let util = |p: f64, tokens: f64, hours: f64| 6.0 * p * tokens / (hours * 3600.0 * 989.4e12);
    let mut rows = vec![
        cmp(
            "D3",
            "8B effective utilisation",
            llama31_8b_effective_utilisation(),
            0.139,
            "fraction",
            0.01,
        ),
        cmp(
            "D3",
            "70B effective utilisation",
            util(70.55e9, 15e12, 7.0e6),
            0.255,
            "fraction",
            0.01,
        ),
        cmp(
            "D3",
            "405B effective utilisation",
            util(405e9, 15.6e12, 30.84e6),
            0.346,
            "fraction",
            0.01,
        ),
    ];
    // Our planning estimate at the default MFU is below the reported hours (documented), and the
    // explanation for a pre-training job says so.
    let mut j = job("llama-3.1-8b", Task::Pretrain, "bf16", Engine::Transformers);
    j.train_tokens = Some(15e12);
    j.context_tokens = 8192;
    let r = resolved(&j);
    let hours = compute_seconds(15e12 * train_flops_per_token(&r), 1, 989.4, MFU_PRETRAIN) / 3600.0;
    assert!(hours < 1.46e6);
    let e = gpurent_core::estimate::estimate(&j, models(), cards()).expect("estimate");
    assert!(e
        .explanation
        .iter()
        .any(|x| matches!(x, Explanation::ProjectHoursExceedEstimate { .. })));
    rows.push(unc("D3", "8B GPU-hours at default MFU", Some(hours), Some(1.46e6), "GPU-h",
        "model-card hours include restarts, evals, long-context stages; the explanation warns (asserted)"));
    rows
}

fn decode(
    model: &str,
    quant: &str,
    engine: Engine,
    gpus: u32,
    eager: bool,
) -> (f64, Vec<gpurent_core::estimate::Uncertain>) {
    let mut j = job(model, Task::Infer, quant, engine);
    j.prompt_tokens = Some(1);
    j.context_tokens = 2049;
    j.gpus = gpus;
    j.vllm = VllmSettings {
        enforce_eager: eager,
        ..Default::default()
    };
    let r = resolved(&j);
    let mut u = Vec::new();
    let s = inference_speed(
        &r,
        cards().get("a100-80gb-sxm").expect("a100"),
        gpus,
        0.0,
        &mut u,
    );
    (s.decode_tokens_per_s.expect("decode"), u)
}

/// D4: Qwen2.5 decode speed on A100 80GB, batch 1. The 7B BF16 rows calibrate the per-layer
/// overheads (so they match by construction); the 14B, 32B and 72B rows are the held-out check
/// (14B/32B: the same speed_benchmark.rst, commit 010c37c, "14B/32B (Transformer)" and "(vLLM)"
/// tables, input length 1, Speed(tokens/s) column).
pub fn d4() -> Vec<Row> {
    let mut rows = vec![
        cmp(
            "D4",
            "7B BF16 transformers (calibration)",
            decode("qwen2.5-7b", "bf16", Engine::Transformers, 1, false).0,
            40.38,
            "tok/s",
            TIME,
        ),
        cmp(
            "D4",
            "7B BF16 vLLM (calibration)",
            decode("qwen2.5-7b", "bf16", Engine::Vllm, 1, false).0,
            84.28,
            "tok/s",
            TIME,
        ),
        cmp(
            "D4",
            "14B BF16 transformers",
            decode("qwen2.5-14b", "bf16", Engine::Transformers, 1, false).0,
            24.74,
            "tok/s",
            REFIT,
        ),
        cmp(
            "D4",
            "14B BF16 vLLM",
            decode("qwen2.5-14b", "bf16", Engine::Vllm, 1, false).0,
            46.30,
            "tok/s",
            REFIT,
        ),
        cmp(
            "D4",
            "32B BF16 transformers",
            decode("qwen2.5-32b", "bf16", Engine::Transformers, 1, false).0,
            17.54,
            "tok/s",
            REFIT,
        ),
        cmp(
            "D4",
            "32B BF16 vLLM (setting 1)",
            decode("qwen2.5-32b", "bf16", Engine::Vllm, 1, true).0,
            22.13,
            "tok/s",
            REFIT,
        ),
        cmp(
            "D4",
            "72B BF16 transformers, 2 GPUs",
            decode("qwen2.5-72b", "bf16", Engine::Transformers, 2, false).0,
            8.73,
            "tok/s",
            TIME,
        ),
        cmp(
            "D4",
            "72B BF16 vLLM TP=2 (setting 1)",
            decode("qwen2.5-72b", "bf16", Engine::Vllm, 2, true).0,
            18.19,
            "tok/s",
            TIME,
        ),
        cmp(
            "D4",
            "72B BF16 vLLM TP=4",
            decode("qwen2.5-72b", "bf16", Engine::Vllm, 4, false).0,
            31.37,
            "tok/s",
            TIME,
        ),
    ];
    for (gpus, meas) in [(1u32, 16.47), (2, 46.30)] {
        let (t, u) = decode("qwen2.5-72b", "gptq_int4", Engine::Vllm, gpus, false);
        assert!(has(&u, "low_bit_kernel_speed"));
        rows.push(unc(
            "D4",
            &format!("72B GPTQ-Int4 vLLM TP={gpus}"),
            Some(t),
            Some(meas),
            "tok/s",
            "1→2 GPUs is 2.8× (not bandwidth); 4-bit kernel speed flagged uncertain (asserted)",
        ));
    }
    rows
}

/// D5: llama.cpp Llama-3.1-8B tg128 / pp512 per quant, hardware not stated: ratios only.
pub fn d5() -> Vec<Row> {
    let card = cards().get("rtx-4090").expect("4090");
    let speed = |q: &str| {
        let mut j = job("llama-3.1-8b", Task::Infer, q, Engine::LlamaCpp);
        j.context_tokens = 128;
        j.prompt_tokens = Some(1);
        let r = resolved(&j);
        let mut u = Vec::new();
        let s = inference_speed(&r, card, 1, 0.0, &mut u);
        assert!(has(&u, "llama_cpp_speed_uncalibrated"));
        (
            s.decode_tokens_per_s.expect("tg"),
            s.prefill_tokens_per_s.expect("pp"),
        )
    };
    let (tq, pq) = speed("q4_k_m");
    let (tf, pf) = speed("f16_gguf");
    vec![
        cmp(
            "D5",
            "tg Q4_K_M / F16 ratio (RTX 4090 assumed)",
            tq / tf,
            71.9 / 29.2,
            "ratio",
            TIME,
        )
        .with_note("hardware not stated; the ratio depends on it"),
        cmp(
            "D5",
            "pp Q4_K_M / F16 ratio",
            pq / pf,
            821.8 / 923.5,
            "ratio",
            TIME,
        )
        .with_note("prefill modelled as compute-bound: same for both"),
    ]
}
