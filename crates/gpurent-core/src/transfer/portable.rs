//! What a transfer needs from the local file system, the same on Unix and Windows.
//!
//! - **Relative names** travel as UTF-8 bytes with `/` between components, whatever the local
//!   separator: that is what the host's `find -printf %P` and tar write, so the folder hash maps
//!   of both ends agree ([`rel_bytes`]). On Unix a name is its bytes; on Windows it must be valid
//!   Unicode (it always is, except unpaired UTF-16 surrogates), otherwise
//!   [`TransferError::NameNotRepresentable`].
//! - **Names from the host** become local paths through [`local_rel`]: on Windows a name with
//!   `\ : * ? " < > |`, a control character, a trailing dot or space, or a reserved device name
//!   (`CON`, `NUL`, `COM1`, …) cannot be created and is refused with the same typed error before
//!   anything is written, instead of landing somewhere else or failing halfway.
//! - **Positional reads** ([`read_exact_at`]): `pread` on Unix; on Windows `seek_read`, which
//!   also moves the handle's cursor (each reader here has its own handle).
//! - **Modes** ([`set_mode`]): Unix permission bits; Windows only knows "read-only", set when the
//!   owner cannot write.
//! - **Symbolic links** ([`symlink`]): made as links on Unix; on Windows as a file or folder link
//!   (by what the target is), which Windows allows only in Developer Mode or for an
//!   administrator — otherwise [`LinkOutcome::NotPermitted`], which the caller reports.

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use crate::infra::process::Os;
use crate::transfer::TransferError;

/// `p` (a path relative to the transfer's root) as `/`-separated bytes. Call [`check_rel`] on
/// local names first; a name that fails it is written lossily here.
pub fn rel_bytes(p: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for c in p.components() {
        if let Component::Normal(n) = c {
            if !out.is_empty() {
                out.push(b'/');
            }
            out.extend_from_slice(&os_bytes(n));
        }
    }
    out
}

#[cfg(unix)]
fn os_bytes(n: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(n.as_bytes())
}

#[cfg(not(unix))]
fn os_bytes(n: &std::ffi::OsStr) -> std::borrow::Cow<'_, [u8]> {
    match n.to_string_lossy() {
        std::borrow::Cow::Borrowed(s) => std::borrow::Cow::Borrowed(s.as_bytes()),
        std::borrow::Cow::Owned(s) => std::borrow::Cow::Owned(s.into_bytes()),
    }
}

/// A local relative name that the host can be given unchanged (Windows: valid Unicode).
pub fn check_rel(p: &Path) -> Result<(), TransferError> {
    if cfg!(unix) || p.to_str().is_some() {
        Ok(())
    } else {
        Err(TransferError::NameNotRepresentable {
            name: p.to_string_lossy().into_owned(),
            reason: "the name is not valid Unicode, so it cannot be written as UTF-8 on the host"
                .into(),
        })
    }
}

/// The local relative path for a `/`-separated name from the host, checked for this OS.
pub fn local_rel(name: &[u8]) -> Result<PathBuf, TransferError> {
    local_rel_for(Os::current(), name)
}

/// [`local_rel`] for a given OS (so Windows' rules are tested everywhere).
pub fn local_rel_for(os: Os, name: &[u8]) -> Result<PathBuf, TransferError> {
    let refuse = |reason: String| TransferError::NameNotRepresentable {
        name: String::from_utf8_lossy(name).into_owned(),
        reason,
    };
    if os != Os::Windows {
        return Ok(unix_path(name));
    }
    let text = std::str::from_utf8(name)
        .map_err(|_| refuse("the name is not UTF-8, and Windows names are Unicode".into()))?;
    let mut out = PathBuf::new();
    for part in text.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if let Some(why) = windows_name_problem(part) {
            return Err(refuse(format!("'{part}' {why}")));
        }
        out.push(part);
    }
    Ok(out)
}

