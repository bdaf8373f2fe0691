//! The guard on the facade: set it on a saved host, read its status (and keep its decisions),
//! snooze it, switch it off. Each call is one SSH connection through [`connect_saved`], closed
//! when the call returns — the guard on the host never depends on gpurent running.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::billing::poweroff;
use crate::guard::install::{self, InstallHost, Installer};
use crate::guard::provider::ProviderTarget;
use crate::guard::saved;
use crate::guard::ssh::{self, Fetched};
use crate::guard::{parse_decisions, ActionKind, Boot, Decision, GuardError, GuardSpec};
use crate::infra::cancel::CancelToken;
use crate::monitor::telemetry::{parse_apps, parse_gpus, ComputeApp, GpuRow};
use crate::providers::action::GuardKey;
use crate::providers::{accounts, ledger, ProviderError};

/// How many decision lines a status fetch reads.
const STATUS_LINES: u32 = 500;

pub use crate::guard::install::GuardSetReport;

fn boxed(e: ProviderError) -> GuardError {
    GuardError::Provider(Box::new(e))
}

/// One signal's last reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SignalReading {
    /// `idle`, `busy`, `unreadable` or `absent`.
    pub state: String,
    /// For the GPU: `utilization`, `processes`, `no_nvidia_smi`, `query_failed`, `unparsable`, …;
    /// for CPU and network: `no_reading_yet` (unreadable only because there is no earlier sample).
    pub why: Option<String>,
    /// GPU: the highest utilisation (%); SSH: established connections old enough to count.
    pub value: Option<f64>,
}

/// How the SSH signal could measure the connections it counts (docs/guard.md, "hosts without
/// `ss`").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SshMeasure {
    /// How connections without a terminal are measured: `ss` (per-socket bytes, iproute2),
    /// `no_ss` (no `ss` on the host: such connections cannot be measured and count as busy),
    /// `ss_failed` (it failed or ran past its limit: the same).
    pub traffic: String,
    /// Connections counted as busy now only because they could not be measured.
    pub unmeasured: u32,
    /// Whether the connected-but-inactive limit applies to every connection counted now
    /// (`false` while `unmeasured` > 0: only the deadline bounds those).
    pub inactive_limit_applies: bool,
}

/// `guard status`: each signal's last reading, idle since, deadline, snooze, last decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GuardStatus {
    pub host: String,
    /// `guard.sh` is on the host.
    pub installed: bool,
    pub running: bool,
    pub pid: Option<u32>,
    pub boot: Option<Boot>,
    /// What gpurent set last (from its own database; `None` if it never set one).
    pub spec: Option<GuardSpec>,
    pub host_now_s: Option<i64>,
    pub idle_since: Option<i64>,
    pub deadline: Option<i64>,
    pub snooze_until: Option<i64>,
    /// The warning the guard gave, while it stands (`unix_s message`).
    pub warning: Option<String>,
    pub gpu: Option<SignalReading>,
    pub ssh: Option<SignalReading>,
    pub ollama: Option<SignalReading>,
    pub jupyter: Option<SignalReading>,
    /// The machine's own CPU work (value: % of one core).
    #[serde(default)]
    pub cpu: Option<SignalReading>,
    /// Network traffic other than loopback (value: KiB/s).
    #[serde(default)]
    pub net: Option<SignalReading>,
    /// `busy` while `~/.gpurent/keepalive` exists.
    #[serde(default)]
    pub keepalive: Option<SignalReading>,
    /// The host's clock at the guard's last sample.
    #[serde(default)]
    pub last_sample_s: Option<i64>,
    /// How long ago that was, on the guard's monotonic clock (s).
    #[serde(default)]
    pub last_sample_age_s: Option<i64>,
    /// The loop runs but has not sampled for longer than it ever should ([`stale_after_s`]):
    /// it is stuck, and neither idle nor the deadline can fire. Also in `notes` as `guard_stale`.
    #[serde(default)]
    pub stale: bool,
    /// `guard_stale`; `gpu_not_available` (nvidia-smi says `[N/A]`: a MIG instance or a vGPU
    /// guest — the GPU counts as busy, so only the deadline can fire); `no_deadline`;
    /// `ssh_unmeasured` (SSH connections it cannot measure count as busy: [`SshMeasure`]).
    #[serde(default)]
    pub notes: Vec<String>,
    /// How the SSH signal measured the connections (`None` from a guard older than this field,
    /// or before its first sample). Where it cannot (`traffic` not `ss`, `unmeasured` > 0),
    /// `notes` holds `ssh_unmeasured`.
    #[serde(default)]
    pub ssh_measure: Option<SshMeasure>,
    /// The last GPU sample, parsed by the monitor's parser.
    pub gpus: Vec<GpuRow>,
    pub compute_apps: Vec<ComputeApp>,
    pub last: Option<Decision>,
    /// The last time it acted (or tried to).
    pub last_action: Option<Decision>,
    /// Decision lines read in this fetch, and lines that were not decisions.
    pub decisions_read: u32,
    pub unparsed_lines: u32,
}

