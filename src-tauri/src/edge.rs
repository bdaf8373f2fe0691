//! The IPC edge: typed core errors become `{code, message, detail?}` here and nowhere else.

use gpurent_core::infra::ipc::ErrorPayload;
use gpurent_core::Coded;

/// Convert and log (code only; messages may contain user paths but never secrets).
pub fn to_payload<E: Coded>(e: &E) -> ErrorPayload {
    tracing::warn!(code = e.code(), "command failed: {e}");
    ErrorPayload::from_error(e)
}

/// `map_err` helper for command handlers.
pub fn err<E: Coded>(e: E) -> ErrorPayload {
    to_payload(&e)
}

/// Result type of every command.
pub type CmdResult<T> = Result<T, ErrorPayload>;
