//! Quoting for remote shells. Everything gpurent puts into a command line that a host's shell
//! parses goes through [`shell_quote`]: POSIX single quotes, with each `'` written as `'\''`.
//! Inside single quotes no character is special in `sh`, `bash`, `dash`, `zsh` or `ksh`, so
//! `$()`, backticks, `;`, globs, newlines, Chinese and emoji all arrive as literal bytes. A NUL
//! byte cannot be passed through any command line and is refused.
//!
//! Quoting does not stop a program from reading an argument that starts with `-` as an option:
//! callers put `--` before such arguments where the program supports it.

use crate::remote::error::RemoteError;

/// Quote one argument for a POSIX shell.
pub fn shell_quote(arg: &str) -> Result<String, RemoteError> {
    if arg.contains('\0') {
        return Err(RemoteError::invalid(
            "argument",
            "contains a NUL byte, which no command line can carry",
        ));
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('\'');
    for ch in arg.chars() {
        if ch == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(ch);
        }
    }
    out.push('\'');
    Ok(out)
}

/// Quote each argument and join them with spaces: `program arg1 arg2` as one command line.
pub fn shell_join<S: AsRef<str>>(args: &[S]) -> Result<String, RemoteError> {
    let quoted = args
        .iter()
        .map(|a| shell_quote(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(quoted.join(" "))
}

/// A script run by `sh -c`: `sh -c '<script>'`. The result is POSIX syntax; what reaches the host
/// goes through [`login_line`] (in `exec`), so it runs the same under any login shell.
pub fn sh_c(script: &str) -> Result<String, RemoteError> {
    Ok(format!("sh -c {}", shell_quote(script)?))
}

/// Bytes that every login shell reads as themselves inside single quotes and that `sh` reads as
/// themselves inside double quotes: printable ASCII less `'` `"` `\` `$` `` ` `` `!`.
fn passes_quoted(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && !matches!(b, b'\'' | b'"' | b'\\' | b'$' | b'`' | b'!')
}

/// Bytes that need no quoting anywhere: a command line made only of them (`sh -s`, `echo ok`) is
/// a plain list of words to every shell.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" _-./=:,+@%".contains(&b)
}

/// The command line sent over SSH for a POSIX `command`, parsed the same by any login shell.
///
/// sshd hands an exec request to the user's *login shell* (`$SHELL -c LINE`), which is not always
/// a POSIX shell, and real ones break POSIX quoting: fish reads `\\` and `\'` as escapes inside
/// single quotes (so `'a\'` never ends: "Unexpected end of string, quotes are not balanced"), and
/// csh/tcsh refuse a newline inside quotes ("Unmatched '''."), i.e. every multi-line script. So a
/// command that is not plain words is sent as
///
/// `sh -c 'exec sh -c "$(printf %b "ENCODED")"'`
///
/// where ENCODED is `command` with every byte outside [`passes_quoted`] written as `\0ooo`
/// (octal, which `printf %b` turns back into the byte). The login shell sees one single-quoted
/// word with no `'`, `\\`, `\'`, newline or `!` in it, which bash, dash, zsh, ksh, fish, csh and
/// tcsh all read literally; `sh` decodes it with its built-in `printf` and `exec`s a fresh `sh` on
/// the original line (no extra process stays). NUL cannot travel in a command line: refused.
pub fn login_line(command: &str) -> Result<String, RemoteError> {
    if command.contains('\0') {
        return Err(RemoteError::invalid(
            "command",
            "contains a NUL byte, which no command line can carry",
        ));
    }
    if !command.is_empty() && command.bytes().all(plain) {
        return Ok(command.to_string());
    }
    let mut enc = String::with_capacity(command.len() + command.len() / 4 + 48);
    enc.push_str("sh -c 'exec sh -c \"$(printf %b \"");
    for b in command.bytes() {
        if passes_quoted(b) {
            enc.push(b as char);
        } else {
            enc.push_str(&format!("\\0{b:03o}"));
        }
    }
    enc.push_str("\")\"'");
    Ok(enc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const NASTY: &[&str] = &[
        "",
        "plain",
        "with space",
        "it's",
        "'",
        "''",
        "\"double\"",
        "$(touch /tmp/gpurent-quote-pwned)",
        "`touch /tmp/gpurent-quote-pwned`",
        "${HOME}",
        "a;b&&c||d|e",
        "line1\nline2",
        "trailing newline\n",
        "tab\there",
        "-rf",
        "--help",
        "-",
        "*",
        "~",
        "back\\slash",
        "数据集 训练.tar",
        "emoji 🚀🔥.bin",
        "mixed '$(x)' \"`y`\" \\ \n 中文",
        "!history",
        "#comment",
    ];

    #[cfg(unix)] // runs the local `sh`
    #[test]
    fn quoted_arguments_arrive_as_literal_bytes_in_a_real_sh() {
        for arg in NASTY {
            let script = format!("printf '%s' {}", shell_quote(arg).expect("quote"));
            let out = Command::new("sh")
                .arg("-c")
                .arg(&script)
                .output()
                .expect("run sh");
            assert!(out.status.success(), "{arg:?}: {out:?}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), *arg, "{script}");
        }
        assert!(!std::path::Path::new("/tmp/gpurent-quote-pwned").exists());
    }

    #[cfg(unix)]
    #[test]
    fn join_keeps_argument_boundaries() {
        let script = format!(
            "for a in {}; do printf '<%s>' \"$a\"; done",
            shell_join(&["a b", "", "-n", "$(id)"]).expect("join")
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "<a b><><-n><$(id)>");
    }

    #[cfg(unix)]
    #[test]
    fn sh_c_nests_a_quoted_script() {
        let inner = format!("printf '%s' {}", shell_quote("it's $(x)").expect("q"));
        let cmd = sh_c(&inner).expect("sh_c");
        let out = Command::new("sh").arg("-c").arg(&cmd).output().expect("sh");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $(x)");
    }

    /// Runs `login_line(cmd)` the way sshd does: `SHELL -c LINE`.
    #[cfg(unix)]
    fn via_login_shell(shell: &str, cmd: &str) -> std::process::Output {
        let line = login_line(cmd).expect("login_line");
        Command::new(shell)
            .arg("-c")
            .arg(&line)
            .output()
            .expect("run the login shell")
    }

    /// A POSIX script with what breaks fish and tcsh (a backslash before a quote, newlines inside
    /// quotes, `!`, `$( )`, `if … fi`, a here-document) and every nasty argument; what it prints.
    #[cfg(unix)]
    pub(crate) fn posix_script() -> (String, String) {
        let mut script = String::from(
            r#"set -e
if [ -n "${HOME:-}" ]; then x=$(printf '%s' 'a\'); fi
printf '%s|' "$x" '!bang' 'tab	there'
cat <<'EOF'
here $doc \n
EOF
"#,
        );
        let mut want = String::from("a\\|!bang|tab\tthere|here $doc \\n\n");
        for arg in NASTY {
            script.push_str(&format!("printf '<%s>' {}\n", shell_quote(arg).expect("q")));
            want.push_str(&format!("<{arg}>"));
        }
        (script, want)
    }

    #[cfg(unix)]
    #[test]
    fn login_line_runs_the_same_in_every_shell_here() {
        let (script, want) = posix_script();
        let cmd = sh_c(&script).expect("sh_c");
        let mut ran = Vec::new();
        for shell in ["sh", "bash", "dash", "zsh", "fish", "tcsh", "csh"] {
            let found = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {shell}"))
                .output()
                .is_ok_and(|o| o.status.success());
            if !found {
                continue;
            }
            ran.push(shell);
            let out = via_login_shell(shell, &cmd);
            assert!(out.status.success(), "{shell}: {out:?}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), want, "{shell}");
        }
        assert!(ran.len() >= 2, "sh and bash at least: {ran:?}");
        assert!(!std::path::Path::new("/tmp/gpurent-quote-pwned").exists());
    }

    #[cfg(unix)]
    #[test]
    fn login_line_keeps_exit_status_and_passes_plain_words() {
        assert_eq!(login_line("sh -s").expect("l"), "sh -s");
        assert_eq!(
            login_line("echo gpurent-key-login-ok").expect("l"),
            "echo gpurent-key-login-ok"
        );
        let out = via_login_shell("sh", "exit 7");
        assert_eq!(out.status.code(), Some(7));
        let out = via_login_shell("sh", "printf '%s' \"$(echo 中文)\"");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "中文");
        let line = login_line("echo 'é' \"$(echo 中)\"\n").expect("l");
        assert!(line.bytes().all(|b| b.is_ascii() && b != b'\n'), "{line}");
        let word = &line["sh -c '".len()..line.len() - 1];
        assert!(!word.contains('\'') && !word.contains("\\\\"), "{line}");
        assert!(login_line("a\0b").is_err());
    }

    #[test]
    fn nul_is_refused() {
        assert!(shell_quote("a\0b").is_err());
        assert_eq!(shell_quote("x").expect("q"), "'x'");
        assert_eq!(shell_quote("it's").expect("q"), "'it'\\''s'");
    }
}