/// How long without a sample before a running guard is stale: two periods, two nvidia-smi
/// queries at their limit (20 s each) and a margin.
pub fn stale_after_s(period_s: i64) -> i64 {
    2 * period_s.max(1) + 2 * 20 + 30
}

fn reading(state: &str, why: Option<&str>, value: Option<f64>) -> SignalReading {
    SignalReading {
        state: state.to_string(),
        why: why.filter(|w| !w.is_empty()).map(String::from),
        value,
    }
}

/// Assemble the status from what the host had.
pub fn status_from(label: &str, spec: Option<GuardSpec>, f: &Fetched) -> GuardStatus {
    let (decisions, bad) = parse_decisions(&f.log);
    let last = decisions.last().cloned();
    let last_action = decisions.iter().rev().find(|d| d.is_action()).cloned();
    let l = last.as_ref();
    let age = match (l.and_then(|d| d.mono), f.mono_now_s) {
        (Some(at), Some(now)) => Some((now - at).max(0)),
        _ => None,
    };
    let running = f.state.is_some_and(|s| s.running);
    let period = l.and_then(|d| d.period_s).unwrap_or(30);
    let stale = running && age.is_some_and(|a| a > stale_after_s(period));
    let mut notes = Vec::new();
    if stale {
        notes.push("guard_stale".to_string());
    }
    if l.is_some_and(|d| d.gpu_why == "not_available") {
        notes.push("gpu_not_available".to_string());
    }
    if l.is_some_and(|d| d.deadline.is_none() && d.deadline_fired != Some(true)) {
        notes.push("no_deadline".to_string());
    }
    let ssh_measure = l.and_then(|d| {
        let traffic = d.ssh_traffic.clone().filter(|t| !t.is_empty())?;
        let unmeasured = d.ssh_unmeasured.unwrap_or(0);
        Some(SshMeasure {
            inactive_limit_applies: unmeasured == 0,
            traffic,
            unmeasured,
        })
    });
    if ssh_measure
        .as_ref()
        .is_some_and(|m| m.traffic != "ss" || m.unmeasured > 0)
    {
        notes.push("ssh_unmeasured".to_string());
    }
    GuardStatus {
        host: label.to_string(),
        installed: f.installed,
        running,
        pid: f.state.and_then(|s| s.pid),
        boot: f.state.map(|s| s.boot),
        spec,
        host_now_s: f.host_now_s,
        idle_since: l.and_then(|d| d.idle_since),
        deadline: l.and_then(|d| d.deadline),
        snooze_until: f.snooze_until,
        warning: f.warning.clone(),
        gpu: l.map(|d| reading(&d.gpu, Some(&d.gpu_why), d.gpu_util_max)),
        ssh: l.map(|d| reading(&d.ssh, None, d.ssh_conns.map(f64::from))),
        ollama: l.map(|d| reading(&d.ollama, None, None)),
        jupyter: l.map(|d| reading(&d.jupyter, None, None)),
        cpu: l.and_then(|d| {
            d.cpu
                .as_deref()
                .map(|c| reading(c, d.cpu_why.as_deref(), d.cpu_pct))
        }),
        net: l.and_then(|d| {
            d.net
                .as_deref()
                .map(|n| reading(n, d.net_why.as_deref(), d.net_kbps))
        }),
        keepalive: l.and_then(|d| d.keepalive.as_deref().map(|k| reading(k, None, None))),
        last_sample_s: l.map(|d| d.at),
        last_sample_age_s: age,
        stale,
        notes,
        ssh_measure,
        gpus: parse_gpus(&f.gpu_csv, None),
        compute_apps: parse_apps(&f.apps_csv, None),
        last,
        last_action,
        decisions_read: decisions.len() as u32,
        unparsed_lines: bad as u32,
    }
}

