//! Moving files to and from a rented host over the `remote` SSH connections (design, numbers and
//! every outcome code: `docs/transfer.md`).
//!
//! - Large files go as one raw stream on an exec channel (`cat > tmp`: what `scp` does on the
//!   wire, with our own quoting), or as byte ranges over SFTP on several connections at once
//!   (each ≥ 16 MiB per write call) when the link is long; downloads read one exec stream with a
//!   large receive window.
//! - Many small files go as one tar stream (`tar -x` / `tar -c` on the host).
//! - Bytes land under a temporary name and are renamed when verified (SHA-256 on both ends).
//! - A journal in SQLite ([`journal`]) records every transfer and its chunks; after a cut, a
//!   restart or a sleep, [`engine`] continues from the last verified chunk.
//!
//! Every remote path is quoted with [`crate::remote::shell_quote`].

pub mod ctx;
pub mod engine;
pub mod error;
pub mod file_down;
pub mod file_up;
pub mod hash;
pub mod journal;
pub mod meter;
pub mod portable;
pub mod proc;
pub mod remote_fs;
pub mod scan;
pub mod sftp;
pub mod tree;

pub use error::TransferError;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Which way the bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Upload,
    Download,
}

/// One file, or a folder moved as one tar stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    File,
    Tree,
}

/// Where a transfer stands in the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TransferState {
    /// Recorded, no byte verified yet.
    Pending,
    /// Some bytes are on the other side; `transfer_resume` continues from the verified ones.
    Partial,
    /// Arrived, SHA-256 equal on both ends, renamed to its final name.
    Done,
    /// Ended with an error that resuming will not fix by itself (see `error_code`).
    Failed,
    /// Cancelled by the user; its temporary files were removed.
    Cancelled,
    /// Paused by the user: what arrived is kept under the temporary name and nothing runs on the
    /// host; `transfer_resume` continues it, `transfer_discard` removes it.
    Paused,
}

/// How a single large file moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FileMethod {
    /// One raw stream on an exec channel (like `scp`).
    Stream,
    /// Byte ranges over SFTP (open + seek + ≥ 16 MiB writes), on `streams` connections.
    Sftp,
}

/// Choices for a put or get. Every field has a sensible default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct TransferOptions {
    /// Gitignore-style patterns to leave out of folders, up and down (uploads also honour the
    /// folder's `.gitignore` files; downloads only these patterns).
    pub excludes: Vec<String>,
    /// Replace an existing file or folder of the same name (atomically for files; a replaced
    /// folder is moved aside, the new one moved in, the old one deleted).
    pub overwrite: bool,
    /// Parallel connections for one large file; `None`: chosen from the measured round trip.
    pub streams: Option<u32>,
    /// `None`: a stream on short links, SFTP ranges on long ones.
    pub method: Option<FileMethod>,
    /// Journal chunk size in bytes (resume granularity); `None`: 16 MiB.
    pub chunk_bytes: Option<u64>,
    /// Reconnect-and-resume attempts after a lost connection before giving up
    /// (`connection_lost`, resumable later); `None`: 3.
    pub retries: Option<u32>,
}

/// One transfer as the journal knows it (a file or a folder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TransferSummary {
    #[ts(type = "number")]
    pub id: i64,
    pub host_label: String,
    pub direction: Direction,
    pub kind: ItemKind,
    /// Upload: the source here; download: the final path here.
    pub local_path: String,
    /// Upload: the final path on the host; download: the source there.
    pub remote_path: String,
    pub state: TransferState,
    /// Running now in this process (a put, get or resume holds it): it cannot be resumed or
    /// discarded until it stops. Set by `transfer_list`.
    #[serde(default)]
    pub running: bool,
    #[ts(type = "number | null")]
    pub total_bytes: Option<u64>,
    /// Bytes known to be on the other side (verified chunks or files).
    #[ts(type = "number")]
    pub done_bytes: u64,
    #[ts(type = "number")]
    pub files_total: u64,
    #[ts(type = "number")]
    pub files_done: u64,
    /// SHA-256 of the file (hex), once verified; folders: of the sorted file list with hashes.
    pub sha256: Option<String>,
    /// SHA-256 was checked on both ends.
    pub verified: bool,
    /// How many times it was (re)started.
    pub attempts: u32,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    #[ts(type = "number")]
    pub created_ms: i64,
    #[ts(type = "number")]
    pub updated_ms: i64,
}

