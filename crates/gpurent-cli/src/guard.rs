//! `gpurent guard`: the idle guard that runs on the machine itself (docs/guard.md).
//!
//! `set HOST` installs or updates it, `status HOST` shows each signal's last reading, idle since,
//! the deadline and the last decisions, `snooze HOST DURATION` holds it back, `off HOST` stops it.
//! Each call opens one SSH connection and closes it; the guard does not need gpurent running.

use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use gpurent_core::app::guard::{GuardSetReport, GuardStatus};
use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::App;
use gpurent_core::guard::provider::Credential;
use gpurent_core::guard::{parse_duration, ActionKind, GuardError, GuardSpec};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::secret::Secret;
use gpurent_core::CoreError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct GuardArgs {
    #[command(subcommand)]
    pub command: GuardCommand,
}

/// Options every guard subcommand shares.
#[derive(Debug, Args)]
pub struct Common {
    /// A saved host (`gpurent host list`).
    pub host: String,
    /// Log in with this gpurent key instead of the host's.
    #[arg(long)]
    pub key: Option<String>,
    /// The key's passphrase from the first line of standard input.
    #[arg(long)]
    pub passphrase_stdin: bool,
    /// Print one JSON document (docs/guard.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum GuardCommand {
    /// Install (or update) the guard on a host and start it.
    Set {
        #[command(flatten)]
        common: Common,
        /// Act after this many minutes of idleness (every signal agreeing); 1 or more.
        #[arg(long, default_value_t = 30)]
        idle_minutes: u64,
        /// A GPU at or above this utilisation (%) counts as busy.
        #[arg(long, default_value_t = 5)]
        util_below: u32,
        /// Act this long from now whatever the signals say (90m, 2.5h, 1h30m).
        #[arg(long, value_name = "DURATION")]
        deadline: Option<String>,
        /// stop | release (a machine rented through gpurent: the provider's API, called from the
        /// machine itself) | poweroff | command.
        #[arg(long, default_value = "poweroff")]
        action: String,
        /// stop/release only: where the machine has no API key of its own, write the account's
        /// FULL API key to it (mode 0600) so the guard can call the provider. Who can read it
        /// there: the login user and root, anyone who gets onto the machine, the host operator
        /// (on Vast, whoever runs the physical machine can read its disk) and anyone who gets
        /// the disk; any of them can use your whole account. The guard deletes it once the
        /// provider confirms its stop/release; `guard off` deletes it too.
        #[arg(long)]
        allow_full_key: bool,
        /// The command for --action command (run by sh on the host).
        #[arg(long, value_name = "CMD")]
        command: Option<String>,
        /// More ports whose established connections keep the machine alive (e.g. 8888).
        #[arg(long = "port", value_name = "PORT")]
        ports: Vec<u16>,
        /// An SSH login whose terminal had no input this long no longer keeps the machine alive
        /// (a laptop lid closed on it); default 120.
        #[arg(long, value_name = "MINUTES")]
        inactive_minutes: Option<u64>,
    },
    /// Each signal's last reading, idle since, deadline, snooze and the last decision.
    Status {
        #[command(flatten)]
        common: Common,
    },
    /// Hold the guard back for a while (30m, 2h).
    Snooze {
        #[command(flatten)]
        common: Common,
        duration: String,
    },
    /// Stop the guard and remove its reboot start (its log stays on the host).
    Off {
        #[command(flatten)]
        common: Common,
    },
}

fn passphrase() -> Result<Secret, CoreError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CoreError::invalid("passphrase", e.to_string()))?;
    let value = Secret::new(line.trim_end_matches(['\n', '\r']).to_string());
    drop(Secret::new(line));
    Ok(value)
}

fn login(app: &App, c: &Common) -> Result<(SshEnv, LoginKey), GuardError> {
    let pp = if c.passphrase_stdin {
        Some(passphrase()?)
    } else {
        None
    };
    let key = match &c.key {
        Some(k) => app.host_login_key(k, pp.as_ref())?,
        None => app.host_key_for(&c.host, pp.as_ref())?,
    };
    Ok((SshEnv::detect()?, key))
}

