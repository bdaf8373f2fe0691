//! `gpurent setup <host>`: the probe, the fix and the GPU check over SSH on a saved host
//! (`gpurent host add`). The key is the host's own from the keychain (or `--key`); a passphrase
//! only from stdin.
//!
//! - `setup <host> [--json]`: one JSON document, the `--from-probe` report plus `host` and
//!   `probe_path` (the raw probe kept under the data dir).
//! - `setup <host> --fix [--yes] [--code C]`: shows the exact commands, asks on a terminal (or
//!   needs `--yes`), runs them with a progress line on a terminal, or JSON lines with `--json`
//!   (each progress event, then `{"kind": "result", "fix": FixReport}`), and re-probes.
//! - `setup <host> --verify [--json]`: the GPU check with the host's best Python.
//! - `setup <host> --stop-fix`: kill a fix left running on the host.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::setup::{fix_commands, FixReport, HostReport, HostVerify, SetupError};
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::{NoProgress, Progress, ProgressSink};
use gpurent_core::infra::secret::Secret;
use gpurent_core::setup::SetupOptions;
use gpurent_core::CoreError;

use super::{print_text, SetupArgs};
use crate::output::print_json;

fn passphrase() -> Result<Secret, SetupError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CoreError::invalid("passphrase", e.to_string()))?;
    let value = Secret::new(line.trim_end_matches(['\n', '\r']).to_string());
    drop(Secret::new(line));
    Ok(value)
}

fn login_key(app: &App, host: &str, args: &SetupArgs) -> Result<LoginKey, SetupError> {
    let pp = if args.passphrase_stdin {
        Some(passphrase()?)
    } else {
        None
    };
    Ok(match &args.key {
        Some(k) => app.host_login_key(k, pp.as_ref())?,
        None => app.host_key_for(host, pp.as_ref())?,
    })
}

/// Steps on stderr in text mode.
fn steps(p: Progress) {
    if let Progress::Step { step, .. } = p {
        eprintln!("… {step}");
    }
}

fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

pub fn run(app: &App, host: &str, args: &SetupArgs) -> Result<(), SetupError> {
    if args.fix && !args.yes && !on_terminal() {
        return Err(CoreError::invalid(
            "yes",
            "not on a terminal: pass --yes to let gpurent run the fix's commands",
        )
        .into());
    }
    let env = SshEnv::detect()?;
    let key = login_key(app, host, args)?;
    let cancel = CancelToken::new();
    let opts = SetupOptions {
        torch: args.torch.clone(),
    };
    if args.stop_fix {
        app.setup_fix_stop(host, &env, &key, &cancel)?;
        if args.json {
            print_json(&serde_json::json!({ "host": host, "stopped": true }))?;
        } else {
            println!("No fix is running on {host} any more.");
        }
        return Ok(());
    }
    if args.verify {
        let sink: &dyn ProgressSink = if args.json { &NoProgress } else { &steps };
        let v = app.setup_verify_with_key(host, &env, &key, sink, &cancel)?;
        if args.json {
            return Ok(print_json(&v)?);
        }
        print_verify(&v);
        return Ok(());
    }
    let sink: &dyn ProgressSink = if args.json { &NoProgress } else { &steps };
    let report = app.setup_probe_with_key(host, &env, &key, &opts, sink, &cancel)?;
    if !args.fix {
        if args.json {
            return Ok(print_json(&report)?);
        }
        print_text(&report.report);
        println!("(raw probe saved as {})", report.probe_path);
        return Ok(());
    }
    fix(app, host, args, &env, &key, &opts, &report)
}

