//! Setup: probe, diagnose, fix and verify driver / CUDA / PyTorch on a saved host.

use gpurent_core::app::setup::{FixReport, HostReport, HostVerify};
use gpurent_core::infra::events::Progress;
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn setup_probe(
    state: State<'_, AppState>,
    label: String,
    on_progress: Channel<Progress>,
) -> CmdResult<HostReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.setup_probe(&label, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn setup_fix(
    state: State<'_, AppState>,
    label: String,
    code: Option<String>,
    on_progress: Channel<Progress>,
) -> CmdResult<FixReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.setup_fix(&label, code.as_deref(), &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn setup_verify(
    state: State<'_, AppState>,
    label: String,
    on_progress: Channel<Progress>,
) -> CmdResult<HostVerify> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.setup_verify(&label, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}
