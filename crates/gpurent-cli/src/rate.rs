//! `gpurent rate`: a pasted host's own price and billing rule, which `gpurent cost` uses
//! (docs/billing.md).

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::App;
use gpurent_core::billing::{Increment, PastedRate};
use gpurent_core::guard::{parse_duration, GuardError};

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct RateArgs {
    #[command(subcommand)]
    pub command: RateCommand,
}

#[derive(Debug, Subcommand)]
pub enum RateCommand {
    /// Set the rate of a saved host from now or --started-ago (earlier rates stay in its history, each billed for its own period).
    Set {
        host: String,
        #[arg(long)]
        usd_per_hour: f64,
        /// per-second | per-minute | per-hour-rounded-up (1 h 10 min is billed as 2 h).
        #[arg(long, default_value = "per-second")]
        rule: String,
        /// Storage billed for as long as the machine exists, stopped included.
        #[arg(long)]
        storage_usd_per_day: Option<f64>,
        /// It has been running this long already (2h, 90m).
        #[arg(long, value_name = "DURATION")]
        started_ago: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The machine is stopped now: compute stops billing, storage goes on.
    Stopped {
        host: String,
        #[arg(long)]
        json: bool,
    },
    /// Show the saved rate.
    Show {
        host: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn main(data_dir: Option<&Path>, args: &RateArgs) -> ExitCode {
    let json = match &args.command {
        RateCommand::Set { json, .. }
        | RateCommand::Stopped { json, .. }
        | RateCommand::Show { json, .. } => *json,
    };
    match crate::open::open_app(data_dir)
        .map_err(GuardError::from)
        .and_then(|app| run(&app, args))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn run(app: &App, args: &RateArgs) -> Result<(), GuardError> {
    let r = match &args.command {
        RateCommand::Set {
            host,
            usd_per_hour,
            rule,
            storage_usd_per_day,
            started_ago,
            ..
        } => {
            let rule = Increment::from_rule_name(rule).ok_or_else(|| {
                GuardError::invalid("rule", "is per-second, per-minute or per-hour-rounded-up")
            })?;
            let ago = match started_ago {
                Some(d) => parse_duration(d)? as i64 * 1000,
                None => 0,
            };
            let rate = PastedRate {
                usd_per_hour: *usd_per_hour,
                rule,
                storage_usd_per_day: *storage_usd_per_day,
            };
            Some(app.host_rate_set(host, rate, ago)?)
        }
        RateCommand::Stopped { host, .. } => Some(app.host_rate_stopped(host)?),
        RateCommand::Show { host, .. } => app.host_rate_get(host)?,
    };
    let json = match &args.command {
        RateCommand::Set { json, .. }
        | RateCommand::Stopped { json, .. }
        | RateCommand::Show { json, .. } => *json,
    };
    if json {
        return Ok(print_json(&r)?);
    }
    match r {
        Some(r) => println!(
            "{}: ${}/h {}{}{}",
            r.host,
            r.rate.usd_per_hour,
            r.rate.rule.rule_name(),
            r.rate
                .storage_usd_per_day
                .map(|s| format!(", storage ${s}/day"))
                .unwrap_or_default(),
            if r.stopped_ms.is_some() {
                " (stopped)"
            } else {
                ""
            }
        ),
        None => println!("No rate set."),
    }
    Ok(())
}
