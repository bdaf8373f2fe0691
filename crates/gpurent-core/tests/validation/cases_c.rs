//! Cases C (training memory) of estimator-validation.md.

use gpurent_core::estimate::fit::fit_card;
use gpurent_core::estimate::memory::visible_gib;
use gpurent_core::estimate::{
    max_context, Engine, FitVerdict, Job, LoraTargets, LossImpl, MemoryItem, Optimizer,
    Parallelism, Task, TrainPrecision, TrainingSettings,
};

use crate::support::*;

fn torchtune(model: &str, task: Task, quant: &str, t: TrainingSettings, gpus: u32) -> Job {
    let mut j = job(model, task, quant, Engine::Transformers);
    j.batch = 2;
    j.context_tokens = 2048;
    j.gpus = gpus;
    j.training = t;
    j
}

fn tt_settings(optimizer: Optimizer, rank: u32, targets: LoraTargets) -> TrainingSettings {
    TrainingSettings {
        optimizer,
        precision: TrainPrecision::PureBf16,
        grad_checkpointing: true,
        flash_attention: true,
        lora_rank: rank,
        lora_targets: targets,
        loss: LossImpl::Chunked,
        optimizer_in_backward: false,
        upcast_unquantized_fp32: false,
    }
}

/// C1: torchtune README (batch 2, packed 2,048 tokens, compile on); peak allocated per GPU.
pub fn c1() -> Vec<Row> {
    let mut rows = Vec::new();
    let lora = torchtune(
        "llama-3.1-8b",
        Task::Lora,
        "bf16",
        tt_settings(Optimizer::Adamw, 8, LoraTargets::QV),
        1,
    );
    let (m, _) = mem(&lora, 1);
    rows.push(cmp(
        "C1",
        "8B LoRA r8 q,v, AC, 1×4090",
        m.allocated_gib(),
        16.2,
        "GiB",
        TRAIN,
    ));
    let qlora = torchtune(
        "llama-3.1-8b",
        Task::Qlora,
        "nf4_dq",
        tt_settings(Optimizer::Adamw, 8, LoraTargets::AllLinear),
        1,
    );
    let (m, _) = mem(&qlora, 1);
    rows.push(cmp(
        "C1",
        "8B QLoRA r8 all linear, AC, 1×4090",
        m.allocated_gib(),
        7.4,
        "GiB",
        TRAIN,
    ));
    rows.push(cmp(
        "C1",
        "8B QLoRA base weights (doc ≈5.3)",
        m.breakdown.weights,
        5.3,
        "GiB",
        WEIGHTS,
    ));

    // Full FT on a 4090: paged 8-bit AdamW + optimizer in backward. The doc: the paged state is
    // not in the reported peak, so this row cannot validate a no-offload formula. The estimator
    // counts paged states as resident and says so; the measurement lies between its resident-minimum
    // (states paged out) and its full count.
    let mut t = tt_settings(Optimizer::PagedAdamw8bit, 8, LoraTargets::QV);
    t.optimizer_in_backward = true;
    let full = torchtune("llama-3.1-8b", Task::Full, "bf16", t, 1);
    let (m, u) = mem(&full, 1);
    assert!(has(&u, "paged_optimizer_residency"));
    let states = m.line(MemoryItem::OptimizerStates);
    let low = m.allocated_gib() - states;
    assert!(
        (low / 18.9 - 1.0).abs() <= TRAIN && 18.9 < m.allocated_gib(),
        "{low} .. {}",
        m.allocated_gib()
    );
    rows.push(unc("C1", "8B full FT paged AdamW8bit, 1×4090", Some(low), Some(18.9), "GiB",
        "paged states not in the reported peak (doc caveat): estimate with states paged out is within 20 %, the full count exceeds it (asserted)"));

    // A6000 rows: settings not stated. Assert the measurement lies between the estimates for the
    // plausible settings (checkpointing on vs off).
    for (what, task, measured, opt) in [
        (
            "8B LoRA, 1×A6000 (settings not stated)",
            Task::Lora,
            30.3,
            Optimizer::Adamw,
        ),
        (
            "8B full FT, 1×A6000 (settings not stated)",
            Task::Full,
            37.4,
            Optimizer::PagedAdamw8bit,
        ),
    ] {
        let mut on = tt_settings(opt, 8, LoraTargets::QV);
        on.optimizer_in_backward = task == Task::Full;
        let mut off = on.clone();
        off.grad_checkpointing = false;
        let (lo, _) = mem(&torchtune("llama-3.1-8b", task, "bf16", on, 1), 1);
        let (hi, _) = mem(&torchtune("llama-3.1-8b", task, "bf16", off, 1), 1);
        let low = lo.allocated_gib()
            - lo.line(MemoryItem::OptimizerStates) * f64::from(u8::from(task == Task::Full));
        assert!(
            low <= measured && measured <= hi.allocated_gib(),
            "{what}: {low} .. {}",
            hi.allocated_gib()
        );
        rows.push(unc(
            "C1",
            what,
            Some(hi.allocated_gib()),
            Some(measured),
            "GiB",
            "settings not stated; measured lies between AC-on and AC-off estimates (asserted)",
        ));
    }

    // 70B LoRA on 8×A100: FSDP; the table leaves settings blank — assumed like the 8B recipe
    // (AC on, chunked loss, bf16, rank 8 on q,v).
    let j70 = torchtune(
        "llama-3.1-70b",
        Task::Lora,
        "bf16",
        tt_settings(Optimizer::Adamw, 8, LoraTargets::QV),
        8,
    );
    let (m, _) = mem(&j70, 8);
    assert_eq!(j70.parallelism_for(8), Parallelism::Zero3);
    rows.push(
        cmp(
            "C1",
            "70B LoRA, 8×A100 (FSDP, assumed AC)",
            m.allocated_gib(),
            27.6,
            "GiB",
            TRAIN,
        )
        .with_note("settings assumed as the 8B recipe"),
    );

    // 70B full FT with CPU offload of parameters: offload is not modelled.
    let mut t = tt_settings(Optimizer::Adamw, 8, LoraTargets::QV);
    t.optimizer_in_backward = true;
    let (m, _) = mem(&torchtune("llama-3.1-70b", Task::Full, "bf16", t, 8), 8);
    assert!(m.allocated_gib() > 13.9);
    rows.push(unc("C1", "70B full FT, 8×A100, CPU offload", Some(m.allocated_gib()), Some(13.9), "GiB",
        "FSDP CPU offload of params/optimizer is not modelled; estimate is without offload (higher, asserted)"));

    // 405B QLoRA: no shape in the catalog -> activations uncertain; weights alone are a lower bound.
    let j405 = Job {
        custom: Some(params_only("llama-3.1-405b", 405.0)),
        task: Task::Qlora,
        gpus: 8,
        ..Default::default()
    };
    let (m, u) = mem(&j405, 8);
    assert!(has(&u, "activations_unknown_shape"));
    assert!(m.allocated_gib() * GIB / 1e9 < 44.8);
    rows.push(unc("C1", "405B QLoRA, 8×A100", Some(m.allocated_gib() * GIB / 1e9), Some(44.8), "GB",
        "405B shape not in the catalog: states only, activations flagged uncertain (lower bound asserted)"));
    rows
}

