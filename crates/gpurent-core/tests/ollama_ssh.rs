//! Ollama over a REAL loopback sshd against the fake `ollama` of `tests/fakegpu` (a small server
//! speaking the documented `/api/version`, streamed `/api/pull`, `/api/generate`, `/api/ps`):
//! started as a supervised job without systemd, reported only once `/api/version` answers,
//! bound to 127.0.0.1 only, pull progress to 100 %, a short answer, stop leaves nothing running.
//! Every API call goes over the SSH connection (`direct-tcpip`), none over the network.

mod monitor_common;

use std::path::Path;
use std::time::Duration;

use gpurent_core::cancel::CancelToken;
use gpurent_core::ollama::{self, OllamaError, PullProgress};
use monitor_common::LiveHost;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Local addresses listening on `port` (from /proc/net/tcp and tcp6, hex `ADDR:PORT`).
fn listening(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for l in std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let c: Vec<&str> = l.split_whitespace().collect();
            if c.len() > 3 && c[3] == "0A" && c[1].ends_with(&format!(":{port:04X}")) {
                out.push(c[1].to_string());
            }
        }
    }
    out
}

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
    // Serving again finds it running and starts nothing.
    ollama::serve(&conn, port, &[], Duration::from_secs(5), &cancel).expect("serve again");
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
    let answer = ollama::generate(&conn, port, "qwen2.5:0.5b", "Say hello", &mut |p| {
        pieces.push(p.to_string())
    })
    .expect("generate");
    assert_eq!(answer, "Hello from the fake ollama.");
    assert!(pieces.len() > 1, "streamed");
    let loaded = ollama::ps(&conn, port).expect("ps");
    assert_eq!(loaded[0].name, "qwen2.5:0.5b");

    match ollama::pull(&conn, port, "missing-model", &mut |_| {}, &cancel) {
        Err(OllamaError::Api { message, .. }) => assert!(message.contains("does not exist")),
        other => panic!("{other:?}"),
    }
    match ollama::generate(&conn, port, "never-pulled", "hi", &mut |_| {}) {
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
