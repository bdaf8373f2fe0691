//! Settings: language and theme.

use gpurent_core::app::SettingsView;
use gpurent_core::infra::settings::Settings;
use tauri::State;

use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn settings_get(state: State<'_, AppState>) -> CmdResult<SettingsView> {
    Ok(state.app()?.settings_view())
}

#[tauri::command]
pub async fn settings_set(
    state: State<'_, AppState>,
    settings: Settings,
) -> CmdResult<SettingsView> {
    state.app()?.settings_set(&settings).map_err(err)
}
