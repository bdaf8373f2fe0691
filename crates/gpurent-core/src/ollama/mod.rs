//! Ollama on a rented host, reached only through the SSH connection: the server is started bound
//! to `127.0.0.1` (never `0.0.0.0`), and every API call travels over a `direct-tcpip` channel to
//! that address, so nothing needs `curl` on the host and nothing is exposed on its network.
//!
//! - [`serve`]: start `ollama serve` as a supervised background job (own session and process
//!   group via `setsid`, pid file, log file) where nothing answers yet; there is no systemd in most
//!   rented containers (ollama#6478). It is reported running only once `/api/version` answers.
//! - [`pull`]: `/api/pull`'s streamed JSON lines (status, digest, total, completed) as progress.
//! - [`generate`]: a short answer from `/api/generate`, streamed.
//! - [`ps`], [`version`], [`stop`].
//! - [`install::install`]: the documented manual install where Ollama is missing.
//! - [`fit::check`]: the estimator's memory check of a model tag against the chosen GPUs.
//!
//! The HTTP client here is the small part of HTTP/1.1 the API needs: one request per channel,
//! `Connection: close`, a body of known length or chunked.

pub mod fit;
pub mod install;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::cancel::CancelToken;
use crate::remote::connect::Connection;
use crate::remote::error::{RemoteError, Stage};
use crate::remote::exec::exec;
use crate::remote::http;
use crate::remote::quote::{sh_c, shell_quote};
use crate::remote::text::{clean as clean_text, cleaned};

/// Ollama's default port.
pub const DEFAULT_PORT: u16 = 11434;

/// Where the job keeps its pid and log, under the login user's home.
pub(crate) const JOB_DIR: &str = "$HOME/.gpurent/ollama";

/// Finds the `ollama` binary: on PATH, else where [`install::install`] puts it.
const LOCATE: &str = r#"for p in "$(command -v ollama 2>/dev/null)" /usr/local/bin/ollama /usr/bin/ollama "$HOME/.local/bin/ollama"; do if [ -n "$p" ] && [ -x "$p" ]; then echo "$p"; exit 0; fi; done; exit 1"#;

/// One line of `/api/pull`'s stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PullProgress {
    pub status: String,
    pub digest: Option<String>,
    pub total: Option<u64>,
    pub completed: Option<u64>,
}

/// The server's answer to a finished pull or a failed call.
#[derive(Debug, thiserror::Error)]
pub enum OllamaError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// Ollama is not installed on the host.
    #[error("ollama is not installed on this host")]
    NotInstalled,
    /// Chat before Start: gpurent does not start a server on every GPU behind the user's back.
    #[error("ollama is not running on the host's port {port}; start it first (choosing its GPUs)")]
    NotRunning { port: u16 },
    /// Started, but `/api/version` did not answer in time (the log's last lines).
    #[error("ollama serve started but did not answer on 127.0.0.1:{port} within {after_s} s")]
    NotAnswering {
        port: u16,
        after_s: u64,
        log: String,
    },
    /// The server answered with an error (its `error` text).
    #[error("ollama: {message}")]
    Api { status: u16, message: String },
    /// An answer that is not the documented shape.
    #[error("ollama answered something unexpected: {detail}")]
    BadAnswer { detail: String },
    /// Installing: the host has neither `curl` nor `wget` to download the archive with.
    #[error("the host has neither curl nor wget to download Ollama with")]
    NoDownloader,
    /// Installing: not enough free space under the prefix (bytes; `None` when not known).
    #[error("not enough free space in {path} to install Ollama")]
    NoSpace {
        path: String,
        need_bytes: Option<u64>,
        have_bytes: Option<u64>,
    },
    /// Installing: the archive could not be downloaded from `base`.
    #[error("could not download Ollama from {base}")]
    DownloadFailed { base: String, detail: String },
    /// Installing: the downloaded archive's SHA-256 is not the one the release's `sha256sum.txt`
    /// lists (a damaged or altered download; nothing was installed).
    #[error("the downloaded {archive} does not match the release's SHA-256 checksum")]
    ChecksumMismatch {
        archive: String,
        expected: String,
        actual: String,
    },
    /// Installing: the release's checksums could not be read (no `sha256sum.txt`, the archive
    /// not listed in it, or no tool on the host to check it with); nothing was installed.
    #[error("the Ollama download could not be checked against a checksum")]
    ChecksumUnavailable { detail: String },
    /// Installing: an https download redirected to plain http; refused before downloading.
    #[error("the Ollama download from {base} redirected from https to plain http")]
    InsecureRedirect { base: String, detail: String },
    /// Installing: Ollama publishes no Linux build for this CPU (`uname -m`).
    #[error("Ollama has no Linux build for this host's CPU ({arch})")]
    UnsupportedArch { arch: String },
    /// Installing failed otherwise (extracting, a prefix that cannot be written).
    #[error("installing Ollama failed")]
    InstallFailed { detail: String },
    /// The estimator says the model does not fit the chosen GPUs (per GPU, GiB); pull with force
    /// to try anyway (Ollama then runs part of it on the CPU, slowly).
    #[error("{model} needs about {need_gib:.1} GiB per GPU, the chosen GPUs have {have_gib:.1} GiB free")]
    ModelDoesNotFit {
        model: String,
        need_gib: f64,
        have_gib: f64,
    },
}

