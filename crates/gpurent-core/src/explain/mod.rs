//! Explain an error: paste a log (or let gpurent read a failed job's), get a ranked list of
//! matches from `data/error-rules.csv` — a stable code, what it means, the lines that matched, the
//! likely cause and the fix — refined with a saved host's probe when one is given ("this is an
//! RTX 5090 (sm_120); the installed torch has kernels up to sm_90"), and the Setup fix gpurent can
//! run when the probe's diagnosis has one. Pure functions: the facade (`app/explain.rs`) reads the
//! saved probe.
//!
//! Nothing recognised is a normal answer (empty `matches`, the most suspicious lines and, with a
//! host, the environment report a bug report needs), never an error.

pub mod refine;
pub mod rules;
pub mod scan;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::setup::{FixKind, FixNote, Report, SmiState};
use crate::Coded;

/// How sure a match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "MatchConfidence")]
pub enum Confidence {
    /// The rule's own message text is in the log (or a weaker one with a supporting line).
    High,
    /// Only a weaker, more general message.
    Medium,
}

/// A line of the log that shows a match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct EvidenceLine {
    /// 1-based line number in the text given.
    pub line: u32,
    /// The line without colours, credentials masked, cut to 300 characters.
    pub text: String,
}

/// The likely cause on this host, with the facts the sentence needs (translated by `key`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "key", rename_all = "snake_case")]
pub enum HostCause {
    /// The GPU's architecture against the installed torch's kernels (`torch_has_it`: the probed
    /// torch does run it, so the failing process used another environment or an extension).
    ArchMissing {
        gpu: Option<String>,
        sm: Option<String>,
        torch: Option<String>,
        torch_max_sm: Option<String>,
        torch_has_it: bool,
    },
    /// The driver runs CUDA `driver_cuda`; the program needs `needs_cuda`.
    DriverTooOld {
        driver: Option<String>,
        driver_cuda: Option<String>,
        needs_cuda: Option<String>,
        min_driver: Option<String>,
        in_container: bool,
    },
    /// `/dev/shm` as the probe saw it.
    ShmSize { shm_mib: u64, in_container: bool },
    /// GPU memory: the card's total and what other processes held when probed.
    GpuMemory {
        gpu: Option<String>,
        total_mib: Option<u64>,
        tried: Option<String>,
        others_mib: u64,
        processes: Vec<String>,
    },
    /// Host RAM.
    HostMemory {
        total_mib: u64,
        available_mib: Option<u64>,
    },
    /// The fullest disk the probe saw.
    DiskFree {
        path: String,
        available_mib: u64,
        total_mib: u64,
    },
    /// The probed torch build (`cuda` none: a CPU build).
    TorchBuild { torch: String, cuda: Option<String> },
    /// GPUs the probe saw, and how nvidia-smi answered.
    GpusVisible { count: u32, smi_state: SmiState },
    /// How nvidia-smi answered (driver faults).
    DriverState {
        smi_state: SmiState,
        driver: Option<String>,
        kernel_module: Option<String>,
        in_container: bool,
    },
    /// The log says where the app listens.
    ListensOn { address: String, port: u16 },
}

/// Why it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Cause {
    /// English fallback (the UI translates by the match's code and `host.key`).
    pub text: String,
    /// What the host's facts (or the log's own details) say.
    pub host: Option<HostCause>,
    /// Host facts that would sharpen the answer and are not known (no host given, or the probe
    /// lacks them): `gpu`, `compute_cap`, `torch`, `arch_list`, `driver`, `driver_cuda`, `shm`, ...
    pub needs: Vec<String>,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExplainFix {
    pub kind: FixKind,
    /// The Setup finding whose fix gpurent can run on this host (`gpurent doctor fix --code`,
    /// the Setup step's fix button); `None` when the fix is manual.
    pub setup_code: Option<String>,
    /// Exact commands (the Setup fix's, or the manual ones from the rules).
    pub commands: Vec<String>,
    pub notes: Vec<FixNote>,
    /// English fallback of the manual steps (the UI translates by the match's code).
    pub steps: String,
}

/// One recognised error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExplainMatch {
    /// Stable snake_case code (added, never renamed).
    pub code: String,
    /// English fallback title.
    pub title: String,
    /// English fallback: what it means in plain words.
    pub meaning: String,
    pub confidence: Confidence,
    /// The lines that matched (a few, in log order).
    pub evidence: Vec<EvidenceLine>,
    pub cause: Cause,
    pub fix: ExplainFix,
    /// This error is most likely a consequence of that (also matched) one, ranked before it.
    pub consequence_of: Option<String>,
    /// The rule's message and fix are backed by its sources (`false`: not verified).
    pub verified: bool,
    pub sources: Vec<String>,
}

