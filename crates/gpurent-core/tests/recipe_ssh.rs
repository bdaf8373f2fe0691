//! Recipes end to end on a fake GPU host served by a REAL loopback sshd: `App::recipe_run_with_key`
//! runs Setup (probe and GPU check), starts the recipe's app (the fake ComfyUI / Whisper ASR
//! service of `tests/fakegpu`, which bind exactly the address they are given), asks its readiness
//! URL through a gpurent tunnel, sets the guard with the recipe's defaults (a fake `poweroff` on
//! the host's PATH), and returns the Open URL. The readiness answer is the fake's own (its request
//! log names the path) and came through the tunnel (the forward accepted it); nothing listens on
//! 0.0.0.0, here or on the host. A failing step stops the flow there with its own code.
//!
//! Needs sshd and the `gputest` user (`scripts/setup-test-host.sh`): skipped with a message
//! otherwise, failed under `GPURENT_REQUIRE_SSH=1`.

mod guard_common;
mod monitor_common;
mod remote_common;
mod setup_common;

use std::io::{Read, Write};

use gpurent_core::app::login::LoginKey;
use gpurent_core::app::recipe::{RecipeRunOptions, RecipeStep};
use gpurent_core::guard::ActionKind;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::Coded;
use gpurent_testhost::{sshd_available, Sshd, UserKey};
use guard_common::{link_system_tools, quiet_machine, system_tool, write_exec, Guarded};
use monitor_common::{free_port, listening};
use remote_common::{add_confirmed, login_key, spec, world, World};
use setup_common::FakeHost;

const LABEL: &str = "gpu";
const FAKE_POWEROFF: &str =
    "#!/bin/sh\necho \"$(date +%s) poweroff $*\" >> \"$FAKEGPU_STATE/poweroff.log\"\n";
const FAKE_CRONTAB: &str = "#!/bin/sh\nf=\"$FAKEGPU_STATE/crontab\"\ncase \"$1\" in\n  -l) [ -f \"$f\" ] || { echo 'no crontab for user' >&2; exit 1; }; cat \"$f\" ;;\n  -) cat > \"$f\" ;;\n  *) exit 2 ;;\nesac\n";

struct Rig {
    host: FakeHost,
    w: World,
    key: LoginKey,
    _k: UserKey,
    _sshd: Sshd,
    cron: std::process::Child,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.cron.kill();
        let _ = self.cron.wait();
    }
}

fn require_ssh() -> bool {
    if sshd_available() {
        return true;
    }
    assert!(
        std::env::var("GPURENT_REQUIRE_SSH").as_deref() != Ok("1"),
        "GPURENT_REQUIRE_SSH=1 but sshd / the test user is not available"
    );
    eprintln!("recipe_ssh: skipped (no sshd; run scripts/setup-test-host.sh)");
    false
}

/// Scenario `scenario` with the guard's fakes (poweroff, wall, crontab, a cron process), `extra`
/// variables, and ComfyUI's folder in the host's home (`COMFYUI_DIR`).
fn rig(scenario: &str, extra: &[(&str, &str)]) -> Option<Rig> {
    if !require_ssh() {
        return None;
    }
    let mut host = FakeHost::new(scenario);
    let comfy = host.dir.path().join("home/ComfyUI");
    std::fs::create_dir_all(&comfy).expect("comfyui dir");
    host.vars
        .insert("COMFYUI_DIR".into(), comfy.display().to_string());
    host.vars.insert("FAKE_WEBAPP_BOOT_S".into(), "1".into());
    // The probe names the fake interpreter (the one with the fake torch) as the host's Python.
    let py = host.bin().join("python3").display().to_string();
    host.vars.insert("FAKE_PY_EXECUTABLE".into(), py);
    // An H100's own speeds (Setup's GPU check flags a card far below its spec).
    host.vars.insert("FAKE_VERIFY_TFLOPS".into(), "700".into());
    host.vars.insert("FAKE_VERIFY_GBPS".into(), "2900".into());
    for (k, v) in extra {
        host.vars.insert(k.to_string(), v.to_string());
    }
    quiet_machine(&mut host);
    let bin = host.bin();
    link_system_tools(&bin, &["mv", "nohup"]);
    write_exec(&bin.join("poweroff"), FAKE_POWEROFF);
    write_exec(
        &bin.join("wall"),
        "#!/bin/sh\n{ date +%s; cat; } >> \"$FAKEGPU_STATE/wall.log\"\n",
    );
    write_exec(&bin.join("crontab"), FAKE_CRONTAB);
    std::os::unix::fs::symlink(system_tool("sleep").expect("sleep"), bin.join("cron"))
        .expect("link cron");
    let cron = std::process::Command::new(bin.join("cron"))
        .arg("3600")
        .spawn()
        .expect("fake cron");
    let sshd = host.serve().expect("serve the fake host");
    let k = UserKey::generate("recipe-ssh").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    let w = world();
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));
    Some(Rig {
        host,
        w,
        key,
        _k: k,
        _sshd: sshd,
        cron,
    })
}

