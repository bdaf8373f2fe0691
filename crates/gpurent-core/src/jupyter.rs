//! Jupyter Server on a rented host, never exposed: started bound to `127.0.0.1` with a token
//! gpurent generates, as a supervised background job (own session and process group, pid file,
//! log), and reached over the SSH connection (`direct-tcpip`; the local end is
//! `remote::forward`). The token never appears on a command line: it reaches the host on the
//! exec's stdin, lives in `~/.gpurent/jupyter/token` (mode 600) and in the server's environment
//! (`JUPYTER_TOKEN`). A server is reported running only once `/api/status` answers with the token.

use std::time::{Duration, Instant};

use ssh_key::rand_core::{OsRng, RngCore};

use crate::infra::cancel::CancelToken;
use crate::infra::secret::Secret;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec, exec_with, ExecOptions};
use crate::remote::http::{request_with, HttpError};
use crate::remote::quote::{sh_c, shell_quote};

pub const DEFAULT_PORT: u16 = 8888;
const JOB_DIR: &str = "$HOME/.gpurent/jupyter";

#[derive(Debug, thiserror::Error)]
pub enum JupyterError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// `PYTHON -m jupyter_server` does not run on the host.
    #[error("jupyter-server is not installed for {python} on this host (pip install jupyter-server, or jupyterlab)")]
    NotInstalled { python: String },
    #[error("jupyter server started but did not answer on 127.0.0.1:{port} within {after_s} s")]
    NotAnswering {
        port: u16,
        after_s: u64,
        log: String,
    },
    #[error("jupyter answered something unexpected: {detail}")]
    BadAnswer { detail: String },
}

/// So an open can run as a registered operation (`App::run_op`).
impl From<crate::infra::error::CoreError> for JupyterError {
    fn from(e: crate::infra::error::CoreError) -> Self {
        JupyterError::Remote(RemoteError::Core(e))
    }
}

impl crate::infra::ipc::Coded for JupyterError {
    fn code(&self) -> &'static str {
        match self {
            JupyterError::Remote(e) => e.code(),
            JupyterError::NotInstalled { .. } => "jupyter_not_installed",
            JupyterError::NotAnswering { .. } => "jupyter_not_answering",
            JupyterError::BadAnswer { .. } => "jupyter_bad_answer",
        }
    }
}

/// A fresh token: 32 random bytes, hex.
pub fn new_token() -> Secret {
    let mut b = [0u8; 32];
    OsRng.fill_bytes(&mut b);
    Secret::new(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

/// The HTTP status of `GET /api/status` (with `token` when given); `None` when nothing listens.
pub fn status(
    conn: &Connection,
    port: u16,
    token: Option<&Secret>,
) -> Result<Option<u16>, JupyterError> {
    let auth = token.map(|t| format!("token {}", t.expose()));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| ("Authorization", a))
        .into_iter()
        .collect();
    match request_with(
        conn,
        port,
        "GET",
        "/api/status",
        &headers,
        None,
        &mut |_| {},
    ) {
        Ok(r) => Ok(Some(r.status)),
        Err(HttpError::Refused) => Ok(None),
        Err(HttpError::Remote(e)) => Err(e.into()),
        Err(HttpError::Bad(d)) => Err(JupyterError::BadAnswer { detail: d }),
    }
}

/// The token of the server gpurent started on the host, if its file is there.
fn saved_token(conn: &Connection, cancel: &CancelToken) -> Result<Option<Secret>, JupyterError> {
    let out = exec(
        conn,
        &sh_c(&format!("cat {JOB_DIR}/token 2>/dev/null"))?,
        cancel,
    )?;
    let t = out.stdout_text().trim().to_string();
    Ok((out.success() && !t.is_empty()).then(|| Secret::new(t)))
}

/// Start Jupyter Server with `python` on `127.0.0.1:port` (or find the one gpurent started,
/// answering with its token); the token, once `/api/status` answered with it.
pub fn start(
    conn: &Connection,
    python: &str,
    port: u16,
    wait: Duration,
    cancel: &CancelToken,
) -> Result<Secret, JupyterError> {
    if let Some(t) = saved_token(conn, cancel)? {
        if status(conn, port, Some(&t))? == Some(200) {
            return Ok(t);
        }
    }
    let py = shell_quote(python)?;
    let check = exec(
        conn,
        &sh_c(&format!("{py} -m jupyter_server --version"))?,
        cancel,
    )?;
    if !check.success() {
        return Err(JupyterError::NotInstalled {
            python: python.to_string(),
        });
    }
    let token = new_token();
    let script = format!(
        "d={JOB_DIR}; mkdir -p \"$d\" && chmod 700 \"$d\" || exit 1; IFS= read -r t || exit 1; umask 077; printf '%s' \"$t\" > \"$d/token\"; cd \"$HOME\" || exit 1; JUPYTER_TOKEN=$t setsid {py} -m jupyter_server --ServerApp.ip=127.0.0.1 --ServerApp.port={port} --ServerApp.port_retries=0 --ServerApp.open_browser=False >\"$d/server.log\" 2>&1 </dev/null & echo $! > \"$d/server.pid\""
    );
    let stdin = format!("{}\n", token.expose());
    let opts = ExecOptions {
        stdin: Some(stdin.as_bytes()),
        timeout: Some(Duration::from_secs(30)),
    };
    exec_with(conn, &sh_c(&script)?, &opts, &mut |_, _| {}, cancel)?;
    let started = Instant::now();
    while started.elapsed() < wait {
        cancel.check().map_err(RemoteError::from)?;
        if status(conn, port, Some(&token))? == Some(200) {
            return Ok(token);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let log = exec(
        conn,
        &sh_c(&format!("tail -n 5 {JOB_DIR}/server.log"))?,
        cancel,
    )
    .map(|o| o.stdout_text())
    .unwrap_or_default();
    Err(JupyterError::NotAnswering {
        port,
        after_s: wait.as_secs(),
        log,
    })
}

/// Stop the server gpurent started (its process group) and remove its token; `true` when one ran.
pub fn stop(conn: &Connection, cancel: &CancelToken) -> Result<bool, JupyterError> {
    let script = format!(
        "d={JOB_DIR}; rm -f \"$d/token\"; p=$(cat \"$d/server.pid\" 2>/dev/null); rm -f \"$d/server.pid\"; [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null || exit 3; kill -TERM -\"$p\" 2>/dev/null || kill -TERM \"$p\"; i=0; while kill -0 \"$p\" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL -\"$p\" 2>/dev/null; exit 0"
    );
    Ok(exec(conn, &sh_c(&script)?, cancel)?.exit_status == Some(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_64_hex_digits() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose());
    }
}
