//! Files: the remote file pane, transfers (upload, download, pause, resume, discard) with
//! progress, and the OS file dialogs (opened from Rust: the page gets no dialog permission).

use std::path::PathBuf;

use gpurent_core::infra::events::Progress;
use gpurent_core::transfer::{
    RemoteListing, ScanReport, TransferOptions, TransferReport, TransferSummary,
};
use tauri::ipc::Channel;
use tauri::{AppHandle, State, WebviewWindow};
use tauri_plugin_dialog::DialogExt;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn files_ls(
    state: State<'_, AppState>,
    label: String,
    dir: String,
) -> CmdResult<RemoteListing> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.remote_ls(&label, &dir, &env).map_err(err)).await
}

#[tauri::command]
pub async fn files_mkdir(state: State<'_, AppState>, label: String, path: String) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.remote_mkdir(&label, &path, &env).map_err(err)).await
}

#[tauri::command]
pub async fn files_rename(
    state: State<'_, AppState>,
    label: String,
    from: String,
    to: String,
) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.remote_rename(&label, &from, &to, &env).map_err(err)).await
}

#[tauri::command]
pub async fn files_delete(
    state: State<'_, AppState>,
    label: String,
    path: String,
    recursive: bool,
) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.remote_delete(&label, &path, recursive, &env)
            .map_err(err)
    })
    .await
}

/// What a drop would upload (counts, sizes, and things like .git or node_modules to skip).
#[tauri::command]
pub async fn files_scan(
    state: State<'_, AppState>,
    paths: Vec<PathBuf>,
    excludes: Vec<String>,
) -> CmdResult<ScanReport> {
    let app = state.shared()?;
    blocking(move || app.transfer_scan_local(&paths, &excludes).map_err(err)).await
}

#[tauri::command]
pub async fn files_put(
    state: State<'_, AppState>,
    label: String,
    locals: Vec<PathBuf>,
    remote_dir: String,
    opts: TransferOptions,
    on_progress: Channel<Progress>,
) -> CmdResult<TransferReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.transfer_put(
            &label,
            &locals,
            &remote_dir,
            &opts,
            &env,
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn files_get(
    state: State<'_, AppState>,
    label: String,
    remotes: Vec<String>,
    local_dir: PathBuf,
    opts: TransferOptions,
    on_progress: Channel<Progress>,
) -> CmdResult<TransferReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.transfer_get(
            &label,
            &remotes,
            &local_dir,
            &opts,
            &env,
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn files_transfers(
    state: State<'_, AppState>,
    label: Option<String>,
) -> CmdResult<Vec<TransferSummary>> {
    state.app()?.transfer_list(label.as_deref()).map_err(err)
}

#[tauri::command]
pub async fn files_resume(
    state: State<'_, AppState>,
    id: i64,
    on_progress: Channel<Progress>,
) -> CmdResult<TransferReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.transfer_resume(id, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn files_discard(state: State<'_, AppState>, id: i64) -> CmdResult<TransferSummary> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.transfer_discard(id, &env).map_err(err)).await
}

/// What the OS file dialog should pick.
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    /// Files to upload (several).
    Files,
    /// One folder to upload.
    Folder,
    /// The local folder downloads go to.
    DownloadDir,
    /// One private key file to import (the dialog opens in `~/.ssh` when there is one).
    KeyFile,
}

/// Open the OS dialog over the window; the chosen paths, or none when it was closed.
#[tauri::command]
pub async fn files_pick(
    app: AppHandle,
    window: WebviewWindow,
    pick: Pick,
    title: String,
) -> CmdResult<Vec<PathBuf>> {
    blocking(move || {
        let d = app.dialog().file().set_title(title).set_parent(&window);
        let chosen = match pick {
            Pick::Files => d.blocking_pick_files().unwrap_or_default(),
            Pick::Folder | Pick::DownloadDir => d.blocking_pick_folder().into_iter().collect(),
            Pick::KeyFile => {
                let ssh_dir =
                    gpurent_core::infra::paths::expand_user(std::path::Path::new("~/.ssh"));
                let d = if ssh_dir.is_dir() {
                    d.set_directory(ssh_dir)
                } else {
                    d
                };
                d.blocking_pick_file().into_iter().collect()
            }
        };
        Ok(chosen
            .into_iter()
            .filter_map(|p| p.into_path().ok())
            .collect())
    })
    .await
}
