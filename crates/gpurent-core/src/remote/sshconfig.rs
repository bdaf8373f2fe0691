//! Using a saved host from other tools: a marked `Host gpurent-<label>` block in `~/.ssh/config`
//! (opt-in), the private key in the running ssh-agent instead of on disk, and a VS Code
//! Remote-SSH link.
//!
//! - The block sits between `# BEGIN gpurent-<label>` and `# END gpurent-<label>` lines; writing it
//!   again replaces exactly that block in place (or changes nothing when identical). A new block
//!   is appended at the end, which never changes the meaning of the user's own lines (options above it in
//!   `Host *` blocks still apply first, as OpenSSH reads the first value it finds).
//! - Before the first edit of an existing file, a copy is kept as `config.gpurent-backup`
//!   (never overwritten later). Writes go through a temporary file and a rename; owner-only
//!   ([`crate::infra::fsperm`]: 0600, or on Windows an ACL for the user alone).
//! - `IdentityFile` points at an exported PUBLIC key with `IdentitiesOnly yes`: OpenSSH then asks
//!   the agent for the matching private key, which therefore never touches the disk. Loading it:
//!   [`crate::remote::agent::add`] pipes the PEM into `ssh-add -` (stdin); where no agent runs
//!   ([`agent_socket`] is `None`), the user is told so (per OS: [`crate::remote::agent`]).
//! - `UserKnownHostsFile` lists the user's own file and gpurent's file of pinned keys, so the
//!   first `ssh gpurent-<label>` does not ask again.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::infra::error::CoreError;
use crate::remote::error::RemoteError;

/// The alias for a host label.
pub fn alias(label: &str) -> String {
    format!("gpurent-{label}")
}

/// What goes into one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub label: String,
    pub host_name: String,
    pub port: u16,
    pub user: String,
    /// The jump host: written as its own `Host gpurent-<label>-jump` entry inside the block (so
    /// it gets the same identity and known_hosts settings) and named in `ProxyJump`.
    pub proxy_jump: Option<crate::remote::hosts::JumpSpec>,
    /// The exported public key file.
    pub identity_file: PathBuf,
    /// gpurent's known_hosts file of pinned keys.
    pub known_hosts_file: Option<PathBuf>,
}

/// A value for ssh_config: double-quoted when it has spaces or quotes.
fn value(v: &str) -> String {
    if v.is_empty() || v.contains([' ', '\t', '"', '\'', '#']) {
        format!("\"{}\"", v.replace('"', ""))
    } else {
        v.to_string()
    }
}

fn markers(label: &str) -> (String, String) {
    (
        format!(
            "# BEGIN {} (managed by gpurent; edits inside are replaced)",
            alias(label)
        ),
        format!("# END {}", alias(label)),
    )
}

/// One `Host` entry's lines.
fn host_entry(
    alias: &str,
    host_name: &str,
    port: u16,
    user: &str,
    jump: Option<&str>,
    e: &ConfigEntry,
) -> String {
    let mut s = format!("Host {alias}\n");
    s.push_str(&format!("    HostName {}\n", value(host_name)));
    s.push_str(&format!("    Port {port}\n"));
    s.push_str(&format!("    User {}\n", value(user)));
    if let Some(j) = jump {
        s.push_str(&format!("    ProxyJump {j}\n"));
    }
    s.push_str(&format!(
        "    IdentityFile {}\n    IdentitiesOnly yes\n",
        value(&e.identity_file.to_string_lossy())
    ));
    if let Some(kh) = &e.known_hosts_file {
        s.push_str(&format!(
            "    UserKnownHostsFile ~/.ssh/known_hosts {}\n",
            value(&kh.to_string_lossy())
        ));
    }
    s
}

/// The block's text (with markers and a final newline).
pub fn render_block(e: &ConfigEntry) -> String {
    let (begin, end) = markers(&e.label);
    let main = alias(&e.label);
    let jump_alias = format!("{main}-jump");
    let mut s = format!("{begin}\n");
    if let Some(j) = &e.proxy_jump {
        s.push_str(&host_entry(
            &jump_alias,
            &j.address,
            j.port,
            &j.user,
            None,
            e,
        ));
    }
    let jump = e.proxy_jump.as_ref().map(|_| jump_alias.as_str());
    s.push_str(&host_entry(&main, &e.host_name, e.port, &e.user, jump, e));
    s.push_str(&format!("{end}\n"));
    s
}

