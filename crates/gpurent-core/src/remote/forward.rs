//! A local port forward (`ssh -L 127.0.0.1:LOCAL:127.0.0.1:REMOTE`): a listener on this machine's
//! loopback only, each accepted connection relayed over a `direct-tcpip` channel of one SSH
//! connection to `127.0.0.1:REMOTE` on the host. One thread owns the connection (non-blocking)
//! and relays every pair, so the session is never used from two threads.
//!
//! A link can die without a FIN (a NAT that forgot the flow, a laptop that slept): nothing fails
//! until TCP gives up, hours later, and the tunnel would look open. So when nothing has come from
//! the host for [`Liveness::idle`], the relay asks the server for something that needs an answer
//! (opening a session channel, closed at once: OpenSSH confirms or refuses, either proves the link
//! and the server alive) and ends with `connection_lost` when no answer comes within
//! [`Liveness::timeout`]. No new connection is accepted while a probe is open (libssh2 runs one
//! channel open at a time per session).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::remote::connect::Connection;
use crate::remote::error::{RemoteError, Stage};

/// How a forward checks that its SSH link still answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// Probe after this long without anything from the host.
    pub idle: Duration,
    /// No answer to a probe within this long: the link is dead.
    pub timeout: Duration,
}

/// The default: a dead link is found within about 30 s of its last sign of life.
pub const LIVENESS: Liveness = Liveness {
    idle: Duration::from_secs(15),
    timeout: Duration::from_secs(15),
};

/// A running forward; dropping it (or [`Forward::stop`]) closes the listener and every relay.
#[derive(Debug)]
pub struct Forward {
    pub local_port: u16,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<(), RemoteError>>>,
}

