//! `gpurent stop INSTANCE [--yes]`: GPU billing stops, the disk is kept (and billed).

use gpurent_core::app::App;
use gpurent_core::providers::ProviderError;

pub use crate::instance_action::ActionArgs;

pub fn run(app: &App, args: &ActionArgs) -> Result<(), ProviderError> {
    crate::instance_action::run(app, "stop", args)
}
