//! `gpurent explain [FILE|-] [--host LABEL] [--json]`: what an error log means, the lines that
//! show it, the likely cause (on a saved host: from its saved Setup probe) and the fix. Nothing
//! recognised is a normal answer (exit 0, empty `matches`, the most suspicious lines).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use gpurent_core::app::App;
use gpurent_core::explain::{ExplainError, Explanation};
use gpurent_core::remote::error::RemoteError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The log to explain ("-" or nothing: standard input).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// A saved host: its saved Setup probe makes the cause and fix specific to it.
    #[arg(long, value_name = "LABEL")]
    pub host: Option<String>,
    /// Print the answer as JSON (README: CLI JSON).
    #[arg(long)]
    pub json: bool,
}

pub fn main(data_dir: Option<&Path>, args: &ExplainArgs) -> ExitCode {
    match run(data_dir, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

fn read_log(file: Option<&Path>) -> Result<String, ExplainError> {
    let unreadable = |path: &str, e: std::io::Error| ExplainError::ReadLog {
        path: path.to_string(),
        reason: e.to_string(),
    };
    let bytes = match file {
        None => read_stdin().map_err(|e| unreadable("-", e))?,
        Some(p) if p == Path::new("-") => read_stdin().map_err(|e| unreadable("-", e))?,
        Some(p) => std::fs::read(p).map_err(|e| unreadable(&p.display().to_string(), e))?,
    };
    // Logs are not always UTF-8 (a GBK console, a binary blob in the middle): keep what reads.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut b = Vec::new();
    std::io::stdin().read_to_end(&mut b)?;
    Ok(b)
}

fn run(data_dir: Option<&Path>, args: &ExplainArgs) -> Result<(), ExplainError> {
    let log = read_log(args.file.as_deref())?;
    let app: App =
        crate::open_app(data_dir).map_err(|e| ExplainError::Remote(RemoteError::Core(e)))?;
    let e = app.explain_log(&log, args.host.as_deref())?;
    if args.json {
        return print_json(&e).map_err(|e| ExplainError::Remote(RemoteError::Core(e)));
    }
    print_text(&e, args.host.as_deref());
    Ok(())
}

fn print_text(e: &Explanation, host: Option<&str>) {
    if e.matches.is_empty() {
        println!("Not recognised (lines read: {}).", e.lines);
        if !e.suspicious.is_empty() {
            println!("\nMost suspicious lines:");
            for l in &e.suspicious {
                println!("  {:>6}: {}", l.line, l.text);
            }
        }
    }
    for (i, m) in e.matches.iter().enumerate() {
        let conf = serde_json::to_value(m.confidence)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        println!("\n{}. [{}] {} ({conf} confidence)", i + 1, m.code, m.title);
        if let Some(c) = &m.consequence_of {
            println!("   Most likely a consequence of {c} (above).");
        }
        println!("   {}", m.meaning);
        for l in &m.evidence {
            println!("   {:>6}: {}", l.line, l.text);
        }
        println!("   Cause: {}", m.cause.text);
        if !m.cause.needs.is_empty() {
            println!(
                "   With a host (--host LABEL, after `gpurent doctor LABEL`) gpurent would check: {}",
                m.cause.needs.join(", ")
            );
        }
        println!("   Fix: {}", m.fix.steps);
        for c in &m.fix.commands {
            println!("     $ {c}");
        }
        if let (Some(code), Some(h)) = (&m.fix.setup_code, host) {
            println!("   gpurent can run this fix: gpurent doctor {h} --fix --code {code}");
        }
        if !m.verified {
            println!("   (This rule is not verified against a cited source.)");
        }
    }
    if let Some(env) = e.host.as_ref().and_then(|h| h.environment.as_ref()) {
        if e.matches.is_empty() {
            println!("\nEnvironment (for a bug report; credentials redacted):\n{env}");
        }
    }
}