/// What a put, get or resume did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TransferReport {
    pub transfers: Vec<TransferSummary>,
    /// Bytes moved over the wire in this call (resends included).
    #[ts(type = "number")]
    pub wire_bytes: u64,
    #[ts(type = "number")]
    pub elapsed_ms: u64,
}

/// Something in a folder the user probably does not want to upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ScanWarningKind {
    /// A `.git` folder (history; usually large, rarely needed on the GPU host).
    Git,
    /// `node_modules`.
    NodeModules,
    /// A Python virtual environment (`pyvenv.cfg` inside; not portable between machines).
    Virtualenv,
    /// `__pycache__` / `.pytest_cache` / `.mypy_cache`.
    Cache,
    /// A single file over 1 GiB inside a folder (better sent on its own).
    LargeFile,
}

/// One warning of a scan: a path, what it is, and what it weighs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ScanWarning {
    pub kind: ScanWarningKind,
    pub path: String,
    #[ts(type = "number")]
    pub files: u64,
    #[ts(type = "number")]
    pub bytes: u64,
    /// The exclude pattern that would leave it out.
    pub exclude: String,
}

/// What an upload of these paths would send, before sending it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ScanReport {
    #[ts(type = "number")]
    pub files: u64,
    #[ts(type = "number")]
    pub dirs: u64,
    #[ts(type = "number")]
    pub bytes: u64,
    /// Left out by `.gitignore` or the excludes (files, and folders counted as one).
    #[ts(type = "number")]
    pub excluded: u64,
    /// Symbolic links (sent as links inside folders).
    #[ts(type = "number")]
    pub symlinks: u64,
    pub warnings: Vec<ScanWarning>,
}

/// What an entry of a remote folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RemoteEntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// One entry of a remote folder (from SFTP readdir: any name works).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RemoteEntry {
    pub name: String,
    /// `dir/name` as given to `remote_ls` (usable for further calls).
    pub path: String,
    pub kind: RemoteEntryKind,
    #[ts(type = "number")]
    pub size_bytes: u64,
    /// Seconds since the Unix epoch.
    #[ts(type = "number | null")]
    pub modified_s: Option<u64>,
    /// Unix permission bits (e.g. 0o644 = 420).
    pub mode: Option<u32>,
}

/// A remote folder's entries, folders first, then by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RemoteListing {
    /// The folder as given (`""` or `.` is the login folder).
    pub dir: String,
    /// Its absolute path on the host.
    pub absolute: String,
    pub entries: Vec<RemoteEntry>,
}

/// The file name part of a path-like string, refusing empty, `.` and `..`.
pub(crate) fn base_name(path: &str) -> Option<&str> {
    let trimmed = path.trim_end_matches('/');
    let name = trimmed.rsplit('/').next().unwrap_or(trimmed);
    (!name.is_empty() && name != "." && name != "..").then_some(name)
}

/// The local name a download of the host's `remote` path is written under (next to the user's
/// chosen folder): its last `/`-separated part, checked by the same rules as every name inside a
/// downloaded folder ([`portable::local_rel_for`]) for `os`. On Windows a host's name such as
/// `x\..\..\AppData\…\Startup\update.bat` is one name with `\` in it, refused — it was
/// joined as a path and landed outside the folder (security review §3).
pub fn download_name_for(
    os: crate::infra::process::Os,
    remote: &str,
) -> Result<String, TransferError> {
    let name = base_name(remote)
        .ok_or_else(|| TransferError::invalid("remotes", format!("{remote} has no file name")))?;
    let rel = portable::local_rel_for(os, name.as_bytes())?;
    let mut parts = rel.components();
    match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(_)), None) => Ok(name.to_string()),
        _ => Err(TransferError::NameNotRepresentable {
            name: name.to_string(),
            reason: "it is not one plain file or folder name here".into(),
        }),
    }
}

