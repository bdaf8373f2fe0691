//! "Explain this error" on the facade: a pasted or fetched log, explained with the rules and,
//! for a saved host, its newest saved Setup probe (read through [`App::setup_saved_report`]).

use crate::app::setup::SetupError;
use crate::app::App;
use crate::explain::{explain, ExplainError, Explanation, HostInput};
use crate::remote::error::RemoteError;
use crate::setup::SetupOptions;

impl App {
    /// Explain `log`; with `host`, refined with that saved host's newest probe (a host without
    /// one is answered without host facts and says so). An unknown label is
    /// [`ExplainError::UnknownHost`]; nothing recognised is an empty answer.
    pub fn explain_log(&self, log: &str, host: Option<&str>) -> Result<Explanation, ExplainError> {
        let Some(label) = host else {
            return explain(log, None);
        };
        self.host_get(label).map_err(|e| match e {
            RemoteError::UnknownHost(_) => ExplainError::UnknownHost(label.to_string()),
            other => ExplainError::Remote(other),
        })?;
        let saved = self
            .setup_saved_report(label, &SetupOptions::default())
            .map_err(|e| match e {
                SetupError::Remote(r) => ExplainError::Remote(r),
                other => ExplainError::Probe(other.to_string()),
            })?;
        explain(
            log,
            Some(HostInput {
                label,
                probe: saved.as_ref().map(|(r, p)| (r, p.as_str())),
            }),
        )
    }
}
