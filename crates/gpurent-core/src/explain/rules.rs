//! `data/error-rules.csv` compiled: one [`Rule`] per error code, plus the `warning` row whose
//! patterns mark lines no rule fires on. Parsed once; a damaged table is
//! [`ExplainError::BundledRules`], never a panic.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

use super::ExplainError;

const RULES_CSV: &str = include_str!("../../data/error-rules.csv");

/// The separator between regexes in one cell.
const SEP: &str = " ;; ";

/// One error code of the table.
#[derive(Debug)]
pub struct Rule {
    pub code: String,
    pub layer: u8,
    pub strong: RegexSet,
    pub weak: RegexSet,
    /// Kept one by one: their capture groups become parameters.
    pub support: Vec<Regex>,
    pub unless: Option<Regex>,
    pub follows_from: Vec<String>,
    pub title: String,
    pub meaning: String,
    pub cause: String,
    pub fix: String,
    pub commands: Vec<String>,
    pub host_facts: Vec<String>,
    pub setup_codes: Vec<String>,
    pub verified: bool,
    pub sources: Vec<String>,
}

/// The compiled table.
#[derive(Debug)]
pub struct Rules {
    pub rules: Vec<Rule>,
    /// The `warning` row's patterns.
    pub warning: RegexSet,
}

#[derive(Deserialize)]
struct Row {
    code: String,
    layer: u8,
    patterns: String,
    weak: String,
    support: String,
    unless: String,
    follows_from: String,
    title: String,
    meaning: String,
    cause: String,
    fix: String,
    commands: String,
    host_facts: String,
    setup_codes: String,
    verified: String,
    sources: String,
}

fn split(cell: &str) -> Vec<String> {
    cell.split(SEP)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn words(cell: &str) -> Vec<String> {
    cell.split_whitespace().map(String::from).collect()
}

/// Parse a rules table (the bundled one or a test's).
pub fn parse(text: &str) -> Result<Rules, ExplainError> {
    let bad = |w: String| ExplainError::BundledRules(w);
    let mut rd = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut rules = Vec::new();
    let mut warning = None;
    for row in rd.deserialize::<Row>() {
        let r = row.map_err(|e| bad(e.to_string()))?;
        let set =
            |cell: &str| RegexSet::new(split(cell)).map_err(|e| bad(format!("{}: {e}", r.code)));
        if r.code == "warning" {
            warning = Some(set(&r.patterns)?);
            continue;
        }
        let strong = set(&r.patterns)?;
        if strong.is_empty() {
            return Err(bad(format!("{}: no patterns", r.code)));
        }
        let support = split(&r.support)
            .iter()
            .map(|p| Regex::new(p).map_err(|e| bad(format!("{}: {e}", r.code))))
            .collect::<Result<Vec<_>, _>>()?;
        let unless = match r.unless.trim() {
            "" => None,
            u => Some(Regex::new(u).map_err(|e| bad(format!("{}: {e}", r.code)))?),
        };
        rules.push(Rule {
            layer: r.layer,
            weak: set(&r.weak)?,
            strong,
            support,
            unless,
            follows_from: words(&r.follows_from),
            commands: split(&r.commands),
            host_facts: words(&r.host_facts),
            setup_codes: words(&r.setup_codes),
            verified: r.verified.trim() == "yes",
            sources: r
                .sources
                .split("; ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
            title: r.title,
            meaning: r.meaning,
            cause: r.cause,
            fix: r.fix,
            code: r.code,
        });
    }
    let warning = warning.ok_or_else(|| bad("no `warning` row".into()))?;
    if rules.is_empty() {
        return Err(bad("no rules".into()));
    }
    Ok(Rules { rules, warning })
}

/// The table compiled into this build (parsed once).
pub fn bundled() -> Result<&'static Rules, ExplainError> {
    static CELL: OnceLock<Result<Rules, String>> = OnceLock::new();
    CELL.get_or_init(|| parse(RULES_CSV).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| ExplainError::BundledRules(e.clone()))
}

impl Rules {
    pub fn get(&self, code: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.code == code)
    }
}
