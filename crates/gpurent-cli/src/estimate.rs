//! `gpurent estimate` (memory, fit per card, speed, time, cost for a job) and `gpurent models`.
//! The JSON document of `estimate --json` is gpurent-core's `Estimate` (ui/bindings/Estimate.ts;
//! documented in docs/estimator.md).

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::billing::money::format_code;
use gpurent_core::estimate::{
    Billing, BillingRule, Engine, Estimate, Explanation, FitVerdict, Job, KvCacheDtype,
    LoraTargets, LossImpl, ModelSpec, Offer, Optimizer, Parallelism, Task,
};
use gpurent_core::CoreError;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::output::print_json;

/// Parse a snake_case enum value the way the core serialises it ("llama-cpp" = "llama_cpp").
pub fn parse_enum<T: DeserializeOwned>(s: &str) -> Result<T, String> {
    let v = s.trim().to_lowercase().replace('-', "_");
    let v = match v.as_str() {
        "ollama" | "llamacpp" => "llama_cpp".to_string(),
        "hf" => "transformers".to_string(),
        _ => v,
    };
    serde_json::from_value(serde_json::Value::String(v)).map_err(|_| format!("unknown value '{s}'"))
}

/// CARD=PRICE.
pub fn parse_price(s: &str) -> Result<(String, f64), String> {
    let (card, price) = s
        .split_once('=')
        .ok_or_else(|| format!("expected CARD=PRICE_PER_HOUR, got '{s}'"))?;
    let p: f64 = price
        .trim()
        .parse()
        .map_err(|_| format!("'{price}' is not a price"))?;
    if !(p.is_finite() && p >= 0.0) {
        return Err(format!("'{price}' is not a price"));
    }
    Ok((card.trim().to_string(), p))
}

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// Catalog model id (see `gpurent models`); omit and give --params-b for a custom model.
    #[arg(long)]
    pub model: Option<String>,
    /// infer | lora | qlora | full | pretrain
    #[arg(long, default_value = "infer", value_parser = parse_enum::<Task>)]
    pub task: Task,
    /// Weight format: bf16, fp16, fp32, fp8, int8, gptq_int4, gptq_int8, awq_int4, nf4, nf4_dq,
    /// or GGUF q8_0, q6_k, q5_k_m, q4_k_m, q4_0, ... (default: bf16; nf4_dq for QLoRA; q4_k_m for llama-cpp)
    #[arg(long)]
    pub quant: Option<String>,
    /// transformers | vllm | llama-cpp (ollama)
    #[arg(long, default_value = "transformers", value_parser = parse_enum::<Engine>)]
    pub engine: Engine,
    /// Tokens per sequence (prompt + generated for inference; sequence length for training).
    #[arg(long, default_value_t = 2048)]
    pub context: u32,
    /// Prompt tokens of one prefill (inference; default: all of --context).
    #[arg(long)]
    pub prompt: Option<u32>,
    /// Sequences at once (inference) or micro-batch per GPU (training).
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// KV cache type: fp16 | fp8 | q8_0 | q4_0
    #[arg(long, default_value = "fp16", value_parser = parse_enum::<KvCacheDtype>)]
    pub kv_cache: KvCacheDtype,
    /// GPUs to use.
    #[arg(long, default_value_t = 1)]
    pub gpus: u32,
    /// data_parallel | zero1 | zero2 | zero3 | tensor_parallel | pipeline (default: per task/engine)
    #[arg(long, value_parser = parse_enum::<Parallelism>)]
    pub parallelism: Option<Parallelism>,
    /// adamw | adamw_8bit | paged_adamw | paged_adamw_8bit | sgd_momentum | sgd
    #[arg(long, default_value = "adamw", value_parser = parse_enum::<Optimizer>)]
    pub optimizer: Optimizer,
    /// Activation (gradient) checkpointing.
    #[arg(long)]
    pub grad_checkpointing: bool,
    /// Attention without FlashAttention/SDPA (keeps the seq² score matrix).
    #[arg(long)]
    pub no_flash_attention: bool,
    #[arg(long, default_value_t = 16)]
    pub lora_rank: u32,
    /// qv | attention | all_linear
    #[arg(long, default_value = "all_linear", value_parser = parse_enum::<LoraTargets>)]
    pub lora_targets: LoraTargets,
    /// unfused (transformers) | chunked (torchtune) | fused (Liger/Unsloth)
    #[arg(long, default_value = "unfused", value_parser = parse_enum::<LossImpl>)]
    pub loss: LossImpl,
    /// QLoRA: keep embeddings/LM head 16-bit (no PEFT fp32 upcast).
    #[arg(long)]
    pub keep_16bit_embeddings: bool,
    /// Training tokens (D in 6·N·D), e.g. 2e11.
    #[arg(long)]
    pub tokens: Option<f64>,
    /// Tokens to generate (inference job time and cost).
    #[arg(long)]
    pub generate_tokens: Option<f64>,
    /// Model FLOPs utilisation (default 0.35 pre-training, 0.30 fine-tuning).
    #[arg(long)]
    pub mfu: Option<f64>,
    /// vLLM gpu_memory_utilization.
    #[arg(long, default_value_t = 0.9)]
    pub gpu_memory_utilization: f64,
    /// vLLM --enforce-eager (no CUDA graphs).
    #[arg(long)]
    pub enforce_eager: bool,
    /// Hourly price of one GPU of a card, repeatable: --price rtx-4090=0.45
    #[arg(long = "price", value_name = "CARD=PER_HOUR", value_parser = parse_price)]
    pub prices: Vec<(String, f64)>,
    /// Spot price of one GPU-hour, repeatable.
    #[arg(long = "spot-price", value_name = "CARD=PER_HOUR", value_parser = parse_price)]
    pub spot_prices: Vec<(String, f64)>,
    /// Monthly price of one GPU, repeatable.
    #[arg(long = "monthly-price", value_name = "CARD=PER_MONTH", value_parser = parse_price)]
    pub monthly_prices: Vec<(String, f64)>,
    /// per_second | per_minute | per_started_hour
    #[arg(long, default_value = "per_second", value_parser = parse_enum::<BillingRule>)]
    pub billing: BillingRule,
    /// Minimum billed minutes per start.
    #[arg(long, default_value_t = 0.0)]
    pub min_billed_minutes: f64,
    /// What the --price, --spot-price and --monthly-price amounts are in: CNY | USD (or another
    /// code, shown as it is). Default: the settings' currency (`gpurent settings`; it follows the
    /// language until chosen: 中文 → CNY, else USD). Never converted.
    #[arg(long)]
    pub currency: Option<String>,
    /// Minutes between checkpoints (spot warning).
    #[arg(long)]
    pub checkpoint_minutes: Option<f64>,
    /// Rent-vs-buy: price of one card, electricity price per kWh, power draw, utilisation 0–1.
    #[arg(long)]
    pub buy_price: Option<f64>,
    #[arg(long)]
    pub electricity_price: Option<f64>,
    #[arg(long)]
    pub power_w: Option<f64>,
    #[arg(long, default_value_t = 0.5)]
    pub utilisation: f64,
    /// Custom model: total parameters in billions.
    #[arg(long)]
    pub params_b: Option<f64>,
    #[arg(long)]
    pub layers: Option<u32>,
    #[arg(long)]
    pub hidden: Option<u32>,
    #[arg(long)]
    pub heads: Option<u32>,
    #[arg(long)]
    pub kv_heads: Option<u32>,
    #[arg(long)]
    pub head_dim: Option<u32>,
    #[arg(long)]
    pub intermediate: Option<u32>,
    #[arg(long)]
    pub vocab: Option<u32>,
    #[arg(long)]
    pub tied_embeddings: bool,
    /// Architecture name for Ollama's graph formula (llama, qwen2, ...).
    #[arg(long)]
    pub arch: Option<String>,
    /// Print JSON (docs/estimator.md: CLI JSON).
    #[arg(long)]
    pub json: bool,
}