fn get(local: u16, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", local)).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut a = String::new();
    s.read_to_string(&mut a).expect("read");
    a
}

fn requests(r: &Rig) -> String {
    std::fs::read_to_string(r.host.dir.path().join("state/webapp-requests.log")).unwrap_or_default()
}

/// Run a web recipe end to end and check every promise of the flow.
fn runs_end_to_end(name: &str, app: &str, ready_path: &str) {
    let Some(r) = rig("ready_h100", &[]) else {
        return;
    };
    let _guarded = Guarded::on(&r.host);
    let cancel = CancelToken::new();
    let port = free_port();
    let opts = RecipeRunOptions {
        port,
        local_port: 0,
    };
    let (fwd, report) =
        r.w.app
            .recipe_run_with_key(name, LABEL, &r.w.env, &r.key, &opts, &NoProgress, &cancel)
            .unwrap_or_else(|e| panic!("{name}: {e} ({:?})", e.detail()));
    assert_eq!(
        report.steps,
        [
            RecipeStep::Setup,
            RecipeStep::Start,
            RecipeStep::Ready,
            RecipeStep::Guard,
            RecipeStep::Open
        ]
    );
    assert_eq!(report.host_port, port);
    assert_eq!(report.ready_path, ready_path);
    assert_eq!(report.ready_status, 200);
    assert_eq!(report.driver.as_deref(), Some("570.124.06"), "{report:?}");
    assert!(
        report.images.iter().all(|i| !i.contains("13.0")),
        "a driver-570 host is offered no CUDA 13 image: {:?}",
        report.images
    );
    // The readiness answer is the fake's, and it came through the tunnel.
    let log = requests(&r);
    assert!(
        log.lines()
            .any(|l| l.starts_with(&format!("{app} GET {ready_path} 127.0.0.1"))),
        "{log}"
    );
    assert!(
        fwd.accepted() >= 1,
        "the readiness ask went through the tunnel"
    );
    assert_eq!(report.url, format!("http://127.0.0.1:{}/", fwd.local_port));
    let answer = get(fwd.local_port, ready_path);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Nothing on 0.0.0.0: the host's app and this machine's tunnel are loopback only.
    assert_eq!(listening(port), vec![format!("0100007F:{port:04X}")]);
    let local = fwd.local_port;
    assert_eq!(listening(local), vec![format!("0100007F:{local:04X}")]);
    // The guard runs with the recipe's defaults and the host's action (the fake poweroff).
    assert!(report.guard.running, "{:?}", report.guard);
    assert_eq!(report.guard.spec.action, ActionKind::Poweroff);
    let recipe = gpurent_core::recipes::get(name).expect("recipe");
    assert_eq!(
        report.guard.spec.idle_s,
        recipe.guard.idle_minutes * 60,
        "{:?}",
        report.guard.spec
    );
    assert!(report.guard.deadline_host_s.is_some());
    assert_eq!(report.results, recipe.results);

    fwd.stop().expect("stop tunnel");
    r.w.app
        .guard_off_with_key(LABEL, &r.w.env, &r.key, &cancel)
        .expect("guard off");
    assert!(r
        .w
        .app
        .recipe_stop_with_key(name, LABEL, &r.w.env, &r.key, &cancel)
        .expect("stop app"));
    assert!(listening(port).is_empty(), "the app is gone");
}

#[test]
fn comfyui_runs_end_to_end_behind_the_tunnel() {
    runs_end_to_end("comfyui", "comfy", "/system_stats");
}

#[test]
fn whisper_runs_end_to_end_behind_the_tunnel() {
    runs_end_to_end("whisper", "whisper-asr-webservice", "/docs");
}

