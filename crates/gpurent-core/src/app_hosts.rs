//! Hosts on the [`App`] facade: add a host from parsed fields (pinning its host key only after
//! the user confirmed the fingerprint), list, check (latency, host key, key login), re-pin,
//! delete, install our key with a password, and write the `~/.ssh/config` block.
//!
//! Private keys come in as a [`LoginKey`] (plaintext PEM in a `Secret` + public line); the edges
//! load it from the keychain (`App::load_private` / `App::key_export_pub` of `keys`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::App;
use crate::cancel::CancelToken;
use crate::error::Coded;
use crate::events::ProgressSink;
use crate::remote::connect::{open, Auth, ConnectOptions, Endpoint, KeyVerifier};
use crate::remote::error::{RemoteError, Role};
use crate::remote::hostkey::{
    self, Decision, KeyCheck, KnownHostsVerdict, Pin, PinSource, PresentedKey,
};
use crate::remote::hosts::{self, Host, HostCheck, HostSpec};
use crate::remote::install::{self, HardeningReport, InstallOutcome, SSHD_DROPIN_DIR};
use crate::remote::sshconfig::{self, ConfigEntry};
use crate::secret::Secret;

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

/// `host add`: parsed fields, an optional label, the key to use, and confirmed fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HostAddRequest {
    pub spec: HostSpec,
    pub label: Option<String>,
    pub key_label: Option<String>,
    /// Fingerprints (`SHA256:…`) the user confirmed; a key is pinned only if it is listed here
    /// (or the user's own known_hosts already lists it).
    pub trust: Vec<String>,
}

/// `host install-key`: the password the platform gave (used once, never stored), our key, and
/// whether to switch password logins off after a verified key login.
#[derive(Debug, Clone, Copy)]
pub struct KeyInstall<'a> {
    pub password: &'a Secret,
    pub key: &'a LoginKey,
    pub disable_password_login: bool,
}

/// What installing the key did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct KeyInstallReport {
    pub outcome: InstallOutcome,
    /// A fresh key login worked: the password can be forgotten.
    pub key_login_verified: bool,
    pub hardening: Option<HardeningReport>,
    /// Why hardening was not done, when it was asked for and could not be.
    pub hardening_problem: Option<String>,
}

/// What `host ssh-config` wrote and how to use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SshConfigResult {
    /// `gpurent-<label>`
    pub alias: String,
    pub config_path: String,
    pub changed: bool,
    /// Set when this write made the one-time backup of the user's config.
    pub backup_path: Option<String>,
    /// The exported PUBLIC key `IdentityFile` points at.
    pub identity_file: String,
    pub known_hosts_file: String,
    /// An ssh-agent is running (the private key must be loaded into it for `ssh` to log in).
    pub agent_running: bool,
    pub ssh_command: String,
    pub vscode_uri: String,
}

fn validate_spec(spec: &HostSpec) -> Result<(), RemoteError> {
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 255
            && !s.starts_with('-')
            && !s
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "'\"`$;&|<>\\".contains(c))
    };
    if !name_ok(&spec.address) {
        return Err(RemoteError::invalid(
            "address",
            "is not a host name or address",
        ));
    }
    if !name_ok(&spec.user) || spec.user.contains(['@', ':', '/']) {
        return Err(RemoteError::invalid("user", "is not a user name"));
    }
    if spec.port == 0 {
        return Err(RemoteError::invalid("port", "must be 1-65535"));
    }
    if let Some(j) = &spec.jump {
        if !name_ok(&j.address) || !name_ok(&j.user) || j.port == 0 {
            return Err(RemoteError::invalid("jump", "is not user@host:port"));
        }
    }
    Ok(())
}

/// The key check run on every presented host key of one connection attempt. Keys to pin are
/// collected in `to_pin`; nothing is written until the whole connection succeeded.
pub(crate) fn verifier<'a>(
    host: Option<&'a Host>,
    env: &'a SshEnv,
    trust: &'a [String],
    repin_to: Option<&'a str>,
    to_pin: &'a mut Vec<(Role, PresentedKey, PinSource, Option<String>)>,
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

impl App {
    /// Saved hosts, by label.
    pub fn host_list(&self) -> Result<Vec<Host>, RemoteError> {
        self.with_store_remote(hosts::list)
    }

    /// One saved host.
    pub fn host_get(&self, label: &str) -> Result<Host, RemoteError> {
        self.with_store_remote(|s| hosts::require(s, label))
    }

    fn with_store_remote<T>(
        &self,
        f: impl FnOnce(&crate::store::Store) -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        let mut out = None;
        self.with_store(|s| {
            out = Some(f(s));
            Ok(())
        })?;
        out.unwrap_or_else(|| Err(RemoteError::invalid("store", "not reached")))
    }

