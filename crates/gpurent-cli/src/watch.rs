//! `gpurent watch HOST [--json] [--samples N] [--interval-ms MS] [-i FILE]`: live GPU and host
//! telemetry of a saved host, with bottleneck hints (docs/monitor.md).
//!
//! With `--json`, stdout carries one JSON object per line: `{"kind":"sample",...}` per sample and
//! the stream's news (`connected`, `disconnected`, `gpu_unavailable`); an error ends it with
//! `{"error": {...}}`. Without, one line per sample and the hints below it. Ctrl-C stops.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::interrupt::{cancel_on_ctrl_c, Second};
use clap::Args;
use gpurent_core::app::login::SshEnv;
use gpurent_core::app::monitor::WatchOptions;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::monitor::hints::Hint;
use gpurent_core::monitor::stream::{Flow, TelemetryEvent};
use gpurent_core::monitor::watch::{WatchEvent, WatchSample};
use gpurent_core::remote::RemoteError;
use gpurent_core::CoreError;

use crate::output::fail;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The saved host's label (`gpurent host list`).
    host: String,
    /// One JSON object per line on stdout.
    #[arg(long)]
    json: bool,
    /// Stop after this many samples (default: until Ctrl-C).
    #[arg(long, value_name = "N")]
    samples: Option<u64>,
    /// Milliseconds between samples (200 to 60000).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    interval_ms: u64,
    /// Log in with this private key file (unencrypted OpenSSH/PEM) instead of the host's
    /// keychain key.
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
}

