//! Opening an SSH connection with `ssh2` (blocking libssh2): DNS with a timeout, TCP connect with
//! a timeout per resolved address and `TCP_NODELAY`, the handshake under `Session::set_timeout`,
//! host key verification through a caller-supplied check, then public-key (from memory) or
//! password login. A jump host (`ssh -J`) is reached the same way, then a `direct-tcpip` channel
//! through it carries the second SSH session (see [`super::jump`]).

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ssh2::Session;

use crate::infra::cancel::CancelToken;
use crate::infra::ipc::Role;
use crate::infra::secret::Secret;
use crate::remote::endpoint::{ConnectOptions, Endpoint};
use crate::remote::error::{RemoteError, Stage};
use crate::remote::hostkey::PresentedKey;
use crate::remote::jump::JumpPump;

/// How to log in. The private key is the plaintext OpenSSH/PEM text (decrypt it with `ssh-key`
/// first: libssh2 reports a wrong passphrase and a damaged key the same way).
#[derive(Debug, Clone, Copy)]
pub enum Auth<'a> {
    Key(&'a Secret),
    Password(&'a Secret),
}

impl Auth<'_> {
    fn method(&self) -> &'static str {
        match self {
            Auth::Key(_) => "publickey",
            Auth::Password(_) => "password",
        }
    }
}

/// Seconds between SSH keepalives on an otherwise idle connection.
pub const KEEPALIVE_S: u32 = 15;

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// Checks a presented host key (pinning rules live with the caller; see `hostkey::decide`).
pub type KeyVerifier<'a> =
    dyn FnMut(Role, &Endpoint, &PresentedKey) -> Result<(), RemoteError> + 'a;

/// An authenticated SSH session (and, through a jump host, the session that carries it).
pub struct Connection {
    session: Session,
    /// Kept alive while the session runs over it; stopped on drop.
    _jump: Option<JumpPump>,
    target_key: PresentedKey,
    opts: ConnectOptions,
    /// `publickey` or `password` once logged in.
    auth_method: Option<&'static str>,
    /// How long the first auth request took (one round trip), once tried.
    auth_rtt_ms: Option<f64>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("host_key", &self.target_key.fingerprint)
            .field("via_jump", &self._jump.is_some())
            .finish()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Say goodbye, and do not wait long for channels that were abandoned on cancel: freeing
        // the session would otherwise wait `io_timeout` for each one's close confirmation.
        self.session.set_blocking(true);
        self.session.set_timeout(200);
        let _ = self.session.disconnect(
            Some(ssh2::DisconnectCode::ByApplication),
            "gpurent: done",
            None,
        );
    }
}

impl Connection {
    /// The libssh2 session (blocking, with `io_timeout`), for channels, SCP and SFTP.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The host key the target presented (already verified).
    pub fn host_key(&self) -> &PresentedKey {
        &self.target_key
    }

    pub fn options(&self) -> &ConnectOptions {
        &self.opts
    }

    /// How this connection logged in (`publickey`, `password`), if it did.
    pub fn auth_method(&self) -> Option<&'static str> {
        self.auth_method
    }

    /// The duration of the first auth request (one SSH round trip), once a login was tried.
    pub fn auth_round_trip_ms(&self) -> Option<f64> {
        self.auth_rtt_ms
    }

    /// Log in to the target. The session's timeout becomes `io_timeout` afterwards.
    pub fn login(&mut self, user: &str, auth: Auth<'_>) -> Result<(), RemoteError> {
        let mut rtt = None;
        let r = login(&self.session, user, auth, &self.opts, &mut rtt);
        if rtt.is_some() {
            self.auth_rtt_ms = rtt;
        }
        r?;
        self.auth_method = Some(auth.method());
        self.session
            .set_timeout(ms(self.opts.io_timeout).clamp(1, u32::MAX as u64) as u32);
        Ok(())
    }

    /// One SSH round trip, measured: the smallest of `samples` channel opens (each waits for the
    /// server's confirmation). Closes the channels again.
    pub fn round_trip_ms(&self, samples: u32) -> Result<f64, RemoteError> {
        let mut best = f64::INFINITY;
        for _ in 0..samples.max(1) {
            let t0 = Instant::now();
            let mut ch = self
                .session
                .channel_session()
                .map_err(|e| RemoteError::from_ssh(Stage::Exec, &e, ms(self.opts.io_timeout)))?;
            best = best.min(t0.elapsed().as_secs_f64() * 1000.0);
            let _ = ch.close();
            let _ = ch.wait_close();
        }
        Ok(best)
    }
}