pub fn main(data_dir: Option<&Path>, args: &GuardArgs) -> ExitCode {
    let json = match &args.command {
        GuardCommand::Set { common, .. }
        | GuardCommand::Status { common }
        | GuardCommand::Snooze { common, .. }
        | GuardCommand::Off { common } => common.json,
    };
    let result = crate::open::open_app(data_dir)
        .map_err(GuardError::from)
        .and_then(|app| run(&app, args));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, json),
    }
}

fn run(app: &App, args: &GuardArgs) -> Result<(), GuardError> {
    let cancel = CancelToken::new();
    match &args.command {
        GuardCommand::Set {
            common,
            idle_minutes,
            util_below,
            deadline,
            action,
            command,
            ports,
            allow_full_key,
            inactive_minutes,
        } => {
            let action = ActionKind::parse(action).ok_or_else(|| {
                GuardError::invalid("action", "is one of stop, release, poweroff, command")
            })?;
            let mut spec = GuardSpec::new(idle_minutes.saturating_mul(60), action);
            spec.util_below = *util_below;
            spec.deadline_in_s = deadline.as_deref().map(parse_duration).transpose()?;
            spec.command = command.clone();
            spec.extra_ports = ports.clone();
            spec.allow_full_key = *allow_full_key;
            if let Some(m) = inactive_minutes {
                spec.inactive_s = m.saturating_mul(60);
            }
            app.guard_check_action(&common.host, &spec)?;
            let (env, key) = login(app, common)?;
            let rep = app.guard_set_with_key(&common.host, &env, &key, &spec, &cancel)?;
            if common.json {
                return Ok(print_json(&rep)?);
            }
            print_set(&rep);
        }
        GuardCommand::Status { common } => {
            let (env, key) = login(app, common)?;
            let st = app.guard_status_with_key(&common.host, &env, &key, &cancel)?;
            if common.json {
                return Ok(print_json(&st)?);
            }
            print_status(&st);
        }
        GuardCommand::Snooze { common, duration } => {
            let secs = parse_duration(duration)?;
            let (env, key) = login(app, common)?;
            let until = app.guard_snooze_with_key(&common.host, &env, &key, secs, &cancel)?;
            if common.json {
                return Ok(print_json(
                    &serde_json::json!({ "host": common.host, "snooze_until": until }),
                )?);
            }
            println!("Snoozed until {until} (host clock, unix seconds).");
        }
        GuardCommand::Off { common } => {
            let (env, key) = login(app, common)?;
            app.guard_off_with_key(&common.host, &env, &key, &cancel)?;
            if common.json {
                return Ok(print_json(
                    &serde_json::json!({ "host": common.host, "off": true }),
                )?);
            }
            println!(
                "The guard on {} is off (its log stays on the host).",
                common.host
            );
        }
    }
    Ok(())
}

fn print_set(r: &GuardSetReport) {
    let how = match &r.provider_action {
        Some(p) => format!(
            "calling {} from the machine ({} {}) with {}",
            p.provider,
            p.method,
            p.url,
            match p.credential {
                Credential::InstanceEnv => format!(
                    "the instance's own key ({})",
                    p.credential_var.as_deref().unwrap_or("?")
                ),
                Credential::FullKeyFile => "the account's full key on the machine".to_string(),
            }
        ),
        None => format!("running `{}`", r.action_command),
    };
    println!(
        "Guard set on {}: acts after {} min idle{}, by {how}.",
        r.host,
        r.spec.idle_s / 60,
        r.deadline_host_s
            .map(|d| format!(" or at the deadline (host time {d})"))
            .unwrap_or_default(),
    );
    println!(
        "Running: {} (pid {}); after a reboot: {:?}. Connections on ports {:?} keep it alive.",
        r.running,
        r.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
        r.boot,
        r.watch_ports
    );
    for n in &r.notes {
        match n.as_str() {
            "no_nvidia_smi" => println!("Note: no nvidia-smi on the host: the GPU counts as busy, so only the deadline can fire."),
            "no_reboot_start" => println!("Note: the host has no crontab or systemd for gpurent: after a reboot the guard is gone until you set it again."),
            "container_poweroff" => println!("Note: this looks like a container: poweroff may not stop the provider's meter."),
            "full_key_on_machine" => println!("WARNING: your account's FULL API key is now on {} (~/.gpurent/guard/provider.key, mode 0600), as you allowed. The login user and root, anyone who gets onto this machine, the host operator (on Vast, whoever runs the physical machine can read its disk) and anyone who gets its disk can read it and use your whole account. The guard deletes it once the provider confirms its stop/release; `gpurent guard off {}` removes it.", r.host, r.host),
            "http_tool_wget" => println!("Note: the host has no curl; the guard calls the provider with wget."),
            "nvidia_smi_hung" => println!("WARNING: nvidia-smi hung on the host (a GPU off the bus?): the GPU counts as busy, so only the deadline can fire."),
            "no_deadline" => println!("Note: no deadline is set: while any signal stays busy (a stuck job, a held GPU) the machine keeps billing. Add one with --deadline 4h."),
            other => println!("Note: {other}"),
        }
    }
}

