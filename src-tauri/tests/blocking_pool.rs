//! Async Tauri commands run on the async runtime's few worker threads: a command that calls the
//! keychain, starts a process (`ssh-add`, a terminal), asks NVML, or touches the network or the
//! user's files there stalls every other command. Such calls go through
//! `commands::ops::blocking`. This test reads the command sources and fails when one of those
//! core calls is made straight on `state.app()?` instead.

use std::path::Path;

/// Core calls that block (keychain, processes, NVML, SSH, the user's files).
const BLOCKING_PREFIXES: &[&str] = &[
    "key_",
    "load_private",
    "host_add",
    "host_check",
    "host_repin",
    "host_ssh_config",
    "host_delete",
    "host_open_",
    "host_agent_add",
    "local_fit",
    "local_gpus",
    "setup_",
    "explain_",
    "transfer_put",
    "transfer_get",
    "transfer_resume",
    "transfer_discard",
    "transfer_scan",
    "remote_",
    "self_check",
];

/// Exceptions that only touch memory: forgetting unlocked keys.
const MEMORY_ONLY: &[&str] = &["key_lock"];

#[test]
fn blocking_core_calls_run_on_the_blocking_pool() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut bad = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("commands dir").flatten() {
        let path = entry.path();
        let src = std::fs::read_to_string(&path).expect("read");
        let flat: String = src.chars().filter(|c| !c.is_whitespace()).collect();
        for (i, _) in flat.match_indices("state.app()?.") {
            seen += 1;
            let rest = &flat[i + "state.app()?.".len()..];
            let method: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if MEMORY_ONLY.contains(&method.as_str()) {
                continue;
            }
            if BLOCKING_PREFIXES.iter().any(|p| method.starts_with(p)) {
                bad.push(format!(
                    "{}: {method}",
                    path.file_name().unwrap_or_default().to_string_lossy()
                ));
            }
        }
    }
    assert!(seen > 0, "the pattern still matches the sources");
    assert!(
        bad.is_empty(),
        "blocking core calls on the async runtime (wrap them in ops::blocking): {bad:?}"
    );
}
