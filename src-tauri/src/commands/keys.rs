//! Keys: SSH keys whose private half lives only in the OS keychain.

use gpurent_core::keys::{KeyAlgorithm, KeyInfo};
use gpurent_core::secret::Secret;
use tauri::State;

use crate::edge::{err, CmdResult};
use crate::AppState;

#[tauri::command]
pub async fn key_list(state: State<'_, AppState>) -> CmdResult<Vec<KeyInfo>> {
    state.app()?.key_list().map_err(err)
}

#[tauri::command]
pub async fn key_new(
    state: State<'_, AppState>,
    label: String,
    algorithm: KeyAlgorithm,
    passphrase: Option<Secret>,
) -> CmdResult<KeyInfo> {
    let app = state.shared()?;
    crate::commands::ops::blocking(move || {
        app.key_new(&label, algorithm, passphrase.as_ref())
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn key_import(
    state: State<'_, AppState>,
    label: String,
    path: String,
    passphrase: Option<Secret>,
) -> CmdResult<KeyInfo> {
    let app = state.shared()?;
    crate::commands::ops::blocking(move || {
        app.key_import(&label, std::path::Path::new(&path), passphrase.as_ref())
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn key_delete(state: State<'_, AppState>, label: String) -> CmdResult<Vec<KeyInfo>> {
    state.app()?.key_delete(&label).map_err(err)
}

/// The warned export of a private key to a new 0600 file (the UI asked first).
#[tauri::command]
pub async fn key_export_private(
    state: State<'_, AppState>,
    label: String,
    path: String,
) -> CmdResult<String> {
    state
        .app()?
        .key_export_private(&label, std::path::Path::new(&path), true)
        .map(|p| p.display().to_string())
        .map_err(err)
}
