//! Reading a log: ANSI colours, CRLF and carriage-return progress bars out (zh-CN and any other
//! text kept), each line classified as a warning or not, the rules matched line by line with
//! their evidence, and the lines worth showing when nothing matched.

use std::sync::OnceLock;

use regex::Regex;

use super::rules::{Rule, Rules};
use super::{Confidence, EvidenceLine};
use crate::setup::redact::redact_credentials;

/// Evidence lines are cut to this many characters.
const LINE_MAX: usize = 300;
/// At most this many trigger lines per match (first and last ones).
const TRIGGERS_MAX: usize = 3;
/// At most this many supporting lines per match.
const SUPPORT_MAX: usize = 2;
/// A warning block (a line ending in "Warning:" and its message) is at most this long.
const WARNING_BLOCK_MAX: usize = 12;

/// One line of the log as read.
#[derive(Debug, Clone)]
pub struct Line {
    /// 1-based.
    pub no: u32,
    /// The text without colours or `[rankN]:` prefix (what the rules read).
    pub text: String,
    /// The text shown as evidence (colours out, prefix kept).
    pub shown: String,
    pub warning: bool,
}

fn re(cell: &'static OnceLock<Regex>, s: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(s).unwrap_or_else(|e| panic!("static regex {s}: {e}")))
}

fn ansi() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]",
    )
}

fn rank_prefix() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(&R, r"^\s*\[(?:rank|default)\d+\]:\s?")
}

/// A Python warning line (its message may continue on the next lines).
fn py_warning() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(&R, r"\b[A-Z][A-Za-z]*Warning:")
}

/// A line that starts a new record: ends a warning block before it.
fn record_start() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"^\s*(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception)\b:?|ERROR\b|error:|\[[EF][\s\d]|[EF]\d{4}\s)",
    )
}

fn suspicious() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(
        &R,
        r"(?i)\w*(?:error|exception)\b|\bfailed\b|\bfatal\b|\btraceback\b|\babort|\bkilled\b|segmentation fault|core dumped|错误|失败|异常",
    )
}

/// A Python exception line (`RuntimeError: ...`, `torch.OutOfMemoryError: ...`).
fn exception_line() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(&R, r"^\s*[\w.]*(?:Error|Exception)\b:")
}

fn hf_token() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    re(&R, r"\bhf_[A-Za-z0-9]{20,}\b")
}

