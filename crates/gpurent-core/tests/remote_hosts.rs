//! Hosts through the App facade against real OpenSSH sshds on loopback: first-use pinning,
//! password login → key install → key login → hardening, host key change → re-pin, the user's
//! known_hosts verdicts, latency through the delay proxy, and the ssh config block used by the
//! real `ssh` client with the key in a real ssh-agent.

mod remote_common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use gpurent_core::app::hosts::{HostAddRequest, KeyInstall};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::hostkey::PinSource;
use gpurent_core::remote::install::InstallOutcome;
use gpurent_core::remote::{connect, Auth, Endpoint, JumpSpec, RemoteError, Role};
use gpurent_core::Coded;
use gpurent_testhost::{sshd_available, DelayProxy, Sshd, SshdOptions, UserKey, TEST_PASSWORD};
use remote_common::{add_confirmed, login_key, opts, spec, spec_port, world};

#[test]
fn first_use_asks_for_the_fingerprint_and_check_reports_key_login_and_latency() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let k = UserKey::generate("gpurent-test").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let w = world();
    let key = login_key(&k, "laptop");
    let cancel = CancelToken::new();
    let mut req = HostAddRequest {
        spec: spec(&sshd),
        label: Some("box".into()),
        key_label: None,
        trust: vec![],
    };
    let fp = match w.app.host_add(&req, &w.env, None, &cancel) {
        Err(RemoteError::HostKeyUnknown {
            fingerprint, role, ..
        }) => {
            assert_eq!(role, Role::Target);
            fingerprint
        }
        other => panic!("expected host_key_unknown, got {other:?}"),
    };
    assert_eq!(fp, sshd.host_key_fingerprint().expect("fp"));
    assert!(
        w.app.host_list().expect("list").is_empty(),
        "nothing saved before confirmation"
    );

    req.trust = vec!["SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into()];
    let e = w
        .app
        .host_add(&req, &w.env, None, &cancel)
        .expect_err("wrong fp");
    assert_eq!(e.code(), "host_key_trust_mismatch");
    assert!(w.app.host_list().expect("list").is_empty());

    req.trust = vec![fp.clone()];
    let host = w.app.host_add(&req, &w.env, None, &cancel).expect("pinned");
    let pin = host.pinned(Role::Target).expect("pin");
    assert_eq!(
        (pin.fingerprint.as_str(), pin.source),
        (fp.as_str(), PinSource::User)
    );
    assert_eq!(pin.pinned_ms, 1_000);
    assert!(matches!(
        w.app.host_add(&req, &w.env, None, &cancel),
        Err(RemoteError::HostExists(_))
    ));

    let check = w
        .app
        .host_check_with_key("box", &w.env, &key, &NoProgress, &cancel)
        .expect("check");
    assert!(check.host_key_ok && check.key_login_ok, "{check:?}");
    assert!(check.latency_ms.is_some_and(|l| l >= 0.0));
    let stranger = login_key(&UserKey::generate("other").expect("key"), "other");
    let check = w
        .app
        .host_check_with_key("box", &w.env, &stranger, &NoProgress, &cancel)
        .expect("check");
    assert!(!check.key_login_ok);
    assert_eq!(check.key_login_problem.as_deref(), Some("auth_rejected"));
    let saved = w.app.host_get("box").expect("get");
    // The latency may come back one ulp off through storage (9.985221 vs 9.985221000000001).
    let mut stored = saved.last_check.clone().expect("a saved check");
    let (a, b) = (stored.latency_ms.take(), check.latency_ms);
    assert!(
        matches!((a, b), (Some(x), Some(y)) if (x - y).abs() < 1e-9),
        "{a:?} vs {b:?}"
    );
    let mut want = check.clone();
    want.latency_ms = None;
    assert_eq!(stored, want);

    w.app.host_delete("box", &w.env).expect("delete");
    assert!(matches!(
        w.app.host_get("box"),
        Err(RemoteError::UnknownHost(_))
    ));
}

