//! Monitor: live telemetry of a saved host. Each watch is a registered operation (its op id comes
//! first on `on_progress`; `op_cancel` stops it); samples and the stream's news arrive on their
//! own channels. Several watches run at once, one per host.

use gpurent_core::infra::events::Progress;
use gpurent_core::monitor::stream::{Flow, TelemetryEvent};
use gpurent_core::monitor::watch::{WatchEvent, WatchSample};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// Watch `label` until cancelled (or an outcome reconnecting cannot fix: returned); an
/// `interval_ms` outside 200–60 000 is refused (`invalid_input`), as in the CLI.
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
        app.monitor_watch_op(
            &label,
            &env,
            interval_ms,
            &mut |ev| {
                let _ = match ev {
                    WatchEvent::Sample(s) => on_sample.send(s),
                    WatchEvent::Status(s) => on_status.send(s),
                };
                Flow::Continue
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}
