//! `gpurent settings`: show the settings, and set the default currency (the one rates, budgets
//! and card prices are entered in when none is named; it follows the language until chosen).
//! The desktop app's Settings screen writes the same file.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::{App, SettingsView};
use gpurent_core::billing::Currency;
use gpurent_core::CoreError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct SettingsArgs {
    #[command(subcommand)]
    pub command: SettingsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SettingsCommand {
    /// The settings and what they come to now (language, currency).
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Change a setting.
    Set {
        /// CNY | USD | auto (follow the language: 中文 → CNY, else USD). Nothing is converted:
        /// amounts already saved keep their currency.
        #[arg(long)]
        currency: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn main(data_dir: Option<&Path>, args: &SettingsArgs) -> ExitCode {
    let json = match &args.command {
        SettingsCommand::Show { json } | SettingsCommand::Set { json, .. } => *json,
    };
    match crate::open::open_app(data_dir).and_then(|app| run(&app, args, json)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn run(app: &App, args: &SettingsArgs, json: bool) -> Result<(), CoreError> {
    let v = match &args.command {
        SettingsCommand::Show { .. } => app.settings_view(),
        SettingsCommand::Set { currency, .. } => {
            let mut s = app.settings_view().settings;
            s.currency = match currency.trim().to_ascii_lowercase().as_str() {
                "auto" | "system" => None,
                other => Some(
                    Currency::parse(other)
                        .ok_or_else(|| CoreError::invalid("currency", "is CNY, USD or auto"))?,
                ),
            };
            app.settings_set(&s)?
        }
    };
    if json {
        return print_json(&v);
    }
    print(&v);
    Ok(())
}

fn print(v: &SettingsView) {
    println!(
        "currency: {} ({})",
        v.effective_currency,
        if v.settings.currency.is_some() {
            "chosen"
        } else {
            "follows the language"
        }
    );
    println!("language: {:?}", v.effective_language);
    println!("data: {}", v.data_dir);
}