#[test]
fn password_login_installs_the_key_once_then_key_login_works_then_passwords_go_off() {
    if !sshd_available() {
        return;
    }
    let mut sshd = Sshd::start_with(SshdOptions {
        password_auth: true,
        ..Default::default()
    })
    .expect("sshd");
    let w = world();
    let mut env = w.env.clone();
    env.sshd_dropin_dir = sshd.config_dropin_dir().display().to_string();
    let k = UserKey::generate("gpurent laptop 数据").expect("key");
    let key = login_key(&k, "laptop");
    let cancel = CancelToken::new();
    add_confirmed(&w, "autodl", spec(&sshd), None);
    let before = w
        .app
        .host_check_with_key("autodl", &env, &key, &NoProgress, &cancel)
        .expect("check");
    assert!(!before.key_login_ok, "key not installed yet");

    let wrong = Secret::new("wrong password");
    let install = |pw: &Secret, harden: bool| {
        w.app.host_install_key(
            "autodl",
            &KeyInstall {
                password: pw,
                key: &key,
                disable_password_login: harden,
            },
            &env,
            &NoProgress,
            &cancel,
        )
    };
    assert_eq!(
        install(&wrong, true).expect_err("wrong pw").code(),
        "auth_rejected"
    );
    assert!(!sshd
        .config_dropin_dir()
        .join("00-gpurent-no-password.conf")
        .exists());

    let pw = Secret::new(TEST_PASSWORD);
    // A pre-existing authorized_keys without a final newline is repaired, not corrupted.
    let ssh_dir = sshd.home().join(".ssh");
    std::fs::create_dir_all(&ssh_dir).expect("mkdir");
    std::fs::write(
        ssh_dir.join("authorized_keys"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtherKeyOtherKeyOtherKey other",
    )
    .expect("w");
    {
        use std::os::unix::fs::MetadataExt;
        let uid = std::fs::metadata(sshd.home()).expect("home").uid();
        for p in [ssh_dir.clone(), ssh_dir.join("authorized_keys")] {
            std::os::unix::fs::chown(&p, Some(uid), None).expect("chown to the login user");
        }
    }
    let r = install(&pw, false).expect("install");
    assert_eq!(r.outcome, InstallOutcome::Added);
    assert!(r.key_login_verified && r.hardening.is_none());
    let r = install(&pw, false).expect("again");
    assert_eq!(r.outcome, InstallOutcome::AlreadyPresent);
    let text = std::fs::read_to_string(ssh_dir.join("authorized_keys")).expect("read");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert_eq!(
        text.lines().filter(|l| *l == k.public_line).count(),
        1,
        "{text}"
    );
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&ssh_dir), 0o700);
    assert_eq!(mode(&ssh_dir.join("authorized_keys")), 0o600);
    let after = w
        .app
        .host_check_with_key("autodl", &env, &key, &NoProgress, &cancel)
        .expect("check");
    assert!(after.key_login_ok, "{after:?}");
    assert_eq!(
        w.app.host_get("autodl").expect("get").key_label.as_deref(),
        Some("laptop")
    );

    let r = install(&pw, true).expect("harden");
    let h = r.hardening.expect("hardening report");
    assert!(h.dropin_path.ends_with("/00-gpurent-no-password.conf"));
    assert!(
        !h.reloaded,
        "the fixture's sshd is not reachable by the reload commands"
    );
    let dropin = std::fs::read_to_string(&h.dropin_path).expect("dropin");
    assert!(dropin.contains("\nPasswordAuthentication no\n"), "{dropin}");
    sshd.restart().expect("restart picks up the drop-in");
    let ep = Endpoint::new(sshd.host(), sshd.port(), sshd.user());
    let e = connect(
        &ep,
        None,
        Auth::Password(&pw),
        &opts(),
        &mut |_, _, _| Ok(()),
        &cancel,
    )
    .expect_err("passwords are off");
    match e {
        RemoteError::AuthRejected { offered, .. } => {
            assert!(!offered.contains("password"), "{offered}")
        }
        other => panic!("{other:?}"),
    }
    assert!(
        w.app
            .host_check_with_key("autodl", &env, &key, &NoProgress, &cancel)
            .expect("check")
            .key_login_ok
    );
}

