//! Ollama over a REAL loopback sshd against the fake `ollama` of `tests/fakegpu` (a small server
//! speaking the documented `/api/version`, streamed `/api/pull`, `/api/generate`, `/api/ps`):
//! started as a supervised job without systemd, reported only once `/api/version` answers,
//! bound to 127.0.0.1 only, pull progress to 100 %, a short answer, stop leaves nothing running.
//! Every API call goes over the SSH connection (`direct-tcpip`), none over the network.
//! Installing where Ollama is missing: the release-shaped archive of the fake `ollama` from a
//! loopback download server (`gpurent_testhost::ollama_dl`), fetched by the host's real `curl`.

mod monitor_common;
mod remote_common;

use std::path::Path;
use std::time::Duration;

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::ipc::Coded;
use gpurent_core::ollama::fit::{self, FitState};
use gpurent_core::ollama::install::{self, InstallOptions, InstallProgress, InstallStage};
use gpurent_core::ollama::{self, OllamaError, PullProgress};
use monitor_common::{free_port, listening, Gpu, LiveHost};

#[test]
fn serve_pull_generate_ps_and_stop_through_the_ssh_connection() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    assert_eq!(
        ollama::version(&conn, port).expect("version"),
        None,
        "nothing yet"
    );

    let gpu = vec!["GPU-00000000-fake-4e5f-8a9b-0c1d2e3f4a5b".to_string()];
    let v = ollama::serve(&conn, port, &gpu, Duration::from_secs(20), &cancel).expect("serve");
    assert_eq!(v, "0.5.7");
    assert_eq!(
        listening(port),
        vec![format!("0100007F:{port:04X}")],
        "bound to 127.0.0.1 only"
    );
    let pid = std::fs::read_to_string(h.host.dir.path().join("home/.gpurent/ollama/serve.pid"))
        .expect("pid file")
        .trim()
        .to_string();
    let env = std::fs::read(format!("/proc/{pid}/environ")).expect("environ");
    assert!(
        String::from_utf8_lossy(&env).contains(&format!("CUDA_VISIBLE_DEVICES={}", gpu[0])),
        "the chosen GPU by UUID"
    );
    // Serving again finds it running and starts nothing (the wait only bounds a failure: 30 s,
    // which a loaded machine answering the version check cannot reach).
    ollama::serve(&conn, port, &[], Duration::from_secs(30), &cancel).expect("serve again");
    assert_eq!(listening(port).len(), 1);

    let mut seen: Vec<PullProgress> = Vec::new();
    ollama::pull(
        &conn,
        port,
        "qwen2.5:0.5b",
        &mut |p| seen.push(p.clone()),
        &cancel,
    )
    .expect("pull");
    assert_eq!(seen[0].status, "pulling manifest");
    let layers: Vec<&PullProgress> = seen.iter().filter(|p| p.total.is_some()).collect();
    assert!(layers.len() >= 3, "{seen:?}");
    let last = layers.last().expect("layer");
    assert_eq!(last.completed, last.total, "100 %");
    assert!(last
        .digest
        .as_deref()
        .is_some_and(|d| d.starts_with("sha256:")));
    assert!(layers.windows(2).all(|w| w[0].completed <= w[1].completed));
    assert_eq!(seen.last().map(|p| p.status.as_str()), Some("success"));

    let mut pieces = Vec::new();
    let answer = ollama::generate(
        &conn,
        port,
        "qwen2.5:0.5b",
        "Say hello",
        &mut |p| pieces.push(p.to_string()),
        &cancel,
    )
    .expect("generate");
    assert_eq!(answer, "Hello from the fake ollama.");
    assert!(pieces.len() > 1, "streamed");
    let loaded = ollama::ps(&conn, port).expect("ps");
    assert_eq!(loaded[0].name, "qwen2.5:0.5b");

    match ollama::pull(&conn, port, "missing-model", &mut |_| {}, &cancel) {
        Err(OllamaError::Api { message, .. }) => assert!(message.contains("does not exist")),
        other => panic!("{other:?}"),
    }
    match ollama::generate(&conn, port, "never-pulled", "hi", &mut |_| {}, &cancel) {
        Err(OllamaError::Api {
            status: 404,
            message,
        }) => assert!(message.contains("not found")),
        other => panic!("{other:?}"),
    }

    assert!(ollama::stop(&conn, &cancel).expect("stop"));
    assert_eq!(ollama::version(&conn, port).expect("version"), None);
    assert!(listening(port).is_empty());
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server is gone"
    );
    assert!(
        !ollama::stop(&conn, &cancel).expect("stop again"),
        "nothing to stop"
    );
}

