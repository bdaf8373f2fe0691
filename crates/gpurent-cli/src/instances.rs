//! `gpurent instances`: the ledger joined with the reconciled provider state, and the instances
//! the providers list that gpurent did not start (docs/providers.md).

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::providers::ProviderError;

use crate::output::print_json;

#[derive(Debug, Args)]
pub struct InstancesArgs {
    /// Print JSON: {"instances": [...], "foreign": [...], "reconcile": {...}}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(app: &App, args: &InstancesArgs) -> Result<(), ProviderError> {
    let view = app.instances()?;
    if args.json {
        print_json(&view)?;
        return Ok(());
    }
    for i in &view.instances {
        println!(
            "{:<22} {:<7} {:<13} {}x {:<26} {}{:.3}/h {}",
            i.ledger.id,
            i.ledger.provider,
            i.ledger.state.as_str(),
            i.ledger.gpu_count,
            i.ledger.gpu,
            i.terms.currency.symbol(),
            i.ledger.price_per_hour_usd,
            i.ledger.provider_instance_id.as_deref().unwrap_or("-")
        );
    }
    for f in &view.foreign {
        println!(
            "{:<22} {:<7} {:<13} not started by gpurent{}",
            f.instance.id,
            f.provider,
            format!("{:?}", f.instance.state).to_lowercase(),
            if f.billing { " — still billing" } else { "" }
        );
    }
    for a in &view.reconcile.failed_accounts {
        eprintln!(
            "gpurent: {} could not be read: {} ({}); its rows were left as they were",
            a.account, a.message, a.code
        );
    }
    if view.instances.is_empty() && view.foreign.is_empty() {
        println!("no instances");
    }
    Ok(())
}