#[test]
fn a_changed_host_key_stops_everything_until_an_explicit_repin() {
    if !sshd_available() {
        return;
    }
    let mut sshd = Sshd::start().expect("sshd");
    let k = UserKey::generate("t").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let w = world();
    let key = login_key(&k, "laptop");
    let cancel = CancelToken::new();
    let old = add_confirmed(&w, "vast", spec(&sshd), None)
        .pinned(Role::Target)
        .expect("pin")
        .fingerprint
        .clone();
    sshd.swap_host_key().expect("swap");
    let new = sshd.host_key_fingerprint().expect("fp");
    match w
        .app
        .host_check_with_key("vast", &w.env, &key, &NoProgress, &cancel)
    {
        Err(RemoteError::HostKeyChanged {
            old_fingerprint,
            new_fingerprint,
            ..
        }) => {
            assert_eq!(
                (old_fingerprint.as_str(), new_fingerprint.as_str()),
                (old.as_str(), new.as_str())
            )
        }
        other => panic!("expected host_key_changed, got {other:?}"),
    }
    // Re-pinning to a fingerprint the host does not present changes nothing.
    let e = w
        .app
        .host_repin_with_key("vast", &old, "alice", &w.env, None, &cancel)
        .expect_err("wrong");
    assert_eq!(e.code(), "host_key_changed");
    let h = w
        .app
        .host_repin_with_key("vast", &new, "alice", &w.env, None, &cancel)
        .expect("repin");
    let pin = h.pinned(Role::Target).expect("pin");
    assert_eq!(
        (pin.fingerprint.as_str(), pin.source),
        (new.as_str(), PinSource::Repin)
    );
    assert_eq!(h.repins.len(), 1);
    let rec = &h.repins[0];
    assert_eq!(
        (
            rec.changed_by.as_str(),
            rec.old_fingerprint.as_str(),
            rec.new_fingerprint.as_str(),
            rec.changed_ms
        ),
        ("alice", old.as_str(), new.as_str(), 1_000)
    );
    assert!(
        w.app
            .host_check_with_key("vast", &w.env, &key, &NoProgress, &cancel)
            .expect("check")
            .key_login_ok
    );
}

#[test]
fn the_users_known_hosts_verdicts_are_respected() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let w = world();
    let cancel = CancelToken::new();
    let kh = w.env.known_hosts.clone().expect("kh path");
    std::fs::create_dir_all(kh.parent().expect("dir")).expect("mkdir");
    // A different ed25519 key for [127.0.0.1]:port: a mismatch even when the user "trusts".
    let other = UserKey::generate("impostor").expect("key");
    let mut parts = other.public_line.split_whitespace();
    let (t, b) = (parts.next().expect("t"), parts.next().expect("b"));
    std::fs::write(
        &kh,
        format!("# mine\n[127.0.0.1]:{} {t} {b}\n", sshd.port()),
    )
    .expect("write");
    let req = HostAddRequest {
        spec: spec(&sshd),
        label: Some("kh".into()),
        key_label: None,
        trust: vec![sshd.host_key_fingerprint().expect("fp")],
    };
    let e = w
        .app
        .host_add(&req, &w.env, None, &cancel)
        .expect_err("mismatch");
    assert_eq!(e.code(), "known_hosts_mismatch", "{e:?}");
    assert!(e
        .to_string()
        .contains(&format!("ssh-keygen -R '[127.0.0.1]:{}'", sshd.port())));

    // The right key there (hashed, as `ssh-keygen -H` writes it): pinned without a prompt.
    std::fs::write(&kh, format!("{}\n", sshd.known_hosts_line().expect("line"))).expect("write");
    let hashed = Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&kh)
        .output()
        .expect("ssh-keygen -H");
    assert!(hashed.status.success(), "{hashed:?}");
    assert!(std::fs::read_to_string(&kh)
        .expect("read")
        .starts_with("|1|"));
    let h = w
        .app
        .host_add(
            &HostAddRequest {
                trust: vec![],
                ..req
            },
            &w.env,
            None,
            &cancel,
        )
        .expect("pinned from known_hosts");
    assert_eq!(
        h.pinned(Role::Target).expect("pin").source,
        PinSource::KnownHosts
    );
}

