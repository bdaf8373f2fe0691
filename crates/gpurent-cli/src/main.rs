//! `gpurent`: the command-line interface over gpurent-core. Every subcommand makes the same core
//! calls as the desktop app. With `--json`, stdout carries exactly one JSON document (documented in
//! the README and kept stable); errors are then `{"error": {code, message, detail?}}` on stdout and
//! exit code 2 for bad input, 1 for everything else.

mod budget;
mod cards;
mod cost;
mod estimate;
mod explain;
mod guard;
mod host;
mod instance_action;
mod instances;
mod interrupt;
mod job;
mod jupyter;
mod key;
mod launch;
mod offers;
mod ollama;
mod open;
mod output;
mod provider;
mod rate;
mod recipe;
mod release;
mod rent;
mod replay;
mod settings;
mod setup;
mod start;
mod stop;
mod transfer;
mod tunnel;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::open::{open_app, provider_cmd};

#[derive(Debug, Parser)]
#[command(
    name = "gpurent",
    version,
    about = "Rent a cloud GPU, set it up for PyTorch, move your files, stop paying.",
    long_about = "gpurent's command-line interface. It drives the same core as the desktop app.\n\
                  Use --json for machine-readable output (see README: CLI JSON)."
)]
struct Cli {
    /// Keep all gpurent files (config, data, logs, cache) under this directory
    /// (same as setting GPURENT_HOME).
    #[arg(long, global = true, value_name = "DIR", env = "GPURENT_HOME")]
    data_dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Set a GPU host up for PyTorch: probe facts, findings, verdict and the fix (docs/cli-setup.md).
    /// `gpurent doctor` is the same command.
    #[command(alias = "doctor")]
    Setup(setup::SetupArgs),
    /// List GPU cards in the catalog (specs with sources and confidence).
    Cards(cards::CardsArgs),
    /// Memory, fit per card, speed, time and cost for a job (docs/estimator.md).
    Estimate(Box<estimate::EstimateArgs>),
    /// Size a job beyond LLMs (image, video, lora, speech, 3dgs, render, simulation) from sourced
    /// figures (docs/estimator.md: Jobs beyond LLMs).
    Job(Box<job::JobArgs>),
    /// List the model catalog and weight formats.
    Models(estimate::ModelsArgs),
    /// Explain an error log: the cause, the lines that show it and the fix (for a saved host).
    Explain(explain::ExplainArgs),
    /// SSH keys kept in the OS keychain: new, list, import, export-pub, delete (docs/cli-keys.md).
    Key(key::KeyArgs),
    /// Saved SSH hosts: add from a pasted command, list, check, re-pin, ssh config (docs/remote.md).
    Host(host::HostArgs),
    /// Upload files and folders to a saved host, verified and resumable (docs/transfer.md).
    Put(transfer::PutArgs),
    /// Download files and folders from a saved host, verified and resumable.
    Get(transfer::GetArgs),
    /// The transfer journal: pending, partial, paused, done (with bytes).
    Transfers(transfer::TransfersArgs),
    /// Continue a transfer from its last verified byte (after a pause, a cut or a restart).
    Resume(transfer::ResumeArgs),
    /// Give up a paused or interrupted transfer and remove its temporary file or folder.
    Discard(transfer::DiscardArgs),
    /// Provider accounts (RunPod, Vast.ai, Lambda): add with --key-stdin, list, test, remove.
    Provider(provider::ProviderArgs),
    /// Live offers from the connected accounts (docs/providers.md).
    Offers(offers::OffersArgs),
    /// Rent a machine from an offer and wait until a key login is proven.
    Rent(Box<rent::RentArgs>),
    /// The instance ledger joined with what the providers say (reconciled on every run).
    Instances(instances::InstancesArgs),
    /// Stop an instance: GPU billing stops (Vast keeps the disk; RunPod wipes its container disk).
    Stop(stop::ActionArgs),
    /// Start a stopped instance.
    Start(start::ActionArgs),
    /// Release (terminate) an instance and delete its disk.
    Release(release::ReleaseArgs),
    /// Live GPU and host telemetry of a saved host, with bottleneck hints (docs/monitor.md).
    Watch(watch::WatchArgs),
    /// Ollama on a saved host: serve, pull, run, ps, stop, tunnel (docs/monitor.md).
    Ollama(ollama::OllamaArgs),
    /// Jupyter Server on a saved host's 127.0.0.1 with a token, tunnelled here (docs/monitor.md).
    Jupyter(jupyter::JupyterArgs),
    /// A script on N GPUs of a saved host with torchrun; Ctrl-C kills every rank (docs/monitor.md).
    Launch(launch::LaunchArgs),
    /// Export a job for tools gpurent hands over to (a SkyPilot task for several machines).
    Export(launch::ExportArgs),
    /// The idle guard on the machine itself: set, status, snooze, off (docs/guard.md).
    Guard(guard::GuardArgs),
    /// What machines cost: so far, per hour now, by a chosen time (docs/billing.md).
    Cost(cost::CostArgs),
    /// A pasted host's own price and billing rule, for `gpurent cost` (docs/billing.md).
    Rate(rate::RateArgs),
    /// Recipes: a goal end to end on a saved host (list, run, stop, transcribe; docs/recipes.md).
    Recipe(recipe::RecipeArgs),
    /// Replay an environment recipe a release saved on another machine (docs/release.md).
    Replay(replay::ReplayArgs),
    /// Daily and monthly spending limits and where spending stands (docs/billing.md).
    Budget(budget::BudgetArgs),
    /// Settings: the default currency (CNY / USD / follow the language).
    Settings(settings::SettingsArgs),
}

