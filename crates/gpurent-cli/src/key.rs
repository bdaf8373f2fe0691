//! `gpurent key new|list|import|export-pub|delete`: SSH keys whose private half lives only in the
//! OS keychain (docs/cli-keys.md). Passphrases are never taken from the command line (it is visible
//! to other processes): `--passphrase-stdin` reads the first line of standard input.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use gpurent_core::app::App;
use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::{KeyAlgorithm, KeyError, KeyInfo};
use serde::Serialize;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    pub command: KeyCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Generate a key (Ed25519 unless --algorithm rsa4096); the private key goes only into the
    /// OS keychain.
    New {
        /// A name for the key: letters, digits, '.', '_' and '-'.
        label: String,
        #[arg(long, value_enum, default_value_t = AlgorithmArg::Ed25519)]
        algorithm: AlgorithmArg,
        /// Protect the key with a passphrase read from the first line of standard input.
        #[arg(long)]
        passphrase_stdin: bool,
        /// Print JSON: {"key": KeyInfo}.
        #[arg(long)]
        json: bool,
    },
    /// List keys (never the private halves).
    List {
        /// Print JSON: {"keys": [KeyInfo, ...]}.
        #[arg(long)]
        json: bool,
    },
    /// Import an existing OpenSSH private key file into the keychain (the file is left alone).
    Import {
        label: String,
        file: PathBuf,
        /// The key's passphrase, read from the first line of standard input (needed for
        /// encrypted keys; checked before anything is stored).
        #[arg(long)]
        passphrase_stdin: bool,
        /// Print JSON: {"key": KeyInfo}.
        #[arg(long)]
        json: bool,
    },
    /// Print the public key as the exact authorized_keys line.
    ExportPub {
        label: String,
        /// Print JSON: {"label": ..., "public_key": ...}.
        #[arg(long)]
        json: bool,
    },
    /// Write the private key to a NEW file (mode 0600), exactly as the keychain holds it — only for
    /// machines without an ssh-agent. Anything that can read your files can then copy the key.
    ExportPrivate {
        label: String,
        file: PathBuf,
        /// Required: you understand the key will then also live on disk.
        #[arg(long)]
        i_understand_the_risk: bool,
        /// Print JSON: {"label": ..., "path": ...}.
        #[arg(long)]
        json: bool,
    },
    /// Delete a key from the keychain and from gpurent (asks on a terminal unless --yes).
    Delete {
        label: String,
        /// Do not ask for confirmation (required when not on a terminal).
        #[arg(long)]
        yes: bool,
        /// Print JSON: {"deleted": label, "keys": [KeyInfo, ...]}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AlgorithmArg {
    Ed25519,
    Rsa4096,
}

impl From<AlgorithmArg> for KeyAlgorithm {
    fn from(a: AlgorithmArg) -> Self {
        match a {
            AlgorithmArg::Ed25519 => KeyAlgorithm::Ed25519,
            AlgorithmArg::Rsa4096 => KeyAlgorithm::Rsa4096,
        }
    }
}

impl KeyCommand {
    fn json(&self) -> bool {
        match self {
            KeyCommand::New { json, .. }
            | KeyCommand::List { json }
            | KeyCommand::Import { json, .. }
            | KeyCommand::ExportPub { json, .. }
            | KeyCommand::ExportPrivate { json, .. }
            | KeyCommand::Delete { json, .. } => *json,
        }
    }
}

#[derive(Serialize)]
struct KeyOut<'a> {
    key: &'a KeyInfo,
}

#[derive(Serialize)]
struct KeysOut<'a> {
    keys: &'a [KeyInfo],
}

#[derive(Serialize)]
struct PubOut<'a> {
    label: &'a str,
    public_key: &'a str,
}

#[derive(Serialize)]
struct DeletedOut<'a> {
    deleted: &'a str,
    keys: &'a [KeyInfo],
}

