//! `gpurent cost`: what machines cost so far, per hour now, and by a chosen time (docs/billing.md).
//! Pasted hosts use the rate set with `gpurent rate set`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use gpurent_core::app::billing::MachineCost;
use gpurent_core::app::App;
use gpurent_core::guard::{parse_duration, GuardError};

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct CostArgs {
    /// One saved host (its rate: `gpurent rate set`); without it, every host with a rate.
    #[arg(long)]
    pub host: Option<String>,
    /// Every host with a rate (the default).
    #[arg(long, conflicts_with = "host")]
    pub all: bool,
    /// Also project: what it will have cost this long from now if it stays as it is (2h, 90m).
    #[arg(long, value_name = "DURATION")]
    pub by: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub fn main(data_dir: Option<&Path>, args: &CostArgs) -> ExitCode {
    match crate::open_app(data_dir)
        .map_err(GuardError::from)
        .and_then(|app| run(&app, args))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

fn line(m: &MachineCost) {
    println!(
        "{:16} {:>10} so far  {:>9}/h now  ({}, {:?}){}",
        m.host,
        format!("${:.2}", m.so_far.total_usd),
        format!("${:.3}", m.usd_per_hour_now),
        m.rule,
        m.state,
        m.projected
            .as_ref()
            .map(|p| format!("  -> ${:.2} by then", p.total_usd))
            .unwrap_or_default()
    );
}

fn run(app: &App, args: &CostArgs) -> Result<(), GuardError> {
    let by_ms = match &args.by {
        Some(d) => Some(parse_duration(d)? as i64 * 1000),
        None => None,
    };
    match &args.host {
        Some(h) => {
            let c = app.cost_host(h, by_ms)?;
            if args.json {
                return Ok(print_json(&c)?);
            }
            line(&c);
        }
        None => {
            let r = app.cost_all(by_ms)?;
            if args.json {
                return Ok(print_json(&r)?);
            }
            for m in &r.machines {
                line(m);
            }
            println!(
                "Total: ${:.2} so far, ${:.3}/h now{}",
                r.total_so_far_usd,
                r.total_usd_per_hour_now,
                r.total_projected_usd
                    .map(|p| format!(", ${p:.2} by then"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(())
}
