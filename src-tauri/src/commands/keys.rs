//! Keys: SSH keys whose private half lives only in the OS keychain. Every call reaches the
//! keychain (a D-Bus or OS round trip), so each runs on the blocking pool.

use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::{KeyAlgorithm, KeyInfo};
use tauri::State;

use crate::commands::ops::blocking;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn key_list(state: State<'_, AppState>) -> CmdResult<Vec<KeyInfo>> {
    let app = state.shared()?;
    blocking(move || app.key_list().map_err(err)).await
}

#[tauri::command]
pub async fn key_new(
    state: State<'_, AppState>,
    label: String,
    algorithm: KeyAlgorithm,
    passphrase: Option<Secret>,
) -> CmdResult<KeyInfo> {
    let app = state.shared()?;
    blocking(move || {
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
    blocking(move || {
        app.key_import(&label, std::path::Path::new(&path), passphrase.as_ref())
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn key_delete(state: State<'_, AppState>, label: String) -> CmdResult<Vec<KeyInfo>> {
    let app = state.shared()?;
    blocking(move || app.key_delete(&label).map_err(err)).await
}

/// The answer to a `passphrase_required` prompt: unlock the key for this app session (held in
/// memory only); the UI then retries what it was doing.
#[tauri::command]
pub async fn key_unlock(
    state: State<'_, AppState>,
    label: String,
    passphrase: Secret,
) -> CmdResult<KeyInfo> {
    let app = state.shared()?;
    blocking(move || app.key_unlock(&label, &passphrase).map_err(err)).await
}

/// Forget unlocked keys (`label` none: all); how many were forgotten.
#[tauri::command]
pub async fn key_lock(state: State<'_, AppState>, label: Option<String>) -> CmdResult<usize> {
    state.app()?.key_lock(label.as_deref()).map_err(err)
}

/// The warned export of a private key to a new 0600 file. The consent is the user's own tick
/// in the UI, passed through; the core refuses without it.
#[tauri::command]
pub async fn key_export_private(
    state: State<'_, AppState>,
    label: String,
    path: String,
    acknowledged_risk: bool,
) -> CmdResult<String> {
    let app = state.shared()?;
    blocking(move || {
        app.key_export_private(&label, std::path::Path::new(&path), acknowledged_risk)
            .map(|p| p.display().to_string())
            .map_err(err)
    })
    .await
}
