//! Pick a card: job estimates, the model catalog, the local GPU and the user's prices.

use gpurent_core::estimate::kinds::{KindCatalog, KindEstimate, KindJob};
use gpurent_core::estimate::local::LocalFitReport;
use gpurent_core::estimate::{Estimate, Job, ModelSpec, Offer, QuantFormat};
use tauri::State;

use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn estimate_run(state: State<'_, AppState>, job: Job) -> CmdResult<Estimate> {
    state.app()?.estimate(&job).map_err(err)
}

/// A job beyond LLMs (image, video, LoRA, speech, 3DGS, rendering, simulation).
#[tauri::command]
pub async fn kind_estimate(state: State<'_, AppState>, job: KindJob) -> CmdResult<KindEstimate> {
    state.app()?.kind_estimate(&job).map_err(err)
}

/// The sourced figures of those jobs (models and settings to choose).
#[tauri::command]
pub async fn kind_catalog(state: State<'_, AppState>) -> CmdResult<KindCatalog> {
    state.app()?.kind_catalog().map_err(err)
}

/// A job with every default filled in (the UI edits it; defaults live in Rust only).
#[tauri::command]
pub async fn estimate_defaults() -> CmdResult<Job> {
    Ok(Job::default())
}

#[tauri::command]
pub async fn estimate_models(state: State<'_, AppState>) -> CmdResult<Vec<ModelSpec>> {
    state.app()?.models().map_err(err)
}

#[tauri::command]
pub async fn estimate_quants(state: State<'_, AppState>) -> CmdResult<Vec<QuantFormat>> {
    state.app()?.quant_formats().map_err(err)
}

/// The job on this computer's own GPUs (the first row of the ranking).
#[tauri::command]
pub async fn local_fit(state: State<'_, AppState>, job: Job) -> CmdResult<LocalFitReport> {
    // NVML (and nvidia-smi as its fallback) can take seconds: the blocking pool.
    let app = state.shared()?;
    crate::commands::ops::blocking(move || app.local_fit(&job).map_err(err)).await
}

#[tauri::command]
pub async fn prices_list(state: State<'_, AppState>) -> CmdResult<Vec<Offer>> {
    state.app()?.prices().map_err(err)
}

#[tauri::command]
pub async fn price_set(state: State<'_, AppState>, offer: Offer) -> CmdResult<Vec<Offer>> {
    state.app()?.price_set(&offer).map_err(err)
}

#[tauri::command]
pub async fn price_delete(state: State<'_, AppState>, card_id: String) -> CmdResult<Vec<Offer>> {
    state.app()?.price_delete(&card_id).map_err(err)
}
