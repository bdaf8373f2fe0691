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
    key_left_warning(app, action, &view);
    if json {
        print_json(&serde_json::json!({ "instance": view }))?;
    } else {
        println!("{} is {}", view.ledger.id, view.ledger.state.as_str());
    }
    Ok(())
}

/// The stop or release happened, but the account's full API key a guard held on the machine
/// could not be taken off first: say so on stderr (in the app's language; `--json` carries
/// `key_left` too), with what to do.
pub fn key_left_warning(
    app: &App,
    action: &str,
    view: &gpurent_core::app::providers::InstanceView,
) {
    if !view.key_left {
        return;
    }
    let n = gpurent_core::second_guard::key_left(
        view.ledger.host_label.as_deref().unwrap_or(&view.ledger.id),
        &view.ledger.id,
        action,
        view.key_left_why.clone(),
        0,
    );
    let (title, body) =
        gpurent_core::second_guard::notice_text(app.settings_view().effective_language, &n);
    eprintln!("gpurent: {title}. {body}");
}
