//! Shared setup for the transfer tests: a real sshd, optionally behind the delay proxy, a saved
//! host whose key is passed in, and helpers to make and compare files.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpurent_core::app::login::LoginKey;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::transfer::hash;
use gpurent_testhost::{DelayProxy, Sshd, UserKey};

#[path = "../remote_common/mod.rs"]
mod remote_common;
pub use remote_common::*;

pub struct Rig {
    pub w: World,
    pub sshd: Sshd,
    pub key: LoginKey,
    pub proxy: Option<DelayProxy>,
}

/// A host `box` on a fresh sshd; through a delay proxy when `via_proxy` is set.
pub fn rig(via_proxy: Option<Duration>) -> Rig {
    rig_with(via_proxy, |_| world())
}

/// The sshd, its authorized key, the proxy and the saved host `box`, around the world that
/// `make_world` builds for that key.
fn rig_with(via_proxy: Option<Duration>, make_world: impl FnOnce(&UserKey) -> World) -> Rig {
    let sshd = Sshd::start().expect("sshd");
    let k = UserKey::generate("gpurent-transfer").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let w = make_world(&k);
    let key = login_key(&k, "laptop");
    let proxy = via_proxy.map(|d| {
        DelayProxy::start(
            format!("127.0.0.1:{}", sshd.port()).parse().expect("addr"),
            d,
        )
        .expect("proxy")
    });
    let port = proxy.as_ref().map(|p| p.port()).unwrap_or(sshd.port());
    add_confirmed(&w, "box", spec_port(&sshd, port), Some(&key));
    Rig {
        w,
        sshd,
        key,
        proxy,
    }
}

/// Upload into `dir` with the rig's key.
pub fn put_with(
    r: &Rig,
    locals: &[std::path::PathBuf],
    dir: &str,
    o: &gpurent_core::transfer::TransferOptions,
    sink: &dyn gpurent_core::infra::events::ProgressSink,
) -> Result<gpurent_core::transfer::TransferReport, gpurent_core::transfer::TransferError> {
    r.w.app
        .transfer_put_with_key("box", Some(&r.key), locals, dir, o, &r.w.env, sink)
}

/// Download into `to` with the rig's key.
pub fn get_with(
    r: &Rig,
    remotes: &[String],
    to: &Path,
    o: &gpurent_core::transfer::TransferOptions,
    sink: &dyn gpurent_core::infra::events::ProgressSink,
) -> Result<gpurent_core::transfer::TransferReport, gpurent_core::transfer::TransferError> {
    r.w.app
        .transfer_get_with_key("box", Some(&r.key), remotes, to, o, &r.w.env, sink)
}

/// Deterministic pseudo-random bytes.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

pub fn sha(p: &Path) -> String {
    hash::local_file(p, None, &CancelToken::new()).expect("hash")
}

/// Every regular file under `root` (relative path, SHA-256), sorted.
pub fn tree_hashes(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            let ft = e.file_type().expect("ft");
            if ft.is_dir() {
                walk(root, &p, out);
            } else if ft.is_file() {
                out.push((p.strip_prefix(root).expect("rel").to_path_buf(), sha(&p)));
            }
        }
    }
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Names that break naive quoting: spaces, quotes, `$()`, newline, leading dash, CJK, emoji.
pub const NASTY: &[&str] = &[
    "with space.txt",
    "it's \"quoted\".txt",
    "$(touch PWNED).txt",
    "`touch PWNED2`;x",
    "line\nbreak.txt",
    "-rf --leading-dash",
    "数据集 训练.csv",
    "🚀 emoji.bin",
];

/// Files left in a folder whose names mark a temp or half file.
pub fn leftovers(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.contains(".gpurent-") || n.starts_with(".gpurent-list") {
                v.push(n);
            }
        }
    }
    v
}

/// Processes of the test user other than sshd itself (what a cancel must not leave behind).
pub fn user_processes() -> Vec<String> {
    let out = std::process::Command::new("ps")
        .args(["-u", gpurent_testhost::TEST_USER, "-o", "pid=,comm="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty() && !l.ends_with("sshd"))
        .collect()
}

/// A rig whose App keeps the key in an in-memory keychain (the `transfer_put` / `remote_*`
/// methods that load the host's key themselves).
pub fn rig_keychain(via_proxy: Option<Duration>) -> Rig {
    use gpurent_core::keys::MemoryKeyStore;
    rig_with(via_proxy, |k| {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = gpurent_core::app::App::open(
            gpurent_core::infra::paths::Paths::under(tmp.path().join("gpurent")),
            std::sync::Arc::new(gpurent_core::infra::clock::FixedClock(1_000)),
            None,
        )
        .expect("app")
        .with_keystore(Box::new(MemoryKeyStore::new()));
        let pem = tmp.path().join("id_ed25519");
        std::fs::write(&pem, &k.private_pem).expect("pem");
        app.key_import("laptop", &pem, None).expect("import");
        let mut env = gpurent_core::app::login::SshEnv::under_home(&tmp.path().join("home"), None);
        env.connect = opts();
        World { tmp, app, env }
    })
}

/// Processes started by this rig's sshd (their `HOME` is its home) other than sshd itself.
pub fn rig_processes(r: &Rig) -> Vec<String> {
    let want = format!("HOME={}", r.sshd.home().display());
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").expect("proc").flatten() {
        let p = e.path();
        let Ok(env) = std::fs::read(p.join("environ")) else {
            continue;
        };
        if !env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()) {
            continue;
        }
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if comm.trim() != "sshd" {
            v.push(format!(
                "{} {}",
                e.file_name().to_string_lossy(),
                comm.trim()
            ));
        }
    }
    v
}
