//! Jupyter over a REAL loopback sshd with a REAL `jupyter-server` from PyPI: bound to 127.0.0.1
//! only, the API answers with gpurent's token and refuses without it, the token is on no command
//! line, the local forward serves it here, stop leaves nothing running; a provider's open Jupyter
//! on the port and a host config that empties the token are not taken for gpurent's; two starts
//! at once share one server.
//!
//! Needs sshd as the other SSH suites, and a Python with `jupyter-server` installed that the test
//! user can run, named by `GPURENT_TEST_JUPYTER_PYTHON` (e.g. `python3 -m venv /opt/jv &&
//! /opt/jv/bin/pip install jupyter-server`); skipped with a message without it.

mod monitor_common;

use std::io::{Read, Write};
use std::time::Duration;

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::jupyter;
use gpurent_core::remote::forward::forward_local;
use monitor_common::{free_port, listening, LiveHost};

/// Processes whose command line contains `needle`.
fn cmdlines_with(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(needle))
        .count()
}

fn get_status(local: u16, token: Option<&str>) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", local)).expect("connect");
    let auth = token.map_or(String::new(), |t| format!("Authorization: token {t}\r\n"));
    write!(
        s,
        "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Connection: close\r\n\r\n"
    )
    .expect("write");
    let mut a = String::new();
    s.read_to_string(&mut a).expect("read");
    a
}

#[test]
fn a_real_jupyter_server_on_loopback_with_a_token_through_the_tunnel() {
    let Some(python) = std::env::var_os("GPURENT_TEST_JUPYTER_PYTHON") else {
        eprintln!("jupyter_ssh: skipped (set GPURENT_TEST_JUPYTER_PYTHON to a python with jupyter-server)");
        return;
    };
    let python = python.to_string_lossy().into_owned();
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    assert_eq!(jupyter::status(&conn, port, None).expect("status"), None);
    let running =
        jupyter::start(&conn, &python, port, Duration::from_secs(90), &cancel).expect("start");
    assert_eq!(running.port, port);
    let token = running.token;
    assert_eq!(
        listening(port),
        vec![format!("0100007F:{port:04X}")],
        "127.0.0.1 only, never 0.0.0.0"
    );
    assert_eq!(
        jupyter::status(&conn, port, Some(&token)).expect("status"),
        Some(200)
    );
    assert_eq!(
        jupyter::status(&conn, port, None).expect("status"),
        Some(403),
        "refused without the token"
    );
    assert_eq!(
        cmdlines_with(token.expose()),
        0,
        "the token is on no command line"
    );

    let fwd =
        forward_local(h.connect(h.sshd.port(), &cancel).expect("conn"), 0, port).expect("forward");
    let ok = get_status(fwd.local_port, Some(token.expose()));
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains("\"started\""), "{ok}");
    let refused = get_status(fwd.local_port, None);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    fwd.stop().expect("stop forward");

    let again =
        jupyter::start(&conn, &python, port, Duration::from_secs(30), &cancel).expect("again");
    assert_eq!(
        again.token.expose(),
        token.expose(),
        "the running server is found, not started twice"
    );
    assert!(jupyter::stop(&conn, &cancel).expect("stop"));
    assert_eq!(jupyter::status(&conn, port, None).expect("status"), None);
    assert!(listening(port).is_empty());
    assert!(!jupyter::stop(&conn, &cancel).expect("stop again"));
}

fn jupyter_python() -> Option<String> {
    let p = std::env::var_os("GPURENT_TEST_JUPYTER_PYTHON");
    if p.is_none() {
        eprintln!("jupyter_ssh: skipped (set GPURENT_TEST_JUPYTER_PYTHON)");
    }
    Some(p?.to_string_lossy().into_owned())
}

