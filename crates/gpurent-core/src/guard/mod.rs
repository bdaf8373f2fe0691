//! The idle-GPU guard that runs on the machine itself, so the meter stops with the laptop closed.
//!
//! [`SCRIPT`] (`guard.sh`, POSIX sh, no Python) is installed over SSH into `~/.gpurent/guard/`
//! with a `guard.conf` written here ([`conf_text`]), started detached (`setsid`, else `nohup`) and
//! registered to start again after a reboot (a systemd unit as root where systemd runs, else a
//! crontab `@reboot` line, else nothing — and the status says so). Every 30 s it samples the GPUs
//! (the monitor's one set of `nvidia-smi` fields: [`crate::monitor::telemetry`]), established
//! SSH/VS Code/port-forward connections in `/proc/net/tcp{,6}` (judged by terminal input or, with
//! no terminal, by their traffic from `ss -tin`), Ollama's `/api/ps` and Jupyter
//! kernels' CPU; the machine is idle only when all agree, and a signal it cannot read counts as
//! busy. After the idle time, or at the absolute deadline whatever the signals say, it warns,
//! honours a snooze and runs the action. Each decision is one JSON line in `decisions.log`
//! ([`Decision`]); the last GPU sample is kept as nvidia-smi printed it (`gpu.csv`) and read back
//! with the monitor's parser. Design and the CLI JSON: `docs/guard.md`.
//!
//! [`host`] has the SSH side (facts, install, fetch, snooze, off), [`install`] the workflow of
//! setting the guard on a host; the facade is `app/guard.rs`.

pub mod error;
pub mod install;
pub mod provider;
pub mod saved;
pub mod ssh;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use error::GuardError;

use crate::remote::shell_quote;

/// The guard script shipped with gpurent.
pub const SCRIPT: &str = include_str!("guard.sh");
/// Where it lives on the host, under `$HOME`.
pub const DIR: &str = ".gpurent/guard";
/// The sampling period.
pub const DEFAULT_PERIOD_S: u32 = 30;
/// How long before acting the warning goes out (at most half the idle time).
pub const DEFAULT_WARN_S: u32 = 120;
/// A connection younger than this is not counted (gpurent's own short status checks).
pub const DEFAULT_CONN_MIN_AGE_S: u32 = 10;
/// The shortest idle time accepted with the normal sampling period.
pub const MIN_IDLE_S: u64 = 60;
/// An SSH login whose terminal had no input this long no longer keeps the machine alive
/// ("connected but inactive": a laptop lid closed on a session).
pub const DEFAULT_INACTIVE_S: u64 = 7200;

fn default_inactive_s() -> u64 {
    DEFAULT_INACTIVE_S
}

/// What the guard does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Stop the instance through the provider (GPU billing ends; Vast keeps the disk and bills
    /// its storage, RunPod wipes the container disk).
    Stop,
    /// Release (terminate) the instance through the provider.
    Release,
    /// `poweroff` on the machine: as root, else through passwordless `sudo`.
    Poweroff,
    /// A command the user gave (pasted hosts whose platform stops billing some other way).
    Command,
}

impl ActionKind {
    pub fn parse(s: &str) -> Option<ActionKind> {
        Some(match s {
            "stop" => ActionKind::Stop,
            "release" => ActionKind::Release,
            "poweroff" => ActionKind::Poweroff,
            "command" => ActionKind::Command,
            _ => return None,
        })
    }
}

/// What the user asked the guard to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct GuardSpec {
    /// Idle this long (every signal agreeing) before acting.
    pub idle_s: u64,
    /// A GPU at or above this utilisation (%) is busy.
    pub util_below: u32,
    /// Act this long after installing, whatever the signals say (`None`: no deadline).
    pub deadline_in_s: Option<u64>,
    pub action: ActionKind,
    /// The command for [`ActionKind::Command`].
    pub command: Option<String>,
    /// Sampling period. A test setting: gpurent always uses [`DEFAULT_PERIOD_S`]; tests shorten
    /// it (and then may use an idle time under a minute).
    pub period_s: u32,
    pub warn_s: u32,
    pub conn_min_age_s: u32,
    /// Ports besides the one gpurent logged in on whose connections keep the machine alive.
    pub extra_ports: Vec<u16>,
    /// `stop`/`release` only: the user consents to the account's full API key being written to
    /// the machine (0600) when it has no key of its own (`--allow-full-key`).
    #[serde(default)]
    pub allow_full_key: bool,
    /// A login with a terminal and no input for this long no longer counts as activity
    /// (default [`DEFAULT_INACTIVE_S`]; `--inactive-minutes`).
    #[serde(default = "default_inactive_s")]
    pub inactive_s: u64,
}

