//! `gpurent budget`: daily and monthly spending limits, per machine or in total, and where the
//! spending stands (80 % warns, 100 % is over; UTC days and months). docs/billing.md.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::App;
use gpurent_core::billing::budget::Period;
use gpurent_core::billing::{Currency, Money};
use gpurent_core::guard::GuardError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct BudgetArgs {
    #[command(subcommand)]
    pub command: BudgetCommand,
}

#[derive(Debug, Args)]
pub struct Scope {
    /// One saved host; without it, the total over all machines.
    #[arg(long)]
    pub host: Option<String>,
    /// day | month (UTC).
    #[arg(long)]
    pub per: String,
}

#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// Set (or replace) a budget.
    Set {
        #[command(flatten)]
        scope: Scope,
        /// The limit in US dollars (counts the machines billed in USD).
        #[arg(long, conflicts_with_all = ["amount", "currency"], required_unless_present = "amount")]
        usd: Option<f64>,
        /// The limit in --currency (else the settings' currency): it counts only the machines
        /// billed in that currency (nothing is converted).
        #[arg(long)]
        amount: Option<f64>,
        /// CNY | USD.
        #[arg(long, requires = "amount")]
        currency: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Remove a budget.
    Remove {
        #[command(flatten)]
        scope: Scope,
        #[arg(long)]
        json: bool,
    },
    /// Every budget and what was spent in its current period.
    Status {
        #[arg(long)]
        json: bool,
    },
}

fn period(s: &str) -> Result<Period, GuardError> {
    Period::parse(s).ok_or_else(|| GuardError::invalid("per", "is day or month"))
}

pub fn main(data_dir: Option<&Path>, args: &BudgetArgs) -> ExitCode {
    let json = match &args.command {
        BudgetCommand::Set { json, .. }
        | BudgetCommand::Remove { json, .. }
        | BudgetCommand::Status { json } => *json,
    };
    match crate::open::open_app(data_dir)
        .map_err(GuardError::from)
        .and_then(|app| run(&app, args, json))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn run(app: &App, args: &BudgetArgs, json: bool) -> Result<(), GuardError> {
    match &args.command {
        BudgetCommand::Set {
            scope,
            usd,
            amount,
            currency,
            ..
        } => {
            let limit = match (usd, amount) {
                (Some(usd), _) => Money::new(*usd, Currency::Usd),
                (None, Some(a)) => {
                    let c = match currency {
                        Some(c) => Currency::parse(c)
                            .ok_or_else(|| GuardError::invalid("currency", "is CNY or USD"))?,
                        None => app.default_currency(),
                    };
                    Money::new(*a, c)
                }
                (None, None) => return Err(GuardError::invalid("amount", "is required")),
            };
            let b = app.budget_set_in(scope.host.as_deref(), period(&scope.per)?, limit, None)?;
            if json {
                return Ok(print_json(&b)?);
            }
            println!(
                "Budget: {} per {} for {} (the machines billed in {}).",
                b.currency.format(b.amount(), 2),
                b.period.name(),
                b.host.as_deref().unwrap_or("all machines"),
                b.currency
            );
        }
        BudgetCommand::Remove { scope, .. } => {
            let removed = app.budget_remove(scope.host.as_deref(), period(&scope.per)?)?;
            if json {
                return Ok(print_json(&serde_json::json!({ "removed": removed }))?);
            }
            println!(
                "{}",
                if removed {
                    "Removed."
                } else {
                    "There was no such budget."
                }
            );
        }
        BudgetCommand::Status { .. } => {
            let st = app.budget_status()?;
            if json {
                return Ok(print_json(&serde_json::json!({ "budgets": st }))?);
            }
            if st.is_empty() {
                println!("No budgets.");
            }
            for b in &st {
                let c = b.budget.currency;
                println!(
                    "{:16} per {:5} {} of {} ({:.0} %){}",
                    b.budget.host.as_deref().unwrap_or("all machines"),
                    b.budget.period.name(),
                    c.format(b.spent, 2),
                    c.format(b.budget.amount(), 2),
                    b.fraction * 100.0,
                    match b.level {
                        gpurent_core::billing::budget::Level::Ok => "",
                        gpurent_core::billing::budget::Level::Warn => "  — 80 % reached",
                        gpurent_core::billing::budget::Level::Over => "  — OVER BUDGET",
                    }
                );
            }
        }
    }
    Ok(())
}
