//! A recipe's own web app (ComfyUI, the Whisper ASR service), started by gpurent on the host and
//! never exposed: its start command runs in its own session under `~/.gpurent/apps/NAME` (pid,
//! port and log files), bound to 127.0.0.1 by the command itself (recipes refuse any other bind),
//! and gpurent checks after readiness that every listener on the port is loopback. The app is
//! reached only through a local forward (`remote::forward`); readiness is asked through it
//! ([`get_status`]) so the answer that says "ready" is the one the browser will get.

use std::io::{Read, Write};
use std::time::Duration;

use crate::infra::cancel::CancelToken;
use crate::infra::ipc::Coded;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::exec;
use crate::remote::quote::{sh_c, shell_quote};

use super::Recipe;

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The start command exited before the app answered (not installed, port taken, a crash).
    #[error(
        "{app} exited before it answered (see its log on the host: ~/.gpurent/apps/{app}/log)"
    )]
    Exited { app: String, log: String },
    #[error("{app} did not answer {path} on the host's 127.0.0.1:{port} within {after_s} s")]
    NotAnswering {
        app: String,
        port: u16,
        path: String,
        after_s: u64,
        log: String,
    },
    /// Something listens on the port on an address other than 127.0.0.1: gpurent stops the app
    /// it started and does not open it.
    #[error("{app} listens on {bound} (port {port}), not only on 127.0.0.1: gpurent stopped it and will not open it")]
    NotPrivate {
        app: String,
        port: u16,
        bound: String,
    },
}

impl From<crate::infra::error::CoreError> for WebError {
    fn from(e: crate::infra::error::CoreError) -> Self {
        WebError::Remote(RemoteError::Core(e))
    }
}

impl Coded for WebError {
    fn code(&self) -> &'static str {
        match self {
            WebError::Remote(e) => e.code(),
            WebError::Exited { .. } => "app_exited",
            WebError::NotAnswering { .. } => "app_not_answering",
            WebError::NotPrivate { .. } => "app_not_private",
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            WebError::Remote(e) => e.detail(),
            WebError::Exited { log, .. } | WebError::NotAnswering { log, .. } => {
                (!log.is_empty()).then(|| log.clone())
            }
            WebError::NotPrivate { bound, .. } => Some(bound.clone()),
        }
    }

    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            WebError::Remote(e) => e.data(),
            _ => None,
        }
    }
}

/// Starts `$2` (a shell command) as app `$1` in its own session unless the pid file's process is
/// alive (exit 75, its port printed); `$3` is the port, kept in `port`.
const START: &str = r#"d="$HOME/.gpurent/apps/$1"; mkdir -p "$d" && chmod 700 "$d" || exit 1
p=$(cat "$d/pid" 2>/dev/null)
if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then echo "port $(cat "$d/port" 2>/dev/null)"; exit 75; fi
cd "$HOME" || exit 1
printf '%s\n' "$3" > "$d/port"
setsid sh -c "$2" >"$d/log" 2>&1 </dev/null &
echo $! > "$d/pid"
echo "port $3""#;

/// Exit 0 while the app's pid is alive.
const ALIVE: &str =
    r#"p=$(cat "$HOME/.gpurent/apps/$1/pid" 2>/dev/null); [ -n "$p" ] && kill -0 "$p" 2>/dev/null"#;

/// The local addresses listening on TCP port `$1` (hex, as in /proc/net/tcp and tcp6).
const LISTENERS: &str = r#"h=$(printf '%04X' "$1")
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] && awk -v h="$h" '$4 == "0A" { n = split($2, a, ":"); if (a[n] == h) print a[1] }' "$f"
done
exit 0"#;

/// The command the app runs: the recipe's env vars (the host's own value wins), then its start.
fn command(recipe: &Recipe, port: u16) -> Result<String, RemoteError> {
    let mut s = String::new();
    for (k, v) in recipe.env_for(port) {
        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(RemoteError::invalid(
                "env",
                format!("{k} is not a variable name"),
            ));
        }
        s.push_str(&format!(
            "[ -n \"${{{k}+x}}\" ] || {k}={}; export {k}; ",
            shell_quote(&v)?
        ));
    }
    s.push_str(&recipe.start_command(port));
    Ok(s)
}

