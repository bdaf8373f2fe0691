//! The telemetry stream of one host: ONE long-lived exec per connection, in which
//! `nvidia-smi --query-gpu=… --format=csv,nounits -lms N` writes the GPU rows to stdout and a
//! small `sh` loop writes `/proc` snapshots (and, every few samples, the compute apps) to stderr.
//! No process per sample on the GPU side; one `head` and one `sleep` per interval on the host side.
//!
//! Before the stream starts, one short query finds the fields this driver knows
//! ([`GpuQuery::adapt`]). A cut connection, a stalled one (no output for a while) or a stream that
//! ended is reported as [`TelemetryEvent::Disconnected`] and the host is reached again, with a
//! growing pause, until the caller cancels (or stops by returning [`Flow::Stop`]). Refusals that
//! retrying cannot fix (a changed host key, a rejected login) end the stream with their error.
//!
//! When the channel closes the remote processes die at their next write (SIGPIPE), within one
//! interval: nothing is left running on the host. A link that dies without a FIN leaves sshd's
//! side open; the loop then runs in its own session with a pid file, the reconnecting stream ends
//! it first, and a write blocked for [`WRITE_LIMIT_S`] ends it too ([`stream_command`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::hoststats::{guarded_loop_script, HostSample, ProcEvent, ProcSnapshot, ProcStream};
use super::telemetry::{
    apps_command, parse_gpus, ComputeApp, GpuQuery, GpuRow, GpuStream, ReasonNames,
};
use crate::infra::cancel::CancelToken;
use crate::infra::clock::Clock;
use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec_collect, exec_polled, ExecOptions, OutStream};
use crate::remote::quote::sh_c;
use crate::remote::text::clean as clean_text;

/// The longest nap of the stream's read loop and of its stall watchdog when nothing arrives:
/// a sample is at most this late, and 32 hosts cost a few hundred wake-ups a second, not thousands.
const POLL_IDLE: Duration = Duration::from_millis(100);

/// What the stream tells its caller, as it happens. Times are the local clock's (ms since the
/// Unix epoch) when the sample arrived.
// A host sample is larger than the other events; events are moved once each, not stored.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TelemetryEvent {
    /// Reached the host (attempt 1 is the first connection); the GPU fields this driver knows.
    Connected {
        attempt: u32,
        /// `None`: no GPU telemetry on this host (see `GpuUnavailable`).
        reasons: Option<ReasonNames>,
        /// Fields the driver refused, left out.
        dropped_fields: Vec<String>,
    },
    /// One row per GPU.
    Gpus { at_ms: i64, gpus: Vec<GpuRow> },
    /// CPU, RAM, disk and network of the host.
    Host { at_ms: i64, host: HostSample },
    /// The processes using the GPUs (every `apps_every` samples).
    Apps { at_ms: i64, apps: Vec<ComputeApp> },
    /// nvidia-smi is missing or failing here: its first line (e.g. "No devices were found"), or
    /// it stopped answering (a hung GPU or driver). The samples go on with CPU and RAM;
    /// `Connected` comes again when GPU rows are back.
    GpuUnavailable { message: String },
    /// The connection was lost (or stalled, code `stalled`); the next attempt starts after
    /// `retry_in_ms`.
    Disconnected {
        code: String,
        message: String,
        retry_in_ms: u64,
    },
}

/// The caller's answer to each event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// How often to sample, and how to retry.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    pub interval_ms: u64,
    /// The compute apps every this many host samples.
    pub apps_every: u32,
    /// First pause before reconnecting; doubles up to `retry_max_ms`.
    pub retry_initial_ms: u64,
    pub retry_max_ms: u64,
    /// Give up after this many failed connection attempts in a row (`None`: never).
    pub max_failures: Option<u32>,
    /// No output for this long is a stalled connection (default: 3 intervals + 5 s).
    pub stall_ms: Option<u64>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            interval_ms: 1000,
            apps_every: 5,
            retry_initial_ms: 500,
            retry_max_ms: 15_000,
            max_failures: None,
            stall_ms: None,
        }
    }
}

/// Outcomes worth another try: the network, not the host's or the user's decision.
fn transient(e: &RemoteError) -> bool {
    matches!(
        e,
        RemoteError::TimedOut { .. }
            | RemoteError::ConnectionRefused { .. }
            | RemoteError::Network { .. }
            | RemoteError::ConnectionLost { .. }
            | RemoteError::NoRoute { .. }
            | RemoteError::DnsFailed { .. }
            | RemoteError::ProtocolError { .. }
    )
}

