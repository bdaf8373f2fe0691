//! Hand a host to the user's own tools: a terminal running `ssh gpurent-<label>`, or VS Code's
//! Remote-SSH through its `vscode://` link; and start gpurent's own helper programs (`ssh-add`,
//! `icacls`) without a console window. The command lines are built per OS as data ([`Launch`]),
//! so they are tested on any OS, and started by [`spawn_first`].
//!
//! # Where anything is parsed by a shell (or another interpreter)
//!
//! Programs are started with an argument vector (`std::process::Command`), never through
//! `sh -c` or `cmd /C`. What still parses text, exactly:
//!
//! - **Linux**: nothing. `x-terminal-emulator -e`, `gnome-terminal --`, `konsole -e`,
//!   `xfce4-terminal -x` and `xterm -e` all take the rest of their arguments as the program's
//!   argument vector; `xdg-open` takes the URI as one argument.
//! - **macOS, terminal**: `osascript -e SCRIPT`: AppleScript parses `SCRIPT`, and Terminal's
//!   `do script` hands its text to **the user's login shell, which parses it**. The alias is
//!   therefore single-quoted for the shell ([`sh_quote`]) and that text escaped as an AppleScript
//!   string literal ([`applescript_string`]); on top of that, host labels are only
//!   `A-Z a-z 0-9 . _ -` (`remote::hosts::validate_label`). **macOS, URI**: `open URI`, no shell.
//! - **Windows**: Rust joins the arguments into one command line (MSVC quoting rules) and the
//!   program's C runtime splits it again; no `cmd.exe` anywhere. `wt.exe` additionally splits its
//!   command line at `;` (its own sub-command separator; an alias has none) before starting
//!   `ssh` itself. URIs go to `rundll32 url.dll,FileProtocolHandler URI` rather than
//!   `cmd /C start`, which would expand `%…%` and act on `&` inside the (percent-encoded) URI.
//!
//! # Windows console windows
//!
//! A GUI build has no console, so every console program it starts would get a window of its
//! own. Helpers ([`Window::Hidden`]: `ssh-add`, `icacls`) are started with `CREATE_NO_WINDOW`
//! ([`crate::infra::process::hide_console`]); the fallback terminal (`ssh.exe` itself, [`Window::NewConsole`]) gets a
//! console on purpose with `CREATE_NEW_CONSOLE`.
//!
//! # macOS Automation permission
//!
//! `osascript` sending Apple events to Terminal needs the user's consent (System Settings →
//! Privacy & Security → Automation), which macOS asks for once, showing the app's
//! `NSAppleEventsUsageDescription` (src-tauri/Info.plist); a notarized, hardened-runtime build
//! also needs the `com.apple.security.automation.apple-events` entitlement
//! (src-tauri/entitlements.plist). A refusal makes `osascript` exit with error -1743, which
//! [`spawn_first`] waits for and reports as [`LaunchError::Refused`] instead of claiming success.

use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::ipc::Coded;
use crate::infra::process::{set_window, Window};

/// The OS family a launcher is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Os {
    Linux,
    Macos,
    Windows,
}

impl Os {
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::Macos
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// One way to start something: the argument vector, its window, and whether to wait for the
/// program to finish (it then must exit 0; used where a refusal shows only in the exit status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub window: Window,
    pub wait: bool,
}

impl Launch {
    fn new(argv: &[&str], window: Window, wait: bool) -> Launch {
        Launch {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            window,
            wait,
        }
    }
}

/// Why nothing was started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// None of the candidate programs exists on this machine.
    #[error("none of these programs could be started: {tried}")]
    NotFound { tried: String, detail: String },
    /// The OS or the user refused (macOS: Automation permission for Terminal not given).
    #[error("{program} was not allowed to run; on macOS allow gpurent to control Terminal in System Settings → Privacy & Security → Automation")]
    Refused { program: String, detail: String },
    /// The program started but reported a failure.
    #[error("{program} failed")]
    Failed { program: String, detail: String },
}

