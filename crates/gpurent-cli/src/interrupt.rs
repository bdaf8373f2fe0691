//! Ctrl-C for every long subcommand, written once: the handler only sets a flag; a watcher thread
//! beside the work calls `on_interrupt` when the flag is up (until it answers `true`: handled),
//! and stops when the work returns. With [`Second::Exits`] a second Ctrl-C quits at once (130).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// What a second Ctrl-C does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Second {
    /// Nothing more: the first one's handling (a remote kill, say) must be allowed to finish.
    Waits,
    /// Quit at once with exit status 130.
    Exits,
}

/// Run `work`; on Ctrl-C call `on_interrupt` on the watcher thread until it returns `true`.
pub fn on_ctrl_c<T>(
    second: Second,
    on_interrupt: impl Fn() -> bool + Sync,
    work: impl FnOnce() -> T,
) -> T {
    let _ = ctrlc::set_handler(move || {
        if INTERRUPTED.swap(true, Ordering::SeqCst) && second == Second::Exits {
            std::process::exit(130);
        }
    });
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if INTERRUPTED.load(Ordering::SeqCst) && on_interrupt() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let out = work();
        done.store(true, Ordering::SeqCst);
        out
    })
}

/// Run `work`; Ctrl-C cancels `cancel` (the work sees it and returns; with [`Second::Exits`] a
/// second Ctrl-C quits at once).
pub fn cancel_on_ctrl_c<T>(
    second: Second,
    cancel: &gpurent_core::infra::cancel::CancelToken,
    work: impl FnOnce() -> T,
) -> T {
    on_ctrl_c(
        second,
        || {
            cancel.cancel();
            true
        },
        work,
    )
}