/// [`download_name_for`] this computer's OS.
pub fn download_name(remote: &str) -> Result<String, TransferError> {
    download_name_for(crate::infra::process::Os::current(), remote)
}

/// `dir/name` with `dir` possibly empty (the login folder) or `~`-prefixed.
pub(crate) fn remote_join(dir: &str, name: &str) -> String {
    let dir = remote_dir(dir);
    if dir.is_empty() {
        name.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// `~` and `~/x` mean the login folder (commands and SFTP both start there); `.` too. Nothing
/// is trimmed: a name from the host's listing is acted on as it is (`"results "` is not
/// `results`: trimming here deleted and downloaded the wrong entry); what a person types is
/// trimmed where it is typed (the Files pane's folder box).
pub(crate) fn remote_dir(d: &str) -> String {
    if d == "~" || d == "." || d.is_empty() {
        String::new()
    } else if let Some(rest) = d.strip_prefix("~/") {
        rest.to_string()
    } else {
        d.to_string()
    }
}

/// The temporary name a transfer writes to: `.NAME.gpurent-ID.part`, next to the final name.
pub(crate) fn temp_name(name: &str, id: i64) -> String {
    format!(".{name}.gpurent-{id}.part")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_joins() {
        assert_eq!(base_name("a/b/c.txt"), Some("c.txt"));
        assert_eq!(base_name("dir/"), Some("dir"));
        assert_eq!(base_name(".."), None);
        assert_eq!(remote_join("~", "x"), "x");
        assert_eq!(remote_join("~/data", "x"), "data/x");
        assert_eq!(remote_join("/srv/", "x"), "/srv/x");
        assert_eq!(temp_name("m.bin", 7), ".m.bin.gpurent-7.part");
    }

    /// Security review §3: a host's name is checked with Windows' rules on every OS (tested on
    /// Linux), and it is always one name.
    #[test]
    fn a_download_name_never_leaves_the_folder() {
        use crate::infra::process::Os;
        let evil =
            r"x\..\..\..\AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup\update.bat";
        let e = download_name_for(Os::Windows, &format!("/home/u/{evil}")).expect_err("refused");
        assert!(
            matches!(e, TransferError::NameNotRepresentable { .. }),
            "{e:?}"
        );
        for bad in ["C:evil", "con", "a.txt.", "a ", "..", ".", "dir/..", "/"] {
            assert!(download_name_for(Os::Windows, bad).is_err(), "{bad}");
        }
        assert_eq!(
            download_name_for(Os::Windows, "~/out/model.safetensors").expect("ok"),
            "model.safetensors"
        );
        // On Linux and macOS `\` is an ordinary character: one name, written as it is.
        assert_eq!(download_name_for(Os::Linux, evil).expect("one name"), evil);
        for bad in ["..", ".", "dir/..", "/", ""] {
            assert!(download_name_for(Os::Linux, bad).is_err(), "{bad}");
        }
    }

    /// Security review §8: names with leading or trailing spaces are other entries.
    #[test]
    fn a_name_with_spaces_is_acted_on_as_it_is() {
        assert_eq!(remote_dir("results "), "results ");
        assert_eq!(remote_dir(" a.txt"), " a.txt");
        assert_eq!(remote_dir("~/ data"), " data");
        assert_eq!(remote_join("results ", "x"), "results /x");
        assert_eq!(remote_join("", " a.txt"), " a.txt");
    }

    #[test]
    fn options_default_from_an_empty_object() {
        let o: TransferOptions = serde_json::from_str("{}").expect("json");
        assert_eq!(o, TransferOptions::default());
        assert!(!o.overwrite);
    }
}