impl Forward {
    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// `false` once the relay has ended (stopped, or its link found dead).
    pub fn is_open(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stop and return how the relay thread ended.
    pub fn stop(mut self) -> Result<(), RemoteError> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            _ => Ok(()),
        }
    }

    /// Block until the relay ends by itself (the connection died) or `stop` is set elsewhere.
    pub fn wait(mut self, cancel: &crate::infra::cancel::CancelToken) -> Result<(), RemoteError> {
        while !cancel.is_cancelled() && self.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            _ => Ok(()),
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Pair {
    local: TcpStream,
    channel: ssh2::Channel,
    to_local: Vec<u8>,
    to_remote: Vec<u8>,
    local_eof: bool,
    remote_eof: bool,
}

/// Listen on `127.0.0.1:local_port` (0: any free port) and relay to `127.0.0.1:remote_port` on
/// the host over `conn`, which the forward owns from now on; its link checked as [`LIVENESS`].
pub fn forward_local(
    conn: Connection,
    local_port: u16,
    remote_port: u16,
) -> Result<Forward, RemoteError> {
    forward_local_with(conn, local_port, remote_port, LIVENESS)
}

/// [`forward_local`] with the link checked as `live` says.
pub fn forward_local_with(
    conn: Connection,
    local_port: u16,
    remote_port: u16,
    live: Liveness,
) -> Result<Forward, RemoteError> {
    let io = |e: std::io::Error| RemoteError::Network {
        stage: Stage::Exec,
        detail: format!("local port {local_port}: {e}"),
    };
    let listener = TcpListener::bind(("127.0.0.1", local_port)).map_err(io)?;
    let port = listener.local_addr().map_err(io)?.port();
    listener.set_nonblocking(true).map_err(io)?;
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let (s, a) = (stop.clone(), accepted.clone());
    let thread = std::thread::spawn(move || relay(conn, listener, remote_port, live, &s, &a));
    Ok(Forward {
        local_port: port,
        stop,
        accepted,
        thread: Some(thread),
    })
}

fn would_block(e: &ssh2::Error) -> bool {
    e.code() == ssh2::ErrorCode::Session(-37)
}

fn relay(
    conn: Connection,
    listener: TcpListener,
    remote_port: u16,
    live: Liveness,
    stop: &AtomicBool,
    accepted: &AtomicU64,
) -> Result<(), RemoteError> {
    let sess = conn.session().clone();
    sess.set_blocking(false);
    let mut pairs: Vec<Pair> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut idle = Duration::from_millis(1);
    // The last sign of life from the host, and when the open probe (if any) started.
    let mut heard = Instant::now();
    let mut probe: Option<Instant> = None;
    let result = loop {
        if stop.load(Ordering::SeqCst) {
            break Ok(());
        }
        let mut progressed = false;
        if probe.is_none() && heard.elapsed() >= live.idle {
            probe = Some(Instant::now());
        }
        if let Some(started) = probe {
            match sess.channel_session() {
                Ok(mut ch) => {
                    let _ = ch.close();
                    drop(ch);
                    heard = Instant::now();
                    probe = None;
                }
                Err(e) if would_block(&e) => {
                    if started.elapsed() > live.timeout {
                        break Err(RemoteError::ConnectionLost {
                            stage: Stage::Exec,
                            detail: format!(
                                "the host answered nothing for {} s: the link died without closing",
                                (started.elapsed() + live.idle).as_secs()
                            ),
                        });
                    }
                }
                // An answer all the same (e.g. a refused session): the link and server are alive.
                Err(e) if matches!(e.code(), ssh2::ErrorCode::Session(-21 | -22)) => {
                    heard = Instant::now();
                    probe = None;
                }
                Err(e) => {
                    break Err(RemoteError::ConnectionLost {
                        stage: Stage::Exec,
                        detail: e.to_string(),
                    })
                }
            }
        }
        // One channel open at a time: no new connection while the probe waits for its answer.
        let accepting = if probe.is_none() {
            listener.accept()
        } else {
            Err(ErrorKind::WouldBlock.into())
        };
        match accepting {
            Ok((local, _)) => {
                accepted.fetch_add(1, Ordering::SeqCst);
                let _ = local.set_nodelay(true);
                let _ = local.set_nonblocking(true);
                let opening = Instant::now();
                let mut unanswered = false;
                let channel = loop {
                    match sess.channel_direct_tcpip("127.0.0.1", remote_port, None) {
                        Ok(c) => break Some(c),
                        Err(e) if would_block(&e) => {
                            // The open is a round trip too: no answer in time, the link is dead.
                            if opening.elapsed() > live.timeout {
                                unanswered = true;
                                break None;
                            }
                            std::thread::sleep(Duration::from_millis(1))
                        }
                        Err(e) => {
                            tracing::debug!("forward: channel to {remote_port} refused: {e}");
                            break None;
                        }
                    }
                    if stop.load(Ordering::SeqCst) {
                        break None;
                    }
                };
                match channel {
                    Some(channel) => pairs.push(Pair {
                        local,
                        channel,
                        to_local: Vec::new(),
                        to_remote: Vec::new(),
                        local_eof: false,
                        remote_eof: false,
                    }),
                    None => {
                        let _ = local.shutdown(Shutdown::Both);
                    }
                }
                if unanswered {
                    break Err(RemoteError::ConnectionLost {
                        stage: Stage::Exec,
                        detail: format!(
                            "the host did not answer a new connection within {} s: the link died without closing",
                            live.timeout.as_secs()
                        ),
                    });
                }
                heard = Instant::now();
                progressed = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => {
                break Err(RemoteError::Network {
                    stage: Stage::Exec,
                    detail: e.to_string(),
                })
            }
        }
        let mut dead = Vec::new();
        for (i, p) in pairs.iter_mut().enumerate() {
            match step(p, &mut buf) {
                Ok((moved, from_host)) => {
                    progressed |= moved;
                    if from_host {
                        heard = Instant::now();
                    }
                }
                Err(e) => {
                    tracing::debug!("forward: a relay ended: {e}");
                    dead.push(i);
                    continue;
                }
            }
            if p.local_eof && p.remote_eof && p.to_local.is_empty() && p.to_remote.is_empty() {
                dead.push(i);
            }
        }
        for i in dead.into_iter().rev() {
            let mut p = pairs.remove(i);
            let _ = p.local.shutdown(Shutdown::Both);
            let _ = p.channel.close();
        }
        if progressed {
            idle = Duration::from_millis(1);
        } else {
            // A keepalive when due (set at connect): an idle tunnel still checks its link.
            let _ = sess.keepalive_send();
            std::thread::sleep(idle);
            idle = (idle * 2).min(Duration::from_millis(20));
        }
    };
    for mut p in pairs {
        let _ = p.local.shutdown(Shutdown::Both);
        let _ = p.channel.close();
    }
    sess.set_blocking(true);
    drop(conn);
    result
}

/// Move what can move in both directions: (anything moved, something came from the host).
fn step(p: &mut Pair, buf: &mut [u8]) -> std::io::Result<(bool, bool)> {
    let mut moved = false;
    let mut from_host = false;
    if p.to_local.is_empty() && !p.remote_eof {
        match p.channel.read(buf) {
            Ok(0) if p.channel.eof() => {
                p.remote_eof = true;
                let _ = p.local.shutdown(Shutdown::Write);
                moved = true;
                from_host = true;
            }
            Ok(0) => {}
            Ok(n) => {
                p.to_local.extend_from_slice(&buf[..n]);
                moved = true;
                from_host = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    if !p.to_local.is_empty() {
        match p.local.write(&p.to_local) {
            Ok(n) => {
                p.to_local.drain(..n);
                moved = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    if p.to_remote.is_empty() && !p.local_eof {
        match p.local.read(buf) {
            Ok(0) => {
                p.local_eof = true;
                let _ = p.channel.send_eof();
                moved = true;
            }
            Ok(n) => {
                p.to_remote.extend_from_slice(&buf[..n]);
                moved = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    if !p.to_remote.is_empty() {
        match p.channel.write(&p.to_remote) {
            Ok(n) => {
                p.to_remote.drain(..n);
                moved = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok((moved, from_host))
}