impl crate::infra::ipc::Coded for OllamaError {
    fn code(&self) -> &'static str {
        match self {
            OllamaError::Remote(e) => e.code(),
            OllamaError::NotInstalled => "ollama_not_installed",
            OllamaError::NotRunning { .. } => "ollama_not_running",
            OllamaError::NotAnswering { .. } => "ollama_not_answering",
            OllamaError::Api { .. } => "ollama_api_error",
            OllamaError::BadAnswer { .. } => "ollama_bad_answer",
            OllamaError::NoDownloader => "ollama_no_downloader",
            OllamaError::NoSpace { .. } => "ollama_no_space",
            OllamaError::DownloadFailed { .. } => "ollama_download_failed",
            OllamaError::UnsupportedArch { .. } => "ollama_unsupported_arch",
            OllamaError::ChecksumMismatch { .. } => "ollama_checksum_mismatch",
            OllamaError::ChecksumUnavailable { .. } => "ollama_checksum_unavailable",
            OllamaError::InsecureRedirect { .. } => "ollama_insecure_redirect",
            OllamaError::InstallFailed { .. } => "ollama_install_failed",
            OllamaError::ModelDoesNotFit { .. } => "model_does_not_fit",
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            OllamaError::Remote(e) => e.detail(),
            OllamaError::NotAnswering { log, .. } => Some(log.clone()).filter(|l| !l.is_empty()),
            OllamaError::BadAnswer { detail }
            | OllamaError::DownloadFailed { detail, .. }
            | OllamaError::InstallFailed { detail }
            | OllamaError::ChecksumUnavailable { detail }
            | OllamaError::InsecureRedirect { detail, .. } => Some(detail.clone()),
            OllamaError::ChecksumMismatch {
                archive,
                expected,
                actual,
            } => Some(format!("{archive}: expected {expected}, got {actual}")),
            OllamaError::NoSpace {
                need_bytes,
                have_bytes,
                ..
            } => Some(format!(
                "need {} MiB, free {} MiB",
                need_bytes.map_or("?".into(), |b| (b >> 20).to_string()),
                have_bytes.map_or("?".into(), |b| (b >> 20).to_string())
            )),
            _ => None,
        }
    }

    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            OllamaError::Remote(e) => e.data(),
            OllamaError::ModelDoesNotFit {
                need_gib, have_gib, ..
            } => Some(crate::infra::ipc::ErrorData {
                need_gib: Some(*need_gib),
                have_gib: Some(*have_gib),
                ..Default::default()
            }),
            _ => None,
        }
    }
}

fn bad(detail: impl Into<String>) -> OllamaError {
    OllamaError::BadAnswer {
        detail: detail.into(),
    }
}