impl Coded for LaunchError {
    fn code(&self) -> &'static str {
        match self {
            LaunchError::NotFound { .. } => "launcher_not_found",
            LaunchError::Refused { .. } => "launch_refused",
            LaunchError::Failed { .. } => "launch_failed",
        }
    }
    fn detail(&self) -> Option<String> {
        match self {
            LaunchError::NotFound { detail, .. }
            | LaunchError::Refused { detail, .. }
            | LaunchError::Failed { detail, .. } => Some(detail.clone()),
        }
    }
}

/// Program and arguments that open a URI with the OS's default handler.
pub fn open_uri_command(os: Os, uri: &str) -> Launch {
    match os {
        Os::Linux => Launch::new(&["xdg-open", uri], Window::Own, false),
        Os::Macos => Launch::new(&["open", uri], Window::Own, false),
        Os::Windows => Launch::new(
            &["rundll32", "url.dll,FileProtocolHandler", uri],
            Window::Own,
            false,
        ),
    }
}

/// `text` as one single-quoted POSIX shell word.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `text` as an AppleScript string literal.
pub fn applescript_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', r"\\").replace('"', "\\\""))
}

/// Candidate ways to open a terminal running `ssh <alias>`, best first.
pub fn terminal_commands(os: Os, alias: &str) -> Vec<Launch> {
    let ssh = |prefix: &[&str], window: Window| {
        let mut argv = prefix.to_vec();
        argv.extend(["ssh", alias]);
        Launch::new(&argv, window, false)
    };
    match os {
        Os::Linux => vec![
            ssh(&["x-terminal-emulator", "-e"], Window::Own),
            ssh(&["gnome-terminal", "--"], Window::Own),
            ssh(&["konsole", "-e"], Window::Own),
            ssh(&["xfce4-terminal", "-x"], Window::Own),
            ssh(&["xterm", "-e"], Window::Own),
        ],
        // Terminal.app runs the text of `do script` in the user's login shell (see module docs).
        Os::Macos => {
            let shell_line = format!("ssh {}", sh_quote(alias));
            let script = format!(
                "tell application \"Terminal\"\n  do script {}\n  activate\nend tell",
                applescript_string(&shell_line)
            );
            vec![Launch::new(
                &["osascript", "-e", &script],
                Window::Own,
                true,
            )]
        }
        // Windows Terminal where installed (an app execution alias in WindowsApps), else the
        // OpenSSH client in a console window of its own.
        Os::Windows => vec![
            ssh(&["wt.exe", "new-tab"], Window::Own),
            Launch::new(&["ssh.exe", alias], Window::NewConsole, false),
        ],
    }
}

/// A [`Command`] for one [`Launch`], with its window set (nothing started yet).
pub fn command(launch: &Launch) -> Option<Command> {
    let (program, args) = launch.argv.split_first()?;
    let mut cmd = Command::new(program);
    cmd.args(args);
    set_window(&mut cmd, launch.window);
    Some(cmd)
}

/// osascript's error number when the user (or policy) refused Apple events to the target app.
const APPLE_EVENTS_NOT_PERMITTED: &str = "-1743";

