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

/// A script run by `sh -c`, whatever the login shell is (bash, zsh, fish…): `sh -c '<script>'`.
pub fn sh_c(script: &str) -> Result<String, RemoteError> {
    Ok(format!("sh -c {}", shell_quote(script)?))
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

    #[test]
    fn nul_is_refused() {
        assert!(shell_quote("a\0b").is_err());
        assert_eq!(shell_quote("x").expect("q"), "'x'");
        assert_eq!(shell_quote("it's").expect("q"), "'it'\\''s'");
    }
}