#[test]
fn a_local_forward_serves_the_api_on_this_machines_loopback() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    ollama::serve(&conn, port, &[], Duration::from_secs(20), &cancel).expect("serve");
    let tunnel = gpurent_core::remote::forward::forward_local(
        h.connect(h.sshd.port(), &cancel)
            .expect("second connection"),
        0,
        port,
    )
    .expect("forward");
    let local = tunnel.local_port;
    assert_eq!(
        listening(local),
        vec![format!("0100007F:{local:04X}")],
        "127.0.0.1 only"
    );
    for _ in 0..3 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", local)).expect("connect local");
        use std::io::{Read, Write};
        s.write_all(b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("write");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("read");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("{\"version\": \"0.5.7\"}"), "{answer}");
    }
    assert_eq!(tunnel.accepted(), 3);
    tunnel.stop().expect("stop");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", local)).is_err(),
        "closed"
    );
    assert!(ollama::stop(&conn, &cancel).expect("stop"));
}

/// Lay out the host without its `ollama`, with the machine's real `curl` (the fake one only
/// answers reachability checks), `tar`/`gzip` and `sha256sum`; `downloader: false` leaves no curl and no wget.
fn without_ollama(downloader: bool) -> impl Fn(&gpurent_testhost::fakegpu::FakeHost) {
    with_downloader(downloader.then_some("curl"))
}

/// [`without_ollama`] with `tool` (`curl`, `wget`, or none) as the only downloader.
fn with_downloader(tool: Option<&'static str>) -> impl Fn(&gpurent_testhost::fakegpu::FakeHost) {
    move |host| {
        let bin = host.bin();
        for t in ["ollama", "curl", "wget"] {
            let _ = std::fs::remove_file(bin.join(t));
        }
        let mut tools = vec!["tar", "gzip", "sha256sum"];
        tools.extend(tool);
        for t in tools {
            let real = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(t))
                .find(|p| p.exists())
                .unwrap_or_else(|| panic!("the install test needs {t} on this machine"));
            std::os::unix::fs::symlink(real, bin.join(t)).expect("link");
        }
    }
}

