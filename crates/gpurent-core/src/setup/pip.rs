//! pip's output -> cumulative [`Progress::Bytes`] for the fix runner, and how a run ended.
//! Reads "Downloading URL (781.0 MB)" announcements, rich progress lines ("340.2/781.0 MB"),
//! old-style bars ("|████ | 100.0 MB 5.2 MB/s"), `\r`-separated updates, "Successfully
//! installed", and classifies failures (network, disk full, no matching wheel, ...).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::events::Progress;

fn re(s: &str) -> Regex {
    Regex::new(s).unwrap_or_else(|e| panic!("bad built-in regex {s}: {e}"))
}

static DOWNLOADING: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*Downloading\s+\S+\s+\(([\d.]+)\s*(B|kB|KB|MB|GB)\)"));
static RICH: LazyLock<Regex> = LazyLock::new(|| re(r"([\d.]+)/([\d.]+)\s*(B|kB|KB|MB|GB)\b"));
static OLD_BAR: LazyLock<Regex> = LazyLock::new(|| re(r"\|[^|]*\|\s*([\d.]+)\s*(B|kB|KB|MB|GB)\b"));

/// Why a pip run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PipFailure {
    /// Timeouts, resets, unreachable index: re-running resumes.
    Network,
    /// `[Errno 28] No space left on device`.
    DiskFull,
    /// No wheel for this Python / platform / version on that index.
    NoMatchingDistribution,
    HashMismatch,
    /// PEP 668: install into a venv instead.
    ExternallyManaged,
    Other,
}

/// How the run ended, as far as its output says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PipOutcome {
    Installed,
    /// Everything was already there.
    AlreadySatisfied,
    Failed {
        failure: PipFailure,
        line: String,
    },
    Unknown,
}

fn bytes(v: &str, unit: &str) -> u64 {
    let x: f64 = v.parse().unwrap_or(0.0);
    let m = match unit {
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        _ => 1.0,
    };
    (x * m).round() as u64
}

/// Feed pip's output line by line; bytes are cumulative over every file of the run.
#[derive(Debug, Default, Clone)]
pub struct PipProgress {
    finished: u64,
    current_total: u64,
    current_done: u64,
    last_emitted: Option<u64>,
    files: u32,
    satisfied: bool,
    installed: bool,
    failure: Option<(PipFailure, String)>,
}

impl PipProgress {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes downloaded so far.
    pub fn done_bytes(&self) -> u64 {
        self.finished + self.current_done
    }

    /// Files whose download started.
    pub fn files(&self) -> u32 {
        self.files
    }

    /// Take one line of output (it may hold several `\r`-separated updates); returns a progress
    /// event when the byte count moved.
    pub fn feed(&mut self, line: &str) -> Option<Progress> {
        for part in line.split('\r') {
            self.feed_part(part);
        }
        let done = self.done_bytes();
        if self.last_emitted != Some(done) && (self.files > 0) {
            self.last_emitted = Some(done);
            return Some(Progress::Bytes {
                done_bytes: done,
                total_bytes: None,
            });
        }
        None
    }

    fn feed_part(&mut self, l: &str) {
        if let Some(c) = DOWNLOADING.captures(l) {
            self.finished += self.current_total.max(self.current_done);
            self.current_total = bytes(&c[1], &c[2]);
            self.current_done = 0;
            self.files += 1;
            return;
        }
        if self.files > 0 {
            if let Some(c) = RICH.captures(l) {
                self.current_done = bytes(&c[1], &c[3]);
                return;
            }
            if let Some(c) = OLD_BAR.captures(l) {
                self.current_done = bytes(&c[1], &c[2]);
                return;
            }
        }
        let t = l.trim();
        if t.starts_with("Successfully installed") {
            self.finished += self.current_total.max(self.current_done);
            self.current_total = 0;
            self.current_done = 0;
            self.installed = true;
        } else if t.starts_with("Requirement already satisfied") {
            self.satisfied = true;
        }
        if let Some(kind) = classify(t) {
            // A later, more specific line refines a generic "ERROR: Exception:".
            match &self.failure {
                Some((PipFailure::Other, _)) | None => self.failure = Some((kind, t.to_string())),
                _ => {}
            }
        }
    }

    pub fn outcome(&self) -> PipOutcome {
        match (&self.failure, self.installed, self.satisfied) {
            (Some((failure, line)), _, _) => PipOutcome::Failed {
                failure: *failure,
                line: line.clone(),
            },
            (None, true, _) => PipOutcome::Installed,
            (None, false, true) => PipOutcome::AlreadySatisfied,
            _ => PipOutcome::Unknown,
        }
    }
}

