//! Jupyter Server on a rented host, never exposed: started bound to `127.0.0.1` with a token
//! gpurent generates, as a background process in its own session (pid file, log, and its own
//! Jupyter runtime dir `~/.gpurent/jupyter/runtime`), and reached over the SSH connection
//! (`direct-tcpip`; the local end is `remote::forward`). The token never appears on a command
//! line: it reaches the host on the exec's stdin, lives in `~/.gpurent/jupyter/token` (mode 600)
//! and in the server's environment (`JUPYTER_TOKEN`).
//!
//! Provider images often run their own Jupyter already (on 8888, auth disabled, on 0.0.0.0), and
//! a host's `jupyter_server_config.py` can empty the token. So a server is gpurent's only when it
//! is the process gpurent started (the pid in the pid file, a `jupyter_server` command line), its
//! runtime file (`jpserver-PID.json`) names the port and `127.0.0.1`, it answers `/api/status`
//! with the token, and refuses without it. Port 0 picks a free port on the host. Starts are
//! serialized by a lock directory, so a second start never overwrites the first one's pid file.

use std::time::{Duration, Instant};

use ssh_key::rand_core::{OsRng, RngCore};

use crate::infra::cancel::CancelToken;
use crate::infra::ipc::{Coded, ErrorData};
use crate::infra::secret::Secret;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec, exec_collect, ExecOptions};
use crate::remote::http::{request_with, HttpError};
use crate::remote::quote::{sh_c, shell_quote};

pub const DEFAULT_PORT: u16 = 8888;

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
    /// The server on the port answers without the token (auth disabled, e.g. by a host config
    /// that empties the token, or a provider's own Jupyter): gpurent does not tunnel to it.
    #[error("the Jupyter server on the host's port {port} does not require a token (its configuration disables authentication); gpurent stopped the one it started and will not open it")]
    NotPrivate { port: u16, log: String },
}

/// So an open can run as a registered operation (`App::run_op`).
impl From<crate::infra::error::CoreError> for JupyterError {
    fn from(e: crate::infra::error::CoreError) -> Self {
        JupyterError::Remote(RemoteError::Core(e))
    }
}

impl Coded for JupyterError {
    fn code(&self) -> &'static str {
        match self {
            JupyterError::Remote(e) => e.code(),
            JupyterError::NotInstalled { .. } => "jupyter_not_installed",
            JupyterError::NotAnswering { .. } => "jupyter_not_answering",
            JupyterError::BadAnswer { .. } => "jupyter_bad_answer",
            JupyterError::NotPrivate { .. } => "jupyter_not_private",
        }
    }

    /// The remote error's own detail (fingerprints, the key's trouble), or the server's log.
    fn detail(&self) -> Option<String> {
        match self {
            JupyterError::Remote(e) => e.detail(),
            JupyterError::NotAnswering { log, .. } | JupyterError::NotPrivate { log, .. } => {
                (!log.is_empty()).then(|| log.clone())
            }
            JupyterError::BadAnswer { detail } => Some(detail.clone()),
            JupyterError::NotInstalled { python } => Some(python.clone()),
        }
    }

    /// The remote error's facts (the key that needs its passphrase, the host key's hop).
    fn data(&self) -> Option<ErrorData> {
        match self {
            JupyterError::Remote(e) => e.data(),
            _ => None,
        }
    }
}

