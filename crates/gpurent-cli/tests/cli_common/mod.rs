//! What the CLI black-box tests share: run the `gpurent` binary against a throwaway data dir and
//! home (no agent, no `GPURENT_HOME`, no stdin), and read its one JSON document.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `gpurent ARGS…` with `--data-dir HOME/data` and `HOME` pointed at `home`.
pub fn gpurent(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home.join("data"))
        .args(args)
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .expect("run gpurent")
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
