//! Named crash points for the crash-recovery test (a **test setting**, documented in
//! docs/providers.md): when `GPURENT_TEST_CRASH_AT` names a point, the process sends itself
//! SIGKILL there — no destructors, no flushing, exactly like a power cut or `kill -9`. Unset (the
//! normal case) it does nothing.

/// The environment variable naming the point to die at.
pub const ENV: &str = "GPURENT_TEST_CRASH_AT";

/// Every point `rent` passes, in order (the test iterates over them).
pub const RENT_POINTS: &[&str] = &[
    "after_intent",
    "after_key_registered",
    "before_create",
    "after_create_answer",
    "after_provider_id_recorded",
    "after_key_attached",
    "during_wait",
    "after_running",
    "after_ssh_reachable",
    "after_host_saved",
    "after_login_proven",
    "after_ready_recorded",
];

/// Die here if the test asked for it.
pub fn point(name: &str) {
    let Ok(want) = std::env::var(ENV) else { return };
    if want != name {
        return;
    }
    eprintln!("gpurent: test crash point '{name}' reached; sending SIGKILL to self");
    let pid = std::process::id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status();
    // `kill` missing: still never continue past the point.
    std::process::abort();
}
