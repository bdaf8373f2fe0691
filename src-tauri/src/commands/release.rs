//! The release checklist: before a release, what would be lost (changed result folders, the
//! disks deleted, what stopping instead costs) and the environment recipe; saving the recipe.
//! Each handler: state → one core call → map error (docs/release.md). The release itself is
//! `instance_action` (commands/providers.rs) once the user confirmed.

use gpurent_core::app::release::ReleaseChecklist;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::release::EnvRecipe;
use tauri::State;

use crate::commands::ops::blocking;
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// The checklist of a rented machine (gpurent id or provider id) or a saved host; `folders` are
/// the result folders the user chose on the machine. Reads the machine over SSH (one exec).
#[tauri::command]
pub async fn release_checklist(
    state: State<'_, AppState>,
    instance: String,
    folders: Vec<String>,
) -> CmdResult<ReleaseChecklist> {
    let app = state.shared()?;
    let env = ssh_env()?;
    blocking(move || {
        app.release_checklist(&instance, &folders, &env, None, &CancelToken::new())
            .map_err(err)
    })
    .await
}

/// Save the checklist's recipe as a replayable script under the data dir; returns its path.
#[tauri::command]
pub async fn release_save_recipe(
    state: State<'_, AppState>,
    recipe: EnvRecipe,
) -> CmdResult<String> {
    let app = state.shared()?;
    blocking(move || app.release_save_recipe(&recipe).map_err(err)).await
}
