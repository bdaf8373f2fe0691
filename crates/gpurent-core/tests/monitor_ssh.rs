//! The telemetry stream against fake GPU hosts on a REAL loopback sshd: the fake `nvidia-smi`
//! streams changing rows in loop mode (`-lms`), an older driver knows only
//! `clocks_throttle_reasons.*`, another lacks the PCIe fields, a host has no GPU, a cut through
//! the delay proxy mid-stream reconnects, and a stop leaves nothing running on the host.
//!
//! Needs `/usr/sbin/sshd`, the `gputest` user and root (skipped otherwise, failing under CI=true).

mod monitor_common;
mod remote_common;

use std::time::{Duration, Instant};

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::monitor::stream::{run, Flow, StreamOptions, TelemetryEvent};
use gpurent_core::monitor::telemetry::{ReasonNames, ThrottleReason};
use gpurent_testhost::DelayProxy;
use monitor_common::{remote_processes, write_apps, write_gpus, Gpu, LiveHost};

fn fast() -> StreamOptions {
    StreamOptions {
        interval_ms: 200,
        apps_every: 2,
        retry_initial_ms: 100,
        retry_max_ms: 400,
        max_failures: Some(20),
        stall_ms: Some(3000),
    }
}

/// Run the stream on `port`; `step` sees every event with the list so far and says when to stop.
fn watch(
    h: &LiveHost,
    port: u16,
    opts: &StreamOptions,
    mut step: impl FnMut(&TelemetryEvent, &[TelemetryEvent]) -> Flow,
) -> Vec<TelemetryEvent> {
    let cancel = CancelToken::new();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    run(
        &mut |c| h.connect(port, c),
        opts,
        &SystemClock,
        &mut |ev| {
            let flow = step(&ev, &seen);
            seen.push(ev);
            if Instant::now() > deadline {
                panic!("the stream ran past a minute: {seen:?}");
            }
            flow
        },
        &cancel,
    )
    .expect("stream");
    seen
}

fn gpus(evs: &[TelemetryEvent]) -> Vec<&Vec<gpurent_core::monitor::telemetry::GpuRow>> {
    evs.iter()
        .filter_map(|e| match e {
            TelemetryEvent::Gpus { gpus, .. } => Some(gpus),
            _ => None,
        })
        .collect()
}

fn count_gpus(evs: &[TelemetryEvent]) -> usize {
    gpus(evs).len()
}