#[test]
fn install_where_missing_then_serve_answers_and_a_second_install_is_a_no_op() {
    let Some(h) = LiveHost::start_with("ready_h100", &[], &[], &[], &without_ollama(true)) else {
        return;
    };
    let dl =
        gpurent_testhost::ollama_dl::OllamaDownloads::start(&monitor_common::fakegpu(), 3 << 20)
            .expect("download server");
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    assert_eq!(ollama::locate(&conn, &cancel).expect("locate"), None);
    let port = free_port();
    match ollama::serve(&conn, port, &[], Duration::from_secs(5), &cancel) {
        Err(OllamaError::NotInstalled) => {}
        other => panic!("{other:?}"),
    }

    let opts = InstallOptions {
        download_base: dl.base(),
    };
    let mut seen: Vec<InstallProgress> = Vec::new();
    let got =
        install::install(&conn, &opts, &mut |p| seen.push(p.clone()), &cancel).expect("install");
    let home = h.host.dir.path().join("home");
    let expect_path = home.join(".local/bin/ollama").display().to_string();
    assert_eq!(got.path, expect_path, "not root: under ~/.local");
    assert!(!got.already);
    assert_eq!(
        got.arch.as_deref(),
        install::archive_arch(std::env::consts::ARCH)
    );
    assert_eq!(got.prefix, Some(home.join(".local").display().to_string()));
    assert!(
        home.join(".local/lib/ollama/libggml-fake.so").exists(),
        "lib/ollama beside bin"
    );
    assert_eq!(seen[0].stage, InstallStage::Checking);
    let last_dl = seen
        .iter()
        .rev()
        .find(|p| p.stage == InstallStage::Downloading)
        .expect("download progress");
    assert_eq!(last_dl.total, Some(dl.archive_len));
    assert_eq!(last_dl.downloaded, Some(dl.archive_len), "{seen:?}");
    assert!(seen.iter().any(|p| p.stage == InstallStage::Extracting));
    assert_eq!(dl.downloads(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(home.join(".local"))
        .expect("prefix")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".gpurent-ollama"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "the download is cleaned up: {leftovers:?}"
    );

    // Not on PATH, found by absolute path: serve starts it and /api/version answers.
    assert_eq!(
        ollama::locate(&conn, &cancel).expect("locate"),
        Some(expect_path.clone())
    );
    let v = ollama::serve(&conn, port, &[], Duration::from_secs(20), &cancel).expect("serve");
    assert_eq!(v, "0.5.7");
    assert_eq!(listening(port), vec![format!("0100007F:{port:04X}")]);

    // A second install finds it and downloads nothing.
    let again = install::install(&conn, &opts, &mut |_| {}, &cancel).expect("again");
    assert!(again.already);
    assert_eq!(again.path, expect_path);
    assert_eq!(dl.downloads(), 1, "nothing downloaded again");
    assert!(ollama::stop(&conn, &cancel).expect("stop"));
}

#[test]
fn install_without_curl_or_wget_is_the_coded_error() {
    let Some(h) = LiveHost::start_with("ready_h100", &[], &[], &[], &without_ollama(false)) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let opts = InstallOptions {
        download_base: "http://127.0.0.1:9/download".into(),
    };
    let e = install::install(&conn, &opts, &mut |_| {}, &cancel).expect_err("no downloader");
    assert!(matches!(e, OllamaError::NoDownloader), "{e:?}");
    assert_eq!(e.code(), "ollama_no_downloader");
    assert_eq!(ollama::locate(&conn, &cancel).expect("locate"), None);
}

#[test]
fn install_with_too_little_space_and_from_a_dead_mirror_are_coded_errors() {
    // The fake df reports 1 MiB free: less than three times the archive.
    let Some(h) = LiveHost::start_with(
        "ready_h100",
        &[("FAKE_DISK_AVAIL_KB", "1024")],
        &[],
        &[],
        &without_ollama(true),
    ) else {
        return;
    };
    let dl =
        gpurent_testhost::ollama_dl::OllamaDownloads::start(&monitor_common::fakegpu(), 3 << 20)
            .expect("download server");
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let opts = InstallOptions {
        download_base: dl.base(),
    };
    match install::install(&conn, &opts, &mut |_| {}, &cancel) {
        Err(e @ OllamaError::NoSpace { .. }) => {
            assert_eq!(e.code(), "ollama_no_space");
            let OllamaError::NoSpace {
                need_bytes,
                have_bytes,
                ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(have_bytes, Some(1024 * 1024));
            assert!(need_bytes.is_some_and(|n| n > 3 * dl.archive_len));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dl.downloads(), 0, "refused before downloading");

    let dead = InstallOptions {
        download_base: format!("{}/nothing-here", dl.base()),
    };
    let e = install::install(&conn, &dead, &mut |_| {}, &cancel).expect_err("404");
    assert_eq!(e.code(), "ollama_download_failed", "{e:?}");
}

/// The memory check over the connection, with the fake `nvidia-smi` in live mode: a 24 GB card
/// with 300 MiB in use and an empty 80 GB H100, chosen by UUID.
#[test]
fn the_memory_check_reads_the_hosts_gpus_over_ssh() {
    let mut small = Gpu::busy(0);
    (small.mem_total, small.mem_used) = (24_576, 300);
    let mut big = Gpu::busy(0);
    (big.mem_total, big.mem_used) = (81_559, 0);
    let Some(h) = LiveHost::start("ready_h100", &[], &[small, big], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let gpus = fit::host_gpus(&conn, &cancel).expect("gpus");
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].uuid.as_deref(), Some("GPU-00000000-fake-live"));
    assert_eq!(gpus[1].memory_total_mib, Some(81_559.0));

    let on_small = fit::check(
        &conn,
        "qwen2.5:32b",
        &["GPU-00000000-fake-live".into()],
        None,
        &cancel,
    )
    .expect("check");
    assert_eq!(on_small.verdict, FitState::DoesNotFit, "{on_small:?}");
    assert_eq!(
        on_small.context_tokens, 32_768,
        "Ollama's default for 24 GiB"
    );
    assert_eq!(on_small.have_gib, Some((24_576.0 - 300.0) / 1024.0));
    match on_small.refusal() {
        Some(e @ OllamaError::ModelDoesNotFit { .. }) => {
            assert_eq!(e.code(), "model_does_not_fit");
            let data = e.data().expect("data");
            assert!(data.need_gib.expect("need") > data.have_gib.expect("have"));
        }
        other => panic!("{other:?}"),
    }

    let on_big = fit::check(
        &conn,
        "qwen2.5:32b",
        &["GPU-10000000-fake-live".into()],
        None,
        &cancel,
    )
    .expect("check");
    assert_eq!(on_big.verdict, FitState::Fits, "{on_big:?}");
    assert_eq!(on_big.gpus.len(), 1);

    let unknown = fit::check(&conn, "qwen2.5-coder:32b", &[], None, &cancel).expect("check");
    assert_eq!(unknown.verdict, FitState::Unknown);
    assert!(unknown.notes.iter().any(|n| n == fit::NOTE_NOT_IN_TABLE));
    assert_eq!(unknown.gpus.len(), 2);

    let e = fit::check(&conn, "qwen2.5:32b", &["GPU-nope".into()], None, &cancel)
        .expect_err("no such GPU");
    assert_eq!(e.code(), "invalid_input");
}

/// A cancel during the download stops it on the host: no downloader left running, the partial
/// archive removed, nothing installed.
#[test]
fn a_cancelled_install_leaves_nothing_behind() {
    let Some(h) = LiveHost::start_with("ready_h100", &[], &[], &[], &without_ollama(true)) else {
        return;
    };
    // 4 MiB at 64 KiB per 2 s: about 2 min, cancelled after the first reported bytes (a
    // download that is not killed is still running long after the 30 s the test waits below).
    let dl = gpurent_testhost::ollama_dl::OllamaDownloads::start_paced(
        &monitor_common::fakegpu(),
        4 << 20,
        Some(Duration::from_secs(2)),
    )
    .expect("download server");
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let opts = InstallOptions {
        download_base: dl.base(),
    };
    let mut partial = None;
    let e = install::install(
        &conn,
        &opts,
        &mut |p| {
            if p.stage == InstallStage::Downloading && p.downloaded.is_some_and(|d| d > 0) {
                partial = p.downloaded;
                cancel.cancel();
            }
        },
        &cancel,
    )
    .expect_err("cancelled");
    assert_eq!(e.code(), "cancelled", "{e:?}");
    assert!(partial.is_some_and(|d| d < dl.archive_len), "{partial:?}");
    // Waited for (up to 30 s), not timed: a sleep of 300 ms raced the host reaping the killed
    // downloader on a loaded machine. One left by itself would run for minutes.
    let t = std::time::Instant::now();
    let mut left = monitor_common::remote_processes(&dl.base());
    while !left.is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        left = monitor_common::remote_processes(&dl.base());
    }
    assert!(left.is_empty(), "the download was killed: {left:?}");
    let home = h.host.dir.path().join("home");
    let prefix = home.join(".local");
    let leftovers: Vec<_> = std::fs::read_dir(&prefix)
        .expect("prefix")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        leftovers.iter().all(|n| !n.starts_with(".gpurent-ollama")),
        "the partial archive is removed: {leftovers:?}"
    );
    assert!(!prefix.join("bin/ollama").exists());
    let fresh = CancelToken::new();
    assert_eq!(ollama::locate(&conn, &fresh).expect("locate"), None);
}

