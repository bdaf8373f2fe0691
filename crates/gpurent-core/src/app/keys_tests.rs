//! Unit tests of the key App methods against the in-memory key store.

use std::sync::Arc;

use super::*;
use crate::infra::clock::FixedClock;
use crate::infra::paths::Paths;
use crate::keys::MemoryKeyStore;
use crate::Coded;

fn app(root: &Path, ks: &Arc<MemoryKeyStore>) -> App {
    App::open(
        Paths::under(root),
        Arc::new(FixedClock(1_700_000_000_000)),
        None,
    )
    .expect("open")
    .with_keystore(Box::new(ks.clone()))
}

/// The base64 body of a PEM, the bytes that must never reach the data dir.
fn pem_body(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 20)
        .map(String::from)
        .collect()
}

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn new_list_export_load_delete_with_the_key_only_in_the_keychain() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ks = Arc::new(MemoryKeyStore::new());
    let a = app(tmp.path(), &ks);
    let info = a.key_new("work", KeyAlgorithm::Ed25519, None).expect("new");
    assert_eq!(info.label, "work");
    assert_eq!(info.origin, KeyOrigin::Generated);
    assert_eq!(info.created_ms, 1_700_000_000_000);
    assert_eq!(info.comment, "gpurent-work");
    assert_eq!(ks.accounts().len(), 1);
    assert!(ks.accounts()[0].starts_with("ssh-key/work/"));
    assert_eq!(a.key_export_pub("work").expect("pub"), info.public_key);

    let pem = a.load_private("work", None).expect("load");
    let parsed = ssh_key::PrivateKey::from_openssh(pem.expose()).expect("parse");
    assert_eq!(
        parsed.fingerprint(ssh_key::HashAlg::Sha256).to_string(),
        info.fingerprint
    );
    // No private-key bytes anywhere under the data dir (db, WAL, settings, logs).
    let mut files = Vec::new();
    files_under(tmp.path(), &mut files);
    assert!(!files.is_empty());
    for f in &files {
        let bytes = std::fs::read(f).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        for line in pem_body(pem.expose()) {
            assert!(
                !text.contains(&line),
                "private key bytes in {}",
                f.display()
            );
        }
    }

    // A fresh App over the same data dir and keychain sees the key.
    drop(a);
    let b = app(tmp.path(), &ks);
    assert_eq!(b.key_list().expect("list"), vec![info.clone()]);
    assert_eq!(
        b.load_private("work", None).expect("load").expose(),
        pem.expose()
    );
    assert!(b.key_delete("work").expect("delete").is_empty());
    assert!(ks.accounts().is_empty());
    assert_eq!(
        b.key_export_pub("work").expect_err("gone").code(),
        "unknown_key"
    );
    assert_eq!(
        b.key_delete("work").expect_err("gone").code(),
        "unknown_key"
    );
}

#[test]
fn labels_are_unique_and_checked() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ks = Arc::new(MemoryKeyStore::new());
    let a = app(tmp.path(), &ks);
    a.key_new("k", KeyAlgorithm::Ed25519, None).expect("new");
    assert_eq!(
        a.key_new("k", KeyAlgorithm::Ed25519, None)
            .expect_err("dup")
            .code(),
        "key_exists"
    );
    assert_eq!(
        a.key_new("bad label", KeyAlgorithm::Ed25519, None)
            .expect_err("bad")
            .code(),
        "invalid_input"
    );
    assert_eq!(ks.accounts().len(), 1);
}