/// Split `text` around the block for `label`: (before, after, found).
fn split_block(text: &str, label: &str) -> (String, String, bool) {
    let (_, end) = markers(label);
    let prefix = format!("# BEGIN {}", alias(label));
    let (mut before, mut after) = (String::new(), String::new());
    let mut state = 0; // 0 before, 1 inside, 2 after
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        match state {
            0 if t == prefix || t.starts_with(&format!("{prefix} ")) => state = 1,
            0 => before.push_str(line),
            1 if t == end => state = 2,
            1 => {}
            _ => after.push_str(line),
        }
    }
    (before, after, state > 0)
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    pub changed: bool,
    /// Set when this write made the backup copy.
    pub backup: Option<PathBuf>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> RemoteError + '_ {
    move |e| RemoteError::Core(CoreError::io(path, e))
}

/// Backup path for a config file.
pub fn backup_path(config: &Path) -> PathBuf {
    let mut name = config.file_name().unwrap_or_default().to_os_string();
    name.push(".gpurent-backup");
    config.with_file_name(name)
}

fn write_atomic(path: &Path, text: &str) -> Result<(), RemoteError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.gpurent-tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    {
        let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        // Owner-only before any text is in it (Unix 0600; Windows an ACL for the user alone,
        // which Windows' OpenSSH requires of ~/.ssh/config).
        crate::infra::fsperm::owner_only(&tmp, crate::infra::fsperm::Kind::File)
            .map_err(io(&tmp))?;
        f.write_all(text.as_bytes()).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// Insert or replace the block for `entry.label` in `config` (created if missing, with its
/// directory at 0700).
pub fn upsert_block(config: &Path, entry: &ConfigEntry) -> Result<WriteOutcome, RemoteError> {
    let existing = match std::fs::read_to_string(config) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(config)(e)),
    };
    let text = existing.clone().unwrap_or_default();
    let (mut before, after, found) = split_block(&text, &entry.label);
    // Replaced in place when present; otherwise appended after a blank line.
    if !found && !before.is_empty() {
        if !before.ends_with('\n') {
            before.push('\n');
        }
        if !before.ends_with("\n\n") {
            before.push('\n');
        }
    }
    let new_text = format!("{before}{}{after}", render_block(entry));
    if existing.as_deref() == Some(new_text.as_str()) {
        return Ok(WriteOutcome {
            changed: false,
            backup: None,
        });
    }
    let mut backup = None;
    match &existing {
        Some(old) => {
            let b = backup_path(config);
            if !b.exists() {
                write_atomic(&b, old)?;
                backup = Some(b);
            }
        }
        None => {
            if let Some(dir) = config.parent() {
                if !dir.exists() {
                    std::fs::create_dir_all(dir).map_err(io(dir))?;
                    crate::infra::fsperm::owner_only(dir, crate::infra::fsperm::Kind::Dir)
                        .map_err(io(dir))?;
                }
            }
        }
    }
    write_atomic(config, &new_text)?;
    Ok(WriteOutcome {
        changed: true,
        backup,
    })
}

/// Whether `config` holds gpurent's block for `label` (a missing file holds none).
pub fn has_block(config: &Path, label: &str) -> Result<bool, RemoteError> {
    match std::fs::read_to_string(config) {
        Ok(t) => Ok(split_block(&t, label).2),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(config)(e)),
    }
}

/// Remove the block for `label`, if present. Returns whether the file changed.
pub fn remove_block(config: &Path, label: &str) -> Result<bool, RemoteError> {
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(config)(e)),
    };
    let (before, after, found) = split_block(&text, label);
    let rest = format!("{before}{after}");
    if found {
        let b = backup_path(config);
        if !b.exists() {
            write_atomic(&b, &text)?;
        }
        write_atomic(config, &rest)?;
    }
    Ok(found)
}

