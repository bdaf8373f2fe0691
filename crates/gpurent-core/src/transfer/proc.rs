//! Remote commands a transfer starts, and how they are stopped. Each runs under `sh -c` with a
//! first line `gpurent-pid N` on stderr; on cancel gpurent stops the channel, then freezes and
//! kills that process and all its descendants (`/proc/N/task/*/children`) through a second
//! channel, so nothing keeps running on the host.

use std::io::{Read, Write};

use crate::infra::cancel::CancelToken;
use crate::remote::exec::{exec, exec_with, ExecOptions, OutStream};
use crate::remote::text::cleaned;
use crate::remote::{login_line, sh_c, Connection};
use crate::transfer::TransferError;

const PID_TAG: &str = "gpurent-pid ";

/// `sh -c '<announce pid>; <script>'`.
pub fn wrap(script: &str) -> Result<String, TransferError> {
    Ok(sh_c(&format!("echo \"{PID_TAG}$$\" >&2\n{script}"))?)
}

/// Stop a process tree on the host: freeze it (no new children), then kill everything in it.
pub fn kill_tree(conn: &Connection, pid: u32) {
    let script = format!(
        "d() {{ echo $1; for c in $(cat /proc/$1/task/*/children 2>/dev/null); do d $c; done; }}\n\
         P=$(d {pid}); kill -STOP $P 2>/dev/null; P=$(d {pid}); kill -KILL $P 2>/dev/null; true"
    );
    if let Ok(cmd) = sh_c(&script) {
        let _ = exec(conn, &cmd, &CancelToken::new());
    }
}

/// Split the announced pid off stderr.
fn take_pid(stderr: &[u8]) -> (Option<u32>, Vec<u8>) {
    let text = String::from_utf8_lossy(stderr);
    if let Some(rest) = text.strip_prefix(PID_TAG) {
        let (line, tail) = rest.split_once('\n').unwrap_or((rest, ""));
        return (line.trim().parse().ok(), tail.as_bytes().to_vec());
    }
    (None, stderr.to_vec())
}

/// A finished command.
#[derive(Debug)]
pub struct Output {
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Run a script to completion (stdin fed from `stdin`), killing its tree on cancel.
pub fn run(
    conn: &Connection,
    script: &str,
    stdin: Option<&[u8]>,
    cancel: &CancelToken,
) -> Result<Output, TransferError> {
    let cmd = wrap(script)?;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let r = exec_with(
        conn,
        &cmd,
        &ExecOptions {
            stdin,
            timeout: None,
        },
        &mut |s, d| match s {
            OutStream::Stdout => stdout.extend_from_slice(d),
            OutStream::Stderr => stderr.extend_from_slice(d),
        },
        cancel,
    );
    let (pid, stderr) = take_pid(&stderr);
    match r {
        Ok(info) => Ok(Output {
            status: info.exit_status,
            stdout,
            stderr: cleaned(&String::from_utf8_lossy(&stderr)),
        }),
        Err(e) => {
            if let Some(pid) = pid {
                kill_tree(conn, pid);
            }
            Err(e.into())
        }
    }
}

/// Run a script that must succeed; its stdout.
pub fn run_ok(
    conn: &Connection,
    what: &str,
    path: &str,
    script: &str,
    stdin: Option<&[u8]>,
    cancel: &CancelToken,
) -> Result<Vec<u8>, TransferError> {
    let out = run(conn, script, stdin, cancel)?;
    if out.status == Some(0) {
        Ok(out.stdout)
    } else {
        Err(TransferError::from_stderr(what, path, &out.stderr))
    }
}

/// A long-running command whose stdin or stdout carries file data (blocking channel I/O).
pub struct Stream {
    ch: ssh2::Channel,
    pid: Option<u32>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("pid", &self.pid).finish()
    }
}

/// Receive window for download channels on long links: enough for ~300 MiB/s at 100 ms.
pub const DOWNLOAD_WINDOW: u32 = 32 * 1024 * 1024;

/// A link this slow (ms round trip) or slower counts as long.
pub const LONG_LINK_MS: f64 = 10.0;

/// Whether the connection's round trip is at least [`LONG_LINK_MS`]. The login's round trip
/// (request to answer, so never below the link's) settles a short link without a probe;
/// otherwise one channel open decides. A probe alone misjudges loopback: sshd runs
/// non-interactive sessions with Nagle on, so the first open after a closed channel (the SFTP
/// `stat` before it) often waits ~40 ms for our delayed ACK.
pub fn long_link(conn: &Connection) -> Result<bool, TransferError> {
    if conn
        .auth_round_trip_ms()
        .is_some_and(|ms| ms < LONG_LINK_MS)
    {
        return Ok(false);
    }
    Ok(conn.round_trip_ms(1)? >= LONG_LINK_MS)
}