/// The longest line kept: a longer one (no telemetry line is) is dropped up to its newline.
const MAX_LINE: usize = 64 * 1024;

/// Splits chunks into lines; the partial line is bounded by [`MAX_LINE`].
#[derive(Debug, Default)]
struct Lines(Vec<u8>, bool);

impl Lines {
    fn push(&mut self, data: &[u8], out: &mut dyn FnMut(&str)) {
        self.0.extend_from_slice(data);
        let mut start = 0;
        while let Some(i) = self.0[start..].iter().position(|&b| b == b'\n') {
            if !self.1 {
                let line = String::from_utf8_lossy(&self.0[start..start + i]);
                out(&clean_text(&line));
            }
            self.1 = false;
            start += i + 1;
        }
        self.0.drain(..start);
        if self.0.len() > MAX_LINE {
            // Skip the rest of this line (its end comes in a later chunk).
            self.0.clear();
            self.1 = true;
        }
    }
}

/// Sleep `ms` unless cancelled first; `false` when cancelled.
fn pause(ms: u64, cancel: &CancelToken) -> bool {
    let until = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < until {
        if cancel.is_cancelled() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
    }
    !cancel.is_cancelled()
}

/// Find the fields this host's driver knows: `Ok(None)` when there is no usable nvidia-smi
/// (with its first line of output).
fn negotiate(
    conn: &Connection,
    start: &GpuQuery,
    cancel: &CancelToken,
) -> Result<Result<GpuQuery, String>, RemoteError> {
    let mut q = start.clone();
    for _ in 0..40 {
        let opts = ExecOptions {
            stdin: None,
            timeout: Some(Duration::from_secs(NEGOTIATE_LIMIT_S + 5)),
        };
        // A hung nvidia-smi (a GPU off the bus) is killed by `timeout` where the host has it
        // (status 124/137), else the exec's own limit ends the wait: either way the stream
        // goes on without GPUs, so the host's CPU and RAM still show.
        let cmd = sh_c(&format!(
            "t=; command -v timeout >/dev/null 2>&1 && t='timeout -s KILL {NEGOTIATE_LIMIT_S}'; $t {} 2>&1",
            q.command(None)
        ))?;
        let out = match exec_collect(conn, &cmd, &opts, cancel) {
            Err(RemoteError::TimedOut { .. }) => return Ok(Err(hung_message(NEGOTIATE_LIMIT_S))),
            r => r?,
        };
        if matches!(out.exit_status, Some(124 | 137)) || out.exit_signal.is_some() {
            return Ok(Err(hung_message(NEGOTIATE_LIMIT_S)));
        }
        let text = out.stdout_text() + &out.stderr_text();
        if out.exit_status == Some(0) && !parse_gpus(&text, None).is_empty() {
            return Ok(Ok(q));
        }
        match q.adapt(&text) {
            Some(next) => q = next,
            None => {
                let first = text
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("nvidia-smi gave no answer")
                    .trim()
                    .to_string();
                return Ok(Err(first));
            }
        }
    }
    Ok(Err("nvidia-smi refused every field".into()))
}

/// How long the first nvidia-smi query may take before the GPU counts as hung (seconds).
pub const NEGOTIATE_LIMIT_S: u64 = 15;

/// What [`TelemetryEvent::GpuUnavailable`] says when nvidia-smi stops answering.
fn hung_message(after_s: u64) -> String {
    format!("nvidia-smi did not answer for {after_s} s: a hung GPU or driver")
}

/// A blocked write of the host loop for this long ends it (the link died without a FIN).
pub const WRITE_LIMIT_S: u32 = 30;

/// The marker of one watcher's remote loop: `$0` of its shell and the name of its pid file.
fn marker(id: &str) -> String {
    format!("gpurent-telemetry-{id}")
}

