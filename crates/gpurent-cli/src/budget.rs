//! `gpurent budget`: daily and monthly spending limits, per machine or in total, and where the
//! spending stands (80 % warns, 100 % is over; UTC days and months). docs/billing.md.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::App;
use gpurent_core::billing::budget::Period;
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
        #[arg(long)]
        usd: f64,
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
        BudgetCommand::Set { scope, usd, .. } => {
            let b = app.budget_set(scope.host.as_deref(), period(&scope.per)?, *usd)?;
            if json {
                return Ok(print_json(&b)?);
            }
            println!(
                "Budget: ${} per {} for {}.",
                b.usd,
                b.period.name(),
                b.host.as_deref().unwrap_or("all machines")
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
                println!(
                    "{:16} per {:5} ${:.2} of ${:.2} ({:.0} %){}",
                    b.budget.host.as_deref().unwrap_or("all machines"),
                    b.budget.period.name(),
                    b.spent_usd,
                    b.budget.usd,
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
