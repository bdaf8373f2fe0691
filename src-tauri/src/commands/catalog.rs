//! Pick a card: the GPU catalog.

use gpurent_core::app::CardDetail;
use gpurent_core::catalog::{Card, CardFilter};
use tauri::State;

use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn catalog_list(state: State<'_, AppState>, filter: CardFilter) -> CmdResult<Vec<Card>> {
    state.app()?.catalog_list(&filter).map_err(err)
}

#[tauri::command]
pub async fn catalog_card(state: State<'_, AppState>, id: String) -> CmdResult<CardDetail> {
    state.app()?.catalog_card(&id).map_err(err)
}