/// The one exec: GPU rows on stdout, the host loop on stderr, both in a session of their own
/// (`setsid`, where the host has it) whose leader's pid is in `~/.gpurent/gpurent-telemetry-ID.pid`.
/// A stream with the same `id` (the same watcher, reconnecting) first ends the session the pid
/// file names, if that process still carries the marker: a loop left behind by a connection that
/// died silently does not stay, nor stack up, on the host. The loop also ends when its SSH
/// session's shell is gone, and when a write blocks for [`WRITE_LIMIT_S`]; nvidia-smi ends with it.
pub fn stream_command(
    gpu: Option<&GpuQuery>,
    opts: &StreamOptions,
    id: &str,
) -> Result<String, RemoteError> {
    let apps = apps_command();
    let host = guarded_loop_script(
        opts.interval_ms,
        gpu.map(|_| apps.as_str()),
        opts.apps_every,
        WRITE_LIMIT_S,
    );
    let gpu_part = match gpu {
        Some(q) => format!("{} 2>&1 & g=$!; ", q.command(Some(opts.interval_ms))),
        None => "g=; ".to_string(),
    };
    let m = marker(id);
    // $1: the pid file, $2: the session shell's pid.
    let inner = format!(
        "pf=$1; pp=$2; echo $$ > \"$pf\"; \
         trap '[ -n \"$g\" ] && kill $g 2>/dev/null; [ \"$(cat \"$pf\" 2>/dev/null)\" = $$ ] && rm -f \"$pf\"' EXIT; \
         trap 'exit 0' TERM HUP INT PIPE; \
         {gpu_part}{{ {host}; }} >&2"
    );
    let outer = format!(
        "d=\"${{HOME:-/tmp}}/.gpurent\"; mkdir -p \"$d\" 2>/dev/null || d=/tmp; pf=\"$d/{m}.pid\"; \
         o=$(cat \"$pf\" 2>/dev/null); \
         if [ -n \"$o\" ] && tr '\\000' ' ' < /proc/\"$o\"/cmdline 2>/dev/null | grep -q -- {m}; then \
         kill -TERM -- -\"$o\" 2>/dev/null || kill -TERM \"$o\" 2>/dev/null; fi; \
         s=; command -v setsid >/dev/null 2>&1 && s=setsid; \
         $s {inner_cmd} {m} \"$pf\" $$ & wait",
        inner_cmd = sh_c(&inner)?,
    );
    sh_c(&outer)
}

/// A watcher's id for [`stream_command`]: this process and the moment, unique per [`run`].
fn watcher_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}-{:x}", std::process::id(), nanos & 0xffff_ffff_ffff)
}

/// Stream telemetry from the host `connect` reaches, until `cancel`, a [`Flow::Stop`], or an
/// outcome retrying cannot fix (returned). `connect` is called for the first connection and for
/// every reconnect.
pub fn run(
    connect: &mut dyn FnMut(&CancelToken) -> Result<Connection, RemoteError>,
    opts: &StreamOptions,
    clock: &dyn Clock,
    on_event: &mut dyn FnMut(TelemetryEvent) -> Flow,
    cancel: &CancelToken,
) -> Result<(), RemoteError> {
    let mut query = GpuQuery::new();
    let id = watcher_id();
    let mut prev: Option<ProcSnapshot> = None;
    let mut attempt = 0u32;
    let mut failures = 0u32;
    let mut backoff = opts.retry_initial_ms;
    let stall = Duration::from_millis(opts.stall_ms.unwrap_or(opts.interval_ms * 3 + 5000));
    let mut stopped = false;
    loop {
        if cancel.is_cancelled() || stopped {
            return Ok(());
        }
        attempt += 1;
        let lost: RemoteError = match connect(cancel) {
            Err(e) if !transient(&e) => return cancelled_ok(e),
            Err(e) => {
                failures += 1;
                if opts.max_failures.is_some_and(|m| failures >= m) {
                    return Err(e);
                }
                e
            }
            Ok(conn) => {
                let gpu = match negotiate(&conn, &query, cancel) {
                    Err(e) if !transient(&e) => return cancelled_ok(e),
                    Err(e) => {
                        failures += 1;
                        report_lost(&e, backoff, on_event, &mut stopped);
                        if !pause(backoff, cancel) {
                            return Ok(());
                        }
                        backoff = (backoff * 2).min(opts.retry_max_ms);
                        continue;
                    }
                    Ok(Ok(q)) => {
                        query = q.clone();
                        Some(q)
                    }
                    Ok(Err(message)) => {
                        if on_event(TelemetryEvent::GpuUnavailable { message }) == Flow::Stop {
                            return Ok(());
                        }
                        None
                    }
                };
                let connected = TelemetryEvent::Connected {
                    attempt,
                    reasons: gpu.as_ref().map(|q| q.reasons),
                    dropped_fields: gpu.as_ref().map(|q| q.dropped.clone()).unwrap_or_default(),
                };
                if on_event(connected.clone()) == Flow::Stop {
                    return Ok(());
                }
                failures = 0;
                backoff = opts.retry_initial_ms;
                match one_stream(
                    &conn,
                    gpu.as_ref(),
                    &connected,
                    &id,
                    opts,
                    clock,
                    &mut prev,
                    on_event,
                    stall,
                    cancel,
                    &mut stopped,
                ) {
                    Ok(()) => {
                        if cancel.is_cancelled() || stopped {
                            return Ok(());
                        }
                        RemoteError::ConnectionLost {
                            stage: crate::remote::Stage::Exec,
                            detail: "the telemetry stream ended".into(),
                        }
                    }
                    Err(e)
                        if !transient(&e)
                            && !matches!(e, RemoteError::Core(CoreError::Cancelled)) =>
                    {
                        return Err(e)
                    }
                    Err(e) => {
                        if cancel.is_cancelled() || stopped {
                            return Ok(());
                        }
                        e
                    }
                }
            }
        };
        report_lost(&lost, backoff, on_event, &mut stopped);
        if stopped || !pause(backoff, cancel) {
            return Ok(());
        }
        backoff = (backoff * 2).min(opts.retry_max_ms);
    }
}

