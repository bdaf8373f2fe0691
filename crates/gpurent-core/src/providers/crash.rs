//! Named crash points for the crash-recovery test (a **test setting**, documented in
//! docs/providers.md): in a test build (debug assertions on), when `GPURENT_TEST_CRASH_AT` names
//! a point, the process sends itself SIGKILL there — no destructors, no flushing, exactly like a
//! power cut or `kill -9`. Unset, or in a release build, it does nothing.

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

/// Whether the crash points are armed in this build: only where debug assertions are on (the
/// test builds). A release build — what users run — never kills itself, whatever the
/// environment says (issue 19: a stray `GPURENT_TEST_CRASH_AT` must not cut a rent short
/// between the create and the ledger).
pub const ARMED: bool = cfg!(debug_assertions);

/// Whether the point `name` fires: armed, and the variable names it.
pub fn fires(armed: bool, want: Option<&str>, name: &str) -> bool {
    armed && want == Some(name)
}

/// Die here if the test asked for it (test builds only, [`ARMED`]).
pub fn point(name: &str) {
    let want = std::env::var(ENV).ok();
    if !fires(ARMED, want.as_deref(), name) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_points_fire_only_in_test_builds() {
        // A release build ignores the variable.
        assert!(!fires(false, Some("before_create"), "before_create"));
        // A test build dies only at the named point.
        assert!(fires(true, Some("before_create"), "before_create"));
        assert!(!fires(true, Some("before_create"), "after_intent"));
        assert!(!fires(true, None, "before_create"));
        assert_eq!(ARMED, cfg!(debug_assertions));
    }
}
