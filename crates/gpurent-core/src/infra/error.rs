//! Typed errors of the core. Each variant is an outcome a user can act on and has a stable `code`
//! (snake_case) that the UI and the CLI's `--json` branch on; codes are added, never renamed.
//! Conversion to the wire shape `{code, message, detail?}` happens only at the edges
//! (the Tauri shell and the CLI) through [`crate::infra::ipc::ErrorPayload`] (the [`Coded`] trait lives there too, beside the
//! payload it fills).

use std::path::{Path, PathBuf};

use crate::infra::ipc::Coded;

/// Errors of the foundation: files, database, settings, input validation, cancellation.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("could not find a home directory to keep gpurent's files in; set GPURENT_HOME")]
    NoHomeDirectory,
    #[error("could not read or write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the local database could not be used")]
    Database(#[from] rusqlite::Error),
    #[error(
        "the database was written by a newer gpurent (schema {found}, this build knows {known})"
    )]
    DatabaseTooNew { found: i64, known: i64 },
    #[error("the settings file is damaged; it was kept as {backup} and defaults are used")]
    SettingsDamaged { backup: PathBuf },
    #[error("{field}: {reason}")]
    InvalidInput { field: String, reason: String },
    #[error("unknown GPU '{0}'")]
    UnknownCard(String),
    #[error("the operation was cancelled")]
    Cancelled,
    #[error("no operation with id '{0}' is running")]
    UnknownOperation(String),
    /// Data shipped with gpurent (its CSV tables) does not parse: a broken install.
    #[error("built-in data is damaged: {0}")]
    BundledData(String),
    /// A row gpurent saved earlier (in the local database or a journal) cannot be read back.
    #[error("saved data in {what} is damaged: {detail}")]
    StoredDataDamaged { what: String, detail: String },
    /// The operating system gave no random bytes (for a new id).
    #[error("the operating system gave no random bytes: {0}")]
    NoRandomness(String),
}

impl CoreError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        CoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A saved row in `what` (a table or journal) that cannot be read back.
    pub fn stored(what: impl Into<String>, detail: impl Into<String>) -> Self {
        CoreError::StoredDataDamaged {
            what: what.into(),
            detail: detail.into(),
        }
    }

    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        CoreError::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl Coded for CoreError {
    fn code(&self) -> &'static str {
        match self {
            CoreError::NoHomeDirectory => "no_home_directory",
            CoreError::Io { .. } => "io_error",
            CoreError::Database(_) => "database_error",
            CoreError::DatabaseTooNew { .. } => "database_too_new",
            CoreError::SettingsDamaged { .. } => "settings_damaged",
            CoreError::InvalidInput { .. } => "invalid_input",
            CoreError::UnknownCard(_) => "unknown_card",
            CoreError::Cancelled => "cancelled",
            CoreError::UnknownOperation(_) => "unknown_operation",
            CoreError::BundledData(_) => "bundled_data_damaged",
            CoreError::StoredDataDamaged { .. } => "stored_data_damaged",
            CoreError::NoRandomness(_) => "no_randomness",
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            CoreError::Io { path, source } => Some(format!("{}: {source}", path.display())),
            CoreError::Database(e) => Some(e.to_string()),
            CoreError::InvalidInput { field, reason } => Some(format!("{field}: {reason}")),
            CoreError::StoredDataDamaged { what, detail } => Some(format!("{what}: {detail}")),
            CoreError::NoRandomness(e) => Some(e.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_snake_case() {
        let all = [
            CoreError::NoHomeDirectory,
            CoreError::io(Path::new("/x"), std::io::Error::other("boom")),
            CoreError::DatabaseTooNew { found: 9, known: 1 },
            CoreError::SettingsDamaged {
                backup: PathBuf::from("/b"),
            },
            CoreError::invalid("min_vram_gb", "must be a number"),
            CoreError::UnknownCard("x".into()),
            CoreError::Cancelled,
            CoreError::UnknownOperation("op".into()),
            CoreError::BundledData("x".into()),
            CoreError::stored("budgets", "period 'week'"),
            CoreError::NoRandomness("x".into()),
        ];
        for e in &all {
            let c = e.code();
            assert!(
                c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'),
                "{c}"
            );
        }
        assert_eq!(all[1].detail().as_deref(), Some("/x: boom"));
    }

    #[test]
    fn invalid_input_says_what_was_wrong_not_only_the_field() {
        let e = CoreError::invalid("min_vram_gb", "must be a number");
        assert_eq!(e.detail().as_deref(), Some("min_vram_gb: must be a number"));
    }
}
