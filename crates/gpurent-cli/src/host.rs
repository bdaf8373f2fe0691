//! `gpurent host add|list|check|repin|install-key|ssh-config|delete`: saved SSH hosts
//! (docs/remote.md). A host key is pinned only after the user confirmed its fingerprint: with
//! `--trust SHA256:…` (non-interactive), or by answering the prompt on a terminal. Passwords and
//! key passphrases are never taken from the command line: a password comes from the pasted text or
//! `--password-stdin`, a passphrase from `--passphrase-stdin`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::hosts::{HostAddRequest, KeyInstall, KeyInstallReport};
use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::Progress;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::{Host, HostCheck, HostSpec, RemoteError};
use serde::Serialize;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct HostArgs {
    #[command(subcommand)]
    pub command: HostCommand,
}

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Add a host from what the rental console printed (an ssh/scp command, ssh:// URL, or
    /// labelled fields, zh or en). Pins its host key only if it matches --trust (or you confirm
    /// it on a terminal). With a password in the text and --key, installs the key right away.
    Add {
        /// The pasted text, e.g. "ssh -p 38211 root@region-3.example.com".
        text: String,
        #[arg(long)]
        label: Option<String>,
        /// The gpurent key (see `gpurent key list`) to log in with.
        #[arg(long)]
        key: Option<String>,
        /// A fingerprint you confirmed (SHA256:…); repeat for a jump host's.
        #[arg(long, value_name = "SHA256:…")]
        trust: Vec<String>,
        /// Where the host is rented (free text, e.g. autodl).
        #[arg(long)]
        provider: Option<String>,
        /// The key's passphrase from the first line of standard input.
        #[arg(long)]
        passphrase_stdin: bool,
        /// Print JSON: {"host": Host, "key_install": KeyInstallReport|null}.
        #[arg(long)]
        json: bool,
    },
    /// List saved hosts.
    List {
        /// Print JSON: {"hosts": [Host, …]}.
        #[arg(long)]
        json: bool,
    },
    /// Connect, verify the pinned host key and the key login, measure latency.
    Check {
        label: String,
        /// Use this key instead of the host's.
        #[arg(long)]
        key: Option<String>,
        #[arg(long)]
        passphrase_stdin: bool,
        /// Print JSON: {"label": …, "check": HostCheck}.
        #[arg(long)]
        json: bool,
    },
    /// Accept a CHANGED host key, after making sure the host was re-created (records who/when).
    Repin {
        label: String,
        /// The new fingerprint shown in the host_key_changed error.
        #[arg(long, value_name = "SHA256:…")]
        fingerprint: String,
        #[arg(long)]
        passphrase_stdin: bool,
        /// Print JSON: {"host": Host}.
        #[arg(long)]
        json: bool,
    },
    /// Log in once with the host's password (first line of stdin) and install the key.
    InstallKey {
        label: String,
        #[arg(long)]
        key: Option<String>,
        /// Read the password from the first line of standard input (required).
        #[arg(long)]
        password_stdin: bool,
        /// After a verified key login, switch password logins off on the host.
        #[arg(long)]
        disable_password_login: bool,
        /// Print JSON: {"key_install": KeyInstallReport}.
        #[arg(long)]
        json: bool,
    },
    /// Write the `Host gpurent-<label>` block into ~/.ssh/config (public key only on disk).
    SshConfig {
        label: String,
        #[arg(long)]
        key: Option<String>,
        /// Also load the private key into the running ssh-agent (from memory).
        #[arg(long)]
        agent: bool,
        #[arg(long)]
        passphrase_stdin: bool,
        /// Print JSON: {"ssh_config": SshConfigResult}.
        #[arg(long)]
        json: bool,
    },
    /// Forget a host (and remove its ~/.ssh/config block).
    Delete {
        label: String,
        /// Print JSON: {"deleted": label}.
        #[arg(long)]
        json: bool,
    },
}

impl HostCommand {
    pub fn json(&self) -> bool {
        match self {
            HostCommand::Add { json, .. }
            | HostCommand::List { json }
            | HostCommand::Check { json, .. }
            | HostCommand::Repin { json, .. }
            | HostCommand::InstallKey { json, .. }
            | HostCommand::SshConfig { json, .. }
            | HostCommand::Delete { json, .. } => *json,
        }
    }
}