fn main() -> ExitCode {
    output::quiet_on_closed_stdout();
    let cli = Cli::parse();
    let (json, result) = match &cli.command {
        Command::Host(args) => return host::main(cli.data_dir.as_deref(), args),
        Command::Put(args) => return transfer::put(cli.data_dir.as_deref(), args),
        Command::Get(args) => return transfer::get(cli.data_dir.as_deref(), args),
        Command::Transfers(args) => return transfer::list(cli.data_dir.as_deref(), args),
        Command::Resume(args) => return transfer::resume(cli.data_dir.as_deref(), args),
        Command::Discard(args) => return transfer::discard(cli.data_dir.as_deref(), args),
        Command::Setup(args) => return setup::main(cli.data_dir.as_deref(), args),
        Command::Key(args) => return key::main(cli.data_dir.as_deref(), args),
        Command::Provider(args) => return provider::main(cli.data_dir.as_deref(), args),
        Command::Offers(args) => {
            return provider_cmd(cli.data_dir.as_deref(), args.json, |a| offers::run(a, args))
        }
        Command::Rent(args) => {
            return provider_cmd(cli.data_dir.as_deref(), args.json, |a| rent::run(a, args))
        }
        Command::Instances(args) => {
            return provider_cmd(cli.data_dir.as_deref(), args.json, |a| {
                instances::run(a, args)
            })
        }
        Command::Stop(args) => {
            return provider_cmd(cli.data_dir.as_deref(), args.json, |a| stop::run(a, args))
        }
        Command::Start(args) => {
            return provider_cmd(cli.data_dir.as_deref(), args.json, |a| start::run(a, args))
        }
        Command::Release(args) => {
            return provider_cmd(cli.data_dir.as_deref(), args.json, |a| {
                release::run(a, args)
            })
        }
        Command::Watch(args) => return watch::main(cli.data_dir.as_deref(), args),
        Command::Ollama(args) => return ollama::main(cli.data_dir.as_deref(), args),
        Command::Jupyter(args) => return jupyter::main(cli.data_dir.as_deref(), args),
        Command::Launch(args) => return launch::main(cli.data_dir.as_deref(), args),
        Command::Explain(args) => return explain::main(cli.data_dir.as_deref(), args),
        Command::Export(args) => return launch::export(args),
        Command::Guard(args) => return guard::main(cli.data_dir.as_deref(), args),
        Command::Cost(args) => return cost::main(cli.data_dir.as_deref(), args),
        Command::Rate(args) => return rate::main(cli.data_dir.as_deref(), args),
        Command::Budget(args) => return budget::main(cli.data_dir.as_deref(), args),
        Command::Settings(args) => return settings::main(cli.data_dir.as_deref(), args),
        Command::Recipe(args) => return recipe::main(cli.data_dir.as_deref(), args),
        Command::Replay(args) => return replay::main(cli.data_dir.as_deref(), args),
        Command::Cards(args) => (
            args.json,
            open_app(cli.data_dir.as_deref()).and_then(|app| cards::run(&app, args)),
        ),
        Command::Estimate(args) => (
            args.json,
            open_app(cli.data_dir.as_deref()).and_then(|app| estimate::run(&app, args)),
        ),
        Command::Job(args) => (
            args.json,
            open_app(cli.data_dir.as_deref()).and_then(|app| job::run(&app, args)),
        ),
        Command::Models(args) => (
            args.json,
            open_app(cli.data_dir.as_deref()).and_then(|app| estimate::run_models(&app, args)),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => output::fail(&e, json),
    }
}