/// The saved host the answer used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ExplainHost {
    pub label: String,
    /// The saved probe read; `None` when the host has none yet (run Setup's check).
    pub probe_path: Option<String>,
    /// A `collect_env`-like report from the probe (credentials redacted), for a bug report.
    pub environment: Option<String>,
}

/// The answer (`ErrorExplanation` in TypeScript: the estimator has an `Explanation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(rename = "ErrorExplanation")]
pub struct Explanation {
    /// Root cause first; empty when nothing is recognised.
    pub matches: Vec<ExplainMatch>,
    /// When nothing is recognised: the lines that look most like the error.
    pub suspicious: Vec<EvidenceLine>,
    pub host: Option<ExplainHost>,
    /// Lines read.
    pub lines: u32,
}

/// A saved host as the explainer sees it.
#[derive(Debug, Clone, Copy)]
pub struct HostInput<'a> {
    pub label: &'a str,
    /// The newest saved probe, diagnosed, and its path.
    pub probe: Option<(&'a Report, &'a str)>,
}

/// Real failures only (nothing recognised is an empty answer).
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The bundled rules table does not parse (a broken build).
    #[error("the bundled error rules are damaged: {0}")]
    BundledRules(String),
    /// `--host` names no saved host.
    #[error("no saved host named '{0}'")]
    UnknownHost(String),
    /// The log file could not be read.
    #[error("could not read the log {path}: {reason}")]
    ReadLog { path: String, reason: String },
    /// The host's saved probe could not be read or diagnosed.
    #[error("the host's saved probe could not be used: {0}")]
    Probe(String),
    /// The saved hosts could not be read (database, files).
    #[error(transparent)]
    Remote(#[from] crate::remote::error::RemoteError),
}

impl Coded for ExplainError {
    fn code(&self) -> &'static str {
        match self {
            ExplainError::BundledRules(_) => "bundled_data_damaged",
            ExplainError::UnknownHost(_) => "unknown_host",
            ExplainError::ReadLog { .. } => "explain_log_unreadable",
            ExplainError::Probe(_) => "explain_probe_unreadable",
            ExplainError::Remote(e) => e.code(),
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            ExplainError::BundledRules(d) => Some(d.clone()),
            ExplainError::UnknownHost(l) => Some(l.clone()),
            ExplainError::ReadLog { path, reason } => Some(format!("{path}: {reason}")),
            ExplainError::Probe(d) => Some(d.clone()),
            ExplainError::Remote(e) => e.detail(),
        }
    }

    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            ExplainError::Remote(e) => e.data(),
            _ => None,
        }
    }
}

/// At most this many suspicious lines when nothing matched.
const SUSPICIOUS_MAX: usize = 5;

/// Explain a log with the bundled rules.
pub fn explain(log: &str, host: Option<HostInput<'_>>) -> Result<Explanation, ExplainError> {
    explain_with(rules::bundled()?, log, host)
}

/// Explain a log with these rules.
pub fn explain_with(
    rules: &rules::Rules,
    log: &str,
    host: Option<HostInput<'_>>,
) -> Result<Explanation, ExplainError> {
    let lines = scan::read(log, rules);
    let hits = scan::hits(&lines, rules);
    let present: Vec<String> = hits.iter().map(|h| h.rule.code.clone()).collect();
    let consequences: Vec<Option<String>> = hits
        .iter()
        .map(|h| {
            h.rule
                .follows_from
                .iter()
                .find(|c| present.contains(c))
                .cloned()
        })
        .collect();
    let mut ranked: Vec<(Option<String>, scan::Hit<'_>)> =
        consequences.into_iter().zip(hits).collect();
    // Root causes first: not a consequence, then the more fundamental layer, then log order.
    ranked.sort_by_key(|(c, h)| (c.is_some(), h.rule.layer, h.first_line));
    let report = host.and_then(|h| h.probe).map(|(r, _)| r);
    let matches = ranked
        .into_iter()
        .map(|(consequence_of, hit)| {
            let (cause, fix) = refine::refine(&hit, report);
            ExplainMatch {
                code: hit.rule.code.clone(),
                title: hit.rule.title.clone(),
                meaning: hit.rule.meaning.clone(),
                confidence: hit.confidence,
                evidence: hit.evidence,
                cause,
                fix,
                consequence_of,
                verified: hit.rule.verified,
                sources: hit.rule.sources.clone(),
            }
        })
        .collect::<Vec<_>>();
    let suspicious = if matches.is_empty() {
        scan::most_suspicious(&lines, SUSPICIOUS_MAX)
    } else {
        Vec::new()
    };
    Ok(Explanation {
        matches,
        suspicious,
        host: host.map(|h| ExplainHost {
            label: h.label.to_string(),
            probe_path: h.probe.map(|(_, p)| p.to_string()),
            environment: h.probe.map(|(r, _)| refine::environment(&r.facts)),
        }),
        lines: lines.len() as u32,
    })
}
