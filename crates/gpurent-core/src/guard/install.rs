//! Set the guard on a host: the action checked against what the host can have (a provider's
//! stop or release needs the machine's ledger row), the host's facts and GPU commands read over
//! one SSH connection, the config written, the account's full key put on the machine only with
//! the user's consent (and recorded before it is written; taken off again when the install
//! fails), the spec saved, and the notes the user should read. [`Installer::set`] runs it over the
//! store, the clock and the facade's [`InstallHost`].

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::guard::provider::{self as pa, Credential, ProviderAction, ProviderTarget};
use crate::guard::saved;
use crate::guard::ssh;
use crate::guard::{
    check_action_available, conf_text, resolve_action, watch_ports, ActionKind, Boot, GuardError,
    GuardSpec, HostFacts, PROVIDER_ACTION,
};
use crate::infra::cancel::CancelToken;
use crate::infra::clock::Clock;
use crate::infra::error::CoreError;
use crate::infra::secret::Secret;
use crate::infra::store::Store;
use crate::remote::Connection;

/// What `guard set` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GuardSetReport {
    pub host: String,
    pub spec: GuardSpec,
    /// The command the guard runs when it fires.
    pub action_command: String,
    /// The absolute deadline in the host's clock (unix s).
    pub deadline_host_s: Option<i64>,
    pub running: bool,
    pub pid: Option<u32>,
    pub boot: Boot,
    /// Ports whose established connections keep the machine alive.
    pub watch_ports: Vec<u16>,
    /// `stop`/`release`: the provider call the guard makes and with which credential.
    pub provider_action: Option<ProviderAction>,
    /// Things the user should know, as stable codes: `no_nvidia_smi` (the GPU counts as busy:
    /// only the deadline can fire), `no_reboot_start`, `container_poweroff` (poweroff in a
    /// container may not stop the provider's meter), `full_key_on_machine` (the account's full
    /// API key is on the machine, by the user's consent), `http_tool_wget` (no curl: wget is used),
    /// `nvidia_smi_hung` (a query ran past its limit at set time: the GPU counts as busy, only the
    /// deadline can fire), `no_deadline` (nothing bounds the bill if a signal stays busy).
    pub notes: Vec<String>,
}

/// What setting the guard asks of the facade: the ledger's machine behind the host, the SSH
/// connection to it, the account's full key.
pub trait InstallHost {
    /// The provider machine behind saved host `label` (open ledger row), if any.
    fn provider_target(&self, label: &str) -> Result<Option<ProviderTarget>, GuardError>;
    /// One connection to saved host `label` (its pinned host key, the login key).
    fn connect(&self, label: &str) -> Result<Connection, GuardError>;
    /// Connected account `account`'s full API key.
    fn full_key(&self, account: &str) -> Result<Secret, GuardError>;
}

/// The provider machine an action needs (`target`: the facade's read of it): only a stop or
/// release is the provider's.
pub fn target_for(
    spec: &GuardSpec,
    target: impl FnOnce() -> Result<Option<ProviderTarget>, GuardError>,
) -> Result<Option<ProviderTarget>, GuardError> {
    match spec.action {
        ActionKind::Stop | ActionKind::Release => target(),
        _ => Ok(None),
    }
}

/// Refuse an action this host cannot have, before any keychain or SSH work.
pub fn check(
    spec: &GuardSpec,
    target: impl FnOnce() -> Result<Option<ProviderTarget>, GuardError>,
) -> Result<(), GuardError> {
    spec.validate()?;
    let target = target_for(spec, target)?;
    check_action_available(spec, target.as_ref())
}

/// What the user should know about a guard just set, as stable codes ([`GuardSetReport::notes`]).
pub fn notes(
    spec: &GuardSpec,
    facts: &HostFacts,
    gpu_hung: bool,
    boot: Boot,
    action: &str,
    provider_action: Option<&ProviderAction>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if !facts.nvidia_smi {
        notes.push("no_nvidia_smi".to_string());
    }
    if gpu_hung {
        notes.push("nvidia_smi_hung".to_string());
    }
    if spec.deadline_in_s.is_none() {
        notes.push("no_deadline".to_string());
    }
    if boot == Boot::None {
        notes.push("no_reboot_start".to_string());
    }
    if facts.container && action.contains("poweroff") {
        notes.push("container_poweroff".to_string());
    }
    if let Some(p) = provider_action {
        if p.credential == Credential::FullKeyFile {
            notes.push("full_key_on_machine".to_string());
        }
        if p.http_tool == pa::HttpTool::Wget {
            notes.push("http_tool_wget".to_string());
        }
    }
    notes
}

/// One guard set's world: the store (locked per step, never across SSH), the injected clock, the
/// facade's [`InstallHost`] and the cancel token.
pub struct Installer<'a> {
    pub store: &'a Mutex<Store>,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn InstallHost,
    pub cancel: &'a CancelToken,
}

