//! `gpurent guard` as a black box where it needs no host: what it refuses before connecting, with
//! the stable codes and exit statuses. (The guard itself runs against a real sshd in
//! crates/gpurent-core/tests/guard_ssh.rs through the same facade calls.)

mod cli_common;

use cli_common::gpurent;
use std::process::Output;

fn error_code(out: &Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    v["error"]["code"].as_str().unwrap_or_default().to_string()
}

#[test]
fn refusals_before_connecting() {
    let home = tempfile::tempdir().expect("tmp");
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["guard", "set", "box", "--idle-minutes", "0", "--json"],
            2,
            "invalid_input",
        ),
        (
            &["guard", "set", "box", "--deadline", "soon", "--json"],
            2,
            "invalid_input",
        ),
        (
            &["guard", "set", "box", "--action", "hibernate", "--json"],
            2,
            "invalid_input",
        ),
        (
            &["guard", "set", "box", "--action", "command", "--json"],
            2,
            "invalid_input",
        ),
        (
            &["guard", "set", "box", "--action", "stop", "--json"],
            1,
            "guard_provider_action_unavailable",
        ),
        (
            &[
                "guard",
                "set",
                "box",
                "--action",
                "release",
                "--deadline",
                "2.5h",
                "--json",
            ],
            1,
            "guard_provider_action_unavailable",
        ),
        (
            &["guard", "snooze", "box", "5x", "--json"],
            2,
            "invalid_input",
        ),
        (&["guard", "status", "nowhere", "--json"], 1, "unknown_host"),
    ];
    for (args, exit, code) in cases {
        let out = gpurent(home.path(), args);
        assert_eq!(out.status.code(), Some(*exit), "{args:?}: {out:?}");
        assert_eq!(error_code(&out), *code, "{args:?}: {out:?}");
    }
}
