//! The user's ssh-agent on each OS: where it is, how a key is loaded into it (from memory, with
//! `ssh-add -`), how long it keeps the key, and what to tell a user who has none.
//!
//! - **Linux** (and other Unix): `SSH_AUTH_SOCK`, set by the desktop session or by
//!   `eval "$(ssh-agent -s)"`. `ssh-add -t SECONDS` limits the key's lifetime.
//! - **macOS**: launchd runs the system agent on demand and puts its socket in `SSH_AUTH_SOCK`
//!   of every app started from the Dock or Finder. An app started from a shell that cleared it
//!   asks launchd (`launchctl getenv SSH_AUTH_SOCK`). `-t` works as on Linux.
//! - **Windows**: the OpenSSH Authentication Agent service listens on the named pipe
//!   [`WINDOWS_AGENT_PIPE`], not on `SSH_AUTH_SOCK` (which is honoured when a user set it). The
//!   service is disabled by default. It refuses `ssh-add -t` (Win32-OpenSSH issue #1056), and
//!   **keeps every key it is given across logouts and reboots** (stored in the user's registry
//!   hive, encrypted for the user) until `ssh-add -d`/`-D` — so gpurent passes no lifetime there
//!   and says so ([`AgentKeep::UntilRemoved`]).
//!
//! Helper processes (`ssh-add`, `launchctl`) start without a console window
//! ([`crate::infra::process::hide_console`]).

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::process::hide_console;
use crate::infra::secret::Secret;
use crate::launch::Os;
use crate::remote::error::RemoteError;

/// Where Windows' OpenSSH agent service listens.
pub const WINDOWS_AGENT_PIPE: &str = r"\\.\pipe\openssh-ssh-agent";

/// What a user without a running agent should do, per OS. The UI translates it (and shows the
/// command); the English here is documentation only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AgentHint {
    /// Windows: start the "OpenSSH Authentication Agent" service, once, in an administrator
    /// PowerShell: `Get-Service ssh-agent | Set-Service -StartupType Automatic; Start-Service ssh-agent`.
    WindowsService,
    /// macOS: the agent comes with the system; log out and in again (or start gpurent from the
    /// Dock) so launchd's `SSH_AUTH_SOCK` reaches it.
    MacosLaunchd,
    /// Linux: use the desktop's agent, or run `eval "$(ssh-agent -s)"` in the shell that starts
    /// gpurent.
    EvalSshAgent,
}

/// The hint for `os`.
pub fn no_agent_hint(os: Os) -> AgentHint {
    match os {
        Os::Windows => AgentHint::WindowsService,
        Os::Macos => AgentHint::MacosLaunchd,
        Os::Linux => AgentHint::EvalSshAgent,
    }
}

/// How long the agent keeps a key gpurent loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentKeep {
    /// Forgotten after this many seconds (`ssh-add -t`).
    ForSeconds { seconds: u32 },
    /// Until the agent stops (logout), no lifetime asked for.
    UntilAgentStops,
    /// Windows: kept across logouts and reboots until removed with `ssh-add -d`.
    UntilRemoved,
}

/// The `ssh-add` command line that reads a key from stdin, and how long the agent keeps it.
pub fn ssh_add_command(os: Os, lifetime_s: Option<u32>) -> (Vec<String>, AgentKeep) {
    let mut argv = vec!["ssh-add".to_string()];
    let keep = match (os, lifetime_s) {
        (Os::Windows, _) => AgentKeep::UntilRemoved,
        (_, Some(t)) => {
            argv.extend(["-t".to_string(), t.to_string()]);
            AgentKeep::ForSeconds { seconds: t }
        }
        (_, None) => AgentKeep::UntilAgentStops,
    };
    argv.push("-".into());
    (argv, keep)
}

/// The agent's address on `os`: `SSH_AUTH_SOCK` when it names something that exists; else on
/// macOS what launchd reports, on Windows the service's pipe when it is listening. `exists`
/// is the file system check (a parameter so every OS's rule is tested here).
pub fn locate(
    os: Os,
    ssh_auth_sock: Option<&OsStr>,
    launchd_sock: impl FnOnce() -> Option<PathBuf>,
    exists: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if let Some(p) = ssh_auth_sock.filter(|s| !s.is_empty()).map(PathBuf::from) {
        if exists(&p) {
            return Some(p);
        }
    }
    match os {
        Os::Macos => launchd_sock().filter(|p| exists(p)),
        Os::Windows => {
            let pipe = PathBuf::from(WINDOWS_AGENT_PIPE);
            exists(&pipe).then_some(pipe)
        }
        Os::Linux => None,
    }
}

/// [`locate`] for this machine (pass `std::env::var_os("SSH_AUTH_SOCK")`).
pub fn agent_socket(ssh_auth_sock: Option<&OsStr>) -> Option<PathBuf> {
    locate(Os::current(), ssh_auth_sock, launchd_sock, path_exists)
}

