//! `gpurent jupyter` as a black box with a REAL jupyter-server on a fake host behind a real
//! loopback sshd: the printed URL's token opens the API through the tunnel, `--stop` stops it.
//! Needs `GPURENT_TEST_JUPYTER_PYTHON` (a python with jupyter-server the test user can run);
//! skipped with a message without it.

mod cli_common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use cli_common::{command as cmd, fakegpu, free_port, saved_host};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::sshd_available;

#[test]
fn the_printed_url_opens_jupyter_through_the_tunnel_and_stop_stops_it() {
    let Some(python) = std::env::var_os("GPURENT_TEST_JUPYTER_PYTHON") else {
        eprintln!("jupyter_cli: skipped (set GPURENT_TEST_JUPYTER_PYTHON)");
        return;
    };
    if !sshd_available() {
        return;
    }
    let host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    let sshd = host.serve().expect("serve");
    let (home, id) = saved_host(&sshd, "jupyter", "box");
    let (port, local) = (free_port().to_string(), free_port().to_string());
    let py = python.to_string_lossy().into_owned();
    let mut child = cmd(
        home.path(),
        &[
            "jupyter",
            "box",
            "--json",
            "--python",
            &py,
            "--port",
            &port,
            "--local-port",
            &local,
            "-i",
            &id,
        ],
    )
    .stdout(Stdio::piped())
    .spawn()
    .expect("jupyter");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    let v: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let token = v["token"].as_str().expect("token").to_string();
    assert_eq!(v["url"], format!("http://127.0.0.1:{local}/?token={token}"));
    let get = |auth: bool| {
        let mut s =
            std::net::TcpStream::connect(("127.0.0.1", local.parse::<u16>().expect("port")))
                .expect("connect");
        let a = if auth {
            format!("Authorization: token {token}\r\n")
        } else {
            String::new()
        };
        write!(
            s,
            "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n{a}Connection: close\r\n\r\n"
        )
        .expect("write");
        let mut r = String::new();
        s.read_to_string(&mut r).expect("read");
        r
    };
    assert!(get(true).starts_with("HTTP/1.1 200"));
    assert!(get(false).starts_with("HTTP/1.1 403"));
    child.kill().expect("kill");
    let _ = child.wait();
    let stop = cmd(
        home.path(),
        &["jupyter", "box", "--stop", "--json", "-i", &id],
    )
    .output()
    .expect("stop");
    let v: serde_json::Value = serde_json::from_slice(&stop.stdout).expect("json");
    assert_eq!(v["stopped"], true, "{stop:?}");
}
