//! Hand a host to the user's own tools: a terminal running `ssh gpurent-<label>`, or VS Code's
//! Remote-SSH through its `vscode://` link. The command lines are built per OS as data (so they are
//! testable here) and started without a shell: arguments are never parsed by one.

use std::process::Command;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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

/// Program and arguments that open a URI with the OS's default handler.
pub fn open_uri_command(os: Os, uri: &str) -> Vec<String> {
    match os {
        Os::Linux => vec!["xdg-open".into(), uri.into()],
        Os::Macos => vec!["open".into(), uri.into()],
        // `start` is a cmd built-in; its first quoted argument is the window title.
        Os::Windows => vec![
            "cmd".into(),
            "/C".into(),
            "start".into(),
            String::new(),
            uri.into(),
        ],
    }
}

/// Candidate command lines that open a terminal running `ssh <alias>`, best first.
pub fn terminal_commands(os: Os, alias: &str) -> Vec<Vec<String>> {
    let ssh = |prefix: &[&str]| {
        let mut v: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        v.push("ssh".into());
        v.push(alias.into());
        v
    };
    match os {
        Os::Linux => vec![
            ssh(&["x-terminal-emulator", "-e"]),
            ssh(&["gnome-terminal", "--"]),
            ssh(&["konsole", "-e"]),
            ssh(&["xfce4-terminal", "-x"]),
            ssh(&["xterm", "-e"]),
        ],
        // Terminal.app runs a command given as an AppleScript `do script`.
        Os::Macos => vec![vec![
            "osascript".into(),
            "-e".into(),
            format!("tell application \"Terminal\" to do script \"ssh {alias}\""),
            "-e".into(),
            "tell application \"Terminal\" to activate".into(),
        ]],
        Os::Windows => vec![
            ssh(&["wt.exe", "new-tab"]),
            ssh(&["cmd", "/C", "start", "", "cmd", "/K"]),
        ],
    }
}

/// Start the first command line whose program exists. Returns the one that started.
pub fn spawn_first(candidates: &[Vec<String>]) -> std::io::Result<Vec<String>> {
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no command to start");
    for argv in candidates {
        let Some((program, args)) = argv.split_first() else {
            continue;
        };
        match Command::new(program).args(args).spawn() {
            Ok(_) => return Ok(argv.clone()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_openers_per_os() {
        let u = "vscode://vscode-remote/ssh-remote+gpurent-gpu1/root";
        assert_eq!(open_uri_command(Os::Linux, u), vec!["xdg-open", u]);
        assert_eq!(open_uri_command(Os::Macos, u), vec!["open", u]);
        assert_eq!(
            open_uri_command(Os::Windows, u),
            vec!["cmd", "/C", "start", "", u]
        );
    }

    #[test]
    fn terminals_run_ssh_with_the_alias_as_one_argument() {
        for os in [Os::Linux, Os::Windows] {
            for argv in terminal_commands(os, "gpurent-gpu1") {
                assert_eq!(&argv[argv.len() - 2..], ["ssh", "gpurent-gpu1"], "{argv:?}");
            }
        }
        let mac = &terminal_commands(Os::Macos, "gpurent-gpu1")[0];
        assert!(mac[2].contains("do script \"ssh gpurent-gpu1\""), "{mac:?}");
    }

    #[test]
    fn a_missing_program_falls_through_to_the_next() {
        let started = spawn_first(&[
            vec!["/nonexistent/gpurent-terminal".into()],
            vec!["true".into()],
        ])
        .expect("true starts");
        assert_eq!(started, vec!["true".to_string()]);
        assert!(spawn_first(&[vec!["/nonexistent/x".into()]]).is_err());
    }
}
