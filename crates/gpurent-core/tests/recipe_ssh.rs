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
    /// Also when a test failed before its own stop: every process still working in this fake
    /// host's folder or with its environment (the app gpurent started, the guard's loop) is
    /// killed, so a failed test leaves no server or loop behind on the machine.
    fn drop(&mut self) {
        let _ = self.cron.kill();
        let _ = self.cron.wait();
        let root = self.host.dir.path();
        if let Ok(procs) = std::fs::read_dir("/proc") {
            for p in procs.flatten() {
                let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                let state = format!("FAKEGPU_STATE={}", root.join("state").display());
                let here = std::fs::read_link(p.path().join("cwd"))
                    .is_ok_and(|c| c.starts_with(root))
                    || std::fs::read(p.path().join("environ"))
                        .is_ok_and(|e| e.split(|b| *b == 0).any(|v| v == state.as_bytes()));
                if here {
                    let _ = std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status();
                }
            }
        }
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
    assert_eq!(report.next_zh_cn.len(), report.next.len());
    assert!(
        report.next_zh_cn.iter().all(|n| !n.is_ascii()),
        "in Chinese: {:?}",
        report.next_zh_cn
    );

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
            .recipe_run_with_key(name, LABEL, &r.w.env, &r.key, &opts, &NoProgress, &cancel)
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

/// Whisper's own job, from this machine's files: each audio file goes through a gpurent tunnel to
/// the running app (the fake answers like whisper-asr-webservice: streamed, chunked, only once
/// done, 500 for what does not decode) and its transcript is written next to it — never over a
/// file already there. A file the service refuses is its own row's error and the others go on; a
/// link cut mid-answer or a cancel ends the run and leaves no transcript, whole or partial.
#[test]
fn whisper_transcribes_local_files_and_a_bad_one_does_not_stop_the_others() {
    use gpurent_core::infra::events::Progress;
    use gpurent_core::recipes::asr::{TranscribeOptions, TranscriptFormat};
    use sha2::{Digest, Sha256};
    use std::sync::{Arc, Mutex};

    let Some(r) = rig("ready_h100", &[]) else {
        return;
    };
    let _guarded = Guarded::on(&r.host);
    let cancel = CancelToken::new();
    let d = tempfile::tempdir().expect("tempdir");
    let meeting = d.path().join("会议 1.mp3");
    let audio: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
    std::fs::write(&meeting, &audio).expect("audio");
    let bad = d.path().join("bad.wav");
    std::fs::write(&bad, b"NOTAUDIO, a text file renamed").expect("bad");
    let talk = d.path().join("talk.m4a");
    std::fs::write(&talk, b"a short talk").expect("talk");
    std::fs::write(d.path().join("talk.m4a.txt"), "my own notes").expect("taken name");
    let opts = TranscribeOptions {
        format: TranscriptFormat::Txt,
        language: Some("zh".into()),
        out_dir: None,
    };
    let transcribe =
        |files: &[std::path::PathBuf], opts: &TranscribeOptions, cancel: &CancelToken| {
            r.w.app.recipe_transcribe_with_key(
                LABEL,
                &r.w.env,
                &r.key,
                files,
                opts,
                &NoProgress,
                cancel,
            )
        };

    // Before the app runs, the error says to start the recipe.
    let e = transcribe(std::slice::from_ref(&talk), &opts, &cancel).expect_err("no app yet");
    assert_eq!(e.code(), "recipe_app_not_running", "{e}");

    let (fwd, _) =
        r.w.app
            .recipe_run_with_key(
                "whisper",
                LABEL,
                &r.w.env,
                &r.key,
                &RecipeRunOptions {
                    port: free_port(),
                    local_port: 0,
                },
                &NoProgress,
                &cancel,
            )
            .unwrap_or_else(|e| panic!("{e} ({:?})", e.detail()));
    // The run's tunnel is closed: transcribing opens its own.
    fwd.stop().expect("stop the run's tunnel");

    let events: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let events = events.clone();
        move |p: Progress| events.lock().expect("events").push(p)
    };
    let report =
        r.w.app
            .recipe_transcribe_with_key(
                LABEL,
                &r.w.env,
                &r.key,
                &[meeting.clone(), bad.clone(), talk.clone()],
                &opts,
                &sink,
                &cancel,
            )
            .unwrap_or_else(|e| panic!("{e} ({:?})", e.detail()));
    assert_eq!((report.transcribed, report.failed), (2, 1), "{report:#?}");
    let text = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    // The meeting: its own transcript next to it, made from exactly its bytes, in Chinese.
    let want = d.path().join("会议 1.mp3.txt");
    assert_eq!(
        report.files[0].transcript.as_deref(),
        Some(want.to_string_lossy().as_ref())
    );
    let sha = format!("{:x}", Sha256::digest(&audio));
    let got = text(&want);
    assert!(
        got.contains(&format!("300000 bytes, sha256 {sha}, language zh")),
        "{got}"
    );
    assert_eq!(report.files[0].audio_bytes, 300_000);
    assert_eq!(report.files[0].transcript_bytes, got.len() as u64);
    // The bad file: its row says the service could not decode it; nothing written for it.
    assert_eq!(report.files[1].error_code.as_deref(), Some("asr_not_audio"));
    assert!(report.files[1].transcript.is_none());
    assert!(!d.path().join("bad.wav.txt").exists());
    // The talk: the taken name kept, the transcript beside it.
    assert_eq!(text(&d.path().join("talk.m4a.txt")), "my own notes");
    assert!(text(&d.path().join("talk (2).m4a.txt")).contains("transcript of talk.m4a"));
    // Progress: all the audio sent, all three files done.
    let ev = events.lock().expect("events").clone();
    let total = (audio.len() + 29 + 12) as u64;
    assert!(
        ev.iter().any(|p| matches!(p, Progress::Bytes { done_bytes, total_bytes: Some(t) } if *done_bytes == total && *t == total)),
        "{ev:?}"
    );
    assert!(matches!(
        ev.last(),
        Some(Progress::Units {
            done_units: 3,
            total_units: Some(3)
        })
    ));
    // Sent through the tunnel to the host's loopback only.
    assert!(requests(&r).lines().any(|l| l
        .starts_with("whisper-asr-webservice POST /asr?task=transcribe")
        && l.ends_with(" 127.0.0.1")));

    // A link cut in the middle of the answer: the run ends with that error, and neither a
    // transcript nor a partial one is left.
    let state = r.host.dir.path().join("state");
    std::fs::write(state.join("asr-cut"), "40").expect("cut");
    let e = transcribe(std::slice::from_ref(&talk), &opts, &cancel).expect_err("cut");
    assert_eq!(e.code(), "asr_unreachable", "{e}");
    std::fs::remove_file(state.join("asr-cut")).expect("uncut");
    // A cancel while the service works: ends within a few seconds, nothing left.
    std::fs::write(state.join("asr-delay"), "30").expect("slow");
    let stop = CancelToken::new();
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_secs(2));
            stop.cancel();
        });
        let e = transcribe(std::slice::from_ref(&talk), &opts, &stop).expect_err("cancelled");
        assert_eq!(e.code(), "cancelled", "{e}");
    });
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    std::fs::remove_file(state.join("asr-delay")).expect("fast");
    let left: Vec<String> = std::fs::read_dir(d.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("talk"))
        .collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, ["talk (2).m4a.txt", "talk.m4a", "talk.m4a.txt"]);

    // Into a chosen folder, as SRT.
    let out = tempfile::tempdir().expect("out");
    let report = transcribe(
        std::slice::from_ref(&talk),
        &TranscribeOptions {
            format: TranscriptFormat::Srt,
            language: None,
            out_dir: Some(out.path().display().to_string()),
        },
        &cancel,
    )
    .expect("srt");
    assert_eq!(report.transcribed, 1);
    assert!(text(&out.path().join("talk.m4a.srt")).starts_with("1\n00:00:00,000 --> "));

    r.w.app
        .guard_off_with_key(LABEL, &r.w.env, &r.key, &cancel)
        .expect("guard off");
    assert!(r
        .w
        .app
        .recipe_stop_with_key("whisper", LABEL, &r.w.env, &r.key, &cancel)
        .expect("stop app"));
}