/// Start the first candidate whose program exists; returns the one that started. A candidate
/// with `wait` must also exit 0: a refusal there is [`LaunchError::Refused`], another failure
/// [`LaunchError::Failed`] (neither tries the next candidate: the program exists, and the user
/// needs to hear why it did not work).
pub fn spawn_first(candidates: &[Launch]) -> Result<Launch, LaunchError> {
    let mut errors = Vec::new();
    for launch in candidates {
        let Some(mut cmd) = command(launch) else {
            continue;
        };
        let program = launch.argv[0].clone();
        if !launch.wait {
            match cmd.stdin(Stdio::null()).spawn() {
                Ok(_) => return Ok(launch.clone()),
                Err(e) => {
                    errors.push(format!("{program}: {e}"));
                    continue;
                }
            }
        }
        match cmd.stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => return Ok(launch.clone()),
            Ok(out) => {
                let detail = String::from_utf8_lossy(&out.stderr).trim().to_string();
                return Err(if detail.contains(APPLE_EVENTS_NOT_PERMITTED) {
                    LaunchError::Refused { program, detail }
                } else {
                    LaunchError::Failed { program, detail }
                });
            }
            Err(e) => errors.push(format!("{program}: {e}")),
        }
    }
    let tried: Vec<&str> = candidates
        .iter()
        .filter_map(|l| l.argv.first().map(String::as_str))
        .collect();
    Err(LaunchError::NotFound {
        tried: tried.join(", "),
        detail: errors.join("; "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_openers_per_os_take_the_uri_as_one_argument_without_a_shell() {
        let u = "vscode://vscode-remote/ssh-remote+gpurent-gpu1/root/a%20b";
        assert_eq!(open_uri_command(Os::Linux, u).argv, vec!["xdg-open", u]);
        assert_eq!(open_uri_command(Os::Macos, u).argv, vec!["open", u]);
        let w = open_uri_command(Os::Windows, u);
        assert_eq!(w.argv, vec!["rundll32", "url.dll,FileProtocolHandler", u]);
        assert!(!w.argv.iter().any(|a| a.eq_ignore_ascii_case("cmd")));
    }

    #[test]
    fn terminals_run_ssh_with_the_alias_as_one_argument() {
        for l in terminal_commands(Os::Linux, "gpurent-gpu1") {
            assert_eq!(
                &l.argv[l.argv.len() - 2..],
                ["ssh", "gpurent-gpu1"],
                "{l:?}"
            );
            assert!(!l.wait && l.window == Window::Own);
        }
        let win = terminal_commands(Os::Windows, "gpurent-gpu1");
        assert_eq!(
            win[0].argv,
            vec!["wt.exe", "new-tab", "ssh", "gpurent-gpu1"]
        );
        assert_eq!(win[0].window, Window::Own);
        assert_eq!(win[1].argv, vec!["ssh.exe", "gpurent-gpu1"]);
        assert_eq!(
            win[1].window,
            Window::NewConsole,
            "a console of its own, no cmd"
        );
    }

    #[test]
    fn macos_terminal_script_quotes_for_applescript_and_the_shell_and_waits() {
        let mac = &terminal_commands(Os::Macos, "gpurent-gpu1")[0];
        assert_eq!(mac.argv[..2], ["osascript", "-e"]);
        assert!(
            mac.wait,
            "a refused Automation permission shows only in the exit status"
        );
        assert_eq!(
            mac.argv[2],
            "tell application \"Terminal\"\n  do script \"ssh 'gpurent-gpu1'\"\n  activate\nend tell"
        );
        // Even an alias no label can produce stays one word for the shell and one AppleScript string.
        let odd = &terminal_commands(Os::Macos, "a'b\"c\\d;$(x)")[0].argv[2];
        assert!(
            odd.contains(r#"do script "ssh 'a'\\''b\"c\\d;$(x)'""#),
            "{odd}"
        );
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(applescript_string(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    #[cfg(unix)]
    #[test]
    fn a_missing_program_falls_through_to_the_next() {
        let l = |argv: &[&str], wait| Launch::new(argv, Window::Own, wait);
        let started = spawn_first(&[
            l(&["/nonexistent/gpurent-terminal"], false),
            l(&["true"], false),
        ])
        .expect("true starts");
        assert_eq!(started.argv, vec!["true".to_string()]);
        let e = spawn_first(&[l(&["/nonexistent/x"], false)]).expect_err("none");
        assert_eq!(e.code(), "launcher_not_found");
    }

    #[cfg(unix)]
    #[test]
    fn a_waited_launch_reports_refusal_and_failure_instead_of_success() {
        let sh = |script: &str| Launch::new(&["sh", "-c", script], Window::Own, true);
        let refused = spawn_first(&[sh(
            "echo 'execution error: Not authorized to send Apple events to Terminal. (-1743)' >&2; exit 1",
        )])
        .expect_err("refused");
        assert_eq!(refused.code(), "launch_refused");
        let failed = spawn_first(&[sh("echo boom >&2; exit 3")]).expect_err("failed");
        assert_eq!(failed.code(), "launch_failed");
        assert_eq!(failed.detail().as_deref(), Some("boom"));
        assert!(spawn_first(&[sh("exit 0")]).is_ok());
    }
}
