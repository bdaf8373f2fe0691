//! The one way into a saved host: where the user's OpenSSH files and agent are ([`SshEnv`]), the
//! key to log in with ([`LoginKey`], loaded from the keychain), the host-key check run on every
//! presented key ([`verifier`]), and [`connect_saved`] / [`open_saved`], which every step that
//! works on a saved host (hosts, setup, transfer, and later monitor and billing) uses.

use std::path::PathBuf;

use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::ipc::Role;
use crate::infra::secret::Secret;
use crate::remote::connect::{open, Auth, Connection, KeyVerifier};
use crate::remote::endpoint::{ConnectOptions, Endpoint};
use crate::remote::error::RemoteError;
use crate::remote::hostkey::{
    self, Decision, KeyCheck, KnownHostsVerdict, Pin, PinSource, PresentedKey,
};
use crate::remote::hosts::Host;
use crate::remote::install::SSHD_DROPIN_DIR;
use crate::remote::sshconfig;

/// Where the user's OpenSSH files are, the agent, and timeouts. [`SshEnv::detect`] for real use;
/// tests point every path into a temp dir.
#[derive(Debug, Clone)]
pub struct SshEnv {
    /// The user's own `known_hosts` (its verdicts are respected); `None`: not consulted.
    pub known_hosts: Option<PathBuf>,
    /// `~/.ssh/config`.
    pub ssh_config: PathBuf,
    /// The running ssh-agent's socket, if any.
    pub agent_socket: Option<PathBuf>,
    pub connect: ConnectOptions,
    /// Where the hardening step writes its drop-in on the host.
    pub sshd_dropin_dir: String,
}

impl SshEnv {
    /// The current user's `~/.ssh` files and `SSH_AUTH_SOCK`.
    pub fn detect() -> Result<SshEnv, RemoteError> {
        let home = directories::BaseDirs::new()
            .map(|b| b.home_dir().to_path_buf())
            .ok_or(RemoteError::Core(crate::CoreError::NoHomeDirectory))?;
        Ok(SshEnv::under_home(
            &home,
            std::env::var_os("SSH_AUTH_SOCK").as_deref(),
        ))
    }

    /// `<home>/.ssh/{known_hosts,config}` and the given agent socket.
    pub fn under_home(home: &std::path::Path, ssh_auth_sock: Option<&std::ffi::OsStr>) -> SshEnv {
        SshEnv {
            known_hosts: Some(home.join(".ssh/known_hosts")),
            ssh_config: home.join(".ssh/config"),
            agent_socket: sshconfig::agent_socket(ssh_auth_sock),
            connect: ConnectOptions::default(),
            sshd_dropin_dir: SSHD_DROPIN_DIR.into(),
        }
    }
}

/// A private key to log in with: plaintext PEM (decrypted) and its `authorized_keys` line.
#[derive(Debug)]
pub struct LoginKey {
    pub label: String,
    pub pem: Secret,
    pub public_line: String,
}

/// A host key to pin once the whole connection succeeded: the hop, the key, why, and (for a
/// re-pin) the fingerprint it replaces.
pub(crate) type ToPin = (Role, PresentedKey, PinSource, Option<String>);

