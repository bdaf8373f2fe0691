//! `gpurent recipe list [--json]` and `gpurent recipe run NAME --host LABEL [--port P]
//! [--local-port P] [--json] [-i FILE]`: a goal end to end on a saved host (docs/recipes.md).
//! `run` calls the existing steps in order (Setup's probe and GPU check, the app started on the
//! host's 127.0.0.1, readiness through a gpurent tunnel, the guard with the recipe's defaults),
//! prints the Open URL and holds the tunnel until Ctrl-C. With `--json`: one document once the
//! app answered; a failure is the step's own error with `"step"` (also in `error.data.step`).
//! `gpurent recipe stop NAME --host LABEL` stops the app the recipe started.
//! `gpurent recipe transcribe --host LABEL FILE... [--to DIR] [--format txt|srt|vtt|tsv|json]
//! [--language L] [--json]`: local audio through a tunnel to the Whisper recipe's running app,
//! each transcript written next to its file (or into DIR) as `NAME.EXT.FMT`, never over a file
//! already there. A file the service refuses is its own row's error (exit 1 once all are done).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::login::SshEnv;
use gpurent_core::app::recipe::{RecipeError, RecipeFailure, RecipeRunOptions, RecipeStep};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::{Progress, ProgressSink};
use gpurent_core::infra::ipc::ErrorPayload;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct RecipeArgs {
    #[command(subcommand)]
    cmd: RecipeCmd,
}

#[derive(Debug, Subcommand)]
enum RecipeCmd {
    /// The bundled recipes (goal, job, images per CUDA line with the host-driver floor, ports).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Run a recipe on a saved host: Setup, start, readiness through the tunnel, guard, Open.
    Run(RunArgs),
    /// Stop the app a recipe started on the host.
    Stop(StopArgs),
    /// Transcribe local audio files with the Whisper recipe running on the host.
    Transcribe(TranscribeArgs),
}

#[derive(Debug, Args)]
struct TranscribeArgs {
    /// The audio files (anything ffmpeg reads: mp3, wav, m4a, mp4, …).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The saved host where `gpurent recipe run whisper` runs.
    #[arg(long)]
    host: String,
    /// The folder for the transcripts (default: next to each audio file).
    #[arg(long, value_name = "DIR")]
    to: Option<PathBuf>,
    /// txt, srt, vtt, tsv or json.
    #[arg(long, default_value = "txt")]
    format: String,
    /// The spoken language (zh, en, ja, …; default: detected by Whisper).
    #[arg(long)]
    language: Option<String>,
    #[arg(long)]
    json: bool,
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The recipe (`gpurent recipe list`).
    name: String,
    /// The saved host's label (or rent one with --provider and --offer).
    #[arg(
        long,
        required_unless_present = "provider",
        conflicts_with = "provider"
    )]
    host: Option<String>,
    /// Rent first: runpod, vast or lambda (with --offer; asks before renting, or --yes).
    #[arg(long, requires = "offer")]
    provider: Option<String>,
    /// The offer id from `gpurent offers` (its host must run the CUDA the recipe's image needs).
    #[arg(long, requires = "provider")]
    offer: Option<String>,
    /// Which account of the provider (default: the first).
    #[arg(long, value_name = "NAME")]
    account: Option<String>,
    /// The gpurent key to register and log in with when renting (default: the first).
    #[arg(long, value_name = "LABEL")]
    key: Option<String>,
    /// The most per hour you accept when renting (USD, the whole machine).
    #[arg(long, value_name = "USD")]
    max_price: Option<f64>,
    /// Rent without asking (required off a terminal: renting spends money).
    #[arg(long)]
    yes: bool,
    /// The app's port on the host's 127.0.0.1 (default: the recipe's).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The tunnel's port on this machine's 127.0.0.1 (0: any free one).
    #[arg(long, default_value_t = 0)]
    local_port: u16,
    #[arg(long)]
    json: bool,
    /// Log in with this private key file instead of the host's keychain key.
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct StopArgs {
    name: String,
    #[arg(long)]
    host: String,
    #[arg(long)]
    json: bool,
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
}

