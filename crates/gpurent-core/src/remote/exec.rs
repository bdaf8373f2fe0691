//! Running a command on the host: exit status, stdout and stderr, without deadlock.
//!
//! stdout and stderr share one SSH channel window (2 MiB with OpenSSH). Reading stdout to the end
//! before stderr stalls as soon as a command writes more than a window to stderr first: libssh2
//! queues the stderr data, never re-opens the window, and the server stops sending. So the
//! channel is read in non-blocking mode, both streams in turn, with stdin fed in the same loop;
//! when nothing moves the loop sleeps briefly (1 ms doubling to 8 ms).
//!
//! Cancelling (or an `ExecOptions::timeout`) sends a channel close and returns at once, without
//! waiting for the command: sshd hangs up its pipes, so it gets EOF on stdin and SIGPIPE on its next
//! write. A command that neither reads nor writes (e.g. `sleep`) runs on until it ends by itself;
//! long remote work that must stop on cancel should be started under its own supervision (e.g.
//! a wrapper that records its process group so a second exec can kill it).

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::remote::connect::Connection;
use crate::remote::error::{RemoteError, Stage};
use crate::remote::quote::login_line;
use crate::remote::text::cleaned;

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutStream {
    Stdout,
    Stderr,
}

/// A finished command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// The exit status; `None` when the command died by a signal or the server sent none.
    pub exit_status: Option<i32>,
    /// The signal name (e.g. `KILL`) when it died by one.
    pub exit_signal: Option<String>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    /// stdout as text to parse or show: lossy UTF-8, without terminal controls ([`cleaned`]).
    /// Bytes that must arrive exactly (checksums of data, file contents) are in `stdout`.
    pub fn stdout_text(&self) -> String {
        cleaned(&String::from_utf8_lossy(&self.stdout))
    }
    /// stderr as text, cleaned like [`ExecOutput::stdout_text`].
    pub fn stderr_text(&self) -> String {
        cleaned(&String::from_utf8_lossy(&self.stderr))
    }
    pub fn success(&self) -> bool {
        self.exit_status == Some(0)
    }
}

/// Options for [`exec_with`].
#[derive(Debug, Default)]
pub struct ExecOptions<'a> {
    /// Bytes fed to the command's stdin (then EOF). `None`: EOF right away.
    pub stdin: Option<&'a [u8]>,
    /// Give up (and close the channel) after this long.
    pub timeout: Option<Duration>,
}

/// Exit status and signal of a command run with [`exec_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    pub exit_status: Option<i32>,
    pub exit_signal: Option<String>,
}

/// Restores blocking mode when the exec loop ends, however it ends.
struct Blocking<'a>(&'a ssh2::Session);
impl Drop for Blocking<'_> {
    fn drop(&mut self) {
        self.0.set_blocking(true);
    }
}

/// Send our channel close and free the channel without waiting (the session must still be in
/// non-blocking mode): a blocking close would wait for the server's close, which sshd sends only
/// once the command has exited. libssh2 finishes the close when later traffic arrives.
fn abandon(mut ch: ssh2::Channel) {
    let _ = ch.close();
    drop(ch);
}

/// Run `command` (POSIX `sh` syntax, whatever the user's login shell is: see
/// [`login_line`]; quote arguments with `shell_quote`) and collect everything it prints.
pub fn exec(
    conn: &Connection,
    command: &str,
    cancel: &CancelToken,
) -> Result<ExecOutput, RemoteError> {
    exec_collect(conn, command, &ExecOptions::default(), cancel)
}

/// The most [`exec_collect`] keeps of one command's output (stdout and stderr together). What a
/// host prints is the host's to decide: a command (or a host) that floods its output is stopped
/// there with [`RemoteError::OutputTooLarge`] instead of growing gpurent's memory until the app
/// is killed (security review §7.1; the second guard collects every 30 s).
pub const MAX_COLLECT: usize = 16 << 20;

/// [`exec`] with options (input on stdin, a time limit): run `command` and collect everything
/// it prints, up to [`MAX_COLLECT`]. The one exec-and-collect of the crate.
pub fn exec_collect(
    conn: &Connection,
    command: &str,
    opts: &ExecOptions<'_>,
    cancel: &CancelToken,
) -> Result<ExecOutput, RemoteError> {
    exec_collect_max(conn, command, opts, MAX_COLLECT, cancel)
}

/// [`exec_collect`] keeping at most `max` bytes of output.
pub fn exec_collect_max(
    conn: &Connection,
    command: &str,
    opts: &ExecOptions<'_>,
    max: usize,
    cancel: &CancelToken,
) -> Result<ExecOutput, RemoteError> {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let info = exec_loop(
        conn,
        command,
        opts,
        Duration::from_millis(8),
        &mut |s, data| {
            if stdout.len() + stderr.len() + data.len() > max {
                return false;
            }
            match s {
                OutStream::Stdout => stdout.extend_from_slice(data),
                OutStream::Stderr => stderr.extend_from_slice(data),
            }
            true
        },
        cancel,
    )?
    .ok_or(RemoteError::OutputTooLarge {
        limit_mib: (max as u64).div_ceil(1 << 20),
    })?;
    Ok(ExecOutput {
        exit_status: info.exit_status,
        exit_signal: info.exit_signal,
        stdout,
        stderr,
    })
}

