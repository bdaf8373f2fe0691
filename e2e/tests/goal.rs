//! "Start from a goal" in the real app, on a rented machine of the fake cloud: the fake RunPod
//! (behind Prism's validating proxy for RunPod's published spec) rents out this test's fake GPU
//! host (`ready_h100` on the real loopback sshd, with the fake ComfyUI and the pod's own
//! `RUNPOD_POD_ID` / `RUNPOD_API_KEY`). Through the screen: pick the goal "images with ComfyUI
//! (FLUX)", see the live offer with the image of its host's CUDA line, rent it (the money first),
//! watch the steps (rent → Setup's check → start → ready through the tunnel → guard → Open), Open
//! (the browser is a fake `xdg-open` that records the URL; the URL answers ComfyUI's readiness
//! path through the tunnel), the same screen in 中文, Stop, and Release through the release
//! checklist with the recipe's result folder — then the provider says terminated.
//!
//! Run: `cargo build -p gpurent-app && bash scripts/e2e.sh goal`.

mod harness;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Flavor, SshTarget};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::{prism_available, sshd_available, Prism};
use harness::Session;

const API_KEY: &str = "rk-e2e-goal-5d1e0c7a";
/// The pod's own key, in its environment as RunPod puts it there (the guard acts with it).
const POD_KEY: &str = "rk-e2e-goal-pod-key-31";
/// The fake cloud's first machine.
const POD_ID: &str = "pod1001";

fn fakegpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/gpurent-core/tests/fakegpu")
}

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    // Replace a link into the shared fakegpu/bin, never write through it.
    let _ = std::fs::remove_file(path);
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn system_tool(name: &str) -> PathBuf {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .expect("system tool")
}

/// What the run left on the fake host (the guard and the app outlive every connection by
/// design), ended on drop — also when the journey fails.
struct Leftovers(PathBuf, std::process::Child);

impl Drop for Leftovers {
    fn drop(&mut self) {
        let _ = self.1.kill();
        let _ = self.1.wait();
        for (pid_file, marker) in [
            (".gpurent/guard/pid", "guard.sh"),
            (".gpurent/apps/comfyui/pid", ""),
        ] {
            let Ok(pid) = std::fs::read_to_string(self.0.join(pid_file)) else {
                continue;
            };
            let pid = pid.trim().to_string();
            let ours = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains(marker))
                .unwrap_or(false);
            if ours {
                let _ = std::process::Command::new("kill")
                    .args(["--", &format!("-{pid}")])
                    .status();
                let _ = std::process::Command::new("kill").arg(&pid).status();
            }
        }
    }
}