pub fn main(data_dir: Option<&Path>, args: &RecipeArgs) -> ExitCode {
    match &args.cmd {
        RecipeCmd::List { json } => match list(data_dir, *json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e, *json),
        },
        RecipeCmd::Run(a) => match run(data_dir, a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail_step(&e, a.json),
        },
        RecipeCmd::Stop(a) => match stop(data_dir, a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e, a.json),
        },
        RecipeCmd::Transcribe(a) => match transcribe(data_dir, a) {
            Ok(0) => ExitCode::SUCCESS,
            Ok(_) => ExitCode::from(1),
            Err(e) => fail(&e, a.json),
        },
    }
}

/// The error edge of `run`: the step's own error, and which step it was.
fn fail_step(e: &RecipeFailure, json: bool) -> ExitCode {
    if json {
        let payload = ErrorPayload::from_error(e);
        println!(
            "{}",
            serde_json::json!({
                "error": serde_json::to_value(&payload).unwrap_or_default(),
                "step": e.step.as_str(),
            })
        );
        return if payload.code == "invalid_input" {
            ExitCode::from(2)
        } else {
            ExitCode::from(1)
        };
    }
    eprintln!("gpurent: the recipe stopped at step {}", e.step.as_str());
    fail(e, false)
}

fn list(data_dir: Option<&Path>, json: bool) -> Result<(), gpurent_core::CoreError> {
    let app = crate::open::open_app(data_dir)?;
    let recipes = app.recipe_list()?;
    if json {
        return print_json(&serde_json::json!({ "recipes": recipes }));
    }
    for r in recipes {
        let driver = r.min_driver().unwrap_or("?");
        println!("{:<16} {} (host driver >= {driver})", r.name, r.goal.en);
    }
    Ok(())
}

/// Steps on stderr (stdout stays one JSON document).
struct StepLines;
impl ProgressSink for StepLines {
    fn emit(&self, event: Progress) {
        if let Progress::Step { step, .. } = event {
            eprintln!("… {step}");
        }
    }
}

fn run(data_dir: Option<&Path>, a: &RunArgs) -> Result<(), RecipeFailure> {
    let setup = |e: RecipeError| RecipeFailure {
        step: RecipeStep::Setup,
        error: e,
    };
    let rent = |e: RecipeError| RecipeFailure {
        step: RecipeStep::Rent,
        error: e,
    };
    let app = crate::open::open_app(data_dir).map_err(|e| setup(e.into()))?;
    // An unknown recipe is bad input, before any key, host or offer is looked at.
    gpurent_core::recipes::get(&a.name).map_err(|e| setup(e.into()))?;
    let env = SshEnv::detect().map_err(|e| setup(e.into()))?;
    let (host, key) = match (&a.provider, &a.offer, &a.host) {
        (Some(p), Some(offer), _) => {
            // Rent first: the offer's host CUDA against the recipe's images, the price
            // confirmed as `gpurent rent` confirms it, then the rent path itself.
            let kind = crate::provider::kind(p).map_err(|e| rent(e.into()))?;
            let checked = app.recipe_offer(&a.name, kind, a.account.as_deref(), offer)?;
            let args = crate::rent::RentArgs::for_recipe(
                p,
                a.account.clone(),
                offer,
                checked.image.clone(),
                checked.disk_gb,
                a.key.clone(),
                a.identity.clone(),
                a.max_price,
                a.yes,
                a.json,
            );
            let key = crate::rent::login_key(&app, &args).map_err(|e| rent(e.into()))?;
            let max_price_usd =
                crate::rent::confirm_price(&app, kind, &args).map_err(|e| rent(e.into()))?;
            let req = gpurent_core::app::providers::RentRequest {
                provider: kind,
                offer_id: offer.clone(),
                image: checked.image,
                disk_gb: Some(checked.disk_gb),
                no_wait: false,
                ready_timeout_s: None,
                account: a.account.clone(),
                max_price_usd,
            };
            let view = app
                .rent(&req, &key, &env, &StepLines, &CancelToken::new())
                .map_err(|e| rent(e.into()))?;
            let label = view.ledger.host_label.clone().unwrap_or(view.ledger.id);
            eprintln!("… rented: {label} (release it when done: gpurent release {label} --yes)");
            (label, key)
        }
        (_, _, Some(h)) => {
            let key = crate::open::host_key(&app, h, a.identity.as_deref())
                .map_err(|e| setup(e.into()))?;
            (h.clone(), key)
        }
        _ => {
            return Err(setup(
                gpurent_core::CoreError::invalid("host", "give --host, or --provider and --offer")
                    .into(),
            ))
        }
    };
    let cancel = CancelToken::new();
    let opts = RecipeRunOptions {
        port: a.port,
        local_port: a.local_port,
    };
    let (fwd, report) =
        app.recipe_run_with_key(&a.name, &host, &env, &key, &opts, &StepLines, &cancel)?;
    if a.json {
        // One line, printed once the app answered (the command then holds the tunnel).
        let line = serde_json::to_string(&report)
            .map_err(|e| setup(gpurent_core::CoreError::invalid("output", e.to_string()).into()))?;
        println!("{line}");
    } else {
        println!("{} on {}: open {}", report.recipe, host, report.url);
        println!(
            "(ready: {} answered {} through the tunnel; guard set: idle {} min)",
            report.ready_path,
            report.ready_status,
            report.guard.spec.idle_s / 60
        );
        for n in &report.next {
            println!("next: {n}");
        }
        for f in &report.results {
            println!("download before release: {f}");
        }
        println!(
            "(Ctrl-C closes the tunnel; `gpurent recipe stop {} --host {}` stops the app)",
            a.name, host
        );
    }
    crate::tunnel::hold_until_ctrl_c(fwd, &cancel).map_err(|e| RecipeFailure {
        step: RecipeStep::Open,
        error: e.into(),
    })
}

