//! The Hosts step on the [`App`] facade: add a host from parsed fields (pinning its host key only
//! after the user confirmed the fingerprint), list, check (latency, host key, key login), re-pin,
//! delete, install our key with a password, write the `~/.ssh/config` block; and the same as
//! single calls from pasted text and labels for the desktop (keys from the keychain).
//!
//! The host-key prompt is a two-step exchange: the first `host_add_pasted` fails with
//! `host_key_unknown` carrying the fingerprint; the UI shows it, and when the user accepts it calls
//! again with that fingerprint in `trust`. No connection is held open while a person decides, and
//! the CLI's `--trust` uses the same path.
//!
//! Private keys come in as a [`LoginKey`] (plaintext PEM in a `Secret` + public line); logging in
//! to a saved host goes through [`crate::app::login`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::ctx::mark_released;
use crate::app::login::{open_saved, verifier, LoginKey, SshEnv};
use crate::app::App;
use crate::hostparse::{self, HostParseError, ParsedHost, ParsedHostSummary};
use crate::infra::cancel::CancelToken;
use crate::infra::events::ProgressSink;
use crate::infra::ipc::Coded;
use crate::infra::process::Os;
use crate::infra::secret::Secret;
use crate::opener;
use crate::remote::agent::{self, AgentHint, AgentKeep};
use crate::remote::connect::{open, Auth, KeyVerifier};
use crate::remote::endpoint::Endpoint;
use crate::remote::error::RemoteError;
use crate::remote::hosts::{self, Host, HostCheck, HostSpec, JumpSpec};
use crate::remote::install::{self, HardeningReport, InstallOutcome};
use crate::remote::sshconfig::{self, ConfigEntry};

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
    /// What to do where none runs, for this OS (the UI translates it).
    pub agent_hint: AgentHint,
    /// How long the agent keeps the key when gpurent loads it to open a terminal or VS Code
    /// (Windows' agent keeps it across restarts: no lifetime is possible there).
    pub agent_keep: AgentKeep,
    pub ssh_command: String,
    pub vscode_uri: String,
}

/// A terminal or VS Code was started: what ran, and how long the ssh-agent keeps the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Opened {
    /// The command line that started (terminal), or the link that was opened (VS Code).
    pub started: Vec<String>,
    pub agent_keep: AgentKeep,
}

/// The key's lifetime in the agent when a terminal or VS Code is opened.
pub const OPEN_AGENT_LIFETIME_S: u32 = 12 * 3600;

/// Add a host from pasted console text. Deserialized from the UI only (never serialized): the
/// pasted text lands straight in a [`Secret`], so `Debug` shows no password and the text is
/// wiped when the request is dropped.
#[derive(Debug, Deserialize, TS)]
pub struct PasteAdd {
    /// What the user pasted (may contain a password; it is used once and never stored).
    #[ts(type = "string")]
    pub text: Secret,
    pub label: Option<String>,
    /// Our key to log in with (and to install when the paste has a password).
    pub key_label: Option<String>,
    /// Host-key fingerprints the user confirmed (`SHA256:…`).
    pub trust: Vec<String>,
    /// After a verified key login, switch password logins off on the host (not for container
    /// hosts, whose sshd config is reset when they restart).
    #[serde(default)]
    pub disable_password_login: bool,
}

/// What adding did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostAddOutcome {
    pub host: Host,
    /// Set when the paste carried a password and a key was chosen: our key was installed with it.
    pub install: Option<KeyInstallReport>,
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

