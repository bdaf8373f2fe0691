//! Benchmark (not a test): telemetry from many fake GPU hosts on loopback at 1 Hz, and what it
//! costs this process: CPU time (user + system, all threads, from `/proc/self/stat`) over wall time.
//! Target: under 5 % of one core for 32 hosts.
//!
//! ```sh
//! scripts/bench-monitor.sh            # 32 hosts, 30 s
//! cargo run --release -p gpurent-core --example monitor_bench -- HOSTS SECONDS GPUS_PER_HOST
//! ```
//!
//! Each host is a fake GPU host of `tests/fakegpu` (live mode) behind its own real loopback sshd;
//! needs root, `/usr/sbin/sshd` and the `gputest` user (`scripts/setup-test-host.sh`). The hosts'
//! side (sshd, the fake `nvidia-smi`, the `/proc` loop) runs on this machine too but is not counted.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::secret::Secret;
use gpurent_core::monitor::stream::{run, Flow, StreamOptions, TelemetryEvent};
use gpurent_core::remote::{connect, Auth, ConnectOptions, Endpoint};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::UserKey;

/// User + system time of this process (all threads), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = &stat[stat.rfind(')').expect("stat") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    ticks / 100.0 // USER_HZ is 100 on Linux
}

fn gpus_csv(n: usize, t: u64) -> String {
    let mut s = String::from("index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm,pcie.link.gen.current,pcie.link.width.current,clocks_event_reasons.gpu_idle,clocks_event_reasons.applications_clocks_setting,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost\n");
    for i in 0..n {
        s += &format!("{i},GPU-{i}-bench,NVIDIA H100 80GB HBM3,{},30,40000,81559,60,550.00,700.00,1980,5,16,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active\n", 50 + (t as usize + i) % 50);
    }
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hosts: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(32);
    let secs: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(30);
    let gpus: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(2);
    if !gpurent_testhost::sshd_available() {
        eprintln!("monitor_bench: needs root, /usr/sbin/sshd and the gputest user");
        std::process::exit(2);
    }
    let fakegpu = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakegpu");
    let key = UserKey::generate("bench").expect("key");
    let mut rigs = Vec::new();
    for _ in 0..hosts {
        let host = FakeHost::new(&fakegpu, "ready_h100").expect("fake host");
        std::fs::write(host.dir.path().join("state/gpus.csv"), gpus_csv(gpus, 0)).expect("gpus");
        let sshd = host.serve().expect("sshd");
        sshd.authorize(&key.public_line).expect("authorize");
        rigs.push((host, sshd));
    }
    eprintln!("{hosts} fake hosts up ({gpus} GPUs each); streaming at 1 Hz…");
    let cancel = CancelToken::new();
    let samples = Arc::new(AtomicU64::new(0));
    let opts = StreamOptions {
        interval_ms: 1000,
        ..StreamOptions::default()
    };
    let copts = ConnectOptions {
        dns_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        handshake_timeout: Duration::from_secs(30),
        io_timeout: Duration::from_secs(30),
    };
    std::thread::scope(|s| {
        for (_, sshd) in &rigs {
            let (cancel, samples, opts, copts, key) =
                (&cancel, samples.clone(), &opts, &copts, &key);
            let ep = Endpoint::new(sshd.host(), sshd.port(), sshd.user());
            s.spawn(move || {
                let pem = Secret::new(key.private_pem.clone());
                let r = run(
                    &mut |c| {
                        let mut ok = |_: gpurent_core::remote::Role, _: &Endpoint, _: &gpurent_core::remote::hostkey::PresentedKey| Ok(());
                        connect(&ep, None, Auth::Key(&pem), copts, &mut ok, c)
                    },
                    opts,
                    &SystemClock,
                    &mut |ev| {
                        match ev {
                            TelemetryEvent::Gpus { .. } => {
                                samples.fetch_add(1, Ordering::Relaxed);
                            }
                            TelemetryEvent::Disconnected { message, .. } => eprintln!("lost: {message}"),
                            _ => {}
                        }
                        Flow::Continue
                    },
                    cancel,
                );
                if let Err(e) = r {
                    eprintln!("stream ended: {e}");
                }
            });
        }
        // Warm up: every host connected and sampling.
        let warm = Instant::now();
        while samples.load(Ordering::Relaxed) < 2 * hosts as u64
            && warm.elapsed() < Duration::from_secs(120)
        {
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(2));
        let (c0, n0, t0) = (
            cpu_seconds(),
            samples.load(Ordering::Relaxed),
            Instant::now(),
        );
        // Change the rows every second so every sample carries new values.
        for t in 1..=secs {
            std::thread::sleep(Duration::from_secs(1));
            for (host, _) in &rigs {
                let p = host.dir.path().join("state/gpus.csv");
                let tmp = p.with_extension("tmp");
                let _ =
                    std::fs::write(&tmp, gpus_csv(gpus, t)).and_then(|_| std::fs::rename(&tmp, &p));
            }
        }
        let (c1, n1, wall) = (
            cpu_seconds(),
            samples.load(Ordering::Relaxed),
            t0.elapsed().as_secs_f64(),
        );
        cancel.cancel();
        let cpu = c1 - c0;
        println!(
            "hosts={hosts} gpus_per_host={gpus} wall_s={wall:.1} samples={} (expected ~{}) cpu_s={cpu:.2} cpu/wall={:.2}% of one core",
            n1 - n0,
            hosts as u64 * secs,
            100.0 * cpu / wall
        );
    });
}