/// Run `gpurent key …` and turn the outcome into the exit code.
pub fn main(data_dir: Option<&Path>, args: &KeyArgs) -> ExitCode {
    let json = args.command.json();
    let result = crate::open::open_app(data_dir)
        .map_err(KeyError::from)
        .and_then(|app| run(&app, &args.command));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn out(r: Result<(), gpurent_core::CoreError>) -> Result<(), KeyError> {
    r.map_err(KeyError::from)
}

fn run(app: &App, cmd: &KeyCommand) -> Result<(), KeyError> {
    match cmd {
        KeyCommand::New {
            label,
            algorithm,
            passphrase_stdin,
            json,
        } => {
            let pass = passphrase(*passphrase_stdin)?;
            let info = app.key_new(label, (*algorithm).into(), pass.as_ref())?;
            show_key(&info, *json, "created")
        }
        KeyCommand::List { json } => {
            let keys = app.key_list()?;
            if *json {
                return out(print_json(&KeysOut { keys: &keys }));
            }
            if keys.is_empty() {
                println!("No keys yet. Create one with: gpurent key new <label>");
            }
            for k in &keys {
                println!(
                    "{:<20} {:<12} {}{}",
                    k.label,
                    k.algorithm,
                    k.fingerprint,
                    if k.has_passphrase {
                        "  (passphrase)"
                    } else {
                        ""
                    }
                );
            }
            Ok(())
        }
        KeyCommand::Import {
            label,
            file,
            passphrase_stdin,
            json,
        } => {
            let pass = passphrase(*passphrase_stdin)?;
            let info = app.key_import(label, file, pass.as_ref())?;
            show_key(&info, *json, "imported")
        }
        KeyCommand::ExportPub { label, json } => {
            let line = app.key_export_pub(label)?;
            if *json {
                return out(print_json(&PubOut {
                    label,
                    public_key: &line,
                }));
            }
            println!("{line}");
            Ok(())
        }
        KeyCommand::ExportPrivate {
            label,
            file,
            i_understand_the_risk,
            json,
        } => {
            let path = app.key_export_private(label, file, *i_understand_the_risk)?;
            if *json {
                return out(print_json(
                    &serde_json::json!({ "label": label, "path": path.display().to_string() }),
                ));
            }
            eprintln!(
                "gpurent: the private key of {label} is now also in {} (mode 0600). Delete it when you no longer need it.",
                path.display()
            );
            Ok(())
        }
        KeyCommand::Delete { label, yes, json } => {
            let info = app.key_get(label)?;
            if !yes && !confirm(&info)? {
                return Err(KeyError::invalid(
                    "confirmation",
                    "not confirmed; nothing was deleted",
                ));
            }
            let keys = app.key_delete(label)?;
            if *json {
                return out(print_json(&DeletedOut {
                    deleted: label,
                    keys: &keys,
                }));
            }
            println!("Deleted key '{label}' ({}).", info.fingerprint);
            Ok(())
        }
    }
}

fn show_key(info: &KeyInfo, json: bool, verb: &str) -> Result<(), KeyError> {
    if json {
        return out(print_json(&KeyOut { key: info }));
    }
    println!(
        "Key '{}' {verb}: {} {}",
        info.label, info.algorithm, info.fingerprint
    );
    println!("The private key is in the system keychain. Public key (authorized_keys line):");
    println!("{}", info.public_key);
    Ok(())
}

/// The first line of standard input, when asked for.
fn passphrase(from_stdin: bool) -> Result<Option<Secret>, KeyError> {
    if !from_stdin {
        return Ok(None);
    }
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).map_err(|e| {
        KeyError::invalid("passphrase", format!("could not read standard input: {e}"))
    })?;
    let pass = Secret::new(line.trim_end_matches(['\n', '\r']));
    line.clear();
    if pass.expose().is_empty() {
        return Err(KeyError::invalid(
            "passphrase",
            "--passphrase-stdin was given but the first line of standard input is empty",
        ));
    }
    Ok(Some(pass))
}

/// Ask on a terminal; elsewhere `--yes` is required.
fn confirm(info: &KeyInfo) -> Result<bool, KeyError> {
    if !std::io::stdin().is_terminal() {
        return Err(KeyError::invalid(
            "yes",
            "add --yes to delete without a terminal to confirm on",
        ));
    }
    eprint!(
        "Delete key '{}' ({}) from the keychain? Hosts using it will need another key. [y/N] ",
        info.label, info.fingerprint
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| KeyError::invalid("confirmation", e.to_string()))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