impl App {
    /// The provider machine a saved host is (an open ledger row whose saved host it is), with the
    /// API base URL its guard calls; `None` for a pasted host.
    pub fn guard_provider_target(&self, label: &str) -> Result<Option<ProviderTarget>, GuardError> {
        let rows = self.with_db(ledger::list).map_err(boxed)?;
        Ok(rows
            .into_iter()
            .filter(|r| r.closed_ms.is_none() && r.host_label.as_deref() == Some(label))
            .find_map(|r| {
                Some(ProviderTarget {
                    provider: r.provider,
                    base_url: crate::providers::base_url(r.provider),
                    provider_instance_id: r.provider_instance_id?,
                    instance: r.id,
                    account: r.account,
                })
            }))
    }

    /// Refuse an action this host cannot have, before any keychain or SSH work.
    pub fn guard_check_action(&self, label: &str, spec: &GuardSpec) -> Result<(), GuardError> {
        install::check(spec, || self.guard_provider_target(label))
    }

    /// Install (or update) the guard on a saved host and start it.
    pub fn guard_set_with_key(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        spec: &GuardSpec,
        cancel: &CancelToken,
    ) -> Result<GuardSetReport, GuardError> {
        Installer {
            store: &self.store,
            clock: self.clock.as_ref(),
            host: &InstallSteps {
                app: self,
                env,
                key,
                cancel,
            },
            cancel,
        }
        .set(label, spec)
    }

    /// What gpurent last set on this host (no SSH).
    pub fn guard_spec(&self, label: &str) -> Result<Option<GuardSpec>, GuardError> {
        Ok(self.with_store(|s| saved::spec(s, label))?)
    }

