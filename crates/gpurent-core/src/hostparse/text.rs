//! The free text around a command: normalising what consoles and chat apps do to it, taking the
//! password out (`密码：…`, `Password: …`, `sshpass -p …`) before anything else looks at the text,
//! and finding where commands start.

use crate::infra::secret::Secret;

/// Width-normalise and clean a paste: CRLF, odd spaces, zero-width characters, smart quotes,
/// full-width colons, and backslash line continuations.
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\r' => out.push('\n'),
            '\u{00a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}' => out.push(' '),
            '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => {}
            '“' | '”' | '„' => out.push('"'),
            '‘' | '’' => out.push('\''),
            '：' => out.push(':'),
            '＝' => out.push('='),
            '＠' => out.push('@'),
            c => out.push(c),
        }
    }
    out.replace("\\\n", " ")
}

const LABELS_EN: &[&str] = &["password", "passwd", "pwd"];
const LABELS_ZH: &[&str] = &["密码", "口令"];

/// The text with every password span replaced by a space, and the first password found.
#[derive(Debug)]
pub(crate) struct Extracted {
    pub password: Option<Secret>,
    pub rest: String,
}

pub(crate) fn extract_password(text: &str) -> Extracted {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut password: Option<Secret> = None;
    let mut blank_next = vec![false; lines.len() + 1];
    let mut out = Vec::with_capacity(lines.len());
    for (n, line) in lines.iter().enumerate() {
        if blank_next[n] {
            out.push(String::new());
            continue;
        }
        let mut kept = String::new();
        let mut pos = 0;
        while let Some(m) = find_password(line, pos) {
            kept.push_str(&line[pos..m.start]);
            kept.push(' ');
            pos = m.end;
            let value = match m.value {
                Some(v) => Some(v),
                None => next_line_value(&lines, n).map(|(k, v)| {
                    blank_next[k] = true;
                    v
                }),
            };
            if let (None, Some(v)) = (&password, value) {
                if !v.is_empty() {
                    password = Some(Secret::new(v));
                }
            }
        }
        kept.push_str(&line[pos..]);
        out.push(kept);
    }
    Extracted {
        password,
        rest: out.join("\n"),
    }
}

struct Found {
    start: usize,
    end: usize,
    /// `None`: the label ends the line; the value may be on the next line.
    value: Option<String>,
}

/// The next password label at or after byte `from`.
fn find_password(line: &str, from: usize) -> Option<Found> {
    for (i, _) in line.char_indices().filter(|(i, _)| *i >= from) {
        if let Some(f) = sshpass_at(line, i) {
            return Some(f);
        }
        let prev_alnum = line[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        let en = LABELS_EN.iter().find(|l| {
            !prev_alnum
                && line
                    .get(i..i + l.len())
                    .is_some_and(|s| s.eq_ignore_ascii_case(l))
        });
        let zh = LABELS_ZH.iter().find(|l| line[i..].starts_with(*l));
        let Some(label) = en.or(zh) else { continue };
        let after = &line[i + label.len()..];
        let trimmed = after.trim_start_matches([' ', '\t']);
        let (sep, value_text) = match trimmed.strip_prefix([':', '=']) {
            Some(v) => (true, v.trim_start_matches([' ', '\t'])),
            None => (false, trimmed),
        };
        let spaced = trimmed.len() < after.len();
        let start_v = line.len() - value_text.len();
        if value_text.trim().is_empty() {
            // "密码：" or a label alone at the end of the line: the value may follow on the next line.
            if sep || line[..i].trim().is_empty() {
                return Some(Found {
                    start: i,
                    end: line.len(),
                    value: None,
                });
            }
            continue;
        }
        let (value, len) = take_value(value_text);
        // Without a colon, only "密码 Ab12" (Chinese label, space, ASCII value) counts.
        let ok = sep || (zh.is_some() && spaced && value.is_ascii());
        if ok && !value.is_empty() {
            return Some(Found {
                start: i,
                end: start_v + len,
                value: Some(value),
            });
        }
    }
    None
}

/// `sshpass -p VALUE` / `sshpass -pVALUE`.
fn sshpass_at(line: &str, i: usize) -> Option<Found> {
    let rest = line[i..].strip_prefix("sshpass")?;
    let prev_ok = line[..i]
        .chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || c == ':' || c == '/');
    let args = rest.trim_start_matches([' ', '\t']);
    let p = args.strip_prefix("-p")?;
    if !prev_ok || args.len() == rest.len() {
        return None;
    }
    let v = p.trim_start_matches([' ', '\t']);
    if v.is_empty() {
        return None;
    }
    let (value, len) = take_value(v);
    let start_v = line.len() - v.len();
    Some(Found {
        start: line.len() - args.len(),
        end: start_v + len,
        value: Some(value),
    })
}

