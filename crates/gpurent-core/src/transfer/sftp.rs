//! Remote file primitives shared by the movers: put a verified temp file under its final name,
//! whether a path exists, and SFTP statuses as typed outcomes.

use crate::infra::cancel::CancelToken;
use crate::remote::{shell_quote, Connection};
use crate::transfer::{proc, TransferError};

/// Put a finished temp file/folder under its final remote name. `overwrite`: replace what is
/// there (a file atomically; a folder is moved aside, the new one moved in, the old removed).
pub fn place_remote(
    conn: &Connection,
    tmp: &str,
    fin: &str,
    overwrite: bool,
    cancel: &CancelToken,
) -> Result<(), TransferError> {
    let (t, f) = (shell_quote(tmp)?, shell_quote(fin)?);
    let o = shell_quote(&format!("{tmp}.old"))?;
    let ow = if overwrite { 1 } else { 0 };
    let script = format!(
        "T={t}; F={f}; O={o}\n\
         if [ -L \"$F\" ]; then [ {ow} = 1 ] || exit 4; rm -f -- \"$F\" || exit 3\n\
         elif [ -d \"$F\" ]; then [ {ow} = 1 ] || exit 4; mv -- \"$F\" \"$O\" || exit 3\n\
         elif [ -e \"$F\" ]; then [ {ow} = 1 ] || exit 4; if [ -d \"$T\" ]; then mv -- \"$F\" \"$O\" || exit 3; fi\n\
         fi\n\
         mv -f -- \"$T\" \"$F\" && rm -rf -- \"$O\""
    );
    let out = proc::run(conn, &script, None, cancel)?;
    match out.status {
        Some(0) => Ok(()),
        Some(4) => Err(TransferError::AlreadyExists { path: fin.into() }),
        _ => Err(TransferError::from_stderr("rename", fin, &out.stderr)),
    }
}

/// Whether a remote path exists (a dangling link counts).
pub fn remote_exists(conn: &Connection, path: &str) -> Result<bool, TransferError> {
    let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
    match sftp.lstat(std::path::Path::new(path)) {
        Ok(_) => Ok(true),
        Err(e) => match e.code() {
            ssh2::ErrorCode::SFTP(2) => Ok(false),
            _ => Err(sftp_error(&e, path)),
        },
    }
}

/// An SFTP status into an outcome (a dead link stays resumable).
pub fn sftp_error(e: &ssh2::Error, path: &str) -> TransferError {
    match e.code() {
        ssh2::ErrorCode::SFTP(2) => TransferError::RemoteFileMissing { path: path.into() },
        ssh2::ErrorCode::SFTP(3) => TransferError::PermissionDenied {
            path: path.into(),
            detail: e.to_string(),
        },
        ssh2::ErrorCode::SFTP(14) | ssh2::ErrorCode::SFTP(15) => TransferError::RemoteDiskFull {
            path: path.into(),
            detail: e.to_string(),
        },
        ssh2::ErrorCode::SFTP(_) => TransferError::RemoteCommandFailed {
            what: "sftp".into(),
            detail: format!("{path}: {e}"),
        },
        ssh2::ErrorCode::Session(_) => TransferError::ssh(e),
    }
}

/// An I/O error from an SFTP file: its ssh2 error when it carries one.
pub fn sftp_io_error(e: &std::io::Error, path: &str) -> TransferError {
    match e.get_ref().and_then(|i| i.downcast_ref::<ssh2::Error>()) {
        Some(se) => sftp_error(se, path),
        None => proc::io_lost(e),
    }
}
