//! `gpurent recipe` as a black box: `list --json` (the five goals, tunnel-only ports, a driver
//! floor per image), and `run NAME --host LABEL --json` on a fake GPU host behind a real loopback
//! sshd: one JSON line once the fake Whisper service answered through the tunnel, the tunnel
//! reachable here, the guard set; a failing step is its own error code with `"step"`.

mod cli_common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use cli_common::{command as cmd, fakegpu, free_port, gpurent, json as doc};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::{sshd_available, Sshd};

#[test]
fn list_names_the_five_goals_with_tunnel_only_ports_and_driver_floors() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["recipe", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v = doc(&out);
    let names: Vec<&str> = v["recipes"]
        .as_array()
        .expect("recipes")
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "ollama-chat",
            "comfyui",
            "jupyter-pytorch",
            "whisper",
            "lora-training"
        ]
    );
    for r in v["recipes"].as_array().expect("recipes") {
        for p in r["ports"].as_array().expect("ports") {
            assert_eq!(p["reach"], "tunnel");
            assert_eq!(p["bind"], "127.0.0.1");
        }
        for i in r["images"].as_array().expect("images") {
            assert!(i["min_driver"].as_str().is_some_and(|d| !d.is_empty()));
            assert!(i["cuda"].as_str().is_some_and(|d| !d.is_empty()));
        }
        assert!(r["goal"]["zh_cn"].as_str().is_some_and(|z| !z.is_ascii()));
    }
    let bad = gpurent(
        home.path(),
        &["recipe", "run", "nope", "--host", "x", "--json"],
    );
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert_eq!(doc(&bad)["error"]["code"], "invalid_input");
    assert_eq!(doc(&bad)["step"], "setup");
}