    /// Fetch the guard's state and decisions from the host; the decisions are kept in the
    /// database (`guard_decisions`), so the record stays after the machine is gone.
    pub fn guard_status_with_key(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<GuardStatus, GuardError> {
        let h = self.host_get(label)?;
        let conn = connect_saved(&h, env, key, cancel)?;
        let fetched = ssh::fetch(&conn, STATUS_LINES, cancel)?;
        drop(conn);
        let (decisions, _) = parse_decisions(&fetched.log);
        let now = self.now_ms();
        self.with_store(|s| saved::keep_decisions(s, label, &decisions, now))?;
        self.guard_poweroff_billing(label, &fetched)?;
        Ok(status_from(label, self.guard_spec(label)?, &fetched))
    }

    /// Decisions fetched earlier, newest first (no SSH).
    pub fn guard_decisions(&self, label: &str, limit: u32) -> Result<Vec<Decision>, GuardError> {
        Ok(self.with_store(|s| saved::decisions(s, label, limit))?)
    }

    /// Snooze the guard for `seconds`; returns when it ends, in the host's clock.
    pub fn guard_snooze_with_key(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        seconds: u64,
        cancel: &CancelToken,
    ) -> Result<i64, GuardError> {
        if seconds == 0 || seconds > 7 * 86400 {
            return Err(GuardError::invalid("duration", "must be 1 s to 7 days"));
        }
        let h = self.host_get(label)?;
        let conn = connect_saved(&h, env, key, cancel)?;
        let until = ssh::snooze(&conn, seconds, cancel).map_err(|e| match e {
            GuardError::NotInstalled(_) => GuardError::NotInstalled(label.to_string()),
            e => e,
        })?;
        // The app's second guard honours it too, also while the machine cannot be read.
        let local = self
            .now_ms()
            .saturating_add((seconds as i64).saturating_mul(1000));
        self.with_store(|s| {
            s.meta_set(
                &crate::app::second_guard::snooze_meta(label),
                &local.to_string(),
            )
        })?;
        Ok(until)
    }

    /// Switch the guard off (loop stopped, reboot start removed, logs kept).
    pub fn guard_off_with_key(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<(), GuardError> {
        let h = self.host_get(label)?;
        let conn = connect_saved(&h, env, key, cancel)?;
        if !ssh::off(&conn, cancel)? {
            return Err(GuardError::NotInstalled(label.to_string()));
        }
        // `off` removed provider.key.
        self.with_store(|s| saved::set_full_key(s, label, false))?;
        let now = self.now_ms();
        self.with_store(|s| saved::mark_off(s, label, now))?;
        Ok(())
    }
}

/// The account's full key taken off a machine right before gpurent stops or releases it itself
/// ([`App::guard_key_off`]).
pub(crate) struct KeyOff {
    label: String,
    /// The connection it was removed over, kept until the provider call is done: if that call
    /// fails, the key goes back ([`App::guard_key_back`]) — the guard still needs it to act.
    conn: Option<crate::remote::Connection>,
    /// It could not be removed (why, as a code): it may remain on the machine's disk.
    pub left: Option<String>,
}

/// The short limits of the key-off connection: a stop never waits long on a machine that does
/// not answer.
fn key_off_env(env: &SshEnv) -> SshEnv {
    use std::time::Duration;
    let mut env = env.clone();
    env.connect.dns_timeout = env.connect.dns_timeout.min(Duration::from_secs(5));
    env.connect.connect_timeout = env.connect.connect_timeout.min(Duration::from_secs(5));
    env.connect.handshake_timeout = env.connect.handshake_timeout.min(Duration::from_secs(10));
    env.connect.io_timeout = env.connect.io_timeout.min(ssh::KEY_OFF_LIMIT);
    env
}

impl App {
    /// Before gpurent's own stop or release of the machine on saved host `label`: when its guard
    /// holds the account's full key, take it off over SSH — the pinned host key, the host's own
    /// login key (a key that needs a passphrase now is not asked for), short timeouts. `None`
    /// when no full key is there. Never an error: the stop or release goes on whatever happens
    /// here (money first); `left` says the key may remain on the disk.
    pub(crate) fn guard_key_off(
        &self,
        label: &str,
        env: Option<&SshEnv>,
        cancel: &CancelToken,
    ) -> Option<KeyOff> {
        // A store that cannot be read: try anyway (an `rm -f` of nothing is harmless).
        if !self
            .with_store(|s| saved::holds_full_key(s, label))
            .unwrap_or(true)
        {
            return None;
        }
        let removed = (|| -> Result<crate::remote::Connection, GuardError> {
            let env = env.ok_or(crate::remote::RemoteError::Core(
                crate::CoreError::NoHomeDirectory,
            ))?;
            let h = self.host_get(label)?;
            let key = self.host_key_for(label, None)?;
            let conn = connect_saved(&h, &key_off_env(env), &key, cancel)?;
            ssh::remove_provider_key(&conn, cancel)?;
            Ok(conn)
        })();
        match removed {
            Ok(conn) => {
                if let Err(e) = self.with_store(|s| saved::set_full_key(s, label, false)) {
                    tracing::warn!(host = label, "provider key removed, not recorded: {e}");
                }
                Some(KeyOff {
                    label: label.to_string(),
                    conn: Some(conn),
                    left: None,
                })
            }
            Err(e) => {
                tracing::warn!(host = label, "the provider key could not be removed: {e}");
                Some(KeyOff {
                    label: label.to_string(),
                    conn: None,
                    left: Some(crate::infra::ipc::Coded::code(&e).to_string()),
                })
            }
        }
    }

    /// The provider refused the stop or release after [`App::guard_key_off`] took the key off:
    /// the machine still runs, so its guard gets the key back over the same connection (else its
    /// own deadline could no longer stop it).
    pub(crate) fn guard_key_back(&self, k: Option<KeyOff>, account: &str, cancel: &CancelToken) {
        let Some(KeyOff {
            label,
            conn: Some(conn),
            ..
        }) = k
        else {
            return;
        };
        let key = self.with_db(|c| {
            let a = accounts::get(c, account)?;
            accounts::api_key(c, self.keystore.as_ref(), &a)
        });
        let back = match key {
            Ok(key) => ssh::put_key(&conn, Some(&key), cancel).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match back {
            Ok(()) => {
                let _ = self.with_store(|s| saved::set_full_key(s, &label, true));
            }
            Err(e) => {
                tracing::warn!(host = %label, "the provider key could not be put back: {e}")
            }
        }
    }
}

/// What setting the guard asks of the facade ([`Installer`]).
struct InstallSteps<'a> {
    app: &'a App,
    env: &'a SshEnv,
    key: &'a LoginKey,
    cancel: &'a CancelToken,
}

impl InstallHost for InstallSteps<'_> {
    fn provider_target(&self, label: &str) -> Result<Option<ProviderTarget>, GuardError> {
        self.app.guard_provider_target(label)
    }

    fn connect(&self, label: &str) -> Result<crate::remote::Connection, GuardError> {
        let h = self.app.host_get(label)?;
        Ok(connect_saved(&h, self.env, self.key, self.cancel)?)
    }

    fn full_key(&self, account: &str) -> Result<crate::infra::secret::Secret, GuardError> {
        self.app
            .with_db(|c| {
                let account = accounts::get(c, account)?;
                accounts::api_key(c, self.app.keystore.as_ref(), &account)
            })
            .map_err(boxed)
    }
}

/// The guard's side of gpurent's own stop or release ([`GuardKey`]): the account's full key
/// taken off the machine first ([`App::guard_key_off`]), and put back over the same connection
/// when the provider refused ([`App::guard_key_back`]).
pub(crate) struct GuardKeySteps<'a> {
    app: &'a App,
    env: Option<&'a SshEnv>,
    cancel: &'a CancelToken,
    taken: RefCell<Option<KeyOff>>,
}

