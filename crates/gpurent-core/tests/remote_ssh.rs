//! Connections against a real OpenSSH sshd on loopback (gpurent-testhost): every outcome, exec
//! without deadlock, quoting over a real remote shell, jump hosts.
//! Needs `scripts/setup-test-host.sh` (skips with a message otherwise; fails under CI=true).

mod remote_common;

use std::time::{Duration, Instant};

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::connect::{open, KeyVerifier};
use gpurent_core::remote::{connect, exec, shell_quote, Auth, Endpoint, RemoteError, Role, Stage};
use gpurent_core::Coded;
use gpurent_testhost::{closed_port, sshd_available, SilentListener, Sshd, SshdOptions, UserKey};
use remote_common::opts;

fn accept_all(
) -> impl FnMut(Role, &Endpoint, &gpurent_core::remote::hostkey::PresentedKey) -> Result<(), RemoteError>
{
    |_, _, _| Ok(())
}

fn key_sshd() -> (Sshd, UserKey) {
    let sshd = Sshd::start().expect("start sshd");
    let key = UserKey::generate("gpurent-test").expect("key");
    sshd.authorize(&key.public_line).expect("authorize");
    (sshd, key)
}

/// A key login to `sshd` that accepts its host key.
fn key_login(sshd: &Sshd, key: &UserKey) -> gpurent_core::remote::Connection {
    let pem = Secret::new(key.private_pem.clone());
    connect(
        &ep(sshd),
        None,
        Auth::Key(&pem),
        &opts(),
        &mut accept_all(),
        &CancelToken::new(),
    )
    .expect("connect")
}

fn ep(sshd: &Sshd) -> Endpoint {
    Endpoint::new(sshd.host(), sshd.port(), sshd.user())
}

#[test]
fn key_login_runs_commands_and_quoted_arguments_arrive_intact() {
    if !sshd_available() {
        return;
    }
    let (sshd, key) = key_sshd();
    let pem = Secret::new(key.private_pem.clone());
    let mut seen = Vec::new();
    let mut verify = |role: Role, _: &Endpoint, k: &gpurent_core::remote::hostkey::PresentedKey| {
        seen.push((role, k.fingerprint.clone(), k.key_type.clone()));
        Ok(())
    };
    let v: &mut KeyVerifier<'_> = &mut verify;
    let conn = connect(
        &ep(&sshd),
        None,
        Auth::Key(&pem),
        &opts(),
        v,
        &CancelToken::new(),
    )
    .expect("connect");
    assert_eq!(
        seen,
        vec![(
            Role::Target,
            sshd.host_key_fingerprint().expect("fp"),
            "ssh-ed25519".to_string()
        )]
    );
    assert_eq!(conn.auth_method(), Some("publickey"));

    let out = exec(&conn, "echo out; echo err >&2; exit 3", &CancelToken::new()).expect("exec");
    assert_eq!(
        (
            out.exit_status,
            out.stdout_text().as_str(),
            out.stderr_text().as_str()
        ),
        (Some(3), "out\n", "err\n")
    );

    let nasty = [
        "it's",
        "$(touch pwned)",
        "`touch pwned`",
        "a;touch pwned",
        "line1\nline2",
        "--rf",
        "-n",
        "数据集 训练",
        "🚀 emoji",
        "back\\slash \"dq\"",
        "",
    ];
    for arg in nasty {
        let cmd = format!("printf '%s' {}", shell_quote(arg).expect("quote"));
        let out = exec(&conn, &cmd, &CancelToken::new()).expect("exec");
        assert_eq!(out.stdout_text(), arg, "{cmd}");
    }
    assert!(
        !sshd.home().join("pwned").exists(),
        "nothing executed on the host"
    );
}

#[test]
fn large_stderr_does_not_deadlock_and_cancel_stops_a_command() {
    if !sshd_available() {
        return;
    }
    let (sshd, key) = key_sshd();
    let conn = key_login(&sshd, &key);
    // 3 MiB to stderr before any stdout: more than the 2 MiB channel window.
    let cmd = "head -c 3145728 /dev/zero | tr '\\0' e >&2; head -c 1048576 /dev/zero | tr '\\0' o; exit 7";
    let out = exec(&conn, cmd, &CancelToken::new()).expect("exec");
    assert_eq!(out.exit_status, Some(7));
    assert_eq!(out.stderr.len(), 3 * 1024 * 1024);
    assert!(out.stderr.iter().all(|&b| b == b'e'));
    assert_eq!(out.stdout.len(), 1024 * 1024);

    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c2.cancel();
    });
    let t0 = Instant::now();
    let r = exec(&conn, "sleep 60", &cancel);
    t.join().expect("join");
    assert_eq!(r.expect_err("cancelled").code(), "cancelled");
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "cancel took {:?}",
        t0.elapsed()
    );
    // The session is still usable after a cancelled command.
    let out = exec(&conn, "echo still-here", &CancelToken::new()).expect("exec");
    assert_eq!(out.stdout_text(), "still-here\n");
}