    /// Connect to a new host, check its host key and save it. The first time, this fails with
    /// `host_key_unknown` carrying the fingerprint; call again with it in `trust` once the user
    /// confirmed it. A host behind a jump host needs `key` (logging in to the jump host is the
    /// only way to reach it).
    pub fn host_add(
        &self,
        req: &HostAddRequest,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<Host, RemoteError> {
        validate_spec(&req.spec)?;
        let label = req
            .label
            .clone()
            .unwrap_or_else(|| hosts::default_label(&req.spec));
        hosts::validate_label(&label)?;
        if self.with_store_remote(|s| hosts::get(s, &label))?.is_some() {
            return Err(RemoteError::HostExists(label));
        }
        let target = Endpoint::new(&req.spec.address, req.spec.port, &req.spec.user);
        let jump = req
            .spec
            .jump
            .as_ref()
            .map(|j| Endpoint::new(&j.address, j.port, &j.user));
        let jump_auth = match (&jump, key) {
            (None, _) => None,
            (Some(j), Some(k)) => Some((j, Auth::Key(&k.pem))),
            (Some(_), None) => return Err(RemoteError::KeyUnavailable(label)),
        };
        let mut to_pin = Vec::new();
        {
            let mut verify = verifier(None, env, &req.trust, None, &mut to_pin);
            let verify: &mut KeyVerifier<'_> = &mut verify;
            let _conn = open(&target, jump_auth, &env.connect, verify, cancel)?;
        }
        let now = self.now_ms();
        let key_label = req
            .key_label
            .clone()
            .or_else(|| key.map(|k| k.label.clone()));
        self.with_store_remote(|s| {
            hosts::insert(s, &label, &req.spec, key_label.as_deref(), now)?;
            for (role, k, source, _) in &to_pin {
                hosts::pin(s, &label, *role, k, *source, now)?;
            }
            hosts::require(s, &label)
        })
    }

    /// Connect, verify the pinned host key, try the key login and measure one round trip.
    /// A changed or unknown host key is an error (hard stop); a refused key login is a result.
    pub fn host_check(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostCheck, RemoteError> {
        let host = self.host_get(label)?;
        let jump = host.jump_endpoint();
        let step = crate::events::steps(progress, Some(2));
        step("connect", 0);
        let mut to_pin = Vec::new();
        let mut conn = {
            let mut verify = verifier(Some(&host), env, &[], None, &mut to_pin);
            let verify: &mut KeyVerifier<'_> = &mut verify;
            open(
                &host.target(),
                jump.as_ref().map(|j| (j, Auth::Key(&key.pem))),
                &env.connect,
                verify,
                cancel,
            )?
        };
        step("login", 1);
        let fingerprint = conn.host_key().fingerprint.clone();
        let (key_login_ok, problem, latency_ms) = match conn.login(&host.user, Auth::Key(&key.pem))
        {
            Ok(()) => (true, None, Some(conn.round_trip_ms(3)?)),
            Err(e @ (RemoteError::AuthRejected { .. } | RemoteError::KeyUnusable { .. })) => {
                (false, Some(e.code().to_string()), conn.auth_round_trip_ms())
            }
            Err(e) => return Err(e),
        };
        drop(conn);
        let check = HostCheck {
            checked_ms: self.now_ms(),
            latency_ms,
            host_key_ok: true,
            host_key_fingerprint: fingerprint,
            key_login_ok,
            key_login_problem: problem,
        };
        let now = self.now_ms();
        self.with_store_remote(|s| {
            // Keys pinned through known_hosts after the host was added (e.g. a new jump key).
            for (role, k, source, _) in &to_pin {
                hosts::pin(s, label, *role, k, *source, now)?;
            }
            hosts::record_check(s, label, &check)
        })?;
        Ok(check)
    }

    /// Accept a changed host key: connect, and if the host now presents exactly `fingerprint`
    /// (the new one the user confirmed), pin it and record who did it when. Returns the host.
    pub fn host_repin(
        &self,
        label: &str,
        fingerprint: &str,
        changed_by: &str,
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<Host, RemoteError> {
        let host = self.host_get(label)?;
        let jump = host.jump_endpoint();
        let jump_auth = match (&jump, key) {
            (None, _) => None,
            (Some(j), Some(k)) => Some((j, Auth::Key(&k.pem))),
            (Some(_), None) => return Err(RemoteError::KeyUnavailable(label.into())),
        };
        let mut to_pin = Vec::new();
        {
            let mut verify = verifier(Some(&host), env, &[], Some(fingerprint), &mut to_pin);
            let verify: &mut KeyVerifier<'_> = &mut verify;
            let _conn = open(&host.target(), jump_auth, &env.connect, verify, cancel)?;
        }
        let now = self.now_ms();
        let by = if changed_by.trim().is_empty() {
            "user"
        } else {
            changed_by.trim()
        };
        self.with_store_remote(|s| {
            for (role, k, source, old) in &to_pin {
                hosts::pin(s, label, *role, k, *source, now)?;
                if let Some(old) = old {
                    hosts::record_repin(s, label, *role, by, old, &k.fingerprint, now)?;
                }
            }
            hosts::require(s, label)
        })
    }

    /// Forget a host (its pins and history too) and remove its `~/.ssh/config` block if any.
    pub fn host_delete(&self, label: &str, env: &SshEnv) -> Result<(), RemoteError> {
        if !self.with_store_remote(|s| hosts::delete(s, label))? {
            return Err(RemoteError::UnknownHost(label.into()));
        }
        sshconfig::remove_block(&env.ssh_config, label)?;
        Ok(())
    }

    /// Log in once with the host's password, append our public key to `authorized_keys`, prove
    /// a key login in a fresh session, and optionally switch password logins off (only after that
    /// proof). The password is used for this call only and never stored.
    pub fn host_install_key(
        &self,
        label: &str,
        req: &KeyInstall<'_>,
        env: &SshEnv,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<KeyInstallReport, RemoteError> {
        let KeyInstall {
            password,
            key,
            disable_password_login,
        } = *req;
        let host = self.host_get(label)?;
        let jump = host.jump_endpoint();
        let total = Some(if disable_password_login { 4 } else { 3 });
        let step = crate::events::steps(progress, total);
        let connect = |auth: Auth<'_>| -> Result<crate::remote::Connection, RemoteError> {
            let mut none = Vec::new();
            let mut verify = verifier(Some(&host), env, &[], None, &mut none);
            let verify: &mut KeyVerifier<'_> = &mut verify;
            let mut c = open(
                &host.target(),
                jump.as_ref().map(|j| (j, Auth::Key(&key.pem))),
                &env.connect,
                verify,
                cancel,
            )?;
            c.login(&host.user, auth)?;
            Ok(c)
        };
        step("password_login", 0);
        let outcome = {
            let conn = connect(Auth::Password(password))?;
            step("install_key", 1);
            install::install_public_key(&conn, &key.public_line, cancel)?
        };
        step("verify_key_login", 2);
        let conn = connect(Auth::Key(&key.pem)).map_err(|e| match e {
            RemoteError::AuthRejected { .. } | RemoteError::KeyUnusable { .. } => {
                RemoteError::KeyLoginUnverified {
                    detail: e.to_string(),
                }
            }
            other => other,
        })?;
        let proof = install::prove_key_login(&conn, cancel)?;
        let now = self.now_ms();
        self.with_store_remote(|s| {
            s.conn().execute(
                "UPDATE hosts SET key_label = ?2 WHERE label = ?1",
                rusqlite::params![label, key.label],
            )?;
            hosts::touch(s, label, now)
        })?;
        let (hardening, hardening_problem) = if disable_password_login {
            step("disable_password_login", 3);
            match install::disable_password_login(&conn, &proof, &env.sshd_dropin_dir, cancel) {
                Ok(r) => (Some(r), None),
                Err(RemoteError::HardeningUnavailable { reason }) => (None, Some(reason)),
                Err(e) => return Err(e),
            }
        } else {
            (None, None)
        };
        Ok(KeyInstallReport {
            outcome,
            key_login_verified: true,
            hardening,
            hardening_problem,
        })
    }

    /// Write (or refresh) the `Host gpurent-<label>` block in the user's ssh config, with the
    /// public key exported next to gpurent's data and a known_hosts file of pinned keys.
    pub fn host_ssh_config(
        &self,
        label: &str,
        public_line: &str,
        env: &SshEnv,
    ) -> Result<SshConfigResult, RemoteError> {
        let host = self.host_get(label)?;
        install::key_identity(public_line)?;
        let all = self.host_list()?;
        let dir = self.paths().data.join("ssh");
        let io = |p: &std::path::Path, e| RemoteError::Core(crate::CoreError::io(p, e));
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let key_name = host.key_label.clone().unwrap_or_else(|| "gpurent".into());
        let identity = dir.join(format!("{key_name}.pub"));
        std::fs::write(&identity, format!("{}\n", public_line.trim()))
            .map_err(|e| io(&identity, e))?;
        let kh = dir.join("known_hosts");
        std::fs::write(&kh, hosts::known_hosts_lines(&all)).map_err(|e| io(&kh, e))?;
        let entry = ConfigEntry {
            label: label.into(),
            host_name: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            proxy_jump: host.jump.clone(),
            identity_file: identity.clone(),
            known_hosts_file: Some(kh.clone()),
        };
        let w = sshconfig::upsert_block(&env.ssh_config, &entry)?;
        let alias = sshconfig::alias(label);
        Ok(SshConfigResult {
            ssh_command: format!("ssh {alias}"),
            vscode_uri: sshconfig::vscode_uri(
                label,
                &format!("/home/{}", host.user).replace("/home/root", "/root"),
            ),
            alias,
            config_path: env.ssh_config.display().to_string(),
            changed: w.changed,
            backup_path: w.backup.map(|b| b.display().to_string()),
            identity_file: identity.display().to_string(),
            known_hosts_file: kh.display().to_string(),
            agent_running: env.agent_socket.is_some(),
        })
    }

    /// Load a private key into the running ssh-agent (`ssh-add -`, from memory), for a lifetime.
    pub fn host_agent_add(
        &self,
        env: &SshEnv,
        key: &LoginKey,
        lifetime_s: Option<u32>,
    ) -> Result<(), RemoteError> {
        sshconfig::agent_add(env.agent_socket.as_deref(), &key.pem, lifetime_s)
    }
}