/// The same install with `wget` as the only downloader.
#[test]
fn install_with_wget_only() {
    if !Path::new("/usr/bin/wget").exists() {
        eprintln!("install_with_wget_only: skipped (no wget on this machine)");
        return;
    }
    let Some(h) = LiveHost::start_with("ready_h100", &[], &[], &[], &with_downloader(Some("wget")))
    else {
        return;
    };
    let dl =
        gpurent_testhost::ollama_dl::OllamaDownloads::start(&monitor_common::fakegpu(), 1 << 20)
            .expect("download server");
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let opts = InstallOptions {
        download_base: dl.base(),
    };
    let mut seen: Vec<InstallProgress> = Vec::new();
    let got =
        install::install(&conn, &opts, &mut |p| seen.push(p.clone()), &cancel).expect("install");
    assert!(!got.already);
    let last = seen
        .iter()
        .rev()
        .find(|p| p.stage == InstallStage::Downloading)
        .expect("progress");
    assert_eq!(
        last.total,
        Some(dl.archive_len),
        "wget's headers give the size"
    );
    assert_eq!(last.downloaded, Some(dl.archive_len));
    let port = free_port();
    assert_eq!(
        ollama::serve(&conn, port, &[], Duration::from_secs(20), &cancel).expect("serve"),
        "0.5.7"
    );
    assert!(ollama::stop(&conn, &cancel).expect("stop"));
}

