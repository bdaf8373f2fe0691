//! Long operations: progress over a per-operation Channel, cancellation by op id.

use gpurent_core::infra::events::Progress;
use gpurent_core::selfcheck::SelfCheckReport;
use tauri::ipc::Channel;
use tauri::State;

use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// Forward core progress events to the UI's channel (a closed channel is not an error).
pub fn sink(channel: Channel<Progress>) -> impl Fn(Progress) + Send + Sync {
    move |event| {
        let _ = channel.send(event);
    }
}

#[tauri::command]
pub async fn selfcheck_run(
    state: State<'_, AppState>,
    on_progress: Channel<Progress>,
) -> CmdResult<SelfCheckReport> {
    let app = state.shared()?;
    blocking(move || app.self_check(&sink(on_progress)).map_err(err)).await
}

/// Run blocking core work off the async runtime's worker threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> CmdResult<T> + Send + 'static,
) -> CmdResult<T> {
    tauri::async_runtime::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| {
            Err(gpurent_core::infra::ipc::ErrorPayload::internal(
                e.to_string(),
            ))
        })
}

#[tauri::command]
pub async fn op_cancel(state: State<'_, AppState>, op_id: String) -> CmdResult<()> {
    state.app()?.cancel_op(&op_id).map_err(err)
}

/// Pause a running operation: a transfer keeps what arrived (resume it later); others cancel.
#[tauri::command]
pub async fn op_pause(state: State<'_, AppState>, op_id: String) -> CmdResult<()> {
    state.app()?.pause_op(&op_id).map_err(err)
}
