//! Start from a goal: the bundled recipes, the live offers a recipe can run on, the run (renting
//! first when asked; progress and the op id on `on_progress`, the report on `on_ready` once the
//! app answered, the tunnel held until the operation is cancelled), Open, Stop, and Whisper's
//! transcription of local audio files. Each handler:
//! state → one core call → map error (docs/recipes.md).

use std::path::PathBuf;

use gpurent_core::app::recipe::{
    RecipeOffersView, RecipeRunReport, RecipeTarget, TranscribeReport,
};
use gpurent_core::infra::events::Progress;
use gpurent_core::recipes::asr::TranscribeOptions;
use gpurent_core::recipes::Recipe;
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn recipe_list(state: State<'_, AppState>) -> CmdResult<Vec<Recipe>> {
    state.app()?.recipe_list().map_err(err)
}

/// The connected accounts' offers whose host runs one of the recipe's images, ranked for its job.
#[tauri::command]
pub async fn recipe_offers(
    state: State<'_, AppState>,
    name: String,
) -> CmdResult<RecipeOffersView> {
    let app = state.shared()?;
    blocking(move || app.recipe_offers(&name).map_err(err)).await
}

/// Run recipe `name` on `target` (a saved host, or an offer rented at the confirmed price): the
/// host's label on `on_host` once known (a rented one bills from then on), the report on
/// `on_ready`; a failure is the step's own error, the step in `data.step`.
#[tauri::command]
pub async fn recipe_run(
    state: State<'_, AppState>,
    name: String,
    target: RecipeTarget,
    on_progress: Channel<Progress>,
    on_host: Channel<String>,
    on_ready: Channel<RecipeRunReport>,
) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.recipe_run_op(
            &name,
            &target,
            &env,
            &mut |h| {
                let _ = on_host.send(h.to_string());
            },
            &mut |r| {
                let _ = on_ready.send(r.clone());
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// Open the running recipe's tunnel URL (`http://127.0.0.1:PORT/` only) in the browser.
#[tauri::command]
pub async fn recipe_open(state: State<'_, AppState>, url: String) -> CmdResult<()> {
    let app = state.shared()?;
    blocking(move || app.recipe_open(&url).map_err(err)).await
}

/// Stop the app recipe `name` started on host `label`; `true` when one ran.
#[tauri::command]
pub async fn recipe_stop(
    state: State<'_, AppState>,
    name: String,
    label: String,
) -> CmdResult<bool> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || app.recipe_stop(&name, &label, &env).map_err(err)).await
}

/// Transcribe local audio `files` with the Whisper recipe running on `label` (progress and the
/// op id on `on_progress`; `op_cancel` stops it): one row per file, transcripts written next to
/// each file or into `opts.out_dir`.
#[tauri::command]
pub async fn recipe_transcribe(
    state: State<'_, AppState>,
    label: String,
    files: Vec<PathBuf>,
    opts: TranscribeOptions,
    on_progress: Channel<Progress>,
) -> CmdResult<TranscribeReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.recipe_transcribe_op(&label, &files, &opts, &env, &sink(on_progress))
            .map_err(err)
    })
    .await
}