impl<'a> GuardKeySteps<'a> {
    pub(crate) fn new(app: &'a App, env: Option<&'a SshEnv>, cancel: &'a CancelToken) -> Self {
        GuardKeySteps {
            app,
            env,
            cancel,
            taken: RefCell::new(None),
        }
    }
}

impl GuardKey for GuardKeySteps<'_> {
    fn take_off(&self, label: &str) -> Option<String> {
        let k = self.app.guard_key_off(label, self.env, self.cancel);
        let left = k.as_ref().and_then(|k| k.left.clone());
        *self.taken.borrow_mut() = k;
        left
    }

    fn put_back(&self, account: &str) {
        let taken = self.taken.borrow_mut().take();
        self.app.guard_key_back(taken, account, self.cancel);
    }
}

impl App {
    /// A pasted host's billing after its guard powered it off, from what the machine said of
    /// itself ([`poweroff::record`]).
    pub(crate) fn guard_poweroff_billing(
        &self,
        label: &str,
        f: &Fetched,
    ) -> Result<(), crate::infra::error::CoreError> {
        let seen = poweroff::Seen {
            poweroff_at_s: f.poweroff_at_s,
            poweroff_boot_id: f.poweroff_boot_id.as_deref(),
            host_now_s: f.host_now_s,
            boot_id: f.boot_id.as_deref(),
            uptime_s: f.uptime_s,
        };
        let now = self.now_ms();
        self.with_store(|s| poweroff::record(s, label, &seen, now))
    }

    /// The host no longer answers: [`poweroff::no_answer`]. `true` when recorded.
    pub(crate) fn guard_poweroff_no_answer(
        &self,
        label: &str,
    ) -> Result<bool, crate::infra::error::CoreError> {
        let now = self.now_ms();
        self.with_store(|s| poweroff::no_answer(s, label, now))
    }
}

/// The app's Guard form: `gpurent guard set`'s flags as one value (docs/guard.md, "The app").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GuardRequest {
    /// 1 or more.
    pub idle_minutes: u64,
    pub util_below: u32,
    /// Like `90m`, `2.5h`, `1h30m`; `None` or empty: no deadline.
    pub deadline: Option<String>,
    pub action: ActionKind,
    /// The command for [`ActionKind::Command`].
    pub command: Option<String>,
    /// `stop`/`release`: the user's consent to the account's full key on the machine.
    pub allow_full_key: bool,
}

impl GuardRequest {
    /// The spec the guard runs with (the normal 30 s sampling period: no test settings here).
    pub fn spec(&self) -> Result<GuardSpec, GuardError> {
        if self.idle_minutes == 0 {
            return Err(GuardError::invalid(
                "idle_minutes",
                "must be at least 1 minute",
            ));
        }
        let mut spec = GuardSpec::new(self.idle_minutes.saturating_mul(60), self.action);
        spec.util_below = self.util_below;
        spec.deadline_in_s = match self.deadline.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(d) => Some(crate::guard::parse_duration(d)?),
        };
        spec.command = self.command.clone().filter(|c| !c.trim().is_empty());
        spec.allow_full_key = self.allow_full_key;
        spec.validate()?;
        Ok(spec)
    }
}

