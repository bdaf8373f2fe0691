//! The idle guard on the machine (docs/guard.md): set it from the Billing step's Guard panel, read
//! its status and decisions, snooze it, switch it off. Each handler: state → one core call → map
//! error; every SSH call on the blocking pool. A locked key answers `passphrase_required` and the
//! UI unlocks and retries (ui/js/unlock.js).

use gpurent_core::app::guard::{
    DurationPreview, GuardRequest, GuardSetReport, GuardStatus, GuardView,
};
use gpurent_core::guard::Decision;
use gpurent_core::infra::events::Progress;
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// What gpurent set last on this host and which actions it can have (no SSH).
#[tauri::command]
pub async fn guard_view(state: State<'_, AppState>, label: String) -> CmdResult<GuardView> {
    let app = state.shared()?;
    blocking(move || app.guard_view(&label).map_err(err)).await
}

/// A duration the user typed (`90m`, `2.5h`) in seconds and the time it means (no SSH).
#[tauri::command]
pub async fn guard_duration(
    state: State<'_, AppState>,
    text: String,
) -> CmdResult<DurationPreview> {
    state.app()?.guard_duration(&text).map_err(err)
}

/// Install (or update) the guard and start it; a cancellable op (its id in `Started`).
#[tauri::command]
pub async fn guard_set(
    state: State<'_, AppState>,
    label: String,
    req: GuardRequest,
    on_progress: Channel<Progress>,
) -> CmdResult<GuardSetReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.guard_set(&label, &env, &req, &sink(on_progress))
            .map_err(err)
    })
    .await
}

/// Each signal's last reading, idle since, deadline, snooze and the last decision (one SSH read).
#[tauri::command]
pub async fn guard_status(state: State<'_, AppState>, label: String) -> CmdResult<GuardStatus> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.guard_status(&label, &env).map_err(err)).await
}

/// Decisions fetched earlier, newest first (no SSH).
#[tauri::command]
pub async fn guard_decisions(
    state: State<'_, AppState>,
    label: String,
    limit: u32,
) -> CmdResult<Vec<Decision>> {
    let app = state.shared()?;
    blocking(move || app.guard_decisions(&label, limit.min(500)).map_err(err)).await
}

/// Hold the guard back for `duration` (`30m`); returns when it ends (host clock, unix s).
#[tauri::command]
pub async fn guard_snooze(
    state: State<'_, AppState>,
    label: String,
    duration: String,
) -> CmdResult<i64> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.guard_snooze(&label, &env, &duration).map_err(err)).await
}

/// Stop the guard and remove its reboot start (its log stays on the host).
#[tauri::command]
pub async fn guard_off(state: State<'_, AppState>, label: String) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.guard_off(&label, &env).map_err(err)).await
}
