//! `gpurent offers`: live offers from the connected accounts (docs/providers.md).

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::providers::{OfferQuery, ProviderError};

use crate::output::print_json;

#[derive(Debug, Args)]
pub struct OffersArgs {
    /// Only this provider (runpod, vast, lambda).
    #[arg(long)]
    provider: Option<String>,
    /// Only this account (from `gpurent provider list`).
    #[arg(long, value_name = "NAME")]
    account: Option<String>,
    /// A GPU name or part of one (4090, H100).
    #[arg(long)]
    gpu: Option<String>,
    /// Exactly this many GPUs.
    #[arg(long)]
    count: Option<u32>,
    /// At least this much memory per GPU (GiB).
    #[arg(long, value_name = "GB")]
    min_vram: Option<f64>,
    /// At most this price per hour for the machine (USD).
    #[arg(long, value_name = "USD")]
    max_price: Option<f64>,
    /// Only offers a published PyTorch wheel is known to run on (GPU architecture and host CUDA).
    #[arg(long)]
    runs_pytorch: bool,
    /// Vast: list asks on unverified machines too (default: verified machines only; each offer's
    /// tier says which).
    #[arg(long)]
    unverified: bool,
    /// Print JSON: {"offers": [Offer, ...], "failed_accounts": [...]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(app: &App, args: &OffersArgs) -> Result<(), ProviderError> {
    let provider = args
        .provider
        .as_deref()
        .map(crate::provider::kind)
        .transpose()?;
    let query = OfferQuery {
        gpu: args.gpu.clone(),
        count: args.count,
        min_vram_gib: args.min_vram,
        max_price_per_hour_usd: args.max_price,
        include_unverified: args.unverified.then_some(true),
    };
    let mut view = app.offers_from(provider, args.account.as_deref(), &query)?;
    if args.runs_pytorch {
        view.offers.retain(|o| o.runs_pytorch == Some(true));
    }
    if args.json {
        print_json(&view)?;
        return Ok(());
    }
    for o in &view.offers {
        println!(
            "{:<7} {:<40} {}x {:<28} {}{:>7.3}/h{}  {:<12} cuda {:<5} {:<10} {:<24} {}",
            o.provider,
            o.offer_id,
            o.gpu_count,
            o.gpu,
            o.currency.symbol(),
            o.price_per_hour_usd,
            // AutoDL quotes no price before the create: the documented rate, said so.
            if o.price_source.is_some() {
                " (documented)"
            } else {
                ""
            },
            o.region.as_deref().unwrap_or("-"),
            o.host_cuda.as_deref().unwrap_or("-"),
            o.tier.as_deref().unwrap_or(""),
            traffic_words(o.traffic.as_ref()),
            match (o.runs_pytorch, o.best_torch.as_deref()) {
                (Some(true), Some(t)) => format!("torch {t}"),
                (Some(false), _) => "no PyTorch wheel runs on this host's CUDA".to_string(),
                _ => String::new(),
            }
        );
    }
    if view.offers.is_empty() {
        println!("no offers match");
    }
    for f in &view.failed_accounts {
        eprintln!(
            "gpurent: {} could not be asked: {} ({})",
            f.account, f.message, f.code
        );
    }
    Ok(())
}

/// The offer's traffic price in a few words: `traffic $0.004/GB in, $0.008/GB out` where the
/// provider lists one, `traffic: not listed` where its API gives none (not the same as free).
fn traffic_words(t: Option<&gpurent_core::providers::TrafficCost>) -> String {
    let per_gb = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("${v}/GB"));
    match t {
        Some(t) if t.basis == "listed" => format!(
            "traffic {} in, {} out",
            per_gb(t.download_usd_per_gb),
            per_gb(t.upload_usd_per_gb)
        ),
        Some(_) => "traffic: not listed".to_string(),
        None => String::new(),
    }
}