fn failure(
    scenario: &str,
    extra: &[(&str, &str)],
    name: &str,
) -> Option<(RecipeStep, String, Rig)> {
    let r = rig(scenario, extra)?;
    let _guarded = Guarded::on(&r.host);
    let opts = RecipeRunOptions {
        port: free_port(),
        local_port: 0,
    };
    let e =
        r.w.app
            .recipe_run_with_key(
                name,
                LABEL,
                &r.w.env,
                &r.key,
                &opts,
                &NoProgress,
                &CancelToken::new(),
            )
            .map(|_| ())
            .expect_err("the flow stops");
    let data = e.data().expect("data");
    assert_eq!(data.step.as_deref(), Some(e.step.as_str()));
    let code = e.code().to_string();
    Some((e.step, code, r))
}

#[test]
fn an_app_that_dies_stops_the_flow_before_the_guard_with_its_log() {
    let Some((step, code, r)) = failure("ready_h100", &[("FAKE_WEBAPP_FAIL", "1")], "comfyui")
    else {
        return;
    };
    assert_eq!((step, code.as_str()), (RecipeStep::Ready, "app_exited"));
    assert!(
        !r.host.dir.path().join("home/.gpurent/guard/pid").exists(),
        "no guard was set"
    );
}

#[test]
fn an_app_that_binds_every_address_is_stopped_and_not_opened() {
    let Some((step, code, _r)) = failure("ready_h100", &[("FAKE_WEBAPP_BIND_ALL", "1")], "whisper")
    else {
        return;
    };
    assert_eq!(
        (step, code.as_str()),
        (RecipeStep::Ready, "app_not_private")
    );
    assert!(
        monitor_common::remote_processes("webapp_fake.py").is_empty(),
        "the app gpurent started was stopped"
    );
}

#[test]
fn a_driver_below_every_image_stops_the_flow_at_setup() {
    let Some((step, code, _r)) = failure("h20_vm_cuda122", &[], "comfyui") else {
        return;
    };
    assert_eq!(
        (step, code.as_str()),
        (RecipeStep::Setup, "recipe_driver_too_old")
    );
}

#[test]
fn ollama_chat_runs_end_to_end_through_run_ollamas_own_steps() {
    let Some(r) = rig("ready_h100", &[]) else {
        return;
    };
    let _guarded = Guarded::on(&r.host);
    let cancel = CancelToken::new();
    let port = free_port();
    let opts = RecipeRunOptions {
        port,
        local_port: 0,
    };
    let (fwd, report) =
        r.w.app
            .recipe_run_with_key(
                "ollama-chat",
                LABEL,
                &r.w.env,
                &r.key,
                &opts,
                &NoProgress,
                &cancel,
            )
            .unwrap_or_else(|e| panic!("{e} ({:?})", e.detail()));
    assert_eq!(report.steps.len(), 5);
    assert_eq!(report.python, None, "no PyTorch check for Ollama");
    assert_eq!(report.ready_path, "/api/version");
    assert_eq!(report.ready_status, 200);
    assert!(fwd.accepted() >= 1);
    let answer = get(fwd.local_port, "/api/version");
    assert!(answer.contains("\"version\""), "{answer}");
    assert_eq!(listening(port), vec![format!("0100007F:{port:04X}")]);
    assert!(report.next.iter().any(|n| n.contains("/api/pull")));
    fwd.stop().expect("stop tunnel");
    r.w.app
        .guard_off_with_key(LABEL, &r.w.env, &r.key, &cancel)
        .expect("guard off");
    assert!(r
        .w
        .app
        .recipe_stop_with_key("ollama-chat", LABEL, &r.w.env, &r.key, &cancel)
        .expect("stop"));
    assert!(listening(port).is_empty());
}

/// The notebook goal through Run → Jupyter's own steps, with a REAL `jupyter-server`: the host's
/// Python (the one Setup's GPU check ran with) is the fake `python3` wrapping the interpreter
/// named by `GPURENT_TEST_JUPYTER_PYTHON` (one with jupyter-server; skipped without it), so the
/// GPU check sees the fake torch and `python3 -m jupyter_server` is the real server. Ready means
/// `/api/status` answered 200 through the tunnel with gpurent's token; the Open URL carries it.
#[test]
fn jupyter_pytorch_runs_end_to_end_with_its_token_through_the_tunnel() {
    jupyter_app_runs_end_to_end("jupyter-pytorch", 30 * 60, 8 * 3600);
}