impl EstimateArgs {
    /// `--currency`, else the settings' currency.
    fn currency(&self, app: &App) -> String {
        self.currency
            .clone()
            .unwrap_or_else(|| app.default_currency().code().to_string())
    }

    fn job(&self, currency: &str) -> Job {
        let custom = self.params_b.map(|p| ModelSpec {
            id: "custom".into(),
            hf_repo: None,
            arch: self.arch.clone(),
            params_b: p,
            layers: self.layers,
            hidden_size: self.hidden,
            attention_heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            intermediate_size: self.intermediate,
            vocab_size: self.vocab,
            tied_embeddings: self.tied_embeddings,
            qkv_bias: false,
            max_position_embeddings: None,
            sliding_window: None,
            context_note: String::new(),
            source: "entered by the user".into(),
        });
        let find = |list: &[(String, f64)], card: &str| {
            list.iter().rev().find(|(c, _)| c == card).map(|(_, p)| *p)
        };
        let offers = self
            .prices
            .iter()
            .map(|(card, p)| Offer {
                card_id: card.clone(),
                price_per_gpu_hour: *p,
                price_per_gpu_month: find(&self.monthly_prices, card),
                spot_price_per_gpu_hour: find(&self.spot_prices, card),
                billing: Billing {
                    rule: self.billing,
                    minimum_minutes: self.min_billed_minutes,
                },
                currency: currency.to_string(),
                label: None,
            })
            .collect();
        let mut job = Job {
            model: self.model.clone(),
            custom,
            task: self.task,
            quant: self.quant.clone(),
            engine: self.engine,
            context_tokens: self.context,
            prompt_tokens: self.prompt,
            batch: self.batch,
            kv_cache: self.kv_cache,
            gpus: self.gpus,
            parallelism: self.parallelism,
            train_tokens: self.tokens,
            generate_tokens: self.generate_tokens,
            mfu: self.mfu,
            ..Default::default()
        };
        let t = &mut job.training;
        t.optimizer = self.optimizer;
        t.grad_checkpointing = self.grad_checkpointing;
        t.flash_attention = !self.no_flash_attention;
        t.lora_rank = self.lora_rank;
        t.lora_targets = self.lora_targets;
        t.loss = self.loss;
        t.upcast_unquantized_fp32 = !self.keep_16bit_embeddings;
        job.vllm.gpu_memory_utilization = self.gpu_memory_utilization;
        job.vllm.enforce_eager = self.enforce_eager;
        let c = &mut job.cost;
        c.offers = offers;
        c.checkpoint_interval_minutes = self.checkpoint_minutes;
        c.buy_price_per_gpu = self.buy_price;
        c.electricity_price_per_kwh = self.electricity_price;
        c.power_w = self.power_w;
        c.utilisation = self.utilisation;
        job
    }
}

