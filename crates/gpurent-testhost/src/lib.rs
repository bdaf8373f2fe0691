//! # gpurent-testhost
//!
//! Real network parts for gpurent's SSH tests (no mocks):
//!
//! - [`Sshd`]: a real OpenSSH `sshd` on 127.0.0.1 with its own host key, `authorized_keys`,
//!   `SetEnv PATH=<state>/bin:…` and a private `HOME`, optional password auth, stopped on drop.
//! - [`SilentListener`]: accepts TCP connections and never says anything (an unresponsive peer).
//! - [`closed_port`]: a loopback port with nothing listening (connection refused).
//! - [`DelayProxy`]: a userspace TCP proxy that adds a one-way delay in both directions, keeps byte
//!   order, and can cut every connection on demand or after a number of bytes.
//! - [`UserKey`]: a fresh client key pair made by `ssh-keygen` (PEM kept in memory by callers).
//!
//! The login user `gputest` must exist before tests run: `scripts/setup-test-host.sh` creates it
//! once (parallel tests must not). Tests call [`sshd_available`] first: it returns `false` with a
//! clear message when `sshd` or the user is missing — except under `CI=true`, where it panics so CI
//! can never silently skip the SSH suite.

pub mod fakegpu;
mod net;
mod sshd;

pub use net::{closed_port, DelayProxy, SilentListener};
pub use sshd::{Sshd, SshdOptions, UserKey};

/// The login user the fixture lets in (created by `scripts/setup-test-host.sh`).
pub const TEST_USER: &str = "gputest";
/// Its password, a public test value (keep in sync with `scripts/setup-test-host.sh`).
pub const TEST_PASSWORD: &str = "gpurent-test-pw";
/// The OpenSSH server binary the fixture runs.
pub const SSHD: &str = "/usr/sbin/sshd";

/// Why the sshd fixture cannot run here, or `None` when it can.
pub fn sshd_missing_reason() -> Option<String> {
    if !std::path::Path::new(SSHD).exists() {
        return Some(format!(
            "{SSHD} is missing (apt-get install openssh-server)"
        ));
    }
    let id = std::process::Command::new("id")
        .args(["-u", TEST_USER])
        .output();
    match id {
        Ok(o) if o.status.success() => {}
        _ => {
            return Some(format!(
                "user {TEST_USER} is missing (run scripts/setup-test-host.sh as root)"
            ))
        }
    }
    if !is_root() {
        return Some("the sshd fixture needs root (it logs in as another user)".into());
    }
    None
}

/// `true` when the sshd fixture can run. Otherwise prints why and returns `false` so the test can
/// return early — but under `CI=true` it panics instead, so CI cannot skip the SSH suite silently.
pub fn sshd_available() -> bool {
    match sshd_missing_reason() {
        None => true,
        Some(why) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("SSH test cannot run under CI=true: {why}");
            }
            eprintln!("SKIPPED (needs a local sshd): {why}");
            false
        }
    }
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}
