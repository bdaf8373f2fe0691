//! Plain data shapes shared by the edges (Tauri shell, CLI `--json`) and exported to the UI as
//! TypeScript. Nothing here knows about Tauri.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::Coded;

/// The one error shape that crosses the IPC edge and the CLI's `--json` output.
/// `code` is stable; `message` is an English fallback (the UI translates by `code`);
/// `detail` is optional technical text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ErrorPayload {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub detail: Option<String>,
}

impl ErrorPayload {
    /// Build the wire shape from a typed error. Call this only at an edge.
    pub fn from_error<E: Coded + ?Sized>(e: &E) -> Self {
        ErrorPayload {
            code: e.code().to_string(),
            message: e.to_string(),
            detail: e.detail(),
        }
    }

    /// For failures that are bugs or environment problems with no typed cause (e.g. a poisoned lock).
    pub fn internal(message: impl Into<String>) -> Self {
        ErrorPayload {
            code: "internal".into(),
            message: message.into(),
            detail: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CoreError;

    #[test]
    fn payload_from_typed_error() {
        let p = ErrorPayload::from_error(&CoreError::UnknownCard("rtx-9999".into()));
        assert_eq!(p.code, "unknown_card");
        assert_eq!(p.message, "unknown GPU 'rtx-9999'");
        let json = serde_json::to_value(&p).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"code": "unknown_card", "message": "unknown GPU 'rtx-9999'"})
        );
    }
}