fn stop(data_dir: Option<&Path>, a: &StopArgs) -> Result<(), RecipeError> {
    let app = crate::open::open_app(data_dir)?;
    let env = SshEnv::detect()?;
    let key = crate::open::host_key(&app, &a.host, a.identity.as_deref())?;
    let stopped = app.recipe_stop_with_key(&a.name, &a.host, &env, &key, &CancelToken::new())?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"recipe": a.name, "host": a.host, "stopped": stopped})
        );
    } else if stopped {
        println!("{} stopped on {}", a.name, a.host);
    } else {
        println!("no {} started by gpurent was running on {}", a.name, a.host);
    }
    Ok(())
}

/// Files sent and transcripts written, on stderr (stdout stays one JSON document).
struct FileLines;
impl ProgressSink for FileLines {
    fn emit(&self, event: Progress) {
        if let Progress::Units {
            done_units,
            total_units: Some(t),
        } = event
        {
            if done_units < t {
                eprintln!("… file {} of {t}", done_units + 1);
            }
        }
    }
}

/// The files that failed (0: all transcribed).
fn transcribe(data_dir: Option<&Path>, a: &TranscribeArgs) -> Result<u32, RecipeError> {
    use gpurent_core::recipes::asr::{TranscribeOptions, TranscriptFormat};
    let format = TranscriptFormat::parse(&a.format)
        .ok_or_else(|| gpurent_core::CoreError::invalid("format", "txt, srt, vtt, tsv or json"))?;
    let app = crate::open::open_app(data_dir)?;
    let env = SshEnv::detect()?;
    let key = crate::open::host_key(&app, &a.host, a.identity.as_deref())?;
    let opts = TranscribeOptions {
        format,
        language: a.language.clone(),
        out_dir: a.to.as_ref().map(|d| d.display().to_string()),
    };
    let cancel = CancelToken::new();
    let report =
        crate::interrupt::cancel_on_ctrl_c(crate::interrupt::Second::Exits, &cancel, || {
            app.recipe_transcribe_with_key(
                &a.host, &env, &key, &a.files, &opts, &FileLines, &cancel,
            )
        })?;
    if a.json {
        print_json(&report)?;
    } else {
        for f in &report.files {
            match (&f.transcript, &f.error) {
                (Some(t), _) => println!("{} -> {t}", f.file),
                (None, Some(e)) => println!("{}: FAILED: {e}", f.file),
                (None, None) => println!("{}: FAILED", f.file),
            }
        }
        println!(
            "{} transcribed, {} failed on {}",
            report.transcribed, report.failed, report.host
        );
    }
    Ok(report.failed)
}
