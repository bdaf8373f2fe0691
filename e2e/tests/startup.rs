//! Startup and memory of the real app next to a bare Tauri window, measured the same way, in one
//! run. Not a pass/fail test (speed targets live in benchmarks, not timed tests): it is ignored by
//! default and run by `scripts/measure-startup.sh`, which prints the table.
//!
//! - first paint: the page's `first-contentful-paint` (Paint Timing) relative to the app process's
//!   start time from /proc (10 ms resolution).
//! - ready: for gpurent, the `gpurent-ready` performance mark the UI sets once the first screen is
//!   rendered from Rust data; for the bare window, its load event.
//! - PSS: the sum of `Pss` over the app and all its child processes (WebKit web and network
//!   processes), 3 s after ready. PSS splits shared pages fairly, unlike RSS.

mod harness;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use harness::{app_binary, Session};

const RUNS: usize = 5;

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// (pid, ppid, start ticks) for every process.
fn processes() -> Vec<(u32, u32, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = read(format!("/proc/{pid}/stat"));
        // Fields after the ")" that closes the command name: state ppid ... starttime (22nd overall).
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() > 19 {
                if let (Ok(ppid), Ok(start)) = (f[1].parse(), f[19].parse()) {
                    out.push((pid, ppid, start));
                }
            }
        }
    }
    out
}

fn descendants(root: u32, procs: &[(u32, u32, u64)]) -> Vec<u32> {
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let p = all[i];
        all.extend(
            procs
                .iter()
                .filter(|(_, pp, _)| *pp == p)
                .map(|(c, _, _)| *c),
        );
        i += 1;
    }
    all
}

fn pss_kib(pid: u32) -> u64 {
    read(format!("/proc/{pid}/smaps_rollup"))
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Epoch milliseconds at which a process started.
fn start_epoch_ms(start_ticks: u64) -> f64 {
    let uptime_s: f64 = read("/proc/uptime")
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("uptime");
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
        * 1000.0;
    let boot_ms = now_ms - uptime_s * 1000.0;
    boot_ms + start_ticks as f64 * 10.0 // USER_HZ is 100 on Linux
}

struct Sample {
    first_paint_ms: f64,
    ready_ms: f64,
    pss_mib: f64,
}

async fn measure(binary: &Path, ready_mark: &str) -> Sample {
    let s = Session::start_app(binary).await;
    let procs = processes();
    let (app_pid, _, start_ticks) = *procs
        .iter()
        .find(|(_, ppid, _)| *ppid == s.driver.id())
        .expect("app process under WebKitWebDriver");
    let script = format!(
        "const done = arguments[0];
         const poll = () => {{
           const p = performance.getEntriesByName('first-contentful-paint')[0];
           const r = {ready_mark};
           if (p && r !== undefined) done([performance.timeOrigin, p.startTime, r]);
           else setTimeout(poll, 20);
         }};
         poll();"
    );
    let v = s
        .client
        .execute_async(&script, vec![])
        .await
        .expect("paint timing");
    let nums: Vec<f64> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect();
    let start = start_epoch_ms(start_ticks);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let procs = processes();
    let pss: u64 = descendants(app_pid, &procs).into_iter().map(pss_kib).sum();
    let sample = Sample {
        first_paint_ms: nums[0] + nums[1] - start,
        ready_ms: nums[0] + nums[2] - start,
        pss_mib: pss as f64 / 1024.0,
    };
    s.finish().await;
    sample
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::test]
#[ignore = "measurement, not a test: run scripts/measure-startup.sh"]
async fn startup_and_memory_vs_bare_window() {
    let gpurent = app_binary("gpurent-app");
    let bare = app_binary("bare-window");
    const GPURENT_READY: &str =
        "(performance.getEntriesByName('gpurent-ready')[0] || {}).startTime";
    const BARE_READY: &str =
        "(performance.getEntriesByType('navigation')[0] || {}).loadEventEnd || undefined";
    let (mut g, mut b) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        // Alternate, so drift in machine load hits both alike.
        g.push(measure(&gpurent, GPURENT_READY).await);
        b.push(measure(&bare, BARE_READY).await);
    }
    let row = |name: &str, v: &[Sample]| {
        let fp = median(v.iter().map(|s| s.first_paint_ms).collect());
        let rd = median(v.iter().map(|s| s.ready_ms).collect());
        let pss = median(v.iter().map(|s| s.pss_mib).collect());
        println!("| {name} | {fp:.0} | {rd:.0} | {pss:.0} |");
        (fp, rd, pss)
    };
    println!("\nmedians of {RUNS} alternating runs (ms from process start; MiB)");
    println!("| app | first paint ms | ready ms | PSS MiB |");
    println!("|---|---|---|---|");
    let (gf, gr, gp) = row("gpurent", &g);
    let (bf, br, bp) = row("bare Tauri window", &b);
    println!(
        "ratios gpurent/bare: first paint {:.2}, ready {:.2}, PSS {:.2}",
        gf / bf,
        gr / br,
        gp / bp
    );
    assert!(gf > 0.0 && bf > 0.0 && gp > 0.0 && bp > 0.0, "measurements");
}
