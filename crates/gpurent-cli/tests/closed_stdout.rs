//! A closed stdout (`gpurent models --json | head -1`) ends the CLI quietly with status 0, as
//! ripgrep does, instead of a panic ("failed printing to stdout: Broken pipe", exit 101).

use std::io::Write;
use std::process::{Command, Stdio};

/// Run `gpurent ARGS` with a stdout pipe whose reading end is already closed: a shell waits for
/// a line on stdin before it starts gpurent, and that line is sent only after the test dropped
/// its end of the pipe, so gpurent's first write meets no reader (no race with its start).
fn run_into_a_closed_pipe(args: &[&str]) -> std::process::Output {
    let home = tempfile::tempdir().expect("tmp");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"read go; exec "$@""#)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home.path())
        .args(args)
        .env_remove("GPURENT_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"go\n").expect("go");
    drop(stdin);
    child.wait_with_output().expect("wait")
}

#[test]
fn a_closed_stdout_ends_the_cli_quietly() {
    for args in [&["models", "--json"][..], &["cards", "--json"], &["cards"]] {
        let out = run_into_a_closed_pipe(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "gpurent {args:?} into a closed pipe panicked: {stderr}"
        );
        assert_eq!(out.status.code(), Some(0), "gpurent {args:?}: {stderr}");
    }
}
