//! `gpurent ollama HOST install|serve|pull MODEL|run MODEL|ps|stop|tunnel`: Ollama on a saved host,
//! bound to the host's 127.0.0.1 and reached only over SSH (docs/monitor.md, section Ollama).
//!
//! With `--json`: `install`, `serve`, `run`, `ps`, `stop` print one JSON document; `pull` prints one JSON
//! object per line (`{"kind":"progress",...}`, then `{"kind":"result",...}`); `tunnel` prints
//! `{"kind":"tunnel","url":...}` once it listens and runs until Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::login::SshEnv;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::ollama::install::{InstallOptions, InstallStage};
use gpurent_core::ollama::{OllamaError, DEFAULT_PORT};
use gpurent_core::CoreError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct OllamaArgs {
    /// The saved host's label.
    host: String,
    #[command(subcommand)]
    action: Action,
    /// Ollama's port on the host (bound to its 127.0.0.1).
    #[arg(long, global = true, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Machine-readable output (see the module docs).
    #[arg(long, global = true)]
    json: bool,
    /// Log in with this private key file instead of the host's keychain key.
    #[arg(long, short = 'i', global = true, value_name = "FILE")]
    identity: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Install Ollama where it is missing (the documented manual install: the release archive for
    /// the host's CPU under /usr/local or ~/.local; GPURENT_OLLAMA_DOWNLOAD_URL replaces
    /// https://ollama.com/download), then start `ollama serve` until /api/version answers.
    Install {
        /// GPU UUIDs for CUDA_VISIBLE_DEVICES, comma-separated (inside Ollama they count from 0).
        #[arg(long, value_name = "UUIDS", value_delimiter = ',')]
        gpus: Vec<String>,
    },
    /// Start `ollama serve` on the host (a supervised job, no systemd needed) unless it answers.
    Serve {
        /// GPU UUIDs for CUDA_VISIBLE_DEVICES, comma-separated (inside Ollama they count from 0).
        #[arg(long, value_name = "UUIDS", value_delimiter = ',')]
        gpus: Vec<String>,
    },
    /// Will MODEL fit the host's GPUs? The estimator's memory check (no pull).
    Fit {
        model: String,
        /// GPU UUIDs to check, comma-separated (default: all).
        #[arg(long, value_name = "UUIDS", value_delimiter = ',')]
        gpus: Vec<String>,
        /// Context tokens (default: Ollama's default for those GPUs).
        #[arg(long)]
        context: Option<u32>,
    },
    /// Pull a model with progress (starts the server if needed), after the memory check: a
    /// model that does not fit the chosen GPUs is refused unless --force.
    Pull {
        model: String,
        /// GPU UUIDs the model is for (and the server, if it starts), comma-separated.
        #[arg(long, value_name = "UUIDS", value_delimiter = ',')]
        gpus: Vec<String>,
        /// Pull even when the memory check says it does not fit.
        #[arg(long)]
        force: bool,
    },
    /// A short answer from a model, to prove it works.
    Run {
        model: String,
        #[arg(long, default_value = "Say hello in one short sentence.")]
        prompt: String,
    },
    /// The models loaded in memory.
    Ps,
    /// Stop the server gpurent started.
    Stop,
    /// Forward 127.0.0.1:LOCAL here to Ollama on the host, until Ctrl-C.
    Tunnel {
        #[arg(long, default_value_t = DEFAULT_PORT)]
        local_port: u16,
    },
}

/// One line about a memory check.
fn fit_text(f: &gpurent_core::ollama::fit::ModelFit) -> String {
    use gpurent_core::ollama::fit::{FitState, NOTE_NOT_IN_TABLE, NOTE_UNVERIFIED};
    let nums = match (f.need_gib, f.have_gib) {
        (Some(n), Some(h)) => format!(
            ": needs about {n:.1} GiB per GPU at {} tokens of context, {h:.1} GiB free",
            f.context_tokens
        ),
        _ => String::new(),
    };
    let mut t = match f.verdict {
        FitState::Fits => format!("{} fits{nums}", f.model),
        FitState::Tight => format!("{} fits, but tightly{nums}", f.model),
        FitState::DoesNotFit => format!("{} does not fit{nums}", f.model),
        FitState::Unknown if f.notes.iter().any(|n| n == NOTE_NOT_IN_TABLE) => {
            format!("{} is not in gpurent's table: no memory check", f.model)
        }
        FitState::Unknown => format!("{}: the host reported no GPU memory", f.model),
    };
    if f.notes.iter().any(|n| n == NOTE_UNVERIFIED) {
        t.push_str(" (its table row is not verified)");
    }
    t
}

pub fn main(data_dir: Option<&Path>, args: &OllamaArgs) -> ExitCode {
    match run(data_dir, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

fn run(data_dir: Option<&Path>, args: &OllamaArgs) -> Result<(), OllamaError> {
    let app = crate::open::open_app(data_dir).map_err(gpurent_core::remote::RemoteError::from)?;
    let env = SshEnv::detect()?;
    let key = crate::open::identity_file(args.identity.as_deref())
        .map_err(gpurent_core::remote::RemoteError::from)?;
    let key = key.as_ref();
    let cancel = CancelToken::new();
    let (host, port, json) = (args.host.as_str(), args.port, args.json);
    let out = |v: serde_json::Value, text: String| -> Result<(), OllamaError> {
        if json {
            print_json(&v).map_err(gpurent_core::remote::RemoteError::from)?;
        } else {
            println!("{text}");
        }
        Ok(())
    };
    match &args.action {
        Action::Install { gpus } => {
            let mut last: Option<(InstallStage, u64)> = None;
            let r = app.ollama_install(
                host,
                &env,
                key,
                port,
                gpus,
                &InstallOptions::from_env(),
                &mut |p| {
                    if json {
                        return;
                    }
                    let mib = p.downloaded.unwrap_or(0) >> 20;
                    if last == Some((p.stage, mib)) {
                        return;
                    }
                    last = Some((p.stage, mib));
                    match p.stage {
                        InstallStage::Checking => eprintln!("checking {host}…"),
                        InstallStage::Downloading => match (p.downloaded, p.total) {
                            (Some(d), Some(t)) if t > 0 => eprintln!(
                                "downloading {} MiB of {} MiB ({:.0} %)",
                                d >> 20,
                                t >> 20,
                                100.0 * d as f64 / t as f64
                            ),
                            (Some(d), _) => eprintln!("downloading {} MiB", d >> 20),
                            _ => eprintln!("downloading {}", p.url.as_deref().unwrap_or("")),
                        },
                        InstallStage::Extracting => eprintln!("extracting…"),
                        InstallStage::Starting => eprintln!("starting ollama serve…"),
                    }
                },
                &cancel,
            )?;
            let text = if r.already_installed {
                format!(
                    "ollama {} was already installed on {host} ({}); it answers on 127.0.0.1:{port}",
                    r.version, r.path
                )
            } else {
                format!(
                    "installed ollama {} on {host} at {}; it answers on 127.0.0.1:{port}",
                    r.version, r.path
                )
            };
            out(
                serde_json::to_value(&r).map_err(|e| {
                    gpurent_core::remote::RemoteError::from(CoreError::invalid(
                        "json",
                        e.to_string(),
                    ))
                })?,
                text,
            )
        }
        Action::Serve { gpus } => {
            let s = app.ollama_serve_report(host, &env, key, port, gpus, &cancel)?;
            let v = &s.version;
            let text = if s.ours {
                format!("ollama {v} answers on {host}'s 127.0.0.1:{port} (use `gpurent ollama {host} tunnel` to reach it here)")
            } else {
                format!("ollama {v} answers on {host}'s port {port}, but it is not the one gpurent starts: it is bound to {} (open to the network unless a firewall says otherwise); gpurent uses it as it is", s.bound)
            };
            out(
                serde_json::json!({"host": host, "port": port, "bound": s.bound, "ours": s.ours, "version": v}),
                text,
            )
        }
        Action::Fit {
            model,
            gpus,
            context,
        } => {
            let f = app.ollama_fit(host, &env, key, model, gpus, *context, &cancel)?;
            let v = serde_json::to_value(&f).unwrap_or_default();
            out(v, fit_text(&f))
        }
        Action::Pull { model, gpus, force } => {
            let mut shown = String::new();
            app.ollama_pull(
                host,
                &env,
                key,
                port,
                model,
                gpus,
                *force,
                &mut |f| {
                    if json {
                        let mut v = serde_json::to_value(f).unwrap_or_default();
                        v["kind"] = "fit".into();
                        println!("{v}");
                    } else {
                        eprintln!("{}", fit_text(f));
                    }
                },
                &mut |p| {
                    let pct = match (p.completed, p.total) {
                        (Some(c), Some(t)) if t > 0 => Some(100.0 * c as f64 / t as f64),
                        _ => None,
                    };
                    if json {
                        let mut v = serde_json::to_value(p).unwrap_or_default();
                        v["kind"] = "progress".into();
                        v["percent"] = pct.map_or(serde_json::Value::Null, |x| {
                            ((x * 10.0).round() / 10.0).into()
                        });
                        println!("{v}");
                    } else {
                        let line = match pct {
                            Some(x) => format!("{} {x:.0} %", p.status),
                            None => p.status.clone(),
                        };
                        if line != shown {
                            eprintln!("{line}");
                            shown = line;
                        }
                    }
                },
                &cancel,
            )?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"kind": "result", "model": model, "pulled": true})
                );
            } else {
                println!("{model} is on {host}");
            }
            Ok(())
        }
        Action::Run { model, prompt } => {
            let answer = app.ollama_run(
                host,
                &env,
                key,
                port,
                model,
                prompt,
                &mut |piece| {
                    if !json {
                        print!("{piece}");
                    }
                },
                &cancel,
            )?;
            if json {
                print_json(&serde_json::json!({"model": model, "answer": answer}))
                    .map_err(gpurent_core::remote::RemoteError::from)?;
            } else {
                println!();
            }
            Ok(())
        }
        Action::Ps => {
            let loaded = app.ollama_ps(host, &env, key, port, &cancel)?;
            let text = match &loaded {
                None => format!("nothing answers on {host}'s 127.0.0.1:{port}"),
                Some(m) if m.is_empty() => "no model loaded".into(),
                Some(m) => m
                    .iter()
                    .map(|l| l.name.clone())
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            out(
                serde_json::json!({"running": loaded.is_some(), "models": loaded.unwrap_or_default()}),
                text,
            )
        }
        Action::Stop => {
            let stopped = app.ollama_stop(host, &env, key, &cancel)?;
            out(
                serde_json::json!({"host": host, "stopped": stopped}),
                if stopped {
                    "ollama stopped".into()
                } else {
                    "no ollama started by gpurent was running".into()
                },
            )
        }
        Action::Tunnel { local_port } => {
            let fwd = app.ollama_tunnel(host, &env, key, *local_port, port, &cancel)?;
            let url = format!("http://127.0.0.1:{}", fwd.local_port);
            if json {
                println!(
                    "{}",
                    serde_json::json!({"kind": "tunnel", "url": url, "remote_port": port})
                );
            } else {
                println!("{url} → {host}:127.0.0.1:{port} (Ctrl-C to stop)");
            }
            crate::tunnel::hold_until_ctrl_c(fwd, &cancel)?;
            Ok(())
        }
    }
}
