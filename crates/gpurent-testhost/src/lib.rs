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
//! - [`fakecloud`]: a stateful fake RunPod/Vast/Lambda API (offers, create → running with a given SSH
//!   endpoint, stop/start/terminate, faults) for the provider tests.
//! - [`Prism`]: Stoplight Prism on loopback (`mock` / validating `proxy`) for the provider specs.
//! - [`ollama_dl::OllamaDownloads`]: a loopback `ollama.com/download` serving a release-shaped
//!   archive of the fake `ollama` (the Ollama install tests).
//! - [`tls_redirect::TlsRedirect`]: an https mirror on loopback that redirects to plain http.
//! - [`UserKey`]: a fresh client key pair made by `ssh-keygen` (PEM kept in memory by callers).
//!
//! The login user `gputest` must exist before tests run: `scripts/setup-test-host.sh` creates it
//! once (parallel tests must not). Tests call [`sshd_available`] first: when `sshd`, the user or
//! root is missing it returns `false` and prints one notice per test binary straight to the
//! terminal (past cargo's output capture, so a plain `cargo test` shows it) — except under
//! `CI=true` or [`REQUIRE_SSH_ENV`]`=1` (`scripts/check-all.sh` sets it), where it panics with
//! how to enable the suite, so neither CI nor a developer running the README's command can skip
//! the SSH tests silently.

// The fixtures are Unix-only (sshd, uids, symlinks); elsewhere the crate is empty, so gpurent-core's
// unit tests (which never use it) still build for other targets.
#![cfg(unix)]

pub mod fakecloud;
pub mod fakegpu;
mod net;
pub mod ollama_dl;
pub mod prism;
mod sshd;
pub mod tls_redirect;

pub use net::{closed_port, DelayProxy, SilentListener};
pub use prism::{prism_available, Prism};
pub use sshd::{Sshd, SshdOptions, UserKey};

/// The login user the fixture lets in (created by `scripts/setup-test-host.sh`).
pub const TEST_USER: &str = "gputest";
/// A login user whose login shell is fish (`/usr/bin/fish`), and one whose login shell is tcsh
/// (`/usr/bin/tcsh`): sshd runs every exec request as `SHELL -c LINE`, and neither parses POSIX sh.
/// Created by `scripts/setup-test-host.sh` (which installs both shells).
pub const FISH_USER: &str = "gputest-fish";
pub const TCSH_USER: &str = "gputest-tcsh";
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

/// Set to `1` (as `scripts/check-all.sh` does) to make a missing sshd fixture a test failure.
pub const REQUIRE_SSH_ENV: &str = "GPURENT_REQUIRE_SSH";
/// How to make the SSH tests runnable; named in every skip notice and failure.
pub const ENABLE_HINT: &str = "run `sudo bash scripts/setup-test-host.sh` once, then run the tests as root (sudo -E cargo test …)";

/// `true` when the sshd fixture can run. Otherwise it returns `false` so the test can return
/// early, after printing a notice where `cargo test` shows it — but under `CI=true` or
/// `GPURENT_REQUIRE_SSH=1` it panics instead, saying how to enable the suite.
pub fn sshd_available() -> bool {
    let must = std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var(REQUIRE_SSH_ENV).is_ok_and(|v| v == "1");
    decide(sshd_missing_reason(), must)
}

/// [`sshd_available`] for a fixture logging in as `user` (e.g. [`FISH_USER`]): also `false` (or a
/// failure where required) when that user is missing.
pub fn sshd_available_as(user: &str) -> bool {
    let must = std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var(REQUIRE_SSH_ENV).is_ok_and(|v| v == "1");
    let missing = sshd_missing_reason().or_else(|| {
        let found = std::process::Command::new("id")
            .args(["-u", user])
            .output()
            .is_ok_and(|o| o.status.success());
        (!found).then(|| format!("user {user} is missing (run scripts/setup-test-host.sh as root)"))
    });
    decide(missing, must)
}

/// The message a required-but-missing fixture fails with.
pub fn failure_message(why: &str) -> String {
    format!(
        "the SSH tests are required here (CI=true or {REQUIRE_SSH_ENV}=1) but cannot run: {why}. To enable them, {ENABLE_HINT}."
    )
}

/// The notice a skipped SSH test prints.
pub fn skip_notice(why: &str) -> String {
    format!(
        "\n*** SSH tests SKIPPED: {why}.\n*** They did not run, so they prove nothing. To enable them, {ENABLE_HINT}; set {REQUIRE_SSH_ENV}=1 to make this a failure.\n"
    )
}

fn decide(missing: Option<String>, must: bool) -> bool {
    let Some(why) = missing else {
        return true;
    };
    if must {
        panic!("{}", failure_message(&why));
    }
    // Once per test binary, written to the process's stderr directly: `eprintln!` output of a
    // passing test is captured and hidden by cargo, this is not.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use std::io::Write;
        let _ = std::io::stderr().write_all(skip_notice(&why).as_bytes());
    });
    false
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Whether process `pid` of this machine ignores SIGTERM (bit 15 of `SigIgn` in
/// `/proc/PID/status`): what a test waits for before it sends a TERM that must be ignored,
/// instead of sleeping and racing the process's `trap "" TERM` or `signal(SIGTERM, SIG_IGN)`.
/// `false` for a process that is gone or unreadable.
pub fn ignores_sigterm(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|st| {
            st.lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        })
        .is_some_and(|m| m & (1 << (15 - 1)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_fixture_fails_loudly_when_required_and_says_how_to_enable_it() {
        assert!(decide(None, true));
        let err = std::panic::catch_unwind(|| decide(Some("user gputest is missing".into()), true))
            .expect_err("required: a failure, not a skip");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("user gputest is missing"), "{msg}");
        assert!(
            msg.contains("sudo bash scripts/setup-test-host.sh"),
            "{msg}"
        );
        assert!(
            !decide(Some("not root".into()), false),
            "not required: a skip"
        );
        assert!(skip_notice("not root").contains("sudo bash scripts/setup-test-host.sh"));
    }

    /// The README's test command (`scripts/check-all.sh`, via `.ci/run`) requires the SSH tests.
    #[test]
    fn check_all_requires_the_ssh_tests() {
        let script = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check-all.sh"),
        )
        .expect("scripts/check-all.sh");
        assert!(
            script.contains(&format!("export {REQUIRE_SSH_ENV}=1")),
            "check-all.sh must export {REQUIRE_SSH_ENV}=1"
        );
    }
}