/// A pull of a big model (a 60 s download here: six steps of 10 s) is cancelled after its first
/// progress line: it returns at its next read (10 s), not when the download ends; a chat is
/// cancelled after its first piece; a model that never stops talking is cut at the chat's cap.
#[test]
fn a_pull_and_a_chat_stop_promptly_and_a_chat_has_a_cap() {
    let Some(h) = LiveHost::start(
        "ready_h100",
        &[("FAKE_OLLAMA_STEP_S", "10"), ("FAKE_OLLAMA_WORD_S", "0.5")],
        &[],
        &[],
    ) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    ollama::serve(&conn, port, &[], Duration::from_secs(20), &cancel).expect("serve");

    let pulling = CancelToken::new();
    let stopper = pulling.clone();
    let t = std::time::Instant::now();
    let r = ollama::pull(
        &conn,
        port,
        "llama3.1:70b",
        &mut |p| {
            if p.total.is_some() {
                stopper.cancel();
            }
        },
        &pulling,
    );
    assert!(r.is_err(), "{r:?}");
    assert_eq!(r.expect_err("cancelled").code(), "cancelled");
    // The next read comes 10 s in, the download's end 60 s in: 40 s tells them apart with 30 s
    // to spare for a loaded machine (8 s against a 5 s step did not).
    assert!(
        t.elapsed() < Duration::from_secs(40),
        "stopped at the next read, not at the download's end: {:?}",
        t.elapsed()
    );

    // A chat cancelled after its first piece (a word every 0.5 s) returns at once.
    std::fs::write(h.state().join("ollama-models"), "qwen2.5:0.5b\nchatty\n").expect("models");
    let chatting = CancelToken::new();
    let stopper = chatting.clone();
    let t = std::time::Instant::now();
    let r = ollama::generate(
        &conn,
        port,
        "chatty",
        "talk",
        &mut |_| stopper.cancel(),
        &chatting,
    );
    assert_eq!(r.expect_err("cancelled").code(), "cancelled");
    // A chat that ignored the cancel would run to its cap (64 KiB of 5-byte words, one per 0.5 s:
    // hours); 30 s is far from both that and what scheduling adds to the next word's 0.5 s.
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    ollama::stop(&conn, &cancel).expect("stop");
}

