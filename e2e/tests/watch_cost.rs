//! What watching costs end to end: the core's streams + the IPC + the WebView drawing the Monitor,
//! for 8 and then 32 hosts at 1 Hz (issue 20). Not a pass/fail test (speed targets live in
//! benchmarks, not timed tests): ignored by default and run by `bench/watch-e2e.sh`, which runs
//! the core-only benchmark (`monitor_bench`) beside it in the same session and prints the ratios.
//!
//! The app is the RELEASE build (`target/release/gpurent-app`, started through WebKitWebDriver
//! like every journey); the journey itself and the CLI may be debug builds (not measured).
//! Each host is a fake GPU host (`tests/fakegpu`, live mode, 2 GPUs whose rows change every
//! second, the machine's own `/proc`) behind its own real loopback sshd, exactly like
//! `monitor_bench`. The key and the hosts are saved with the CLI into the app's home and keychain
//! (32 pastes through the Hosts step would take minutes); the Monitor then ticks each host, as a
//! user does (one checkbox per host, one column each).
//!
//! Measured: utime + stime from `/proc/PID/stat` of the app process and every descendant
//! (WebKitWebProcess, WebKitNetworkProcess, a sandbox's bwrap if any) over SECONDS of wall time,
//! with no WebDriver call in between (the driver sits idle); % of one core per process and in
//! total, how many columns were in view and how many samples the columns drew meanwhile
//! (`data-samples` of each column; a column out of view is streamed but not drawn).

mod harness;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::Session;

const GPUS: usize = 2;

fn fakegpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/gpurent-core/tests/fakegpu")
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The same rows as `monitor_bench`: `n` H100s whose utilisation moves every second.
fn gpus_csv(n: usize, t: u64) -> String {
    let mut s = String::from("index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm,pcie.link.gen.current,pcie.link.width.current,clocks_event_reasons.gpu_idle,clocks_event_reasons.applications_clocks_setting,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost\n");
    for i in 0..n {
        s += &format!("{i},GPU-{i}-bench,NVIDIA H100 80GB HBM3,{},30,40000,81559,60,550.00,700.00,1980,5,16,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active\n", 50 + (t as usize + i) % 50);
    }
    s
}

fn write_atomic(path: &Path, text: &str) -> bool {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .is_ok()
}

/// Rewrite every host's rows once a second until `stop`.
fn drive(states: Vec<PathBuf>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut t = 0;
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_secs(1));
            t += 1;
            for s in &states {
                write_atomic(&s.join("gpus.csv"), &gpus_csv(GPUS, t));
            }
        }
    })
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// (pid, ppid, command name, utime + stime in ticks) of every process.
fn processes() -> Vec<(u32, u32, String, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = read(format!("/proc/{pid}/stat"));
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        // After ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if f.len() > 12 {
            if let (Ok(ppid), Ok(u), Ok(s)) =
                (f[1].parse(), f[11].parse::<u64>(), f[12].parse::<u64>())
            {
                out.push((pid, ppid, comm, u + s));
            }
        }
    }
    out
}

/// The app (the driver's child) and everything below it: pid → (name, CPU ticks).
fn app_tree(driver: u32) -> BTreeMap<u32, (String, u64)> {
    let procs = processes();
    let mut tree = vec![];
    let mut queue: Vec<u32> = procs
        .iter()
        .filter(|p| p.1 == driver)
        .map(|p| p.0)
        .collect();
    while let Some(p) = queue.pop() {
        tree.push(p);
        queue.extend(procs.iter().filter(|c| c.1 == p).map(|c| c.0));
    }
    procs
        .into_iter()
        .filter(|p| tree.contains(&p.0))
        .map(|p| (p.0, (p.2, p.3)))
        .collect()
}

/// The columns' `data-samples` (samples drawn so far), summed over the ticked hosts.
async fn drawn_samples(s: &Session) -> u64 {
    let v = s
        .client
        .execute(
            "return [...document.querySelectorAll('#monitor-cols .host-col')].map((c) => Number(c.dataset.samples || 0)).reduce((a, b) => a + b, 0)",
            vec![],
        )
        .await
        .expect("read the columns");
    v.as_u64().unwrap_or(0)
}

