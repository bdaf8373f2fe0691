//! `gpurent cost [INSTANCE | --host HOST | --all]`: what machines cost so far, per hour now, and by
//! a chosen time (docs/billing.md). Pasted hosts use the rate set with `gpurent rate set`; provider
//! machines come from the instance ledger, with the provider's own rate and balance beside.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use gpurent_core::app::billing::{CostOptions, MachineCost, MachineKind};
use gpurent_core::app::App;
use gpurent_core::guard::{parse_duration, GuardError};
use gpurent_core::providers::ProviderError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct CostArgs {
    /// One machine: a provider instance (gpurent id or the provider's id) or a saved host with a
    /// rate. Without it, every machine.
    #[arg(conflicts_with_all = ["host", "all"])]
    pub instance: Option<String>,
    /// One saved host (its rate: `gpurent rate set`).
    #[arg(long)]
    pub host: Option<String>,
    /// Every machine (the default).
    #[arg(long, conflicts_with = "host")]
    pub all: bool,
    /// Also project: what it will have cost this long from now if it stays as it is (2h, 90m).
    #[arg(long, value_name = "DURATION")]
    pub by: Option<String>,
    /// Also list provider machines already terminated.
    #[arg(long)]
    pub closed: bool,
    /// Do not ask the providers (no reconcile, no reported rates, no balances): the ledger only.
    #[arg(long)]
    pub offline: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn main(data_dir: Option<&Path>, args: &CostArgs) -> ExitCode {
    match crate::open::open_app(data_dir)
        .map_err(ProviderError::from)
        .and_then(|app| run(&app, args))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

fn line(m: &MachineCost) {
    let c = m.currency;
    let reported = m
        .reported
        .as_ref()
        .map(|r| {
            format!(
                "  provider says {}/h{}",
                c.format(r.usd_per_hour, 3),
                if r.differs == Some(true) {
                    " (differs)"
                } else {
                    ""
                }
            )
        })
        .unwrap_or_default();
    let state = m
        .ledger_state
        .clone()
        .or_else(|| m.state.map(|s| format!("{s:?}").to_lowercase()))
        .unwrap_or_else(|| "-".into());
    let foreign = if m.kind == MachineKind::Foreign {
        format!(
            "  NOT STARTED BY GPURENT — still billing ({} {}; so far: since gpurent first saw it; gpurent release {} --yes)",
            m.provider.map(|p| p.as_str()).unwrap_or("-"),
            m.provider_instance_id.as_deref().unwrap_or("-"),
            m.provider_instance_id.as_deref().unwrap_or("-"),
        )
    } else {
        String::new()
    };
    println!(
        "{:22} {:>10} so far  {:>9}/h now  ({}, {}){}{}{foreign}",
        m.host,
        c.format(m.so_far.total(), 2),
        c.format(m.per_hour_now, 3),
        m.rule,
        state,
        m.projected
            .as_ref()
            .map(|p| format!("  -> {} by then", c.format(p.total(), 2)))
            .unwrap_or_default(),
        reported
    );
    if let Some(at) = m.platform_release_at_ms {
        let days = (at - m.now_ms) as f64 / 86_400_000.0;
        println!(
            "{:22} powered off: {} releases it (and wipes its data) in about {:.1} days if it stays off",
            "",
            m.platform.map(|p| p.as_str()).unwrap_or("its platform"),
            days.max(0.0)
        );
    }
    for e in &m.earlier_in_other_currencies {
        println!(
            "{:22} {:>10} earlier, at a rate in {}",
            "",
            e.currency.format(e.amount, 2),
            e.currency
        );
    }
}

fn run(app: &App, args: &CostArgs) -> Result<(), ProviderError> {
    let by_ms = match &args.by {
        Some(d) => Some(
            parse_duration(d).map_err(|e| match e {
                GuardError::Remote(r) => ProviderError::Remote(r),
                other => {
                    ProviderError::Core(gpurent_core::CoreError::invalid("by", other.to_string()))
                }
            })? as i64
                * 1000,
        ),
        None => None,
    };
    if let Some(h) = &args.host {
        let c = app.cost_host(h, by_ms)?;
        if args.json {
            return Ok(print_json(&c)?);
        }
        line(&c);
        return Ok(());
    }
    if let Some(i) = &args.instance {
        let c = app.cost_instance(i, by_ms, !args.offline)?;
        if args.json {
            return Ok(print_json(&c)?);
        }
        line(&c);
        return Ok(());
    }
    let r = app.cost_report(CostOptions {
        ahead_ms: by_ms,
        live: !args.offline,
        include_closed: args.closed,
    })?;
    if args.json {
        return Ok(print_json(&r)?);
    }
    for m in &r.machines {
        line(m);
    }
    // One line per currency: amounts in different currencies are never added up.
    if r.totals.is_empty() {
        println!("Total: nothing billed");
    }
    for t in &r.totals {
        let c = t.currency;
        println!(
            "Total{}: {} so far, {}/h now{}",
            if r.totals.len() > 1 {
                format!(" in {c}")
            } else {
                String::new()
            },
            c.format(t.so_far, 2),
            c.format(t.per_hour_now, 3),
            t.projected
                .map(|p| format!(", {} by then", c.format(p, 2)))
                .unwrap_or_default()
        );
    }
    for b in &r.balances {
        let c = b.currency;
        match (b.balance(), b.runs_out_in_h) {
            (Some(bal), Some(h)) => println!(
                "{} ({}): balance {} at {}/h runs out in about {h:.1} h — then the platform may release the machines and delete their disks",
                b.account, b.provider, c.format(bal, 2), c.format(b.per_hour(), 3)
            ),
            (Some(bal), None) => println!("{} ({}): balance {}, nothing billing now", b.account, b.provider, c.format(bal, 2)),
            (None, _) => println!(
                "{} ({}): no balance reported{}",
                b.account,
                b.provider,
                b.error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
            ),
        }
    }
    for f in &r.failed_accounts {
        eprintln!(
            "{}: could not be read ({}): costs from the ledger only",
            f.account, f.code
        );
    }
    Ok(())
}