/// `GET /api/version`: `Ok(None)` when nothing listens on the port.
pub fn version(conn: &Connection, port: u16) -> Result<Option<String>, OllamaError> {
    let r = match http::request(conn, port, "GET", "/api/version", None, &mut |_| {}) {
        Ok(r) => r,
        Err(http::HttpError::Refused) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let v: serde_json::Value = serde_json::from_slice(&r.body).map_err(|e| bad(e.to_string()))?;
    Ok(v["version"].as_str().map(cleaned))
}

/// Starts `ollama serve` under a lock (`start.lock`, a directory: `mkdir` is atomic): `$1` the
/// binary, `$2` the port, `$3` the GPUs (`CUDA_VISIBLE_DEVICES`; empty: not set). A serve of
/// gpurent's still alive (its pid a live `ollama` process), or a start in progress, is exit 75:
/// the caller waits for that one instead of starting a second that would overwrite the pid file.
const SERVE: &str = r#"d="$HOME/.gpurent/ollama"; mkdir -p "$d" || exit 1
l="$d/start.lock"
if ! mkdir "$l" 2>/dev/null; then
  a=$(stat -c %Y "$l" 2>/dev/null || echo 0)
  [ $(( $(date +%s) - a )) -gt 60 ] || exit 75
  rm -rf "$l"; mkdir "$l" 2>/dev/null || exit 75
fi
trap 'rm -rf "$l"' EXIT
p=$(cat "$d/serve.pid" 2>/dev/null)
if [ -n "$p" ] && kill -0 "$p" 2>/dev/null && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q ollama; then exit 75; fi
cd "$HOME" || exit 1
if [ -n "$3" ]; then CUDA_VISIBLE_DEVICES=$3; export CUDA_VISIBLE_DEVICES; fi
OLLAMA_HOST="127.0.0.1:$2" setsid "$1" serve >"$d/serve.log" 2>&1 </dev/null &
echo $! > "$d/serve.pid""#;

/// The local addresses listening on TCP port `$1` (hex, as in /proc/net/tcp and tcp6); then
/// `ours` when the pid file's process is a live `ollama`.
const LISTENERS: &str = r#"h=$(printf '%04X' "$1")
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] && awk -v h="$h" '$4 == "0A" { n = split($2, a, ":"); if (a[n] == h) print a[1] }' "$f"
done
d="$HOME/.gpurent/ollama"; p=$(cat "$d/serve.pid" 2>/dev/null)
[ -n "$p" ] && kill -0 "$p" 2>/dev/null && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q ollama && echo ours
exit 0"#;

/// An Ollama answering on the host's port: its version, the address it is bound to
/// (`127.0.0.1` only when every listener on the port is loopback; else `0.0.0.0` or `::`, open
/// to the network), and whether it is the server gpurent started (its pid file's process).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Served {
    pub version: String,
    pub bound: String,
    pub ours: bool,
}

/// Where the port is bound and whether gpurent's pid file names a live `ollama`.
pub fn listeners(
    conn: &Connection,
    port: u16,
    cancel: &CancelToken,
) -> Result<(String, bool), OllamaError> {
    let out = exec(
        conn,
        &format!("{} gpurent-ollama {port}", sh_c(LISTENERS)?),
        cancel,
    )?;
    Ok(parse_listeners(&out.stdout_text()))
}

fn parse_listeners(text: &str) -> (String, bool) {
    let mut bound: Option<&str> = None;
    let mut ours = false;
    for l in text.lines().map(str::trim) {
        let addr = match l {
            "ours" => {
                ours = true;
                continue;
            }
            "" => continue,
            "0100007F" | "00000000000000000000000001000000" => "127.0.0.1",
            "00000000" => "0.0.0.0",
            "00000000000000000000000000000000" => "::",
            _ => "other",
        };
        if bound.is_none() || bound == Some("127.0.0.1") {
            bound = Some(addr);
        }
    }
    (bound.unwrap_or("127.0.0.1").to_string(), ours)
}

/// Start `ollama serve` on `127.0.0.1:port` of the host (on the GPUs whose UUIDs are given)
/// unless something answers there already; the version once `/api/version` answered.
pub fn serve(
    conn: &Connection,
    port: u16,
    gpus: &[String],
    wait: Duration,
    cancel: &CancelToken,
) -> Result<String, OllamaError> {
    Ok(serve_report(conn, port, gpus, wait, cancel)?.version)
}

