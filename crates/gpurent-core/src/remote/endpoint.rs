//! Where and how patiently to reach a host: the [`Endpoint`] and the [`ConnectOptions`] timeouts,
//! shared by [`crate::remote::connect`] and the jump-host pump ([`crate::remote::jump`]) without
//! either importing the other.

use std::time::Duration;

/// Where to log in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
}

impl Endpoint {
    pub fn new(host: impl Into<String>, port: u16, user: impl Into<String>) -> Self {
        Endpoint {
            host: host.into(),
            port,
            user: user.into(),
        }
    }
}

/// Timeouts. The defaults suit a rented host across the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    pub dns_timeout: Duration,
    /// Per resolved address.
    pub connect_timeout: Duration,
    /// Each blocking libssh2 call in the handshake and login.
    pub handshake_timeout: Duration,
    /// Each blocking libssh2 call after login (0 would mean "wait forever"; not allowed).
    pub io_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            dns_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(20),
            io_timeout: Duration::from_secs(60),
        }
    }
}