/// A host's name as a local path for matching excludes and for messages only (lossy where the
/// name is not UTF-8 on Windows; exact on Unix). Files are written through [`local_rel`].
pub fn match_path(name: &[u8]) -> PathBuf {
    unix_path(name)
}

#[cfg(unix)]
fn unix_path(name: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(name))
}

#[cfg(not(unix))]
fn unix_path(name: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(name).into_owned())
}

/// Why Windows cannot create a file or folder called `part`, if it cannot.
pub fn windows_name_problem(part: &str) -> Option<&'static str> {
    if part.chars().any(|c| (c as u32) < 32) {
        return Some("contains a control character, which Windows does not allow in names");
    }
    if part.contains(['\\', ':', '*', '?', '"', '<', '>', '|']) {
        return Some("contains one of \\ : * ? \" < > |, which Windows does not allow in names");
    }
    if part.ends_with('.') || part.ends_with(' ') {
        return Some("ends with a dot or a space, which Windows removes");
    }
    let stem = part
        .split('.')
        .next()
        .unwrap_or(part)
        .trim_end()
        .to_ascii_uppercase();
    let reserved = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem.len() == 4
            && (stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem[3..].chars().all(|c| c.is_ascii_digit() && c != '0'));
    reserved.then_some("is a device name that Windows reserves")
}

/// Fill `buf` from `f` at `offset`.
pub fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.read_exact_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let (mut done, mut at) = (0usize, offset);
        while done < buf.len() {
            match f.seek_read(&mut buf[done..], at) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    done += n;
                    at += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The bits a host's mode may give a downloaded file here: the owner's, and read and execute
/// for group and others. Never write for group or others, setuid, setgid or sticky: a host's
/// `o+w` made downloaded files writable by every local user, past the user's umask (security
/// review §5). At most what a 022 umask leaves.
pub const DOWNLOAD_MODE_MASK: u32 = 0o755;

/// Apply a tar header's permission bits (within [`DOWNLOAD_MODE_MASK`]) as far as the OS has
/// them.
pub fn set_mode(f: &File, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(mode & DOWNLOAD_MODE_MASK))
    }
    #[cfg(not(unix))]
    {
        let mut p = f.metadata()?.permissions();
        p.set_readonly(mode & 0o200 == 0);
        f.set_permissions(p)
    }
}

/// How making a symbolic link went.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkOutcome {
    Made,
    /// The OS refused links for this user (Windows without Developer Mode or admin rights).
    NotPermitted,
}

/// Windows' ERROR_PRIVILEGE_NOT_HELD: symlinks need Developer Mode or an administrator.
#[cfg(windows)]
const ERROR_PRIVILEGE_NOT_HELD: i32 = 1314;

