//! Hosts: paste any platform's SSH command, pin the host key, install our key, check, ssh config.

use gpurent_core::app::hosts::{HostAddOutcome, PasteAdd};
use gpurent_core::app::hosts::{Opened, SshConfigResult};
use gpurent_core::hostparse::ParsedHostSummary;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::Progress;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::hosts::{Host, HostCheck};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn host_list(state: State<'_, AppState>) -> CmdResult<Vec<Host>> {
    state.app()?.host_list().map_err(err)
}

/// What a paste says. The text may hold a password: it arrives in a `Secret`.
#[tauri::command]
pub async fn host_preview(
    state: State<'_, AppState>,
    text: Secret,
) -> CmdResult<ParsedHostSummary> {
    state.app()?.host_paste_preview(text.expose()).map_err(err)
}

#[tauri::command]
pub async fn host_add(
    state: State<'_, AppState>,
    req: PasteAdd,
    on_progress: Channel<Progress>,
) -> CmdResult<HostAddOutcome> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.host_add_pasted(&req, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn host_check(
    state: State<'_, AppState>,
    label: String,
    on_progress: Channel<Progress>,
) -> CmdResult<HostCheck> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.host_check(&label, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn host_repin(
    state: State<'_, AppState>,
    label: String,
    fingerprint: String,
) -> CmdResult<Host> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.host_repin(&label, &fingerprint, &env, &CancelToken::new())
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn host_ssh_config(
    state: State<'_, AppState>,
    label: String,
) -> CmdResult<SshConfigResult> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.host_ssh_config(&label, &env).map_err(err)).await
}

#[tauri::command]
pub async fn host_delete(state: State<'_, AppState>, label: String) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.host_delete(&label, &env).map_err(err)).await
}

/// Loads the key into ssh-agent (`ssh-add`) and starts a terminal: processes, so the blocking
/// pool.
#[tauri::command]
pub async fn host_open_terminal(state: State<'_, AppState>, label: String) -> CmdResult<Opened> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.host_open_terminal(&label, &env).map_err(err)).await
}

#[tauri::command]
pub async fn host_open_vscode(state: State<'_, AppState>, label: String) -> CmdResult<Opened> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.host_open_vscode(&label, &env).map_err(err)).await
}
