//! The guard's SSH side: what the host says about itself, installing and starting the script,
//! fetching its state and decisions, snoozing it, and switching it off. Each is a few execs on
//! one logged-in [`Connection`]; nothing here keeps a connection open.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use std::time::Duration;

use super::{parse_facts, parse_state, GuardError, HostFacts, ScriptState, SCRIPT};
use crate::infra::cancel::CancelToken;
use crate::monitor::telemetry::{apps_command, GpuQuery};
use crate::remote::exec::exec_collect;
use crate::remote::{sh_c, Connection, ExecOptions, ExecOutput};

/// The guard's folder on the host, as a shell word (`$HOME` expands there).
const D: &str = r#"d="$HOME/.gpurent/guard""#;

/// One exec that prints `key=value` facts ([`parse_facts`]).
pub const FACTS: &str = r#"echo "uid=$(id -u 2>/dev/null)"
if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then echo sudo=1; else echo sudo=0; fi
echo "ssh=$SSH_CONNECTION"; echo "path=$PATH"; echo "home=$HOME"; echo "now=$(date +%s)"
p=$(command -v poweroff 2>/dev/null); case "$p" in /*) ;; *) p=; for d in /usr/sbin /sbin /usr/bin /bin; do [ -x "$d/poweroff" ] && { p=$d/poweroff; break; }; done ;; esac
[ -n "$p" ] && { echo poweroff=1; echo "poweroff_path=$p"; }
if command -v sudo >/dev/null 2>&1 && sudo -n sh -c 'command -v poweroff' >/dev/null 2>&1; then echo sudo_poweroff=1; fi
echo "proc_root=${GPURENT_PROC_ROOT:-}"
command -v crontab >/dev/null 2>&1 && echo crontab=1
[ -d /run/systemd/system ] && echo systemd=1
[ -f /.dockerenv ] && echo container=1
command -v nvidia-smi >/dev/null 2>&1 && echo nvidia_smi=1
command -v curl >/dev/null 2>&1 && echo curl=1
if command -v wget >/dev/null 2>&1; then echo wget=1; wget --help 2>&1 | grep -q -- '--method' && echo wget_method=1; fi
true"#;

/// The facts exec, plus — for a provider machine — whether the instance's own key variable is set
/// (`instance_key=1`; its value is never printed) and which instance the id variable names, from
/// the session's environment or else PID 1's (SSH sessions in a container may not carry it).
pub fn facts_script(instance_env: Option<(&str, &str)>) -> String {
    match instance_env {
        None => FACTS.to_string(),
        Some((key_var, id_var)) => format!(
            "{FACTS}
envv() {{ eval \"v=\\${{$1:-}}\"; [ -n \"$v\" ] || v=$(tr '\\000' '\\n' < /proc/1/environ 2>/dev/null | sed -n \"s/^$1=//p\" | head -n 1); printf '%s' \"$v\"; }}
[ -n \"$(envv {key_var})\" ] && echo instance_key=1
echo \"instance_id=$(envv {id_var})\"
true"
        ),
    }
}

/// How long one exec of `guard set`/`status` may take: a host where something hangs (nvidia-smi
/// with a GPU off the bus, a sudo waiting on a name lookup) never freezes gpurent.
pub const EXEC_LIMIT: Duration = Duration::from_secs(60);
/// How long one nvidia-smi query at set time may take before the GPU counts as hung.
pub const SMI_LIMIT: Duration = Duration::from_secs(15);

fn run(conn: &Connection, script: &str, cancel: &CancelToken) -> Result<ExecOutput, GuardError> {
    run_limited(conn, script, EXEC_LIMIT, cancel)
}

fn run_limited(
    conn: &Connection,
    script: &str,
    limit: Duration,
    cancel: &CancelToken,
) -> Result<ExecOutput, GuardError> {
    let opts = ExecOptions {
        stdin: None,
        timeout: Some(limit),
    };
    Ok(exec_collect(conn, &sh_c(script)?, &opts, cancel)?)
}

fn run_with_stdin(
    conn: &Connection,
    script: &str,
    stdin: &[u8],
    cancel: &CancelToken,
) -> Result<ExecOutput, GuardError> {
    let opts = ExecOptions {
        stdin: Some(stdin),
        timeout: Some(EXEC_LIMIT),
    };
    Ok(exec_collect(conn, &sh_c(script)?, &opts, cancel)?)
}

fn failed(step: &str, out: &ExecOutput) -> GuardError {
    GuardError::InstallFailed {
        step: step.into(),
        output: format!("{}{}", out.stdout_text(), out.stderr_text())
            .chars()
            .take(2000)
            .collect(),
    }
}

/// What the host says about itself (`instance_env`: the provider's key and id variables).
pub fn facts(
    conn: &Connection,
    instance_env: Option<(&str, &str)>,
    cancel: &CancelToken,
) -> Result<HostFacts, GuardError> {
    Ok(parse_facts(
        &run(conn, &facts_script(instance_env), cancel)?.stdout_text(),
    ))
}

/// Write the account's full key to `~/.gpurent/guard/provider.key` (0600) through stdin — only
/// with the user's consent (`allow_full_key`); `None` removes a key left there by an earlier set.
pub fn put_key(
    conn: &Connection,
    key: Option<&crate::infra::secret::Secret>,
    cancel: &CancelToken,
) -> Result<(), GuardError> {
    let name = super::provider::KEY_FILE;
    let out = match key {
        Some(k) => run_with_stdin(
            conn,
            &format!(
                "{D}; umask 077; mkdir -p \"$d\" && cat > \"$d/{name}.new\" && chmod 600 \"$d/{name}.new\" && mv \"$d/{name}.new\" \"$d/{name}\""
            ),
            k.expose().as_bytes(),
            cancel,
        )?,
        None => run(conn, &format!("{D}; rm -f \"$d/{name}\""), cancel)?,
    };
    if out.success() {
        Ok(())
    } else {
        Err(failed("writing the provider key", &out))
    }
}

/// How long gpurent's own stop or release waits on the machine to take the full key off it.
pub const KEY_OFF_LIMIT: Duration = Duration::from_secs(15);

/// Take the account's full key (`~/.gpurent/guard/provider.key`, and a half-written `.new`) off
/// the machine and check it is gone: run by gpurent right before it stops or releases the
/// machine itself (a stopped machine's disk stays readable to its host operator). A failure is
/// an error; the caller still stops the machine (money first) and says the key may remain.
pub fn remove_provider_key(conn: &Connection, cancel: &CancelToken) -> Result<(), GuardError> {
    let name = super::provider::KEY_FILE;
    let out = run_limited(
        conn,
        &format!("{D}; rm -f \"$d/{name}\" \"$d/{name}.new\"; [ ! -e \"$d/{name}\" ]"),
        KEY_OFF_LIMIT,
        cancel,
    )?;
    if out.success() {
        Ok(())
    } else {
        Err(failed("removing the provider key", &out))
    }
}

/// The queries the guard runs, and whether nvidia-smi hung while they were adapted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuCommands {
    pub gpu: String,
    pub apps: String,
    /// An nvidia-smi query ran past [`SMI_LIMIT`] (a GPU off the bus): the full query is kept;
    /// the guard then counts the GPU as hung (busy) and only the deadline can fire.
    pub hung: bool,
}

/// The monitor's GPU query, adapted to the fields this driver knows (a refused field is dropped,
/// old reason names are used on drivers before R535), and its compute-apps query. Without a
/// working `nvidia-smi` the full query is returned: the guard then counts the GPU as unreadable,
/// so busy. Each query is cut off after [`SMI_LIMIT`], so a hung nvidia-smi never hangs
/// `guard set`: the guard is installed anyway.
pub fn gpu_commands(conn: &Connection, cancel: &CancelToken) -> Result<GpuCommands, GuardError> {
    let mut q = GpuQuery::new();
    let mut hung = false;
    for _ in 0..40 {
        let out = match run_limited(
            conn,
            &format!("{} 2>&1", q.command(None)),
            SMI_LIMIT,
            cancel,
        ) {
            Ok(out) => out,
            Err(GuardError::Remote(crate::remote::RemoteError::TimedOut { .. })) => {
                hung = true;
                break;
            }
            Err(e) => return Err(e),
        };
        if out.success() {
            break;
        }
        match q.adapt(&out.stdout_text()) {
            Some(next) => q = next,
            None => break,
        }
    }
    Ok(GpuCommands {
        gpu: q.command(None),
        apps: apps_command(),
        hung,
    })
}

/// Write `guard.sh` and `guard.conf`, register the reboot start, then start the loop (a running
/// loop re-reads the new conf on its next sample): through the systemd unit where `boot`
/// installed one (the loop is then the unit's, not a child of this SSH session), else detached.
/// Only this removes the `off` mark the user's `guard off` left.
pub fn install(
    conn: &Connection,
    conf: &str,
    cancel: &CancelToken,
) -> Result<ScriptState, GuardError> {
    let put = |name: &str, mode: &str, body: &str| -> Result<(), GuardError> {
        let script = format!(
            "{D}; umask 077; mkdir -p \"$d\" && cat > \"$d/{name}.new\" && chmod {mode} \"$d/{name}.new\" && mv \"$d/{name}.new\" \"$d/{name}\""
        );
        let out = run_with_stdin(conn, &script, body.as_bytes(), cancel)?;
        if out.success() {
            Ok(())
        } else {
            Err(failed(&format!("writing {name}"), &out))
        }
    };
    put("guard.sh", "700", SCRIPT)?;
    put("guard.conf", "600", conf)?;
    let out = run(
        conn,
        &format!(
            "{D}; rm -f \"$d/off\"; sh \"$d/guard.sh\" boot; sh \"$d/guard.sh\" start || {{ sh \"$d/guard.sh\" unboot; exit 1; }}; sh \"$d/guard.sh\" state"
        ),
        cancel,
    )?;
    if !out.success() {
        return Err(failed("starting the guard", &out));
    }
    parse_state(&out.stdout_text()).ok_or_else(|| failed("reading the guard's state", &out))
}

/// Everything `guard status` shows, as the host has it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Fetched {
    /// `guard.sh` is on the host.
    pub installed: bool,
    pub state: Option<ScriptState>,
    /// The last lines of `decisions.log`.
    pub log: String,
    /// The last GPU sample, as nvidia-smi printed it.
    pub gpu_csv: String,
    pub apps_csv: String,
    /// The warning the guard last gave (`unix_s message`), while it stands.
    pub warning: Option<String>,
    pub snooze_until: Option<i64>,
    /// The host's clock when fetched.
    pub host_now_s: Option<i64>,
    /// The guard's monotonic clock now (s): its last `mono` advanced by the uptime since, when
    /// the machine has not rebooted since. Compared with the last decision's `mono` it says how
    /// long ago the guard last sampled, whatever the wall clock did.
    #[serde(default)]
    pub mono_now_s: Option<i64>,
    /// The machine's uptime (s) and boot id when fetched.
    #[serde(default)]
    pub uptime_s: Option<i64>,
    #[serde(default)]
    pub boot_id: Option<String>,
    /// The guard's record that it powered the machine off (`poweroff.rec`): host time (unix s)
    /// and the boot it was on. From another boot than now: the machine did go off.
    #[serde(default)]
    pub poweroff_at_s: Option<i64>,
    #[serde(default)]
    pub poweroff_boot_id: Option<String>,
}

/// Fetch the guard's state, the last `lines` decisions and the last sample.
pub fn fetch(conn: &Connection, lines: u32, cancel: &CancelToken) -> Result<Fetched, GuardError> {
    let script = format!(
        "{D}; [ -f \"$d/guard.sh\" ] || {{ echo @@none; exit 0; }}
echo @@state; sh \"$d/guard.sh\" state
echo @@log; tail -n {lines} \"$d/decisions.log\" 2>/dev/null
echo @@gpu; cat \"$d/gpu.csv\" 2>/dev/null
echo @@apps; cat \"$d/apps.csv\" 2>/dev/null
echo @@warning; cat \"$d/warning\" 2>/dev/null
echo @@snooze; cat \"$d/snooze\" 2>/dev/null
echo @@now; date +%s
echo @@mono; cat \"$d/mono\" 2>/dev/null; echo; cat /proc/uptime 2>/dev/null; cat /proc/sys/kernel/random/boot_id 2>/dev/null
echo @@boot; cat /proc/uptime 2>/dev/null; cat /proc/sys/kernel/random/boot_id 2>/dev/null
echo @@poweroff; cat \"$d/poweroff.rec\" 2>/dev/null"
    );
    let text = run(conn, &script, cancel)?.stdout_text();
    Ok(parse_fetched(&text))
}

/// Split the `@@section` output of [`fetch`].
pub fn parse_fetched(text: &str) -> Fetched {
    let mut f = Fetched::default();
    let mut buf: Vec<(&str, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("@@") {
            if name == "none" {
                return Fetched::default();
            }
            buf.push((name, String::new()));
            continue;
        }
        if let Some((_, b)) = buf.last_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    f.installed = !buf.is_empty();
    for (name, body) in buf {
        let trimmed = body.trim();
        match name {
            "state" => f.state = parse_state(&body),
            "log" => f.log = body,
            "gpu" => f.gpu_csv = body,
            "apps" => f.apps_csv = body,
            "warning" => f.warning = (!trimmed.is_empty()).then(|| trimmed.to_string()),
            "snooze" => f.snooze_until = trimmed.parse().ok(),
            "now" => f.host_now_s = trimmed.parse().ok(),
            "mono" => f.mono_now_s = mono_now(&body),
            "boot" => {
                let mut l = body.lines().filter(|l| !l.trim().is_empty());
                f.uptime_s = l
                    .next()
                    .and_then(|u| u.split_whitespace().next())
                    .and_then(|u| u.parse::<f64>().ok())
                    .filter(|u| u.is_finite() && *u >= 0.0)
                    .map(|u| u as i64);
                f.boot_id = l.next().map(|b| b.trim().to_string());
            }
            "poweroff" => {
                let mut w = trimmed.split_whitespace();
                f.poweroff_at_s = w.next().and_then(|a| a.parse().ok());
                f.poweroff_boot_id = w.next().map(String::from);
            }
            _ => {}
        }
    }
    f
}

/// `mono` (`BOOT_ID UPTIME_CS MONO_CS`), `/proc/uptime` and the boot id now → the guard's
/// monotonic clock now, in seconds (`None` after a reboot or when a part is missing).
fn mono_now(body: &str) -> Option<i64> {
    let mut lines = body.lines().filter(|l| !l.trim().is_empty());
    let state: Vec<&str> = lines.next()?.split_whitespace().collect();
    let uptime: f64 = lines.next()?.split_whitespace().next()?.parse().ok()?;
    let boot = lines.next()?.trim();
    let [bid, up_cs, mono_cs] = state.as_slice() else {
        return None;
    };
    if *bid != boot {
        return None;
    }
    let up_cs: i64 = up_cs.parse().ok()?;
    let mono_cs: i64 = mono_cs.parse().ok()?;
    let now_cs = (uptime * 100.0) as i64;
    (now_cs >= up_cs).then(|| (mono_cs + now_cs - up_cs) / 100)
}

/// Snooze the guard for `seconds` from the host's now; returns the host time it ends.
pub fn snooze(conn: &Connection, seconds: u64, cancel: &CancelToken) -> Result<i64, GuardError> {
    let out = run(
        conn,
        &format!(
            "{D}; [ -f \"$d/guard.sh\" ] || exit 3; u=$(( $(date +%s) + {seconds} )); echo $u > \"$d/snooze.new\" && mv \"$d/snooze.new\" \"$d/snooze\" && echo $u"
        ),
        cancel,
    )?;
    match out.exit_status {
        Some(0) => out
            .stdout_text()
            .trim()
            .parse()
            .map_err(|_| failed("writing the snooze", &out)),
        Some(3) => Err(GuardError::NotInstalled(String::new())),
        _ => Err(failed("writing the snooze", &out)),
    }
}

/// Stop the loop, remove the reboot start, keep the logs. `false` when no guard was there.
pub fn off(conn: &Connection, cancel: &CancelToken) -> Result<bool, GuardError> {
    let out = run(
        conn,
        &format!(
            "{D}; [ -f \"$d/guard.sh\" ] || exit 3; touch \"$d/off\"; sh \"$d/guard.sh\" stop; sh \"$d/guard.sh\" unboot; rm -f \"$d/snooze\" \"$d/warning\" \"$d/provider.key\""
        ),
        cancel,
    )?;
    match out.exit_status {
        Some(0) => Ok(true),
        Some(3) => Ok(false),
        _ => Err(failed("switching the guard off", &out)),
    }
}
