//! `gpurent release INSTANCE [--yes]`: terminate the machine; its disk is deleted.

use gpurent_core::app::App;
use gpurent_core::providers::ProviderError;

pub use crate::instance_action::ActionArgs;

pub fn run(app: &App, args: &ActionArgs) -> Result<(), ProviderError> {
    crate::instance_action::run(app, "release", args)
}