/// Security review §7.1: a command that floods its output is stopped at the collection cap
/// with a typed error (an endless stream would otherwise grow gpurent's memory until it is
/// killed), and the session stays usable.
#[test]
fn a_flooding_command_is_stopped_at_the_cap() {
    if !sshd_available() {
        return;
    }
    let (sshd, key) = key_sshd();
    let conn = key_login(&sshd, &key);
    // 32 MiB: twice the cap (and bounded, should the cap be gone).
    let e = exec(
        &conn,
        "head -c 33554432 /dev/zero | tr '\\0' y",
        &CancelToken::new(),
    )
    .expect_err("stopped");
    assert_eq!(e.code(), "output_too_large", "{e:?}");
    let e = gpurent_core::remote::exec::exec_collect_max(
        &conn,
        "echo 12345; echo 67890 >&2",
        &Default::default(),
        8,
        &CancelToken::new(),
    )
    .expect_err("over 8 bytes");
    assert_eq!(e.code(), "output_too_large");
    let out = exec(&conn, "echo still-here", &CancelToken::new()).expect("exec");
    assert_eq!(out.stdout_text(), "still-here\n");
}

#[test]
fn refused_port_and_wrong_key_and_wrong_password_are_typed() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start_with(SshdOptions {
        password_auth: true,
        ..Default::default()
    })
    .expect("sshd");
    let stranger = UserKey::generate("not-authorized").expect("key");
    let pem = Secret::new(stranger.private_pem.clone());
    let cancel = CancelToken::new();

    let refused = Endpoint::new("127.0.0.1", closed_port().expect("port"), "gputest");
    let e = connect(
        &refused,
        None,
        Auth::Key(&pem),
        &opts(),
        &mut accept_all(),
        &cancel,
    )
    .expect_err("refused");
    assert_eq!(e.code(), "connection_refused", "{e:?}");

    let e = connect(
        &ep(&sshd),
        None,
        Auth::Key(&pem),
        &opts(),
        &mut accept_all(),
        &cancel,
    )
    .expect_err("wrong key");
    match &e {
        RemoteError::AuthRejected {
            method, offered, ..
        } => {
            assert_eq!(method, "publickey");
            assert!(offered.contains("password"), "{offered}");
        }
        other => panic!("{other:?}"),
    }
    let bad_pw = Secret::new("not-the-password");
    let e = connect(
        &ep(&sshd),
        None,
        Auth::Password(&bad_pw),
        &opts(),
        &mut accept_all(),
        &cancel,
    )
    .expect_err("wrong password");
    assert_eq!(e.code(), "auth_rejected");
    let garbage = Secret::new(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nnope\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    let e = connect(
        &ep(&sshd),
        None,
        Auth::Key(&garbage),
        &opts(),
        &mut accept_all(),
        &cancel,
    )
    .expect_err("garbage key");
    assert_eq!(e.code(), "key_unusable", "{e:?}");
    let pw = Secret::new(gpurent_testhost::TEST_PASSWORD);
    let conn = connect(
        &ep(&sshd),
        None,
        Auth::Password(&pw),
        &opts(),
        &mut accept_all(),
        &cancel,
    )
    .expect("password login");
    assert_eq!(conn.auth_method(), Some("password"));
}

#[test]
fn an_unresponsive_peer_times_out_in_the_handshake() {
    let silent = SilentListener::start().expect("listen");
    let mut o = opts();
    o.handshake_timeout = Duration::from_millis(1500);
    let t0 = Instant::now();
    let e = open(
        &Endpoint::new("127.0.0.1", silent.port(), "x"),
        None,
        &o,
        &mut accept_all(),
        &CancelToken::new(),
    )
    .expect_err("times out");
    match e {
        RemoteError::TimedOut { stage, after_ms } => {
            assert_eq!((stage, after_ms), (Stage::Handshake, 1500));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(1400),
        "waited {:?}",
        t0.elapsed()
    );
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "waited {:?}",
        t0.elapsed()
    );
    assert_eq!(silent.accepted(), 1);
}