#[test]
fn import_checks_the_passphrase_leaves_the_file_alone_and_refuses_duplicates() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ks = Arc::new(MemoryKeyStore::new());
    let a = app(&tmp.path().join("home"), &ks);
    let pass = Secret::new("s3cret pass");
    let m = material::generate(KeyAlgorithm::Ed25519, "me@laptop", Some(&pass)).expect("gen");
    let file = tmp.path().join("id_ed25519");
    std::fs::write(&file, m.stored.expose()).expect("write");
    let before = (
        std::fs::read(&file).expect("read"),
        std::fs::metadata(&file)
            .expect("meta")
            .modified()
            .expect("mtime"),
    );

    assert_eq!(
        a.key_import("laptop", &file, None)
            .expect_err("no pass")
            .code(),
        "passphrase_required"
    );
    assert_eq!(
        a.key_import("laptop", &file, Some(&Secret::new("wrong")))
            .expect_err("wrong")
            .code(),
        "wrong_passphrase"
    );
    assert!(ks.accounts().is_empty(), "nothing stored on failure");
    let info = a.key_import("laptop", &file, Some(&pass)).expect("import");
    assert_eq!(info.origin, KeyOrigin::Imported);
    assert!(info.has_passphrase);
    assert_eq!(info.comment, "me@laptop");
    assert_eq!(info.fingerprint, m.fingerprint);
    let after = (
        std::fs::read(&file).expect("read"),
        std::fs::metadata(&file)
            .expect("meta")
            .modified()
            .expect("mtime"),
    );
    assert_eq!(before, after, "the key file is left alone");

    // The keychain copy stays encrypted; load_private needs the passphrase.
    assert_eq!(
        a.load_private("laptop", None)
            .expect_err("needs pass")
            .code(),
        "passphrase_required"
    );
    let plain = a.load_private("laptop", Some(&pass)).expect("load");
    assert!(!ssh_key::PrivateKey::from_openssh(plain.expose())
        .expect("parse")
        .is_encrypted());

    match a.key_import("again", &file, Some(&pass)) {
        Err(KeyError::AlreadyImported { label }) => assert_eq!(label, "laptop"),
        other => panic!("expected AlreadyImported, got {other:?}"),
    }
    let missing = a
        .key_import("x", &tmp.path().join("nope"), None)
        .expect_err("missing");
    assert_eq!(missing.code(), "key_file_unreadable");
    std::fs::write(tmp.path().join("bin"), [0xffu8, 0xfe, 0x00]).expect("write");
    assert_eq!(
        a.key_import("x", &tmp.path().join("bin"), None)
            .expect_err("binary")
            .code(),
        "unsupported_key_format"
    );
}

#[test]
fn keychain_trouble_leaves_no_half_saved_key() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(1)), None)
        .expect("open")
        .with_keystore(Box::new(MemoryKeyStore::unavailable()));
    let e = a
        .key_new("k", KeyAlgorithm::Ed25519, None)
        .expect_err("unavailable");
    assert_eq!(e.code(), "keychain_unavailable");
    assert!(a.key_list().expect("list").is_empty());
}

#[test]
fn a_key_missing_from_the_keychain_is_reported_and_can_be_deleted() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ks = Arc::new(MemoryKeyStore::new());
    let a = app(tmp.path(), &ks);
    a.key_new("k", KeyAlgorithm::Ed25519, None).expect("new");
    for acct in ks.accounts() {
        ks.delete(&acct).expect("wipe");
    }
    assert_eq!(
        a.load_private("k", None).expect_err("missing").code(),
        "key_missing_from_keychain"
    );
    assert!(a.key_delete("k").expect("delete").is_empty());
}

#[test]
fn parse_host_command_is_reachable_through_the_app() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = app(tmp.path(), &Arc::new(MemoryKeyStore::new()));
    let h = a
        .parse_host_command("登录指令：ssh -p 38211 root@region-3.example.com 密码：Ab12cd34")
        .expect("parse");
    assert_eq!(
        (h.host.as_str(), h.port, h.user.as_str()),
        ("region-3.example.com", 38211, "root")
    );
    assert_eq!(h.password.as_ref().map(|p| p.expose()), Some("Ab12cd34"));
}

#[test]
fn private_export_needs_consent_writes_owner_only_and_never_overwrites() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ks = Arc::new(MemoryKeyStore::new());
    let a = app(tmp.path(), &ks);
    a.key_new("work", KeyAlgorithm::Ed25519, None).expect("new");
    let out = tmp.path().join("exported_key");
    let e = a
        .key_export_private("work", &out, false)
        .expect_err("needs consent");
    assert_eq!(e.code(), "invalid_input");
    assert!(!out.exists(), "nothing written without consent");

    a.key_export_private("work", &out, true).expect("export");
    let text = std::fs::read_to_string(&out).expect("read");
    assert!(
        text.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"),
        "{}",
        &text[..40]
    );
    let plain = a.load_private("work", None).expect("load");
    assert_eq!(text, plain.expose(), "exactly what the keychain holds");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    std::fs::write(&out, "keep me").expect("overwrite marker");
    assert!(a.key_export_private("work", &out, true).is_err());
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "keep me");
}

