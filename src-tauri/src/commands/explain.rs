//! Explain this error: a pasted or fetched log, optionally for a saved host (its saved probe).

use gpurent_core::explain::Explanation;
use tauri::State;

use crate::commands::ops::blocking;
use crate::edge::{err, CmdResult};
use crate::AppState;

#[tauri::command]
pub async fn explain_log(
    state: State<'_, AppState>,
    log: String,
    label: Option<String>,
) -> CmdResult<Explanation> {
    let app = state.shared()?;
    blocking(move || app.explain_log(&log, label.as_deref()).map_err(err)).await
}
