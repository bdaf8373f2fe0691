//! `gpurent setup`: diagnose a GPU host for PyTorch (driver, CUDA, Python, PyTorch, disk,
//! network): facts, findings with stable codes, the verdict and the exact fix (docs/cli-setup.md).
//!
//! `setup <host>` probes a saved host over SSH, `--fix` runs the fix there, `--verify` the GPU
//! check (see `setup_host.rs`); `--from-probe FILE` diagnoses a saved probe offline
//! (`--print-probe` prints the script: `ssh HOST sh -s < probe.sh > probe.txt`). Both feed the
//! same `App::setup_from_probe_with`.

#[path = "setup_host.rs"]
mod host_mode;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use gpurent_core::app::setup::SetupError;
use gpurent_core::app::App;
use gpurent_core::setup::{FixNote, Report, SetupOptions, Severity, Verdict};
use gpurent_core::CoreError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// A saved host (`gpurent host list`): probe it over SSH.
    #[arg(conflicts_with_all = ["from_probe", "print_probe"])]
    pub host: Option<String>,
    /// Diagnose the saved output of gpurent's probe script ("-" reads stdin).
    #[arg(long, value_name = "FILE")]
    pub from_probe: Option<PathBuf>,
    /// Run the fix on the host: shows the exact commands, asks on a terminal (or --yes), streams
    /// the output with progress, then re-checks.
    #[arg(long, requires = "host", conflicts_with_all = ["verify", "stop_fix"])]
    pub fix: bool,
    /// Run this finding's fix (its code) instead of the install plan.
    #[arg(long, requires = "fix", value_name = "CODE")]
    pub code: Option<String>,
    /// Do not ask before running the fix.
    #[arg(long, requires = "fix")]
    pub yes: bool,
    /// Run the GPU check (matmul TFLOPS, copy GB/s, VRAM vs the catalog) with the host's Python.
    #[arg(long, requires = "host", conflicts_with = "stop_fix")]
    pub verify: bool,
    /// Kill a fix left running on the host (e.g. after Ctrl-C).
    #[arg(long, requires = "host")]
    pub stop_fix: bool,
    /// Log in with this gpurent key instead of the host's.
    #[arg(long, requires = "host")]
    pub key: Option<String>,
    /// The key's passphrase from the first line of standard input.
    #[arg(long, requires = "host")]
    pub passphrase_stdin: bool,
    /// Plan for this PyTorch release (2.3 = the newest 2.3.x).
    #[arg(long, value_name = "VERSION")]
    pub torch: Option<String>,
    /// Print the probe script and exit (run it on a host: ssh HOST sh -s < probe.sh).
    #[arg(long, conflicts_with = "from_probe")]
    pub print_probe: bool,
    /// Print the report as JSON (docs/cli-setup.md).
    #[arg(long)]
    pub json: bool,
}

fn read(path: &PathBuf) -> Result<String, CoreError> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CoreError::io(path, e))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| CoreError::io(path, e))
}