/// A model that never stops: the chat ends at its cap with the answer so far.
#[test]
fn a_chat_that_never_ends_is_cut_at_the_cap() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    ollama::serve(&conn, port, &[], Duration::from_secs(20), &cancel).expect("serve");
    std::fs::write(h.state().join("ollama-models"), "chatty\n").expect("models");
    let answer = ollama::generate(&conn, port, "chatty", "talk", &mut |_| {}, &cancel)
        .expect("answer at the cap");
    assert_eq!(answer.chars().count(), ollama::MAX_ANSWER);
    ollama::stop(&conn, &cancel).expect("stop");
}

/// Pull and Chat while Start is still coming up: two serves at once start one server, its pid
/// is the one in the pid file, and Stop stops it (the second never overwrites the first's pid).
#[test]
fn two_serves_at_once_start_one_server_that_stop_stops() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let port = free_port();
    let serves: Vec<_> = (0..3)
        .map(|_| {
            let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
            std::thread::spawn(move || {
                ollama::serve_report(
                    &conn,
                    port,
                    &[],
                    Duration::from_secs(30),
                    &CancelToken::new(),
                )
            })
        })
        .collect();
    for s in serves {
        let s = s.join().expect("join").expect("serve");
        assert!(s.ours && s.bound == "127.0.0.1", "{s:?}");
    }
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    assert!(ollama::stop(&conn, &cancel).expect("stop"));
    let t = std::time::Instant::now();
    while !listening(port).is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(listening(port).is_empty(), "stop stopped the server");
    assert_eq!(ollama::version(&conn, port).expect("version"), None);
}

/// A template's own Ollama already on the port, bound to 0.0.0.0 (the fake run here, not by
/// gpurent): serve reports it as not gpurent's and bound to 0.0.0.0, and Stop leaves it alone.
#[test]
fn a_templates_ollama_on_all_interfaces_is_not_reported_as_ours() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    let mut theirs =
        std::process::Command::new(gpurent_testhost::fakegpu::real_python().expect("python"))
            .arg(monitor_common::fakegpu().join("ollama_fake.py"))
            .arg("serve")
            .env("OLLAMA_HOST", format!("0.0.0.0:{port}"))
            .env("FAKEGPU_STATE", h.state())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("their ollama");
    let t = std::time::Instant::now();
    while listening(port).is_empty() {
        assert!(t.elapsed() < Duration::from_secs(20), "their ollama up");
        std::thread::sleep(Duration::from_millis(100));
    }
    let s =
        ollama::serve_report(&conn, port, &[], Duration::from_secs(20), &cancel).expect("serve");
    assert_eq!((s.bound.as_str(), s.ours), ("0.0.0.0", false), "{s:?}");
    // Install on the desktop finds it answering and says the same (not ours, open to the network).
    let w = remote_common::world();
    let key = remote_common::login_key(&h.key, "laptop");
    remote_common::add_confirmed(&w, "box", remote_common::spec(&h.sshd), Some(&key));
    let r = w
        .app
        .ollama_install(
            "box",
            &w.env,
            Some(&key),
            port,
            &[],
            &InstallOptions::default(),
            &mut |_| {},
            &cancel,
        )
        .expect("install report");
    assert!(r.already_installed);
    assert_eq!((r.bound.as_str(), r.ours), ("0.0.0.0", false), "{r:?}");
    assert!(
        !ollama::stop(&conn, &cancel).expect("stop"),
        "not ours to stop"
    );
    assert!(
        theirs.try_wait().expect("wait").is_none(),
        "theirs still runs"
    );
    let _ = theirs.kill();
    let _ = theirs.wait();
}

