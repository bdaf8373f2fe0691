//! SSH keys whose private half lives only in the OS keychain.
//!
//! - [`keystore`]: the [`KeyStore`] trait, the OS keychain and an in-memory store for tests.
//! - [`material`]: generating, importing and decrypting keys with the `ssh-key` crate.
//! - [`session`]: keys unlocked with their passphrase in this app session (memory only).
//! - [`db`]: the metadata rows (SQLite `keys`): label, algorithm, fingerprint, public key line.
//!
//! The App methods (`key_new`, `key_list`, …, `load_private`) are in `app/keys.rs`.
//!
//! **Imported keys with a passphrase** are checked with `ssh-key` (a wrong passphrase is
//! [`KeyError::WrongPassphrase`], never a generic failure) and then stored *re-encrypted with the
//! same passphrase* in gpurent's one format (OpenSSH, aes256-ctr + bcrypt-pbkdf, LF line ends):
//! the protection the user chose is kept, and every stored key is one `ssh-key` can read.
//! Generated keys with a passphrase are stored encrypted the same way.

pub mod db;
pub mod keystore;
pub mod material;
pub mod session;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;

pub use keystore::{KeyStore, MemoryKeyStore, OsKeyStore, KEYCHAIN_SERVICE};

/// Which kind of key to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeyAlgorithm {
    /// Ed25519: small, fast, accepted by every current OpenSSH (the default).
    #[default]
    Ed25519,
    /// RSA with 4096 bits, for old hosts that do not accept Ed25519.
    Rsa4096,
}

/// How a key came to gpurent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeyOrigin {
    Generated,
    Imported,
}

impl KeyOrigin {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            KeyOrigin::Generated => "generated",
            KeyOrigin::Imported => "imported",
        }
    }
}

/// What gpurent knows about a key (never the private half).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct KeyInfo {
    /// The user's name for the key (letters, digits, `.`, `_`, `-`).
    pub label: String,
    /// The OpenSSH algorithm name, e.g. `ssh-ed25519` or `ssh-rsa`.
    pub algorithm: String,
    /// Size in bits where it varies (RSA), else `None`.
    pub bits: Option<u32>,
    /// `SHA256:…`, exactly as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// The exact `authorized_keys` line: `ssh-ed25519 AAAA… comment`.
    pub public_key: String,
    pub comment: String,
    /// Whether the keychain copy is protected by a passphrase (asked for at each use).
    pub has_passphrase: bool,
    pub origin: KeyOrigin,
    pub created_ms: i64,
}

/// Outcomes of key operations a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("the system keychain is not available (on Linux: no Secret Service such as GNOME Keyring or KWallet is running)")]
    KeychainUnavailable { detail: String },
    #[error(
        "the system keychain is locked; unlock it (log in to the desktop session) and try again"
    )]
    KeychainLocked { detail: String },
    #[error("the system keychain refused the request")]
    KeychainFailed { detail: String },
    #[error("the private key of '{label}' is missing from the system keychain; delete the key and create or import it again")]
    MissingFromKeychain { label: String },
    #[error("the passphrase is wrong")]
    WrongPassphrase,
    /// `label`: the saved key that needs it (unset while importing a file).
    #[error("this key is protected by a passphrase; enter it")]
    PassphraseRequired { label: Option<String> },
    #[error("this file is not a private key gpurent can use: {reason}")]
    UnsupportedKeyFormat { reason: String },
    #[error("a key named '{label}' already exists")]
    KeyExists { label: String },
    #[error("this key is already saved in gpurent as '{label}'")]
    AlreadyImported { label: String },
    #[error("there is no key named '{label}'")]
    UnknownKey { label: String },
    #[error("the key file {path} could not be read")]
    KeyFileUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the key could not be created")]
    Generation { detail: String },
    #[error("{field}: {reason}")]
    InvalidInput { field: String, reason: String },
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl KeyError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        KeyError::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<rusqlite::Error> for KeyError {
    fn from(e: rusqlite::Error) -> Self {
        KeyError::Core(CoreError::Database(e))
    }
}