/// `gpurent setup`: errors as `{"error": ...}` with `--json` (exit 2 for bad input, 1 otherwise).
pub fn main(data_dir: Option<&Path>, args: &SetupArgs) -> ExitCode {
    let app = match crate::open::open_app(data_dir) {
        Ok(app) => app,
        Err(e) => return fail(&e, args.json),
    };
    let result = match &args.host {
        Some(host) => host_mode::run(&app, host, args),
        None => run(&app, args).map_err(SetupError::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

pub fn run(app: &App, args: &SetupArgs) -> Result<(), CoreError> {
    if args.print_probe {
        print!("{}", app.setup_probe_script());
        return Ok(());
    }
    let Some(path) = &args.from_probe else {
        return Err(CoreError::invalid(
            "from_probe",
            "give a saved host (gpurent setup HOST) or --from-probe FILE (the saved output of `gpurent setup --print-probe` run on the host)",
        ));
    };
    let raw = read(path)?;
    let opts = SetupOptions {
        torch: args.torch.clone(),
    };
    let report = app.setup_from_probe_with(&raw, &opts)?;
    if args.json {
        return print_json(&report);
    }
    print_text(&report);
    Ok(())
}

fn print_text(r: &Report) {
    match &r.verdict {
        Verdict::Ready => println!("Verdict: READY - PyTorch runs on the GPU."),
        Verdict::Fixable { codes } => {
            println!("Verdict: FIXABLE here ({}).", codes.join(", "))
        }
        Verdict::Blocked { needs, codes } => println!(
            "Verdict: BLOCKED - needs {} ({}).",
            serde_json::to_value(needs)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
                .replace('_', " "),
            codes.join(", ")
        ),
    }
    for f in &r.findings {
        let sev = match f.severity {
            Severity::Error => "ERROR",
            Severity::Warning => "WARN ",
            Severity::Info => "info ",
        };
        println!("\n[{sev}] {}: {}", f.diagnosis.code(), f.message);
        for e in &f.evidence {
            println!("    | {e}");
        }
        for n in f.fix.iter().flat_map(|x| x.notes.iter()) {
            if let Some(t) = note_text(n) {
                println!("    -> {t}");
            }
        }
    }
    if let Some(p) = &r.plan {
        println!(
            "\nFix: PyTorch {} ({}, CUDA {}) for Python {}:",
            p.torch, p.variant, p.wheel_cuda, p.python_version
        );
        for c in &p.commands {
            println!("    {c}");
        }
    } else if let Some(fix) = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .find_map(|f| f.fix.as_ref().filter(|x| !x.commands.is_empty()))
    {
        println!("\nFix:");
        for c in &fix.commands {
            println!("    {c}");
        }
    }
    println!("\n(compatibility data as of {})", r.data_as_of);
}

/// The notes worth a line in the text form (the UI translates all of them by key).
fn note_text(n: &FixNote) -> Option<String> {
    Some(match n {
        FixNote::RentHostWithCuda { min_cuda, min_driver } => format!(
            "rent a host whose nvidia-smi shows CUDA Version >= {min_cuda}{}",
            min_driver.as_ref().map(|d| format!(" (driver >= {d})")).unwrap_or_default()
        ),
        FixNote::DriverBranch {
            branch,
            minimum_branch,
            lifecycle,
            supported_until,
            ..
        } => {
            use gpurent_core::compat::branches::BranchLifecycle as L;
            let kind = match lifecycle {
                L::LongTermSupport => "a long-term support branch",
                L::Production => "a production branch",
                L::NewFeature => "a short-lived new-feature branch: no supported long-term or production branch runs this CUDA yet",
                L::Unknown => "its support status is not in gpurent's data",
            };
            let until = supported_until
                .as_ref()
                .filter(|_| matches!(lifecycle, L::LongTermSupport | L::Production))
                .map(|u| format!(", supported until {u}"))
                .unwrap_or_default();
            let min = minimum_branch
                .as_ref()
                .filter(|m| *m != branch)
                .map(|m| format!("; the minimum is {m}"))
                .unwrap_or_default();
            format!("install NVIDIA driver branch {branch} ({kind}{until}{min})")
        }
        FixNote::RebootFollows => "a reboot follows".into(),
        FixNote::ShellProfile { dir } => format!(
            "adds {dir} to PATH at the top of ~/.bashrc and ~/.profile (a block marked gpurent, added once)"
        ),
        FixNote::UsesMirror { url, .. } => format!("wheels come from the mirror {url}"),
        FixNote::MinorVersionCompat { wheel_cuda, driver_cuda } => format!(
            "CUDA {wheel_cuda} wheels on a CUDA {driver_cuda} driver run under minor-version compatibility"
        ),
        FixNote::NewVenv { path } => format!("creates the virtual environment {path}"),
        _ => return None,
    })
}