/// Resolve `host:port` on a helper thread so a hanging resolver cannot outlive `timeout`.
pub fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, RemoteError> {
    let (tx, rx) = mpsc::channel();
    let name = host.to_string();
    std::thread::spawn(move || {
        let _ = tx.send(
            (name.as_str(), port)
                .to_socket_addrs()
                .map(|a| a.collect::<Vec<_>>()),
        );
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(addrs)) if !addrs.is_empty() => Ok(addrs),
        Ok(Ok(_)) => Err(RemoteError::DnsFailed {
            host: host.into(),
            detail: "no addresses".into(),
        }),
        Ok(Err(e)) => Err(RemoteError::DnsFailed {
            host: host.into(),
            detail: e.to_string(),
        }),
        Err(_) => Err(RemoteError::TimedOut {
            stage: Stage::Dns,
            after_ms: ms(timeout),
        }),
    }
}

/// TCP to the first resolved address that answers; each gets `connect_timeout`.
pub fn tcp_connect(
    ep: &Endpoint,
    opts: &ConnectOptions,
    cancel: &CancelToken,
) -> Result<TcpStream, RemoteError> {
    let addrs = resolve(&ep.host, ep.port, opts.dns_timeout)?;
    let mut last = None;
    for addr in addrs {
        cancel.check()?;
        match TcpStream::connect_timeout(&addr, opts.connect_timeout) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => {
                last = Some(RemoteError::from_io(
                    Stage::Connect,
                    &addr.to_string(),
                    &e,
                    ms(opts.connect_timeout),
                ))
            }
        }
    }
    Err(last.unwrap_or_else(|| RemoteError::DnsFailed {
        host: ep.host.clone(),
        detail: "no addresses".into(),
    }))
}

/// Handshake over an open stream and return the session with the key the server presented.
fn handshake<S: 'static + StreamFd>(
    stream: S,
    opts: &ConnectOptions,
) -> Result<(Session, PresentedKey), RemoteError> {
    let hs_ms = ms(opts.handshake_timeout);
    let mut session =
        Session::new().map_err(|e| RemoteError::from_ssh(Stage::Handshake, &e, hs_ms))?;
    session.set_timeout(hs_ms.min(u32::MAX as u64).max(1) as u32);
    session.set_tcp_stream(stream);
    session
        .handshake()
        .map_err(|e| RemoteError::from_ssh(Stage::Handshake, &e, hs_ms))?;
    let key = PresentedKey::from_session(&session)?;
    // Keepalives (ssh's ServerAliveInterval): libssh2 sends one when the I/O loops call
    // `keepalive_send` and the interval has passed; an idle channel then still sees traffic, and
    // a link that died without a FIN fails its writes instead of looking open.
    session.set_keepalive(true, KEEPALIVE_S);
    Ok((session, key))
}

