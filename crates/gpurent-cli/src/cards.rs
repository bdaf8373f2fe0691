//! `gpurent cards`: the GPU catalog.

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::catalog::{Card, CardFilter, Segment};
use gpurent_core::CoreError;
use serde::Serialize;

use crate::output::print_json;

#[derive(Debug, Args)]
pub struct CardsArgs {
    /// Only cards with at least this much VRAM (decimal GB, as vendors quote it).
    #[arg(long, value_name = "GB")]
    pub min_vram: Option<f64>,
    /// Only cards of this segment.
    #[arg(long, value_enum)]
    pub segment: Option<SegmentArg>,
    /// Only cards whose name or id contains this text.
    #[arg(long)]
    pub search: Option<String>,
    /// Print JSON (see README: CLI JSON).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SegmentArg {
    Consumer,
    Workstation,
    Datacenter,
}

impl From<SegmentArg> for Segment {
    fn from(s: SegmentArg) -> Self {
        match s {
            SegmentArg::Consumer => Segment::Consumer,
            SegmentArg::Workstation => Segment::Workstation,
            SegmentArg::Datacenter => Segment::Datacenter,
        }
    }
}

/// `--json` document: `{"cards": [Card, ...]}` (Card as in ui/bindings/Card.ts).
#[derive(Debug, Serialize)]
struct CardsOutput<'a> {
    cards: &'a [Card],
}

pub fn run(app: &App, args: &CardsArgs) -> Result<(), CoreError> {
    let filter = CardFilter {
        min_vram_gb: args.min_vram,
        segment: args.segment.map(Segment::from),
        text: args.search.clone(),
    };
    let cards = app.catalog_list(&filter)?;
    if args.json {
        return print_json(&CardsOutput { cards: &cards });
    }
    println!(
        "{:<16} {:<32} {:>6} {:>8} {:>9} {:>8} {:>5} {:>7}",
        "ID", "NAME", "VRAM", "BW GB/s", "BF16 TF", "FP8 TF", "CC", "NVLINK"
    );
    for c in &cards {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x}"));
        let mark = |field: &str| {
            if c.unverified.iter().any(|u| u == field) {
                "*"
            } else {
                ""
            }
        };
        println!(
            "{:<16} {:<32} {:>6} {:>8} {:>9} {:>8} {:>5} {:>7}",
            c.id,
            c.name,
            format!("{}{}", c.vram_gb, mark("vram_gb")),
            format!("{}{}", c.mem_bw_gbps, mark("mem_bw_gbps")),
            format!("{}{}", opt(c.bf16_dense_tflops), mark("bf16_dense_tflops")),
            format!("{}{}", opt(c.fp8_dense_tflops), mark("fp8_dense_tflops")),
            c.compute_capability,
            if c.nvlink { "yes" } else { "no" },
        );
    }
    println!(
        "{} cards. TFLOPS are dense. * = not confirmed by a primary source.",
        cards.len()
    );
    Ok(())
}
