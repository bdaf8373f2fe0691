//! Jupyter on the facade: a saved host's Jupyter Server on its 127.0.0.1 with a gpurent token, and
//! the local tunnel to it (`docs/monitor.md`, section Jupyter).

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::events::ProgressSink;
use crate::infra::process::Os;
use crate::jupyter::{self, JupyterError, Running};
use crate::opener::{open_uri_command, spawn_first};
use crate::remote::connect::Connection;
use crate::remote::forward::{forward_local, Forward};

/// Wait this long for a freshly started server to answer.
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

impl App {
    fn jupyter_connect(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<Connection, JupyterError> {
        let host = self.host_get(label)?;
        Ok(match key {
            Some(k) => connect_saved(&host, env, k, cancel)?,
            None => connect_saved(&host, env, &self.host_key_for(label, None)?, cancel)?,
        })
    }

    /// Start (or find) Jupyter Server with `python` on the host's `127.0.0.1:port` (0: a free
    /// port there) and forward `127.0.0.1:local_port` here to it (0: any free port). The forward
    /// and the server (token, port).
    #[allow(clippy::too_many_arguments)]
    pub fn jupyter_open(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        python: &str,
        port: u16,
        local_port: u16,
        cancel: &CancelToken,
    ) -> Result<(Forward, Running), JupyterError> {
        let conn = self.jupyter_connect(label, env, key, cancel)?;
        let running = jupyter::start(&conn, python, port, START_WAIT, cancel)?;
        let fwd = forward_local(conn, local_port, running.port)?;
        Ok((fwd, running))
    }

    /// Stop the server gpurent started; `true` when one was running.
    pub fn jupyter_stop(
        &self,
        label: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<bool, JupyterError> {
        let conn = self.jupyter_connect(label, env, key, cancel)?;
        jupyter::stop(&conn, cancel)
    }
}

impl App {
    /// [`App::jupyter_open`] with the host's own key as the registered operation `jupyter_open`:
    /// the URL with the token goes to `on_open` (and the browser is opened at it when
    /// `open_browser`); the tunnel lives until the operation is cancelled.
    #[allow(clippy::too_many_arguments)]
    pub fn jupyter_open_op(
        &self,
        label: &str,
        env: &SshEnv,
        python: &str,
        port: u16,
        local_port: u16,
        open_browser: bool,
        on_open: &mut dyn FnMut(String),
        progress: &dyn ProgressSink,
    ) -> Result<(), JupyterError> {
        self.run_op("jupyter_open", progress, |token| {
            let (fwd, running) =
                self.jupyter_open(label, env, None, python, port, local_port, token)?;
            let url = format!(
                "http://127.0.0.1:{}/?token={}",
                fwd.local_port,
                running.token.expose()
            );
            on_open(url.clone());
            // The browser opens a 600 redirect file, not the URL: no token on a command line.
            let mut page = None;
            if open_browser {
                match jupyter::redirect_file(&url, fwd.local_port) {
                    Ok(p) => {
                        let uri = format!("file://{}", p.display());
                        if let Err(e) = spawn_first(&[open_uri_command(Os::current(), &uri)]) {
                            tracing::warn!("the browser could not be opened: {e}");
                        }
                        page = Some(p);
                    }
                    Err(e) => tracing::warn!("the redirect page could not be written: {e}"),
                }
            }
            let r = fwd.wait(token).map_err(JupyterError::from);
            if let Some(p) = page {
                let _ = std::fs::remove_file(p);
            }
            r
        })
    }
}
