//! gpurent's desktop shell. It holds no logic: it builds the core [`App`] at startup, and each
//! command (one file per domain under `commands/`) is state → one core call → error mapped at the
//! edge. Progress of long work flows over a per-operation `tauri::ipc::Channel`.

mod commands;
mod edge;
mod second_guard;
mod state;
mod webview_env;

use std::sync::Arc;

use gpurent_core::app::App;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::paths::Paths;

use state::AppState;

/// Start the app: resolve paths (`GPURENT_HOME` redirects them), start file logging, open the
/// core, then run the Tauri event loop.
pub fn run() {
    // First, while this is the only thread: the WebView's drawing path (no GPU device: WebKit's
    // CPU painting rather than OpenGL emulated in software).
    let compositing_off = webview_env::apply();
    let startup = Paths::resolve(None).and_then(|paths| {
        let guard = gpurent_core::infra::logging::init_file_logging(&paths, "gpurent-app")?;
        let app = App::open(
            paths,
            Arc::new(SystemClock),
            gpurent_core::infra::settings::os_locale(),
        )?;
        Ok((app, guard))
    });
    let (state, _log_guard) = match startup {
        Ok((app, guard)) => (AppState::ready(app), Some(guard)),
        Err(e) => (AppState::failed(&e), None),
    };
    tracing::info!(version = gpurent_core::VERSION, "gpurent app starting");
    if compositing_off {
        tracing::info!(
            "no GPU device: the WebView paints on the CPU ({}=1)",
            webview_env::VAR
        );
    }
    if let Ok(app) = state.shared() {
        commands::providers::spawn_reconcile(app);
    }

    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        // OS notifications, sent from Rust only (the second guard): no UI permission granted.
        .plugin(tauri_plugin_notification::init())
        .setup(|app| {
            use tauri::Manager;
            // The app as a second guard, while it runs (docs/billing.md).
            if let Ok(core) = app.state::<AppState>().shared() {
                // "A long step finished" (docs/billing.md): decided in the core where each
                // operation ends.
                second_guard::notify_long_ops(app.handle().clone(), &core);
                second_guard::start(app.handle().clone(), core);
            }
            Ok(())
        })
        .manage(state)
        .manage(commands::monitor::Feed::default())
        .invoke_handler(tauri::generate_handler![
            commands::catalog::catalog_list,
            commands::catalog::catalog_card,
            commands::settings::settings_get,
            commands::settings::settings_set,
            commands::ops::selfcheck_run,
            commands::ops::op_cancel,
            commands::ops::op_pause,
            commands::estimate::estimate_run,
            commands::estimate::kind_estimate,
            commands::estimate::kind_catalog,
            commands::estimate::estimate_defaults,
            commands::estimate::estimate_models,
            commands::estimate::estimate_quants,
            commands::estimate::local_fit,
            commands::estimate::prices_list,
            commands::estimate::price_set,
            commands::estimate::price_delete,
            commands::keys::key_list,
            commands::keys::key_new,
            commands::keys::key_import,
            commands::keys::key_delete,
            commands::keys::key_export_private,
            commands::keys::key_unlock,
            commands::keys::key_lock,
            commands::hosts::host_list,
            commands::hosts::host_preview,
            commands::hosts::host_add,
            commands::hosts::host_check,
            commands::hosts::host_repin,
            commands::hosts::host_ssh_config,
            commands::hosts::host_delete,
            commands::hosts::host_open_terminal,
            commands::hosts::host_open_vscode,
            commands::setup::setup_probe,
            commands::setup::setup_fix,
            commands::setup::setup_verify,
            commands::explain::explain_log,
            commands::files::files_ls,
            commands::files::files_mkdir,
            commands::files::files_rename,
            commands::files::files_delete,
            commands::files::files_scan,
            commands::files::files_put,
            commands::files::files_get,
            commands::files::files_transfers,
            commands::files::files_resume,
            commands::files::files_discard,
            commands::files::files_pick,
            commands::providers::provider_list,
            commands::providers::provider_add,
            commands::providers::provider_test,
            commands::providers::provider_remove,
            commands::providers::offers_list,
            commands::providers::instances_list,
            commands::providers::instance_money,
            commands::providers::instance_action,
            commands::providers::foreign_release,
            commands::providers::rent_options,
            commands::providers::rent,
            commands::monitor::monitor_watch,
            commands::monitor::monitor_feed,
            commands::run::ollama_serve,
            commands::run::ollama_install,
            commands::run::ollama_fit,
            commands::run::ollama_pull,
            commands::run::ollama_chat,
            commands::run::ollama_ps,
            commands::run::ollama_stop,
            commands::run::ollama_tunnel,
            commands::run::jupyter_open,
            commands::run::jupyter_stop,
            commands::run::launch_run,
            commands::run::launch_stop,
            commands::run::export_skypilot,
            commands::release::release_checklist,
            commands::release::release_save_recipe,
            commands::release::env_recipes,
            commands::release::env_replay,
            commands::billing::billing_view,
            commands::billing::budget_list,
            commands::billing::budget_set,
            commands::billing::budget_remove,
            commands::billing::host_rate_set,
            commands::billing::host_rate_stopped,
            commands::billing::host_rate_started,
            commands::billing::platform_rules,
            commands::billing::notices_recent,
            commands::guard::guard_view,
            commands::guard::guard_duration,
            commands::guard::guard_set,
            commands::guard::guard_status,
            commands::guard::guard_decisions,
            commands::guard::guard_snooze,
            commands::guard::guard_off,
            commands::recipe::recipe_list,
            commands::recipe::recipe_offers,
            commands::recipe::recipe_run,
            commands::recipe::recipe_open,
            commands::recipe::recipe_stop,
            commands::recipe::recipe_transcribe,
        ])
        .build(tauri::generate_context!());
    match result {
        Ok(app) => app.run(|handle, event| {
            if let tauri::RunEvent::Exit = event {
                // Keys unlocked in this session are wiped (zeroed) before the process ends.
                use tauri::Manager;
                if let Ok(core) = handle.state::<AppState>().app() {
                    let _ = core.key_lock(None);
                }
            }
        }),
        Err(e) => {
            tracing::error!("tauri stopped with an error: {e}");
            eprintln!("gpurent could not start its window: {e}");
            std::process::exit(1);
        }
    }
}