/// Log in; an auth failure says which methods the server offers. `rtt_ms` gets how long the
/// first ("none") auth request took: one SSH round trip.
fn login(
    session: &Session,
    user: &str,
    auth: Auth<'_>,
    opts: &ConnectOptions,
    rtt_ms: &mut Option<f64>,
) -> Result<(), RemoteError> {
    let hs_ms = ms(opts.handshake_timeout);
    // "none" auth: one round trip that also lists the accepted methods.
    let t0 = Instant::now();
    let offered = match session.auth_methods(user) {
        Ok(m) => m.to_string(),
        Err(e) if session.authenticated() => {
            tracing::debug!("none auth accepted: {e}");
            *rtt_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
            return Ok(());
        }
        Err(e) => return Err(RemoteError::from_ssh(Stage::Auth, &e, hs_ms)),
    };
    *rtt_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    if session.authenticated() {
        return Ok(());
    }
    let rejected = |offered: &str| RemoteError::AuthRejected {
        user: user.to_string(),
        method: auth.method().into(),
        offered: if offered.is_empty() {
            "none".into()
        } else {
            offered.into()
        },
    };
    if !offered.split(',').any(|m| m == auth.method()) {
        return Err(rejected(&offered));
    }
    let r = match auth {
        Auth::Key(pem) => session.userauth_pubkey_memory(user, None, pem.expose(), None),
        Auth::Password(pw) => session.userauth_password(user, pw.expose()),
    };
    match r {
        Ok(()) if session.authenticated() => Ok(()),
        Ok(()) => Err(rejected(&offered)),
        Err(e) => match e.code() {
            // AUTHENTICATION_FAILED, PUBLICKEY_UNVERIFIED
            ssh2::ErrorCode::Session(-18) | ssh2::ErrorCode::Session(-19) => {
                Err(rejected(&offered))
            }
            _ => Err(RemoteError::from_ssh(Stage::Auth, &e, hs_ms)),
        },
    }
}

#[cfg(unix)]
pub(crate) trait StreamFd: std::os::unix::io::AsRawFd {}
#[cfg(unix)]
impl<T: std::os::unix::io::AsRawFd> StreamFd for T {}
#[cfg(windows)]
pub(crate) trait StreamFd: std::os::windows::io::AsRawSocket {}
#[cfg(windows)]
impl<T: std::os::windows::io::AsRawSocket> StreamFd for T {}

/// Connect to `target` (optionally through a jump host, logging in there with the given
/// credentials) and verify each presented host key with `verify`. The target session is not
/// logged in yet: call [`Connection::login`] (or use [`connect`]).
pub fn open(
    target: &Endpoint,
    jump: Option<(&Endpoint, Auth<'_>)>,
    opts: &ConnectOptions,
    verify: &mut KeyVerifier<'_>,
    cancel: &CancelToken,
) -> Result<Connection, RemoteError> {
    let (session, key, pump) = match jump {
        None => {
            let stream = tcp_connect(target, opts, cancel)?;
            cancel.check()?;
            let (s, k) = handshake(stream, opts)?;
            (s, k, None)
        }
        Some((j, auth)) => {
            let stream = tcp_connect(j, opts, cancel)?;
            cancel.check()?;
            let (js, jkey) = handshake(stream, opts)?;
            verify(Role::Jump, j, &jkey)?;
            login(&js, &j.user, auth, opts, &mut None)?;
            cancel.check()?;
            let (local, pump) = JumpPump::start(js, target, opts)?;
            let (s, k) = handshake(local, opts)?;
            (s, k, Some(pump))
        }
    };
    verify(Role::Target, target, &key)?;
    cancel.check()?;
    Ok(Connection {
        session,
        _jump: pump,
        target_key: key,
        opts: *opts,
        auth_method: None,
        auth_rtt_ms: None,
    })
}

/// [`open`], then log in to the target; a jump host logs in with the same credentials.
pub fn connect(
    target: &Endpoint,
    jump: Option<&Endpoint>,
    auth: Auth<'_>,
    opts: &ConnectOptions,
    verify: &mut KeyVerifier<'_>,
    cancel: &CancelToken,
) -> Result<Connection, RemoteError> {
    let mut conn = open(target, jump.map(|j| (j, auth)), opts, verify, cancel)?;
    conn.login(&target.user, auth)?;
    Ok(conn)
}