fn print_status(s: &GuardStatus) {
    if !s.installed {
        println!("No guard on {}.", s.host);
        return;
    }
    println!(
        "Guard on {}: {} (boot: {:?}).",
        s.host,
        if s.running { "running" } else { "not running" },
        s.boot
    );
    let show = |name: &str, r: &Option<gpurent_core::app::guard::SignalReading>| {
        if let Some(r) = r {
            // A first sample has no earlier one to compare with: not "cannot read".
            let state = if r.state == "unreadable" && r.why.as_deref() == Some("no_reading_yet") {
                "no reading yet (counts as busy)"
            } else {
                r.state.as_str()
            };
            println!(
                "  {name:8} {}{}{}",
                state,
                r.why
                    .as_deref()
                    .filter(|w| *w != "no_reading_yet")
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default(),
                r.value.map(|v| format!(" [{v}]")).unwrap_or_default()
            );
        }
    };
    show("gpu", &s.gpu);
    show("ssh", &s.ssh);
    if let Some(m) = s
        .ssh_measure
        .as_ref()
        .filter(|m| m.traffic != "ss" || m.unmeasured > 0)
    {
        let why = match m.traffic.as_str() {
            "no_ss" => "no ss (iproute2) on the machine",
            "ss_failed" => "ss failed",
            _ => "another user's login",
        };
        println!(
            "           cannot measure connections without a terminal ({why}) — they count as busy; {}",
            if m.inactive_limit_applies {
                "none is open now, the connected-but-inactive limit still applies to terminal logins".to_string()
            } else {
                format!(
                    "the connected-but-inactive limit does not apply to {} open now (only the deadline bounds them)",
                    m.unmeasured
                )
            }
        );
    }
    show("ollama", &s.ollama);
    show("jupyter", &s.jupyter);
    show("cpu", &s.cpu);
    show("net", &s.net);
    show("keepalive", &s.keepalive);
    if s.stale {
        println!(
            "  WARNING (guard_stale): the guard has not sampled for {} s: it is stuck and cannot act.",
            s.last_sample_age_s.unwrap_or_default()
        );
    }
    if s.notes.iter().any(|n| n == "no_deadline") {
        println!("  Note: no deadline is set (guard set --deadline 4h bounds the bill).");
    }
    if s.last
        .as_ref()
        .is_some_and(|l| l.deadline_fired == Some(true))
    {
        println!("  the deadline fired (it does not fire again, not after a restart either)");
    }
    if let Some(i) = s.idle_since {
        println!("  idle since {i} (host clock)");
    }
    if let Some(d) = s.deadline {
        println!("  deadline {d} (host clock)");
    }
    if let Some(z) = s.snooze_until {
        println!("  snoozed until {z}");
    }
    if let Some(l) = &s.last {
        println!("  last decision: {} {}", l.decision, l.why);
    }
    if let Some(a) = &s.last_action {
        println!(
            "  last action at {}: {} ({}) rc={:?}",
            a.at, a.decision, a.why, a.action_rc
        );
    }
}
