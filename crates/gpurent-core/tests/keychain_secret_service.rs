//! Keys through the App against the REAL OS keychain (Secret Service on Linux). Skipped unless
//! `GPURENT_TEST_SECRET_SERVICE=1`; `scripts/test-keychain.sh` sets that and runs this under
//! `dbus-run-session` with gnome-keyring unlocked in a throwaway HOME.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use gpurent_core::app::App;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::{KeyAlgorithm, KEYCHAIN_SERVICE};
use gpurent_core::Coded;

fn enabled() -> bool {
    if std::env::var("GPURENT_TEST_SECRET_SERVICE").as_deref() == Ok("1") {
        return true;
    }
    eprintln!(
        "skipped: set GPURENT_TEST_SECRET_SERVICE=1 (scripts/test-keychain.sh) to run against a real Secret Service"
    );
    false
}

fn open(root: &Path) -> App {
    App::open(Paths::under(root), Arc::new(SystemClock), None).expect("open")
}

/// `secret-tool search --all service gpurent`: the account names it lists (values are not kept).
fn keychain_accounts() -> Vec<String> {
    let out = Command::new("secret-tool")
        .args(["search", "--all", "service", KEYCHAIN_SERVICE])
        .output()
        .expect("secret-tool (libsecret-tools) is needed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
        .filter_map(|l| {
            l.trim()
                .strip_prefix("attribute.username = ")
                .map(String::from)
        })
        .collect()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// No line of the PEM body in any file under the data dir (database, WAL, settings, logs).
fn assert_no_private_bytes(root: &Path, pem: &Secret) {
    let body: Vec<&str> = pem
        .expose()
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 16)
        .collect();
    assert!(!body.is_empty());
    let mut files = Vec::new();
    files_under(root, &mut files);
    assert!(!files.is_empty(), "nothing under {}", root.display());
    for f in &files {
        let text = String::from_utf8_lossy(&std::fs::read(f).expect("read")).into_owned();
        for line in &body {
            assert!(
                !text.contains(line),
                "private key bytes found in {}",
                f.display()
            );
        }
    }
}

#[test]
fn keys_round_trip_through_the_real_secret_service() {
    if !enabled() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    let paths = Paths::under(root);
    paths.ensure().expect("ensure");
    // File logs on, as in the app, so the scan below covers what key operations log.
    let guard = gpurent_core::infra::logging::init_file_logging(&paths, "keychain-test").ok();

    let app = open(root);
    let plain = app
        .key_new("ss-plain", KeyAlgorithm::Ed25519, None)
        .expect("new (real keychain)");
    let pass = Secret::new("keychain test passphrase");
    let locked = app
        .key_new("ss-pass", KeyAlgorithm::Ed25519, Some(&pass))
        .expect("new with passphrase");
    assert!(locked.has_passphrase);
    let accounts = keychain_accounts();
    for label in ["ss-plain", "ss-pass"] {
        let prefix = format!("ssh-key/{label}/");
        assert!(
            accounts.iter().any(|a| a.starts_with(&prefix)),
            "secret-tool does not list {prefix}…: {accounts:?}"
        );
    }
    drop(app);

    // A fresh App reads the private keys back from the keychain.
    let app = open(root);
    let pem = app.load_private("ss-plain", None).expect("load");
    let key = ssh_key::PrivateKey::from_openssh(pem.expose()).expect("parse");
    assert_eq!(
        key.fingerprint(ssh_key::HashAlg::Sha256).to_string(),
        plain.fingerprint
    );
    assert_eq!(
        app.load_private("ss-pass", Some(&Secret::new("wrong")))
            .expect_err("wrong")
            .code(),
        "wrong_passphrase"
    );
    let pem2 = app
        .load_private("ss-pass", Some(&pass))
        .expect("load with passphrase");
    drop(guard);
    assert_no_private_bytes(root, &pem);
    assert_no_private_bytes(root, &pem2);

    app.key_delete("ss-plain").expect("delete");
    let left = app.key_delete("ss-pass").expect("delete");
    assert!(left.is_empty());
    let accounts = keychain_accounts();
    assert!(
        !accounts.iter().any(|a| a.starts_with("ssh-key/ss-")),
        "keychain items left after delete: {accounts:?}"
    );
    assert_eq!(
        app.load_private("ss-plain", None).expect_err("gone").code(),
        "unknown_key"
    );
}