/// Start the recipe's app on the host's `127.0.0.1:port` unless gpurent's is running already;
/// the port it serves on (a running one keeps its own).
pub fn start(
    conn: &Connection,
    recipe: &Recipe,
    port: u16,
    cancel: &CancelToken,
) -> Result<u16, WebError> {
    let cmd = format!(
        "{} gpurent-app {} {} {port}",
        sh_c(START)?,
        shell_quote(&recipe.name)?,
        shell_quote(&command(recipe, port)?)?
    );
    let out = exec(conn, &cmd, cancel)?;
    let text = out.stdout_text();
    let served = text
        .lines()
        .find_map(|l| l.strip_prefix("port "))
        .and_then(|p| p.trim().parse().ok());
    match (out.exit_status, served) {
        (Some(0) | Some(75), Some(p)) => Ok(p),
        _ => Err(WebError::Exited {
            app: recipe.name.clone(),
            log: format!("{}{}", text, out.stderr_text()),
        }),
    }
}

/// Whether gpurent's app is still running.
pub fn alive(conn: &Connection, name: &str, cancel: &CancelToken) -> Result<bool, WebError> {
    let cmd = format!("{} gpurent-app {}", sh_c(ALIVE)?, shell_quote(name)?);
    Ok(exec(conn, &cmd, cancel)?.success())
}

/// The port gpurent's running app serves on (`None`: it is not running).
pub fn running_port(
    conn: &Connection,
    name: &str,
    cancel: &CancelToken,
) -> Result<Option<u16>, WebError> {
    let script = format!(r#"{ALIVE} && cat "$HOME/.gpurent/apps/$1/port""#);
    let cmd = format!("{} gpurent-app {}", sh_c(&script)?, shell_quote(name)?);
    let out = exec(conn, &cmd, cancel)?;
    if !out.success() {
        return Ok(None);
    }
    Ok(out.stdout_text().trim().parse().ok())
}

/// The last lines of the app's log.
pub fn log(conn: &Connection, name: &str, cancel: &CancelToken) -> String {
    let cmd = match (
        sh_c(r#"tail -n 8 "$HOME/.gpurent/apps/$1/log""#),
        shell_quote(name),
    ) {
        (Ok(c), Ok(n)) => format!("{c} gpurent-app {n}"),
        _ => return String::new(),
    };
    exec(conn, &cmd, cancel)
        .map(|o| o.stdout_text())
        .unwrap_or_default()
}

/// Where the port is bound: `127.0.0.1` when every listener is loopback, else the first other
/// address (`0.0.0.0`, `::`, `other`); `None` when nothing listens.
pub fn bound(
    conn: &Connection,
    port: u16,
    cancel: &CancelToken,
) -> Result<Option<String>, WebError> {
    let out = exec(
        conn,
        &format!("{} gpurent-app {port}", sh_c(LISTENERS)?),
        cancel,
    )?;
    let mut first: Option<&str> = None;
    for l in out
        .stdout_text()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        let a = match l {
            "0100007F" | "00000000000000000000000001000000" => "127.0.0.1",
            "00000000" => "0.0.0.0",
            "00000000000000000000000000000000" => "::",
            _ => "other",
        };
        if first.is_none() || first == Some("127.0.0.1") {
            first = Some(a);
        }
    }
    Ok(first.map(str::to_string))
}

/// Stop the app gpurent started (its process group); `true` when one ran.
pub fn stop(conn: &Connection, name: &str, cancel: &CancelToken) -> Result<bool, WebError> {
    let script = r#"d="$HOME/.gpurent/apps/$1"; p=$(cat "$d/pid" 2>/dev/null); rm -f "$d/pid"
[ -n "$p" ] && kill -0 "$p" 2>/dev/null || exit 3
kill -TERM -"$p" 2>/dev/null || kill -TERM "$p"; i=0
while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL -"$p" 2>/dev/null; exit 0"#;
    let cmd = format!("{} gpurent-app {}", sh_c(script)?, shell_quote(name)?);
    Ok(exec(conn, &cmd, cancel)?.exit_status == Some(0))
}

/// `GET path` on this machine's `127.0.0.1:local_port` (the tunnel's end): the status code, or
/// `None` when the connection fails or no status line comes back (the tunnel is up before the
/// app is: an early ask finds nothing behind it).
pub fn get_status(local_port: u16, path: &str, headers: &[(&str, &str)]) -> Option<u16> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", local_port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{local_port}\r\n{extra}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let line = String::from_utf8_lossy(&head[..n]);
    line.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recipe_env_is_set_unless_the_host_has_its_own() {
        let r = super::super::get("comfyui").expect("comfyui");
        let c = command(&r, 8190).expect("command");
        assert!(
            c.starts_with("[ -n \"${COMFYUI_DIR+x}\" ] || COMFYUI_DIR='/workspace/ComfyUI'; export COMFYUI_DIR; "),
            "{c}"
        );
        assert!(c.ends_with("--listen 127.0.0.1 --port 8190"), "{c}");
    }
}