impl GuardSpec {
    /// The defaults with this idle time and action.
    pub fn new(idle_s: u64, action: ActionKind) -> GuardSpec {
        GuardSpec {
            idle_s,
            util_below: 5,
            deadline_in_s: None,
            action,
            command: None,
            period_s: DEFAULT_PERIOD_S,
            warn_s: DEFAULT_WARN_S,
            conn_min_age_s: DEFAULT_CONN_MIN_AGE_S,
            extra_ports: vec![],
            allow_full_key: false,
            inactive_s: DEFAULT_INACTIVE_S,
        }
    }

    pub fn validate(&self) -> Result<(), GuardError> {
        let bad = |field: &str, reason: &str| Err(GuardError::invalid(field, reason));
        if self.period_s == 0 || self.period_s > 3600 {
            return bad("period_s", "must be 1-3600 seconds");
        }
        if self.idle_s < MIN_IDLE_S && self.period_s >= DEFAULT_PERIOD_S {
            return bad("idle_minutes", "must be at least 1 minute");
        }
        if self.idle_s == 0 {
            return bad("idle_minutes", "must be more than 0");
        }
        if !(1..=100).contains(&self.util_below) {
            return bad("util_below", "must be 1-100 (%)");
        }
        if self.deadline_in_s == Some(0) {
            return bad("deadline", "must be in the future");
        }
        match (self.action, &self.command) {
            (ActionKind::Command, None) => {
                return bad("command", "is needed with --action command")
            }
            (ActionKind::Command, Some(c)) if c.trim().is_empty() || c.contains('\0') => {
                return bad("command", "must be a command line")
            }
            (ActionKind::Command, _) | (_, None) => {}
            (_, Some(_)) => return bad("command", "only goes with --action command"),
        }
        if self.inactive_s < MIN_IDLE_S && self.period_s >= DEFAULT_PERIOD_S {
            return bad("inactive_minutes", "must be at least 1 minute");
        }
        if self.inactive_s == 0 {
            return bad("inactive_minutes", "must be more than 0");
        }
        if self.allow_full_key && !matches!(self.action, ActionKind::Stop | ActionKind::Release) {
            return bad("allow_full_key", "only goes with --action stop or release");
        }
        Ok(())
    }
}

/// Parse a duration such as `90m`, `2.5h`, `45s`, `1d` or `1h30m` into seconds.
pub fn parse_duration(text: &str) -> Result<u64, GuardError> {
    let bad = || {
        GuardError::invalid(
            "duration",
            format!("'{text}' is not like 90m, 2.5h or 1h30m"),
        )
    };
    let s = text.trim().to_ascii_lowercase();
    if s.is_empty() {
        return Err(bad());
    }
    let mut total = 0.0f64;
    let mut num = String::new();
    for ch in s.chars() {
        if ch.is_ascii_digit() || ch == '.' {
            num.push(ch);
            continue;
        }
        let unit = match ch {
            's' => 1.0,
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => return Err(bad()),
        };
        let n: f64 = num.parse().map_err(|_| bad())?;
        total += n * unit;
        num.clear();
    }
    if !num.is_empty() {
        return Err(bad());
    }
    if !(total.is_finite() && (1.0..=366.0 * 86400.0).contains(&total)) {
        return Err(bad());
    }
    Ok(total.round() as u64)
}

