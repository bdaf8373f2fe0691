//! `gpurent rate`: a pasted host's own price and billing rule, which `gpurent cost` uses
//! (docs/billing.md).

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::App;
use gpurent_core::billing::money::parse_rate;
use gpurent_core::billing::platforms::{self, Platform};
use gpurent_core::billing::{Currency, Increment, PastedRate};
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
    /// `gpurent rate set box 2.5 --currency CNY`, `gpurent rate set box ¥2.5/h`, `… '$0.4/h'`.
    Set {
        host: String,
        /// The rate per hour: 2.5, ¥2.5/h, $0.4/h, 2.5 CNY. Its currency: the sign or code in it,
        /// else --currency, else the settings' (`gpurent settings`). Never converted.
        #[arg(
            conflicts_with = "usd_per_hour",
            required_unless_present = "usd_per_hour"
        )]
        rate: Option<String>,
        /// The rate in US dollars per hour (the older form of RATE with --currency USD).
        #[arg(long, conflicts_with = "currency")]
        usd_per_hour: Option<f64>,
        /// CNY | USD: what RATE and --storage-per-day are in.
        #[arg(long)]
        currency: Option<String>,
        /// per-second | per-minute | per-hour-rounded-up (1 h 10 min is billed as 2 h). Default: the
        /// platform's rounding where gpurent knows it, else per-second.
        #[arg(long)]
        rule: Option<String>,
        /// The platform it was rented on: autodl | gpushare (恒源云) | matpool (矩池云) | featurize |
        /// other. Its billing rules apply (`gpurent rate platforms`).
        #[arg(long)]
        platform: Option<String>,
        /// Storage billed for as long as the machine exists, stopped included, per day in the
        /// rate's currency.
        #[arg(long, conflicts_with = "storage_usd_per_day")]
        storage_per_day: Option<f64>,
        /// Storage per day in US dollars (a USD rate only).
        #[arg(long)]
        storage_usd_per_day: Option<f64>,
        /// It has been running this long already (2h, 90m).
        #[arg(long, value_name = "DURATION")]
        started_ago: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The machine is stopped now: compute stops billing, storage goes on. A rate set while it is
    /// stopped bills from its next start.
    Stopped {
        host: String,
        #[arg(long)]
        json: bool,
    },
    /// The machine is started again now (you started it in the platform's console): compute bills
    /// from now at its rate. Setting a rate never starts a stopped machine; this does.
    Started {
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
    /// The billing rules gpurent knows of each platform a pasted host may come from, with their
    /// sources (unverified ones marked).
    Platforms {
        #[arg(long)]
        json: bool,
    },
}