/// [`serve`], saying where the server is bound and whether it is gpurent's: a template's own
/// Ollama already on the port (often on `0.0.0.0`) is reported as such, not as gpurent's.
pub fn serve_report(
    conn: &Connection,
    port: u16,
    gpus: &[String],
    wait: Duration,
    cancel: &CancelToken,
) -> Result<Served, OllamaError> {
    let report = |version: String| -> Result<Served, OllamaError> {
        let (bound, ours) = listeners(conn, port, cancel)?;
        Ok(Served {
            version,
            ours: ours && bound == "127.0.0.1",
            bound,
        })
    };
    if let Some(v) = version(conn, port)? {
        return report(v);
    }
    let bin = locate(conn, cancel)?.ok_or(OllamaError::NotInstalled)?;
    let cmd = format!(
        "{} gpurent-ollama {} {port} {}",
        sh_c(SERVE)?,
        shell_quote(&bin)?,
        shell_quote(&gpus.join(","))?
    );
    exec(conn, &cmd, cancel)?;
    let started = Instant::now();
    while started.elapsed() < wait {
        cancel.check().map_err(RemoteError::from)?;
        if let Some(v) = version(conn, port)? {
            return report(v);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = exec(
        conn,
        &sh_c(r#"tail -n 5 "$HOME/.gpurent/ollama/serve.log""#)?,
        cancel,
    )
    .map(|o| o.stdout_text())
    .unwrap_or_default();
    Err(OllamaError::NotAnswering {
        port,
        after_s: wait.as_secs(),
        log,
    })
}

/// The `ollama` binary's absolute path on the host (on PATH, or where gpurent installs it).
pub fn locate(conn: &Connection, cancel: &CancelToken) -> Result<Option<String>, OllamaError> {
    let out = exec(conn, &sh_c(LOCATE)?, cancel)?;
    let path = out.stdout_text().trim().to_string();
    Ok((out.success() && !path.is_empty()).then_some(path))
}

/// Stop the `ollama serve` gpurent started (its process group), if the pid file's process is
/// still an `ollama` (a reused pid is left alone); `true` when one ran.
pub fn stop(conn: &Connection, cancel: &CancelToken) -> Result<bool, OllamaError> {
    let script = r#"d="$HOME/.gpurent/ollama"; p=$(cat "$d/serve.pid" 2>/dev/null); [ -n "$p" ] || exit 3
rm -f "$d/serve.pid"
kill -0 "$p" 2>/dev/null || exit 3
tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q ollama || exit 3
kill -TERM -"$p" 2>/dev/null || kill -TERM "$p"; i=0
while kill -0 "$p" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL -"$p" 2>/dev/null; exit 0"#;
    let out = exec(conn, &sh_c(script)?, cancel)?;
    Ok(out.exit_status == Some(0))
}

/// `POST /api/pull` with progress per streamed line; ends at `success` (a cancelled pull resumes
/// where it stopped on the next call: Ollama keeps the downloaded parts).
pub fn pull(
    conn: &Connection,
    port: u16,
    model: &str,
    on_progress: &mut dyn FnMut(&PullProgress),
    cancel: &CancelToken,
) -> Result<(), OllamaError> {
    let body = serde_json::json!({ "model": model, "stream": true }).to_string();
    let mut last = String::new();
    let mut err: Option<String> = None;
    let stop = || cancel.is_cancelled();
    let (r, _) = http::request_until(
        conn,
        port,
        "POST",
        "/api/pull",
        &[],
        Some(&body),
        &mut |line| {
            if cancel.is_cancelled() {
                return;
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                return;
            };
            if let Some(e) = v["error"].as_str() {
                err = Some(cleaned(e));
                return;
            }
            let p = PullProgress {
                status: cleaned(v["status"].as_str().unwrap_or_default()),
                digest: v["digest"].as_str().map(cleaned),
                total: v["total"].as_u64(),
                completed: v["completed"].as_u64(),
            };
            last.clone_from(&p.status);
            on_progress(&p);
        },
        &stop,
    )?;
    // A cancel closes the channel between two reads, not at the download's end.
    cancel.check().map_err(RemoteError::from)?;
    if let Some(message) = err.or_else(|| api_error(&r)) {
        return Err(OllamaError::Api {
            status: r.status,
            message,
        });
    }
    if last != "success" {
        return Err(bad(format!("the pull ended at '{last}', not 'success'")));
    }
    Ok(())
}

fn api_error(r: &http::Response) -> Option<String> {
    if r.status < 400 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    Some(
        v["error"]
            .as_str()
            .map(cleaned)
            .unwrap_or_else(|| format!("HTTP {}", r.status)),
    )
}

/// The longest answer a chat collects (characters of text): past it the request is closed and
/// the answer so far returned. The model is also asked for at most [`MAX_PREDICT`] tokens.
pub const MAX_ANSWER: usize = 64 * 1024;
/// `options.num_predict` of a chat.
pub const MAX_PREDICT: u32 = 4096;

/// A streamed answer from `model` to `prompt`, each piece to `on_piece`: `cancel` closes the
/// request between two pieces (`Err(Cancelled)`); past [`MAX_ANSWER`] it is closed and the answer
/// so far returned.
pub fn generate(
    conn: &Connection,
    port: u16,
    model: &str,
    prompt: &str,
    on_piece: &mut dyn FnMut(&str),
    cancel: &CancelToken,
) -> Result<String, OllamaError> {
    let body = serde_json::json!({
        "model": model,
        "prompt": prompt,
        "stream": true,
        "options": { "num_predict": MAX_PREDICT }
    })
    .to_string();
    let mut answer = String::new();
    let mut done = false;
    let len = std::cell::Cell::new(0usize);
    let stop = || cancel.is_cancelled() || len.get() >= MAX_ANSWER;
    let (r, stopped) = http::request_until(
        conn,
        port,
        "POST",
        "/api/generate",
        &[],
        Some(&body),
        &mut |line| {
            if len.get() >= MAX_ANSWER {
                return;
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                return;
            };
            if let Some(piece) = v["response"].as_str() {
                let piece = clean_text(piece);
                let room = MAX_ANSWER - len.get();
                let piece: String = piece.chars().take(room).collect();
                len.set(len.get() + piece.chars().count().max(1));
                answer.push_str(&piece);
                on_piece(&piece);
            }
            done |= v["done"].as_bool() == Some(true);
        },
        &stop,
    )?;
    cancel.check().map_err(RemoteError::from)?;
    if stopped {
        return Ok(answer);
    }
    if let Some(message) = api_error(&r) {
        return Err(OllamaError::Api {
            status: r.status,
            message,
        });
    }
    if !done {
        return Err(bad("the answer ended before done"));
    }
    Ok(answer)
}

/// A model loaded in memory (`/api/ps`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Loaded {
    pub name: String,
    pub size: Option<u64>,
    pub size_vram: Option<u64>,
}

/// `GET /api/ps`.
pub fn ps(conn: &Connection, port: u16) -> Result<Vec<Loaded>, OllamaError> {
    let r = http::request(conn, port, "GET", "/api/ps", None, &mut |_| {})?;
    if let Some(message) = api_error(&r) {
        return Err(OllamaError::Api {
            status: r.status,
            message,
        });
    }
    let v: serde_json::Value = serde_json::from_slice(&r.body).map_err(|e| bad(e.to_string()))?;
    Ok(v["models"]
        .as_array()
        .ok_or_else(|| bad("no models list"))?
        .iter()
        .map(|m| Loaded {
            name: cleaned(m["name"].as_str().unwrap_or_default()),
            size: m["size"].as_u64(),
            size_vram: m["size_vram"].as_u64(),
        })
        .collect())
}

impl From<http::HttpError> for OllamaError {
    fn from(e: http::HttpError) -> Self {
        match e {
            http::HttpError::Refused => OllamaError::Remote(RemoteError::ConnectionLost {
                stage: Stage::Exec,
                detail: "nothing listens on the ollama port".into(),
            }),
            http::HttpError::Remote(r) => OllamaError::Remote(r),
            http::HttpError::Bad(d) => bad(d),
        }
    }
}

impl From<crate::infra::error::CoreError> for OllamaError {
    fn from(e: crate::infra::error::CoreError) -> Self {
        OllamaError::Remote(RemoteError::from(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_say_where_the_port_is_bound() {
        assert_eq!(
            parse_listeners("0100007F\nours\n"),
            ("127.0.0.1".into(), true)
        );
        assert_eq!(parse_listeners("00000000\n"), ("0.0.0.0".into(), false));
        assert_eq!(
            parse_listeners("0100007F\n00000000000000000000000000000000\n"),
            ("::".into(), false)
        );
    }
}
