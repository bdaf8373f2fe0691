//! Plain data shapes shared by the edges (Tauri shell, CLI `--json`) and exported to the UI as
//! TypeScript. Nothing here knows about Tauri.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Anything that can cross the IPC edge: a stable code plus an English fallback message
/// (`Display`). The UI shows its own translation for the code.
pub trait Coded: std::error::Error {
    /// Stable snake_case identifier.
    fn code(&self) -> &'static str;
    /// Optional technical detail (paths, underlying error text) for an expandable section.
    fn detail(&self) -> Option<String> {
        None
    }
    /// Structured facts the UI acts on (fingerprints, the key that needs a passphrase).
    fn data(&self) -> Option<ErrorData> {
        None
    }
}

/// Which machine of a connection: the host itself or the jump host in front of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Target,
    Jump,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Target => "target",
            Role::Jump => "jump",
        }
    }
}

/// The one error shape that crosses the IPC edge and the CLI's `--json` output.
/// `code` is stable; `message` is an English fallback (the UI translates by `code`);
/// `detail` is optional technical text; `data` holds the facts a screen acts on (a host-key
/// fingerprint and its hop, the key that needs its passphrase), so nothing is read out of text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ErrorPayload {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub data: Option<Box<ErrorData>>,
}

/// Structured facts of an error, filled from the typed error at the edge ([`Coded::data`]). Each
/// field is set only by the codes that carry it; fields are added, never renamed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ErrorData {
    /// `passphrase_required`: the key (by label) whose passphrase is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub key_label: Option<String>,
    /// Host-key codes: which machine presented the key (the host itself or its jump host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub role: Option<Role>,
    /// Host-key codes: the machine's address and port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub port: Option<u16>,
    /// Host-key codes: the key type the machine presented (e.g. `ssh-ed25519`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub key_type: Option<String>,
    /// Host-key codes: the fingerprint (`SHA256:…`) the machine presented now — the one to
    /// compare and, when the user agrees, to trust or re-pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub fingerprint: Option<String>,
    /// `host_key_changed`: the fingerprint pinned before; `host_key_trust_mismatch`: the one the
    /// user gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub expected_fingerprint: Option<String>,
    /// `model_does_not_fit`: what the model needs per GPU, GiB (the estimator's figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub need_gib: Option<f64>,
    /// `model_does_not_fit`: the free memory of the smallest chosen GPU, GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub have_gib: Option<f64>,
    /// A rent that failed after the machine was made (any code): the gpurent id of the machine
    /// that still bills — release it with `gpurent release ID --yes` or from Hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub still_billing: Option<String>,
    /// A recipe's flow (`recipe_run`): the step that failed (`setup`, `start`, `ready`, `guard`,
    /// `open`); the code is that step's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub step: Option<String>,
}

impl ErrorPayload {
    /// Build the wire shape from a typed error. Call this only at an edge.
    pub fn from_error<E: Coded + ?Sized>(e: &E) -> Self {
        ErrorPayload {
            code: e.code().to_string(),
            message: e.to_string(),
            detail: e.detail(),
            data: e.data().map(Box::new),
        }
    }

    /// For failures that are bugs or environment problems with no typed cause (e.g. a poisoned lock).
    pub fn internal(message: impl Into<String>) -> Self {
        ErrorPayload {
            code: "internal".into(),
            message: message.into(),
            detail: None,
            data: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::error::CoreError;

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