/// A server of gpurent's on the host: its token and the port it listens on (127.0.0.1).
#[derive(Debug)]
pub struct Running {
    pub token: Secret,
    pub port: u16,
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

/// Prints the runtime file of the server in the pid file when that process is alive and is a
/// `jupyter_server` (exit 3: none; 4: alive but its runtime file is not written yet).
const INFO: &str = r#"d="$HOME/.gpurent/jupyter"; p=$(cat "$d/server.pid" 2>/dev/null)
[ -n "$p" ] && kill -0 "$p" 2>/dev/null || exit 3
tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q jupyter_server || exit 3
echo "pid $p"
cat "$d/runtime/jpserver-$p.json" 2>/dev/null || exit 4"#;

/// Starts the server: `$1` python, `$2` port (0: a free one), the token on stdin. Under the lock
/// `start.lock` (a directory: `mkdir` is atomic): a live server of ours already there, or a start
/// in progress, is exit 75 (use that one); else the token file, the server in its own session,
/// and its pid written (under the lock; a lock older than a minute is a dead start's).
const START: &str = r#"d="$HOME/.gpurent/jupyter"; mkdir -p "$d" && chmod 700 "$d" || exit 1
IFS= read -r t || exit 1
l="$d/start.lock"
if ! mkdir "$l" 2>/dev/null; then
  a=$(stat -c %Y "$l" 2>/dev/null || echo 0)
  [ $(( $(date +%s) - a )) -gt 60 ] || exit 75
  rm -rf "$l"; mkdir "$l" 2>/dev/null || exit 75
fi
trap 'rm -rf "$l"' EXIT
p=$(cat "$d/server.pid" 2>/dev/null)
if [ -n "$p" ] && kill -0 "$p" 2>/dev/null && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q jupyter_server; then exit 75; fi
port=$2
if [ "$port" = 0 ]; then
  port=$("$1" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || exit 1
fi
umask 077; rm -rf "$d/runtime"; printf '%s' "$t" > "$d/token"; cd "$HOME" || exit 1
JUPYTER_TOKEN=$t JUPYTER_RUNTIME_DIR="$d/runtime" setsid "$1" -m jupyter_server --ServerApp.ip=127.0.0.1 --ServerApp.port="$port" --ServerApp.port_retries=0 --ServerApp.open_browser=False >"$d/server.log" 2>&1 </dev/null &
echo $! > "$d/server.pid"
echo "pid $!""#;

/// The token of the server gpurent started on the host, if its file is there.
fn saved_token(conn: &Connection, cancel: &CancelToken) -> Result<Option<Secret>, JupyterError> {
    let out = exec(
        conn,
        &sh_c(r#"cat "$HOME/.gpurent/jupyter/token" 2>/dev/null"#)?,
        cancel,
    )?;
    let t = out.stdout_text().trim().to_string();
    Ok((out.success() && !t.is_empty()).then(|| Secret::new(t)))
}

/// What the runtime file of gpurent's server says: its port and the address it listens on.
#[derive(Debug, PartialEq, Eq)]
struct Info {
    port: u16,
    hostname: String,
}

/// The server in gpurent's pid file: `Ok(None)` when none is alive or its runtime file is not
/// written yet.
fn info(conn: &Connection, cancel: &CancelToken) -> Result<Option<Info>, JupyterError> {
    let out = exec(conn, &sh_c(INFO)?, cancel)?;
    if !out.success() {
        return Ok(None);
    }
    Ok(parse_info(&out.stdout_text()))
}

fn parse_info(text: &str) -> Option<Info> {
    let (first, json) = text.split_once('\n')?;
    let pid: u64 = first.strip_prefix("pid ")?.trim().parse().ok()?;
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    (v["pid"].as_u64()? == pid).then_some(())?;
    Some(Info {
        port: u16::try_from(v["port"].as_u64()?).ok()?,
        hostname: crate::remote::text::cleaned(v["hostname"].as_str()?),
    })
}

fn server_log(conn: &Connection, cancel: &CancelToken) -> String {
    exec(
        conn,
        &sh_c(r#"tail -n 5 "$HOME/.gpurent/jupyter/server.log""#).unwrap_or_default(),
        cancel,
    )
    .map(|o| o.stdout_text())
    .unwrap_or_default()
}

/// Whether the server of `info` is gpurent's and private: on 127.0.0.1 (and `port` when one was
/// asked), answering with `token`, refusing without it. `Err(NotPrivate)` when it answers
/// without the token.
fn check(
    conn: &Connection,
    info: &Info,
    port: u16,
    token: &Secret,
    cancel: &CancelToken,
) -> Result<bool, JupyterError> {
    if info.hostname != "127.0.0.1" || (port != 0 && info.port != port) {
        return Ok(false);
    }
    if status(conn, info.port, Some(token))? != Some(200) {
        return Ok(false);
    }
    match status(conn, info.port, None)? {
        Some(401) | Some(403) => Ok(true),
        _ => Err(JupyterError::NotPrivate {
            port: info.port,
            log: server_log(conn, cancel),
        }),
    }
}

/// Start Jupyter Server with `python` on `127.0.0.1:port` (0: a free port), or find the one
/// gpurent started; its token and port once it answers with the token and refuses without it.
/// A server that answers without the token is stopped and refused ([`JupyterError::NotPrivate`]).
pub fn start(
    conn: &Connection,
    python: &str,
    port: u16,
    wait: Duration,
    cancel: &CancelToken,
) -> Result<Running, JupyterError> {
    let reuse = |cancel: &CancelToken| -> Result<Option<Running>, JupyterError> {
        let (Some(i), Some(t)) = (info(conn, cancel)?, saved_token(conn, cancel)?) else {
            return Ok(None);
        };
        match check(conn, &i, port, &t, cancel) {
            Ok(true) => Ok(Some(Running {
                token: t,
                port: i.port,
            })),
            Ok(false) => Ok(None),
            Err(e) => {
                let _ = stop(conn, cancel);
                Err(e)
            }
        }
    };
    if let Some(r) = reuse(cancel)? {
        return Ok(r);
    }
    let check_py = exec(
        conn,
        &sh_c(&format!(
            "{} -m jupyter_server --version",
            shell_quote(python)?
        ))?,
        cancel,
    )?;
    if !check_py.success() {
        return Err(JupyterError::NotInstalled {
            python: python.to_string(),
        });
    }
    let token = new_token();
    let stdin = format!("{}\n", token.expose());
    let opts = ExecOptions {
        stdin: Some(stdin.as_bytes()),
        timeout: Some(Duration::from_secs(30)),
    };
    let cmd = format!(
        "{} gpurent-jupyter {} {port}",
        sh_c(START)?,
        shell_quote(python)?
    );
    let out = exec_collect(conn, &cmd, &opts, cancel)?;
    // 75: another start owns the lock, or a server of ours runs (on another port: stop it first).
    let ours = out.success();
    let started = Instant::now();
    while started.elapsed() < wait {
        cancel.check().map_err(RemoteError::from)?;
        if ours {
            if let Some(i) = info(conn, cancel)? {
                if check(conn, &i, port, &token, cancel).inspect_err(|_| {
                    let _ = stop(conn, cancel);
                })? {
                    return Ok(Running {
                        token,
                        port: i.port,
                    });
                }
            }
        } else if let Some(r) = reuse(cancel)? {
            return Ok(r);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(JupyterError::NotAnswering {
        port,
        after_s: wait.as_secs(),
        log: server_log(conn, cancel),
    })
}

/// Stop the server gpurent started (its process group, if the pid is still a `jupyter_server`:
/// a reused pid is left alone) and remove its token; `true` when one ran.
pub fn stop(conn: &Connection, cancel: &CancelToken) -> Result<bool, JupyterError> {
    let script = r#"d="$HOME/.gpurent/jupyter"; rm -f "$d/token"; p=$(cat "$d/server.pid" 2>/dev/null); rm -f "$d/server.pid"
[ -n "$p" ] && kill -0 "$p" 2>/dev/null || exit 3
tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q jupyter_server || exit 3
kill -TERM -"$p" 2>/dev/null || kill -TERM "$p"; i=0
while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL -"$p" 2>/dev/null; exit 0"#;
    Ok(exec(conn, &sh_c(script)?, cancel)?.exit_status == Some(0))
}

/// A local redirect page to `url` (which carries the token), as Jupyter's own
/// `jpserver-PID-open.html`: created new with mode 600 in this machine's temp dir, so the
/// browser is opened at the file and the token is on no local command line. The caller removes
/// it when the tunnel closes.
pub fn redirect_file(url: &str, local_port: u16) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!(
        "gpurent-jupyter-{}-{local_port}-open.html",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o.open(&path)?;
    let esc = url
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    write!(
        f,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={esc}\"><title>Jupyter</title></head>\n<body><p>Opening <a href=\"{esc}\">Jupyter</a>…</p></body></html>\n"
    )?;
    Ok(path)
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

    #[cfg(unix)]
    #[test]
    fn the_redirect_file_is_private_and_points_at_the_url() {
        use std::os::unix::fs::PermissionsExt;
        let url = "http://127.0.0.1:9999/?token=abc\"<x>";
        let p = redirect_file(url, 9999).expect("file");
        let mode = std::fs::metadata(&p).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&p).expect("read");
        assert!(
            text.contains("url=http://127.0.0.1:9999/?token=abc&quot;&lt;x>"),
            "{text}"
        );
        std::fs::remove_file(&p).expect("rm");
    }

    #[test]
    fn the_runtime_file_must_be_the_pid_files_server() {
        let json = "{\n  \"hostname\": \"127.0.0.1\",\n  \"pid\": 42,\n  \"port\": 8890,\n  \"token\": \"x\"\n}";
        assert_eq!(
            parse_info(&format!("pid 42\n{json}")),
            Some(Info {
                port: 8890,
                hostname: "127.0.0.1".into()
            })
        );
        assert_eq!(parse_info(&format!("pid 43\n{json}")), None);
        assert_eq!(parse_info("pid 42\n"), None);
    }

    #[test]
    fn remote_errors_keep_their_detail_and_data() {
        let e = JupyterError::Remote(RemoteError::HostKeyUnknown {
            role: crate::infra::ipc::Role::Target,
            host: "h".into(),
            port: 22,
            key_type: "ssh-ed25519".into(),
            fingerprint: "SHA256:abc".into(),
        });
        assert_eq!(e.detail().as_deref(), Some("SHA256:abc"));
        assert!(e.data().is_some());
        let log = JupyterError::NotAnswering {
            port: 1,
            after_s: 1,
            log: "Address already in use".into(),
        };
        assert_eq!(log.detail().as_deref(), Some("Address already in use"));
    }
}