#[test]
fn a_protected_key_is_unlocked_once_per_session_and_forgotten_on_lock_and_delete() {
    let tmp = tempfile::tempdir().expect("tmp");
    let ks = Arc::new(MemoryKeyStore::new());
    let a = app(tmp.path(), &ks);
    let pass = Secret::new("s3cret phrase");
    a.key_new("k", KeyAlgorithm::Ed25519, Some(&pass))
        .expect("new");
    a.key_new("plain", KeyAlgorithm::Ed25519, None)
        .expect("new");

    // Locked: the error names the key, as a field the UI reads (not text).
    let e = a.load_private("k", None).expect_err("locked");
    let p = crate::infra::ipc::ErrorPayload::from_error(&e);
    assert_eq!(p.code, "passphrase_required");
    assert_eq!(p.data.and_then(|d| d.key_label).as_deref(), Some("k"));
    // The same through the login helper every desktop step uses.
    let e = a.host_login_key("k", None).expect_err("locked");
    let p = crate::infra::ipc::ErrorPayload::from_error(&e);
    assert_eq!(p.data.and_then(|d| d.key_label).as_deref(), Some("k"));

    assert_eq!(
        a.key_unlock("k", &Secret::new("nope"))
            .expect_err("wrong")
            .code(),
        "wrong_passphrase"
    );
    assert_eq!(
        a.key_unlock("k", &Secret::new(""))
            .expect_err("empty")
            .code(),
        "passphrase_required"
    );
    assert!(!a.key_ready("k").expect("ready"));
    a.key_unlock("k", &pass).expect("unlock");
    assert!(a.key_ready("k").expect("ready"));
    let pem = a.load_private("k", None).expect("unlocked");
    assert!(!ssh_key::PrivateKey::from_openssh(pem.expose())
        .expect("parse")
        .is_encrypted());
    // The keychain copy is still the encrypted one; nothing was written anywhere else.
    let stored = ks.get(&ks.accounts()[0]).expect("get").expect("item");
    assert!(!pem_body(stored.expose())
        .iter()
        .any(|l| pem.expose().contains(l.as_str())));
    let mut files = Vec::new();
    files_under(tmp.path(), &mut files);
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(&f).expect("read")).into_owned();
        for l in pem_body(pem.expose()) {
            assert!(!text.contains(&l), "{} holds key bytes", f.display());
        }
        assert!(!text.contains("s3cret phrase"), "{}", f.display());
    }
    // A key without a passphrase needs no unlocking and holds nothing.
    a.key_unlock("plain", &Secret::new("anything"))
        .expect("no-op");
    assert!(a.key_ready("plain").expect("ready"));

    assert_eq!(a.key_lock(None).expect("lock"), 1);
    assert_eq!(
        a.load_private("k", None).expect_err("locked").code(),
        "passphrase_required"
    );
    a.key_unlock("k", &pass).expect("unlock");
    assert_eq!(a.key_lock(Some("k")).expect("lock one"), 1);
    a.key_unlock("k", &pass).expect("unlock");
    a.key_delete("k").expect("delete");
    a.key_new("k", KeyAlgorithm::Ed25519, Some(&pass))
        .expect("same label again");
    assert_eq!(
        a.load_private("k", None)
            .expect_err("a new key is locked")
            .code(),
        "passphrase_required"
    );
}

#[test]
fn typed_key_paths_expand_the_home_folder() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = app(tmp.path(), &Arc::new(MemoryKeyStore::new()));
    let Some(home) = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()) else {
        return;
    };
    let e = a
        .key_import("x", Path::new("~/.gpurent-test-no-such-key"), None)
        .expect_err("missing");
    assert_eq!(e.code(), "key_file_unreadable");
    let detail = e.detail().expect("detail");
    assert!(
        detail.starts_with(&home.join(".gpurent-test-no-such-key").display().to_string()),
        "{detail}"
    );
}