fn cancelled_ok(e: RemoteError) -> Result<(), RemoteError> {
    match e {
        RemoteError::Core(CoreError::Cancelled) => Ok(()),
        e => Err(e),
    }
}

fn report_lost(
    e: &RemoteError,
    retry_in_ms: u64,
    on_event: &mut dyn FnMut(TelemetryEvent) -> Flow,
    stopped: &mut bool,
) {
    let code = match e {
        RemoteError::Core(CoreError::Cancelled) => "stalled".to_string(),
        e => e.code().to_string(),
    };
    let message = match e {
        RemoteError::Core(CoreError::Cancelled) => {
            "no telemetry arrived for a while: the link may \
             have died without closing, or the host is too busy to answer; reconnecting"
                .to_string()
        }
        e => e.to_string(),
    };
    let ev = TelemetryEvent::Disconnected {
        code,
        message,
        retry_in_ms,
    };
    if on_event(ev) == Flow::Stop {
        *stopped = true;
    }
}

/// Milliseconds since the last output: the handler may store a `last` later than the `now` the
/// watchdog read a moment before (then nothing is late), never an underflow.
fn quiet_ms(now: u64, last: u64) -> u64 {
    now.saturating_sub(last)
}

/// Run the exec until it ends, stalls, or the caller stops. `Ok` when it ended by itself or the
/// caller stopped; a stall is `Err(Cancelled)` with neither `cancel` nor `stopped` set.
#[allow(clippy::too_many_arguments)]
fn one_stream(
    conn: &Connection,
    gpu: Option<&GpuQuery>,
    connected: &TelemetryEvent,
    id: &str,
    opts: &StreamOptions,
    clock: &dyn Clock,
    prev: &mut Option<ProcSnapshot>,
    on_event: &mut dyn FnMut(TelemetryEvent) -> Flow,
    stall: Duration,
    cancel: &CancelToken,
    stopped: &mut bool,
) -> Result<(), RemoteError> {
    let cmd = stream_command(gpu, opts, id)?;
    let inner = CancelToken::new();
    let started = Instant::now();
    let last_ms = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let mut gpus = GpuStream::new();
    let mut procs = ProcStream::new();
    // GPU rows and host samples come from two processes: when nvidia-smi stops answering (a GPU
    // off the bus) while the host loop goes on, the GPUs are reported unavailable once (the
    // samples go on with CPU and RAM) and `connected` again when rows come back.
    let mut gpu_last = Instant::now();
    let mut gpu_stale = false;
    let (mut out_lines, mut err_lines) = (Lines::default(), Lines::default());
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let quiet = quiet_ms(
                    started.elapsed().as_millis() as u64,
                    last_ms.load(Ordering::SeqCst),
                );
                if cancel.is_cancelled() || quiet > stall.as_millis() as u64 {
                    inner.cancel();
                    break;
                }
                std::thread::sleep(POLL_IDLE);
            }
        });
        let mut stop = false;
        let mut handle = |which: OutStream, data: &[u8]| {
            last_ms.store(started.elapsed().as_millis() as u64, Ordering::SeqCst);
            let mut events = Vec::new();
            match which {
                OutStream::Stdout => out_lines.push(data, &mut |l| {
                    if let Some(rows) = gpus.push_line(l) {
                        gpu_last = Instant::now();
                        if gpu_stale {
                            gpu_stale = false;
                            events.push(connected.clone());
                        }
                        events.push(TelemetryEvent::Gpus {
                            at_ms: clock.now_unix_ms(),
                            gpus: rows,
                        });
                    }
                }),
                OutStream::Stderr => err_lines.push(data, &mut |l| match procs.push_line(l) {
                    Some(ProcEvent::Snapshot(snap)) => {
                        if gpu.is_some() && !gpu_stale && gpu_last.elapsed() > stall {
                            gpu_stale = true;
                            events.push(TelemetryEvent::GpuUnavailable {
                                message: hung_message(gpu_last.elapsed().as_secs()),
                            });
                        }
                        let host = snap.sample(prev.as_ref());
                        *prev = Some(snap);
                        events.push(TelemetryEvent::Host {
                            at_ms: clock.now_unix_ms(),
                            host,
                        });
                    }
                    Some(ProcEvent::Apps(apps)) => events.push(TelemetryEvent::Apps {
                        at_ms: clock.now_unix_ms(),
                        apps,
                    }),
                    None => {}
                }),
            }
            for ev in events {
                if !stop && on_event(ev) == Flow::Stop {
                    stop = true;
                    inner.cancel();
                }
            }
        };
        let r = exec_polled(
            conn,
            &cmd,
            &ExecOptions::default(),
            POLL_IDLE,
            &mut handle,
            &inner,
        );
        done.store(true, Ordering::SeqCst);
        (r, stop)
    });
    let (r, stop) = r;
    if stop {
        *stopped = true;
        return Ok(());
    }
    r.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks() {
        let mut l = Lines::default();
        let mut got = Vec::new();
        l.push(b"ab", &mut |s| got.push(s.to_string()));
        l.push(b"c\r\nde\nf", &mut |s| got.push(s.to_string()));
        assert_eq!(got, vec!["abc", "de"]);
        l.push(b"\n", &mut |s| got.push(s.to_string()));
        assert_eq!(got.last().map(String::as_str), Some("f"));
    }

    #[test]
    fn the_stream_is_one_command_with_gpu_rows_on_stdout_and_the_host_loop_on_stderr() {
        let q = GpuQuery::new();
        let c = stream_command(Some(&q), &StreamOptions::default(), "t1").expect("cmd");
        assert!(c.starts_with("sh -c "));
        assert!(c.contains(&format!("{} 2>&1 & g=$!", q.command(Some(1000)))));
        assert!(c.contains("--query-compute-apps=gpu_uuid,pid,used_memory"));
        assert!(c.contains("gpurent-telemetry-t1.pid"));
        let no_gpu = stream_command(None, &StreamOptions::default(), "t1").expect("cmd");
        assert!(!no_gpu.contains("nvidia-smi"));
    }

    #[test]
    fn an_endless_line_is_dropped_not_buffered() {
        let mut l = Lines::default();
        let mut got = Vec::new();
        let chunk = vec![b'x'; 40 * 1024];
        for _ in 0..100 {
            l.push(&chunk, &mut |s| got.push(s.to_string()));
            assert!(l.0.len() <= MAX_LINE + chunk.len());
        }
        l.push(b"tail\nnext\n", &mut |s| got.push(s.to_string()));
        assert_eq!(got, vec!["next"]);
    }

    #[test]
    fn a_late_watchdog_read_is_not_an_underflow() {
        assert_eq!(quiet_ms(100, 250), 0);
        assert_eq!(quiet_ms(250, 100), 150);
    }

    #[test]
    fn retry_only_what_the_network_can_fix() {
        assert!(transient(&RemoteError::ConnectionRefused {
            addr: "x".into()
        }));
        assert!(!transient(&RemoteError::Core(CoreError::Cancelled)));
    }
}
