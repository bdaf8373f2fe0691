//! Managed state: the core [`App`], or the reason it could not start (then every command returns
//! that reason and the UI shows it instead of a blank window).

use std::sync::Arc;

use gpurent_core::app::App;
use gpurent_core::infra::ipc::ErrorPayload;
use gpurent_core::CoreError;

#[derive(Debug)]
pub struct AppState(Result<Arc<App>, ErrorPayload>);

impl AppState {
    pub fn ready(app: App) -> Self {
        AppState(Ok(Arc::new(app)))
    }

    pub fn failed(e: &CoreError) -> Self {
        AppState(Err(crate::edge::to_payload(e)))
    }

    /// The core, or the startup error as an IPC payload.
    pub fn app(&self) -> Result<&App, ErrorPayload> {
        self.0.as_deref().map_err(Clone::clone)
    }

    /// A shared handle for work moved onto a blocking thread.
    pub fn shared(&self) -> Result<Arc<App>, ErrorPayload> {
        self.0.clone()
    }
}