/// What the host said about itself before installing (one exec; see [`ssh::FACTS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HostFacts {
    pub uid: Option<u32>,
    /// `sudo -n true` worked (passwordless sudo).
    pub sudo: bool,
    /// The port sshd answered this session on (`$SSH_CONNECTION`): its connections keep the machine alive.
    pub ssh_port: Option<u16>,
    pub path: String,
    pub home: String,
    /// The host's clock (unix seconds): deadlines and snoozes are set in its time.
    pub now_s: Option<i64>,
    /// A `poweroff` was found: on the login PATH, in /usr/sbin, /sbin, /usr/bin or sudo's
    /// `secure_path` (Debian's PATH for non-root logins lacks /usr/sbin).
    pub poweroff: bool,
    /// Where it is (absolute path), as found for the login user.
    #[serde(default)]
    pub poweroff_path: Option<String>,
    /// `sudo -n` finds a poweroff through its `secure_path` (what `sudo -n poweroff` will run).
    #[serde(default)]
    pub sudo_poweroff: bool,
    /// The root the guard reads `/proc/stat`, `/proc/net/dev` and `/sys/fs/cgroup` under
    /// (`$GPURENT_PROC_ROOT`: the tests' fake hosts, as for the monitor; empty on real hosts).
    #[serde(default)]
    pub proc_root: Option<String>,
    /// The facts exec was cut off: something on the host hangs (nothing else could be read).
    #[serde(default)]
    pub timed_out: bool,
    pub crontab: bool,
    pub systemd: bool,
    pub container: bool,
    pub nvidia_smi: bool,
    pub curl: bool,
    pub wget: bool,
    /// wget can send PUT/DELETE (`--method`, GNU wget ≥ 1.15; busybox's cannot).
    pub wget_method: bool,
    /// The instance's own API key is in the environment (Vast `CONTAINER_API_KEY`, RunPod
    /// `RUNPOD_API_KEY`; the session's or PID 1's). Only its presence is reported, never its value.
    pub instance_key: bool,
    /// The instance id the environment names (Vast `CONTAINER_ID`, RunPod `RUNPOD_POD_ID`).
    pub instance_id: Option<String>,
}

/// Parse the `key=value` lines of [`ssh::FACTS`].
pub fn parse_facts(text: &str) -> HostFacts {
    let mut f = HostFacts::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        match k {
            "uid" => f.uid = v.trim().parse().ok(),
            "sudo" => f.sudo = v == "1",
            "ssh" => f.ssh_port = v.split_whitespace().nth(3).and_then(|p| p.parse().ok()),
            "path" => f.path = v.to_string(),
            "home" => f.home = v.to_string(),
            "now" => f.now_s = v.trim().parse().ok(),
            "poweroff" => f.poweroff = v == "1",
            "poweroff_path" => {
                f.poweroff_path = Some(v.trim().to_string()).filter(|s| s.starts_with('/'))
            }
            "sudo_poweroff" => f.sudo_poweroff = v == "1",
            "proc_root" => f.proc_root = Some(v.to_string()).filter(|s| !s.is_empty()),
            "crontab" => f.crontab = v == "1",
            "systemd" => f.systemd = v == "1",
            "container" => f.container = v == "1",
            "nvidia_smi" => f.nvidia_smi = v == "1",
            "curl" => f.curl = v == "1",
            "wget" => f.wget = v == "1",
            "wget_method" => f.wget_method = v == "1",
            "instance_key" => f.instance_key = v == "1",
            "instance_id" => f.instance_id = Some(v.trim().to_string()).filter(|s| !s.is_empty()),
            _ => {}
        }
    }
    f
}

/// Refuse actions the guard cannot run on this host, before anything connects: stop/release need
/// a machine rented through gpurent (`target`, from the ledger) whose provider can do it.
pub fn check_action_available(
    spec: &GuardSpec,
    target: Option<&provider::ProviderTarget>,
) -> Result<(), GuardError> {
    match (spec.action, target) {
        (ActionKind::Stop | ActionKind::Release, None) => {
            Err(GuardError::ProviderActionUnavailable {
                action: spec.action,
                reason: "this host is not a machine rented through gpurent (a pasted host has no provider to ask)".into(),
            })
        }
        (ActionKind::Stop | ActionKind::Release, Some(t)) => provider::request(
            t.provider,
            &t.base_url,
            &t.provider_instance_id,
            spec.action,
        )
        .map(|_| ()),
        (ActionKind::Poweroff | ActionKind::Command, _) => Ok(()),
    }
}

/// What `ACTION` holds for a provider action: the script's own `provider` call.
pub const PROVIDER_ACTION: &str = "provider";

