//! Jump hosts (`ssh -J`) with libssh2: libssh2 can only run a session over a socket, so the
//! target session runs over one end of a private loopback TCP pair, and a pump thread copies bytes
//! between the other end and a `direct-tcpip` channel opened through the (authenticated) jump
//! session. The pair's listener accepts only the socket we connected ourselves (checked by
//! address) and is closed right after.
//!
//! The pump uses the jump session in non-blocking mode and backs off with short sleeps when idle
//! (1 ms doubling to 4 ms): safe Rust has no portable `poll` over the libssh2 socket here, and
//! the extra latency is at most a few milliseconds per direction change.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ssh2::{Channel, Session};

use crate::remote::endpoint::{ConnectOptions, Endpoint};
use crate::remote::error::{RemoteError, Stage};

/// The running pump; dropping it stops the thread (after the target session is gone).
#[derive(Debug)]
pub struct JumpPump {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

fn io_err(e: std::io::Error) -> RemoteError {
    RemoteError::from_io(Stage::Connect, "127.0.0.1 (jump relay)", &e, 0)
}

/// A connected loopback pair (a, b); `b` is verified to be the peer of `a`.
fn loopback_pair() -> Result<(TcpStream, TcpStream), RemoteError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io_err)?;
    let addr = listener.local_addr().map_err(io_err)?;
    let a = TcpStream::connect(addr).map_err(io_err)?;
    let a_local = a.local_addr().map_err(io_err)?;
    for _ in 0..16 {
        let (b, peer) = listener.accept().map_err(io_err)?;
        if peer == a_local {
            let _ = a.set_nodelay(true);
            let _ = b.set_nodelay(true);
            return Ok((a, b));
        }
        // Someone else raced us to the port: refuse them.
        let _ = b.shutdown(Shutdown::Both);
    }
    Err(RemoteError::Network {
        stage: Stage::Connect,
        detail: "could not set up the local relay for the jump host".into(),
    })
}

impl JumpPump {
    /// Open `direct-tcpip` to `target` through `jump` and start relaying. Returns the local
    /// socket to run the target's SSH session over.
    pub fn start(
        jump: Session,
        target: &Endpoint,
        opts: &ConnectOptions,
    ) -> Result<(TcpStream, JumpPump), RemoteError> {
        let channel = jump
            .channel_direct_tcpip(&target.host, target.port, None)
            .map_err(|e| match e.code() {
                // LIBSSH2_ERROR_TIMEOUT: the jump host did not answer the channel request.
                ssh2::ErrorCode::Session(-9) => RemoteError::TimedOut {
                    stage: Stage::Connect,
                    after_ms: opts.handshake_timeout.as_millis() as u64,
                },
                _ => RemoteError::JumpForwardFailed {
                    host: target.host.clone(),
                    port: target.port,
                    detail: e.to_string(),
                },
            })?;
        let (ours, relay) = loopback_pair()?;
        relay.set_nonblocking(true).map_err(io_err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            jump.set_blocking(false);
            if let Err(e) = pump(&jump, channel, relay, &s) {
                tracing::debug!("jump relay ended: {e}");
            }
        });
        Ok((
            ours,
            JumpPump {
                stop,
                thread: Some(thread),
            },
        ))
    }
}

impl Drop for JumpPump {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Copy bytes both ways until either side ends or `stop` is set.
fn pump(
    _jump: &Session,
    mut channel: Channel,
    mut local: TcpStream,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let mut to_local: Vec<u8> = Vec::new();
    let mut to_remote: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut idle = Duration::from_millis(1);
    let result = loop {
        if stop.load(Ordering::SeqCst) {
            break Ok(());
        }
        let mut progressed = false;
        // channel -> local
        if to_local.is_empty() {
            match channel.read(&mut buf) {
                Ok(0) if channel.eof() => break Ok(()),
                Ok(0) => {}
                Ok(n) => {
                    to_local.extend_from_slice(&buf[..n]);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => break Err(e),
            }
        }
        if !to_local.is_empty() {
            match local.write(&to_local) {
                Ok(n) => {
                    to_local.drain(..n);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => break Err(e),
            }
        }
        // local -> channel
        if to_remote.is_empty() {
            match local.read(&mut buf) {
                Ok(0) => break Ok(()), // the target session is gone
                Ok(n) => {
                    to_remote.extend_from_slice(&buf[..n]);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => break Err(e),
            }
        }
        if !to_remote.is_empty() {
            match channel.write(&to_remote) {
                Ok(n) => {
                    to_remote.drain(..n);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => break Err(e),
            }
        }
        if progressed {
            idle = Duration::from_millis(1);
        } else {
            std::thread::sleep(idle);
            idle = (idle * 2).min(Duration::from_millis(4));
        }
    };
    let _ = local.shutdown(Shutdown::Both);
    let _ = channel.send_eof();
    let _ = channel.close();
    result
}