impl std::fmt::Debug for Installer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Installer").finish_non_exhaustive()
    }
}

impl Installer<'_> {
    fn with_store<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, CoreError>,
    ) -> Result<T, CoreError> {
        crate::infra::store::locked(self.store, f)
    }

    /// Set the guard `spec` on saved host `label` (see the module).
    pub fn set(&self, label: &str, spec: &GuardSpec) -> Result<GuardSetReport, GuardError> {
        let cancel = self.cancel;
        spec.validate()?;
        let target = target_for(spec, || self.host.provider_target(label))?;
        check_action_available(spec, target.as_ref())?;
        let conn = self.host.connect(label)?;
        let facts = ssh::facts(
            &conn,
            target.as_ref().and_then(|t| pa::instance_env(t.provider)),
            cancel,
        )?;
        let provider_action = match &target {
            Some(t) => Some(pa::plan(spec.action, spec.allow_full_key, &facts, t)?),
            None => None,
        };
        let action = match &provider_action {
            Some(_) => PROVIDER_ACTION.to_string(),
            None => resolve_action(spec, &facts)?,
        };
        let gpu_cmds = ssh::gpu_commands(&conn, cancel)?;
        let mut conf = conf_text(spec, &facts, &action, &gpu_cmds.gpu, &gpu_cmds.apps)?;
        if let Some(p) = &provider_action {
            conf.push_str(&pa::conf_lines(p)?);
        }
        // The full key goes on the machine only with the user's consent, and only when the
        // machine has no key of its own; any other set removes one an earlier set left there.
        let full_key = match (&provider_action, &target) {
            (Some(p), Some(t)) if p.credential == Credential::FullKeyFile => {
                Some(self.host.full_key(&t.account)?)
            }
            _ => None,
        };
        // Recorded before it is written: gpurent's own stop or release takes it off first.
        self.with_store(|s| saved::set_full_key(s, label, full_key.is_some()))?;
        ssh::put_key(&conn, full_key.as_ref(), cancel)?;
        let state = match ssh::install(&conn, &conf, cancel) {
            Ok(s) => s,
            Err(e) => {
                // A guard that did not start must not leave the account's full key behind.
                if full_key.is_some() && ssh::put_key(&conn, None, cancel).is_ok() {
                    self.with_store(|s| saved::set_full_key(s, label, false))?;
                }
                return Err(e);
            }
        };
        drop(conn);
        let deadline = spec
            .deadline_in_s
            .zip(facts.now_s)
            .map(|(d, now)| now + d as i64);
        let notes = notes(
            spec,
            &facts,
            gpu_cmds.hung,
            state.boot,
            &action,
            provider_action.as_ref(),
        );
        let now = self.clock.now_unix_ms();
        self.with_store(|s| saved::save(s, label, spec, &action, deadline, state.boot, now))?;
        Ok(GuardSetReport {
            host: label.to_string(),
            spec: spec.clone(),
            action_command: action,
            deadline_host_s: deadline,
            running: state.running,
            pid: state.pid,
            boot: state.boot,
            watch_ports: watch_ports(spec, &facts),
            provider_action,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_say_what_bounds_the_bill_and_what_may_not_work() {
        let spec = GuardSpec::new(60, ActionKind::Poweroff);
        let facts = HostFacts {
            container: true,
            ..HostFacts::default()
        };
        // No nvidia-smi, a hung query, no deadline, no reboot start, poweroff in a container.
        assert_eq!(
            notes(&spec, &facts, true, Boot::None, "poweroff", None),
            [
                "no_nvidia_smi",
                "nvidia_smi_hung",
                "no_deadline",
                "no_reboot_start",
                "container_poweroff"
            ]
        );
        let spec = GuardSpec {
            deadline_in_s: Some(3600),
            ..spec
        };
        let facts = HostFacts {
            nvidia_smi: true,
            ..HostFacts::default()
        };
        assert!(notes(&spec, &facts, false, Boot::Systemd, "poweroff", None).is_empty());
    }

    #[test]
    fn only_a_stop_or_release_asks_for_the_provider_machine() {
        let asked = std::cell::Cell::new(0);
        let target = || {
            asked.set(asked.get() + 1);
            Ok(None)
        };
        let poweroff = GuardSpec::new(60, ActionKind::Poweroff);
        assert!(target_for(&poweroff, target).expect("poweroff").is_none());
        assert_eq!(asked.get(), 0);
        let stop = GuardSpec::new(60, ActionKind::Stop);
        assert!(target_for(&stop, target).expect("stop").is_none());
        assert_eq!(asked.get(), 1);
        // A stop on a host with no provider machine is refused before any SSH.
        assert!(check(&stop, target).is_err());
    }
}
