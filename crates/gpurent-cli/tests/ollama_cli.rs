//! `gpurent ollama` as a black box against the fake `ollama` of `gpurent-core/tests/fakegpu` on a
//! fake GPU host behind a real loopback sshd: serve (127.0.0.1 only), pull progress as JSON lines
//! up to 100 %, run, ps, a tunnel reachable from here, stop.

mod cli_common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use cli_common::{command as cmd, fakegpu, free_port, gpurent, json as doc, saved_host};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::{sshd_available, Sshd};

#[test]
fn serve_pull_run_ps_tunnel_and_stop() {
    if !sshd_available() {
        return;
    }
    let host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    let sshd: Sshd = host.serve().expect("serve");
    let (home, id) = saved_host(&sshd, "ollama", "box");
    let port = free_port().to_string();
    let base = |rest: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["ollama".into(), "box".into()];
        v.extend(rest.iter().map(|s| s.to_string()));
        v.extend([
            "--port".into(),
            port.clone(),
            "-i".into(),
            id.clone(),
            "--json".into(),
        ]);
        v
    };
    let run = |rest: &[&str]| {
        let a = base(rest);
        gpurent(
            home.path(),
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    };

    let ps = run(&["ps"]);
    assert!(ps.status.success(), "{ps:?}");
    assert_eq!(doc(&ps)["running"], false, "nothing started yet");

    // Chat before Start: refused, and no server started behind the user's back (on every GPU).
    let early = run(&["run", "qwen2.5:0.5b"]);
    assert!(!early.status.success(), "{early:?}");
    assert_eq!(
        doc(&early)["error"]["code"],
        "ollama_not_running",
        "{early:?}"
    );
    assert_eq!(
        doc(&run(&["ps"]))["running"],
        false,
        "still nothing started"
    );

    let serve = run(&["serve"]);
    assert!(serve.status.success(), "{serve:?}");
    let v = doc(&serve);
    assert_eq!(v["version"], "0.5.7");
    assert_eq!(v["bound"], "127.0.0.1");
    assert_eq!(v["ours"], true);

    let pull = run(&["pull", "qwen2.5:0.5b"]);
    assert!(pull.status.success(), "{pull:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&pull.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    // The memory check comes first: a tag gpurent's table does not know is allowed, with a note.
    assert_eq!(lines[0]["kind"], "fit");
    assert_eq!(lines[0]["verdict"], "unknown");
    assert_eq!(lines[0]["notes"][0], "ollama.fit.not_in_table");
    assert_eq!(lines[1]["kind"], "progress");
    assert_eq!(lines[1]["status"], "pulling manifest");
    assert!(lines.iter().any(|l| l["percent"] == 100.0), "{lines:?}");
    assert_eq!(lines.last().expect("result")["kind"], "result");

    let answer = run(&["run", "qwen2.5:0.5b"]);
    assert!(answer.status.success(), "{answer:?}");
    assert_eq!(doc(&answer)["answer"], "Hello from the fake ollama.");
    assert_eq!(doc(&run(&["ps"]))["models"][0]["name"], "qwen2.5:0.5b");

    // The tunnel: a local port here that answers with the host's Ollama.
    let local = free_port().to_string();
    let a = base(&["tunnel", "--local-port", &local]);
    let mut child = cmd(
        home.path(),
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .stdout(Stdio::piped())
    .spawn()
    .expect("tunnel");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("line");
    let t: serde_json::Value = serde_json::from_str(&first).expect("tunnel JSON");
    assert_eq!(t["url"], format!("http://127.0.0.1:{local}"));
    let mut s = std::net::TcpStream::connect(("127.0.0.1", local.parse::<u16>().expect("port")))
        .expect("connect the tunnel");
    s.write_all(b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut body = String::new();
    s.read_to_string(&mut body).expect("read");
    assert!(body.contains("0.5.7"), "{body}");
    child.kill().expect("kill tunnel");
    let _ = child.wait();

    let stop = run(&["stop"]);
    assert_eq!(doc(&stop)["stopped"], true, "{stop:?}");
    assert_eq!(doc(&run(&["ps"]))["running"], false);
    let missing = run(&["pull", "missing-model"]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    let last = String::from_utf8_lossy(&missing.stdout)
        .lines()
        .last()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .expect("error line");
    assert_eq!(last["error"]["code"], "ollama_api_error");
    let _ = run(&["stop"]);
}

/// A saved host `box` on a fake GPU host without `ollama` (the machine's real `curl`, `tar`,
/// `gzip` on it unless `downloader` is false, then no curl and no wget); its home dir, the
/// identity file, the sshd and the fake host (kept alive by the caller).
fn host_without_ollama(downloader: bool) -> (tempfile::TempDir, String, Sshd, FakeHost) {
    let host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    let bin = host.bin();
    for t in ["ollama", "curl", "wget"] {
        let _ = std::fs::remove_file(bin.join(t));
    }
    // sha256sum: the install checks the archive against the release's sha256sum.txt.
    let tools: &[&str] = if downloader {
        &["tar", "gzip", "sha256sum", "curl"]
    } else {
        &["tar", "gzip", "sha256sum"]
    };
    for t in tools {
        let real = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| std::path::Path::new(d).join(t))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("the install test needs {t} on this machine"));
        std::os::unix::fs::symlink(real, bin.join(t)).expect("link");
    }
    let sshd: Sshd = host.serve().expect("serve");
    let (home, id) = saved_host(&sshd, "ollama", "box");
    (home, id, sshd, host)
}

#[test]
fn install_where_missing_answers_and_a_second_install_reports_it() {
    if !sshd_available() {
        return;
    }
    let (home, id, _sshd, host) = host_without_ollama(true);
    let dl = gpurent_testhost::ollama_dl::OllamaDownloads::start(&fakegpu(), 1 << 20)
        .expect("download server");
    let port = free_port().to_string();
    let install = || {
        cmd(
            home.path(),
            &[
                "ollama", "box", "install", "--port", &port, "-i", &id, "--json",
            ],
        )
        .env("GPURENT_OLLAMA_DOWNLOAD_URL", dl.base())
        .output()
        .expect("run gpurent")
    };
    let first = install();
    assert!(first.status.success(), "{first:?}");
    let v = doc(&first);
    assert_eq!(v["already_installed"], false, "{v}");
    assert_eq!(v["version"], "0.5.7");
    assert_eq!(v["port"], port.parse::<u16>().expect("port"));
    let path = host.dir.path().join("home/.local/bin/ollama");
    assert_eq!(v["path"], path.display().to_string());
    assert!(v["url"]
        .as_str()
        .is_some_and(|u| u.ends_with("/download/ollama-linux-amd64.tgz")
            || u.ends_with("/download/ollama-linux-arm64.tgz")));

    let second = install();
    assert!(second.status.success(), "{second:?}");
    let v = doc(&second);
    assert_eq!(v["already_installed"], true, "{v}");
    assert_eq!(v["version"], "0.5.7");
    assert_eq!(dl.downloads(), 1, "downloaded once");
    let stop = gpurent(home.path(), &["ollama", "box", "stop", "-i", &id, "--json"]);
    assert_eq!(doc(&stop)["stopped"], true, "{stop:?}");
}

#[test]
fn install_without_curl_or_wget_prints_the_coded_error() {
    if !sshd_available() {
        return;
    }
    let (home, id, _sshd, _host) = host_without_ollama(false);
    let out = gpurent(
        home.path(),
        &["ollama", "box", "install", "-i", &id, "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(doc(&out)["error"]["code"], "ollama_no_downloader");
}

#[test]
fn a_model_that_does_not_fit_is_refused_unless_forced() {
    if !sshd_available() {
        return;
    }
    // The scenario's H100 (81 559 MiB) with 78 000 MiB in use by something else.
    let mut host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    host.vars.insert("FAKE_GPU_USED_MIB".into(), "78000".into());
    let sshd: Sshd = host.serve().expect("serve");
    let (home, id) = saved_host(&sshd, "ollama", "box");
    let port = free_port().to_string();

    let fit = gpurent(
        home.path(),
        &[
            "ollama",
            "box",
            "fit",
            "llama3.1:8b",
            "--context",
            "4096",
            "-i",
            &id,
            "--json",
        ],
    );
    assert!(fit.status.success(), "{fit:?}");
    let v = doc(&fit);
    assert_eq!(v["verdict"], "does_not_fit", "{v}");
    assert_eq!(v["resolved"]["model_id"], "llama-3.1-8b");
    assert_eq!(v["resolved"]["quant"], "q4_k_m");
    assert_eq!(v["context_tokens"], 4096);
    assert!(v["have_gib"]
        .as_f64()
        .is_some_and(|h| (h - 3559.0 / 1024.0).abs() < 1e-9));

    let refused = gpurent(
        home.path(),
        &[
            "ollama",
            "box",
            "pull",
            "qwen2.5:32b",
            "--port",
            &port,
            "-i",
            &id,
            "--json",
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&refused.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines[0]["kind"], "fit");
    assert_eq!(lines[0]["verdict"], "does_not_fit");
    let err = &lines.last().expect("error")["error"];
    assert_eq!(err["code"], "model_does_not_fit", "{err}");
    let (need, have) = (
        err["data"]["need_gib"].as_f64().expect("need_gib"),
        err["data"]["have_gib"].as_f64().expect("have_gib"),
    );
    assert!(need > have, "{err}");
    assert_eq!(lines.len(), 2, "nothing pulled: {lines:?}");

    let forced = gpurent(
        home.path(),
        &[
            "ollama",
            "box",
            "pull",
            "qwen2.5:32b",
            "--force",
            "--port",
            &port,
            "-i",
            &id,
            "--json",
        ],
    );
    assert!(forced.status.success(), "{forced:?}");
    let last = String::from_utf8_lossy(&forced.stdout)
        .lines()
        .last()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .expect("result");
    assert_eq!(last["kind"], "result");
    assert_eq!(last["pulled"], true);
    let _ = gpurent(home.path(), &["ollama", "box", "stop", "-i", &id, "--json"]);
}