/// A line as evidence: credentials in URLs and Hugging Face tokens masked, cut to [`LINE_MAX`].
fn shown(s: &str) -> String {
    let s = redact_credentials(s);
    let s = hf_token().replace_all(&s, "hf_***");
    let s = s.trim_end();
    match s.char_indices().nth(LINE_MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Split a log into lines: colours out, `\r\n` and lone `\r` (progress bars: the last state
/// counts) handled, each line classified.
pub fn read(raw: &str, rules: &Rules) -> Vec<Line> {
    let clean = ansi().replace_all(raw, "");
    let mut lines: Vec<Line> = clean
        .split('\n')
        .enumerate()
        .map(|(i, l)| {
            let l = l.trim_end_matches('\r');
            let l = l.rsplit('\r').next().unwrap_or(l);
            let text = rank_prefix().replace(l, "").into_owned();
            Line {
                no: i as u32 + 1,
                shown: shown(l),
                text,
                warning: false,
            }
        })
        .collect();
    if lines.last().is_some_and(|l| l.text.is_empty()) {
        lines.pop();
    }
    classify(&mut lines, rules);
    lines
}

/// Mark warning lines: the `warning` row's patterns, and a Python warning's message lines after
/// it (until a blank line, a new record, or the indented source line Python echoes after it).
fn classify(lines: &mut [Line], rules: &Rules) {
    let mut block = 0usize;
    for l in lines.iter_mut() {
        if block > 0 {
            let t = l.text.as_str();
            if t.trim().is_empty() || record_start().is_match(t) {
                block = 0;
            } else {
                l.warning = true;
                // The echoed source line (`  warnings.warn(`) closes the block.
                block = if t.starts_with(char::is_whitespace) {
                    0
                } else {
                    block - 1
                };
                continue;
            }
        }
        if rules.warning.is_match(&l.text) {
            l.warning = true;
            if py_warning().is_match(&l.text) {
                block = WARNING_BLOCK_MAX;
            }
        }
    }
}

/// A rule that fired, before ranking and host refinement.
#[derive(Debug)]
pub struct Hit<'r> {
    pub rule: &'r Rule,
    pub confidence: Confidence,
    pub first_line: u32,
    pub evidence: Vec<EvidenceLine>,
    /// The first capture of each support pattern that matched (by pattern index).
    pub captures: Vec<Option<String>>,
}

impl Hit<'_> {
    /// The first capture of support pattern `i`.
    pub fn cap(&self, i: usize) -> Option<&str> {
        self.captures.get(i).and_then(|c| c.as_deref())
    }
}

fn counts(rule: &Rule, l: &Line) -> bool {
    !l.warning && !rule.unless.as_ref().is_some_and(|u| u.is_match(&l.text))
}

/// The rules that fire on these lines (unranked), each with its evidence.
pub fn hits<'r>(lines: &[Line], rules: &'r Rules) -> Vec<Hit<'r>> {
    let mut out = Vec::new();
    for rule in &rules.rules {
        let mut strong = Vec::new();
        let mut weak = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if !counts(rule, l) {
                continue;
            }
            if rule.strong.is_match(&l.text) {
                strong.push(i);
            } else if rule.weak.is_match(&l.text) {
                weak.push(i);
            }
        }
        let triggers = if strong.is_empty() { &weak } else { &strong };
        let Some(&first) = triggers.first() else {
            continue;
        };
        let mut captures = vec![None; rule.support.len()];
        let mut support_lines = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let mut any = false;
            for (k, r) in rule.support.iter().enumerate() {
                if let Some(c) = r.captures(&l.text) {
                    any = true;
                    if captures[k].is_none() {
                        captures[k] = Some(
                            c.get(1)
                                .map(|m| m.as_str())
                                .unwrap_or_else(|| c.get(0).map_or("", |m| m.as_str()))
                                .trim()
                                .to_string(),
                        );
                    }
                }
            }
            if any && !triggers.contains(&i) {
                support_lines.push(i);
            }
        }
        let confidence = if !strong.is_empty() || !support_lines.is_empty() {
            Confidence::High
        } else {
            Confidence::Medium
        };
        // Evidence: the first trigger lines, the last one, and the supporting lines nearest the first.
        let mut pick: Vec<usize> = triggers.iter().take(TRIGGERS_MAX - 1).copied().collect();
        if let Some(&last) = triggers.last() {
            if !pick.contains(&last) {
                pick.push(last);
            }
        }
        support_lines.sort_by_key(|&i| i.abs_diff(first));
        pick.extend(support_lines.into_iter().take(SUPPORT_MAX));
        pick.sort_unstable();
        pick.dedup();
        out.push(Hit {
            rule,
            confidence,
            first_line: lines[first].no,
            evidence: pick
                .into_iter()
                .map(|i| EvidenceLine {
                    line: lines[i].no,
                    text: lines[i].shown.clone(),
                })
                .collect(),
            captures,
        });
    }
    out
}

/// When nothing matched: the last exception line first, then the other suspicious non-warning
/// lines nearest the end (at most `max`), in log order after the first.
pub fn most_suspicious(lines: &[Line], max: usize) -> Vec<EvidenceLine> {
    let ev = |l: &Line| EvidenceLine {
        line: l.no,
        text: l.shown.clone(),
    };
    let candidates: Vec<&Line> = lines
        .iter()
        .filter(|l| !l.warning && suspicious().is_match(&l.text))
        .collect();
    let mut out = Vec::new();
    let last_exc = candidates
        .iter()
        .rev()
        .find(|l| exception_line().is_match(&l.text));
    if let Some(l) = last_exc {
        out.push(ev(l));
    }
    let rest: Vec<&&Line> = candidates
        .iter()
        .filter(|l| Some(l.no) != last_exc.map(|e| e.no))
        .collect();
    let skip = rest.len().saturating_sub(max.saturating_sub(out.len()));
    out.extend(rest.into_iter().skip(skip).map(|l| ev(l)));
    out
}
