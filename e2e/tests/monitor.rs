//! The Monitor step in the real app: a saved host on the real loopback sshd whose fake
//! `nvidia-smi` streams changing rows (live mode, `state/gpus.csv` rewritten every 250 ms) and
//! whose `/proc` (under `GPURENT_PROC_ROOT`) shows one CPU core saturated while the GPU waits —
//! a data-loader-bound job (as `tests/monitor_traces/data_loader_bound.csv`). The charts must
//! move and the data-loader hint appear with its evidence; then the Run tab pulls a model from
//! the fake `ollama` until the progress bar reaches 100 %.
//!
//! Run: `cargo build -p gpurent-app && bash scripts/e2e.sh monitor`.

mod harness;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::{add_host_at, add_key_and_host, Session};

fn fakegpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/gpurent-core/tests/fakegpu")
}

/// nvidia-smi's query names, as the fake reads them from the live file.
const COLUMNS: &str = "index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm,pcie.link.gen.current,pcie.link.width.current,clocks_event_reasons.gpu_idle,clocks_event_reasons.applications_clocks_setting,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost";
const UUID: &str = "GPU-00000000-fake-live";
const CORES: usize = 8;

fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write live state");
    std::fs::rename(&tmp, path).expect("rename live state");
}

/// The live file with one GPU at these values, holding 30 GB.
fn gpu_file(util: f64, power: f64, temp: f64) -> String {
    format!(
        "{COLUMNS}\n0,{UUID},NVIDIA H100 80GB HBM3,{util:.0},9,30145,81559,{temp:.0},{power:.2},700.00,1980,5,16,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active\n"
    )
}

/// The GPU at `t` seconds: utilisation wanders between 12 and 34 % (below the hint's 40 %);
/// power and temperature follow.
fn gpus_csv(t: f64) -> String {
    gpu_file(
        23.0 + 11.0 * (t * 0.9).sin(),
        150.0 + 40.0 * (t * 0.7).cos(),
        46.0 + 4.0 * (t * 0.3).sin(),
    )
}

/// `/proc/stat` after `t` seconds at 100 ticks/s: core 0 ~98 % busy (the main process decodes
/// and augments), the others ~8 %.
fn proc_stat(t: f64) -> String {
    let ticks = |share: f64| {
        (
            (100.0 * t * share) as u64,
            (100.0 * t * (1.0 - share)) as u64,
        )
    };
    let mut cores = String::new();
    let (mut busy, mut idle) = (0, 0);
    for c in 0..CORES {
        let (b, i) = ticks(if c == 0 { 0.98 } else { 0.08 });
        busy += b;
        idle += i;
        cores += &format!("cpu{c} {b} 0 0 {i} 0 0 0 0 0 0\n");
    }
    format!("cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\n{cores}")
}

/// [`write_atomic`] for the driver thread: a host already gone (a failed test) ends it quietly.
fn try_write(path: &Path, text: &str) -> bool {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .is_ok()
}

