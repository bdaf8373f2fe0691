//! `gpurent jupyter HOST [--local-port P] [--port P] [--python PY] [--stop] [--json] [-i FILE]`:
//! Jupyter Server on the host's 127.0.0.1 with a token gpurent generates, forwarded to this
//! machine's 127.0.0.1 until Ctrl-C (docs/monitor.md, section Jupyter). With `--json`: one line
//! `{"kind":"jupyter","url":...,"token":...}` once it answers (`--stop`: `{"host","stopped"}`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use gpurent_core::app::login::SshEnv;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::jupyter::{JupyterError, DEFAULT_PORT};
use gpurent_core::remote::RemoteError;

use crate::output::fail;

#[derive(Debug, Args)]
pub struct JupyterArgs {
    /// The saved host's label.
    host: String,
    /// The local port (on this machine's 127.0.0.1).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    local_port: u16,
    /// Jupyter's port on the host (bound to its 127.0.0.1; 0: a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The host's Python that has jupyter-server (or jupyterlab) installed.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Stop the server gpurent started on the host.
    #[arg(long)]
    stop: bool,
    #[arg(long)]
    json: bool,
    /// Log in with this private key file instead of the host's keychain key.
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
}

pub fn main(data_dir: Option<&Path>, args: &JupyterArgs) -> ExitCode {
    match run(data_dir, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, args.json),
    }
}

fn run(data_dir: Option<&Path>, args: &JupyterArgs) -> Result<(), JupyterError> {
    let app = crate::open::open_app(data_dir).map_err(RemoteError::from)?;
    let env = SshEnv::detect()?;
    let key = crate::open::identity_file(args.identity.as_deref())?;
    let cancel = CancelToken::new();
    if args.stop {
        let stopped = app.jupyter_stop(&args.host, &env, key.as_ref(), &cancel)?;
        if args.json {
            println!(
                "{}",
                serde_json::json!({"host": args.host, "stopped": stopped})
            );
        } else if stopped {
            println!("Jupyter stopped on {}", args.host);
        } else {
            println!("no Jupyter started by gpurent was running on {}", args.host);
        }
        return Ok(());
    }
    let (fwd, running) = app.jupyter_open(
        &args.host,
        &env,
        key.as_ref(),
        &args.python,
        args.port,
        args.local_port,
        &cancel,
    )?;
    let base = format!("http://127.0.0.1:{}", fwd.local_port);
    let token = &running.token;
    let url = format!("{base}/?token={}", token.expose());
    if args.json {
        println!(
            "{}",
            serde_json::json!({"kind": "jupyter", "url": url, "base_url": base, "token": token.expose(), "remote_port": running.port})
        );
    } else {
        println!("Jupyter on {} (127.0.0.1 only): {url}", args.host);
        println!(
            "(Ctrl-C closes the tunnel; `gpurent jupyter {} --stop` stops the server)",
            args.host
        );
    }
    crate::tunnel::hold_until_ctrl_c(fwd, &cancel)?;
    Ok(())
}
