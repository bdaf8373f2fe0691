//! `gpurent key …` as a black box. Everything up to the keychain runs everywhere (with the session
//! bus pointed at nothing, so the real backend must report `keychain_unavailable`); the full round
//! trip runs against the real Secret Service when `GPURENT_TEST_SECRET_SERVICE=1`
//! (scripts/test-keychain.sh starts gnome-keyring under dbus-run-session for it).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn run(home: &Path, args: &[&str], stdin: &str, no_bus: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpurent"));
    cmd.arg("--data-dir")
        .arg(home)
        .args(args)
        .env_remove("GPURENT_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if no_bus {
        cmd.env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/gpurent-test-bus",
        );
    }
    let mut child = cmd.spawn().expect("run gpurent");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {out:?}"))
}

fn error_code(out: &Output) -> String {
    json(out)["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// An encrypted key written by OpenSSH's own ssh-keygen (the interop case users have).
fn ssh_keygen(dir: &Path, name: &str, passphrase: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let st = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-C",
            "me@laptop",
            "-N",
            passphrase,
            "-f",
        ])
        .arg(&path)
        .status()
        .expect("ssh-keygen (openssh-client) is needed for this test");
    assert!(st.success());
    path
}

#[test]
fn errors_before_and_at_the_keychain_are_coded() {
    let home = tempfile::tempdir().expect("tmp");
    let h = home.path();
    let out = run(h, &["key", "list", "--json"], "", true);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["keys"], serde_json::json!([]));

    let out = run(h, &["key", "new", "bad label", "--json"], "", true);
    assert_eq!(
        (out.status.code(), error_code(&out).as_str()),
        (Some(2), "invalid_input")
    );

    let out = run(h, &["key", "export-pub", "nope", "--json"], "", true);
    assert_eq!(
        (out.status.code(), error_code(&out).as_str()),
        (Some(1), "unknown_key")
    );

    let out = run(
        h,
        &["key", "import", "k", "/nonexistent/id_ed25519", "--json"],
        "",
        true,
    );
    assert_eq!(error_code(&out), "key_file_unreadable");

    let key = ssh_keygen(h, "id_test", "right pass");
    let pub_path = key.with_extension("pub");
    let out = run(
        h,
        &[
            "key",
            "import",
            "k",
            pub_path.to_str().expect("utf8"),
            "--json",
        ],
        "",
        true,
    );
    assert_eq!(error_code(&out), "unsupported_key_format");
    let key_s = key.to_str().expect("utf8");
    let out = run(h, &["key", "import", "k", key_s, "--json"], "", true);
    assert_eq!(error_code(&out), "passphrase_required");
    let out = run(
        h,
        &["key", "import", "k", key_s, "--passphrase-stdin", "--json"],
        "wrong\n",
        true,
    );
    assert_eq!(error_code(&out), "wrong_passphrase");
    let out = run(
        h,
        &["key", "import", "k", key_s, "--passphrase-stdin", "--json"],
        "",
        true,
    );
    assert_eq!(
        (out.status.code(), error_code(&out).as_str()),
        (Some(2), "invalid_input")
    );

    // The passphrase is right, so the next stop is the keychain, which is not reachable here.
    let out = run(
        h,
        &["key", "import", "k", key_s, "--passphrase-stdin", "--json"],
        "right pass\n",
        true,
    );
    assert_eq!(
        (out.status.code(), error_code(&out).as_str()),
        (Some(1), "keychain_unavailable")
    );
    let out = run(h, &["key", "new", "k", "--json"], "", true);
    assert_eq!(error_code(&out), "keychain_unavailable");
    let out = run(h, &["key", "list", "--json"], "", true);
    assert_eq!(
        json(&out)["keys"],
        serde_json::json!([]),
        "nothing half-saved"
    );
}

#[test]
fn round_trip_against_the_real_secret_service() {
    if std::env::var("GPURENT_TEST_SECRET_SERVICE").as_deref() != Ok("1") {
        eprintln!("skipped: set GPURENT_TEST_SECRET_SERVICE=1 (scripts/test-keychain.sh) to run against a real Secret Service");
        return;
    }
    let home = tempfile::tempdir().expect("tmp");
    let h = home.path();
    let out = run(h, &["key", "new", "cli-gen", "--json"], "", false);
    assert!(out.status.success(), "{out:?}");
    let gen = json(&out)["key"].clone();
    assert_eq!(gen["algorithm"], "ssh-ed25519");

    let file = ssh_keygen(h, "id_laptop", "pw 123");
    let out = run(
        h,
        &[
            "key",
            "import",
            "cli-imp",
            file.to_str().expect("utf8"),
            "--passphrase-stdin",
            "--json",
        ],
        "pw 123\n",
        false,
    );
    assert!(out.status.success(), "{out:?}");
    let imp = json(&out)["key"].clone();
    assert_eq!(imp["has_passphrase"], true);
    assert_eq!(imp["comment"], "me@laptop");

    // ssh-keygen agrees on the fingerprint of what export-pub prints.
    let out = run(h, &["key", "export-pub", "cli-gen"], "", false);
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).expect("utf8");
    assert_eq!(line.trim_end(), gen["public_key"].as_str().expect("pk"));
    let pub_file = h.join("exported.pub");
    std::fs::write(&pub_file, &line).expect("write");
    let fp = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(&pub_file)
        .output()
        .expect("ssh-keygen -l");
    let fp = String::from_utf8_lossy(&fp.stdout);
    assert!(
        fp.contains(gen["fingerprint"].as_str().expect("fp")),
        "{fp}"
    );

    let out = run(h, &["key", "list", "--json"], "", false);
    assert_eq!(json(&out)["keys"].as_array().map(Vec::len), Some(2));
    let out = run(h, &["key", "delete", "cli-gen", "--json"], "", false);
    assert_eq!(
        error_code(&out),
        "invalid_input",
        "no --yes and no terminal"
    );
    for label in ["cli-gen", "cli-imp"] {
        let out = run(h, &["key", "delete", label, "--yes", "--json"], "", false);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(json(&out)["deleted"], label);
    }
    let out = run(h, &["key", "list", "--json"], "", false);
    assert_eq!(json(&out)["keys"], serde_json::json!([]));
}
