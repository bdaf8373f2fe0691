//! Monitor on the facade: live telemetry of a saved host with hints (`docs/monitor.md`).
//!
//! The key is the host's own from the keychain, or passed in (the CLI's `-i FILE`). Every
//! (re)connection goes through the one login helper ([`connect_saved`]).

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
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

impl App {
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
        let mut assembler = Assembler::new(label, opts.hint_window);
        stream::run(
            &mut |c| connect_saved(&host, env, key, c),
            &opts.stream,
            self.clock.as_ref(),
            &mut |ev| match assembler.push(ev) {
                Some(w) => on_event(w),
                None => Flow::Continue,
            },
            cancel,
        )
    }
}
