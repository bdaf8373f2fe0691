//! Progress events for long work. Core functions that take time accept a [`ProgressSink`] and a
//! [`crate::infra::cancel::CancelToken`]; the Tauri shell forwards events over a per-operation `Channel`,
//! the CLI prints them (a bar on a TTY, JSON lines otherwise).
//!
//! Values are cumulative and carry their unit in the field name; a total that is not known yet is
//! `None`, never a guess.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One progress report. Tagged by `kind` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Progress {
    /// The operation began. `op_id` is the id to cancel it with.
    Started { op_id: String },
    /// A named step began (`step` is a stable key the UI translates). `index` is 0-based.
    Step {
        step: String,
        index: u32,
        total_steps: Option<u32>,
    },
    /// Bytes moved so far (cumulative) out of an optional total.
    Bytes {
        done_bytes: u64,
        total_bytes: Option<u64>,
    },
    /// Generic work units done so far (cumulative) out of an optional total.
    Units {
        done_units: u64,
        total_units: Option<u64>,
    },
    /// One line of output worth showing in a log pane (remote output, a finding).
    Log { line: String },
    /// The operation finished (successfully or not: the command's result says which).
    Finished,
}

/// Receives progress events. Implemented for closures.
pub trait ProgressSink: Send + Sync {
    fn emit(&self, event: Progress);
}

impl<F: Fn(Progress) + Send + Sync> ProgressSink for F {
    fn emit(&self, event: Progress) {
        self(event)
    }
}

/// A reporter of named steps out of `total_steps`: `steps(progress, Some(3))("connect", 0)` emits
/// `Progress::Step { step: "connect", index: 0, total_steps: Some(3) }`.
pub fn steps(progress: &dyn ProgressSink, total_steps: Option<u32>) -> impl Fn(&str, u32) + '_ {
    move |step, index| {
        progress.emit(Progress::Step {
            step: step.to_string(),
            index,
            total_steps,
        })
    }
}

/// A sink that drops everything (for callers that don't watch).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn emit(&self, _event: Progress) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_with_units_in_names() {
        let e = Progress::Bytes {
            done_bytes: 10,
            total_bytes: None,
        };
        assert_eq!(
            serde_json::to_value(&e).expect("json"),
            serde_json::json!({"kind": "bytes", "done_bytes": 10, "total_bytes": null})
        );
        let back: Progress =
            serde_json::from_str(r#"{"kind":"step","step":"db","index":1,"total_steps":3}"#)
                .expect("parse");
        assert_eq!(
            back,
            Progress::Step {
                step: "db".into(),
                index: 1,
                total_steps: Some(3)
            }
        );
    }

    #[test]
    fn closures_are_sinks() {
        let seen = std::sync::Mutex::new(Vec::new());
        let sink = |e: Progress| seen.lock().expect("lock").push(e);
        sink.emit(Progress::Finished);
        assert_eq!(seen.lock().expect("lock").as_slice(), &[Progress::Finished]);
    }
}