impl App {
    /// Saved hosts, by label; a rented machine that was released is marked (`released_ms`).
    pub fn host_list(&self) -> Result<Vec<Host>, RemoteError> {
        self.with_store_remote(|s| {
            hosts::list(s)?
                .into_iter()
                .map(|h| mark_released(s, h))
                .collect()
        })
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
    pub fn host_check_with_key(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostCheck, RemoteError> {
        let host = self.host_get(label)?;
        let step = crate::infra::events::steps(progress, Some(2));
        step("connect", 0);
        let mut to_pin = Vec::new();
        let mut conn = open_saved(&host, env, key, &mut to_pin, cancel)?;
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
    pub fn host_repin_with_key(
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
        let _ = std::fs::remove_file(ssh_config_marker(&self.paths().data.join("ssh"), label));
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
        let total = Some(if disable_password_login { 4 } else { 3 });
        let step = crate::infra::events::steps(progress, total);
        let connect = |auth: Auth<'_>| -> Result<crate::remote::Connection, RemoteError> {
            let mut c = open_saved(&host, env, key, &mut Vec::new(), cancel)?;
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
            hosts::set_key_label(s, label, &key.label)?;
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
    pub fn host_ssh_config_with_key(
        &self,
        label: &str,
        public_line: &str,
        env: &SshEnv,
    ) -> Result<SshConfigResult, RemoteError> {
        let host = self.host_get(label)?;
        install::key_identity(public_line)?;
        let dir = self.paths().data.join("ssh");
        let io = |p: &std::path::Path, e| RemoteError::Core(crate::CoreError::io(p, e));
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let identity = ssh_identity_path(&dir, &host);
        std::fs::write(&identity, format!("{}\n", public_line.trim()))
            .map_err(|e| io(&identity, e))?;
        let (w, kh) = self.write_ssh_config_block(&host, &identity, &env.ssh_config)?;
        // Where the block went, so a later move of the host rewrites it there
        // ([`App::host_ssh_config_follow`]).
        let marker = ssh_config_marker(&dir, label);
        std::fs::write(&marker, env.ssh_config.to_string_lossy().as_bytes())
            .map_err(|e| io(&marker, e))?;
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
            agent_hint: agent::no_agent_hint(Os::current()),
            agent_keep: agent::ssh_add_command(Os::current(), Some(OPEN_AGENT_LIFETIME_S)).1,
        })
    }

    /// Load a private key into the running ssh-agent (`ssh-add -`, from memory), for a lifetime
    /// where the OS's agent supports one; says how long it is really kept.
    pub fn host_agent_add(
        &self,
        env: &SshEnv,
        key: &LoginKey,
        lifetime_s: Option<u32>,
    ) -> Result<AgentKeep, RemoteError> {
        agent::add(env.agent_socket.as_deref(), &key.pem, lifetime_s)
    }

    // --- the desktop's calls: pasted text and labels, keys from the keychain ---

    /// Parse pasted console text into a host (a word splitter, never a shell).
    pub fn parse_host_command(&self, text: &str) -> Result<ParsedHost, HostParseError> {
        hostparse::parse(text)
    }

    /// What a paste says (host, port, user, jump, whether it has a password, warnings).
    pub fn host_paste_preview(&self, text: &str) -> Result<ParsedHostSummary, RemoteError> {
        Ok(hostparse::parse(text)?.summary())
    }

    /// Parse, pin the confirmed host key, save; then, if the paste had a password and a key was
    /// chosen, install the key with that password and verify a key login. A registered operation
    /// (its id comes first in `progress`, for `cancel_op`).
    pub fn host_add_pasted(
        &self,
        req: &PasteAdd,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostAddOutcome, RemoteError> {
        self.run_op("host_add", progress, |cancel| {
            self.host_add_pasted_with(req, env, progress, cancel)
        })
    }

    fn host_add_pasted_with(
        &self,
        req: &PasteAdd,
        env: &SshEnv,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<HostAddOutcome, RemoteError> {
        let parsed = hostparse::parse(req.text.expose())?;
        let key = match &req.key_label {
            Some(k) => Some(self.host_login_key(k, None)?),
            None => None,
        };
        let add = HostAddRequest {
            spec: HostSpec::from_parsed(&parsed, None),
            label: req.label.clone().filter(|l| !l.trim().is_empty()),
            key_label: req.key_label.clone(),
            trust: req.trust.clone(),
        };
        // With a password and no key on the host yet, the key login can't work: pin and save only.
        let login_with = if parsed.password.is_some() {
            None
        } else {
            key.as_ref()
        };
        let host = self.host_add(&add, env, login_with, cancel)?;
        let install = match (&parsed.password, &key) {
            (Some(password), Some(key)) => Some(self.host_install_key(
                &host.label,
                &KeyInstall {
                    password,
                    key,
                    disable_password_login: req.disable_password_login,
                },
                env,
                progress,
                cancel,
            )?),
            _ => None,
        };
        let host = self.host_get(&host.label)?;
        Ok(HostAddOutcome { host, install })
    }

    /// Connect to a saved host with its key: host key, key login, latency. A registered
    /// operation.
    pub fn host_check(
        &self,
        label: &str,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostCheck, RemoteError> {
        self.run_op("host_check", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.host_check_with_key(label, env, &key, progress, cancel)
        })
    }

    /// Accept a changed host key the user confirmed (recorded as changed by the desktop user).
    pub fn host_repin(
        &self,
        label: &str,
        fingerprint: &str,
        env: &SshEnv,
        cancel: &CancelToken,
    ) -> Result<Host, RemoteError> {
        // The key is needed only behind a jump host; a locked key still asks for its passphrase.
        let key = match self.host_key_for(label, None) {
            Ok(k) => Some(k),
            Err(e @ RemoteError::Key(crate::keys::KeyError::PassphraseRequired { .. })) => {
                return Err(e)
            }
            Err(_) => None,
        };
        self.host_repin_with_key(
            label,
            fingerprint,
            "desktop user",
            env,
            key.as_ref(),
            cancel,
        )
    }

    /// Open a terminal running `ssh gpurent-<label>`: writes the config block and loads the key
    /// into the running ssh-agent first (the private key never touches the disk). Returns the
    /// command line that started.
    pub fn host_open_terminal(&self, label: &str, env: &SshEnv) -> Result<Opened, RemoteError> {
        let cfg = self.host_ssh_config(label, env)?;
        let key = self.host_key_for(label, None)?;
        let agent_keep = self.host_agent_add(env, &key, Some(OPEN_AGENT_LIFETIME_S))?;
        let started = opener::spawn_first(&opener::terminal_commands(Os::current(), &cfg.alias))?;
        Ok(Opened {
            started: started.argv,
            agent_keep,
        })
    }

    /// Open the host in VS Code Remote-SSH (config block + agent, then the `vscode://` link).
    pub fn host_open_vscode(&self, label: &str, env: &SshEnv) -> Result<Opened, RemoteError> {
        let cfg = self.host_ssh_config(label, env)?;
        let key = self.host_key_for(label, None)?;
        let agent_keep = self.host_agent_add(env, &key, Some(OPEN_AGENT_LIFETIME_S))?;
        opener::spawn_first(&[opener::open_uri_command(Os::current(), &cfg.vscode_uri)])?;
        Ok(Opened {
            started: vec![cfg.vscode_uri],
            agent_keep,
        })
    }

    /// gpurent's known_hosts file (every pinned key at its host's address and port, rewritten)
    /// and the `Host gpurent-<label>` block for `host` in `config`.
    fn write_ssh_config_block(
        &self,
        host: &Host,
        identity: &std::path::Path,
        config: &std::path::Path,
    ) -> Result<(sshconfig::WriteOutcome, std::path::PathBuf), RemoteError> {
        let all = self.host_list()?;
        let kh = self.paths().data.join("ssh").join("known_hosts");
        std::fs::write(&kh, hosts::known_hosts_lines(&all))
            .map_err(|e| RemoteError::Core(crate::CoreError::io(&kh, e)))?;
        let entry = ConfigEntry {
            label: host.label.clone(),
            host_name: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            proxy_jump: host.jump.clone(),
            identity_file: identity.to_path_buf(),
            known_hosts_file: Some(kh.clone()),
        };
        Ok((sshconfig::upsert_block(config, &entry)?, kh))
    }

    /// After a saved host moved (a rented machine started again at a new address or port, the
    /// saved host following it): the `Host gpurent-<label>` block `host ssh-config` wrote earlier
    /// is rewritten where it was written, with the new endpoint, and gpurent's known_hosts file
    /// with it (its lines name the address and port), so `ssh gpurent-<label>` reaches the
    /// machine at its new place with the same pinned key. Nothing is written where no block is
    /// (the block is opt-in; one the user removed stays removed). Returns whether a block was
    /// rewritten.
    pub fn host_ssh_config_follow(&self, label: &str) -> Result<bool, RemoteError> {
        let dir = self.paths().data.join("ssh");
        let marker = ssh_config_marker(&dir, label);
        let config = match std::fs::read_to_string(&marker) {
            Ok(p) if !p.trim().is_empty() => std::path::PathBuf::from(p.trim()),
            Ok(_) => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(RemoteError::Core(crate::CoreError::io(&marker, e))),
        };
        if !sshconfig::has_block(&config, label)? {
            return Ok(false);
        }
        let host = self.host_get(label)?;
        let identity = ssh_identity_path(&dir, &host);
        let (w, _) = self.write_ssh_config_block(&host, &identity, &config)?;
        Ok(w.changed)
    }

    /// Write the `Host gpurent-<label>` block for a saved host (its key's public half).
    pub fn host_ssh_config(
        &self,
        label: &str,
        env: &SshEnv,
    ) -> Result<SshConfigResult, RemoteError> {
        let host = self.host_get(label)?;
        let key = host
            .key_label
            .ok_or_else(|| RemoteError::KeyUnavailable(label.to_string()))?;
        let public_line = self.key_export_pub(&key)?;
        self.host_ssh_config_with_key(label, &public_line, env)
    }
}

/// The exported public key a host's ssh config block names (`<data>/ssh/<key label>.pub`).
fn ssh_identity_path(dir: &std::path::Path, host: &Host) -> std::path::PathBuf {
    let key_name = host.key_label.clone().unwrap_or_else(|| "gpurent".into());
    dir.join(format!("{key_name}.pub"))
}

/// The file that says which ssh config the host's block was written to.
fn ssh_config_marker(dir: &std::path::Path, label: &str) -> std::path::PathBuf {
    dir.join(format!("{label}.ssh-config-path"))
}

impl HostSpec {
    /// The fields gpurent keeps from a parsed paste. A jump host without a user logs in as the
    /// target's user (rental consoles print `-J root@bastion` or nothing). The password is not
    /// part of a spec: it is used once (key install) and never stored.
    pub fn from_parsed(p: &ParsedHost, provider: Option<String>) -> HostSpec {
        HostSpec {
            address: p.host.clone(),
            port: p.port,
            user: p.user.clone(),
            jump: p.jump.as_ref().map(|j| JumpSpec {
                address: j.host.clone(),
                port: j.port,
                user: j.user.clone().unwrap_or_else(|| p.user.clone()),
            }),
            provider,
            notes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_machine_is_marked_and_never_connected_to() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = crate::app::test_support::app_at(tmp.path(), 10_000);
        crate::app::test_support::save_host(&app, "gpurent-abc");
        crate::app::test_support::save_host(&app, "pasted");
        crate::app::test_support::released_rental(&app, "gpurent-abc", 9_000);
        let list = app.host_list().expect("list");
        let released: Vec<_> = list
            .iter()
            .map(|h| (h.label.as_str(), h.released_ms))
            .collect();
        assert_eq!(released, [("gpurent-abc", Some(9_000)), ("pasted", None)]);
        // Refused before any connection (its address may be someone else's machine by now).
        let env = SshEnv::under_home(tmp.path(), None);
        let key = crate::app::login::LoginKey {
            label: "k".into(),
            pem: crate::infra::secret::Secret::new("not read"),
            public_line: "ssh-ed25519 AAAA k".into(),
        };
        let err = app
            .host_check_with_key(
                "gpurent-abc",
                &env,
                &key,
                &crate::infra::events::NoProgress,
                &CancelToken::new(),
            )
            .expect_err("released");
        assert!(
            matches!(&err, RemoteError::HostReleased { label, released_ms: 9_000 } if label == "gpurent-abc"),
            "{err:?}"
        );
        assert_eq!(crate::infra::ipc::Coded::code(&err), "host_released");
        // Forgetting it still works.
        app.host_delete("gpurent-abc", &env).expect("forget");
        assert_eq!(app.host_list().expect("list").len(), 1);
    }

    #[test]
    fn a_paste_request_never_shows_its_password() {
        let req: PasteAdd = serde_json::from_value(serde_json::json!({
            "text": "ssh -p 2222 root@h.example.com 密码：Sup3rSecret!",
            "label": null,
            "key_label": "laptop",
            "trust": [],
            "disable_password_login": false,
        }))
        .expect("from the UI's JSON");
        let shown = format!("{req:?}");
        assert!(!shown.contains("Sup3rSecret"), "{shown}");
        assert!(shown.contains("laptop"), "{shown}");
        let parsed = hostparse::parse(req.text.expose()).expect("parse");
        assert_eq!(
            parsed.password.as_ref().map(|p| p.expose()),
            Some("Sup3rSecret!")
        );
    }

    #[test]
    fn a_parsed_paste_becomes_a_spec_without_its_password() {
        let p = crate::hostparse::parse(
            "登录指令：ssh -p 38211 -J bastion.example.com root@region-3.example.com 密码：Ab12cd",
        )
        .expect("parse");
        let s = HostSpec::from_parsed(&p, Some("autodl".into()));
        assert_eq!(
            (s.address.as_str(), s.port, s.user.as_str()),
            ("region-3.example.com", 38211, "root")
        );
        let j = s.jump.as_ref().expect("jump");
        assert_eq!(
            (j.address.as_str(), j.port, j.user.as_str()),
            ("bastion.example.com", 22, "root")
        );
        assert!(p.password.is_some());
        assert!(!format!("{s:?}").contains("Ab12cd"));
    }
}