fn fix(
    app: &App,
    host: &str,
    args: &SetupArgs,
    env: &SshEnv,
    key: &LoginKey,
    opts: &SetupOptions,
    report: &HostReport,
) -> Result<(), SetupError> {
    let commands = fix_commands(&report.report, args.code.as_deref())?;
    // The exact commands first (on stderr with --json: stdout carries only JSON lines).
    let mut show = String::from("gpurent will run on ");
    show.push_str(host);
    show.push_str(":\n");
    for c in &commands {
        show.push_str(&format!("    {c}\n"));
    }
    if args.json {
        eprint!("{show}");
    } else {
        print!("{show}");
    }
    if !args.yes {
        eprint!("Run them now? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Err(CoreError::Cancelled.into());
        }
    }
    let cancel = CancelToken::new();
    let result = if args.json {
        let sink = |p: Progress| {
            if let Ok(line) = serde_json::to_string(&p) {
                println!("{line}");
            }
        };
        app.setup_fix_with_key(
            host,
            env,
            key,
            &report.report,
            args.code.as_deref(),
            opts,
            &sink,
            &cancel,
        )
    } else {
        let bar = Bar::new(std::io::stderr().is_terminal());
        let r = app.setup_fix_with_key(
            host,
            env,
            key,
            &report.report,
            args.code.as_deref(),
            opts,
            &bar,
            &cancel,
        );
        bar.finish();
        r
    };
    let done = result?;
    if args.json {
        let line = serde_json::json!({ "kind": "result", "fix": done });
        println!("{line}");
        return Ok(());
    }
    print_fix(&done);
    Ok(())
}

/// A status line under the streamed output: bytes downloaded so far (pip's total is per file,
/// so the line counts up instead of filling a fixed bar). Without a terminal: plain lines.
struct Bar {
    tty: bool,
    status: Mutex<String>,
}

impl Bar {
    fn new(tty: bool) -> Bar {
        Bar {
            tty,
            status: Mutex::new(String::new()),
        }
    }
    fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

impl ProgressSink for Bar {
    fn emit(&self, p: Progress) {
        let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = std::io::stderr().lock();
        match p {
            Progress::Log { line } if self.tty => {
                let _ = write!(err, "\r\x1b[K{line}\n{status}");
            }
            Progress::Log { line } => {
                let _ = writeln!(err, "{line}");
            }
            Progress::Bytes { done_bytes, .. } if self.tty => {
                let n = ((done_bytes / 50_000_000) % 30) as usize;
                *status = format!(
                    "[{}>{}] {} downloaded",
                    "=".repeat(n),
                    " ".repeat(29 - n),
                    mb(done_bytes)
                );
                let _ = write!(err, "\r\x1b[K{status}");
            }
            Progress::Step {
                step,
                index,
                total_steps,
            } => {
                let of = total_steps.map(|t| format!("/{t}")).unwrap_or_default();
                let _ = write!(err, "\r\x1b[K… {step} ({}{of})\n{status}", index + 1);
            }
            _ => {}
        }
        let _ = err.flush();
    }
}

fn print_fix(f: &FixReport) {
    println!(
        "\nFix finished: {} downloaded. The host now:",
        mb(f.downloaded_bytes)
    );
    print_text(&f.after.report);
    println!("(raw probe saved as {})", f.after.probe_path);
}

fn print_verify(v: &HostVerify) {
    let r = &v.verify;
    println!(
        "GPU check with {} (torch {}, CUDA {}):",
        v.python,
        r.torch.as_deref().unwrap_or("?"),
        r.torch_cuda.as_deref().unwrap_or("none")
    );
    for g in &r.gpus {
        println!(
            "  GPU {} {}: {:.1} GiB, matmul {} TFLOPS (spec {}), copy {} GB/s (spec {}){}",
            g.index,
            g.name,
            g.total_memory_gib.unwrap_or(0.0),
            g.matmul_tflops
                .map(|x| format!("{x:.1}"))
                .unwrap_or("?".into()),
            g.spec_tflops
                .map(|x| format!("{x:.0}"))
                .unwrap_or("?".into()),
            g.copy_gbps.map(|x| format!("{x:.0}")).unwrap_or("?".into()),
            g.spec_gbps.map(|x| format!("{x:.0}")).unwrap_or("?".into()),
            if g.suspect() {
                "  <- this may not be the card you paid for"
            } else {
                ""
            }
        );
    }
    for e in &r.errors {
        println!("  error: {e}");
    }
    println!(
        "{}",
        if r.ok {
            "OK: PyTorch works on the GPU."
        } else {
            "NOT OK."
        }
    );
}
