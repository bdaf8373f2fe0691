//! `gpurent stop INSTANCE [--yes]`: GPU billing stops; Vast keeps the disk (and bills it), RunPod
//! wipes the container disk.

use gpurent_core::app::App;
use gpurent_core::providers::ProviderError;

pub use crate::instance_action::ActionArgs;

pub fn run(app: &App, args: &ActionArgs) -> Result<(), ProviderError> {
    crate::instance_action::run(app, "stop", args)
}