pub fn run(app: &App, args: &EstimateArgs) -> Result<(), CoreError> {
    let currency = args.currency(app);
    let e = app.estimate(&args.job(&currency))?;
    if args.json {
        return print_json(&e);
    }
    print_text(&e, &currency);
    Ok(())
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// `e`'s offers are in `currency` (every `--price` of one run is).
fn print_text(e: &Estimate, currency: &str) {
    let money = |v: f64, digits: usize| format_code(v, currency, digits);
    let b = &e.per_gpu_gib.breakdown;
    println!(
        "{} ({:.2}B params), {:?}, {}, {} GPU(s): {:.2} GiB per GPU",
        e.model.id,
        e.params.total / 1e9,
        e.task,
        e.quant.id,
        e.gpus,
        e.per_gpu_gib.total
    );
    println!(
        "  weights {:.2} | kv_cache {:.2} | activations {:.2} | gradients {:.2} | optimizer {:.2} | overhead {:.2}  (GiB)",
        b.weights, b.kv_cache, b.activations, b.gradients, b.optimizer, b.overhead
    );
    println!(
        "\n{:<16} {:>6} {:<16} {:>5} {:>9} {:>10} {:>10}",
        "CARD", "VRAM", "VERDICT", "GPUS", "GiB/GPU", "tok/s", "days"
    );
    for f in &e.fits {
        let s = f.speed.as_ref();
        let verdict = match f.verdict {
            FitVerdict::FitsOn1 => "fits on 1",
            FitVerdict::FitsOnN => "fits on N",
            FitVerdict::PartialOffload => "partial offload",
            FitVerdict::DoesNotFit => "doesn't fit",
        };
        println!(
            "{:<16} {:>6} {:<16} {:>5} {:>9.2} {:>10} {:>10}",
            f.card_id,
            f.vram_gb,
            verdict,
            f.gpus,
            f.per_gpu_gib,
            opt(
                s.and_then(|s| s.decode_tokens_per_s.or(s.train_tokens_per_s)),
                1
            ),
            opt(s.and_then(|s| s.job_days), 2),
        );
    }
    if !e.ranking.is_empty() {
        println!("\nOffers, cheapest first:");
        for r in &e.ranking {
            let or_dash = |v: Option<f64>, digits| v.map_or("-".into(), |x| money(x, digits));
            println!(
                "  {:<16} x{} {:>10}/h  job {}  per 1M tokens {}",
                r.card_id,
                r.gpus,
                money(r.price_per_hour_all_gpus, 2),
                or_dash(r.cost.as_ref().map(|c| c.total_cost), 2),
                or_dash(r.cost_per_million_tokens, 3),
            );
        }
    }
    println!("\nWhy:");
    for x in &e.explanation {
        println!("  - {}", explain_en(x));
    }
    if !e.uncertain.is_empty() {
        println!("\nUncertain:");
        for u in &e.uncertain {
            println!("  - {}: {}", u.key, u.reason);
        }
    }
}

/// English sentence for an explanation item (the UI has its own zh-CN/en strings by key).
fn explain_en(x: &Explanation) -> String {
    match x {
        Explanation::KvCacheDominates {
            kv_gib,
            context,
            suggested_context,
            card_gb,
        } => format!(
            "the KV cache for {context} tokens is {kv_gib:.1} GiB; cut context to {suggested_context} to fit a {card_gb} GB card"
        ),
        Explanation::BestFit {
            card_id,
            gpus,
            per_gpu_gib,
            card_gb,
        } => format!("best fit: {gpus} × {card_id} ({per_gpu_gib:.1} GiB of {card_gb} GB each)"),
        Explanation::TrainingTime {
            days,
            gpus,
            card_id,
            mfu,
            peak_tflops,
        } => format!(
            "training takes {days:.1} days on {gpus} × {card_id} at {:.0} % of {peak_tflops} dense TFLOPS",
            mfu * 100.0
        ),
        Explanation::CheapestOffer {
            card_id,
            gpus,
            total_cost,
            cost_per_million_tokens,
            currency,
        } => match (total_cost, cost_per_million_tokens) {
            (Some(c), _) => format!(
                "cheapest of your prices: {gpus} × {card_id}, {} for the job",
                format_code(*c, currency, 2)
            ),
            (None, Some(c)) => format!(
                "cheapest of your prices: {gpus} × {card_id}, {} per million generated tokens",
                format_code(*c, currency, 2)
            ),
            (None, None) => format!(
                "cheapest of your prices: {gpus} × {card_id} (give --tokens for the whole job's cost)"
            ),
        },
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Print JSON: {"models": [ModelSpec...], "quant_formats": [QuantFormat...]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
struct ModelsOutput {
    models: Vec<ModelSpec>,
    quant_formats: Vec<gpurent_core::estimate::QuantFormat>,
}

pub fn run_models(app: &App, args: &ModelsArgs) -> Result<(), CoreError> {
    let out = ModelsOutput {
        models: app.models()?,
        quant_formats: app.quant_formats()?,
    };
    if args.json {
        return print_json(&out);
    }
    println!(
        "{:<28} {:>8} {:>6} {:>6} {:>5} {:>4} {:>8} {:>9}",
        "ID", "PARAMS B", "LAYERS", "HIDDEN", "HEADS", "KV", "VOCAB", "KV KiB/tok"
    );
    for m in &out.models {
        let n = |v: Option<u32>| v.map_or("-".into(), |x| x.to_string());
        println!(
            "{:<28} {:>8} {:>6} {:>6} {:>5} {:>4} {:>8} {:>9}",
            m.id,
            m.params_b,
            n(m.layers),
            n(m.hidden_size),
            n(m.attention_heads),
            n(m.kv_heads),
            n(m.vocab_size),
            opt(m.kv_bytes_per_token(2.0).map(|b| b / 1024.0), 0),
        );
    }
    println!("\nWeight formats (bits per weight): ");
    for q in &out.quant_formats {
        println!(
            "  {:<10} {:>8} {}",
            q.id,
            q.bits_per_weight,
            if q.embeddings_16bit {
                "(embeddings/LM head stay 16-bit)"
            } else {
                ""
            }
        );
    }
    Ok(())
}
