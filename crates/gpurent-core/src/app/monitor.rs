//! Monitor on the facade: live telemetry of a saved host with hints (`docs/monitor.md`).
//!
//! The key is the host's own from the keychain, or passed in (the CLI's `-i FILE`). Every
//! (re)connection goes through the one login helper ([`connect_saved`]).

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::infra::events::ProgressSink;
use crate::monitor::stream::{self, Flow, StreamOptions};
use crate::monitor::watch::{Assembler, WatchEvent, HINT_WINDOW};
use crate::remote::error::RemoteError;

/// How to watch.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub stream: StreamOptions,
    /// Samples the hints look back over.
    pub hint_window: usize,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            stream: StreamOptions::default(),
            hint_window: HINT_WINDOW,
        }
    }
}

/// How often a streaming watch reads its saved host again (deleted or released: the watch ends).
pub const HOST_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// The sampling interval a watch accepts (ms).
pub const INTERVAL_MS: std::ops::RangeInclusive<u64> = 200..=60_000;

impl WatchOptions {
    /// The default options with the sampling interval `interval_ms` (`None`: the default). The
    /// one rule for the CLI and the desktop: outside [`INTERVAL_MS`] is refused
    /// (`invalid_input`), never silently changed.
    pub fn with_interval(interval_ms: Option<u64>) -> Result<WatchOptions, CoreError> {
        let mut opts = WatchOptions::default();
        if let Some(ms) = interval_ms {
            if !INTERVAL_MS.contains(&ms) {
                return Err(CoreError::invalid(
                    "interval_ms",
                    format!(
                        "between {} and {} ms",
                        INTERVAL_MS.start(),
                        INTERVAL_MS.end()
                    ),
                ));
            }
            opts.stream.interval_ms = ms;
        }
        Ok(opts)
    }
}

impl App {
    /// [`App::monitor_watch`] with the host's own key as the registered operation
    /// `monitor_watch` (cancelled with `op_cancel`); the interval as [`WatchOptions::with_interval`].
    pub fn monitor_watch_op(
        &self,
        label: &str,
        env: &SshEnv,
        interval_ms: Option<u64>,
        on_event: &mut dyn FnMut(WatchEvent) -> Flow,
        progress: &dyn ProgressSink,
    ) -> Result<(), RemoteError> {
        let opts = WatchOptions::with_interval(interval_ms)?;
        self.run_op("monitor_watch", progress, |token| {
            self.monitor_watch(label, env, None, &opts, on_event, token)
        })
    }

    /// Stream samples (GPUs, host, apps, hints) of saved host `label` to `on_event` until `cancel`,
    /// a [`Flow::Stop`], or an outcome reconnecting cannot fix (a changed host key, a refused
    /// login: returned). Lost connections are reported as status events and reconnected.
    pub fn monitor_watch(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        opts: &WatchOptions,
        on_event: &mut dyn FnMut(WatchEvent) -> Flow,
        cancel: &CancelToken,
    ) -> Result<(), RemoteError> {
        let host = self.host_get(label)?;
        let loaded;
        let key = match key {
            Some(k) => k,
            None => {
                loaded = self.host_key_for(label, None)?;
                &loaded
            }
        };
        host.still_exists()?;
        let mut assembler = Assembler::new(label, opts.hint_window);
        // The saved host is read again before every reconnect and every few seconds while it
        // streams: a host deleted or released while watched ends the watch with that error
        // (`unknown_host`, `host_released`) instead of reconnecting to it forever.
        let gone: std::cell::RefCell<Option<RemoteError>> = std::cell::RefCell::new(None);
        let still_there = || -> Result<crate::remote::Host, RemoteError> {
            let h = self.host_get(label)?;
            h.still_exists()?;
            Ok(h)
        };
        // On the App's clock (a test steps it past HOST_RECHECK instead of waiting 5 s).
        let mut checked = self.clock.monotonic();
        let r = stream::run(
            &mut |c| match still_there() {
                Ok(h) => connect_saved(&h, env, key, c),
                Err(e) => Err(e),
            },
            &opts.stream,
            self.clock.as_ref(),
            &mut |ev| {
                let now = self.clock.monotonic();
                if now.saturating_sub(checked) >= HOST_RECHECK {
                    checked = now;
                    if let Err(e) = still_there() {
                        *gone.borrow_mut() = Some(e);
                        return Flow::Stop;
                    }
                }
                match assembler.push(ev) {
                    Some(w) => on_event(w),
                    None => Flow::Continue,
                }
            },
            cancel,
        );
        match gone.into_inner() {
            Some(e) => Err(e),
            None => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One rule for both edges: the bounds are accepted, outside them is refused (the desktop
    /// clamped before, the CLI refused).
    #[test]
    fn the_interval_is_refused_outside_its_range_not_clamped() {
        assert_eq!(
            WatchOptions::with_interval(None)
                .expect("default")
                .stream
                .interval_ms,
            StreamOptions::default().interval_ms
        );
        for ms in [200, 60_000] {
            let o = WatchOptions::with_interval(Some(ms)).expect("bound");
            assert_eq!(o.stream.interval_ms, ms);
        }
        for ms in [0, 199, 60_001] {
            let e = WatchOptions::with_interval(Some(ms)).expect_err("out of range");
            assert_eq!(crate::infra::ipc::Coded::code(&e), "invalid_input");
        }
    }
}
