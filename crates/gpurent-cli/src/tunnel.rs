//! Holding a local port forward open until Ctrl-C (`gpurent ollama HOST tunnel`,
//! `gpurent jupyter HOST`): Ctrl-C cancels the core's cancel
//! token ([`crate::interrupt`]), and the forward ends on either that or a dead connection.

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::remote::forward::Forward;
use gpurent_core::remote::RemoteError;

use crate::interrupt::{on_ctrl_c, Second};

/// Block until Ctrl-C, `cancel`, or the forward's connection ends.
pub fn hold_until_ctrl_c(fwd: Forward, cancel: &CancelToken) -> Result<(), RemoteError> {
    on_ctrl_c(
        Second::Waits,
        || {
            cancel.cancel();
            true
        },
        || {
            let r = fwd.wait(cancel);
            cancel.cancel();
            r
        },
    )
}
