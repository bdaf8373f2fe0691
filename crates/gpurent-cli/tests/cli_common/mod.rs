//! What the CLI black-box tests share: run the `gpurent` binary against a throwaway data dir and
//! home (no agent, no `GPURENT_HOME`, no stdin), and read its one JSON document.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The `gpurent ARGS…` command of [`gpurent`], not started yet: for a test that pipes its stdin
/// or stdout, or spawns it (a tunnel that runs until killed). stdin is null unless replaced.
pub fn command(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpurent"));
    c.arg("--data-dir")
        .arg(home.join("data"))
        .args(args)
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env("HOME", home)
        .stdin(Stdio::null());
    c
}

/// `gpurent ARGS…` with `--data-dir HOME/data` and `HOME` pointed at `home`.
pub fn gpurent(home: &Path, args: &[&str]) -> Output {
    command(home, args).output().expect("run gpurent")
}

/// `gpurent ARGS…` as [`gpurent`], with `input` on its stdin.
pub fn gpurent_with_stdin(home: &Path, args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command(home, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpurent");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write stdin");
    child.wait_with_output().expect("wait for gpurent")
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// The fake GPU host tools of gpurent-core's tests.
pub fn fakegpu() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpurent-core/tests/fakegpu")
}

/// stdout as exactly one JSON document.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A throwaway home whose data dir holds the host `label` saved through the CLI (`host add` of
/// the sshd's paste line, its host key trusted by fingerprint), a fresh login key authorized on
/// `sshd`, and that key's path as a file for `-i`.
pub fn saved_host(
    sshd: &gpurent_testhost::Sshd,
    key_name: &str,
    label: &str,
) -> (tempfile::TempDir, String) {
    let k = gpurent_testhost::UserKey::generate(key_name).expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let home = tempfile::tempdir().expect("tmp");
    let id = home.path().join("id");
    std::fs::write(&id, &k.private_pem).expect("key file");
    let paste = format!("ssh -p {} gputest@127.0.0.1", sshd.port());
    let fp = sshd.host_key_fingerprint().expect("fp");
    let out = gpurent(
        home.path(),
        &[
            "host", "add", &paste, "--label", label, "--trust", &fp, "--json",
        ],
    );
    assert!(out.status.success(), "host add: {out:?}");
    (home, id.display().to_string())
}

/// `gpurent ARGS…` in a fresh throwaway home: its exit code and its one JSON document (stderr in
/// the panic when stdout is not JSON).
pub fn run_fresh(args: &[&str]) -> (i32, serde_json::Value) {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), args);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

/// The row of `card` in an estimate's `fits`.
pub fn fit<'a>(doc: &'a serde_json::Value, card: &str) -> &'a serde_json::Value {
    doc["fits"]
        .as_array()
        .expect("fits array")
        .iter()
        .find(|f| f["card_id"] == card)
        .unwrap_or_else(|| panic!("no row for {card}"))
}