/// The command the guard runs for `spec.action` on this host, or why it can't. A provider action
/// is resolved by [`provider::plan`] (it needs the ledger's target).
pub fn resolve_action(spec: &GuardSpec, facts: &HostFacts) -> Result<String, GuardError> {
    match spec.action {
        ActionKind::Stop | ActionKind::Release => Err(GuardError::ProviderActionUnavailable {
            action: spec.action,
            reason: "no provider machine given".into(),
        }),
        ActionKind::Command => spec
            .command
            .clone()
            .ok_or_else(|| GuardError::invalid("command", "is needed with --action command")),
        ActionKind::Poweroff => {
            // root runs the poweroff found (by its full path: the guard's PATH is the login's);
            // anyone else `sudo -n poweroff`, which sudo looks up in its own secure_path.
            match (facts.uid, facts.sudo) {
                (Some(0), _) => match &facts.poweroff_path {
                    Some(p) => Ok(sh_word(p)?),
                    None if facts.poweroff => Ok("poweroff".into()),
                    None => Err(GuardError::PoweroffUnavailable {
                        reason: "there is no poweroff command on the host (looked on PATH, in /usr/sbin, /sbin and /usr/bin)".into(),
                    }),
                },
                (_, true) if facts.sudo_poweroff => Ok("sudo -n poweroff".into()),
                (_, true) if facts.poweroff_path.is_some() => Ok(format!(
                    "sudo -n {}",
                    sh_word(facts.poweroff_path.as_deref().unwrap_or("poweroff"))?
                )),
                (_, true) => Err(GuardError::PoweroffUnavailable {
                    reason: "there is no poweroff command on the host (looked on PATH, in /usr/sbin, /sbin, /usr/bin and sudo's secure_path)".into(),
                }),
                _ => Err(GuardError::PoweroffUnavailable {
                    reason: "the login user is not root and has no passwordless sudo".into(),
                }),
            }
        }
    }
}

/// A path as one sh word: as it is when plain (`/usr/sbin/poweroff`), else quoted.
fn sh_word(p: &str) -> Result<String, GuardError> {
    if !p.is_empty()
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
    {
        Ok(p.to_string())
    } else {
        Ok(shell_quote(p)?)
    }
}