/// The key check run on every presented host key of one connection attempt. Keys to pin are
/// collected in `to_pin`; nothing is written until the whole connection succeeded.
pub(crate) fn verifier<'a>(
    host: Option<&'a Host>,
    env: &'a SshEnv,
    trust: &'a [String],
    repin_to: Option<&'a str>,
    to_pin: &'a mut Vec<ToPin>,
) -> impl FnMut(Role, &Endpoint, &PresentedKey) -> Result<(), RemoteError> + 'a {
    let mut seen: Vec<String> = Vec::new();
    move |role, ep, key| {
        seen.push(key.fingerprint.clone());
        let pinned = host.and_then(|h| h.pinned(role)).map(|k| Pin {
            fingerprint: k.fingerprint.clone(),
        });
        let kh_path = env.known_hosts.as_deref();
        let verdict = match kh_path {
            // The check needs a session only for libssh2's known-hosts store; any session does.
            Some(p) => match ssh2::Session::new() {
                Ok(s) => hostkey::check_known_hosts(&s, p, &ep.host, ep.port, key),
                Err(_) => KnownHostsVerdict::NotFound,
            },
            None => KnownHostsVerdict::NotFound,
        };
        let decision = hostkey::decide(&KeyCheck {
            role,
            host: &ep.host,
            port: ep.port,
            presented: key,
            pinned: pinned.as_ref(),
            known_hosts: verdict,
            known_hosts_path: &kh_path.map(|p| p.display().to_string()).unwrap_or_default(),
            trust,
        });
        match (decision, repin_to) {
            (Ok(Decision::Pinned), _) => Ok(()),
            (Ok(Decision::PinNow(source)), _) => {
                to_pin.push((role, key.clone(), source, None));
                Ok(())
            }
            (
                Err(RemoteError::HostKeyChanged {
                    old_fingerprint,
                    new_fingerprint,
                    ..
                }),
                Some(want),
            ) if hostkey::normalize_fingerprint(want) == new_fingerprint => {
                to_pin.push((role, key.clone(), PinSource::Repin, Some(old_fingerprint)));
                Ok(())
            }
            (Err(RemoteError::HostKeyUnknown { fingerprint, .. }), _)
                if hostkey::unmatched_trust(trust, &seen).is_some() =>
            {
                let given = hostkey::unmatched_trust(trust, &seen)
                    .cloned()
                    .unwrap_or_default();
                Err(RemoteError::TrustMismatch {
                    role,
                    given: hostkey::normalize_fingerprint(&given),
                    actual: fingerprint,
                })
            }
            (Err(e), _) => Err(e),
        }
    }
}

/// Open a connection to a saved host, not yet logged in: its pinned host keys are checked (keys
/// the user's own known_hosts vouches for are accepted and collected in `to_pin`, for the caller
/// to pin or not), and a jump host is logged in to with `key`.
pub(crate) fn open_saved(
    host: &Host,
    env: &SshEnv,
    key: &LoginKey,
    to_pin: &mut Vec<ToPin>,
    cancel: &CancelToken,
) -> Result<Connection, RemoteError> {
    // A released machine's address may already belong to someone else's new machine.
    host.still_exists()?;
    let jump = host.jump_endpoint();
    let mut verify = verifier(Some(host), env, &[], None, to_pin);
    let verify: &mut KeyVerifier<'_> = &mut verify;
    open(
        &host.target(),
        jump.as_ref().map(|j| (j, Auth::Key(&key.pem))),
        &env.connect,
        verify,
        cancel,
    )
}

/// A connection to a saved host, logged in with `key` (pinned host keys checked).
pub(crate) fn connect_saved(
    host: &Host,
    env: &SshEnv,
    key: &LoginKey,
    cancel: &CancelToken,
) -> Result<Connection, RemoteError> {
    let mut to_pin = Vec::new();
    let mut conn = open_saved(host, env, key, &mut to_pin, cancel)?;
    conn.login(&host.user, Auth::Key(&key.pem))?;
    Ok(conn)
}

impl App {
    /// Load a key from the keychain for logging in (`passphrase` for encrypted keys).
    pub fn host_login_key(
        &self,
        key_label: &str,
        passphrase: Option<&Secret>,
    ) -> Result<LoginKey, RemoteError> {
        let public_line = self.key_export_pub(key_label)?;
        let pem = self.load_private(key_label, passphrase)?;
        Ok(LoginKey {
            label: key_label.to_string(),
            pem,
            public_line,
        })
    }

    /// The key a saved host uses, loaded from the keychain.
    pub fn host_key_for(
        &self,
        host_label: &str,
        passphrase: Option<&Secret>,
    ) -> Result<LoginKey, RemoteError> {
        let host = self.host_get(host_label)?;
        // Say so before asking for a passphrase the released machine would never see.
        host.still_exists()?;
        let key = host
            .key_label
            .ok_or_else(|| RemoteError::KeyUnavailable(host_label.to_string()))?;
        self.host_login_key(&key, passphrase)
    }
}
