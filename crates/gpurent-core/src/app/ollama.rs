//! Ollama on the facade: a saved host's Ollama, started and reached over its SSH connection
//! (`docs/monitor.md`, section Ollama). Each call connects through the one login helper.

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::events::ProgressSink;
use crate::ollama::fit::ModelFit;
use crate::ollama::install::{InstallOptions, InstallProgress, InstallStage};
use crate::ollama::{self, Loaded, OllamaError, PullProgress};
use crate::remote::connect::Connection;
use crate::remote::forward::{forward_local, Forward};

/// Wait this long for a freshly started server to answer `/api/version`.
const SERVE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What [`App::ollama_install`] found or did, once the server answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
pub struct OllamaInstallReport {
    /// The `ollama` binary on the host, by absolute path.
    pub path: String,
    /// `true`: Ollama was there already (or answered already) and nothing was installed.
    pub already_installed: bool,
    /// `amd64` / `arm64` when gpurent installed it.
    pub arch: Option<String>,
    /// Where gpurent extracted it (`/usr/local` or `~/.local`, expanded).
    pub prefix: Option<String>,
    /// The archive it came from.
    pub url: Option<String>,
    /// The version `/api/version` answered.
    pub version: String,
    /// The host's port it answers on.
    pub port: u16,
    /// The address it listens on: `127.0.0.1`, or `0.0.0.0` / `::` (open to the network: a
    /// template's own Ollama that answered already).
    pub bound: String,
    /// `true`: the server gpurent started (its pid file's process, on 127.0.0.1 only).
    pub ours: bool,
}

impl App {
    fn ollama_connect(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<Connection, OllamaError> {
        let host = self.host_get(label)?;
        let conn = match key {
            Some(k) => connect_saved(&host, env, k, cancel)?,
            None => connect_saved(&host, env, &self.host_key_for(label, None)?, cancel)?,
        };
        Ok(conn)
    }

    /// Start Ollama on `127.0.0.1:port` of the host unless it answers already (on the GPUs whose
    /// UUIDs are given); the version, once `/api/version` answered.
    pub fn ollama_serve(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        port: u16,
        gpus: &[String],
        cancel: &CancelToken,
    ) -> Result<String, OllamaError> {
        Ok(self
            .ollama_serve_report(label, env, key, port, gpus, cancel)?
            .version)
    }

    /// [`App::ollama_serve`], saying where the server is bound and whether it is gpurent's (a
    /// template's own Ollama on the port is not).
    pub fn ollama_serve_report(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        port: u16,
        gpus: &[String],
        cancel: &CancelToken,
    ) -> Result<ollama::Served, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        ollama::serve_report(&conn, port, gpus, SERVE_WAIT, cancel)
    }

    /// Install Ollama where it is missing (the documented manual install; see
    /// `ollama::install`), then start `ollama serve` on `127.0.0.1:port` (on the GPUs whose UUIDs
    /// are given) unless it answers already. Succeeds only once `/api/version` answered. An
    /// Ollama that is already there is reported (`already_installed`), not reinstalled.
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_install(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        port: u16,
        gpus: &[String],
        opts: &InstallOptions,
        on_progress: &mut dyn FnMut(&InstallProgress),
        cancel: &CancelToken,
    ) -> Result<OllamaInstallReport, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        if let Some(version) = ollama::version(&conn, port)? {
            let path = ollama::locate(&conn, cancel)?.unwrap_or_default();
            let (bound, ours) = ollama::listeners(&conn, port, cancel)?;
            return Ok(OllamaInstallReport {
                path,
                already_installed: true,
                arch: None,
                prefix: None,
                url: None,
                version,
                port,
                ours: ours && bound == "127.0.0.1",
                bound,
            });
        }
        let installed = ollama::install::install(&conn, opts, on_progress, cancel)?;
        on_progress(&InstallProgress {
            stage: InstallStage::Starting,
            url: installed.url.clone(),
            downloaded: None,
            total: None,
        });
        let served = ollama::serve_report(&conn, port, gpus, SERVE_WAIT, cancel)?;
        Ok(OllamaInstallReport {
            path: installed.path,
            already_installed: installed.already,
            arch: installed.arch,
            prefix: installed.prefix,
            url: installed.url,
            version: served.version,
            port,
            bound: served.bound,
            ours: served.ours,
        })
    }

    /// The estimator's memory check of Ollama tag `model` against the host's GPUs (the chosen
    /// UUIDs, or all) at `context` tokens (None: Ollama's default for those GPUs): fits / tight
    /// / does not fit with the numbers, or unknown (a tag not in gpurent's table, no GPU info).
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_fit(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        model: &str,
        gpus: &[String],
        context: Option<u32>,
        cancel: &CancelToken,
    ) -> Result<ModelFit, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        ollama::fit::check(&conn, model, gpus, context, cancel)
    }

    /// The memory check first (as [`App::ollama_fit`], Ollama's default context): a model that
    /// does not fit the chosen GPUs is refused with `model_does_not_fit` unless `force`. Then
    /// serve if needed (on `gpus`) and pull `model` with progress. The check's answer is
    /// returned (and handed to `on_fit` before the pull starts).
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_pull(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        port: u16,
        model: &str,
        gpus: &[String],
        force: bool,
        on_fit: &mut dyn FnMut(&ModelFit),
        on_progress: &mut dyn FnMut(&PullProgress),
        cancel: &CancelToken,
    ) -> Result<ModelFit, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        let fit = ollama::fit::check(&conn, model, gpus, None, cancel)?;
        on_fit(&fit);
        if let (false, Some(refused)) = (force, fit.refusal()) {
            return Err(refused);
        }
        ollama::serve(&conn, port, gpus, SERVE_WAIT, cancel)?;
        ollama::pull(&conn, port, model, on_progress, cancel)?;
        Ok(fit)
    }

    /// A short answer from `model` to `prompt` (streamed to `on_piece`) from the server Start
    /// started: none answering is `ollama_not_running` (a chat does not start one on every GPU).
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_run(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        port: u16,
        model: &str,
        prompt: &str,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<String, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        if ollama::version(&conn, port)?.is_none() {
            return Err(OllamaError::NotRunning { port });
        }
        ollama::generate(&conn, port, model, prompt, on_piece, cancel)
    }

    /// The models loaded in memory; `None` when nothing answers on the port.
    pub fn ollama_ps(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        port: u16,
        cancel: &CancelToken,
    ) -> Result<Option<Vec<Loaded>>, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        if ollama::version(&conn, port)?.is_none() {
            return Ok(None);
        }
        Ok(Some(ollama::ps(&conn, port)?))
    }

    /// Stop the server gpurent started; `true` when one was running.
    pub fn ollama_stop(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<bool, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        ollama::stop(&conn, cancel)
    }

    /// Forward `127.0.0.1:local_port` here (0: any free port) to Ollama's port on the host, over a
    /// connection of its own. Runs until the returned forward is stopped or dropped.
    pub fn ollama_tunnel(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        local_port: u16,
        port: u16,
        cancel: &CancelToken,
    ) -> Result<Forward, OllamaError> {
        let conn = self.ollama_connect(label, env, key, cancel)?;
        Ok(forward_local(conn, local_port, port)?)
    }
}