/// What the Guard panel shows for a host before any SSH: what gpurent set last, and which
/// actions this host can have (stop/release only for a machine rented through gpurent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GuardView {
    pub host: String,
    pub spec: Option<GuardSpec>,
    /// The provider of the rented machine this host is; `None` for a pasted host.
    pub provider: Option<crate::providers::ProviderKind>,
    /// The actions to offer, the preferred first.
    pub actions: Vec<ActionKind>,
    /// What the provider's stop does to the machine's disk, in `MoneyNote.effect`'s words
    /// (`gpu_billing_stops_disk_wiped` on RunPod, `gpu_billing_stops_disk_kept` on Vast);
    /// `None` where the guard cannot stop (a pasted host, Lambda).
    #[serde(default)]
    pub stop_effect: Option<String>,
}

/// A duration the user typed, read by the one duration parser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DurationPreview {
    pub seconds: u64,
    /// When that is from now, in gpurent's clock (unix ms).
    pub at_ms: i64,
}

impl App {
    /// The Guard panel's view of a host (no SSH).
    pub fn guard_view(&self, label: &str) -> Result<GuardView, GuardError> {
        self.host_get(label)?;
        let provider = self.guard_provider_target(label)?.map(|t| t.provider);
        let actions = match provider {
            Some(p) if !p.spec().can_stop() => vec![ActionKind::Release, ActionKind::Poweroff],
            Some(_) => vec![ActionKind::Stop, ActionKind::Release, ActionKind::Poweroff],
            None => vec![ActionKind::Poweroff, ActionKind::Command],
        };
        let stop_effect = provider
            .map(|p| p.spec())
            .filter(|s| s.can_stop())
            .map(|s| s.stop.money_effect().to_string());
        Ok(GuardView {
            host: label.to_string(),
            spec: self.guard_spec(label)?,
            provider,
            actions,
            stop_effect,
        })
    }

    /// `90m` → seconds and the time it means from now.
    pub fn guard_duration(&self, text: &str) -> Result<DurationPreview, GuardError> {
        let seconds = crate::guard::parse_duration(text)?;
        Ok(DurationPreview {
            seconds,
            at_ms: self.now_ms() + (seconds as i64).saturating_mul(1000),
        })
    }

    /// `guard set` from the app: refusals first (no keychain, no SSH), then the host's key from
    /// the keychain (`passphrase_required` for a locked one) and the install, as a cancellable op.
    pub fn guard_set(
        &self,
        label: &str,
        env: &SshEnv,
        req: &GuardRequest,
        progress: &dyn crate::infra::events::ProgressSink,
    ) -> Result<GuardSetReport, GuardError> {
        let spec = req.spec()?;
        self.guard_check_action(label, &spec)?;
        self.run_op("guard_set", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.guard_set_with_key(label, env, &key, &spec, cancel)
        })
    }

    /// `guard status` with the host's own key.
    pub fn guard_status(&self, label: &str, env: &SshEnv) -> Result<GuardStatus, GuardError> {
        let key = self.host_key_for(label, None)?;
        self.guard_status_with_key(label, env, &key, &CancelToken::new())
    }

    /// `guard snooze` with the host's own key; `duration` like `30m`. Returns when it ends
    /// (host clock, unix s).
    pub fn guard_snooze(
        &self,
        label: &str,
        env: &SshEnv,
        duration: &str,
    ) -> Result<i64, GuardError> {
        let seconds = crate::guard::parse_duration(duration)?;
        let key = self.host_key_for(label, None)?;
        self.guard_snooze_with_key(label, env, &key, seconds, &CancelToken::new())
    }

    /// `guard off` with the host's own key.
    pub fn guard_off(&self, label: &str, env: &SshEnv) -> Result<(), GuardError> {
        let key = self.host_key_for(label, None)?;
        self.guard_off_with_key(label, env, &key, &CancelToken::new())
    }
}

#[cfg(test)]
mod request_tests {
    use super::*;

    fn req() -> GuardRequest {
        GuardRequest {
            idle_minutes: 30,
            util_below: 5,
            deadline: Some("2.5h".into()),
            action: ActionKind::Poweroff,
            command: None,
            allow_full_key: false,
        }
    }

    #[test]
    fn the_form_becomes_the_cli_spec() {
        let s = req().spec().expect("spec");
        assert_eq!(s.idle_s, 1800);
        assert_eq!(s.deadline_in_s, Some(9000));
        assert_eq!(s.period_s, crate::guard::DEFAULT_PERIOD_S);
        let mut r = req();
        r.deadline = Some("  ".into());
        r.command = Some(" ".into());
        assert_eq!(r.spec().expect("spec").deadline_in_s, None);
        assert_eq!(r.spec().expect("spec").command, None);
    }

