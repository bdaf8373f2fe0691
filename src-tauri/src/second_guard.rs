//! The app as a second guard: while the window is open, a tokio task runs one core call
//! ([`App::second_guard_tick`]) on the blocking pool every [`period`] and shows each new notice
//! as an OS notification. Every decision is the core's (tested there with a fixed clock); this
//! only schedules and delivers.

use std::sync::Arc;
use std::time::Duration;

use gpurent_core::app::login::SshEnv;
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::opnotice::{long_op_notice, op_notice_text, LONG_OP_MS};
use gpurent_core::second_guard::notice_text;
use tauri::{AppHandle, Runtime};
use tauri_plugin_notification::NotificationExt;

/// 30 s, like the guard on the machine. `GPURENT_SECOND_GUARD_PERIOD_S` (1–300) shortens it for
/// the E2E tests.
fn period() -> Duration {
    let s = std::env::var("GPURENT_SECOND_GUARD_PERIOD_S")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|s| (1..=300).contains(s))
        .unwrap_or(30);
    Duration::from_secs(s)
}

/// Register the core's op-end hook: an operation that ran long (a transfer, a setup fix or
/// verify, a rent, a model pull, an install, a run) and was not cancelled by the user becomes an
/// OS notification with its kind and outcome, in the app's language. The decision and the words
/// are the core's ([`long_op_notice`], [`op_notice_text`]).
pub fn notify_long_ops<R: Runtime>(handle: AppHandle<R>, core: &App) {
    core.on_op_end(Arc::new(move |ended, lang| {
        let Some(n) = long_op_notice(ended, LONG_OP_MS) else {
            return;
        };
        let (title, body) = op_notice_text(lang, &n);
        tracing::info!(op = %ended.op_id, kind = %ended.kind, outcome = %ended.outcome, "long step finished: notify");
        notify(&handle, "long step finished", title, body);
    }));
}

/// Show one OS notification; one that cannot be shown is logged (`what` says whose).
fn notify<R: Runtime>(handle: &AppHandle<R>, what: &str, title: String, body: String) {
    if let Err(e) = handle
        .notification()
        .builder()
        .title(title)
        .body(body)
        .show()
    {
        tracing::warn!("{what}: notification not shown: {e}");
    }
}

/// Start the watcher (once, from `setup`).
pub fn start<R: Runtime>(handle: AppHandle<R>, core: Arc<App>) {
    tauri::async_runtime::spawn(async move {
        let every = period();
        loop {
            tokio::time::sleep(every).await;
            let app = Arc::clone(&core);
            let tick = tauri::async_runtime::spawn_blocking(move || {
                let env = SshEnv::detect().map_err(|e| e.to_string())?;
                let lang = app.settings_view().effective_language;
                app.second_guard_tick(&env, &CancelToken::new())
                    .map(|r| (r, lang))
                    .map_err(|e| e.to_string())
            })
            .await;
            match tick {
                Ok(Ok((report, lang))) => {
                    for (host, code) in &report.unreadable {
                        tracing::info!(host = %host, code = %code, "second guard: guard not read");
                    }
                    for n in &report.notices {
                        let (title, body) = notice_text(lang, n);
                        tracing::info!(key = %n.key, "second guard: notify");
                        notify(&handle, "second guard", title, body);
                    }
                }
                Ok(Err(e)) => tracing::warn!("second guard tick failed: {e}"),
                Err(e) => tracing::warn!("second guard tick did not run: {e}"),
            }
        }
    });
}
