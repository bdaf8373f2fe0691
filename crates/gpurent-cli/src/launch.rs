//! `gpurent launch HOST --gpus N [--gpu-ids UUID,…] [--json] [--stop] [-i FILE] -- SCRIPT ARGS…`:
//! the script on N GPUs of the host with torchrun, logs per rank as they come; Ctrl-C (or
//! `--stop`) kills every rank on the host. `gpurent export skypilot --accelerators H100:8
//! --nodes 2 [--setup CMD] [--name N] -- SCRIPT ARGS…` prints a SkyPilot task for more machines
//! (gpurent does not orchestrate clusters). docs/monitor.md, section Multi-GPU.
//!
//! `launch --json`: one JSON object per line, `{"kind":"log","rank":N|null,"line":…}`, then
//! `{"kind":"exit","status":N|null,"hints":[…]}`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::interrupt::{cancel_on_ctrl_c, Second};
use clap::{Args, Subcommand};
use gpurent_core::app::login::SshEnv;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::multigpu::{nccl_hints, skypilot_yaml, LaunchSpec};
use gpurent_core::remote::job::JobOutcome;
use gpurent_core::remote::RemoteError;
use gpurent_core::CoreError;

use crate::output::fail;

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The saved host's label.
    host: String,
    /// Processes, one per GPU.
    #[arg(long, default_value_t = 1)]
    gpus: u32,
    /// Which GPUs, by UUID (as many as --gpus; inside the job they count from 0).
    #[arg(long, value_delimiter = ',', value_name = "UUIDS")]
    gpu_ids: Vec<String>,
    /// Kill a launch left running on the host.
    #[arg(long)]
    stop: bool,
    #[arg(long)]
    json: bool,
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
    /// The script and its arguments (after `--`).
    #[arg(last = true)]
    script: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    what: ExportWhat,
}

#[derive(Debug, Subcommand)]
enum ExportWhat {
    /// A SkyPilot task YAML (launch it with `sky launch`).
    Skypilot {
        /// e.g. H100:8 (per node).
        #[arg(long)]
        accelerators: String,
        #[arg(long, default_value_t = 1)]
        nodes: u32,
        /// Commands to prepare each node.
        #[arg(long, default_value = "")]
        setup: String,
        #[arg(long, default_value = "gpurent-job")]
        name: String,
        #[arg(last = true)]
        script: Vec<String>,
    },
}

fn english(hint: &str) -> &str {
    match hint {
        "launch.hint.nccl_debug" => "ranks hang in NCCL: rerun with NCCL_DEBUG=INFO to see where",
        "launch.hint.nccl_p2p_disable" => "consumer cards without P2P: try NCCL_P2P_DISABLE=1",
        "launch.hint.nccl_ib_disable" => "no InfiniBand here: try NCCL_IB_DISABLE=1",
        h => h,
    }
}

pub fn main(data_dir: Option<&Path>, args: &LaunchArgs) -> ExitCode {
    match run(data_dir, args) {
        Ok(code) => code,
        Err(e) => fail(&e, args.json),
    }
}

fn run(data_dir: Option<&Path>, args: &LaunchArgs) -> Result<ExitCode, RemoteError> {
    let app = crate::open::open_app(data_dir)?;
    let env = SshEnv::detect()?;
    let key = crate::open::identity_file(args.identity.as_deref())?;
    let cancel = CancelToken::new();
    if args.stop {
        app.launch_stop(&args.host, &env, key.as_ref(), &cancel)?;
        if args.json {
            println!(
                "{}",
                serde_json::json!({"host": args.host, "stopped": true})
            );
        } else {
            println!("no launch is running on {} any more", args.host);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let spec = LaunchSpec {
        nproc: args.gpus,
        gpus: args.gpu_ids.clone(),
        script: args.script.clone(),
    };
    let mut tail: Vec<String> = Vec::new();
    let outcome = cancel_on_ctrl_c(Second::Waits, &cancel, || {
        app.launch_run(
            &args.host,
            &env,
            key.as_ref(),
            &spec,
            &mut |l| {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"kind": "log", "rank": l.rank, "line": l.line})
                    );
                } else {
                    match l.rank {
                        Some(r) => println!("[{r}] {}", l.line),
                        None => println!("{}", l.line),
                    }
                }
                tail.push(l.line);
                if tail.len() > 200 {
                    tail.remove(0);
                }
            },
            &cancel,
        )
    })?;
    let hints = nccl_hints(&tail);
    let status = match outcome {
        JobOutcome::Exited(s) => s,
        JobOutcome::Busy(pid) => {
            return Err(CoreError::invalid(
                "launch",
                format!(
                "a launch is already running on the host (process group {pid}); --stop kills it"
            ),
            )
            .into())
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({"kind": "exit", "status": status, "hints": hints})
        );
    } else {
        for h in &hints {
            eprintln!("hint: {}", english(h));
        }
    }
    Ok(match status {
        Some(0) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

pub fn export(args: &ExportArgs) -> ExitCode {
    let ExportWhat::Skypilot {
        accelerators,
        nodes,
        setup,
        name,
        script,
    } = &args.what;
    match skypilot_yaml(name, accelerators, *nodes, setup, script) {
        Ok(y) => {
            print!("{y}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e, false),
    }
}