/// The LoRA recipe is a Jupyter (sd-scripts is run from its terminal) with its own guard: run by
/// its own name, with the same checks, and the guard it sets is the recipe's.
#[test]
fn lora_training_runs_end_to_end_by_name_with_its_own_guard() {
    jupyter_app_runs_end_to_end("lora-training", 30 * 60, 8 * 3600);
}

/// `name`: a recipe whose app is Jupyter; `idle_s`, `deadline_s`: the guard its data proposes.
fn jupyter_app_runs_end_to_end(name: &str, idle_s: u64, deadline_s: u64) {
    let Some(real) = std::env::var_os("GPURENT_TEST_JUPYTER_PYTHON") else {
        eprintln!("recipe_ssh: jupyter skipped (set GPURENT_TEST_JUPYTER_PYTHON to a python with jupyter-server)");
        return;
    };
    let Some(r) = rig("ready_h100", &[]) else {
        return;
    };
    let _guarded = Guarded::on(&r.host);
    // The host's python3: the shared fake, run on the interpreter that has jupyter-server (the
    // link into the shared fakegpu/bin is replaced, never written through).
    let py = r.host.bin().join("python3");
    std::fs::remove_file(&py).expect("unlink the fake python3");
    write_exec(
        &py,
        &format!(
            "#!/bin/sh\nFAKE_REAL_PYTHON={} exec \"$FAKEGPU_DIR/bin/python3\" \"$@\"\n",
            real.to_string_lossy()
        ),
    );
    let cancel = CancelToken::new();
    let port = free_port();
    let opts = RecipeRunOptions {
        port,
        local_port: 0,
    };
    let (fwd, report) =
        r.w.app
            .recipe_run_with_key(
                name,
                LABEL,
                &r.w.env,
                &r.key,
                &opts,
                &NoProgress,
                &cancel,
            )
            .unwrap_or_else(|e| panic!("{e} ({:?})", e.detail()));
    assert_eq!(
        report.steps,
        [
            RecipeStep::Setup,
            RecipeStep::Start,
            RecipeStep::Ready,
            RecipeStep::Guard,
            RecipeStep::Open
        ]
    );
    assert_eq!(
        report.python.as_deref(),
        Some(py.to_string_lossy().as_ref())
    );
    assert_eq!(report.host_port, port);
    assert_eq!(
        (report.ready_path.as_str(), report.ready_status),
        ("/api/status", 200)
    );
    let token = report
        .url
        .strip_prefix(&format!("http://127.0.0.1:{}/?token=", fwd.local_port))
        .unwrap_or_else(|| panic!("the Open URL carries the token: {}", report.url))
        .to_string();
    assert!(token.len() >= 32, "a real token");
    // Through the tunnel: the API answers with the token, refuses without it.
    let with = {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", fwd.local_port)).expect("connect");
        write!(
            s,
            "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token {token}\r\nConnection: close\r\n\r\n"
        )
        .expect("write");
        let mut a = String::new();
        s.read_to_string(&mut a).expect("read");
        a
    };
    assert!(with.starts_with("HTTP/1.1 200"), "{with}");
    let without = get(fwd.local_port, "/api/status");
    assert!(without.starts_with("HTTP/1.1 403"), "{without}");
    assert_eq!(
        listening(port),
        vec![format!("0100007F:{port:04X}")],
        "127.0.0.1 only"
    );
    assert!(report.guard.running, "{:?}", report.guard);
    assert_eq!(report.guard.spec.action, ActionKind::Poweroff);
    assert_eq!(
        (report.guard.spec.idle_s, report.guard.spec.deadline_in_s),
        (idle_s, Some(deadline_s)),
        "the recipe's own guard"
    );
    fwd.stop().expect("stop tunnel");
    r.w.app
        .guard_off_with_key(LABEL, &r.w.env, &r.key, &cancel)
        .expect("guard off");
    assert!(r
        .w
        .app
        .recipe_stop_with_key(name, LABEL, &r.w.env, &r.key, &cancel)
        .expect("stop"));
    assert!(listening(port).is_empty(), "the server is gone");
}
