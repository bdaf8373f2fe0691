//! [`TransferError`]: every way a transfer can end, with stable codes (`docs/transfer.md`).

use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::remote::{RemoteError, Stage};

/// Outcomes of moving files. `connection_lost` is resumable (`transfer_resume(id)`).
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("the host's disk is full while writing {path}; the partial upload was removed")]
    RemoteDiskFull { path: String, detail: String },
    #[error("permission denied for {path}")]
    PermissionDenied { path: String, detail: String },
    #[error("{path} does not exist on this computer")]
    LocalFileMissing { path: String },
    #[error("{path} does not exist on the host")]
    RemoteFileMissing { path: String },
    #[error("{path} already exists (choose overwrite to replace it)")]
    AlreadyExists { path: String },
    #[error("{path} could not be read or written here")]
    LocalIo { path: String, detail: String },
    #[error("this computer's disk is full while writing {path}")]
    LocalDiskFull { path: String },
    #[error("{path} arrived with a different SHA-256 than its source, also after one retry")]
    VerifyMismatch {
        path: String,
        local_sha256: String,
        remote_sha256: String,
    },
    #[error("the connection was lost during transfer {transfer_id}; resume it to continue from the last verified byte")]
    ConnectionLost { transfer_id: i64, detail: String },
    #[error("the host has no SHA-256 tool (sha256sum, openssl, shasum or python3)")]
    HashToolMissing,
    #[error("a command on the host failed: {what}")]
    RemoteCommandFailed { what: String, detail: String },
    #[error("the source changed since transfer {transfer_id} started")]
    SourceChanged { transfer_id: i64 },
    #[error("no transfer with id {0}")]
    UnknownTransfer(i64),
    #[error(
        "transfer {transfer_id} is paused; what arrived so far is kept, resume it to continue"
    )]
    Paused { transfer_id: i64 },
    #[error("transfer {transfer_id} is already running")]
    Busy { transfer_id: i64 },
    #[error("transfer {transfer_id} is already finished and verified")]
    AlreadyDone { transfer_id: i64 },
    #[error("refusing to delete {path}: {reason}")]
    UnsafeDelete { path: String, reason: String },
    /// A file name that this computer or the host cannot hold as it is (Windows' reserved names
    /// and characters, a name that is not Unicode); nothing was written for it.
    #[error("the name {name} cannot be used here: {reason}; rename it and try again")]
    NameNotRepresentable { name: String, reason: String },
    #[error(transparent)]
    Remote(RemoteError),
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl From<RemoteError> for TransferError {
    fn from(e: RemoteError) -> Self {
        match e {
            RemoteError::Core(c) => TransferError::Core(c),
            other => TransferError::Remote(other),
        }
    }
}

impl From<rusqlite::Error> for TransferError {
    fn from(e: rusqlite::Error) -> Self {
        TransferError::Core(CoreError::Database(e))
    }
}

