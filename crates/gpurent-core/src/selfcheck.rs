//! The app's health check ("Settings → Check gpurent"): can we write our directories, is the
//! database sound, do settings load, is the bundled data intact. It is the first long operation on
//! the progress/cancel plumbing: one `Step` event per check, cancellable between checks.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::catalog::Catalog;
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::infra::events::ProgressSink;
use crate::infra::ipc::Coded;
use crate::infra::paths::Paths;
use crate::infra::settings::Settings;
use crate::infra::store::Store;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CheckResult {
    /// Stable key: `directories`, `database`, `settings`, `catalog`.
    pub step: String,
    pub ok: bool,
    /// Error code when not ok.
    pub code: Option<String>,
    /// Technical detail (paths, counts).
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SelfCheckReport {
    pub checks: Vec<CheckResult>,
    pub all_ok: bool,
}

pub const STEPS: [&str; 4] = ["directories", "database", "settings", "catalog"];

fn writable(paths: &Paths) -> Result<String, CoreError> {
    for dir in [&paths.config, &paths.data, &paths.logs, &paths.cache] {
        std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
        let probe = dir.join(".gpurent-write-test");
        std::fs::write(&probe, b"ok").map_err(|e| CoreError::io(&probe, e))?;
        std::fs::remove_file(&probe).map_err(|e| CoreError::io(&probe, e))?;
    }
    Ok(format!("{}", paths.data.display()))
}

fn database(paths: &Paths) -> Result<String, CoreError> {
    let store = Store::open(&paths.database())?;
    match store.check_integrity()? {
        Ok(()) => Ok(format!("schema {}", store.schema_version()?)),
        Err(v) => Err(CoreError::stored(
            "database",
            format!("integrity check: {v}"),
        )),
    }
}

fn settings(paths: &Paths) -> Result<String, CoreError> {
    match Settings::load(&paths.settings()) {
        (s, None) => Ok(format!("{:?} / {:?}", s.language, s.theme)),
        (_, Some(e)) => Err(e),
    }
}

fn catalog() -> Result<String, CoreError> {
    Ok(format!("{} cards", Catalog::bundled()?.cards().len()))
}

/// Run every check, reporting a `Step` before each. Returns `Err(Cancelled)` if cancelled.
pub fn run(
    paths: &Paths,
    progress: &dyn ProgressSink,
    cancel: &CancelToken,
) -> Result<SelfCheckReport, CoreError> {
    let mut checks = Vec::new();
    let report = crate::infra::events::steps(progress, Some(STEPS.len() as u32));
    for (i, step) in STEPS.iter().enumerate() {
        cancel.check()?;
        report(step, i as u32);
        let outcome = match *step {
            "directories" => writable(paths),
            "database" => database(paths),
            "settings" => settings(paths),
            _ => catalog(),
        };
        checks.push(match outcome {
            Ok(detail) => CheckResult {
                step: step.to_string(),
                ok: true,
                code: None,
                detail,
            },
            Err(e) => CheckResult {
                step: step.to_string(),
                ok: false,
                code: Some(e.code().to_string()),
                detail: e.detail().unwrap_or_else(|| e.to_string()),
            },
        });
    }
    let all_ok = checks.iter().all(|c| c.ok);
    Ok(SelfCheckReport { checks, all_ok })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::events::Progress;
    use std::sync::Mutex;

    #[test]
    fn healthy_home_passes_with_one_step_event_per_check() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = Paths::under(tmp.path());
        let events = Mutex::new(Vec::new());
        let sink = |e: Progress| events.lock().expect("lock").push(e);
        let report = run(&paths, &sink, &CancelToken::new()).expect("run");
        assert!(report.all_ok, "{report:?}");
        assert_eq!(report.checks.len(), 4);
        assert_eq!(report.checks[3].detail, "29 cards");
        let steps: Vec<String> = events
            .lock()
            .expect("lock")
            .iter()
            .filter_map(|e| match e {
                Progress::Step { step, .. } => Some(step.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(steps, STEPS.map(String::from).to_vec());
    }

    #[test]
    fn damaged_settings_fail_their_check_only() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = Paths::under(tmp.path());
        paths.ensure().expect("ensure");
        std::fs::write(paths.settings(), "{oops").expect("write");
        let report = run(
            &paths,
            &crate::infra::events::NoProgress,
            &CancelToken::new(),
        )
        .expect("run");
        assert!(!report.all_ok);
        let s = &report.checks[2];
        assert_eq!((s.step.as_str(), s.ok), ("settings", false));
        assert_eq!(s.code.as_deref(), Some("settings_damaged"));
        assert!(report.checks[0].ok && report.checks[1].ok && report.checks[3].ok);
    }

    #[test]
    fn cancelled_before_start_runs_nothing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = Paths::under(tmp.path().join("never"));
        let token = CancelToken::new();
        token.cancel();
        assert!(matches!(
            run(&paths, &crate::infra::events::NoProgress, &token),
            Err(CoreError::Cancelled)
        ));
        assert!(!tmp.path().join("never").exists());
    }
}