fn write_exec(p: &Path, body: &str) {
    std::fs::write(p, body).expect("write");
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `ready_h100` with what the guard needs (a fake poweroff, wall, mv, nohup), healthy H100
/// speeds for Setup's GPU check, and `extra` variables; saved as `box`. (home, identity file,
/// sshd, host)
fn saved_host(extra: &[(&str, &str)]) -> (tempfile::TempDir, String, Sshd, FakeHost) {
    let mut host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    let bin = host.bin();
    let py = bin.join("python3").display().to_string();
    for (k, v) in [
        ("FAKE_PY_EXECUTABLE", py.as_str()),
        ("FAKE_VERIFY_TFLOPS", "700"),
        ("FAKE_VERIFY_GBPS", "2900"),
        ("FAKE_WEBAPP_BOOT_S", "1"),
    ]
    .iter()
    .chain(extra)
    {
        host.vars.insert(k.to_string(), v.to_string());
    }
    write_exec(
        &bin.join("poweroff"),
        "#!/bin/sh\necho \"$(date +%s) poweroff $*\" >> \"$FAKEGPU_STATE/poweroff.log\"\n",
    );
    write_exec(&bin.join("wall"), "#!/bin/sh\ncat > /dev/null\n");
    for t in ["mv", "nohup"] {
        let target = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .expect("system tool");
        std::os::unix::fs::symlink(target, bin.join(t)).expect("link");
    }
    let sshd = host.serve().expect("serve");
    let (home, id) = cli_common::saved_host(&sshd, "recipe", "box");
    (home, id, sshd, host)
}

/// Stop the guard the run left on the fake host (its pid file's `guard.sh`).
fn stop_guard(host: &FakeHost) {
    let dir = host.dir.path().join("home/.gpurent/guard");
    if let Ok(pid) = std::fs::read_to_string(dir.join("pid")) {
        let pid = pid.trim().to_string();
        let ours = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .map(|c| c.contains("guard.sh"))
            .unwrap_or(false);
        if ours {
            let _ = std::process::Command::new("kill").arg(&pid).status();
        }
    }
}

#[test]
fn run_whisper_on_a_saved_host_then_stop_it() {
    if !sshd_available() {
        assert_ne!(std::env::var("GPURENT_REQUIRE_SSH").as_deref(), Ok("1"));
        return;
    }
    let (home, id, _sshd, host) = saved_host(&[]);
    let port = free_port().to_string();
    let mut child = cmd(
        home.path(),
        &[
            "recipe", "run", "whisper", "--host", "box", "--port", &port, "-i", &id, "--json",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("line");
    let v: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| {
        let _ = child.kill();
        let mut err = String::new();
        let _ = child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err);
        panic!("{e}: {first} {err}")
    });
    assert_eq!(
        v["steps"],
        serde_json::json!(["setup", "start", "ready", "guard", "open"])
    );
    assert_eq!(v["ready_path"], "/docs");
    assert_eq!(v["ready_status"], 200);
    assert_eq!(v["guard"]["running"], true);
    // Whisper's transcripts come back to this machine directly: no result folder to download.
    assert_eq!(v["results"], serde_json::json!([]));
    let local = v["local_port"].as_u64().expect("local port") as u16;
    assert_eq!(v["url"], format!("http://127.0.0.1:{local}/"));
    let mut s = std::net::TcpStream::connect(("127.0.0.1", local)).expect("tunnel");
    s.write_all(b"GET /docs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut body = String::new();
    s.read_to_string(&mut body).expect("read");
    assert!(body.contains("Swagger UI"), "{body}");
    let _ = child.kill();
    let _ = child.wait();

    // Transcribe two local files with the running app (its own tunnel; the run's is closed): one
    // transcript written next to its audio, one file refused (exit 1, its own row's code).
    let audio = tempfile::tempdir().expect("audio dir");
    let good = audio.path().join("lecture.mp3");
    std::fs::write(&good, b"RIFF pretend audio").expect("audio");
    let bad = audio.path().join("notes.wav");
    std::fs::write(&bad, b"NOTAUDIO").expect("not audio");
    let (g, b) = (good.display().to_string(), bad.display().to_string());
    let out = gpurent(
        home.path(),
        &[
            "recipe",
            "transcribe",
            "--host",
            "box",
            &g,
            &b,
            "--language",
            "zh",
            "-i",
            &id,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "one file failed: {out:?}");
    let t = doc(&out);
    assert_eq!(
        (t["transcribed"].as_u64(), t["failed"].as_u64()),
        (Some(1), Some(1)),
        "{t}"
    );
    assert_eq!(t["files"][0]["transcript"], format!("{g}.txt"));
    assert_eq!(t["files"][1]["error_code"], "asr_not_audio");
    let text = std::fs::read_to_string(format!("{g}.txt")).expect("transcript");
    assert!(
        text.contains("transcript of lecture.mp3 (18 bytes"),
        "{text}"
    );
    assert!(text.contains("language zh"), "{text}");
    // A format the service does not have is refused before anything is sent.
    let out = gpurent(
        home.path(),
        &[
            "recipe",
            "transcribe",
            "--host",
            "box",
            &g,
            "--format",
            "docx",
            "-i",
            &id,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(doc(&out)["error"]["code"], "invalid_input");
    stop_guard(&host);
    let stop = gpurent(
        home.path(),
        &[
            "recipe", "stop", "whisper", "--host", "box", "-i", &id, "--json",
        ],
    );
    assert_eq!(doc(&stop)["stopped"], true, "{stop:?}");
}

#[test]
fn a_failing_step_is_its_own_error_with_the_step() {
    if !sshd_available() {
        return;
    }
    let (home, id, _sshd, host) = saved_host(&[("FAKE_WEBAPP_FAIL", "1")]);
    let port = free_port().to_string();
    let out = gpurent(
        home.path(),
        &[
            "recipe", "run", "whisper", "--host", "box", "--port", &port, "-i", &id, "--json",
        ],
    );
    stop_guard(&host);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = doc(&out);
    assert_eq!(v["error"]["code"], "app_exited", "{v}");
    assert_eq!(v["step"], "ready");
    assert_eq!(v["error"]["data"]["step"], "ready");
    assert!(
        v["error"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("No module named")),
        "the app's log: {v}"
    );
}
