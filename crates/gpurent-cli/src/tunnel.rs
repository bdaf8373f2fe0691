//! Holding a local port forward open until Ctrl-C (`gpurent ollama HOST tunnel`,
//! `gpurent jupyter HOST`): the handler sets a flag, a watcher turns it into the core's cancel
//! token, and the forward ends on either that or a dead connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gpurent_core::cancel::CancelToken;
use gpurent_core::remote::forward::Forward;
use gpurent_core::remote::RemoteError;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Block until Ctrl-C, `cancel`, or the forward's connection ends.
pub fn hold_until_ctrl_c(fwd: Forward, cancel: &CancelToken) -> Result<(), RemoteError> {
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    std::thread::scope(|s| {
        s.spawn(|| {
            while !INTERRUPTED.load(Ordering::SeqCst) && !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(100));
            }
            cancel.cancel();
        });
        let r = fwd.wait(cancel);
        cancel.cancel();
        r
    })
}
