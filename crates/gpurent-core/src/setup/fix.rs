//! Which commands a fix runs, from a diagnosed report: the rule the CLI and the UI show before
//! asking, and the facade runs.

use crate::setup::error::SetupError;
use crate::setup::{FixKind, Report, Severity, Verdict};

/// The commands a fix runs. Without `code` (a `fixable` verdict only): the install plan, else the
/// first error's `run_here` fix. With `code`, that finding's fix (`run_here` or `optional`). The CLI and UI show exactly these
/// before asking.
pub fn fix_commands(report: &Report, code: Option<&str>) -> Result<Vec<String>, SetupError> {
    let runnable = |k: FixKind| matches!(k, FixKind::RunHere | FixKind::Optional);
    if let Some(code) = code {
        let f = report
            .findings
            .iter()
            .find(|f| f.diagnosis.code() == code)
            .ok_or_else(|| SetupError::NothingToRun(format!("no finding '{code}'")))?;
        return match &f.fix {
            Some(x) if runnable(x.kind) && !x.commands.is_empty() => Ok(x.commands.clone()),
            _ => Err(SetupError::NothingToRun(format!(
                "'{code}' has no fix gpurent can run"
            ))),
        };
    }
    match &report.verdict {
        Verdict::Fixable { .. } => {}
        Verdict::Ready => return Err(SetupError::NothingToRun("the host is ready".into())),
        Verdict::Blocked { codes, .. } => {
            return Err(SetupError::NothingToRun(format!(
                "blocked by {}: not something gpurent can fix here",
                codes.join(", ")
            )))
        }
    }
    if let Some(p) = &report.plan {
        return Ok(p.commands.clone());
    }
    report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .find_map(|f| {
            f.fix
                .as_ref()
                .filter(|x| x.kind == FixKind::RunHere && !x.commands.is_empty())
        })
        .map(|x| x.commands.clone())
        .ok_or_else(|| SetupError::NothingToRun("no fix gpurent can run here".into()))
}