/// Run `command`, handing each chunk of output to `on_output` as it arrives.
pub fn exec_with(
    conn: &Connection,
    command: &str,
    opts: &ExecOptions<'_>,
    on_output: &mut dyn FnMut(OutStream, &[u8]),
    cancel: &CancelToken,
) -> Result<ExitInfo, RemoteError> {
    exec_polled(
        conn,
        command,
        opts,
        Duration::from_millis(8),
        on_output,
        cancel,
    )
}

/// [`exec_with`], sleeping up to `max_idle` (instead of 8 ms) when nothing moves: for long-lived
/// commands that print now and then (telemetry once a second), where many of them at once would
/// otherwise wake this process thousands of times a second.
pub fn exec_polled(
    conn: &Connection,
    command: &str,
    opts: &ExecOptions<'_>,
    max_idle: Duration,
    on_output: &mut dyn FnMut(OutStream, &[u8]),
    cancel: &CancelToken,
) -> Result<ExitInfo, RemoteError> {
    let info = exec_loop(
        conn,
        command,
        opts,
        max_idle,
        &mut |s, data| {
            on_output(s, data);
            true
        },
        cancel,
    )?;
    // The callback never stops the loop.
    Ok(info.unwrap_or(ExitInfo {
        exit_status: None,
        exit_signal: None,
    }))
}

/// The exec loop: `on_output` returns `false` to stop reading (the channel is abandoned and
/// `Ok(None)` comes back).
fn exec_loop(
    conn: &Connection,
    command: &str,
    opts: &ExecOptions<'_>,
    max_idle: Duration,
    on_output: &mut dyn FnMut(OutStream, &[u8]) -> bool,
    cancel: &CancelToken,
) -> Result<Option<ExitInfo>, RemoteError> {
    let sess = conn.session();
    let io_ms = conn.options().io_timeout.as_millis() as u64;
    let ssh_err = |e: ssh2::Error| RemoteError::from_ssh(Stage::Exec, &e, io_ms);
    cancel.check()?;
    let line = login_line(command)?;
    let mut ch = sess.channel_session().map_err(ssh_err)?;
    ch.exec(&line).map_err(ssh_err)?;
    let started = Instant::now();
    let mut stdin = opts.stdin.unwrap_or(&[]);
    let mut stdin_open = true;
    let mut buf = vec![0u8; 64 * 1024];
    let mut idle = Duration::from_millis(1);
    {
        let _restore = Blocking(sess);
        sess.set_blocking(false);
        let mut out_done = false;
        let mut err_done = false;
        loop {
            if cancel.is_cancelled() {
                abandon(ch);
                return Err(RemoteError::Core(CoreError::Cancelled));
            }
            if opts.timeout.is_some_and(|t| started.elapsed() > t) {
                abandon(ch);
                return Err(RemoteError::TimedOut {
                    stage: Stage::Exec,
                    after_ms: started.elapsed().as_millis() as u64,
                });
            }
            let mut progressed = false;
            if stdin_open {
                if stdin.is_empty() {
                    match ch.send_eof() {
                        Ok(()) => {
                            stdin_open = false;
                            progressed = true;
                        }
                        Err(e) if e.code() == ssh2::ErrorCode::Session(-37) => {}
                        Err(e) => return Err(ssh_err(e)),
                    }
                } else {
                    match ch.write(stdin) {
                        Ok(n) => {
                            stdin = &stdin[n..];
                            progressed = n > 0;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => {
                            return Err(RemoteError::from_io(Stage::Exec, "channel", &e, io_ms))
                        }
                    }
                }
            }
            for (which, done) in [
                (OutStream::Stdout, &mut out_done),
                (OutStream::Stderr, &mut err_done),
            ] {
                if *done {
                    continue;
                }
                let r = match which {
                    OutStream::Stdout => ch.read(&mut buf),
                    OutStream::Stderr => ch.stderr().read(&mut buf),
                };
                match r {
                    Ok(0) => *done = ch.eof(),
                    Ok(n) => {
                        if !on_output(which, &buf[..n]) {
                            abandon(ch);
                            return Ok(None);
                        }
                        progressed = true;
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => return Err(RemoteError::from_io(Stage::Exec, "channel", &e, io_ms)),
                }
            }
            if out_done && err_done {
                break;
            }
            if progressed {
                idle = Duration::from_millis(1);
            } else {
                // Sends a keepalive when its interval has passed (set at connect); a failed send
                // shows up as an error on the next read.
                let _ = sess.keepalive_send();
                std::thread::sleep(idle);
                idle = (idle * 2).min(max_idle);
            }
        }
    }
    ch.wait_close().map_err(ssh_err)?;
    let exit_signal = ch
        .exit_signal()
        .ok()
        .and_then(|s| s.exit_signal)
        .filter(|s| !s.is_empty());
    let exit_status = match (ch.exit_status(), &exit_signal) {
        (_, Some(_)) => None,
        (Ok(s), None) => Some(s),
        (Err(_), None) => None,
    };
    Ok(Some(ExitInfo {
        exit_status,
        exit_signal,
    }))
}