pub fn main(data_dir: Option<&Path>, args: &HostArgs) -> ExitCode {
    let json = args.command.json();
    let result = crate::open::open_app(data_dir)
        .map_err(RemoteError::from)
        .and_then(|app| run(&app, &args.command));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn stdin_line(what: &str) -> Result<Secret, RemoteError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| RemoteError::invalid(what, e.to_string()))?;
    let value = line.trim_end_matches(['\n', '\r']).to_string();
    drop(Secret::new(line));
    Ok(Secret::new(value))
}

fn passphrase(flag: bool) -> Result<Option<Secret>, RemoteError> {
    flag.then(|| stdin_line("passphrase")).transpose()
}

fn load_key(app: &App, key: Option<&str>, host: &str, flag: bool) -> Result<LoginKey, RemoteError> {
    let pp = passphrase(flag)?;
    match key {
        Some(k) => app.host_login_key(k, pp.as_ref()),
        None => app.host_key_for(host, pp.as_ref()),
    }
}

fn ask_trust(e: &RemoteError) -> Result<Option<String>, RemoteError> {
    let RemoteError::HostKeyUnknown {
        host,
        port,
        key_type,
        fingerprint,
        role,
    } = e
    else {
        return Ok(None);
    };
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    eprintln!(
        "First connection to {}{host}:{port}. Its {key_type} host key fingerprint is:\n  {fingerprint}\n\
         Compare it with the one your provider's console shows.",
        if *role == gpurent_core::remote::Role::Jump { "the jump host " } else { "" }
    );
    eprint!("Trust this host key? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    Ok(matches!(answer.trim(), "y" | "Y" | "yes").then(|| fingerprint.clone()))
}

#[derive(Serialize)]
struct AddOut<'a> {
    host: &'a Host,
    key_install: Option<&'a KeyInstallReport>,
}

fn print_progress(json: bool) -> impl Fn(Progress) + Send + Sync {
    move |p| {
        if let (false, Progress::Step { step, .. }) = (json, &p) {
            eprintln!("… {step}");
        }
    }
}

