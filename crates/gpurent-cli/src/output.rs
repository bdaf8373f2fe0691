//! Output helpers shared by subcommands: JSON documents and the error edge.

use std::process::ExitCode;

use gpurent_core::infra::ipc::ErrorPayload;
use gpurent_core::{Coded, CoreError};
use serde::Serialize;

/// A closed stdout (`gpurent … --json | head`) ends the CLI quietly with status 0, as ripgrep
/// does, instead of a panic report and status 101. Every print goes through `println!`, which
/// panics with "failed printing to stdout: ERROR" (std's `io/stdio.rs`, `print_to`); this hook
/// ends the process there when ERROR is a broken pipe (EPIPE, os error 32, on Linux and macOS;
/// ERROR_BROKEN_PIPE 109 and ERROR_NO_DATA 232 on Windows). Any other panic is reported as ever.
pub fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if text.is_some_and(is_closed_stdout) {
            std::process::exit(0);
        }
        default(info)
    }));
}

/// An error as the terminal shows it. A message or detail can carry a host's names (a file in a
/// downloaded folder, a path): escape sequences and controls in them are dropped, so a host
/// cannot retitle the terminal or write the clipboard (OSC 52) through an error (security
/// review §9). `--json` needs no cleaning: JSON escapes every control character.
fn error_lines(payload: &ErrorPayload) -> Vec<String> {
    let clean = gpurent_core::remote::text::cleaned;
    let mut lines = vec![format!("gpurent: {}", clean(&payload.message))];
    if let Some(d) = &payload.detail {
        lines.push(format!("  ({})", clean(d)));
    }
    lines
}

fn is_closed_stdout(panic: &str) -> bool {
    panic.starts_with("failed printing to stdout")
        && ["(os error 32)", "(os error 109)", "(os error 232)"]
            .iter()
            .any(|code| panic.ends_with(code))
}

/// Print one JSON document on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), CoreError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CoreError::invalid("output", e.to_string()))?;
    println!("{text}");
    Ok(())
}

/// Report an error: `{"error": {...}}` on stdout with `--json`, a line on stderr otherwise.
/// Exit code 2 for bad input, 1 otherwise.
pub fn fail<E: Coded>(e: &E, json: bool) -> ExitCode {
    let payload = ErrorPayload::from_error(e);
    if json {
        println!(
            "{}",
            serde_json::json!({ "error": serde_json::to_value(&payload).unwrap_or_default() })
        );
    } else {
        for line in error_lines(&payload) {
            eprintln!("{line}");
        }
    }
    if payload.code == "invalid_input" {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_escapes_never_reach_the_terminal_through_an_error() {
        let e = gpurent_core::transfer::TransferError::NameNotRepresentable {
            name: "x\x1b]52;c;Y3VybCBldmlsfHNoCg==\x07y".into(),
            reason: "a \x1b[2Jtest\u{9b}31m".into(),
        };
        let lines = error_lines(&ErrorPayload::from_error(&e));
        for l in &lines {
            assert!(
                !l.chars().any(|c| c.is_control()),
                "a control character reached the terminal: {l:?}"
            );
        }
        assert!(lines[0].contains("xy"), "{lines:?}");
    }

    #[test]
    fn only_a_broken_stdout_pipe_is_quiet() {
        assert!(is_closed_stdout(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(is_closed_stdout(
            "failed printing to stdout: The pipe is being closed. (os error 232)"
        ));
        // A full disk or another stream is still reported.
        assert!(!is_closed_stdout(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!is_closed_stdout(
            "failed printing to stderr: Broken pipe (os error 32)"
        ));
        assert!(!is_closed_stdout("index out of bounds (os error 32)"));
    }
}