/// The ports whose established connections keep the machine alive.
pub fn watch_ports(spec: &GuardSpec, facts: &HostFacts) -> Vec<u16> {
    let mut ports = vec![22];
    ports.extend(facts.ssh_port);
    ports.extend(spec.extra_ports.iter().copied());
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `guard.conf`: shell assignments the script sources, every value quoted.
pub fn conf_text(
    spec: &GuardSpec,
    facts: &HostFacts,
    action_command: &str,
    gpu_command: &str,
    apps_command: &str,
) -> Result<String, GuardError> {
    let q = |s: &str| shell_quote(s).map_err(GuardError::from);
    // The deadline is a length on the guard's monotonic clock, counted from when the guard first
    // sees this id (a new `guard set` is a new deadline; the same one is never fired twice).
    let (deadline_in, deadline_id) = match (spec.deadline_in_s, facts.now_s) {
        (Some(d), Some(now)) => (d.to_string(), format!("{now}-{d}")),
        (Some(_), None) => {
            return Err(GuardError::invalid(
                "deadline",
                "the host did not say what time it is",
            ))
        }
        (None, _) => (String::new(), String::new()),
    };
    let ports: Vec<String> = watch_ports(spec, facts)
        .iter()
        .map(|p| p.to_string())
        .collect();
    Ok(format!(
        "# written by gpurent; `gpurent guard set` rewrites it (the loop re-reads it every sample)\n\
         PERIOD={}\nIDLE={}\nUTIL_BELOW={}\nDEADLINE_IN={}\nDEADLINE_ID={}\nWARN={}\nCONN_MIN_AGE={}\n\
         INACTIVE={}\nPORTS={}\nACTION={}\nGUARD_PATH={}\nSYS_ROOT={}\nGPU_CMD={}\nAPPS_CMD={}\n\
         RECORD_POWEROFF={}\n",
        spec.period_s,
        spec.idle_s,
        spec.util_below,
        deadline_in,
        q(&deadline_id)?,
        spec.warn_s,
        spec.conn_min_age_s,
        spec.inactive_s,
        q(&ports.join(" "))?,
        q(action_command)?,
        q(&facts.path)?,
        q(facts.proc_root.as_deref().unwrap_or(""))?,
        q(gpu_command)?,
        q(apps_command)?,
        if spec.action == ActionKind::Poweroff {
            "1"
        } else {
            ""
        },
    ))
}

/// One line of `decisions.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Decision {
    /// Host clock, unix seconds.
    pub at: i64,
    /// `keep` (something is busy), `idle`, `warn`, `snoozed`, `act`, `act_failed`, `acted`
    /// (already acted recently).
    pub decision: String,
    /// `keep`: the signals keeping it alive (`gpu,ssh`; `ssh_new`: someone just connected, the
    /// idle action waits); otherwise the cause (`idle`, `deadline`).
    pub why: String,
    /// `idle`, `busy` or `unreadable`.
    pub gpu: String,
    /// Why the GPU counts as busy: `utilization`, `processes`, `no_nvidia_smi`, `query_failed`, …
    pub gpu_why: String,
    pub gpu_util_max: Option<f64>,
    /// The most GPU memory any GPU holds (MiB); above the baseline (1 GiB) it is busy
    /// (`gpu_why: memory`).
    #[serde(default)]
    pub gpu_mem_max: Option<f64>,
    pub gpu_procs: Option<u32>,
    pub ssh: String,
    pub ssh_conns: Option<u32>,
    /// Connections younger than the minimum age: they hold the idle action back for a sample.
    pub ssh_new: Option<u32>,
    /// Connections whose terminal had no input for the inactive limit: they no longer count.
    #[serde(default)]
    pub ssh_inactive: Option<u32>,
    /// Connections counted as busy only because they could not be measured (no terminal input
    /// or traffic readable: no `ss` on the host, another user's login): the connected-but-inactive
    /// limit cannot apply to them.
    #[serde(default)]
    pub ssh_unmeasured: Option<u32>,
    /// How connections without a terminal were measured: `ss` (per-socket bytes), `no_ss` (no
    /// `ss` on the host), `ss_failed` (it failed or ran past 10 s); empty before this field.
    #[serde(default)]
    pub ssh_traffic: Option<String>,
    /// `idle`, `busy`, `unreadable` or `absent` (not running there).
    pub ollama: String,
    pub jupyter: String,
    /// The machine's own CPU work (`idle`, `busy`, `unreadable`: e.g. the first sample).
    #[serde(default)]
    pub cpu: Option<String>,
    /// Why it is `unreadable`: `no_reading_yet` (read, but no earlier sample to compare with: the
    /// first sample, after a reboot); empty when it could not be read.
    #[serde(default)]
    pub cpu_why: Option<String>,
    /// % of one core over the last period.
    #[serde(default)]
    pub cpu_pct: Option<f64>,
    /// Network traffic other than loopback.
    #[serde(default)]
    pub net: Option<String>,
    /// As [`Decision::cpu_why`].
    #[serde(default)]
    pub net_why: Option<String>,
    #[serde(default)]
    pub net_kbps: Option<f64>,
    /// `busy` while `~/.gpurent/keepalive` exists.
    #[serde(default)]
    pub keepalive: Option<String>,
    pub idle_since: Option<i64>,
    pub idle_s: Option<i64>,
    /// When the deadline falls, in the host's clock (measured on the monotonic clock; `None`
    /// once it fired).
    pub deadline: Option<i64>,
    /// This deadline already fired: it never fires again (not after a restart or reboot either).
    #[serde(default)]
    pub deadline_fired: Option<bool>,
    pub snooze_until: Option<i64>,
    pub period_s: Option<i64>,
    pub action_rc: Option<i32>,
    /// The guard's monotonic clock (s) at this decision.
    #[serde(default)]
    pub mono: Option<i64>,
}

impl Decision {
    /// The guard ran (or tried to run) its action.
    pub fn is_action(&self) -> bool {
        matches!(self.decision.as_str(), "act" | "act_failed")
    }
}

/// Parse `decisions.log`; lines that are not a decision (a torn last line) are counted, not fatal.
pub fn parse_decisions(text: &str) -> (Vec<Decision>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Decision>(line) {
            Ok(d) => out.push(d),
            Err(_) => bad += 1,
        }
    }
    (out, bad)
}

/// How the host keeps the guard across reboots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Boot {
    Systemd,
    Crontab,
    /// Nothing: after a reboot the guard is gone until `gpurent guard set` runs again.
    None,
}

/// `guard.sh state`: `running=1 pid=N boot=crontab`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ScriptState {
    pub running: bool,
    pub pid: Option<u32>,
    pub boot: Boot,
}

pub fn parse_state(text: &str) -> Option<ScriptState> {
    let line = text.lines().rev().find(|l| l.starts_with("running="))?;
    let mut st = ScriptState {
        running: false,
        pid: None,
        boot: Boot::None,
    };
    for kv in line.split_whitespace() {
        match kv.split_once('=')? {
            ("running", v) => st.running = v == "1",
            ("pid", v) => st.pid = v.parse().ok(),
            ("boot", "systemd") => st.boot = Boot::Systemd,
            ("boot", "crontab") => st.boot = Boot::Crontab,
            _ => {}
        }
    }
    Some(st)
}

#[cfg(test)]
mod tests;