/// C2: PEFT README, A100 80GB, fp32 models (2023 defaults), AdamW.
pub fn c2() -> Vec<Row> {
    let mut rows = Vec::new();
    let ft = |id: &str, p: f64, task: Task| Job {
        custom: Some(params_only(id, p)),
        task,
        quant: Some("fp32".into()),
        ..Default::default()
    };
    // T0_3B full FT: 4 + 4 + 8 = 16 B/param of model state; activations unknown without a shape.
    let (m, u) = mem(&ft("t0-3b", 2.851, Task::Full), 1);
    assert!(has(&u, "activations_unknown_shape"));
    let gb = m.allocated_gib() * GIB / 1e9;
    assert!((47.14 * (1.0 - TRAIN)..=47.14).contains(&gb));
    rows.push(unc("C2", "T0_3B full FT (states only)", Some(gb), Some(47.14), "GB",
        "T5 encoder-decoder shape not in the catalog: states only, a lower bound within 20 % (asserted)"));
    for (id, p) in [("mt0-xxl", 12.0), ("bloomz-7b1", 7.0)] {
        let r = resolved(&ft(id, p, Task::Full));
        let f = fit_card(&r, cards().get("a100-80gb-sxm").expect("a100"));
        assert_ne!(
            f.verdict,
            FitVerdict::FitsOn1,
            "{id} full FT must not fit one 80 GB card"
        );
        rows.push(unc(
            "C2",
            &format!("{id} full FT on 1×A100 80GB: OOM"),
            Some(f.per_gpu_gib),
            Some(visible_gib(80.0)),
            "GiB need vs card",
            "verdict matches: does not fit on one card (asserted)",
        ));
    }
    for (id, p, meas) in [
        ("t0-3b", 2.851, 14.4),
        ("mt0-xxl", 12.0, 56.0),
        ("bloomz-7b1", 7.0, 32.0),
    ] {
        let (m, _) = mem(&ft(id, p, Task::Lora), 1);
        let gb = m.allocated_gib() * GIB / 1e9;
        assert!(gb <= meas);
        rows.push(unc("C2", &format!("{id} LoRA (fp32 base, states only)"), Some(gb), Some(meas), "GB",
            "no shape: adapters and activations unknown; frozen fp32 base is a lower bound (asserted)"));
    }
    for w in ["LoRA + ZeRO-3 CPU offload rows", "SD DreamBooth rows"] {
        rows.push(unc(
            "C2",
            w,
            None,
            None,
            "GB",
            "CPU offload and diffusion models are not modelled",
        ));
    }
    rows
}