fn load_average() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tick hosts `from..to` (1-based labels `wN`) and wait until each column drew 2 samples.
async fn watch(s: &Session, from: usize, to: usize) {
    for i in from..=to {
        s.click(&format!("#monitor-hosts input[data-host='w{i}']"))
            .await;
    }
    s.wait_css(&format!("#monitor-cols[data-count='{to}']"))
        .await;
    let deadline = Instant::now() + Duration::from_secs(120);
    for i in 1..=to {
        let col = format!(".host-col[data-host='w{i}']");
        // A column out of view is not drawn (its samples wait): bring each one into view.
        s.scroll_to(&col).await;
        loop {
            let n: u64 = s
                .client
                .execute(
                    "const c = document.querySelector(arguments[0]); return c ? Number(c.dataset.samples || 0) : 0",
                    vec![serde_json::Value::String(col.clone())],
                )
                .await
                .ok()
                .and_then(|v| v.as_u64())
                .unwrap_or(0);
            if n >= 2 {
                break;
            }
            if Instant::now() > deadline {
                s.screenshot(&format!("watch-cost-stuck-w{i}")).await;
                panic!(
                    "{col} drew no samples in 120 s; its status: {}",
                    s.text(&format!("{col} .status")).await
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        s.wait_css(&format!("{col} svg.chart[data-metric='util']"))
            .await;
    }
    // Measured as a user sees the Monitor: scrolled to its first columns.
    s.scroll_to("#monitor-cols").await;
}

/// How many columns are (at least partly) in the window: only those are drawn.
async fn columns_in_view(s: &Session) -> u64 {
    s.client
        .execute(
            "return [...document.querySelectorAll('#monitor-cols .host-col')].filter((c) => { const r = c.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth; }).length",
            vec![],
        )
        .await
        .ok()
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// Hide (or show again) the columns: hidden, the samples still arrive and go into the history
/// (IPC + the script's handling) but nothing is laid out or painted (the pace draws only what
/// is in view).
async fn hide_columns(s: &Session, hide: bool) {
    s.client
        .execute(
            "document.getElementById('monitor-cols').hidden = arguments[0]",
            vec![serde_json::Value::Bool(hide)],
        )
        .await
        .expect("hide the columns");
    tokio::time::sleep(Duration::from_secs(3)).await;
}

/// `perf record` of the app's process whose name starts with `comm` (`WebKitWebProc`,
/// `gpurent-app`) for `secs` into `dir/NAME.data` (where asked: `GPURENT_BENCH_PERF=DIR`); after
/// the measurements, so it disturbs none.
fn perf_record(s: &Session, comm: &str, dir: &Path, name: &str, secs: u64) {
    let tree = app_tree(s.driver.id());
    let Some((pid, _)) = tree.iter().find(|(_, (n, _))| n.starts_with(comm)) else {
        eprintln!("no {comm} under the app: {tree:?}");
        return;
    };
    let out = dir.join(format!("{name}.data"));
    let status = std::process::Command::new("perf")
        .args(["record", "-F", "499", "-g", "-p", &pid.to_string(), "-o"])
        .arg(&out)
        .args(["--", "sleep", &secs.to_string()])
        .status();
    eprintln!("perf record {name}: {status:?} -> {}", out.display());
}

/// CPU of the app's processes over `secs` of wall time; prints one row per process and the total.
/// `kind` names the figure on its RESULT line: `e2e` (the measurement) or `split-…` (the
/// breakdown, `GPURENT_BENCH_SPLIT=1`).
async fn measure(s: &Session, kind: &str, hosts: usize, secs: u64) {
    let driver = s.driver.id();
    let (load0, n0) = (load_average(), drawn_samples(s).await);
    let before = app_tree(driver);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let after = app_tree(driver);
    let wall = t0.elapsed().as_secs_f64();
    let (load1, n1) = (load_average(), drawn_samples(s).await);
    let in_view = columns_in_view(s).await;
    let mut total = 0.0;
    println!(
        "\n{kind}, {hosts} hosts x {GPUS} GPUs, Monitor open: {wall:.1} s wall, {in_view} columns in view, {} samples drawn (expected ~{} for the columns in view; the others are streamed but not drawn), load average {load0} -> {load1}",
        n1.saturating_sub(n0),
        in_view * secs
    );
    println!("| process | pid | CPU s | % of one core |");
    println!("|---|---|---|---|");
    for (pid, (name, ticks)) in &after {
        // A process that started during the window counts from its start.
        let start = before.get(pid).map(|b| b.1).unwrap_or(0);
        let cpu = ticks.saturating_sub(start) as f64 / 100.0; // USER_HZ is 100 on Linux
        total += cpu;
        println!(
            "| {name} | {pid} | {cpu:.2} | {:.2} % |",
            100.0 * cpu / wall
        );
    }
    println!("| total | | {total:.2} | {:.2} % |", 100.0 * total / wall);
    println!(
        "RESULT {kind} hosts={hosts} gpus_per_host={GPUS} wall_s={wall:.1} in_view={in_view} cpu_s={total:.2} cpu/wall={:.2}% of one core",
        100.0 * total / wall
    );
}

#[tokio::test]
#[ignore = "benchmark, not a test: run bench/watch-e2e.sh"]
async fn watch_cost_8_then_32_hosts() {
    if !gpurent_testhost::sshd_available() {
        panic!("needs root, /usr/sbin/sshd and the gputest user (scripts/setup-test-host.sh)");
    }
    let small = env_num("GPURENT_BENCH_HOSTS_SMALL", 8) as usize;
    let large = env_num("GPURENT_BENCH_HOSTS", 32) as usize;
    let secs = env_num("GPURENT_BENCH_SECONDS", 30);
    // The release app next to this journey's own (debug) target dir: target/release/gpurent-app.
    let exe = std::env::current_exe().expect("current exe");
    let target = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .expect("target dir");
    let app = std::env::var_os("GPURENT_BENCH_APP")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("release/gpurent-app"));
    assert!(
        app.exists(),
        "{} is missing: cargo build --release -p gpurent-app",
        app.display()
    );
    let cli = harness::app_binary("gpurent");

    let mut rigs = Vec::new();
    for _ in 0..large {
        let host = gpurent_testhost::fakegpu::FakeHost::new(&fakegpu_dir(), "ready_h100")
            .expect("fake host");
        let state = host.dir.path().join("state");
        std::fs::create_dir_all(&state).expect("state dir");
        write_atomic(&state.join("gpus.csv"), &gpus_csv(GPUS, 0));
        let sshd = host.serve().expect("sshd");
        rigs.push((host, sshd));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let driver = drive(
        rigs.iter()
            .map(|(h, _)| h.dir.path().join("state"))
            .collect(),
        stop.clone(),
    );
    eprintln!("{large} fake hosts up ({GPUS} GPUs each)");

    let s = Session::start_app(&app).await;
    s.wait_css("body[data-ready='true']").await;
    let gpurent = |args: &[&str]| {
        let out = std::process::Command::new(&cli)
            .args(args)
            .arg("--json")
            .env("GPURENT_HOME", s.home.path())
            .env_remove("SSH_AUTH_SOCK")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run gpurent");
        assert!(
            out.status.success(),
            "gpurent {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON document")
    };
    let key = gpurent(&["key", "new", "laptop"]);
    let public = key["key"]["public_key"]
        .as_str()
        .expect("public key")
        .to_string();
    for (i, (_, sshd)) in rigs.iter().enumerate() {
        sshd.authorize(&public).expect("authorize");
        let fp = sshd.host_key_fingerprint().expect("fingerprint");
        let paste = format!("ssh -p {} {}@{}", sshd.port(), sshd.user(), sshd.host());
        let label = format!("w{}", i + 1);
        gpurent(&[
            "host", "add", &paste, "--label", &label, "--key", "laptop", "--trust", &fp,
        ]);
    }

    s.click("#nav-monitor").await;
    s.wait_css(&format!("#monitor-hosts input[data-host='w{large}']"))
        .await;
    // GPURENT_BENCH_SPLIT=1: where the WebView's share goes — the Monitor open with no column,
    // and the SMALL columns hidden (samples received, nothing drawn) beside drawn.
    let split = std::env::var_os("GPURENT_BENCH_SPLIT").is_some();
    if split {
        tokio::time::sleep(Duration::from_secs(3)).await;
        measure(&s, "split-idle", 0, secs).await;
    }
    watch(&s, 1, small).await;
    // Settle: every column drawing, the first-connection work done.
    tokio::time::sleep(Duration::from_secs(3)).await;
    s.scroll_to("#monitor-cols").await;
    s.screenshot(&format!("watch-cost-{small}")).await;
    measure(&s, "e2e", small, secs).await;
    if split {
        hide_columns(&s, true).await;
        measure(&s, "split-hidden", small, secs).await;
        hide_columns(&s, false).await;
    }
    // GPURENT_BENCH_CSS="RULE|RULE…": each rule added to the page's first style sheet through the
    // CSSOM (the CSP governs style elements and attributes, not the CSSOM), measured, removed.
    for rule in std::env::var("GPURENT_BENCH_CSS")
        .unwrap_or_default()
        .split('|')
        .filter(|r| !r.trim().is_empty())
    {
        s.client
            .execute(
                "const sh = [...document.styleSheets].find((x) => x.href && x.href.includes('monitor')) || document.styleSheets[0]; sh.insertRule(arguments[0], sh.cssRules.length)",
                vec![serde_json::Value::String(rule.to_string())],
            )
            .await
            .expect("insert the rule");
        tokio::time::sleep(Duration::from_secs(3)).await;
        println!("\nwith the rule: {rule}");
        measure(&s, "split-css", small, secs).await;
        s.client
            .execute(
                "const sh = [...document.styleSheets].find((x) => x.href && x.href.includes('monitor')) || document.styleSheets[0]; sh.deleteRule(sh.cssRules.length - 1)",
                vec![],
            )
            .await
            .expect("remove the rule");
    }
    if let Some(dir) = std::env::var_os("GPURENT_BENCH_PERF").map(PathBuf::from) {
        std::fs::create_dir_all(&dir).expect("perf dir");
        perf_record(&s, "WebKitWebProc", &dir, &format!("drawn-{small}"), secs);
        perf_record(&s, "gpurent-app", &dir, &format!("app-drawn-{small}"), secs);
        hide_columns(&s, true).await;
        perf_record(&s, "WebKitWebProc", &dir, &format!("hidden-{small}"), secs);
        hide_columns(&s, false).await;
    }

    watch(&s, small + 1, large).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    s.scroll_to("#monitor-cols").await;
    s.screenshot(&format!("watch-cost-{large}")).await;
    measure(&s, "e2e", large, secs).await;

    s.finish().await;
    stop.store(true, Ordering::SeqCst);
    driver.join().expect("driver thread");
}
