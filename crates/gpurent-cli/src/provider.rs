//! `gpurent provider add|list|test|remove`: connected provider accounts (docs/providers.md). The
//! API key is read from standard input (`--key-stdin`, never the command line) and goes only into
//! the OS keychain; `GPURENT_<X>_API_KEY` in the environment is used instead and stored nowhere.

use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::infra::secret::Secret;
use gpurent_core::providers::{ProviderError, ProviderKind};

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct ProviderArgs {
    #[command(subcommand)]
    pub command: ProviderCommand,
}

#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Connect an account: the key is checked with one authenticated read, then kept in the
    /// OS keychain.
    Add {
        /// runpod, vast or lambda.
        provider: String,
        /// Read the API key from the first line of standard input.
        #[arg(long)]
        key_stdin: bool,
        /// gpurent's name for the account (default: the provider's name).
        #[arg(long)]
        name: Option<String>,
        /// Print JSON: {"account": Account, "ok": true, "checked_ms": N}.
        #[arg(long)]
        json: bool,
    },
    /// List connected accounts (never their keys).
    List {
        /// Print JSON: {"accounts": [Account, ...]}.
        #[arg(long)]
        json: bool,
    },
    /// One authenticated read with the account's key.
    Test {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Forget an account and delete its key from the keychain (the ledger keeps its history).
    Remove {
        name: String,
        /// Print JSON: {"removed": NAME}.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn kind(s: &str) -> Result<ProviderKind, ProviderError> {
    ProviderKind::parse(s).ok_or_else(|| {
        let ids: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.as_str()).collect();
        ProviderError::Core(gpurent_core::CoreError::invalid(
            "provider",
            format!("use one of: {}", ids.join(", ")),
        ))
    })
}

pub fn main(data_dir: Option<&Path>, args: &ProviderArgs) -> ExitCode {
    let json = match &args.command {
        ProviderCommand::Add { json, .. }
        | ProviderCommand::List { json }
        | ProviderCommand::Test { json, .. }
        | ProviderCommand::Remove { json, .. } => *json,
    };
    match run(data_dir, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn run(data_dir: Option<&Path>, args: &ProviderArgs) -> Result<(), ProviderError> {
    let app = crate::open::open_app(data_dir)?;
    match &args.command {
        ProviderCommand::Add {
            provider,
            key_stdin,
            name,
            json,
        } => {
            let kind = kind(provider)?;
            if !key_stdin {
                return Err(ProviderError::Core(gpurent_core::CoreError::invalid(
                    "key",
                    "pass --key-stdin and the API key on standard input (never on the command line)",
                )));
            }
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| gpurent_core::CoreError::invalid("key", e.to_string()))?;
            let key = Secret::new(line.trim().to_string());
            line.clear();
            if key.expose().is_empty() {
                return Err(ProviderError::Core(gpurent_core::CoreError::invalid(
                    "key",
                    "standard input was empty",
                )));
            }
            let check = app.provider_add(kind, name.as_deref(), key)?;
            if *json {
                print_json(&check)?;
            } else {
                println!(
                    "connected {} ({}){}",
                    check.account.name,
                    check.account.provider,
                    check
                        .account
                        .account_label
                        .as_deref()
                        .map(|l| format!(" as {l}"))
                        .unwrap_or_default()
                );
            }
        }
        ProviderCommand::List { json } => {
            let accounts = app.provider_list()?;
            if *json {
                print_json(&serde_json::json!({ "accounts": accounts }))?;
            } else if accounts.is_empty() {
                println!("no provider account connected (gpurent provider add runpod --key-stdin)");
            } else {
                for a in accounts {
                    println!(
                        "{:<16} {:<8} key: {:?}{}",
                        a.name,
                        a.provider,
                        a.key_source,
                        a.account_label
                            .map(|l| format!("  ({l})"))
                            .unwrap_or_default()
                    );
                }
            }
        }
        ProviderCommand::Test { name, json } => {
            let check = app.provider_test(name)?;
            if *json {
                print_json(&check)?;
            } else {
                println!("{}: the provider accepted the key", check.account.name);
            }
        }
        ProviderCommand::Remove { name, json } => {
            app.provider_remove(name)?;
            if *json {
                print_json(&serde_json::json!({ "removed": name }))?;
            } else {
                println!("removed {name}");
            }
        }
    }
    Ok(())
}
