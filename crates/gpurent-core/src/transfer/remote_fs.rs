//! The remote file pane: list a folder (SFTP readdir: any file name works, nothing is parsed
//! from `ls`), create a folder, rename, delete (recursive only on request; never `/`, the login
//! folder or its parents).

use std::path::Path;

use crate::infra::cancel::CancelToken;
use crate::remote::{shell_quote, Connection};
use crate::transfer::sftp::sftp_error;
use crate::transfer::{
    proc, remote_dir, RemoteEntry, RemoteEntryKind, RemoteListing, TransferError,
};

fn sftp(conn: &Connection) -> Result<ssh2::Sftp, TransferError> {
    conn.session().sftp().map_err(|e| TransferError::ssh(&e))
}

fn sftp_path(p: &str) -> String {
    let d = remote_dir(p);
    if d.is_empty() {
        ".".into()
    } else {
        d
    }
}

fn kind_of(st: &ssh2::FileStat) -> RemoteEntryKind {
    match st.perm.map(|p| p & 0o170000) {
        Some(0o040000) => RemoteEntryKind::Dir,
        Some(0o100000) => RemoteEntryKind::File,
        Some(0o120000) => RemoteEntryKind::Symlink,
        _ => RemoteEntryKind::Other,
    }
}

pub fn ls(conn: &Connection, dir: &str) -> Result<RemoteListing, TransferError> {
    let s = sftp(conn)?;
    let p = sftp_path(dir);
    let absolute = s
        .realpath(Path::new(&p))
        .map_err(|e| sftp_error(&e, &p))?
        .to_string_lossy()
        .into_owned();
    let mut entries: Vec<RemoteEntry> = s
        .readdir(Path::new(&p))
        .map_err(|e| sftp_error(&e, &p))?
        .into_iter()
        .filter_map(|(path, st)| {
            // The last `/`-separated part (not `Path::file_name`: on Windows that would also
            // split at a `\`, which is an ordinary character in a name on the host).
            let full = path.to_string_lossy();
            let name = full
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())?
                .to_string();
            if name == "." || name == ".." {
                return None;
            }
            // readdir gives lstat-like attributes: a link to a folder shows as a link.
            Some(RemoteEntry {
                path: crate::transfer::remote_join(dir, &name),
                kind: kind_of(&st),
                size_bytes: st.size.unwrap_or(0),
                modified_s: st.mtime,
                mode: st.perm.map(|p| p & 0o7777),
                name,
            })
        })
        .collect();
    entries.sort_by(|a, b| {
        (a.kind != RemoteEntryKind::Dir, &a.name).cmp(&(b.kind != RemoteEntryKind::Dir, &b.name))
    });
    Ok(RemoteListing {
        dir: dir.to_string(),
        absolute,
        entries,
    })
}

pub fn mkdir(conn: &Connection, path: &str) -> Result<(), TransferError> {
    let p = sftp_path(path);
    let s = sftp(conn)?;
    if s.lstat(Path::new(&p)).is_ok() {
        return Err(TransferError::AlreadyExists { path: p });
    }
    s.mkdir(Path::new(&p), 0o755)
        .map_err(|e| sftp_error(&e, &p))
}

/// Rename (never over an existing name).
pub fn rename(conn: &Connection, from: &str, to: &str) -> Result<(), TransferError> {
    let (f, t) = (sftp_path(from), sftp_path(to));
    let s = sftp(conn)?;
    if s.lstat(Path::new(&t)).is_ok() {
        return Err(TransferError::AlreadyExists { path: t });
    }
    s.rename(Path::new(&f), Path::new(&t), None)
        .map_err(|e| sftp_error(&e, &f))
}

/// Delete a file or link, an empty folder, or (with `recursive`) a folder and everything in it.
/// Links are removed, never followed. `/`, the login folder and its parents are refused.
pub fn delete(
    conn: &Connection,
    path: &str,
    recursive: bool,
    cancel: &CancelToken,
) -> Result<(), TransferError> {
    let p = sftp_path(path);
    let s = sftp(conn)?;
    let unsafe_ = |reason: &str| TransferError::UnsafeDelete {
        path: p.clone(),
        reason: reason.into(),
    };
    let st = s.lstat(Path::new(&p)).map_err(|e| sftp_error(&e, &p))?;
    let parent_of = |abs: &str, home: &str| {
        abs == "/" || home == abs || home.starts_with(&format!("{}/", abs.trim_end_matches('/')))
    };
    let home = s
        .realpath(Path::new("."))
        .map_err(|e| sftp_error(&e, "."))?
        .to_string_lossy()
        .into_owned();
    match kind_of(&st) {
        RemoteEntryKind::Dir => {
            let abs = s
                .realpath(Path::new(&p))
                .map_err(|e| sftp_error(&e, &p))?
                .to_string_lossy()
                .into_owned();
            if parent_of(&abs, &home) {
                return Err(unsafe_("it is the login folder or contains it"));
            }
            if !recursive {
                return s.rmdir(Path::new(&p)).map_err(|e| sftp_error(&e, &p));
            }
            drop(s);
            let q = shell_quote(&p)?;
            proc::run_ok(conn, "rm -rf", &p, &format!("rm -rf -- {q}"), None, cancel)?;
            Ok(())
        }
        _ => s.unlink(Path::new(&p)).map_err(|e| sftp_error(&e, &p)),
    }
}