/// `launchctl getenv SSH_AUTH_SOCK` (macOS only; `None` on failure).
fn launchd_sock() -> Option<PathBuf> {
    let mut cmd = Command::new("launchctl");
    cmd.args(["getenv", "SSH_AUTH_SOCK"]).stdin(Stdio::null());
    let out = hide_console(&mut cmd).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| PathBuf::from(text))
}

/// Whether a socket or a named pipe exists. A Windows pipe is looked up in the `\\.\pipe\`
/// listing rather than opened (opening it would connect to the agent).
fn path_exists(p: &Path) -> bool {
    if cfg!(windows) {
        if let Some(name) = p
            .to_str()
            .and_then(|s| s.strip_prefix(r"\\.\pipe\"))
            .filter(|n| !n.contains('\\'))
        {
            return std::fs::read_dir(r"\\.\pipe\").is_ok_and(|mut d| {
                d.any(|e| e.is_ok_and(|e| e.file_name().eq_ignore_ascii_case(name)))
            });
        }
    }
    p.exists()
}

/// Load a plaintext private key into the agent at `socket` through `ssh-add -` (stdin). The
/// key never touches the disk. `lifetime_s` is asked for where the agent supports it; the
/// answer says how long the key is really kept.
pub fn add(
    socket: Option<&Path>,
    pem: &Secret,
    lifetime_s: Option<u32>,
) -> Result<AgentKeep, RemoteError> {
    let (argv, keep) = ssh_add_command(Os::current(), lifetime_s);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    if let Some(s) = socket {
        cmd.env("SSH_AUTH_SOCK", s);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    hide_console(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| RemoteError::AgentUnavailable {
        detail: format!("ssh-add could not run: {e}"),
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        let mut text = pem.expose().to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let w = stdin.write_all(text.as_bytes());
        drop(Secret::new(text));
        w.map_err(|e| RemoteError::AgentUnavailable {
            detail: format!("ssh-add: {e}"),
        })?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| RemoteError::AgentUnavailable {
            detail: format!("ssh-add: {e}"),
        })?;
    if out.status.success() {
        Ok(keep)
    } else {
        Err(RemoteError::AgentUnavailable {
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_passes_no_lifetime_and_says_the_key_outlives_reboots() {
        let (argv, keep) = ssh_add_command(Os::Windows, Some(12 * 3600));
        assert_eq!(argv, ["ssh-add", "-"]);
        assert_eq!(keep, AgentKeep::UntilRemoved);
        for os in [Os::Linux, Os::Macos] {
            let (argv, keep) = ssh_add_command(os, Some(43200));
            assert_eq!(argv, ["ssh-add", "-t", "43200", "-"]);
            assert_eq!(keep, AgentKeep::ForSeconds { seconds: 43200 });
            assert_eq!(ssh_add_command(os, None).1, AgentKeep::UntilAgentStops);
        }
        assert_eq!(
            serde_json::to_value(AgentKeep::ForSeconds { seconds: 5 }).expect("json"),
            serde_json::json!({"kind": "for_seconds", "seconds": 5})
        );
    }

    #[test]
    fn the_agent_is_found_where_each_os_puts_it() {
        let only =
            |ok: &'static [&'static str]| move |p: &Path| ok.iter().any(|o| Path::new(o) == p);
        let none = || None;
        let sock = Some(OsStr::new("/tmp/agent.1"));
        // SSH_AUTH_SOCK wins everywhere when it exists.
        for os in [Os::Linux, Os::Macos, Os::Windows] {
            assert_eq!(
                locate(os, sock, none, only(&["/tmp/agent.1", WINDOWS_AGENT_PIPE])),
                Some(PathBuf::from("/tmp/agent.1"))
            );
        }
        // Windows: the service's pipe; Linux: nothing without SSH_AUTH_SOCK.
        assert_eq!(
            locate(Os::Windows, None, none, only(&[WINDOWS_AGENT_PIPE])),
            Some(PathBuf::from(WINDOWS_AGENT_PIPE))
        );
        assert_eq!(locate(Os::Windows, None, none, only(&[])), None);
        assert_eq!(locate(Os::Linux, sock, none, only(&[])), None);
        // macOS: launchd's socket when the environment lost it.
        let launchd = || Some(PathBuf::from("/private/tmp/com.apple.launchd.x/Listeners"));
        assert_eq!(
            locate(
                Os::Macos,
                None,
                launchd,
                only(&["/private/tmp/com.apple.launchd.x/Listeners"])
            ),
            Some(PathBuf::from("/private/tmp/com.apple.launchd.x/Listeners"))
        );
    }

    #[test]
    fn the_no_agent_hint_is_a_code_per_os() {
        let code = |os| serde_json::to_value(no_agent_hint(os)).expect("json");
        assert_eq!(code(Os::Windows), "windows_service");
        assert_eq!(code(Os::Macos), "macos_launchd");
        assert_eq!(code(Os::Linux), "eval_ssh_agent");
    }
}
