//! Text from another machine, made safe to show. A host can print anything: a GPU name, a process
//! command line, a log tail or a model's answer may carry terminal escape sequences (`ESC ] 0 ; …
//! BEL` retitles the terminal, `ESC [ 2 J` clears it, OSC 52 writes the clipboard) or controls that
//! rewrite what was already shown (`\r`, backspace). [`clean`] is applied where remote text enters
//! the core's types (an exec's collected output, the lines of a stream, a job or an HTTP body, and
//! the strings decoded from a JSON answer), so neither the CLI's terminal nor the app's screen
//! ever receives them.

use std::borrow::Cow;

/// Unicode's directional overrides and isolates: they reorder how text around them is displayed
/// (a name or command that reads differently from what it is).
fn bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// Whether `c` is removed: C0 controls except `\n` and `\t`, DEL, the C1 controls
/// (U+0080–U+009F, where `U+009B` is a one-character CSI) and the directional controls.
fn dropped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || bidi(c)
}

/// `s` without escape sequences and control characters, keeping newlines and tabs.
///
/// - ESC sequences go whole: CSI (`ESC [` parameters, intermediates, final byte), OSC / DCS /
///   SOS / PM / APC strings up to BEL or ST (`ESC \`), or to the end of the line when
///   unterminated, nF escapes (`ESC ( B`), and any other `ESC` + one character.
/// - `\r\n` is a newline; a `\r` inside a line starts it over, as on a terminal: what follows it
///   is kept (`10%\r20%` → `20%`; a trailing `\r` changes nothing).
/// - Every other C0/C1 control, DEL and the bidirectional overrides are removed.
///
/// Borrowed when there was nothing to remove (the common case).
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c == '\x1b' || dropped(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    // Where the current line starts in `out` (a `\r` truncates back to it).
    let mut line_start = 0;
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\x1b' => match it.next() {
                Some('[') => {
                    // Parameters and intermediates (0x20–0x3F), then one final byte (0x40–0x7E).
                    while let Some(&n) = it.peek() {
                        if ('\u{20}'..='\u{3f}').contains(&n) {
                            it.next();
                            continue;
                        }
                        if ('\u{40}'..='\u{7e}').contains(&n) {
                            it.next();
                        }
                        break;
                    }
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    // A string ends at BEL or ST; here also at a newline (kept), so one stray
                    // `ESC ]` in a log tail does not swallow the rest of it.
                    while let Some(&n) = it.peek() {
                        if n == '\n' {
                            break;
                        }
                        it.next();
                        if n == '\x07' || n == '\u{9c}' {
                            break;
                        }
                        if n == '\x1b' {
                            if it.peek() == Some(&'\\') {
                                it.next();
                            }
                            break;
                        }
                    }
                }
                // nF escapes (`ESC ( B`): intermediates 0x20–0x2F, then one final character.
                Some(n) if ('\u{20}'..='\u{2f}').contains(&n) => {
                    while it.peek().is_some_and(|c| ('\u{20}'..='\u{2f}').contains(c)) {
                        it.next();
                    }
                    if it.peek().is_some_and(|c| ('\u{30}'..='\u{7e}').contains(c)) {
                        it.next();
                    }
                }
                _ => {}
            },
            '\r' => {
                if it.peek().is_some_and(|&n| n != '\n' && n != '\r') {
                    out.truncate(line_start);
                }
            }
            '\n' => {
                out.push('\n');
                line_start = out.len();
            }
            c if dropped(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`clean`] into an owned `String`.
pub fn cleaned(s: &str) -> String {
    clean(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shows_nothing_hostile(s: &str) {
        assert!(
            !s.chars().any(|c| dropped(c) || c == '\x1b'),
            "left a control in {s:?}"
        );
    }

    #[test]
    fn escape_sequences_go_whole() {
        let cases = [
            ("\x1b]0;pwned\x07NVIDIA H100", "NVIDIA H100"),
            ("\x1b[2JNVIDIA\x1b[1;31m H100\x1b[0m", "NVIDIA H100"),
            ("a\x1b]52;c;cHduZWQ=\x1b\\b", "ab"),
            ("a\x1bPqdata\x1b\\b", "ab"),
            ("a\x1b(Bb\x1b7c", "abc"),
            ("unterminated \x1b]0;title", "unterminated "),
            ("line \x1b]0;open\nnext", "line \nnext"),
            ("csi \x1b[12\nnext", "csi \nnext"),
            ("csi at end \x1b[", "csi at end "),
            ("a\u{9b}2Jb", "a2Jb"),
            (
                "bell\x07 back\x08space del\x7f nul\0 c1\u{85}",
                "bell backspace del nul c1",
            ),
            ("user\u{202E}gnp.exe", "usergnp.exe"),
        ];
        for (raw, want) in cases {
            let got = clean(raw);
            assert_eq!(got, want, "{raw:?}");
            shows_nothing_hostile(&got);
        }
    }

    #[test]
    fn newlines_tabs_and_text_stay_and_carriage_returns_act_like_a_terminal() {
        assert!(matches!(clean("plain 中文 🚀\tx\n"), Cow::Borrowed(_)));
        assert_eq!(clean("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(clean("10%\r20%\r30%\nnext"), "30%\nnext");
        assert_eq!(clean("done\r"), "done");
        assert_eq!(clean("ok\r\r\nx"), "ok\nx");
        assert_eq!(clean("first\nreal\rfake"), "first\nfake");
    }
}
