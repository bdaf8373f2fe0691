//! Output helpers shared by subcommands: JSON documents and the error edge.

use std::process::ExitCode;

use gpurent_core::infra::ipc::ErrorPayload;
use gpurent_core::{Coded, CoreError};
use serde::Serialize;

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
        eprintln!("gpurent: {}", payload.message);
        if let Some(d) = &payload.detail {
            eprintln!("  ({d})");
        }
    }
    if payload.code == "invalid_input" {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}