/// `vscode://vscode-remote/ssh-remote+gpurent-<label>/<path>` (path made absolute, each segment
/// percent-encoded).
pub fn vscode_uri(label: &str, remote_path: &str) -> String {
    let mut path = String::new();
    for seg in remote_path.split('/').filter(|s| !s.is_empty()) {
        path.push('/');
        for b in seg.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                path.push(b as char);
            } else {
                path.push_str(&format!("%{b:02X}"));
            }
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    format!("vscode://vscode-remote/ssh-remote+{}{path}", alias(label))
}

/// The running agent's address (see [`crate::remote::agent::agent_socket`]: `SSH_AUTH_SOCK`,
/// launchd on macOS, the OpenSSH service's named pipe on Windows).
pub fn agent_socket(ssh_auth_sock: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    crate::remote::agent::agent_socket(ssh_auth_sock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(label: &str, port: u16) -> ConfigEntry {
        ConfigEntry {
            label: label.into(),
            host_name: "region-3.example.com".into(),
            port,
            user: "root".into(),
            proxy_jump: None,
            identity_file: PathBuf::from("/home/me/My Keys/gpurent.pub"),
            known_hosts_file: Some(PathBuf::from("/data/known_hosts")),
        }
    }

    #[test]
    fn block_is_idempotent_backed_up_once_and_replaced_in_place_of_the_old() {
        let tmp = tempfile::tempdir().expect("tmp");
        let cfg = tmp.path().join(".ssh/config");
        std::fs::create_dir_all(cfg.parent().expect("dir")).expect("mkdir");
        let user_text = "Host work\n    HostName work.example\n# BEGIN something-else\n";
        std::fs::write(&cfg, user_text).expect("write");

        let first = upsert_block(&cfg, &entry("a100", 38211)).expect("write");
        assert!(first.changed);
        assert_eq!(first.backup.as_deref(), Some(backup_path(&cfg).as_path()));
        assert_eq!(
            std::fs::read_to_string(backup_path(&cfg)).expect("b"),
            user_text
        );
        let again = upsert_block(&cfg, &entry("a100", 38211)).expect("again");
        assert_eq!(
            again,
            WriteOutcome {
                changed: false,
                backup: None
            }
        );

        upsert_block(&cfg, &entry("h100", 22)).expect("second host");
        let changed = upsert_block(&cfg, &entry("a100", 40000)).expect("port change");
        assert!(changed.changed && changed.backup.is_none());
        let text = std::fs::read_to_string(&cfg).expect("read");
        assert!(
            text.starts_with(user_text),
            "user lines kept verbatim:\n{text}"
        );
        assert_eq!(text.matches("Host gpurent-a100\n").count(), 1, "{text}");
        assert!(text.contains("    Port 40000\n") && !text.contains("38211"));
        assert!(text.contains("    IdentityFile \"/home/me/My Keys/gpurent.pub\"\n"));
        assert!(text.contains("Host gpurent-h100\n"));
        assert!(
            text.find("gpurent-a100").expect("a") < text.find("gpurent-h100").expect("h"),
            "replaced in place:\n{text}"
        );
        assert!(remove_block(&cfg, "a100").expect("remove"));
        let text = std::fs::read_to_string(&cfg).expect("read");
        assert!(!text.contains("gpurent-a100") && text.contains("gpurent-h100"));
    }

    #[cfg(unix)]
    #[test]
    fn new_config_gets_a_private_dir_and_file() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let cfg = tmp.path().join("fresh/.ssh/config");
        let out = upsert_block(&cfg, &entry("x", 22)).expect("write");
        assert!(out.changed && out.backup.is_none());
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&cfg), 0o600);
        assert_eq!(mode(cfg.parent().expect("dir")), 0o700);
    }

    #[test]
    fn vscode_links_encode_paths() {
        assert_eq!(
            vscode_uri("a100", "/root/my project/数据"),
            "vscode://vscode-remote/ssh-remote+gpurent-a100/root/my%20project/%E6%95%B0%E6%8D%AE"
        );
        assert_eq!(
            vscode_uri("a100", ""),
            "vscode://vscode-remote/ssh-remote+gpurent-a100/"
        );
    }
}