fn unsloth_hf(model: &str, ctx: u32) -> Job {
    let mut j = job(model, Task::Qlora, "nf4_dq", Engine::Transformers);
    j.context_tokens = ctx;
    j.batch = 1;
    j.training = TrainingSettings {
        optimizer: Optimizer::Adamw8bit,
        precision: TrainPrecision::Mixed,
        grad_checkpointing: true,
        flash_attention: true,
        lora_rank: 32,
        lora_targets: LoraTargets::AllLinear,
        loss: LossImpl::Unfused,
        optimizer_in_backward: false,
        upcast_unquantized_fp32: true,
    };
    j
}

/// C3: Unsloth's max context for QLoRA (rank 32, all linear, batch 1). At the measured maximum the
/// job just fits, so the HF-mode estimate there should be ≈ the card's memory (±20 %).
pub fn c3() -> Vec<Row> {
    let mut rows = Vec::new();
    let hf8 = [
        (12.0, 932u32),
        (16.0, 2551),
        (24.0, 5789),
        (40.0, 12264),
        (48.0, 15502),
        (80.0, 28454),
    ];
    for (gb, ctx) in hf8 {
        let (m, _) = mem(&unsloth_hf("llama-3.1-8b", ctx), 1);
        let r = resolved(&unsloth_hf("llama-3.1-8b", ctx));
        let ours = max_context(&r, 1, visible_gib(gb)).unwrap_or(0);
        rows.push(cmp(
            "C3",
            &format!("8B HF+FA2 at {ctx} tokens on {gb} GB (our max {ours})"),
            m.total,
            visible_gib(gb),
            "GiB",
            TRAIN,
        ));
    }
    let (m, _) = mem(&unsloth_hf("llama-3.1-70b", 6916), 1);
    rows.push(cmp(
        "C3",
        "70B HF+FA2 at 6,916 tokens on 80 GB",
        m.total,
        visible_gib(80.0),
        "GiB",
        TRAIN,
    ));
    // Unsloth offloads checkpointed activations to the CPU and fuses the loss: not an HF profile.
    // The estimator's HF mode must say those contexts do not fit (which is the benchmark's point).
    for (gb, ctx) in [(24.0, 78_475u32), (80.0, 342_733)] {
        let (m, _) = mem(&unsloth_hf("llama-3.1-8b", ctx), 1);
        assert!(m.total > visible_gib(gb));
        rows.push(unc("C3", &format!("8B Unsloth {ctx} tokens on {gb} GB"), Some(m.total), Some(visible_gib(gb)), "GiB",
            "Unsloth's CPU-offloaded activations are not an HF profile; HF-mode estimate exceeds the card (asserted)"));
    }
    // HF OOM on 8 GB (8B) and 48 GB (70B): the context used is not stated; at a short 512-token
    // sequence the estimate already exceeds those cards (asserted).
    for (model, gb) in [("llama-3.1-8b", 8.0), ("llama-3.1-70b", 48.0)] {
        let (m, _) = mem(&unsloth_hf(model, 512), 1);
        assert!(m.total > visible_gib(gb), "{model}: {} GiB", m.total);
        rows.push(unc(
            "C3",
            &format!("{model} HF+FA2 on {gb} GB: OOM"),
            Some(m.total),
            Some(visible_gib(gb)),
            "GiB at 512 tokens vs card",
            "OOM context not stated; estimate at 512 tokens exceeds the card (asserted)",
        ));
    }
    rows
}