impl Coded for KeyError {
    fn code(&self) -> &'static str {
        match self {
            KeyError::KeychainUnavailable { .. } => "keychain_unavailable",
            KeyError::KeychainLocked { .. } => "keychain_locked",
            KeyError::KeychainFailed { .. } => "keychain_error",
            KeyError::MissingFromKeychain { .. } => "key_missing_from_keychain",
            KeyError::WrongPassphrase => "wrong_passphrase",
            KeyError::PassphraseRequired { .. } => "passphrase_required",
            KeyError::UnsupportedKeyFormat { .. } => "unsupported_key_format",
            KeyError::KeyExists { .. } => "key_exists",
            KeyError::AlreadyImported { .. } => "key_already_imported",
            KeyError::UnknownKey { .. } => "unknown_key",
            KeyError::KeyFileUnreadable { .. } => "key_file_unreadable",
            KeyError::Generation { .. } => "key_generation_failed",
            KeyError::InvalidInput { .. } => "invalid_input",
            KeyError::Core(e) => e.code(),
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            KeyError::KeychainUnavailable { detail }
            | KeyError::KeychainLocked { detail }
            | KeyError::KeychainFailed { detail }
            | KeyError::Generation { detail } => Some(detail.clone()),
            KeyError::KeyFileUnreadable { path, source } => {
                Some(format!("{}: {source}", path.display()))
            }
            KeyError::InvalidInput { field, reason } => Some(format!("{field}: {reason}")),
            KeyError::Core(e) => e.detail(),
            _ => None,
        }
    }

    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            KeyError::PassphraseRequired { label: Some(label) } => {
                Some(crate::infra::ipc::ErrorData {
                    key_label: Some(label.clone()),
                    ..Default::default()
                })
            }
            _ => None,
        }
    }
}

/// Labels become keychain item names and `Host gpurent-<label>` aliases: keep them plain.
pub fn validate_label(label: &str) -> Result<(), KeyError> {
    if label.is_empty() || label.len() > 64 {
        return Err(KeyError::invalid("label", "must be 1 to 64 characters"));
    }
    if !label
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        || label.starts_with(['-', '.'])
    {
        return Err(KeyError::invalid(
            "label",
            "use letters, digits, '.', '_' and '-' (not first)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_plain_names() {
        for ok in ["default", "a", "work-4090", "lab_2.rsa"] {
            assert!(validate_label(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "-x",
            ".x",
            "a b",
            "a/b",
            "密钥",
            "x;rm",
            &"a".repeat(65),
        ] {
            let e = validate_label(bad).expect_err(bad);
            assert_eq!(e.code(), "invalid_input", "{bad}");
        }
        // What the user sees says why, not only which field.
        let e = validate_label("").expect_err("empty");
        assert_eq!(
            e.detail().as_deref(),
            Some("label: must be 1 to 64 characters")
        );
    }

    #[test]
    fn codes_are_stable_snake_case() {
        let all = [
            KeyError::KeychainUnavailable { detail: "d".into() },
            KeyError::KeychainLocked { detail: "d".into() },
            KeyError::KeychainFailed { detail: "d".into() },
            KeyError::MissingFromKeychain { label: "l".into() },
            KeyError::WrongPassphrase,
            KeyError::PassphraseRequired { label: None },
            KeyError::UnsupportedKeyFormat { reason: "r".into() },
            KeyError::KeyExists { label: "l".into() },
            KeyError::AlreadyImported { label: "l".into() },
            KeyError::UnknownKey { label: "l".into() },
            KeyError::Generation { detail: "d".into() },
            KeyError::invalid("label", "r"),
            KeyError::Core(CoreError::Cancelled),
        ];
        let mut seen = std::collections::HashSet::new();
        for e in &all {
            let c = e.code();
            assert!(
                c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                "{c}"
            );
            assert!(seen.insert(c), "duplicate code {c}");
        }
        assert_eq!(all[12].code(), "cancelled");
    }
}