/// `GET path` on this machine's `127.0.0.1:port`: the status line.
fn get(port: u16, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the tunnel");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut a = String::new();
    s.read_to_string(&mut a).expect("read");
    a.lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn goal_journey_images_with_flux_rent_open_release() {
    if !sshd_available() || !prism_available() {
        return;
    }
    let started = Instant::now();

    // The machine the fake cloud rents out: a fake H100 host on the loopback sshd.
    let mut host = FakeHost::new(&fakegpu_dir(), "ready_h100").expect("fake host");
    let comfy = host.dir.path().join("home/ComfyUI");
    std::fs::create_dir_all(&comfy).expect("comfyui dir");
    for (k, v) in [
        ("COMFYUI_DIR", comfy.display().to_string()),
        ("FAKE_WEBAPP_BOOT_S", "1".into()),
        (
            "FAKE_PY_EXECUTABLE",
            host.bin().join("python3").display().to_string(),
        ),
        // An H100's own speeds (Setup's GPU check flags a card far below its spec).
        ("FAKE_VERIFY_TFLOPS", "700".into()),
        ("FAKE_VERIFY_GBPS", "2900".into()),
        // What RunPod puts in a pod's environment: the guard stops it with the pod's own key.
        ("RUNPOD_POD_ID", POD_ID.into()),
        ("RUNPOD_API_KEY", POD_KEY.into()),
    ] {
        host.vars.insert(k.to_string(), v);
    }
    let bin = host.bin();
    for t in ["mv", "nohup"] {
        std::os::unix::fs::symlink(system_tool(t), bin.join(t)).expect("link tool");
    }
    write_exec(
        &bin.join("wall"),
        "#!/bin/sh\n{ date +%s; cat; } >> \"$FAKEGPU_STATE/wall.log\"\n",
    );
    write_exec(
        &bin.join("crontab"),
        "#!/bin/sh\nf=\"$FAKEGPU_STATE/crontab\"\ncase \"$1\" in\n  -l) [ -f \"$f\" ] || { echo 'no crontab for user' >&2; exit 1; }; cat \"$f\" ;;\n  -) cat > \"$f\" ;;\n  *) exit 2 ;;\nesac\n",
    );
    std::os::unix::fs::symlink(system_tool("sleep"), bin.join("cron")).expect("link cron");
    let cron = std::process::Command::new(bin.join("cron"))
        .arg("3600")
        .spawn()
        .expect("fake cron");
    let _left = Leftovers(host.dir.path().join("home"), cron);
    let sshd = host.serve().expect("serve the fake host");

    let fake = FakeCloud::start(Flavor::Runpod, API_KEY).expect("fake cloud");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    fake.add_instance_key(POD_ID, POD_KEY);
    let spec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/gpurent-core/tests/provider-specs/runpod-rest-v2.openapi.json");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    let url = prism.url();

    // The browser: a fake xdg-open first on the app's PATH, recording what it was asked to open.
    let opener = host.dir.path().join("browser");
    std::fs::create_dir_all(&opener).expect("browser dir");
    let opened = opener.join("opened.txt");
    write_exec(
        &opener.join("xdg-open"),
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n",
            opened.display()
        ),
    );
    let path = format!(
        "{}:{}",
        opener.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let s = Session::start_with_env(&[
        ("GPURENT_RUNPOD_API_URL", url.as_str()),
        // No request here is meant to time out: 30 s, out of a loaded machine's reach.
        ("GPURENT_HTTP_TIMEOUT_S", "30"),
        ("PATH", path.as_str()),
    ])
    .await;
    s.wait_css("body[data-ready='true']").await;

    // A key to rent with; the fake cloud's machine is the sshd, so it accepts it.
    s.click("#nav-keys").await;
    s.fill("#key-label", "laptop").await;
    s.click("#key-create").await;
    let public_line = s.text("code.pubkey[data-label='laptop']").await;
    sshd.authorize(&public_line).expect("authorize our key");
    // The provider account.
    s.click("#rail-settings").await;
    s.wait_css("#accounts-none").await;
    s.select("#account-provider", "runpod").await;
    s.fill("#account-key", API_KEY).await;
    s.click("#account-add").await;
    s.wait_css("#accounts-list li[data-account='runpod']").await;

    // Start from a goal: the five goals in English; images with ComfyUI (FLUX).
    s.click("#nav-goal").await;
    s.wait_text("h1", "Start from a goal").await;
    s.wait_count("#goal-list button.goal", 5, 30).await;
    let goal = "#goal-list button.goal[data-recipe='comfyui']";
    assert_eq!(
        s.text(goal).await,
        "Make images with ComfyUI (SDXL or FLUX)"
    );
    s.click(goal).await;
    // The fake RunPod's offer (an RTX 4090 on a CUDA 12.8 host): the image of that CUDA line,
    // never the 13.0 one; FLUX fits the card quantized.
    let row = "#goal-offers-table tr.offer[data-provider='runpod']";
    s.wait_count(row, 1, 60).await;
    assert_eq!(s.attr(row, "data-image").await, "runpod/comfyui:cuda12.8");
    assert!(s
        .text(&format!("{row} td:nth-child(3)"))
        .await
        .contains("host CUDA 12.8"));
    assert_eq!(s.count("#goal-nohosts").await, 1, "no saved host yet");
    s.scroll_to("#goal-detail").await;
    s.screenshot("goal-offers-en").await;

    // Rent: the money first; nothing is created before the confirm.
    s.click(&format!("{row} button.goal-rent")).await;
    s.wait_css("#goal-rent-dialog[open] #goal-rent-money li[data-money='price']")
        .await;
    assert!(s
        .text("#goal-rent-intro")
        .await
        .starts_with("Boots runpod/comfyui:cuda12.8 with a 200 GB disk"));
    assert!(s
        .text("#goal-rent-money li[data-money='billing']")
        .await
        .contains("by the second"));
    s.screenshot("goal-money-en").await;
    assert_eq!(
        fake.creates_total(),
        0,
        "nothing is created before the confirm"
    );
    s.select("#goal-rent-key", "laptop").await;
    s.click("#goal-rent-create").await;
    s.wait_gone("#goal-rent-dialog").await;

    // The steps, in order, until the app answers through the tunnel.
    s.wait_css("#goal-steps li[data-step='rent']").await;
    s.wait_count("#goal-ready", 1, 240).await;
    for step in ["rent", "setup", "start", "ready", "guard", "open"] {
        s.wait_css(&format!("#goal-steps li[data-step='{step}'].ok"))
            .await;
    }
    assert_eq!(fake.creates_total(), 1);
    let instances = fake.instances();
    assert_eq!(instances.len(), 1, "{instances:?}");
    assert_eq!(instances[0].id, POD_ID);
    let id = instances[0].label.clone();
    assert!(id.starts_with("gpurent-"), "{id}");
    assert!(s.text("#goal-ready p.ok-text").await.contains(&id));
    // The guard: the recipe's 20 idle minutes, stopping the machine (a rented one).
    assert_eq!(
        s.text("#goal-guard").await,
        "Guard set with the goal’s defaults: after 20 idle minutes — Stop the machine. Change it on the Billing step."
    );
    assert_eq!(
        s.text("#goal-results li code").await,
        "/workspace/ComfyUI/output"
    );
    let app_url = s.text("#goal-url").await;
    let local_port: u16 = app_url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.strip_suffix('/'))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a tunnel URL: {app_url}"));
    s.scroll_to("#goal-run").await;
    s.screenshot("goal-ready-en").await;

    // Open: the browser is asked for the tunnel URL, and that URL answers ComfyUI's readiness
    // path (the fake's own answer, logged on the host, through the tunnel).
    s.click("#goal-open").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&opened)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the browser was not asked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        std::fs::read_to_string(&opened).expect("opened").trim(),
        app_url
    );
    assert_eq!(get(local_port, "/system_stats"), "HTTP/1.1 200 OK");
    let log = std::fs::read_to_string(host.dir.path().join("state/webapp-requests.log"))
        .unwrap_or_default();
    assert!(
        log.lines()
            .filter(|l| l.starts_with("comfy GET /system_stats 127.0.0.1"))
            .count()
            >= 2,
        "the readiness ask and ours reached the fake ComfyUI on the host's loopback: {log}"
    );

    // The same run in 中文 (it lives on while the screens are redrawn).
    s.click("#rail-settings").await;
    s.select("#settings-language", "zh-CN").await;
    s.wait_text("h1", "设置").await;
    s.click("#nav-goal").await;
    s.wait_text("h1", "从目标开始").await;
    assert_eq!(s.text(goal).await, "用 ComfyUI 生成图像（SDXL 或 FLUX）");
    s.wait_css("#goal-ready").await;
    assert!(s
        .text("#goal-guard")
        .await
        .starts_with("守护已按目标的默认值设置"));
    // What is still to fetch, in Chinese too; the results can be downloaded from here.
    assert!(s.text("#goal-next").await.starts_with("模型检查点"));
    assert_eq!(s.text("#goal-download").await, "下载结果…");
    s.scroll_to("#goal-run").await;
    s.screenshot("goal-ready-zh").await;

    // Stop the app, then release the machine through the checklist with the recipe's folder.
    s.click("#goal-stop").await;
    s.wait_css("#goal-stopped").await;
    s.click("#goal-release").await;
    s.wait_css("#release-dialog[open] #release-body").await;
    s.wait_css("#release-body .release-folder[data-path='/workspace/ComfyUI/output']")
        .await;
    s.wait_css("#release-disks").await;
    s.screenshot("goal-release-zh").await;
    s.click("#release-confirm").await;
    s.wait_css("#goal-released").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.instances()[0].state != FakeState::Terminated {
        assert!(Instant::now() < deadline, "{:?}", fake.instances());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(fake.creates_total(), 1, "created exactly once");
    // The app was stopped on the host (its pid file's process is gone).
    let pid = std::fs::read_to_string(host.dir.path().join("home/.gpurent/apps/comfyui/pid"))
        .unwrap_or_default();
    assert!(
        pid.trim().is_empty() || !Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "the app still runs: {pid}"
    );
    prism.assert_spec_kept("RunPod");
    s.finish().await;
    eprintln!(
        "goal E2E journey took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
