//! `gpurent watch` as a black box against a fake GPU host on a real loopback sshd (the fake
//! `nvidia-smi` of `gpurent-core/tests/fakegpu` in live mode): one JSON object per line, the
//! documented sample shape, changing rows, a hint, `--samples` stops, bad input is exit 2.

mod cli_common;

use std::path::{Path, PathBuf};
use std::process::Output;

use cli_common::{gpurent, saved_host};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::{sshd_available, Sshd};

fn lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn fakegpu() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpurent-core/tests/fakegpu")
}

const COLS: &str = "index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm,pcie.link.gen.current,pcie.link.width.current,clocks_event_reasons.gpu_idle,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_thermal_slowdown";

/// A GPU idling while a process holds 40 GiB (the stalled-job hint).
fn stalled(util: u32) -> String {
    format!("{COLS}\n0,GPU-0-live,NVIDIA H100 80GB HBM3,{util},0,40000,81559,34,65.10,700.00,345,5,16,Active,Not Active,Not Active\n")
}

/// A fake live host saved as `box` through the CLI; the login key as a file (`-i`).
fn live_box() -> (FakeHost, Sshd, tempfile::TempDir, String) {
    let mut host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    // The host's /proc as fixed files (this machine's own CPU load would make the hints vary):
    // counters that do not move, so no CPU rate, and 64 GiB of RAM.
    let proc = host.dir.path().join("fakeproc");
    std::fs::create_dir_all(proc.join("proc/net")).expect("proc");
    for (f, text) in [
        ("uptime", "5000.00 9000.00\n"),
        ("stat", "cpu  100 0 100 5000 0 0 0 0 0 0\ncpu0 50 0 50 2500 0 0 0 0 0 0\ncpu1 50 0 50 2500 0 0 0 0 0 0\n"),
        ("meminfo", "MemTotal:       67108864 kB\nMemAvailable:   33554432 kB\n"),
        ("diskstats", " 259 0 nvme0n1 10 0 2048 0 20 0 4096 0 0 0 0\n"),
        ("net/dev", "Inter-|\n face |\n  eth0: 1000 1 0 0 0 0 0 0 2000 1 0 0 0 0 0 0\n"),
    ] {
        std::fs::write(proc.join("proc").join(f), text).expect("proc file");
    }
    host.vars
        .insert("GPURENT_PROC_ROOT".into(), proc.display().to_string());
    let state = host.dir.path().join("state");
    std::fs::write(state.join("gpus.csv"), stalled(0)).expect("gpus");
    std::fs::write(
        state.join("apps.csv"),
        "gpu_uuid,pid,used_memory\nGPU-0-live,4242,40000\n",
    )
    .expect("apps");
    let sshd = host.serve().expect("serve");
    let (home, id) = saved_host(&sshd, "watch", "box");
    (host, sshd, home, id)
}

#[test]
fn watch_prints_one_json_sample_per_line_with_gpus_cpu_and_hints() {
    if !sshd_available() {
        return;
    }
    let (_host, _sshd, home, id) = live_box();
    let out = gpurent(
        home.path(),
        &[
            "watch",
            "box",
            "--json",
            "--samples",
            "8",
            "--interval-ms",
            "200",
            "-i",
            &id,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let l = lines(&out);
    assert_eq!(l[0]["kind"], "connected");
    assert_eq!(l[0]["reasons"], "event");
    let samples: Vec<&serde_json::Value> = l.iter().filter(|v| v["kind"] == "sample").collect();
    assert_eq!(samples.len(), 8, "--samples 8");
    let s = samples.last().expect("sample");
    assert_eq!(s["host"], "box");
    assert!(s["at_ms"].as_i64().is_some_and(|t| t > 0));
    let g = &s["gpus"][0];
    assert_eq!(g["index"], 0);
    assert_eq!(g["uuid"], "GPU-0-live");
    assert_eq!(g["util_gpu_pct"], 0.0);
    assert_eq!(g["memory_used_mib"], 40000.0);
    assert_eq!(g["memory_total_mib"], 81559.0);
    assert_eq!(g["temperature_c"], 34.0);
    assert_eq!(g["power_draw_w"], 65.1);
    assert_eq!(g["power_limit_w"], 700.0);
    assert_eq!(g["throttle"], serde_json::json!(["gpu_idle"]));
    assert_eq!(s["cpu"]["mem_total_mib"], 65536.0);
    assert_eq!(s["cpu"]["mem_used_mib"], 32768.0);
    assert_eq!(s["cpu"]["uptime_s"], 5000.0);
    assert_eq!(s["cpu"]["disk_read_bytes"], 2048 * 512);
    assert_eq!(s["cpu"]["net_tx_bytes"], 2000);
    assert_eq!(
        s["cpu"]["cpu_pct"],
        serde_json::Value::Null,
        "counters did not move"
    );
    assert_eq!(s["cpu"]["cores_pct"], serde_json::json!([]));
    assert!(samples.iter().any(|s| s["apps"][0]["pid"] == 4242));
    let hint = &s["hints"][0];
    assert_eq!(hint["kind"], "idle_with_memory", "{s}");
    assert_eq!(hint["key"], "monitor.hint.idle_with_memory");
    assert_eq!(hint["heuristic"], true);
    assert_eq!(hint["gpu"], 0);
    assert!(hint["next_steps"].as_array().is_some_and(|s| !s.is_empty()));
}

#[test]
fn watch_text_shows_the_rows_and_bad_input_is_exit_2() {
    if !sshd_available() {
        return;
    }
    let (_host, _sshd, home, id) = live_box();
    let out = gpurent(
        home.path(),
        &[
            "watch",
            "box",
            "--samples",
            "2",
            "--interval-ms",
            "200",
            "-i",
            &id,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("gpu0"), "{text}");
    assert!(text.contains("40000 / 81559 MiB"), "{text}");
    assert!(text.contains("[gpu_idle]"), "{text}");
    assert!(text.contains("ram 32768 / 65536 MiB"), "{text}");

    let bad = gpurent(
        home.path(),
        &["watch", "box", "--json", "--interval-ms", "5"],
    );
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert_eq!(lines(&bad)[0]["error"]["code"], "invalid_input");
    let unknown = gpurent(home.path(), &["watch", "nope", "--json", "-i", &id]);
    assert_eq!(unknown.status.code(), Some(1), "{unknown:?}");
    assert!(lines(&unknown)[0]["error"]["code"].is_string());
}