/// No Ollama is left on the host, nor a half-done download.
fn assert_nothing_installed(h: &LiveHost, conn: &gpurent_core::remote::Connection) {
    let cancel = CancelToken::new();
    assert_eq!(ollama::locate(conn, &cancel).expect("locate"), None);
    let local = h.host.dir.path().join("home/.local");
    let left: Vec<_> = std::fs::read_dir(&local)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.iter().all(|n| n == "bin" || n == "lib") && !local.join("bin/ollama").exists(),
        "{left:?}"
    );
}

#[test]
fn an_archive_that_does_not_match_the_releases_checksum_is_not_installed() {
    use gpurent_testhost::ollama_dl::{OllamaDownloads, Sums};
    let Some(h) = LiveHost::start_with("ready_h100", &[], &[], &[], &without_ollama(true)) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let dl = OllamaDownloads::start_with(&monitor_common::fakegpu(), 1 << 20, None, Sums::Wrong)
        .expect("download server");
    let opts = InstallOptions {
        download_base: dl.base(),
    };
    let e = install::install(&conn, &opts, &mut |_| {}, &cancel).expect_err("altered archive");
    assert_eq!(e.code(), "ollama_checksum_mismatch", "{e:?}");
    let detail = e.detail().unwrap_or_default();
    assert!(
        detail.contains(&format!("expected {:0>64}", "bad")),
        "{detail}"
    );
    assert_eq!(dl.downloads(), 1, "downloaded, then refused");
    assert_nothing_installed(&h, &conn);

    let none =
        OllamaDownloads::start_with(&monitor_common::fakegpu(), 1 << 20, None, Sums::Missing)
            .expect("download server");
    let opts = InstallOptions {
        download_base: none.base(),
    };
    let e = install::install(&conn, &opts, &mut |_| {}, &cancel).expect_err("no sums");
    assert_eq!(e.code(), "ollama_checksum_unavailable", "{e:?}");
    assert!(
        e.detail().unwrap_or_default().contains("sha256sum.txt"),
        "{e:?}"
    );
    assert_eq!(none.downloads(), 0, "refused before downloading");
    assert_nothing_installed(&h, &conn);
}

#[test]
fn an_https_download_redirected_to_plain_http_is_refused() {
    use gpurent_testhost::ollama_dl::OllamaDownloads;
    use gpurent_testhost::tls_redirect::TlsRedirect;
    if !gpurent_testhost::sshd_available() {
        return;
    }
    let dl = OllamaDownloads::start(&monitor_common::fakegpu(), 1 << 20).expect("download server");
    // https://127.0.0.1:P/download/X answers 302 to http://127.0.0.1:Q/download/X.
    let http_root = dl.base().trim_end_matches("/download").to_string();
    let tls = TlsRedirect::start(&http_root).expect("https redirector");
    let ca = tls.ca_file().display().to_string();
    let Some(h) = LiveHost::start_with(
        "ready_h100",
        &[("CURL_CA_BUNDLE", ca.as_str())],
        &[],
        &[],
        &without_ollama(true),
    ) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let opts = InstallOptions {
        download_base: format!("{}/download", tls.base()),
    };
    let e = install::install(&conn, &opts, &mut |_| {}, &cancel).expect_err("downgrade");
    assert_eq!(e.code(), "ollama_insecure_redirect", "{e:?}");
    assert!(
        e.detail().unwrap_or_default().contains(&http_root),
        "names where it was sent: {e:?}"
    );
    assert_eq!(dl.downloads(), 0, "nothing fetched over http");
    assert_nothing_installed(&h, &conn);
}
