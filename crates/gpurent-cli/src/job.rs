//! `gpurent job`: size a job beyond LLMs (image, video, lora, speech, 3dgs, render, simulation)
//! from sourced figures. The JSON document of `job --json` is gpurent-core's `KindEstimate`
//! (ui/bindings/KindEstimate.ts); `job --list --json` is `KindCatalog`. Documented in
//! docs/estimator.md (Jobs beyond LLMs).

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::billing::money::format_code;
use gpurent_core::estimate::kinds::{JobKind, KindEstimate, KindJob, KindVerdict};
use gpurent_core::estimate::{Billing, BillingRule, Offer};
use gpurent_core::CoreError;

use crate::estimate::{parse_enum, parse_price};
use crate::output::print_json;

fn parse_kind(s: &str) -> Result<JobKind, String> {
    let v = s.trim().to_lowercase();
    let v = match v.as_str() {
        "3d" | "gaussian-splatting" => "3dgs",
        "stt" | "whisper" => "speech",
        "blender" => "render",
        "fdtd" | "lbm" | "cfd" => "simulation",
        other => other,
    };
    parse_enum(v)
}

#[derive(Debug, Args)]
pub struct JobArgs {
    /// image | video | lora | speech | 3dgs | render | simulation
    #[arg(long, default_value = "image", value_parser = parse_kind)]
    pub kind: JobKind,
    /// Model or workload id (see `gpurent job --list`), e.g. flux1-dev, whisper-large-v2, lbm-d3q19.
    #[arg(long, default_value = "flux1-dev")]
    pub model: String,
    /// Setting id of the model (precision, offload, tier, implementation); default: the first.
    #[arg(long, alias = "precision")]
    pub setting: Option<String>,
    /// Images or videos to make.
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    /// Hours of audio (speech).
    #[arg(long, default_value_t = 1.0)]
    pub audio_hours: f64,
    /// Grid cells (simulation), e.g. 8e6.
    #[arg(long)]
    pub cells: Option<f64>,
    /// Hourly price of one GPU of a card, repeatable: --price h100-sxm=2.5
    #[arg(long = "price", value_name = "CARD=PER_HOUR", value_parser = parse_price)]
    pub prices: Vec<(String, f64)>,
    /// What the --price amounts are in: CNY | USD (or another code, shown as it is). Default: the
    /// settings' currency (`gpurent settings`; 中文 → CNY, else USD). Never converted.
    #[arg(long)]
    pub currency: Option<String>,
    /// List every figure and speed (models and settings) instead.
    #[arg(long)]
    pub list: bool,
    /// Print JSON (docs/estimator.md: Jobs beyond LLMs).
    #[arg(long)]
    pub json: bool,
}

impl JobArgs {
    fn job(&self, app: &App) -> KindJob {
        let currency = self
            .currency
            .clone()
            .unwrap_or_else(|| app.default_currency().code().to_string());
        KindJob {
            kind: self.kind,
            model: self.model.clone(),
            setting: self.setting.clone(),
            count: self.count,
            audio_hours: self.audio_hours,
            cells: self.cells,
            offers: self
                .prices
                .iter()
                .map(|(card, p)| Offer {
                    card_id: card.clone(),
                    price_per_gpu_hour: *p,
                    billing: Billing {
                        rule: BillingRule::PerSecond,
                        minimum_minutes: 0.0,
                    },
                    currency: currency.clone(),
                    ..Default::default()
                })
                .collect(),
        }
    }
}

pub fn run(app: &App, args: &JobArgs) -> Result<(), CoreError> {
    if args.list {
        let c = app.kind_catalog()?;
        if args.json {
            return print_json(&c);
        }
        for f in &c.figures {
            println!(
                "{:<11} {:<20} {:<26} {}",
                serde_json::to_value(f.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                f.model,
                f.setting,
                f.setting_text
            );
        }
        return Ok(());
    }
    let e = app.kind_estimate(&args.job(app))?;
    if args.json {
        return print_json(&e);
    }
    print_text(&e);
    Ok(())
}

fn verdict(v: KindVerdict) -> &'static str {
    match v {
        KindVerdict::Fits => "fits",
        KindVerdict::FitsWithOffload => "fits with offload",
        KindVerdict::FitsQuantized => "fits quantized",
        KindVerdict::NoFigure => "no memory figure",
        KindVerdict::NeedsNewerGpu => "needs newer GPU",
        KindVerdict::DoesNotFit => "doesn't fit",
    }
}

fn print_text(e: &KindEstimate) {
    let f = &e.figure;
    println!("{} / {}: {}", e.model, f.setting, f.setting_text);
    match &e.need {
        Some(n) => println!("  needs {:.2} ({:?}, {:?})", n.value, n.basis, n.figure),
        None => println!("  no memory figure in the sources"),
    }
    if let Some(c) = &e.formula {
        println!(
            "  {} cells × {} B/cell = {:.2} GiB",
            c.cells, c.bytes_per_cell, c.gib
        );
    }
    println!("  source: {} ({:?})", f.source, f.confidence);
    println!(
        "\n{:<16} {:>6} {:<18} {:<26} {:>10}",
        "CARD", "VRAM", "VERDICT", "SETTING", "TIME s"
    );
    for x in &e.fits {
        println!(
            "{:<16} {:>6} {:<18} {:<26} {:>10}",
            x.card_id,
            x.vram_gb,
            verdict(x.verdict),
            x.setting,
            x.time_s.map_or("-".into(), |t| format!("{t:.0}"))
        );
    }
    for t in &e.times {
        if let Some(s) = t.total_s {
            println!("\nTime measured only on {}: {s:.0} s", t.measured_on);
        }
    }
    for o in &e.ranking {
        println!(
            "  offer {:<16} {}/h  job {}",
            o.card_id,
            format_code(o.price_per_hour, &o.currency, 2),
            o.cost
                .as_ref()
                .map_or("-".into(), |c| format_code(c.total_cost, &c.currency, 2))
        );
    }
    if !e.unverified.is_empty() {
        println!("\nUnverified: {}", e.unverified.join("; "));
    }
    if !e.not_found.is_empty() {
        println!("Not found: {}", e.not_found.join(", "));
    }
}