/// The receive window for a download on this connection: 32 MiB on a long link; libssh2's
/// default on a short one, where a deep queue of received packets only costs CPU (libssh2 walks
/// its packet list on every read: 4× slower than `scp` on loopback with 32 MiB).
pub fn download_window(conn: &Connection) -> Option<u32> {
    match long_link(conn) {
        Ok(true) => Some(DOWNLOAD_WINDOW),
        _ => None,
    }
}

impl Stream {
    /// Start `script`; `window` sets our receive window (downloads).
    pub fn open(
        conn: &Connection,
        script: &str,
        window: Option<u32>,
    ) -> Result<Stream, TransferError> {
        let sess = conn.session();
        let mut ch = match window {
            Some(w) => sess.channel_open("session", w, 32 * 1024, None),
            None => sess.channel_session(),
        }
        .map_err(|e| TransferError::ssh(&e))?;
        ch.exec(&login_line(&wrap(script)?)?)
            .map_err(|e| TransferError::ssh(&e))?;
        // The announced pid is the first thing on stderr.
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while line.len() < 64 {
            match ch.stderr().read(&mut b) {
                Ok(1) if b[0] == b'\n' => break,
                Ok(1) => line.push(b[0]),
                Ok(_) => break,
                Err(e) => return Err(io_lost(&e)),
            }
        }
        let (pid, _) = take_pid(&[line.as_slice(), b"\n"].concat());
        Ok(Stream { ch, pid })
    }

    pub fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.ch.write_all(data)
    }

    pub fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.ch.read(buf)
    }

    /// No more input: EOF to the command.
    pub fn send_eof(&mut self) -> Result<(), TransferError> {
        self.ch.send_eof().map_err(|e| TransferError::ssh(&e))
    }

    /// Wait for the command to end: exit status and stderr.
    pub fn finish(self) -> Result<(Option<i32>, String), TransferError> {
        self.finish_out().map(|(status, _, err)| (status, err))
    }

    /// Wait for the command to end: exit status, the rest of stdout, and stderr.
    pub fn finish_out(mut self) -> Result<(Option<i32>, Vec<u8>, String), TransferError> {
        let mut err = Vec::new();
        let _ = self.ch.stderr().read_to_end(&mut err);
        let mut rest = Vec::new();
        let _ = self.ch.read_to_end(&mut rest);
        self.ch.wait_close().map_err(|e| TransferError::ssh(&e))?;
        let status = self.ch.exit_status().ok();
        let signal = self.ch.exit_signal().ok().and_then(|s| s.exit_signal);
        let status = if signal.is_some() { None } else { status };
        Ok((status, rest, cleaned(&String::from_utf8_lossy(&err))))
    }

    /// [`Stream::finish_out`] reading stdout to its end before stderr (for a command whose
    /// stdout may outgrow the channel window while its stderr stays short).
    pub fn finish_stdout_first(mut self) -> Result<(Option<i32>, Vec<u8>, String), TransferError> {
        let mut out = Vec::new();
        if let Err(e) = self.ch.read_to_end(&mut out) {
            return Err(io_lost(&e));
        }
        self.finish_out().map(|(status, rest, err)| {
            out.extend_from_slice(&rest);
            (status, out, err)
        })
    }

    /// After a write/read failure: did the command end with an error we can name (full disk)?
    /// Returns `None` when the link itself is gone.
    pub fn failure(mut self, what: &str, path: &str) -> Option<TransferError> {
        let mut err = Vec::new();
        let _ = self.ch.stderr().read_to_end(&mut err);
        let text = String::from_utf8_lossy(&err);
        let status = self
            .ch
            .wait_close()
            .ok()
            .and_then(|_| self.ch.exit_status().ok());
        match status {
            Some(s) if s != 0 || !text.trim().is_empty() => {
                Some(TransferError::from_stderr(what, path, &text))
            }
            _ => None,
        }
    }

    /// Stop the command and everything it started.
    pub fn kill(mut self, conn: &Connection) {
        let _ = self.ch.close();
        if let Some(pid) = self.pid {
            kill_tree(conn, pid);
        }
    }
}

/// An I/O error on a data channel: the link is gone (resumable).
pub fn io_lost(e: &std::io::Error) -> TransferError {
    TransferError::Remote(crate::remote::RemoteError::ConnectionLost {
        stage: crate::remote::Stage::Exec,
        detail: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_line_is_split_off() {
        let (pid, rest) = take_pid(b"gpurent-pid 4242\ntar: oops\n");
        assert_eq!(pid, Some(4242));
        assert_eq!(rest, b"tar: oops\n");
        assert_eq!(take_pid(b"other").0, None);
        assert!(wrap("cat > 'x'").expect("wrap").starts_with("sh -c '"));
    }
}