fn classify(t: &str) -> Option<PipFailure> {
    let has = |s: &str| t.contains(s);
    if has("No space left on device") || has("[Errno 28]") {
        Some(PipFailure::DiskFull)
    } else if has("ReadTimeoutError")
        || has("ConnectTimeoutError")
        || has("Read timed out")
        || has("Connection reset")
        || has("NewConnectionError")
        || has("Max retries exceeded")
        || has("IncompleteRead")
        || has("ProtocolError")
        || has("Temporary failure in name resolution")
    {
        Some(PipFailure::Network)
    } else if has("No matching distribution found")
        || has("Could not find a version that satisfies")
    {
        Some(PipFailure::NoMatchingDistribution)
    } else if has("DO NOT MATCH THE HASHES") {
        Some(PipFailure::HashMismatch)
    } else if has("externally-managed-environment") {
        Some(PipFailure::ExternallyManaged)
    } else if t.starts_with("ERROR:") || t.starts_with("error:") {
        Some(PipFailure::Other)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pip 24 installing torch from download.pytorch.org with `--progress-bar on` over a non-TTY:
    /// rich redraws arrive as `\r`-separated updates on one line.
    const PIP24: &str = "Looking in indexes: https://download.pytorch.org/whl/cu121
Collecting torch==2.3.1
  Downloading https://download.pytorch.org/whl/cu121/torch-2.3.1%2Bcu121-cp311-cp311-linux_x86_64.whl (781.0 MB)
     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 0.0/781.0 MB ? eta -:--:--\r     ━━━━━━━━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━━━━━ 312.4/781.0 MB 61.2 MB/s eta 0:00:08\r     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 781.0/781.0 MB 58.7 MB/s eta 0:00:00
Collecting filelock (from torch==2.3.1)
  Using cached filelock-3.13.1-py3-none-any.whl (11 kB)
Collecting nvidia-cudnn-cu12==8.9.2.26 (from torch==2.3.1)
  Downloading https://download.pytorch.org/whl/cu121/nvidia_cudnn_cu12-8.9.2.26-py3-none-manylinux1_x86_64.whl (731.7 MB)
     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 731.7/731.7 MB 48.3 MB/s eta 0:00:00
Collecting torchvision==0.18.1
  Downloading https://download.pytorch.org/whl/cu121/torchvision-0.18.1%2Bcu121-cp311-cp311-linux_x86_64.whl (7.0 MB)
     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 7.0/7.0 MB 60.1 MB/s eta 0:00:00
Installing collected packages: filelock, nvidia-cudnn-cu12, torch, torchvision
Successfully installed filelock-3.13.1 nvidia-cudnn-cu12-8.9.2.26 torch-2.3.1+cu121 torchvision-0.18.1+cu121
";

    fn run(text: &str) -> (PipProgress, Vec<u64>) {
        let mut p = PipProgress::new();
        let seen = text
            .lines()
            .filter_map(|l| match p.feed(l) {
                Some(Progress::Bytes { done_bytes, .. }) => Some(done_bytes),
                _ => None,
            })
            .collect();
        (p, seen)
    }

    #[test]
    fn cumulative_bytes_over_every_file_and_success() {
        let (p, seen) = run(PIP24);
        assert_eq!(p.files(), 3);
        assert_eq!(p.done_bytes(), 781_000_000 + 731_700_000 + 7_000_000);
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "cumulative and rising: {seen:?}"
        );
        assert_eq!(p.outcome(), PipOutcome::Installed);
    }

    #[test]
    fn network_failure_midway_keeps_the_bytes_and_names_the_cause() {
        let cut = "Collecting torch==2.3.1
  Downloading https://download.pytorch.org/whl/cu121/torch-2.3.1%2Bcu121-cp311-cp311-linux_x86_64.whl (781.0 MB)
     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 312.4/781.0 MB 61.2 MB/s eta 0:00:08
ERROR: Exception:
Traceback (most recent call last):
  File \"/usr/lib/python3/dist-packages/pip/_vendor/urllib3/response.py\", line 438, in _error_catcher
pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='download.pytorch.org', port=443): Read timed out.
";
        let (p, _) = run(cut);
        assert_eq!(p.done_bytes(), 312_400_000);
        match p.outcome() {
            PipOutcome::Failed { failure, line } => {
                assert_eq!(failure, PipFailure::Network);
                assert!(line.contains("Read timed out"));
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn other_failures_and_old_bars() {
        let (p, _) = run("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n");
        assert!(matches!(
            p.outcome(),
            PipOutcome::Failed {
                failure: PipFailure::DiskFull,
                ..
            }
        ));
        let (p, _) = run("ERROR: Could not find a version that satisfies the requirement torch==2.3.1 (from versions: 2.5.0)\nERROR: No matching distribution found for torch==2.3.1\n");
        assert!(matches!(
            p.outcome(),
            PipOutcome::Failed {
                failure: PipFailure::NoMatchingDistribution,
                ..
            }
        ));
        let (p, _) = run("error: externally-managed-environment\n");
        assert!(matches!(
            p.outcome(),
            PipOutcome::Failed {
                failure: PipFailure::ExternallyManaged,
                ..
            }
        ));
        let (p, _) = run("Requirement already satisfied: torch==2.3.1 in /usr/local/lib/python3.11/dist-packages\n");
        assert_eq!(p.outcome(), PipOutcome::AlreadySatisfied);
        // pip < 22: the old bar shows the bytes so far.
        let (p, seen) = run("  Downloading torch-1.13.1-cp310-cp310-manylinux1_x86_64.whl (887.5 MB)\n     |█████████▌                      | 262.1 MB 9.8 MB/s eta 0:01:04\n");
        assert_eq!(p.done_bytes(), 262_100_000);
        assert_eq!(seen.last(), Some(&262_100_000));
    }
}