pub fn main(data_dir: Option<&Path>, args: &WatchArgs) -> ExitCode {
    match run(data_dir, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

fn run(data_dir: Option<&Path>, args: &WatchArgs) -> Result<(), RemoteError> {
    let opts = WatchOptions::with_interval(Some(args.interval_ms))?;
    if args.samples == Some(0) {
        return Err(CoreError::invalid("samples", "at least 1").into());
    }
    let app = crate::open::open_app(data_dir)?;
    let env = SshEnv::detect()?;
    let key = crate::open::identity_file(args.identity.as_deref())?;
    let cancel = CancelToken::new();
    let mut seen = 0u64;
    cancel_on_ctrl_c(Second::Exits, &cancel, || {
        app.monitor_watch(
            &args.host,
            &env,
            key.as_ref(),
            &opts,
            &mut |ev| {
                match ev {
                    WatchEvent::Sample(s) => {
                        seen += 1;
                        if args.json {
                            let mut v = serde_json::to_value(&s).unwrap_or_default();
                            v["kind"] = "sample".into();
                            println!("{v}");
                        } else {
                            print_sample(&s);
                        }
                    }
                    WatchEvent::Status(st) => print_status(&st, args.json),
                }
                if args.samples.is_some_and(|n| seen >= n) {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            },
            &cancel,
        )
    })
}

fn print_status(ev: &TelemetryEvent, json: bool) {
    if json {
        println!("{}", serde_json::to_string(ev).unwrap_or_default());
        return;
    }
    match ev {
        TelemetryEvent::Connected {
            attempt,
            dropped_fields,
            ..
        } => {
            if *attempt > 1 {
                eprintln!("… reconnected (attempt {attempt})");
            }
            if !dropped_fields.is_empty() {
                eprintln!(
                    "(this driver does not report: {})",
                    dropped_fields.join(", ")
                );
            }
        }
        TelemetryEvent::Disconnected {
            message,
            retry_in_ms,
            ..
        } => eprintln!(
            "… {message}; reconnecting in {:.1} s",
            *retry_in_ms as f64 / 1000.0
        ),
        TelemetryEvent::GpuUnavailable { message } => {
            eprintln!("(no GPU telemetry on this host: {message})")
        }
        _ => {}
    }
}

fn opt(v: Option<f64>, unit: &str, digits: usize) -> String {
    v.map_or("?".into(), |x| format!("{x:.digits$}{unit}"))
}

fn print_sample(s: &WatchSample) {
    for g in &s.gpus {
        let reasons = g.throttle.as_ref().map_or("?".to_string(), |r| {
            if r.is_empty() {
                "-".into()
            } else {
                r.iter().map(|x| x.suffix()).collect::<Vec<_>>().join(",")
            }
        });
        println!(
            "gpu{} {:>5} util  {} / {} MiB  {}  {} / {}  [{}]",
            g.index.map_or("?".into(), |i| i.to_string()),
            opt(g.util_gpu_pct, "%", 0),
            opt(g.memory_used_mib, "", 0),
            opt(g.memory_total_mib, "", 0),
            opt(g.temperature_c, "°C", 0),
            opt(g.power_draw_w, " W", 0),
            opt(g.power_limit_w, " W", 0),
            reasons,
        );
    }
    if let Some(c) = &s.cpu {
        let busiest = c
            .cores_pct
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        println!(
            "cpu {} (busiest core {}, {} cores)  ram {} / {} MiB",
            opt(c.cpu_pct, "%", 0),
            opt(busiest, "%", 0),
            c.cores_pct.len(),
            opt(c.mem_used_mib, "", 0),
            opt(c.mem_total_mib, "", 0),
        );
    }
    for h in &s.hints {
        print_hint(h);
    }
}

/// English for the hint keys (the app translates the same keys, docs/monitor.md lists them).
fn english(key: &str) -> &str {
    match key {
        "monitor.hint.data_loader" => {
            "the GPU waits for the CPU: the data loader is the bottleneck"
        }
        "monitor.hint.oom_risk" => {
            "VRAM is nearly full: a larger batch or longer sequence runs out of memory"
        }
        "monitor.hint.thermal_throttle" => {
            "the card is too hot and slows down: the host is slowing it"
        }
        "monitor.hint.power_throttle" => "the card is held back for power",
        "monitor.hint.hw_slowdown" => {
            "the hardware cuts the clocks: heat, a power brake or the power supply"
        }
        "monitor.hint.idle_with_memory" => {
            "a process holds GPU memory but the GPU does nothing: waiting on I/O or stalled"
        }
        "monitor.hint.low_intensity" => {
            "'100 %' busy at a fraction of the power limit: small kernels, not a full chip"
        }
        "monitor.step.num_workers" => "raise DataLoader num_workers",
        "monitor.step.pin_memory" => "set pin_memory=True (and non_blocking copies)",
        "monitor.step.pretokenise" => {
            "pre-tokenise / pre-process the dataset once, before training"
        }
        "monitor.step.more_cpu_host" => "rent a host with more CPU cores per GPU",
        "monitor.step.data_on_local_disk" => "copy the dataset to the local disk first",
        "monitor.step.check_job_log" => "check the job's log: is it waiting or stuck?",
        "monitor.step.py_spy_dump" => "py-spy dump --pid PID shows where it waits",
        "monitor.step.stop_idle_job" => "stop the process if it is left over (it holds the card)",
        "monitor.step.smaller_batch" => "lower the batch size (or sequence length)",
        "monitor.step.gradient_checkpointing" => "turn on gradient checkpointing",
        "monitor.step.lower_precision" => "use bf16 / 8-bit optimiser / quantised weights",
        "monitor.step.estimate" => "check the fit with gpurent estimate",
        "monitor.step.other_host" => "move to another host",
        "monitor.step.ask_provider_cooling" => "tell the provider: the card overheats",
        "monitor.step.ask_provider_hw_slowdown" => {
            "tell the provider: the card reports a hardware slowdown"
        }
        "monitor.step.check_power_limit" => {
            "compare power.limit with the card's default (nvidia-smi -q -d POWER)"
        }
        "monitor.step.larger_batch" => "raise the batch size so each kernel does more",
        "monitor.step.profile" => "profile a few steps (torch.profiler) to see the kernels",
        other => other,
    }
}

fn print_hint(h: &Hint) {
    let gpu = h.gpu.map_or(String::new(), |g| format!("gpu{g}: "));
    let tag = if h.heuristic { " (heuristic)" } else { "" };
    println!("  ! {gpu}{}{tag}", english(&h.key));
    for e in &h.evidence {
        let params: Vec<String> = e.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!(
            "    {}: {}",
            e.key.trim_start_matches("monitor.evidence."),
            params.join(" ")
        );
    }
    if let Some(step) = h.next_steps.first() {
        println!("    → {}", english(step));
    }
}
