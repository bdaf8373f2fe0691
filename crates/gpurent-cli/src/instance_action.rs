//! `gpurent stop|start|release INSTANCE [--yes]`: the shared frame of the three money actions.
//! Without `--yes` nothing is sent: the error `confirmation_required` carries the money in its
//! detail. The ledger is updated from the provider's answer, read back after the call.

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::providers::ProviderError;

use crate::output::print_json;

#[derive(Debug, Args)]
pub struct ActionArgs {
    /// The gpurent id (gpurent-…) or the provider's instance id.
    instance: String,
    /// Confirm (the money is stated without it).
    #[arg(long)]
    yes: bool,
    /// Print JSON: {"instance": InstanceView}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(app: &App, action: &str, args: &ActionArgs) -> Result<(), ProviderError> {
    let _ = app.providers_reconcile();
    run_action(app, action, &args.instance, args.yes, args.json)
}

/// The action after the reconcile (also `release`'s path when it asks nobody).
pub fn run_action(
    app: &App,
    action: &str,
    instance: &str,
    yes: bool,
    json: bool,
) -> Result<(), ProviderError> {
    if !yes && !json {
        let m = app.instance_money(instance, action)?;
        let words = match m.effect.as_str() {
            "gpu_billing_stops_disk_kept" => format!(
                "GPU billing stops; the {} GB disk is kept{}",
                m.disk_gb,
                m.stopped_storage_usd_per_month
                    .map(|c| format!(" and still costs about ${c:.2} a month"))
                    .unwrap_or_else(|| " and still costs its storage price".into())
            ),
            "gpu_billing_stops_disk_wiped" => format!(
                "GPU billing stops; the {} GB container disk is wiped on stop: download your results first",
                m.disk_gb
            ),
            "gpu_billing_resumes" => {
                format!("GPU billing resumes at ${:.3}/h", m.price_per_hour_usd)
            }
            _ => "release deletes the machine and its disk: download your results first".into(),
        };
        eprintln!("gpurent: {action} {instance}: {words}. Run again with --yes to do it.");
    }
    let view = app.instance_action(instance, action, yes)?;
    if json {
        print_json(&serde_json::json!({ "instance": view }))?;
    } else {
        println!("{} is {}", view.ledger.id, view.ledger.state.as_str());
    }
    Ok(())
}
