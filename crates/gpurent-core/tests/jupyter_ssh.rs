//! Jupyter over a REAL loopback sshd with a REAL `jupyter-server` from PyPI: bound to 127.0.0.1
//! only, the API answers with gpurent's token and refuses without it, the token is on no command
//! line, the local forward serves it here, stop leaves nothing running.
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
    let token =
        jupyter::start(&conn, &python, port, Duration::from_secs(90), &cancel).expect("start");
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
        again.expose(),
        token.expose(),
        "the running server is found, not started twice"
    );
    assert!(jupyter::stop(&conn, &cancel).expect("stop"));
    assert_eq!(jupyter::status(&conn, port, None).expect("status"), None);
    assert!(listening(port).is_empty());
    assert!(!jupyter::stop(&conn, &cancel).expect("stop again"));
}