/// A value token: quoted, or up to whitespace; trailing Chinese punctuation is not part of it.
/// Returns the value and how many bytes of `s` it used.
fn take_value(s: &str) -> (String, usize) {
    for q in ['"', '\'', '「'] {
        let close = if q == '「' { '」' } else { q };
        if let Some(inner) = s.strip_prefix(q) {
            if let Some(end) = inner.find(close) {
                return (
                    inner[..end].to_string(),
                    q.len_utf8() + end + close.len_utf8(),
                );
            }
        }
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    let token = &s[..end];
    let value = token.trim_end_matches(['。', '，', '；', '、', '）', ')']);
    let value = value.trim_start_matches(['（', '(']);
    (value.to_string(), end)
}

/// A lone token on the next non-empty line (the value of a label that ended its line).
fn next_line_value(lines: &[&str], n: usize) -> Option<(usize, String)> {
    let (k, line) = lines
        .iter()
        .enumerate()
        .skip(n + 1)
        .find(|(_, l)| !l.trim().is_empty())?;
    let t = line.trim();
    let single = !t.contains(char::is_whitespace);
    let looks_like_command = t.starts_with("ssh") || t.contains("://");
    (single && !looks_like_command).then(|| (k, t.to_string()))
}

/// Which program a command starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    Ssh,
    Scp,
    Sftp,
    /// A bare `ssh://…` URL.
    Url,
}

/// Where commands start: `(line, byte offset in the line, program)`, in text order.
pub(crate) fn command_starts(text: &str) -> Vec<(usize, usize, Program)> {
    let mut out = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        let mut skip_until = 0;
        for (i, _) in line.char_indices() {
            if i < skip_until {
                continue;
            }
            let boundary = line[..i]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')));
            if !boundary {
                continue;
            }
            let at = &line[i..];
            if at
                .get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case("ssh://"))
            {
                out.push((n, i, Program::Url));
                skip_until = i + at.find(char::is_whitespace).unwrap_or(at.len());
                continue;
            }
            for (word, prog) in [
                ("ssh", Program::Ssh),
                ("scp", Program::Scp),
                ("sftp", Program::Sftp),
            ] {
                let word_end = at
                    .strip_prefix(word)
                    .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace));
                if word_end {
                    out.push((n, i, prog));
                    skip_until = line.len();
                }
            }
        }
    }
    out
}

/// `Host: …`, `端口：…`, `用户名：…` lines, for consoles that list fields instead of a command.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Fields {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
}

pub(crate) fn labelled_fields(text: &str) -> Fields {
    const HOST: &[&str] = &[
        "host",
        "hostname",
        "ip",
        "server",
        "address",
        "主机",
        "地址",
        "服务器",
        "域名",
    ];
    const PORT: &[&str] = &["port", "端口", "端口号"];
    const USER: &[&str] = &[
        "user",
        "username",
        "login",
        "用户",
        "用户名",
        "账号",
        "账户",
    ];
    let mut f = Fields::default();
    for line in text.split('\n') {
        let Some((label, value)) = line.split_once(':') else {
            continue;
        };
        let label = label.trim().to_lowercase();
        let Some(value) = value.split_whitespace().next() else {
            continue;
        };
        let is = |names: &[&str]| names.iter().any(|n| label.ends_with(n));
        let slot = if is(PORT) {
            &mut f.port
        } else if is(USER) {
            &mut f.user
        } else if is(HOST) {
            &mut f.host
        } else {
            continue;
        };
        slot.get_or_insert_with(|| value.to_string());
    }
    f
}

/// The first `user@host` token in prose (e.g. "log in as root@1.2.3.4").
pub(crate) fn bare_user_at_host(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|t| {
            t.trim_matches(|c: char| {
                matches!(c, ',' | '.' | '(' | ')' | '`' | '"' | '\'' | '，' | '。')
            })
        })
        .find(|t| t.contains('@') && !t.starts_with(['-', '@']) && !t.ends_with('@'))
        .map(str::to_string)
}