#[test]
fn latency_through_the_delay_proxy_is_about_the_configured_round_trip() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let k = UserKey::generate("t").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let proxy = DelayProxy::start(
        format!("127.0.0.1:{}", sshd.port()).parse().expect("addr"),
        Duration::from_millis(25),
    )
    .expect("proxy");
    let w = world();
    let key = login_key(&k, "laptop");
    add_confirmed(&w, "far", spec_port(&sshd, proxy.port()), None);
    let check = w
        .app
        .host_check_with_key("far", &w.env, &key, &NoProgress, &CancelToken::new())
        .expect("check");
    let rtt = check.latency_ms.expect("latency");
    // 2 × 25 ms one-way; the upper bound only guards against counting several round trips.
    assert!(
        (48.0..1000.0).contains(&rtt),
        "measured {rtt} ms for a 50 ms RTT"
    );
}

#[test]
fn jump_host_is_pinned_too_and_ssh_config_works_with_the_real_client_and_agent() {
    if !sshd_available() {
        return;
    }
    let jump = Sshd::start().expect("jump");
    let target = Sshd::start().expect("target");
    let k = UserKey::generate("t").expect("key");
    jump.authorize(&k.public_line).expect("a");
    target.authorize(&k.public_line).expect("a");
    let w = world();
    let key = login_key(&k, "laptop");
    let mut s = spec(&target);
    s.jump = Some(JumpSpec {
        address: jump.host().into(),
        port: jump.port(),
        user: jump.user().into(),
    });
    let h = add_confirmed(&w, "behind", s, Some(&key));
    assert_eq!(
        h.pinned(Role::Jump).expect("jump pin").fingerprint,
        jump.host_key_fingerprint().expect("fp")
    );
    assert_eq!(
        h.pinned(Role::Target).expect("pin").fingerprint,
        target.host_key_fingerprint().expect("fp")
    );
    let check = w
        .app
        .host_check_with_key("behind", &w.env, &key, &NoProgress, &CancelToken::new())
        .expect("check");
    assert!(check.key_login_ok, "{check:?}");

    // ~/.ssh/config block + the key in a real ssh-agent → OpenSSH's own client logs in through
    // the jump host, checking host keys against gpurent's pinned file (StrictHostKeyChecking).
    let sock = w.tmp.path().join("agent.sock");
    let mut agent = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ssh-agent");
    // Up to 30 s, a hang guard (200 polls of 10 ms raced ssh-agent's start under load).
    let t = std::time::Instant::now();
    while !sock.exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut env = w.env.clone();
    env.agent_socket = gpurent_core::remote::sshconfig::agent_socket(Some(sock.as_os_str()));
    w.app
        .host_agent_add(&env, &key, Some(300))
        .expect("ssh-add -");
    let cfg = w
        .app
        .host_ssh_config_with_key("behind", &key.public_line, &env)
        .expect("ssh config");
    assert!(cfg.agent_running && cfg.changed);
    assert_eq!(
        cfg.vscode_uri,
        "vscode://vscode-remote/ssh-remote+gpurent-behind/home/gputest"
    );
    let again = w
        .app
        .host_ssh_config_with_key("behind", &key.public_line, &env)
        .expect("again");
    assert!(!again.changed);
    let pubfile = std::fs::read_to_string(&cfg.identity_file).expect("identity");
    assert_eq!(pubfile.trim(), k.public_line);
    let out = Command::new("ssh")
        .env("SSH_AUTH_SOCK", &sock)
        .args([
            "-F",
            &cfg.config_path,
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg(&cfg.alias)
        .arg("echo via-config")
        .output()
        .expect("ssh");
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "via-config",
        "{out:?}"
    );
    // No private key bytes anywhere under gpurent's data dir or in the config.
    let marker = "PRIVATE KEY";
    for entry in walk(w.tmp.path()) {
        if entry.is_file() && entry.extension().is_none_or(|e| e != "sock") {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(marker),
                "{} holds a private key",
                entry.display()
            );
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
