//! The release checklist: before a release, what would be lost (changed result folders, the
//! disks deleted, what stopping instead costs) and the environment recipe; saving the recipe, the
//! recipes saved so far, and one replayed on another machine.
//! Each handler: state → one core call → map error (docs/release.md). The release itself is
//! `instance_action` (commands/providers.rs) once the user confirmed.

use gpurent_core::app::release::{ReleaseChecklist, ReplayReport, SavedEnvRecipe};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::Progress;
use gpurent_core::release::EnvRecipe;
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
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

/// The environment recipes saved so far, newest first.
#[tauri::command]
pub async fn env_recipes(state: State<'_, AppState>) -> CmdResult<Vec<SavedEnvRecipe>> {
    let app = state.shared()?;
    blocking(move || app.env_recipes().map_err(err)).await
}

/// Replay saved recipe `name` on host `label` (its lines and the op id on `on_progress`;
/// `op_cancel` stops it).
#[tauri::command]
pub async fn env_replay(
    state: State<'_, AppState>,
    label: String,
    name: String,
    on_progress: Channel<Progress>,
) -> CmdResult<ReplayReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.env_recipe_replay_op(&label, &name, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}