fn run(app: &App, cmd: &HostCommand) -> Result<(), RemoteError> {
    let env = SshEnv::detect()?;
    let cancel = CancelToken::new();
    match cmd {
        HostCommand::Add {
            text,
            label,
            key,
            trust,
            provider,
            passphrase_stdin,
            json,
        } => {
            let parsed = app
                .parse_host_command(text)
                .map_err(|e| RemoteError::invalid("text", e.to_string()))?;
            for w in &parsed.warnings {
                eprintln!("note: {w:?}");
            }
            let login = match key {
                Some(k) => Some(app.host_login_key(k, passphrase(*passphrase_stdin)?.as_ref())?),
                None => None,
            };
            let mut req = HostAddRequest {
                spec: HostSpec::from_parsed(&parsed, provider.clone()),
                label: label.clone(),
                key_label: key.clone(),
                trust: trust.clone(),
            };
            let host = loop {
                match app.host_add(&req, &env, login.as_ref(), &cancel) {
                    Ok(h) => break h,
                    Err(e) => match ask_trust(&e)? {
                        Some(fp) if req.trust.len() < 4 => req.trust.push(fp),
                        _ => return Err(e),
                    },
                }
            };
            let report = match (&parsed.password, &login) {
                (Some(pw), Some(k)) => Some(app.host_install_key(
                    &host.label,
                    &KeyInstall {
                        password: pw,
                        key: k,
                        disable_password_login: false,
                    },
                    &env,
                    &print_progress(*json),
                    &cancel,
                )?),
                _ => None,
            };
            let host = app.host_get(&host.label)?;
            if *json {
                return Ok(print_json(&AddOut {
                    host: &host,
                    key_install: report.as_ref(),
                })?);
            }
            println!(
                "Added {} ({}@{}:{}), host key {}",
                host.label,
                host.user,
                host.address,
                host.port,
                host.host_keys
                    .iter()
                    .map(|k| k.fingerprint.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if report.is_some() {
                println!("Key installed and key login verified; the password was not stored.");
            }
            Ok(())
        }
        HostCommand::List { json } => {
            let hosts = app.host_list()?;
            if *json {
                return Ok(print_json(&serde_json::json!({ "hosts": hosts }))?);
            }
            for h in &hosts {
                let check = if h.released_ms.is_some() {
                    "released: the machine no longer exists (gpurent host delete to forget it)"
                        .to_string()
                } else {
                    h.last_check
                        .as_ref()
                        .map_or("never checked".to_string(), |c| {
                            format!(
                                "key login {}, {}",
                                if c.key_login_ok { "ok" } else { "NOT ok" },
                                c.latency_ms
                                    .map_or("latency ?".into(), |l| format!("{l:.0} ms"))
                            )
                        })
                };
                println!(
                    "{:<20} {}@{}:{}  {check}",
                    h.label, h.user, h.address, h.port
                );
            }
            Ok(())
        }
        HostCommand::Check {
            label,
            key,
            passphrase_stdin,
            json,
        } => {
            let k = load_key(app, key.as_deref(), label, *passphrase_stdin)?;
            let check: HostCheck =
                app.host_check_with_key(label, &env, &k, &print_progress(*json), &cancel)?;
            if *json {
                return Ok(print_json(
                    &serde_json::json!({ "label": label, "check": check }),
                )?);
            }
            println!(
                "{label}: host key ok ({}), key login {}, latency {}",
                check.host_key_fingerprint,
                if check.key_login_ok { "ok" } else { "REJECTED" },
                check
                    .latency_ms
                    .map_or("unknown".into(), |l| format!("{l:.1} ms"))
            );
            Ok(())
        }
        HostCommand::Repin {
            label,
            fingerprint,
            passphrase_stdin,
            json,
        } => {
            let host = app.host_get(label)?;
            let k = match host.jump {
                Some(_) => Some(load_key(app, None, label, *passphrase_stdin)?),
                None => None,
            };
            let who = std::env::var("USER")
                .or_else(|_| std::env::var("USERNAME"))
                .unwrap_or_else(|_| "user".into());
            let h = app.host_repin_with_key(label, fingerprint, &who, &env, k.as_ref(), &cancel)?;
            if *json {
                return Ok(print_json(&serde_json::json!({ "host": h }))?);
            }
            println!("{label}: host key pinned to {fingerprint} (by {who})");
            Ok(())
        }
        HostCommand::InstallKey {
            label,
            key,
            password_stdin,
            disable_password_login,
            json,
        } => {
            if !password_stdin {
                return Err(RemoteError::invalid(
                    "password",
                    "pass --password-stdin and the password on standard input",
                ));
            }
            let password = stdin_line("password")?;
            let k = load_key(app, key.as_deref(), label, false)?;
            let r = app.host_install_key(
                label,
                &KeyInstall {
                    password: &password,
                    key: &k,
                    disable_password_login: *disable_password_login,
                },
                &env,
                &print_progress(*json),
                &cancel,
            )?;
            if *json {
                return Ok(print_json(&serde_json::json!({ "key_install": r }))?);
            }
            println!("{label}: key {:?}; key login verified", r.outcome);
            if let Some(p) = r.hardening_problem {
                println!("password login NOT disabled: {p}");
            }
            if let Some(h) = r.hardening {
                println!("password login disabled ({})", h.dropin_path);
                if h.container_warning {
                    println!("warning: this looks like a container; its sshd config may be reset on restart");
                }
            }
            Ok(())
        }
        HostCommand::SshConfig {
            label,
            key,
            agent,
            passphrase_stdin,
            json,
        } => {
            let k = load_key(app, key.as_deref(), label, *passphrase_stdin)?;
            if *agent {
                app.host_agent_add(&env, &k, None)?;
            }
            let r = app.host_ssh_config_with_key(label, &k.public_line, &env)?;
            if *json {
                return Ok(print_json(&serde_json::json!({ "ssh_config": r }))?);
            }
            println!(
                "{} {}: {}",
                if r.changed { "Wrote" } else { "Unchanged" },
                r.alias,
                r.config_path
            );
            if let Some(b) = &r.backup_path {
                println!("Your previous config was saved as {b}");
            }
            println!("Connect with: {}\nVS Code: {}", r.ssh_command, r.vscode_uri);
            if !r.agent_running {
                use gpurent_core::remote::agent::AgentHint;
                let how = match r.agent_hint {
                    AgentHint::WindowsService => "start the OpenSSH Authentication Agent service (administrator PowerShell: Get-Service ssh-agent | Set-Service -StartupType Automatic; Start-Service ssh-agent)",
                    AgentHint::MacosLaunchd => "log out and in again so launchd's SSH_AUTH_SOCK reaches this shell",
                    AgentHint::EvalSshAgent => "start one: eval \"$(ssh-agent -s)\"",
                };
                println!("No ssh-agent is running: {how}, then rerun with --agent.");
            }
            Ok(())
        }
        HostCommand::Delete { label, json } => {
            app.host_delete(label, &env)?;
            if *json {
                return Ok(print_json(&serde_json::json!({ "deleted": label }))?);
            }
            println!("Deleted {label}");
            Ok(())
        }
    }
}
