//! Run on a saved host: Ollama (serve, pull with progress, a short answer, ps, stop, the local
//! tunnel), Jupyter (open through a tunnel and the browser, stop), a multi-GPU launch with its
//! per-rank log, and the SkyPilot export. Long work is a registered operation (op id first on
//! `on_progress`, stopped with `op_cancel`); a tunnel lives as long as its operation.

use gpurent_core::app::ollama::OllamaInstallReport;
use gpurent_core::infra::events::Progress;
use gpurent_core::multigpu::{skypilot_yaml, LaunchReport, LaunchSpec, RankLine};
use gpurent_core::ollama::fit::ModelFit;
use gpurent_core::ollama::install::{InstallOptions, InstallProgress};
use gpurent_core::ollama::{Loaded, PullProgress};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

/// Start Ollama on the host's `127.0.0.1:port` (on the GPUs named by UUID) unless it answers;
/// its version once `/api/version` answered, where it is bound and whether it is gpurent's.
#[tauri::command]
pub async fn ollama_serve(
    state: State<'_, AppState>,
    label: String,
    port: u16,
    gpus: Vec<String>,
    on_progress: Channel<Progress>,
) -> CmdResult<gpurent_core::ollama::Served> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.ollama_serve_op(&label, &env, port, &gpus, &sink(on_progress))
            .map_err(err)
    })
    .await
}

/// Install Ollama where it is missing (the archive base URL from `GPURENT_OLLAMA_DOWNLOAD_URL`
/// when set), then serve it on the chosen GPUs; each stage on `on_install`.
#[tauri::command]
pub async fn ollama_install(
    state: State<'_, AppState>,
    label: String,
    port: u16,
    gpus: Vec<String>,
    on_progress: Channel<Progress>,
    on_install: Channel<InstallProgress>,
) -> CmdResult<OllamaInstallReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.ollama_install_op(
            &label,
            &env,
            port,
            &gpus,
            &InstallOptions::from_env(),
            &mut |p| {
                let _ = on_install.send(p.clone());
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// The estimator's memory check of Ollama tag `model` on the chosen GPUs (none: all).
#[tauri::command]
pub async fn ollama_fit(
    state: State<'_, AppState>,
    label: String,
    model: String,
    gpus: Vec<String>,
) -> CmdResult<ModelFit> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        let token = gpurent_core::infra::cancel::CancelToken::new();
        app.ollama_fit(&label, &env, None, &model, &gpus, None, &token)
            .map_err(err)
    })
    .await
}

/// The memory check (on `on_fit`; a model that does not fit is refused unless `force`), then
/// pull `model` on the chosen GPUs, each line of `/api/pull`'s stream on `on_pull`. A cancelled
/// pull resumes next time.
#[allow(clippy::too_many_arguments)]
#[tauri::command]
pub async fn ollama_pull(
    state: State<'_, AppState>,
    label: String,
    port: u16,
    model: String,
    gpus: Vec<String>,
    force: bool,
    on_progress: Channel<Progress>,
    on_fit: Channel<ModelFit>,
    on_pull: Channel<PullProgress>,
) -> CmdResult<ModelFit> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.ollama_pull_op(
            &label,
            &env,
            port,
            &model,
            &gpus,
            force,
            &mut |f| {
                let _ = on_fit.send(f.clone());
            },
            &mut |p| {
                let _ = on_pull.send(p.clone());
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// A short answer of `model` to `prompt`; the pieces as they come on `on_piece`.
#[tauri::command]
pub async fn ollama_chat(
    state: State<'_, AppState>,
    label: String,
    port: u16,
    model: String,
    prompt: String,
    on_progress: Channel<Progress>,
    on_piece: Channel<String>,
) -> CmdResult<String> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.ollama_chat_op(
            &label,
            &env,
            port,
            &model,
            &prompt,
            &mut |s| {
                let _ = on_piece.send(s.to_string());
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// The models loaded in memory; `None` when nothing answers on the port.
#[tauri::command]
pub async fn ollama_ps(
    state: State<'_, AppState>,
    label: String,
    port: u16,
) -> CmdResult<Option<Vec<Loaded>>> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        let token = gpurent_core::infra::cancel::CancelToken::new();
        app.ollama_ps(&label, &env, None, port, &token).map_err(err)
    })
    .await
}

/// Stop the server gpurent started; `true` when one was running.
#[tauri::command]
pub async fn ollama_stop(state: State<'_, AppState>, label: String) -> CmdResult<bool> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        let token = gpurent_core::infra::cancel::CancelToken::new();
        app.ollama_stop(&label, &env, None, &token).map_err(err)
    })
    .await
}

/// Forward this machine's `127.0.0.1:local_port` to Ollama's port on the host until the operation
/// is cancelled; the port it listens on is sent on `on_open` once it does.
#[tauri::command]
pub async fn ollama_tunnel(
    state: State<'_, AppState>,
    label: String,
    local_port: u16,
    port: u16,
    on_progress: Channel<Progress>,
    on_open: Channel<u16>,
) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.ollama_tunnel_op(
            &label,
            &env,
            local_port,
            port,
            &mut |p| {
                let _ = on_open.send(p);
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// Start (or find) Jupyter Server on the host's `127.0.0.1:port` with gpurent's token, forward
/// `127.0.0.1:local_port` here to it, send the URL with the token on `on_open` and open the
/// browser at it (when asked); the tunnel lives until the operation is cancelled.
#[allow(clippy::too_many_arguments)]
#[tauri::command]
pub async fn jupyter_open(
    state: State<'_, AppState>,
    label: String,
    python: String,
    port: u16,
    local_port: u16,
    open_browser: bool,
    on_progress: Channel<Progress>,
    on_open: Channel<String>,
) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.jupyter_open_op(
            &label,
            &env,
            &python,
            port,
            local_port,
            open_browser,
            &mut |url| {
                let _ = on_open.send(url);
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// Stop the Jupyter server gpurent started (and forget its token); `true` when one was running.
#[tauri::command]
pub async fn jupyter_stop(state: State<'_, AppState>, label: String) -> CmdResult<bool> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        let token = gpurent_core::infra::cancel::CancelToken::new();
        app.jupyter_stop(&label, &env, None, &token).map_err(err)
    })
    .await
}

/// Run `spec` with torchrun on the host, each line with its rank on `on_line`; cancelling the
/// operation kills every rank.
#[tauri::command]
pub async fn launch_run(
    state: State<'_, AppState>,
    label: String,
    spec: LaunchSpec,
    on_progress: Channel<Progress>,
    on_line: Channel<RankLine>,
) -> CmdResult<LaunchReport> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.launch_run_op(
            &label,
            &env,
            &spec,
            &mut |l| {
                let _ = on_line.send(l);
            },
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// Kill a launch left running on the host (every rank).
#[tauri::command]
pub async fn launch_stop(state: State<'_, AppState>, label: String) -> CmdResult<()> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        let token = gpurent_core::infra::cancel::CancelToken::new();
        app.launch_stop(&label, &env, None, &token).map_err(err)
    })
    .await
}

/// A SkyPilot task YAML for more than one machine (gpurent itself does not orchestrate clusters).
#[tauri::command]
pub async fn export_skypilot(
    name: String,
    accelerators: String,
    nodes: u32,
    setup: String,
    script: Vec<String>,
) -> CmdResult<String> {
    skypilot_yaml(&name, &accelerators, nodes, &setup, &script).map_err(err)
}
