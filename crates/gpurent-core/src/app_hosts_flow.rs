//! The Hosts step as single calls, for the desktop app (and any edge that starts from pasted text
//! and labels): paste → preview; paste → add (pin the host key the user confirmed, and when the
//! paste carried a password, install our key with it once and prove a key login); check and
//! `~/.ssh/config` by host label, with the key loaded from the keychain.
//!
//! The host-key prompt is a two-step exchange: the first `host_add_pasted` fails with
//! `host_key_unknown` carrying the fingerprint; the UI shows it, and when the user accepts it calls
//! again with that fingerprint in `trust`. No connection is held open while a person decides, and
//! the CLI's `--trust` uses the same path.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::App;
use crate::app_hosts::HostAddRequest;
use crate::app_hosts::{KeyInstall, KeyInstallReport, SshConfigResult, SshEnv};
use crate::cancel::CancelToken;
use crate::events::ProgressSink;
use crate::hostparse::{self, ParsedHostSummary};
use crate::launch;
use crate::remote::hosts::{Host, HostCheck, HostSpec};
use crate::remote::RemoteError;

/// Add a host from pasted console text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PasteAdd {
    /// What the user pasted (may contain a password; it is used once and never stored).
    pub text: String,
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

impl App {
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
        let parsed = hostparse::parse(&req.text)?;
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
    pub fn host_check_saved(
        &self,
        label: &str,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<HostCheck, RemoteError> {
        self.run_op("host_check", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.host_check(label, env, &key, progress, cancel)
        })
    }

    /// Accept a changed host key the user confirmed (recorded as changed by the desktop user).
    pub fn host_repin_saved(
        &self,
        label: &str,
        fingerprint: &str,
        env: &SshEnv,
        cancel: &CancelToken,
    ) -> Result<Host, RemoteError> {
        let key = self.host_key_for(label, None).ok();
        self.host_repin(
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
    pub fn host_open_terminal(
        &self,
        label: &str,
        env: &SshEnv,
    ) -> Result<Vec<String>, RemoteError> {
        let cfg = self.host_ssh_config_saved(label, env)?;
        let key = self.host_key_for(label, None)?;
        self.host_agent_add(env, &key, Some(12 * 3600))?;
        launch::spawn_first(&launch::terminal_commands(
            launch::Os::current(),
            &cfg.alias,
        ))
        .map_err(|e| RemoteError::invalid("terminal", format!("no terminal could be started: {e}")))
    }

    /// Open the host in VS Code Remote-SSH (config block + agent, then the `vscode://` link).
    pub fn host_open_vscode(&self, label: &str, env: &SshEnv) -> Result<String, RemoteError> {
        let cfg = self.host_ssh_config_saved(label, env)?;
        let key = self.host_key_for(label, None)?;
        self.host_agent_add(env, &key, Some(12 * 3600))?;
        launch::spawn_first(&[launch::open_uri_command(
            launch::Os::current(),
            &cfg.vscode_uri,
        )])
        .map_err(|e| {
            RemoteError::invalid("vscode", format!("the link could not be opened: {e}"))
        })?;
        Ok(cfg.vscode_uri)
    }

    /// Write the `Host gpurent-<label>` block for a saved host (its key's public half).
    pub fn host_ssh_config_saved(
        &self,
        label: &str,
        env: &SshEnv,
    ) -> Result<SshConfigResult, RemoteError> {
        let host = self.host_get(label)?;
        let key = host
            .key_label
            .ok_or_else(|| RemoteError::KeyUnavailable(label.to_string()))?;
        let public_line = self.key_export_pub(&key)?;
        self.host_ssh_config(label, &public_line, env)
    }
}