/// Rewrite the live files every 250 ms until `stop`.
fn drive(state: PathBuf, proc_root: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let started = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            let t = 10.0 + started.elapsed().as_secs_f64();
            let ok = try_write(&state.join("gpus.csv"), &gpus_csv(t))
                && try_write(&proc_root.join("proc/stat"), &proc_stat(t))
                && try_write(
                    &proc_root.join("proc/uptime"),
                    &format!("{:.2} {:.2}\n", 5000.0 + t, 30000.0 + t),
                );
            if !ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A plain HTTP/1.1 GET on this machine's loopback: the whole answer.
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect the tunnel");
    c.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

/// Poll until `css`'s attribute differs from `before` (or panic after `secs`).
async fn wait_attr_change(s: &Session, css: &str, name: &str, before: &str, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let now = s.attr(css, name).await;
        if now != before {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{css} [{name}] did not change in {secs} s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn monitor_charts_move_data_loader_hint_and_ollama_pull_reaches_100() {
    if !gpurent_testhost::sshd_available() {
        return;
    }
    let mut host =
        gpurent_testhost::fakegpu::FakeHost::new(&fakegpu_dir(), "ready_h100").expect("fake host");
    let state = host.dir.path().join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let proc_root = host.dir.path().join("fakeproc");
    std::fs::create_dir_all(proc_root.join("proc/net")).expect("proc dir");
    std::fs::write(
        proc_root.join("proc/meminfo"),
        "MemTotal:       65536000 kB\nMemAvailable:   32768000 kB\n",
    )
    .expect("meminfo");
    std::fs::write(
        proc_root.join("proc/diskstats"),
        "   8       0 sda 100 0 2048 0 50 0 4096 0 0 0 0\n",
    )
    .expect("diskstats");
    std::fs::write(
        proc_root.join("proc/net/dev"),
        "Inter-|   Receive\n face |bytes\n  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n",
    )
    .expect("net/dev");
    write_atomic(&state.join("gpus.csv"), &gpus_csv(10.0));
    write_atomic(&proc_root.join("proc/stat"), &proc_stat(10.0));
    write_atomic(&proc_root.join("proc/uptime"), "5010.00 30010.00\n");
    write_atomic(
        &state.join("apps.csv"),
        &format!("gpu_uuid,pid,used_memory\n{UUID},4242,30000\n"),
    );
    host.vars
        .insert("GPURENT_PROC_ROOT".into(), proc_root.display().to_string());
    let stop = Arc::new(AtomicBool::new(false));
    let driver = drive(state.clone(), proc_root.clone(), stop.clone());
    let sshd = host.serve().expect("serve");
    // A second, healthy host (static rows at 95 %, the machine's own /proc) to watch beside it.
    let host2 = gpurent_testhost::fakegpu::FakeHost::new(&fakegpu_dir(), "ready_h100")
        .expect("fake host 2");
    let state2 = host2.dir.path().join("state");
    std::fs::create_dir_all(&state2).expect("state dir 2");
    write_atomic(&state2.join("gpus.csv"), &gpu_file(95.0, 520.0, 61.0));
    // gpu2 has no Ollama (nor the fake curl): the app installs it from a loopback stand-in for
    // ollama.com/download with the host's real curl, tar, gzip and sha256sum (the archive is
    // checked against the release's sha256sum.txt).
    let bin2 = host2.bin();
    for t in ["ollama", "curl", "wget"] {
        let _ = std::fs::remove_file(bin2.join(t));
    }
    for t in ["curl", "tar", "gzip", "sha256sum"] {
        let real = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("the install needs {t} on this machine"));
        std::os::unix::fs::symlink(real, bin2.join(t)).expect("link");
    }
    let downloads = gpurent_testhost::ollama_dl::OllamaDownloads::start(&fakegpu_dir(), 2 << 20)
        .expect("download server");
    let sshd2 = host2.serve().expect("serve 2");

    let s = Session::start_with_env(&[("GPURENT_OLLAMA_DOWNLOAD_URL", &downloads.base())]).await;
    s.wait_css("body[data-ready='true']").await;
    add_key_and_host(&s, &sshd, "gpu1").await;
    add_host_at(&s, &sshd2, sshd2.port(), "gpu2", None).await;

    // Monitor: the rail entry works; tick the host → its column with one GPU card.
    assert!(s.is_enabled("#nav-monitor").await, "Monitor is enabled");
    s.click("#nav-monitor").await;
    s.click("#monitor-hosts input[data-host='gpu1']").await;
    let col = ".host-col[data-host='gpu1']";
    let util = format!("{col} .metric[data-metric='util'] path.line");
    s.wait_css(&format!("{col} .gpu[data-uuid='{UUID}']")).await;
    for m in ["util", "vram", "power", "temp"] {
        s.wait_css(&format!("{col} svg.chart[data-metric='{m}']"))
            .await;
    }
    // The charts MOVE: the path and its point count change between two reads.
    let d1 = s.attr(&util, "d").await;
    let n1: usize = s
        .attr(
            &format!("{col} svg.chart[data-metric='util']"),
            "data-points",
        )
        .await
        .parse()
        .expect("count");
    let d2 = wait_attr_change(&s, &util, "d", &d1, 60).await;
    assert!(d2.starts_with('M'), "a drawn line: {d2}");
    let n2: usize = wait_attr_change(
        &s,
        &format!("{col} svg.chart[data-metric='util']"),
        "data-points",
        &n1.to_string(),
        60,
    )
    .await
    .parse()
    .expect("count");
    assert!(n2 > n1, "more points: {n1} → {n2}");
    let power = format!("{col} .metric[data-metric='power'] path.line");
    let p1 = s.attr(&power, "d").await;
    wait_attr_change(&s, &power, "d", &p1, 60).await;
    // Current values as text, the process with its memory, the cores.
    assert!(s
        .text(&format!("{col} .metric[data-metric='vram'] .value"))
        .await
        .contains("30"));
    s.wait_css(&format!("{col} table.procs")).await;
    assert!(s.text(&format!("{col} table.procs")).await.contains("4242"));
    assert_eq!(
        s.attr(&format!("{col} .cores"), "data-cores").await,
        CORES.to_string()
    );
    s.wait_css(&format!("{col} .core.hot")).await;

    // The data-loader hint with its evidence, marked as a heuristic, with next steps and the
    // note that utilisation is kernel time.
    let hint = format!("{col} .hint[data-kind='data_loader']");
    s.wait_css(&hint).await;
    let ev = s
        .text(&format!(
            "{hint} li[data-key='monitor.evidence.gpu_util_low']"
        ))
        .await;
    assert!(ev.contains("GPU utilisation averaged"), "{ev}");
    assert!(
        ev.chars().any(|c| c.is_ascii_digit()),
        "measured numbers: {ev}"
    );
    s.wait_css(&format!("{hint} .tag.heuristic")).await;
    assert!(s.count(&format!("{hint} ol.next-steps li")).await >= 2);
    s.wait_css(&format!(
        "{hint} p.note[data-note='monitor.note.util_is_kernel_time']"
    ))
    .await;
    // Several hosts side by side: gpu2 in a column of its own, streaming too, without the hint.
    s.click("#monitor-hosts input[data-host='gpu2']").await;
    s.wait_css("#monitor-cols[data-count='2']").await;
    let col2 = ".host-col[data-host='gpu2']";
    s.wait_css(&format!("{col2} svg.chart[data-metric='util']"))
        .await;
    let u2 = format!("{col2} .metric[data-metric='util'] path.line");
    let before2 = s.attr(&u2, "d").await;
    wait_attr_change(&s, &u2, "d", &before2, 60).await;
    assert_eq!(
        s.count(&format!("{col2} .hint[data-kind='data_loader']"))
            .await,
        0
    );
    s.scroll_to("#monitor-hosts").await;
    s.screenshot("monitor-top-en").await;
    s.scroll_to(&format!("{col} .gpu")).await;
    s.screenshot("monitor-en").await;

    // The 60-minute window keeps the same history.
    s.click("#monitor-window button[data-window='60']").await;
    s.wait_css(&format!("{col} svg.chart[data-metric='util'][data-points]"))
        .await;

    // The same screen in Chinese: the watch kept running while Settings was shown.
    s.click("#rail-settings").await;
    s.select("#settings-language", "zh-CN").await;
    s.wait_text("h1", "设置").await;
    s.click("#nav-monitor").await;
    s.wait_css(&hint).await;
    let title = s.text(&format!("{hint} .hint-head strong")).await;
    assert!(title.contains("数据加载"), "{title}");
    let before = s.attr(&util, "d").await;
    wait_attr_change(&s, &util, "d", &before, 60).await;
    s.click("#monitor-window button[data-window='10']").await;
    s.scroll_to(&format!("{col} .gpu")).await;
    s.screenshot("monitor-zh-CN").await;

    // Run tab: pull a model from the fake ollama on a free port of the host; the bar reaches 100 %.
    s.click("#monitor-tab-run").await;
    let port = free_port();
    s.fill("#ollama-port", &port.to_string()).await;
    // Serve on the GPU chosen by UUID (the list comes from the Live tab's last sample).
    s.click(&format!(
        ".gpu-pick[data-for='ollama'] input[value='{UUID}']"
    ))
    .await;
    s.click("#ollama-serve").await;
    s.wait_text(
        "#ollama-version",
        &format!("Ollama 0.5.7 已在主机的 127.0.0.1:{port} 应答。"),
    )
    .await;
    let pid = std::fs::read_to_string(host.dir.path().join("home/.gpurent/ollama/serve.pid"))
        .expect("pid file");
    let environ = std::fs::read(format!("/proc/{}/environ", pid.trim())).expect("environ");
    assert!(
        String::from_utf8_lossy(&environ).contains(&format!("CUDA_VISIBLE_DEVICES={UUID}")),
        "Ollama runs on the chosen GPU"
    );
    s.fill("#ollama-model", "qwen2.5:7b").await;
    s.click("#ollama-pull").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.attr("#ollama-progress", "data-pct").await != "100" {
        assert!(Instant::now() < deadline, "the pull did not reach 100 %");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s.wait_text("#ollama-pct", "100 %").await;
    s.wait_gone("#ollama-pull-cancel:not([hidden])").await;
    assert!(s.text("#ollama-pull-status").await.starts_with("完成"));
    // The estimator's memory check ran before the pull: a 7B Q4 model fits 50 GB free.
    s.wait_css("#ollama-fit-verdict[data-verdict='fits']").await;
    assert!(s.text("#ollama-fit-verdict").await.starts_with("放得下"));
    s.scroll_to("#run-ollama").await;
    s.screenshot("monitor-run-zh-CN").await;
    // A short chat proves it answers.
    s.click("#ollama-chat").await;
    s.wait_text("#ollama-answer", "Hello from the fake ollama.")
        .await;

    s.click("#rail-settings").await;
    s.select("#settings-language", "en").await;
    s.wait_text("h1", "Settings").await;
    s.click("#nav-monitor").await;
    s.scroll_to("#run-ollama").await;
    s.wait_text("#ollama-pct", "100 %").await;
    s.screenshot("monitor-run-en").await;

    // The tunnel: this machine's 127.0.0.1:LOCAL answers Ollama's API over the SSH connection.
    let local = free_port();
    s.fill("#ollama-local-port", &local.to_string()).await;
    s.click("#ollama-tunnel").await;
    let url = format!("http://127.0.0.1:{local}");
    s.wait_text("#ollama-url code.url", &url).await;
    let version = http_get(local, "/api/version");
    assert!(
        version.contains("200 OK") && version.contains("\"version\""),
        "{version}"
    );
    s.click("#ollama-untunnel").await;
    s.wait_gone("#ollama-url code.url").await;

    // A multi-GPU launch through the fake torchrun: one log per rank, the exit status.
    let script = host.dir.path().join("home/train_ddp.py");
    std::fs::write(
        &script,
        "import os\nprint(f\"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}\", flush=True)\n",
    )
    .expect("script");
    s.fill("#launch-script", &script.display().to_string())
        .await;
    s.fill("#launch-nproc", "2").await;
    s.click("#launch-run").await;
    s.wait_text("#launch-logs pre[data-rank='0']", "rank 0 of 2")
        .await;
    s.wait_text("#launch-logs pre[data-rank='1']", "rank 1 of 2")
        .await;
    s.wait_css("#launch-result p[data-status='0']").await;
    // The SkyPilot task for more machines.
    s.fill("#skypilot-nodes", "2").await;
    s.click("#skypilot-export").await;
    s.wait_css("#skypilot-yaml:not([hidden])").await;
    let yaml = s.text("#skypilot-yaml").await;
    assert!(
        yaml.contains("num_nodes: 2") && yaml.contains("accelerators: H100:8"),
        "{yaml}"
    );
    s.scroll_to("#run-launch").await;
    s.screenshot("monitor-launch-en").await;

    // Stop Ollama (nothing left running on the host).
    s.click("#ollama-stop").await;
    s.wait_text("#ollama-version", "Ollama was stopped.").await;

    // gpu2: Install Ollama where it is missing; it then answers on the host's port.
    s.select("#run-host", "gpu2").await;
    s.wait_css("#run-host").await;
    s.fill("#ollama-port", &free_port().to_string()).await;
    s.click("#ollama-install").await;
    let installed = host2.dir.path().join("home/.local/bin/ollama");
    s.wait_text(
        "#ollama-install-status",
        &format!(
            "Ollama 0.5.7 installed at {} and answering.",
            installed.display()
        ),
    )
    .await;
    assert_eq!(downloads.downloads(), 1);
    // A model too big for the free memory: the check says so with its numbers.
    s.fill("#ollama-model", "qwen2.5:72b").await;
    s.click("#ollama-fit").await;
    s.wait_css("#ollama-fit-verdict[data-verdict='does_not_fit']")
        .await;
    let fit = s.text("#ollama-fit-verdict").await;
    assert!(
        fit.starts_with("Does not fit: qwen2.5:72b needs about") && fit.contains("GiB are free"),
        "{fit}"
    );
    // A pull is refused by the check (no error banner: the sentence and "Pull anyway")…
    s.click("#ollama-pull").await;
    s.wait_css("#ollama-pull-force:not([hidden])").await;
    assert_eq!(s.count("#banner:not([hidden])").await, 0);
    s.scroll_to("#run-ollama").await;
    s.screenshot("monitor-install-en").await;
    // …and goes ahead when forced.
    s.click("#ollama-pull-force").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.attr("#ollama-progress", "data-pct").await != "100" {
        assert!(
            Instant::now() < deadline,
            "the forced pull did not reach 100 %"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s.wait_css("#ollama-pull-force[hidden]").await;
    s.click("#ollama-stop").await;
    s.wait_text("#ollama-version", "Ollama was stopped.").await;

    // Stop the watches.
    s.click("#monitor-tab-live").await;
    s.click(&format!("{col} button[data-action='stop']")).await;
    s.wait_css(&format!("{col}[data-live='false']")).await;
    s.click("#monitor-hosts input[data-host='gpu2']").await;
    s.wait_css("#monitor-cols[data-count='1']").await;

    s.finish().await;
    stop.store(true, Ordering::SeqCst);
    driver.join().expect("driver thread");
}