    #[test]
    fn the_form_is_refused_with_the_cli_codes() {
        use crate::infra::ipc::Coded;
        for bad in [
            GuardRequest {
                idle_minutes: 0,
                ..req()
            },
            GuardRequest {
                util_below: 0,
                ..req()
            },
            GuardRequest {
                deadline: Some("soon".into()),
                ..req()
            },
            GuardRequest {
                action: ActionKind::Command,
                ..req()
            },
            GuardRequest {
                allow_full_key: true,
                ..req()
            },
        ] {
            assert_eq!(
                bad.spec().expect_err("refused").code(),
                "invalid_input",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_locked_key_names_itself_so_the_app_can_ask_and_retry() {
        use crate::infra::ipc::Coded;
        let e = GuardError::Remote(crate::remote::RemoteError::Key(
            crate::keys::KeyError::PassphraseRequired {
                label: Some("laptop".into()),
            },
        ));
        assert_eq!(e.code(), "passphrase_required");
        let data = e.data().expect("data");
        assert_eq!(data.key_label.as_deref(), Some("laptop"));
    }

    /// A saved host, and optionally the open ledger machine (`provider`) it is.
    fn save(app: &App, label: &str, provider: Option<crate::providers::ProviderKind>) {
        crate::app::test_support::save_host(app, label);
        if let Some(provider) = provider {
            crate::app::test_support::rental(
                app,
                label,
                provider,
                crate::providers::ledger::LedgerState::Running,
                2_000,
            );
        }
    }

    /// The panel offers stop/release only for a machine rented through gpurent (Lambda: release,
    /// it cannot stop), power off and the user's command for a pasted host; no SSH for any of it.
    #[test]
    fn the_panel_offers_the_actions_the_host_can_have() {
        use crate::providers::ProviderKind;
        let tmp = tempfile::tempdir().expect("tmp");
        let app = App::open(
            crate::infra::paths::Paths::under(tmp.path()),
            std::sync::Arc::new(crate::infra::clock::FixedClock(1_764_000_000_000)),
            None,
        )
        .expect("open");
        save(&app, "box", None);
        save(&app, "pod", Some(ProviderKind::Runpod));
        save(&app, "lam", Some(ProviderKind::Lambda));
        save(&app, "vast", Some(ProviderKind::Vast));
        let v = app.guard_view("box").expect("box");
        assert_eq!(v.provider, None);
        assert_eq!(v.actions, vec![ActionKind::Poweroff, ActionKind::Command]);
        assert_eq!(v.spec, None);
        assert_eq!(v.stop_effect, None);
        let v = app.guard_view("pod").expect("pod");
        assert_eq!(v.provider, Some(ProviderKind::Runpod));
        assert_eq!(v.actions[..2], [ActionKind::Stop, ActionKind::Release]);
        // The panel's Stop line says what the stop does to the disk: RunPod wipes its container
        // disk (it said "its disk is kept" for every provider).
        assert_eq!(
            v.stop_effect.as_deref(),
            Some("gpu_billing_stops_disk_wiped")
        );
        let v = app.guard_view("vast").expect("vast");
        assert_eq!(
            v.stop_effect.as_deref(),
            Some("gpu_billing_stops_disk_kept")
        );
        let v = app.guard_view("lam").expect("lam");
        assert_eq!(v.actions, vec![ActionKind::Release, ActionKind::Poweroff]);
        assert_eq!(v.stop_effect, None);
        // A pasted host's stop is refused before any keychain or SSH work.
        let req = GuardRequest {
            action: ActionKind::Stop,
            ..req()
        };
        let e = app
            .guard_set("box", &SshEnv::detect().expect("env"), &req, &|_| {})
            .expect_err("refused");
        use crate::infra::ipc::Coded;
        assert_eq!(e.code(), "guard_provider_action_unavailable");
        assert_eq!(
            app.guard_view("nope").expect_err("unknown").code(),
            "unknown_host"
        );
        let p = app.guard_duration("2.5h").expect("duration");
        assert_eq!((p.seconds, p.at_ms), (9000, 1_764_000_000_000 + 9_000_000));
    }
}