impl TransferError {
    pub fn cancelled() -> Self {
        TransferError::Core(CoreError::Cancelled)
    }

    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        TransferError::Core(CoreError::invalid(field, reason))
    }

    pub fn local(path: &std::path::Path, e: &std::io::Error) -> Self {
        let p = path.display().to_string();
        match e.kind() {
            std::io::ErrorKind::NotFound => TransferError::LocalFileMissing { path: p },
            std::io::ErrorKind::PermissionDenied => TransferError::PermissionDenied {
                path: p,
                detail: e.to_string(),
            },
            std::io::ErrorKind::StorageFull => TransferError::LocalDiskFull { path: p },
            _ => TransferError::LocalIo {
                path: p,
                detail: e.to_string(),
            },
        }
    }

    /// An ssh2 failure while moving data: a dead link is `connection_lost`-like (resumable).
    pub fn ssh(e: &ssh2::Error) -> Self {
        TransferError::Remote(RemoteError::from_ssh(Stage::Exec, e, 0))
    }

    /// Whether reconnecting and resuming can help.
    pub fn is_link_failure(&self) -> bool {
        match self {
            TransferError::ConnectionLost { .. } => true,
            TransferError::Remote(r) => matches!(
                r,
                RemoteError::ConnectionLost { .. }
                    | RemoteError::TimedOut { .. }
                    | RemoteError::Network { .. }
                    | RemoteError::ConnectionRefused { .. }
                    | RemoteError::NoRoute { .. }
            ),
            TransferError::Core(CoreError::Io { .. }) => false,
            _ => false,
        }
    }

    /// Read a failed remote command's stderr: a full disk and a denied permission get their own
    /// codes; anything else is `remote_command_failed`.
    pub fn from_stderr(what: &str, path: &str, stderr: &str) -> Self {
        let detail = stderr.trim().chars().take(2000).collect::<String>();
        if detail.contains("No space left on device") || detail.contains("Disk quota exceeded") {
            TransferError::RemoteDiskFull {
                path: path.into(),
                detail,
            }
        } else if detail.contains("Permission denied") || detail.contains("Read-only file system") {
            TransferError::PermissionDenied {
                path: path.into(),
                detail,
            }
        } else if detail.contains("No such file or directory") {
            TransferError::RemoteFileMissing { path: path.into() }
        } else {
            TransferError::RemoteCommandFailed {
                what: what.into(),
                detail,
            }
        }
    }
}

impl Coded for TransferError {
    fn code(&self) -> &'static str {
        match self {
            TransferError::RemoteDiskFull { .. } => "remote_disk_full",
            TransferError::PermissionDenied { .. } => "permission_denied",
            TransferError::LocalFileMissing { .. } => "local_file_missing",
            TransferError::RemoteFileMissing { .. } => "remote_file_missing",
            TransferError::AlreadyExists { .. } => "already_exists",
            TransferError::LocalIo { .. } => "local_io_error",
            TransferError::LocalDiskFull { .. } => "local_disk_full",
            TransferError::VerifyMismatch { .. } => "verify_mismatch",
            TransferError::ConnectionLost { .. } => "connection_lost",
            TransferError::HashToolMissing => "hash_tool_missing",
            TransferError::RemoteCommandFailed { .. } => "remote_command_failed",
            TransferError::SourceChanged { .. } => "source_changed",
            TransferError::UnknownTransfer(_) => "unknown_transfer",
            TransferError::Paused { .. } => "paused",
            TransferError::Busy { .. } => "transfer_busy",
            TransferError::AlreadyDone { .. } => "transfer_done",
            TransferError::UnsafeDelete { .. } => "unsafe_delete",
            TransferError::NameNotRepresentable { .. } => "name_not_representable",
            TransferError::Remote(e) => e.code(),
            TransferError::Core(e) => e.code(),
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            TransferError::RemoteDiskFull { detail, .. }
            | TransferError::PermissionDenied { detail, .. }
            | TransferError::LocalIo { detail, .. }
            | TransferError::ConnectionLost { detail, .. }
            | TransferError::RemoteCommandFailed { detail, .. } => Some(detail.clone()),
            TransferError::VerifyMismatch {
                local_sha256,
                remote_sha256,
                ..
            } => Some(format!("local {local_sha256}, remote {remote_sha256}")),
            TransferError::Remote(e) => e.detail(),
            TransferError::Core(e) => e.detail(),
            _ => None,
        }
    }
    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            TransferError::Remote(e) => e.data(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_is_read_into_actionable_codes() {
        let full =
            TransferError::from_stderr("upload", "x", "cat: write error: No space left on device");
        assert_eq!(full.code(), "remote_disk_full");
        let perm =
            TransferError::from_stderr("upload", "x", "sh: 1: cannot create x: Permission denied");
        assert_eq!(perm.code(), "permission_denied");
        let other = TransferError::from_stderr("tar", "x", "tar: bad");
        assert_eq!(
            (other.code(), other.detail().as_deref()),
            ("remote_command_failed", Some("tar: bad"))
        );
        let lost = TransferError::from(RemoteError::ConnectionLost {
            stage: Stage::Exec,
            detail: "eof".into(),
        });
        assert!(lost.is_link_failure());
        assert_eq!(TransferError::cancelled().code(), "cancelled");
    }
}
