//! A shell-like word splitter for one pasted command line. It only splits and unquotes: nothing is
//! expanded or executed, and shell syntax (`;`, `&&`, `|`, redirections, comments, `$(…)`) ends the
//! command.

use crate::hostparse::HostParseError;

/// The words of one command, and whether shell syntax after them was cut off.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Words {
    pub words: Vec<String>,
    pub shell_syntax_cut: bool,
}

/// Split `line` like a POSIX shell would into words (single quotes literal, double quotes with
/// `\"`, `\\`, `\$` and `` \` `` escapes, backslash outside quotes escaping the next character).
pub(crate) fn split(line: &str) -> Result<Words, HostParseError> {
    let mut out = Words::default();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    out.words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err(HostParseError::UnclosedQuote),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => cur.push(e),
                            Some(other) => {
                                cur.push('\\');
                                cur.push(other);
                            }
                            None => return Err(HostParseError::UnclosedQuote),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err(HostParseError::UnclosedQuote),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    cur.push(next);
                }
            }
            ';' | '|' | '&' | '<' | '>' | '`' | '(' | ')' => {
                out.shell_syntax_cut = true;
                break;
            }
            '$' if chars.peek() == Some(&'(') => {
                out.shell_syntax_cut = true;
                break;
            }
            '#' if !in_word => {
                out.shell_syntax_cut = true;
                break;
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.words.push(cur);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<String> {
        split(line).expect("split").words
    }

    #[test]
    fn splits_and_unquotes_without_expanding() {
        assert_eq!(w("ssh  -p 22\troot@h"), ["ssh", "-p", "22", "root@h"]);
        assert_eq!(
            w(r#"ssh -o "User=a b" 'x y'z"#),
            ["ssh", "-o", "User=a b", "x yz"]
        );
        assert_eq!(
            w(r#"a\ b "q\"q" '$HOME' "$HOME""#),
            ["a b", "q\"q", "$HOME", "$HOME"]
        );
        assert_eq!(w(r#""" x"#), ["", "x"]);
        assert_eq!(w("a#b"), ["a#b"]);
    }

    #[test]
    fn shell_syntax_ends_the_command() {
        for line in [
            "ssh root@h && rm -rf /",
            "ssh root@h; echo",
            "ssh root@h | tee",
            "ssh root@h > out",
            "ssh root@h $(id)",
            "ssh root@h `id`",
            "ssh root@h # comment",
        ] {
            let s = split(line).expect(line);
            assert_eq!(s.words, ["ssh", "root@h"], "{line}");
            assert!(s.shell_syntax_cut, "{line}");
        }
    }

    #[test]
    fn unclosed_quotes_are_an_error() {
        for line in ["ssh 'root@h", "ssh \"root@h", "ssh \"a\\"] {
            assert!(
                matches!(split(line), Err(HostParseError::UnclosedQuote)),
                "{line}"
            );
        }
    }
}