/// Make `dest` a symbolic link to `target` (the host's `/`-separated bytes, as written there).
pub fn symlink(target: &[u8], dest: &Path) -> std::io::Result<LinkOutcome> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(unix_path(target), dest).map(|_| LinkOutcome::Made)
    }
    #[cfg(windows)]
    {
        let text = std::str::from_utf8(target)
            .map_err(|_| std::io::Error::other("link target is not UTF-8"))?;
        let target = PathBuf::from(text.replace('/', "\\"));
        let resolved = dest.parent().map(|d| d.join(&target));
        let is_dir = resolved.as_deref().is_some_and(Path::is_dir);
        let made = if is_dir {
            std::os::windows::fs::symlink_dir(&target, dest)
        } else {
            std::os::windows::fs::symlink_file(&target, dest)
        };
        match made {
            Ok(()) => Ok(LinkOutcome::Made),
            Err(e) if e.raw_os_error() == Some(ERROR_PRIVILEGE_NOT_HELD) => {
                Ok(LinkOutcome::NotPermitted)
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (target, dest);
        Ok(LinkOutcome::NotPermitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Coded;

    #[test]
    fn relative_names_use_slashes_whatever_the_local_separator() {
        let p: PathBuf = ["models", "llama 3", "数据.bin"].iter().collect();
        assert_eq!(rel_bytes(&p), "models/llama 3/数据.bin".as_bytes());
        assert_eq!(rel_bytes(Path::new("./a//b/")), b"a/b");
        // A path the host gave us comes back to the same bytes, so the hash maps agree.
        let from_host = b"models/llama 3/\xe6\x95\xb0\xe6\x8d\xae.bin";
        for os in [Os::Linux, Os::Windows] {
            let local = local_rel_for(os, from_host).expect("ok");
            assert_eq!(rel_bytes(&local), from_host.to_vec(), "{os:?}");
        }
    }

    #[test]
    fn a_windows_path_built_with_backslashes_hashes_like_the_hosts_name() {
        // On Windows `Path` splits at `\` as well as `/`; the bytes sent are always `/`-joined.
        let mut hashes = std::collections::HashMap::new();
        hashes.insert(b"sub/dir/f.txt".to_vec(), "h1");
        let local: PathBuf = PathBuf::from("sub").join("dir").join("f.txt");
        assert_eq!(hashes.get(&rel_bytes(&local)), Some(&"h1"));
        if cfg!(windows) {
            assert_eq!(rel_bytes(Path::new(r"sub\dir\f.txt")), b"sub/dir/f.txt");
        }
    }

    #[test]
    fn names_windows_cannot_hold_are_refused_with_a_typed_error() {
        for bad in [
            &b"a/b:c"[..],
            b"what?",
            b"dir/aux.txt",
            b"COM1",
            b"lpt9.log",
            b"trailing.",
            b"space ",
            b"tab\there",
            b"back\\slash",
            b"\xff\xfe",
        ] {
            let e = local_rel_for(Os::Windows, bad).expect_err("refused");
            assert_eq!(e.code(), "name_not_representable", "{bad:?}");
            // The same names are fine on Unix.
            assert!(local_rel_for(Os::Linux, bad).is_ok());
        }
        for good in [&b"console/x"[..], b"COM0", b"COM10", b"a.b.c", b"LPT"] {
            assert!(local_rel_for(Os::Windows, good).is_ok(), "{good:?}");
        }
        assert!(check_rel(Path::new("a/b")).is_ok());
    }

    #[test]
    fn positional_reads_and_modes_work_on_this_os() {
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join("f");
        std::fs::write(&p, b"0123456789").expect("write");
        let f = File::open(&p).expect("open");
        let mut buf = [0u8; 4];
        read_exact_at(&f, &mut buf, 3).expect("read");
        assert_eq!(&buf, b"3456");
        assert!(read_exact_at(&f, &mut buf, 8).is_err(), "past the end");
        let w = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .expect("open w");
        set_mode(&w, 0o444).expect("mode");
        assert!(std::fs::metadata(&p)
            .expect("meta")
            .permissions()
            .readonly());
        set_mode(&w, 0o644).expect("mode");
        assert!(!std::fs::metadata(&p)
            .expect("meta")
            .permissions()
            .readonly());
    }

    /// Security review §5: a host's world-writable, setuid or group-writable bits never arrive.
    #[cfg(unix)]
    #[test]
    fn a_hosts_mode_never_opens_a_file_to_other_users() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join("f");
        std::fs::write(&p, b"x").expect("write");
        let w = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .expect("open w");
        for (host, here) in [
            (0o777, 0o755),
            (0o666, 0o644),
            (0o4777, 0o755),
            (0o2775, 0o755),
            (0o1777, 0o755),
            (0o600, 0o600),
            (0o750, 0o750),
        ] {
            set_mode(&w, host).expect("mode");
            let got = std::fs::metadata(&p).expect("meta").permissions().mode() & 0o7777;
            assert_eq!(got, here, "host mode {host:o}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_are_made_as_links() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dest = tmp.path().join("l");
        assert_eq!(
            symlink(b"target/x", &dest).expect("link"),
            LinkOutcome::Made
        );
        assert_eq!(
            std::fs::read_link(&dest).expect("read"),
            Path::new("target/x")
        );
    }
}