/// A provider image's own Jupyter: already on the port, auth disabled, bound to 0.0.0.0 (a real
/// jupyter-server run so, as root with --allow-root; it is not gpurent's).
struct ProviderJupyter(std::process::Child);
impl ProviderJupyter {
    fn start(python: &str, port: u16) -> ProviderJupyter {
        let dir = tempfile::tempdir().expect("tmp");
        let child = std::process::Command::new(python)
            .args([
                "-m",
                "jupyter_server",
                "--allow-root",
                "--ServerApp.ip=0.0.0.0",
                &format!("--ServerApp.port={port}"),
                "--ServerApp.port_retries=0",
                "--IdentityProvider.token=",
                "--ServerApp.open_browser=False",
            ])
            .env("HOME", dir.path())
            .env("JUPYTER_RUNTIME_DIR", dir.path().join("rt"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("provider jupyter");
        std::mem::forget(dir);
        let t = std::time::Instant::now();
        while listening(port).is_empty() {
            assert!(t.elapsed() < Duration::from_secs(60), "provider jupyter up");
            std::thread::sleep(Duration::from_millis(100));
        }
        ProviderJupyter(child)
    }
}
impl Drop for ProviderJupyter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Asked for the port a provider's unauthenticated Jupyter already holds, gpurent's own server
/// cannot bind it, and the provider's answer (200 to any token) is not taken for gpurent's; with
/// port 0 gpurent picks a free port and its own server answers there.
#[test]
fn a_providers_open_jupyter_on_the_port_is_not_taken_for_ours() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    let _provider = ProviderJupyter::start(&python, port);
    assert_eq!(
        jupyter::status(&conn, port, None).expect("status"),
        Some(200),
        "the provider's Jupyter answers without a token"
    );
    let r = jupyter::start(&conn, &python, port, Duration::from_secs(20), &cancel);
    assert!(r.is_err(), "not ours: {r:?}");
    let ours =
        jupyter::start(&conn, &python, 0, Duration::from_secs(90), &cancel).expect("free port");
    assert_ne!(ours.port, port);
    assert_eq!(
        listening(ours.port),
        vec![format!("0100007F:{:04X}", ours.port)]
    );
    assert_eq!(
        jupyter::status(&conn, ours.port, None).expect("status"),
        Some(403)
    );
    assert!(jupyter::stop(&conn, &cancel).expect("stop"));
    assert!(listening(ours.port).is_empty());
}

/// A host config that empties the token: gpurent's server would answer anyone. It is refused
/// (`jupyter_not_private`) and stopped, nothing of it left running.
#[test]
fn a_host_config_that_empties_the_token_is_refused_and_stopped() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cfg = h.host.dir.path().join("home/.jupyter");
    std::fs::create_dir_all(&cfg).expect("cfg dir");
    std::fs::write(
        cfg.join("jupyter_server_config.py"),
        "c.IdentityProvider.token = ''\n",
    )
    .expect("cfg");
    let home = h.host.dir.path().join("home");
    let _ = std::process::Command::new("chown")
        .args(["-R", gpurent_testhost::TEST_USER])
        .arg(&home)
        .status();
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let port = free_port();
    let e = jupyter::start(&conn, &python, port, Duration::from_secs(90), &cancel)
        .expect_err("an open server is not accepted");
    assert_eq!(
        gpurent_core::infra::ipc::Coded::code(&e),
        "jupyter_not_private",
        "{e}"
    );
    let t = std::time::Instant::now();
    while !listening(port).is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(listening(port).is_empty(), "the open server was stopped");
}

/// Two starts at once (Open twice, or the desktop and the CLI): one server, both get its token,
/// and Stop stops it (a second start never overwrites the first one's pid file).
#[test]
fn two_starts_at_once_share_one_server_that_stop_stops() {
    let Some(python) = jupyter_python() else {
        return;
    };
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let cancel = CancelToken::new();
    let port = free_port();
    let starts: Vec<_> = (0..2)
        .map(|_| {
            let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
            let python = python.clone();
            std::thread::spawn(move || {
                jupyter::start(
                    &conn,
                    &python,
                    port,
                    Duration::from_secs(90),
                    &CancelToken::new(),
                )
            })
        })
        .collect();
    let got: Vec<_> = starts
        .into_iter()
        .map(|t| t.join().expect("join").expect("start"))
        .collect();
    assert_eq!(got[0].token.expose(), got[1].token.expose());
    let servers = cmdlines_with(&format!("--ServerApp.port={port}"));
    assert_eq!(servers, 1, "one server");
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    assert!(jupyter::stop(&conn, &cancel).expect("stop"));
    let t = std::time::Instant::now();
    while cmdlines_with(&format!("--ServerApp.port={port}")) > 0
        && t.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(cmdlines_with(&format!("--ServerApp.port={port}")), 0);
}