pub fn main(data_dir: Option<&Path>, args: &RateArgs) -> ExitCode {
    let json = match &args.command {
        RateCommand::Set { json, .. }
        | RateCommand::Stopped { json, .. }
        | RateCommand::Started { json, .. }
        | RateCommand::Show { json, .. }
        | RateCommand::Platforms { json } => *json,
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
            rate,
            usd_per_hour,
            currency,
            rule,
            platform,
            storage_per_day,
            storage_usd_per_day,
            started_ago,
            ..
        } => {
            let named = match currency {
                Some(c) => Some(
                    Currency::parse(c)
                        .ok_or_else(|| GuardError::invalid("currency", "is CNY or USD"))?,
                ),
                None => None,
            };
            let (per_hour, currency) = match (rate, usd_per_hour) {
                (_, Some(usd)) => (*usd, Currency::Usd),
                (Some(text), None) => {
                    let (amount, in_text) = parse_rate(text).ok_or_else(|| {
                        GuardError::invalid("rate", "is a number per hour: 2.5, ¥2.5/h or $0.4/h")
                    })?;
                    if let (Some(a), Some(b)) = (in_text, named) {
                        if a != b {
                            return Err(GuardError::invalid(
                                "currency",
                                format!("the rate says {a}, --currency says {b}"),
                            ));
                        }
                    }
                    (
                        amount,
                        in_text.or(named).unwrap_or_else(|| app.default_currency()),
                    )
                }
                (None, None) => {
                    return Err(GuardError::invalid("rate", "is required"));
                }
            };
            if storage_usd_per_day.is_some() && currency != Currency::Usd {
                return Err(GuardError::invalid(
                    "storage_usd_per_day",
                    format!("the rate is in {currency}: use --storage-per-day"),
                ));
            }
            let storage = storage_per_day.or(*storage_usd_per_day);
            let platform = match platform {
                Some(p) => Some(Platform::parse(p).ok_or_else(|| {
                    GuardError::invalid(
                        "platform",
                        "is autodl, gpushare, matpool, featurize or other",
                    )
                })?),
                None => None,
            };
            let known = match platform {
                Some(p) => platforms::rules_for(p)?.increment,
                None => None,
            };
            let rule = match rule {
                Some(r) => Increment::from_rule_name(r).ok_or_else(|| {
                    GuardError::invalid("rule", "is per-second, per-minute or per-hour-rounded-up")
                })?,
                None => known.unwrap_or(Increment::Second),
            };
            let ago = match started_ago {
                Some(d) => parse_duration(d)? as i64 * 1000,
                None => 0,
            };
            let rate = PastedRate {
                usd_per_hour: per_hour,
                rule,
                storage_usd_per_day: storage,
                currency,
                platform,
            };
            Some(app.host_rate_set(host, rate, ago)?)
        }
        RateCommand::Stopped { host, .. } => Some(app.host_rate_stopped(host)?),
        RateCommand::Started { host, .. } => Some(app.host_rate_started(host)?),
        RateCommand::Show { host, .. } => app.host_rate_get(host)?,
        RateCommand::Platforms { json } => {
            let all = app.platform_rules()?;
            if *json {
                return Ok(print_json(&serde_json::json!({ "platforms": all }))?);
            }
            for p in &all {
                println!(
                    "{}: {}; storage while off: {}; released after {} off{}",
                    p.platform.as_str(),
                    p.increment
                        .map(|i| i.rule_name().to_string())
                        .unwrap_or_else(|| "rounding not known (your --rule applies)".into()),
                    match p.storage_while_off {
                        Some(true) => "billed",
                        Some(false) => "not billed",
                        None => "not known",
                    },
                    p.release_after_days_off
                        .map(|d| format!("{d} days"))
                        .unwrap_or_else(|| "? days (not known)".into()),
                    p.no_gpu_cny_per_hour
                        .map(|c| format!(
                            "; no-GPU mode {}/h (console)",
                            gpurent_core::billing::Currency::Cny.format(c, 2)
                        ))
                        .unwrap_or_default(),
                );
                for f in &p.facts {
                    println!(
                        "    {:?} = {} [{}] {}",
                        f.fact,
                        f.value,
                        match f.verified {
                            gpurent_core::billing::Verified::Docs => "docs",
                            gpurent_core::billing::Verified::Unverified => "UNVERIFIED",
                        },
                        f.source
                    );
                }
            }
            return Ok(());
        }
    };
    let json = match &args.command {
        RateCommand::Set { json, .. }
        | RateCommand::Stopped { json, .. }
        | RateCommand::Started { json, .. }
        | RateCommand::Show { json, .. }
        | RateCommand::Platforms { json } => *json,
    };
    if json {
        return Ok(print_json(&r)?);
    }
    match r {
        Some(r) => println!(
            "{}: {}{}/h {}{}{}{}",
            r.host,
            r.rate.currency.symbol(),
            r.rate.per_hour(),
            r.rate.rule.rule_name(),
            r.rate
                .storage_per_day()
                .map(|s| format!(", storage {}{s}/day", r.rate.currency.symbol()))
                .unwrap_or_default(),
            r.rate
                .platform
                .map(|p| format!(" on {}", p.as_str()))
                .unwrap_or_default(),
            if r.stopped_ms.is_some() {
                format!(
                    " (stopped: the rate bills from its next start — `gpurent rate started {}` when it runs)",
                    r.host
                )
            } else {
                String::new()
            }
        ),
        None => println!("No rate set."),
    }
    Ok(())
}
