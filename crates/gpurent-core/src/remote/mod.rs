//! Reaching rented hosts over SSH (`ssh2`, blocking libssh2): connections with typed outcomes,
//! pinned host keys, exec without deadlock, key install and hardening, and `~/.ssh/config` blocks.
//! The design and every outcome code are in `docs/remote.md`.
//!
//! - [`endpoint`]: where to log in and the timeouts; [`connect`]: DNS/TCP/handshake timeouts, host key check hook, key-from-memory or password
//!   login, jump hosts ([`jump`]).
//! - [`hostkey`]: fingerprints, the user's `known_hosts`, the pinning decision.
//! - [`exec`]: run a command, read stdout and stderr interleaved, cancel.
//! - [`job`]: long work in its own process group with a pid file, so a cancel kills it on the host.
//! - [`install`]: append our key to `authorized_keys`, prove a key login, switch passwords off.
//! - [`sshconfig`]: the marked `Host gpurent-<label>` block, ssh-agent, VS Code links.
//! - [`agent`]: the ssh-agent per OS (socket, launchd, Windows' named pipe), `ssh-add` lifetimes.
//! - [`http`]: one HTTP/1.1 request to a server on the host's loopback, over an SSH channel.
//! - [`hosts`]: saved hosts and pins in SQLite; [`quote`]: quoting for remote shells and the
//!   line any login shell runs as POSIX `sh`; [`text`]: remote text cleaned of terminal controls.
//! - [`error`]: [`RemoteError`], every outcome with its stable code.
//!
//! Blocking calls: in async contexts run them on a blocking thread (`spawn_blocking`).

pub mod agent;
pub mod connect;
pub mod endpoint;
pub mod error;
pub mod exec;
pub mod forward;
pub mod hostkey;
pub mod hosts;
pub mod http;
pub mod install;
pub mod job;
pub mod jump;
pub mod quote;
pub mod sshconfig;
pub mod text;

pub use crate::infra::ipc::Role;
pub use connect::{connect, open, Auth, Connection};
pub use endpoint::{ConnectOptions, Endpoint};
pub use error::{RemoteError, Stage};
pub use exec::{exec, exec_with, ExecOptions, ExecOutput, OutStream};
pub use hosts::{Host, HostCheck, HostSpec, JumpSpec, PinnedKey, RepinRecord};
pub use quote::{login_line, sh_c, shell_join, shell_quote};
pub use text::clean as clean_text;