#[test]
fn loop_mode_streams_changing_rows_host_samples_and_apps() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[Gpu::busy(10), Gpu::busy(11)], &[]) else {
        return;
    };
    write_apps(&h.state(), &[(0, 4242, 18_000)]);
    let state = h.state();
    let evs = watch(&h, h.sshd.port(), &fast(), |ev, seen| {
        if matches!(ev, TelemetryEvent::Gpus { .. }) && count_gpus(seen) == 2 {
            let mut hot = Gpu::busy(95);
            hot.reasons = vec!["sw_power_cap"];
            write_gpus(&state, &[hot, Gpu::busy(96)], &[]);
        }
        let hosts = seen
            .iter()
            .filter(|e| matches!(e, TelemetryEvent::Host { host, .. } if host.cpu_pct.is_some()))
            .count();
        let apps = seen
            .iter()
            .any(|e| matches!(e, TelemetryEvent::Apps { .. }));
        if count_gpus(seen) >= 8 && hosts >= 2 && apps {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    match &evs[0] {
        TelemetryEvent::Connected {
            attempt: 1,
            reasons: Some(ReasonNames::Event),
            dropped_fields,
        } => assert!(dropped_fields.is_empty()),
        other => panic!("first event {other:?}"),
    }
    let g = gpus(&evs);
    assert!(g.iter().all(|s| s.len() == 2), "each sample has both GPUs");
    assert_eq!(g[0][0].util_gpu_pct, Some(10.0));
    assert_eq!(g[0][1].index, Some(1));
    assert_eq!(g[0][0].throttle, Some(vec![]));
    let last = g.last().expect("samples");
    assert_eq!(last[0].util_gpu_pct, Some(95.0), "the rows were re-read");
    assert_eq!(last[0].throttle, Some(vec![ThrottleReason::SwPowerCap]));
    assert_eq!(last[0].clock_sm_mhz, Some(1980.0));
    assert_eq!(last[0].memory_total_mib, Some(81_559.0));
    let host = evs
        .iter()
        .rev()
        .find_map(|e| match e {
            TelemetryEvent::Host { host, .. } => Some(host),
            _ => None,
        })
        .expect("host sample");
    assert!(host.mem_total_mib.is_some_and(|m| m > 0.0));
    assert!(!host.cores_pct.is_empty());
    let apps = evs
        .iter()
        .find_map(|e| match e {
            TelemetryEvent::Apps { apps, .. } => Some(apps),
            _ => None,
        })
        .expect("apps");
    assert_eq!(apps[0].pid, Some(4242));
    assert_eq!(apps[0].used_memory_mib, Some(18_000.0));
    // The stream's processes end with the channel (at their next write).
    let bin = h.host.bin().display().to_string();
    let t = Instant::now();
    while !remote_processes(&bin).is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(remote_processes(&bin), Vec::<String>::new());
}

#[test]
fn an_older_driver_is_read_under_the_throttle_names() {
    let mut g = Gpu::busy(50);
    g.reasons = vec!["hw_thermal_slowdown"];
    let Some(h) = LiveHost::start("ready_h100", &[("FAKE_SMI_REASONS", "throttle")], &[g], &[])
    else {
        return;
    };
    let evs = watch(&h, h.sshd.port(), &fast(), |_, seen| {
        if count_gpus(seen) >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    assert!(
        matches!(
            &evs[0],
            TelemetryEvent::Connected {
                reasons: Some(ReasonNames::Throttle),
                ..
            }
        ),
        "{:?}",
        evs[0]
    );
    let g = gpus(&evs);
    assert_eq!(
        g[0][0].throttle,
        Some(vec![ThrottleReason::HwThermalSlowdown])
    );
    assert_eq!(g[0][0].util_gpu_pct, Some(50.0));
}

#[test]
fn a_driver_that_lacks_fields_streams_the_rest() {
    let mut g = Gpu::busy(70);
    g.util = "[N/A]".into();
    let Some(h) = LiveHost::start(
        "ready_h100",
        &[],
        &[g],
        &[
            "pcie.link.gen.current",
            "pcie.link.width.current",
            "clocks_event_reasons.sync_boost",
        ],
    ) else {
        return;
    };
    let evs = watch(&h, h.sshd.port(), &fast(), |_, seen| {
        if count_gpus(seen) >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    match &evs[0] {
        TelemetryEvent::Connected {
            dropped_fields,
            reasons,
            ..
        } => {
            assert_eq!(
                *reasons,
                Some(ReasonNames::Event),
                "a lacking field is not an old driver"
            );
            assert_eq!(
                dropped_fields,
                &vec![
                    "pcie.link.gen.current".to_string(),
                    "pcie.link.width.current".to_string(),
                    "clocks_event_reasons.sync_boost".to_string()
                ]
            )
        }
        other => panic!("{other:?}"),
    }
    let r = &gpus(&evs)[0][0];
    assert_eq!(r.pcie_gen, None);
    assert_eq!(r.util_gpu_pct, None, "[N/A] is unknown");
    assert_eq!(r.memory_used_mib, Some(20_000.0));
    assert_eq!(r.throttle, Some(vec![]));
}

#[test]
fn a_host_without_a_gpu_still_streams_its_cpu_and_ram() {
    let Some(h) = LiveHost::start("no_devices_vast", &[], &[], &[]) else {
        return;
    };
    let evs = watch(&h, h.sshd.port(), &fast(), |_, seen| {
        let hosts = seen
            .iter()
            .filter(|e| matches!(e, TelemetryEvent::Host { .. }))
            .count();
        if hosts >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    assert!(
        matches!(&evs[0], TelemetryEvent::GpuUnavailable { message } if message == "No devices were found"),
        "{:?}",
        evs[0]
    );
    assert!(matches!(
        &evs[1],
        TelemetryEvent::Connected { reasons: None, .. }
    ));
    assert_eq!(count_gpus(&evs), 0);
}

#[test]
fn a_cut_mid_stream_reconnects_and_the_stream_goes_on() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[Gpu::busy(33)], &[]) else {
        return;
    };
    let proxy = DelayProxy::start(
        format!("127.0.0.1:{}", h.sshd.port())
            .parse()
            .expect("addr"),
        Duration::ZERO,
    )
    .expect("proxy");
    let mut cut = false;
    let evs = watch(&h, proxy.port(), &fast(), |ev, seen| {
        if matches!(ev, TelemetryEvent::Gpus { .. }) && count_gpus(seen) == 2 && !cut {
            cut = true;
            proxy.cut();
        }
        let after = seen
            .iter()
            .skip_while(|e| !matches!(e, TelemetryEvent::Disconnected { .. }))
            .filter(|e| matches!(e, TelemetryEvent::Gpus { .. }))
            .count();
        if after >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let lost = evs
        .iter()
        .position(|e| matches!(e, TelemetryEvent::Disconnected { .. }))
        .expect("the cut is reported");
    assert!(
        evs[lost..]
            .iter()
            .any(|e| matches!(e, TelemetryEvent::Connected { attempt, .. } if *attempt >= 2)),
        "{evs:?}"
    );
    assert!(count_gpus(&evs[lost..]) >= 2);
}

#[test]
fn in_a_container_the_host_figures_are_the_cgroups_and_gpu_processes_carry_their_command() {
    // A Docker rental: /proc shows the machine (1 TiB, two busy cores), /sys/fs/cgroup the
    // container's 2-core quota and 16 GiB limit; the GPU's process has its /proc entry.
    let root = tempfile::tempdir().expect("root");
    let p = root.path();
    for d in ["proc/4242", "sys/fs/cgroup"] {
        std::fs::create_dir_all(p.join(d)).expect("dir");
    }
    let files: &[(&str, &str)] = &[
        ("proc/uptime", "5000.00 100.00\n"),
        (
            "proc/stat",
            "cpu 9000 0 0 1000 0 0 0 0 0 0\ncpu0 4500 0 0 500 0 0 0 0 0 0\ncpu1 4500 0 0 500 0 0 0 0 0 0\n",
        ),
        ("proc/meminfo", "MemTotal: 1073741824 kB\nMemAvailable: 1000 kB\n"),
        (
            "proc/4242/stat",
            "4242 (python3) R 1 4242 4242 0 -1 0 0 0 0 0 5000 100 0 0 20 0\n",
        ),
        ("proc/4242/cmdline", "/usr/local/bin/ollama\0runner\0--port\x0041077\0"),
        ("sys/fs/cgroup/cpu.max", "200000 100000\n"),
        ("sys/fs/cgroup/cpu.stat", "usage_usec 1000000\n"),
        ("sys/fs/cgroup/memory.current", "4294967296\n"),
        ("sys/fs/cgroup/memory.max", "17179869184\n"),
    ];
    for (f, text) in files {
        std::fs::write(p.join(f), text).expect("write");
    }
    let root_s = p.display().to_string();
    let Some(h) = LiveHost::start(
        "ready_h100",
        &[("GPURENT_PROC_ROOT", root_s.as_str())],
        &[Gpu::busy(0)],
        &[],
    ) else {
        return;
    };
    write_apps(&h.state(), &[(0, 4242, 9_000)]);
    let evs = watch(&h, h.sshd.port(), &fast(), |_, seen| {
        let hosts = seen
            .iter()
            .filter(|e| matches!(e, TelemetryEvent::Host { .. }))
            .count();
        let apps = seen
            .iter()
            .any(|e| matches!(e, TelemetryEvent::Apps { .. }));
        if hosts >= 2 && apps {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let host = evs
        .iter()
        .find_map(|e| match e {
            TelemetryEvent::Host { host, .. } => Some(host),
            _ => None,
        })
        .expect("host");
    assert!(host.in_container, "{host:?}");
    assert_eq!(host.cpu_limit_cores, Some(2.0));
    assert_eq!(
        host.mem_total_mib,
        Some(16_384.0),
        "the limit, not the machine's 1 TiB"
    );
    assert_eq!(host.mem_used_mib, Some(4_096.0));
    assert!(host.cores_pct.is_empty());
    let apps = evs
        .iter()
        .find_map(|e| match e {
            TelemetryEvent::Apps { apps, .. } => Some(apps),
            _ => None,
        })
        .expect("apps");
    assert_eq!(
        apps[0].command.as_deref(),
        Some("/usr/local/bin/ollama runner --port 41077")
    );
}

#[test]
fn a_link_that_dies_silently_stalls_reconnects_and_leaves_one_loop_on_the_host() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[Gpu::busy(44)], &[]) else {
        return;
    };
    let proxy = DelayProxy::start(
        format!("127.0.0.1:{}", h.sshd.port())
            .parse()
            .expect("addr"),
        Duration::ZERO,
    )
    .expect("proxy");
    let bin = h.host.bin().display().to_string();
    let loops = || {
        remote_processes("-lms")
            .into_iter()
            .filter(|l| l.contains(&bin))
            .count()
    };
    let mut dropped = false;
    let mut after_reconnect = Vec::new();
    let evs = watch(&h, proxy.port(), &fast(), |ev, seen| {
        if matches!(ev, TelemetryEvent::Gpus { .. }) && count_gpus(seen) == 2 && !dropped {
            dropped = true;
            proxy.drop_silently();
        }
        let after = seen
            .iter()
            .skip_while(|e| !matches!(e, TelemetryEvent::Disconnected { .. }))
            .filter(|e| matches!(e, TelemetryEvent::Gpus { .. }))
            .count();
        if after >= 2 {
            after_reconnect.push(loops());
        }
        if after >= 4 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let lost = evs
        .iter()
        .find_map(|e| match e {
            TelemetryEvent::Disconnected { code, .. } => Some(code.clone()),
            _ => None,
        })
        .expect("the silent drop is noticed");
    assert_eq!(lost, "stalled");
    // The silenced connection is still open on the host (sshd has heard nothing), but its loop
    // was ended by the new stream: one nvidia-smi loop, not one per connection.
    assert!(!after_reconnect.is_empty());
    assert!(
        after_reconnect.iter().all(|n| *n == 1),
        "loops on the host while streaming again: {after_reconnect:?}"
    );
}

#[test]
fn gpu_names_and_process_commands_arrive_without_terminal_controls() {
    // A host whose GPU name and GPU process carry escape sequences: OSC 0 (retitle the
    // terminal, ended by BEL), CSI 2J (clear the screen), a backspace and a C1 control.
    let hostile = "\x1b]0;pwned\x07NVIDIA \x1b[2JH100\x08 80GB\u{9b}";
    let root = tempfile::tempdir().expect("root");
    let p = root.path();
    std::fs::create_dir_all(p.join("proc/4242")).expect("dir");
    std::fs::write(
        p.join("proc/4242/stat"),
        "4242 (python3) R 1 4242 4242 0 -1 0 0 0 0 0 5000 100 0 0 20 0\n",
    )
    .expect("stat");
    std::fs::write(
        p.join("proc/4242/cmdline"),
        "python3\0train.py\0\x1b]0;owned\x07--lr\0\x1b[2J1e-4\0",
    )
    .expect("cmdline");
    let root_s = p.display().to_string();
    let Some(h) = LiveHost::start(
        "ready_h100",
        &[("GPURENT_PROC_ROOT", root_s.as_str())],
        &[Gpu::busy(5)],
        &[],
    ) else {
        return;
    };
    let csv = h.state().join("gpus.csv");
    let text = std::fs::read_to_string(&csv).expect("gpus.csv");
    std::fs::write(&csv, text.replace("NVIDIA H100 80GB HBM3", hostile)).expect("write");
    write_apps(&h.state(), &[(0, 4242, 9_000)]);
    let evs = watch(&h, h.sshd.port(), &fast(), |_, seen| {
        let apps = seen
            .iter()
            .any(|e| matches!(e, TelemetryEvent::Apps { .. }));
        if count_gpus(seen) >= 2 && apps {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let name = gpus(&evs)[0][0].name.clone().expect("name");
    assert_eq!(name, "NVIDIA H100 80GB");
    let apps = evs
        .iter()
        .find_map(|e| match e {
            TelemetryEvent::Apps { apps, .. } => Some(apps),
            _ => None,
        })
        .expect("apps");
    assert_eq!(
        apps[0].command.as_deref(),
        Some("python3 train.py --lr 1e-4")
    );
    // Nothing in any event, as the UI and the CLI's --json receive it, carries a control.
    let json = serde_json::to_string(&evs).expect("json");
    for bad in ["\\u001b", "\\u0007", "\\b", "\\u009b", "\u{9b}"] {
        assert!(!json.contains(bad), "{bad} in {json}");
    }
}

#[test]
fn a_hung_nvidia_smi_leaves_cpu_and_ram_streaming_at_the_start_and_mid_stream() {
    // At the start: the first query never answers (a GPU off the bus).
    let Some(h) = LiveHost::start(
        "ready_h100",
        &[("FAKE_SMI", "hang"), ("FAKE_SMI_HANG_S", "40")],
        &[],
        &[],
    ) else {
        return;
    };
    let t = Instant::now();
    let evs = watch(&h, h.sshd.port(), &fast(), |_, seen| {
        let hosts = seen
            .iter()
            .filter(|e| matches!(e, TelemetryEvent::Host { host, .. } if host.cpu_pct.is_some()))
            .count();
        if hosts >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "host figures within the query's limit, not after a reconnect loop: {:?}",
        t.elapsed()
    );
    let msg = evs
        .iter()
        .find_map(|e| match e {
            TelemetryEvent::GpuUnavailable { message } => Some(message.clone()),
            _ => None,
        })
        .expect("the GPU is reported unavailable");
    assert!(msg.contains("did not answer"), "{msg}");
    assert!(
        !evs.iter()
            .any(|e| matches!(e, TelemetryEvent::Disconnected { .. })),
        "{evs:?}"
    );
    drop(h);

    // Mid-stream: rows stop while the host loop goes on; then they come back.
    let Some(h) = LiveHost::start(
        "ready_h100",
        &[("FAKE_SMI_HANG_S", "6")],
        &[Gpu::busy(30)],
        &[],
    ) else {
        return;
    };
    let state = h.state();
    let evs = watch(&h, h.sshd.port(), &fast(), |ev, seen| {
        if matches!(ev, TelemetryEvent::Gpus { .. }) && count_gpus(seen) == 1 {
            std::fs::write(state.join("hang"), "").expect("hang");
        }
        if matches!(ev, TelemetryEvent::GpuUnavailable { .. }) {
            let _ = std::fs::remove_file(state.join("hang"));
        }
        let unavailable = seen
            .iter()
            .position(|e| matches!(e, TelemetryEvent::GpuUnavailable { .. }));
        let hosts_after = unavailable.map_or(0, |i| {
            seen[i..]
                .iter()
                .filter(|e| matches!(e, TelemetryEvent::Host { .. }))
                .count()
        });
        if hosts_after >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    let i = evs
        .iter()
        .position(|e| matches!(e, TelemetryEvent::GpuUnavailable { .. }))
        .expect("reported unavailable mid-stream");
    assert!(count_gpus(&evs[..i]) >= 1, "rows came first");
    assert!(
        !evs.iter()
            .any(|e| matches!(e, TelemetryEvent::Disconnected { .. })),
        "the host side did not stall: {evs:?}"
    );
}

#[test]
fn a_watch_of_a_host_deleted_while_watched_ends_with_unknown_host() {
    use gpurent_core::app::monitor::{WatchOptions, HOST_RECHECK};
    use gpurent_core::infra::clock::Clock;
    use gpurent_core::infra::ipc::Coded;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    /// The process's monotonic clock plus what the test stepped it by.
    struct Stepped(AtomicU64);
    impl Clock for Stepped {
        fn now_unix_ms(&self) -> i64 {
            1_000
        }
        fn monotonic(&self) -> Duration {
            SystemClock.monotonic() + Duration::from_millis(self.0.load(Ordering::SeqCst))
        }
    }
    let Some(h) = LiveHost::start("ready_h100", &[], &[Gpu::busy(20)], &[]) else {
        return;
    };
    let clock = Arc::new(Stepped(AtomicU64::new(0)));
    let w = remote_common::world_with(clock.clone());
    let key = remote_common::login_key(&h.key, "laptop");
    remote_common::add_confirmed(&w, "box", remote_common::spec(&h.sshd), Some(&key));
    let opts = WatchOptions {
        stream: fast(),
        ..WatchOptions::default()
    };
    // The recheck is read on the App's clock: deleted, then the clock stepped past HOST_RECHECK,
    // the watch ends at the next sample (before it reaches us). It used to be timed: ended within
    // HOST_RECHECK + 3 s of wall time, which a loaded machine could exceed.
    let t = Instant::now();
    let mut after_delete = 0;
    let mut deleted = false;
    let r = w.app.monitor_watch(
        "box",
        &w.env,
        Some(&key),
        &opts,
        &mut |_| {
            // A hang guard only: a watch that never rechecks runs on.
            assert!(t.elapsed() < Duration::from_secs(60), "the watch ran on");
            if deleted {
                after_delete += 1;
            } else {
                w.app.host_delete("box", &w.env).expect("delete");
                clock
                    .0
                    .fetch_add(HOST_RECHECK.as_millis() as u64, Ordering::SeqCst);
                deleted = true;
            }
            Flow::Continue
        },
        &CancelToken::new(),
    );
    let e = r.expect_err("the watch ends");
    assert_eq!(e.code(), "unknown_host", "{e:?}");
    assert!(deleted);
    assert_eq!(
        after_delete, 0,
        "the first sample past HOST_RECHECK read the host again"
    );
}