/// The desktop's calls: each one registered operation ([`App::run_op`]: its op id first on
/// `progress`, cancelled with `op_cancel`), with the host's own key.
impl App {
    /// [`App::ollama_serve_report`] as the operation `ollama_serve`: the version, where it is
    /// bound and whether it is gpurent's (the desktop says so as the CLI does).
    pub fn ollama_serve_op(
        &self,
        label: &str,
        env: &SshEnv,
        port: u16,
        gpus: &[String],
        progress: &dyn ProgressSink,
    ) -> Result<ollama::Served, OllamaError> {
        self.run_op("ollama_serve", progress, |token| {
            self.ollama_serve_report(label, env, None, port, gpus, token)
        })
    }

    /// [`App::ollama_install`] as the operation `ollama_install`.
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_install_op(
        &self,
        label: &str,
        env: &SshEnv,
        port: u16,
        gpus: &[String],
        opts: &InstallOptions,
        on_install: &mut dyn FnMut(&InstallProgress),
        progress: &dyn ProgressSink,
    ) -> Result<OllamaInstallReport, OllamaError> {
        self.run_op("ollama_install", progress, |token| {
            self.ollama_install(label, env, None, port, gpus, opts, on_install, token)
        })
    }

    /// [`App::ollama_pull`] as the operation `ollama_pull`.
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_pull_op(
        &self,
        label: &str,
        env: &SshEnv,
        port: u16,
        model: &str,
        gpus: &[String],
        force: bool,
        on_fit: &mut dyn FnMut(&ModelFit),
        on_pull: &mut dyn FnMut(&PullProgress),
        progress: &dyn ProgressSink,
    ) -> Result<ModelFit, OllamaError> {
        self.run_op("ollama_pull", progress, |token| {
            self.ollama_pull(
                label, env, None, port, model, gpus, force, on_fit, on_pull, token,
            )
        })
    }

    /// [`App::ollama_run`] as the operation `ollama_chat`.
    #[allow(clippy::too_many_arguments)]
    pub fn ollama_chat_op(
        &self,
        label: &str,
        env: &SshEnv,
        port: u16,
        model: &str,
        prompt: &str,
        on_piece: &mut dyn FnMut(&str),
        progress: &dyn ProgressSink,
    ) -> Result<String, OllamaError> {
        self.run_op("ollama_chat", progress, |token| {
            self.ollama_run(label, env, None, port, model, prompt, on_piece, token)
        })
    }

    /// [`App::ollama_tunnel`] as the operation `ollama_tunnel`: the local port it listens on goes
    /// to `on_open` once it does; the tunnel lives until the operation is cancelled (or the
    /// connection dies).
    pub fn ollama_tunnel_op(
        &self,
        label: &str,
        env: &SshEnv,
        local_port: u16,
        port: u16,
        on_open: &mut dyn FnMut(u16),
        progress: &dyn ProgressSink,
    ) -> Result<(), OllamaError> {
        self.run_op("ollama_tunnel", progress, |token| {
            let fwd = self.ollama_tunnel(label, env, None, local_port, port, token)?;
            on_open(fwd.local_port);
            fwd.wait(token).map_err(OllamaError::from)
        })
    }
}