#[test]
fn unknown_host_names_fail_in_dns() {
    let e = open(
        &Endpoint::new("no-such-host.invalid", 22, "x"),
        None,
        &opts(),
        &mut accept_all(),
        &CancelToken::new(),
    )
    .expect_err("dns");
    // A resolver that cannot answer in time gives a DNS-stage timeout instead.
    match e {
        RemoteError::DnsFailed { host, .. } => assert_eq!(host, "no-such-host.invalid"),
        RemoteError::TimedOut {
            stage: Stage::Dns, ..
        } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_jump_host_carries_the_session_and_reports_an_unreachable_target() {
    if !sshd_available() {
        return;
    }
    let (jump, key) = key_sshd();
    let target = Sshd::start().expect("target sshd");
    target.authorize(&key.public_line).expect("authorize");
    let pem = Secret::new(key.private_pem.clone());
    let mut roles = Vec::new();
    let mut verify = |role: Role, e: &Endpoint, k: &gpurent_core::remote::hostkey::PresentedKey| {
        roles.push((role, e.port, k.fingerprint.clone()));
        Ok(())
    };
    let v: &mut KeyVerifier<'_> = &mut verify;
    let conn = connect(
        &ep(&target),
        Some(&ep(&jump)),
        Auth::Key(&pem),
        &opts(),
        v,
        &CancelToken::new(),
    )
    .expect("through jump");
    let out = exec(&conn, "echo \"$HOME\"", &CancelToken::new()).expect("exec");
    assert_eq!(
        out.stdout_text().trim(),
        target.home().to_str().expect("utf8")
    );
    // A few MiB through the relay both ways keeps its bytes.
    let out = exec(
        &conn,
        "head -c 4000000 /dev/zero | tr '\\0' z",
        &CancelToken::new(),
    )
    .expect("big");
    assert_eq!(out.stdout.len(), 4_000_000);
    drop(conn);
    assert_eq!(
        roles,
        vec![
            (
                Role::Jump,
                jump.port(),
                jump.host_key_fingerprint().expect("fp")
            ),
            (
                Role::Target,
                target.port(),
                target.host_key_fingerprint().expect("fp")
            ),
        ]
    );

    let nowhere = Endpoint::new("127.0.0.1", closed_port().expect("port"), "gputest");
    let e = connect(
        &nowhere,
        Some(&ep(&jump)),
        Auth::Key(&pem),
        &opts(),
        &mut accept_all(),
        &CancelToken::new(),
    )
    .expect_err("unreachable behind jump");
    assert_eq!(e.code(), "jump_forward_failed", "{e:?}");
}

/// An echo server on this machine's loopback (the host's, for the loopback sshd).
fn echo_server() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = s.try_clone().expect("clone");
                let mut w = s;
                let _ = std::io::copy(&mut r, &mut w);
            });
        }
    });
    port
}

fn echo_through(local: u16) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", local)).expect("connect local");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(b"ping").expect("write");
    let mut b = [0u8; 4];
    s.read_exact(&mut b).expect("echo");
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn a_tunnel_whose_link_dies_silently_closes_and_an_idle_healthy_one_stays_open() {
    use gpurent_core::remote::forward::{forward_local_with, Liveness};
    if !sshd_available() {
        return;
    }
    let (sshd, key) = key_sshd();
    let proxy = gpurent_testhost::DelayProxy::start(
        format!("127.0.0.1:{}", sshd.port()).parse().expect("addr"),
        Duration::ZERO,
    )
    .expect("proxy");
    let pem = Secret::new(key.private_pem.clone());
    let mut accept = accept_all();
    let conn = connect(
        &Endpoint::new(sshd.host(), proxy.port(), sshd.user()),
        None,
        Auth::Key(&pem),
        &opts(),
        &mut accept,
        &CancelToken::new(),
    )
    .expect("connect through the proxy");
    // A probe's answer may take 10 s before the link counts as dead: 2 s could be reached by a
    // healthy loopback sshd on a loaded machine, and closed the healthy tunnel below.
    let live = Liveness {
        idle: Duration::from_millis(300),
        timeout: Duration::from_secs(10),
    };
    let fwd = forward_local_with(conn, 0, echo_server(), live).expect("forward");
    assert_eq!(echo_through(fwd.local_port), "ping");
    // Idle and healthy for many probe periods: it stays open and still relays.
    std::thread::sleep(Duration::from_secs(3));
    assert!(fwd.is_open(), "a healthy idle tunnel stays open");
    assert_eq!(echo_through(fwd.local_port), "ping");

    // The link dies without a FIN or RST: within idle + timeout (+ slack) the tunnel ends.
    proxy.drop_silently();
    let t = Instant::now();
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        c2.cancel();
    });
    let r = fwd.wait(&cancel);
    let e = r.expect_err("the dead link is found, not waited on until cancelled");
    assert_eq!(e.code(), "connection_lost", "{e:?}");
    // Found by the probe (idle + timeout: about 10.3 s), not by the cancel at 120 s: 60 s tells
    // them apart whatever a loaded machine adds.
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
}
