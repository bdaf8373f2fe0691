//! Monitor: live telemetry of a saved host. Each watch is a registered operation (its op id comes
//! first on `on_progress`; `op_cancel` stops it); samples and the stream's news arrive on their
//! own channels. Several watches run at once, one per host.

use gpurent_core::app::monitor::WatchOptions;
use gpurent_core::infra::events::Progress;
use gpurent_core::monitor::stream::{Flow, TelemetryEvent};
use gpurent_core::monitor::watch::{WatchEvent, WatchSample};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// Watch `label` until cancelled (or an outcome reconnecting cannot fix: returned).
#[tauri::command]
pub async fn monitor_watch(
    state: State<'_, AppState>,
    label: String,
    interval_ms: Option<u64>,
    on_progress: Channel<Progress>,
    on_sample: Channel<WatchSample>,
    on_status: Channel<TelemetryEvent>,
) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        let mut opts = WatchOptions::default();
        if let Some(ms) = interval_ms {
            opts.stream.interval_ms = ms.clamp(200, 60_000);
        }
        let progress = sink(on_progress);
        app.run_op("monitor_watch", &progress, |token| {
            app.monitor_watch(
                &label,
                &env,
                None,
                &opts,
                &mut |ev| {
                    let _ = match ev {
                        WatchEvent::Sample(s) => on_sample.send(s),
                        WatchEvent::Status(s) => on_status.send(s),
                    };
                    Flow::Continue
                },
                token,
            )
        })
        .map_err(err)
    })
    .await
}