/// C4: QLoRA paper: a 65B model fine-tunes in one 48 GB GPU; 16-bit full FT needs > 780 GB.
pub fn c4() -> Vec<Row> {
    let q = Job {
        custom: Some(params_only("llama-65b", 65.0)),
        task: Task::Qlora,
        ..Default::default()
    };
    let (m, u) = mem(&q, 1);
    assert!(has(&u, "activations_unknown_shape"));
    assert!(m.total < visible_gib(48.0));
    let full = Job {
        custom: Some(params_only("llama-65b", 65.0)),
        task: Task::Full,
        ..Default::default()
    };
    let (f, _) = mem(&full, 1);
    let gb = f.allocated_gib() * GIB / 1e9;
    assert!(gb > 780.0);
    vec![
        unc(
            "C4",
            "65B QLoRA on 48 GB (fits)",
            Some(m.total),
            Some(visible_gib(48.0)),
            "GiB need vs card",
            "no 65B shape: states only fit (asserted); activations flagged uncertain",
        ),
        unc(
            "C4",
            "65B 16-bit full FT > 780 GB",
            Some(gb),
            Some(780.0),
            "GB",
            "paper gives a lower bound; 16 B/param mixed-precision Adam exceeds it (asserted)",
        ),
    ]
}

pub fn titan(ac: bool, seq: u32) -> Job {
    let mut j = job("llama-3.1-8b", Task::Pretrain, "bf16", Engine::Transformers);
    j.gpus = 8;
    j.batch = 2;
    j.context_tokens = seq;
    j.training.grad_checkpointing = ac;
    j
}

/// C5: torchtitan, 8× H100, FSDP, local batch 2, seq 8,192, *selective* AC: 82.4 GiB/GPU.
pub fn c5() -> Vec<Row> {
    let (on, _) = mem(&titan(true, 8192), 8);
    let (off, _) = mem(&titan(false, 8192), 8);
    let mut rows = Vec::new();
    for (what, meas) in [
        ("8B FSDP seq 8192 selective AC", 82.4),
        ("same + torch.compile", 77.0),
        ("same + Float8", 76.8),
    ] {
        assert!(
            on.allocated_gib() <= meas && meas <= off.allocated_gib(),
            "{what}: {} .. {}",
            on.allocated_gib(),
            off.allocated_gib()
        );
        rows.push(unc(
            "C5",
            what,
            Some(off.allocated_gib()),
            Some(meas),
            "GiB",
            &format!(
                "selective AC is between full AC ({:.1}) and none ({:.1}); bracket asserted",
                on.allocated_gib(),
                off.allocated_gib()
            ),
        ));
    }
    rows.push(unc(
        "C5",
        "seq 32,768 with context parallel",
        None,
        Some(83.9),
        "GiB",
        "context parallelism is not modelled",
    ));
    rows
}
