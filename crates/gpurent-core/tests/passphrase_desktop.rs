//! A key protected by a passphrase on every desktop path, against a real sshd on loopback: the
//! desktop's calls (they load the host's key from the keychain with no passphrase) fail with
//! `passphrase_required` naming the key, `key_unlock` unlocks it for the session (memory only),
//! and then add host, check, Setup probe, remote listing and upload all work without asking
//! again; `key_lock` makes them ask again. Also: the error payload carries the host-key
//! fingerprint and its hop as fields (no text to parse).

mod remote_common;

use std::sync::Arc;

use gpurent_core::app::hosts::PasteAdd;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::infra::ipc::ErrorPayload;
use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::{KeyAlgorithm, MemoryKeyStore};
use gpurent_core::remote::Role;
use gpurent_core::transfer::TransferOptions;
use gpurent_core::Coded;
use gpurent_testhost::{sshd_available, Sshd};
use remote_common::world;

/// The payload the UI gets, and the key label it must unlock.
fn needs_passphrase<E: Coded>(e: &E) -> String {
    let p = ErrorPayload::from_error(e);
    assert_eq!(p.code, "passphrase_required", "{p:?}");
    p.data
        .and_then(|d| d.key_label)
        .expect("passphrase_required names the key")
}

#[test]
fn a_passphrase_key_is_asked_for_once_then_works_on_every_desktop_path() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let mut w = world();
    let ks = Arc::new(MemoryKeyStore::new());
    w.app = w.app.with_keystore(Box::new(ks.clone()));
    let pass = Secret::new("correct horse");
    let info = w
        .app
        .key_new("laptop", KeyAlgorithm::Ed25519, Some(&pass))
        .expect("new");
    assert!(info.has_passphrase);
    sshd.authorize(&info.public_key).expect("authorize");
    assert!(!w.app.key_ready("laptop").expect("ready"));

    // Add host: the key is needed (a paste without password logs in with it) → asked for.
    let mut req = PasteAdd {
        text: format!("ssh -p {} {}@{}", sshd.port(), sshd.user(), sshd.host()).into(),
        label: Some("gpu1".into()),
        key_label: Some("laptop".into()),
        trust: vec![],
        disable_password_login: false,
    };
    let e = w
        .app
        .host_add_pasted(&req, &w.env, &NoProgress)
        .expect_err("locked");
    assert_eq!(needs_passphrase(&e), "laptop");

    // The prompt's answer: a wrong passphrase is told apart, the right one unlocks.
    assert_eq!(
        w.app
            .key_unlock("laptop", &Secret::new("wrong"))
            .expect_err("wrong")
            .code(),
        "wrong_passphrase"
    );
    assert!(!w.app.key_ready("laptop").expect("ready"));
    w.app.key_unlock("laptop", &pass).expect("unlock");
    assert!(w.app.key_ready("laptop").expect("ready"));

    // First contact: the fingerprint and its hop are fields of the payload.
    let e = w
        .app
        .host_add_pasted(&req, &w.env, &NoProgress)
        .expect_err("first contact");
    let p = ErrorPayload::from_error(&e);
    assert_eq!(p.code, "host_key_unknown");
    let data = p.data.expect("data");
    let fp = data.fingerprint.expect("fingerprint");
    assert_eq!(fp, sshd.host_key_fingerprint().expect("fp"));
    assert_eq!(data.role, Some(Role::Target));
    assert_eq!(data.port, Some(sshd.port()));
    let json = serde_json::to_value(ErrorPayload::from_error(&e)).expect("json");
    assert_eq!(json["data"]["role"], "target");
    assert_eq!(json["data"]["fingerprint"], fp.as_str());
    req.trust = vec![fp];
    w.app
        .host_add_pasted(&req, &w.env, &NoProgress)
        .expect("added with the unlocked key");

    // Check, Setup probe, the file pane and an upload: no passphrase passed, none asked for.
    let check = w
        .app
        .host_check("gpu1", &w.env, &NoProgress)
        .expect("check");
    assert!(check.key_login_ok, "{check:?}");
    w.app
        .setup_probe("gpu1", &w.env, &NoProgress)
        .expect("probe with the unlocked key");
    let listing = w.app.remote_ls("gpu1", ".", &w.env).expect("ls");
    let local = w.tmp.path().join("hello.txt");
    std::fs::write(&local, b"hello from a passphrase key\n").expect("write");
    let remote_dir = format!("{}/up", listing.absolute);
    let _ = std::fs::remove_dir_all(&remote_dir);
    w.app
        .transfer_put(
            "gpu1",
            std::slice::from_ref(&local),
            &remote_dir,
            &TransferOptions::default(),
            &w.env,
            &NoProgress,
        )
        .expect("upload");
    assert_eq!(
        std::fs::read(format!("{remote_dir}/hello.txt")).expect("arrived"),
        b"hello from a passphrase key\n"
    );
    let _ = std::fs::remove_dir_all(&remote_dir);

    // Lock: the next use asks again; nothing of the passphrase reached the disk.
    assert_eq!(w.app.key_lock(None).expect("lock"), 1);
    let e = w
        .app
        .host_check("gpu1", &w.env, &NoProgress)
        .expect_err("locked again");
    assert_eq!(needs_passphrase(&e), "laptop");
    let e = w
        .app
        .setup_probe("gpu1", &w.env, &NoProgress)
        .expect_err("locked again");
    assert_eq!(needs_passphrase(&e), "laptop");
    let e = w.app.remote_ls("gpu1", ".", &w.env).expect_err("locked");
    assert_eq!(needs_passphrase(&e), "laptop");
    for f in walk(w.tmp.path()) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("correct horse"), "{}", f.display());
        assert!(!text.contains("PRIVATE KEY"), "{}", f.display());
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
