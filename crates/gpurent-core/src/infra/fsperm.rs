//! "Only you can read this file": the same promise on every OS, for files that hold or point at
//! secrets (an exported private key, `~/.ssh/config` blocks and their backup).
//!
//! - **Unix**: mode `0600` for files, `0700` for folders (OpenSSH refuses keys others can read).
//! - **Windows**: there are no mode bits; a file is private when its ACL grants only its owner.
//!   Windows' OpenSSH checks exactly that (keys and `~/.ssh/config` that other users can read
//!   are rejected). The documented way to set it, which Microsoft's OpenSSH docs themselves use
//!   for key files, is `icacls PATH /inheritance:r /grant:r USER:F`: inherited entries removed,
//!   full control for the user only (folders: `(OI)(CI)F`, so files created inside inherit it).
//!   gpurent runs `icacls` (no shell, no console window: [`crate::infra::process::hide_console`]); the
//!   command line is built by [`icacls_args`] and tested here on every OS. Calling the Win32
//!   security API directly would need `unsafe`, which this workspace forbids.

use std::ffi::OsString;
use std::path::Path;

/// A file or a folder (folders pass their restriction on to what is created inside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

/// Make `path` readable and writable by the current user only (see the module docs).
pub fn owner_only(path: &Path, kind: Kind) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = match kind {
            Kind::File => 0o600,
            Kind::Dir => 0o700,
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(windows)]
    {
        let account = windows_account(
            std::env::var("USERDOMAIN").ok().as_deref(),
            std::env::var("USERNAME").ok().as_deref(),
        )
        .ok_or_else(|| std::io::Error::other("USERNAME is not set: cannot name the owner"))?;
        let mut cmd = std::process::Command::new("icacls");
        cmd.args(icacls_args(path, &account, kind));
        crate::infra::process::hide_console(&mut cmd);
        let out = cmd.stdin(std::process::Stdio::null()).output()?;
        if out.status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "icacls: {} {}",
                String::from_utf8_lossy(&out.stderr).trim(),
                String::from_utf8_lossy(&out.stdout).trim()
            )))
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (path, kind);
        Ok(())
    }
}

/// The Windows account to grant: `DOMAIN\user` (`DOMAIN` is the computer's name for a local
/// account), or just `user` when no domain is known.
pub fn windows_account(userdomain: Option<&str>, username: Option<&str>) -> Option<String> {
    let user = username.filter(|u| !u.is_empty())?;
    Some(match userdomain.filter(|d| !d.is_empty()) {
        Some(d) => format!("{d}\\{user}"),
        None => user.to_string(),
    })
}

/// `icacls` arguments that leave `account` as the only one with access to `path`.
pub fn icacls_args(path: &Path, account: &str, kind: Kind) -> Vec<OsString> {
    let grant = match kind {
        Kind::File => format!("{account}:F"),
        Kind::Dir => format!("{account}:(OI)(CI)F"),
    };
    vec![
        path.as_os_str().to_owned(),
        "/inheritance:r".into(),
        "/grant:r".into(),
        grant.into(),
        // Quiet: no "processed file" lines on success; errors still go to stderr.
        "/Q".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_acl_grants_the_user_alone_and_removes_inherited_entries() {
        let acct = windows_account(Some("LAPTOP-7"), Some("Ana María")).expect("account");
        assert_eq!(acct, r"LAPTOP-7\Ana María");
        assert_eq!(windows_account(None, Some("ana")).as_deref(), Some("ana"));
        assert_eq!(windows_account(Some("X"), None), None);
        let p = Path::new(r"C:\Users\Ana María\.ssh\config");
        let file = icacls_args(p, &acct, Kind::File);
        assert_eq!(
            file,
            [
                p.as_os_str(),
                "/inheritance:r".as_ref(),
                "/grant:r".as_ref(),
                r"LAPTOP-7\Ana María:F".as_ref(),
                "/Q".as_ref()
            ]
        );
        let dir = icacls_args(p, &acct, Kind::Dir);
        assert_eq!(dir[3], r"LAPTOP-7\Ana María:(OI)(CI)F");
    }

    #[cfg(unix)]
    #[test]
    fn unix_modes_are_0600_and_0700() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let f = tmp.path().join("f");
        std::fs::write(&f, "x").expect("write");
        owner_only(&f, Kind::File).expect("file");
        owner_only(tmp.path(), Kind::Dir).expect("dir");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&f), 0o600);
        assert_eq!(mode(tmp.path()), 0o700);
    }
}
