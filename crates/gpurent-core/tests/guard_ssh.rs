//! The guard on fake GPU hosts served by a REAL loopback sshd (`gpurent-testhost`): installed
//! with `App::guard_set_with_key`, then left alone — no gpurent connection stays open. The fake
//! `nvidia-smi` answers from `$FAKEGPU_STATE/gpus.csv` / `apps.csv` (its live mode, re-read on
//! every sample), a fake `poweroff` on the host's PATH records that it was called, a fake `wall`
//! records the warning, a fake `crontab` keeps its table in a file. The sampling period is the
//! documented test setting (`GuardSpec::period_s`, 1 s here instead of 30 s).
//!
//! Needs `/usr/sbin/sshd`, the `gputest` user (`scripts/setup-test-host.sh`) and root: skipped
//! with a message otherwise, except under `CI=true` where that fails.

mod guard_common;
mod remote_common;
mod setup_common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpurent_core::app::login::LoginKey;
use gpurent_core::app::App;
use gpurent_core::guard::{parse_decisions, ActionKind, Boot, Decision, GuardSpec};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::FixedClock;
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::connect::KeyVerifier;
use gpurent_core::remote::hostkey::PresentedKey;
use gpurent_core::remote::{connect, Auth, Endpoint, Role};
use gpurent_testhost::{sshd_available, Sshd, UserKey, TEST_USER};
use guard_common::{
    advance_cpu, apps_csv, established_conns, gpus_csv, link_system_tools, quiet_machine,
    short_spec, system_tool, wait_for, write_exec, H100,
};
use remote_common::{add_confirmed, login_key, opts, spec, world, World};
use setup_common::FakeHost;

const LABEL: &str = "gpu";
const PERIOD_S: u32 = 1;
const IDLE_S: u64 = 3;

/// A fake GPU host behind a real sshd, saved in an App as `gpu`.
struct Rig {
    host: FakeHost,
    w: Option<World>,
    k: UserKey,
    key: LoginKey,
    sshd: Sshd,
    /// The fake machine root of the CPU and network signals (`quiet_machine`).
    sysroot: PathBuf,
    cron: std::process::Child,
}

const FAKE_POWEROFF: &str =
    "#!/bin/sh\necho \"$(date +%s) poweroff $*\" >> \"$FAKEGPU_STATE/poweroff.log\"\n";
const FAKE_WALL: &str = "#!/bin/sh\n{ date +%s; cat; } >> \"$FAKEGPU_STATE/wall.log\"\n";
const FAKE_CRONTAB: &str = "#!/bin/sh\nf=\"$FAKEGPU_STATE/crontab\"\ncase \"$1\" in\n  -l) [ -f \"$f\" ] || { echo 'no crontab for user' >&2; exit 1; }; cat \"$f\" ;;\n  -) cat > \"$f\" ;;\n  *) exit 2 ;;\nesac\n";

/// A scenario host whose GPU is at `util` % with `pids` computing; `extra` scenario variables.
fn rig(util: u32, pids: &[u32], extra: &[(&str, &str)]) -> Option<Rig> {
    if !sshd_available() {
        return None;
    }
    let mut host = FakeHost::new("ready_h100");
    for (k, v) in extra {
        host.vars.insert(k.to_string(), v.to_string());
    }
    let sysroot = quiet_machine(&mut host);
    let bin = host.bin();
    link_system_tools(&bin, &["mv", "nohup"]);
    write_exec(&bin.join("poweroff"), FAKE_POWEROFF);
    write_exec(&bin.join("wall"), FAKE_WALL);
    write_exec(&bin.join("crontab"), FAKE_CRONTAB);
    // A cron daemon runs (the guard writes an @reboot line only where one does): a process
    // named cron.
    std::os::unix::fs::symlink(system_tool("sleep").expect("sleep"), bin.join("cron"))
        .expect("link cron");
    let cron = std::process::Command::new(bin.join("cron"))
        .arg("3600")
        .spawn()
        .expect("fake cron");
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate("guard-ssh").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    let r = Rig {
        host,
        w: Some(world()),
        k,
        key,
        sshd,
        sysroot,
        cron,
    };
    r.set_gpu(util, pids);
    add_confirmed(r.w(), LABEL, spec(&r.sshd), Some(&r.key));
    Some(r)
}

fn test_spec() -> GuardSpec {
    short_spec(IDLE_S, ActionKind::Poweroff, 2)
}

impl Rig {
    fn w(&self) -> &World {
        self.w.as_ref().expect("world")
    }
    fn state(&self) -> PathBuf {
        self.host.dir.path().join("state")
    }
    fn guard_dir(&self) -> PathBuf {
        self.host.dir.path().join("home/.gpurent/guard")
    }
    /// Change what the fake GPU reports (temp file + rename, as the fake's README asks).
    fn set_gpu(&self, util: u32, pids: &[u32]) {
        for (name, body) in [
            ("gpus.csv", gpus_csv(H100, util)),
            ("apps.csv", apps_csv(pids)),
        ] {
            let tmp = self.state().join(format!(".{name}.tmp"));
            std::fs::write(&tmp, body).expect("write state");
            std::fs::rename(&tmp, self.state().join(name)).expect("rename state");
        }
    }
    fn set(&self, spec: &GuardSpec) -> gpurent_core::app::guard::GuardSetReport {
        self.w()
            .app
            .guard_set_with_key(LABEL, &self.w().env, &self.key, spec, &CancelToken::new())
            .expect("guard_set")
    }
    fn poweroffs(&self) -> Vec<String> {
        std::fs::read_to_string(self.state().join("poweroff.log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
    /// The action ran and its decision is logged (the fake poweroff writes first).
    fn acted(&self) -> bool {
        !self.poweroffs().is_empty() && self.decisions().iter().any(|d| d.decision == "act")
    }
    fn decisions(&self) -> Vec<Decision> {
        parse_decisions(
            &std::fs::read_to_string(self.guard_dir().join("decisions.log")).unwrap_or_default(),
        )
        .0
    }
    fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.guard_dir().join("pid"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }
    fn alive(pid: i32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
            && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains("guard.sh"))
                .unwrap_or(false)
    }
    /// Established TCP connections to this sshd right now (the test's own, if any).
    fn conns_to_sshd(&self) -> usize {
        established_conns(self.sshd.port())
    }
    /// Wait until the guard has taken `n` more samples (a 1 s period each, by its own clock;
    /// up to 120 s of ours, a hang guard only) and return all its decisions.
    fn samples(&self, n: usize) -> Vec<Decision> {
        let before = self.decisions().len();
        assert!(
            wait_for(Duration::from_secs(120), || self.decisions().len()
                >= before + n),
            "the guard stopped sampling: {:#?}",
            self.decisions()
        );
        self.decisions()
    }
    /// Let the guard take IDLE_S + 5 samples (past its idle time) and assert it never fired,
    /// while it kept sampling. Counted in the guard's samples, not timed: a sleep of IDLE_S + 5 s
    /// saw fewer samples than it asked for on a loaded machine.
    fn assert_never_fires(&self, why: &str) -> Vec<Decision> {
        self.samples(IDLE_S as usize + 5);
        assert!(
            self.poweroffs().is_empty(),
            "{why}: the guard fired: {:?}\n{:#?}",
            self.poweroffs(),
            self.decisions()
        );
        let ds = self.decisions();
        assert!(
            ds.len() as u64 >= IDLE_S + 2,
            "{why}: the guard kept sampling: {ds:#?}"
        );
        ds
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.cron.kill();
        let _ = self.cron.wait();
        // The guard outlives every connection by design: stop the one this test started.
        if let Some(pid) = self.pid() {
            if Rig::alive(pid) {
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .status();
            }
        }
    }
}

/// Idle → the action runs within one sampling period after the idle time, with nothing of
/// gpurent running: the App is closed and no connection to the host is open.
#[test]
fn idle_fires_with_gpurent_closed() {
    let Some(mut r) = rig(0, &[], &[]) else {
        return;
    };
    let rep = r.set(&test_spec());
    assert!(rep.running, "{rep:?}");
    assert_eq!(
        rep.action_command,
        r.host.bin().join("poweroff").display().to_string(),
        "root on the fake host: the poweroff found, by its path"
    );
    assert_eq!(rep.boot, Boot::Crontab, "{rep:?}");
    assert!(rep.watch_ports.contains(&r.sshd.port()), "{rep:?}");
    // Close gpurent: the App (its database) goes; no SSH connection remains.
    let World { tmp, app, env } = r.w.take().expect("world");
    drop(app);
    assert!(
        wait_for(Duration::from_secs(30), || r.conns_to_sshd() == 0),
        "a connection to the host is still open"
    );
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "the guard did not fire: {:#?}",
        r.decisions()
    );
    let ds = r.decisions();
    let act = ds
        .iter()
        .find(|d| d.decision == "act")
        .expect("an act decision");
    assert_eq!(act.why, "idle");
    assert_eq!(act.action_rc, Some(0));
    let idle_since = act.idle_since.expect("idle since");
    assert!(
        act.at - idle_since >= IDLE_S as i64,
        "acted before the idle time: {ds:#?}"
    );
    // Within one sampling period after the idle time: at the guard's previous sample it was
    // idle for less than IDLE_S (by its own clock: `at - idle_since` is its idle time then), so
    // it acted at the first sample past the idle time. `act.at - idle_since <= IDLE_S +
    // PERIOD_S + 1` also counted how late a loaded machine ran the loop.
    // (Each sample states `idle_since` anew from its monotonic idle time: it may move by a second
    // between samples, so each is read against its own `at`.)
    let before = sample_before_act(&ds);
    let idle_then = before.at - before.idle_since.expect("idle at the sample before");
    assert!(
        idle_then < IDLE_S as i64,
        "a sample past the idle time did not act (period {PERIOD_S} s): {ds:#?}"
    );
    // The warning went out before, to open shells (wall) and as a file.
    let warn = ds.iter().position(|d| d.decision == "warn").expect("warn");
    let acted = ds.iter().position(|d| d.decision == "act").expect("act");
    assert!(warn < acted, "{ds:#?}");
    let wall = std::fs::read_to_string(r.state().join("wall.log")).unwrap_or_default();
    assert!(wall.contains("gpurent guard"), "wall: {wall}");
    // Reopen gpurent: the status shows the action, each signal, and the sample through the
    // monitor's parser; the decisions are kept in the database.
    let app = App::open(
        Paths::under(tmp.path().join("gpurent")),
        Arc::new(FixedClock(2_000)),
        None,
    )
    .expect("reopen");
    let st = app
        .guard_status_with_key(LABEL, &env, &r.key, &CancelToken::new())
        .expect("status");
    assert!(st.installed && st.running, "{st:?}");
    let la = st.last_action.as_ref().expect("last action");
    assert_eq!((la.decision.as_str(), la.why.as_str()), ("act", "idle"));
    assert_eq!(st.gpu.as_ref().map(|g| g.state.as_str()), Some("idle"));
    assert_eq!(st.ssh.as_ref().map(|g| g.state.as_str()), Some("idle"));
    assert_eq!(st.gpus.len(), 1, "{st:?}");
    assert_eq!(st.gpus[0].util_gpu_pct, Some(0.0));
    assert_eq!(st.spec.as_ref().map(|s| s.idle_s), Some(IDLE_S));
    let kept = app.guard_decisions(LABEL, 1000).expect("decisions");
    assert!(kept.iter().any(|d| d.decision == "act"), "{kept:?}");
    r.w = Some(World { tmp, app, env });
}

/// A busy GPU never lets it fire; nor does a compute process on an idle GPU.
#[test]
fn busy_gpu_never_fires() {
    let Some(r) = rig(80, &[], &[]) else {
        return;
    };
    r.set(&test_spec());
    let ds = r.assert_never_fires("busy GPU");
    let last = ds.last().expect("decision");
    assert_eq!(
        (last.decision.as_str(), last.gpu.as_str()),
        ("keep", "busy")
    );
    assert_eq!(last.gpu_why, "utilization");
    assert_eq!(last.gpu_util_max, Some(80.0));
    // Utilisation drops but a process still holds the GPU: still busy.
    r.set_gpu(0, &[4242]);
    std::thread::sleep(Duration::from_secs(3));
    let ds = r.assert_never_fires("compute process");
    let last = ds.last().expect("decision");
    assert_eq!(
        (last.gpu.as_str(), last.gpu_why.as_str()),
        ("busy", "processes")
    );
    assert_eq!(last.gpu_procs, Some(1));
}

/// An open SSH session (a VS Code window, a port forward: all the same TCP connection to sshd)
/// keeps the machine alive. This host has no `ss`: a connection without a terminal cannot be
/// judged by its traffic, so it counts as busy even past the connected-but-inactive limit.
#[test]
fn open_ssh_session_never_fires() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    assert!(!r.host.bin().join("ss").exists());
    r.set(&GuardSpec {
        inactive_s: 3,
        ..test_spec()
    });
    let pem = Secret::new(r.k.private_pem.clone());
    let mut accept = |_: Role, _: &Endpoint, _: &PresentedKey| Ok(());
    let v: &mut KeyVerifier<'_> = &mut accept;
    let conn = connect(
        &Endpoint::new(r.sshd.host(), r.sshd.port(), TEST_USER),
        None,
        Auth::Key(&pem),
        &opts(),
        v,
        &CancelToken::new(),
    )
    .expect("an SSH session held open");
    let ds = r.assert_never_fires("open SSH session");
    let last = ds.last().expect("decision");
    assert_eq!(
        (last.decision.as_str(), last.ssh.as_str()),
        ("keep", "busy")
    );
    assert!(last.ssh_conns.unwrap_or(0) >= 1, "{last:?}");
    // No `ss` on this host: the session (no terminal) cannot be measured; it counts as busy
    // past the inactive limit, and the status says so (the limit does not apply to it).
    assert_eq!(last.ssh_traffic.as_deref(), Some("no_ss"), "{last:?}");
    assert!(last.ssh_unmeasured.unwrap_or(0) >= 1, "{last:?}");
    let st = r
        .w()
        .app
        .guard_status_with_key(LABEL, &r.w().env, &r.key, &CancelToken::new())
        .expect("status");
    let m = st.ssh_measure.clone().expect("ssh_measure");
    assert_eq!(m.traffic, "no_ss", "{st:?}");
    assert!(m.unmeasured >= 1 && !m.inactive_limit_applies, "{m:?}");
    assert!(st.notes.contains(&"ssh_unmeasured".to_string()), "{st:?}");
    drop(conn);
    // Once the session is closed, the machine goes idle and the guard fires.
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "no action after the session closed: {:#?}",
        r.decisions()
    );
}

/// The real OpenSSH client logged in with the test's key, no terminal (`-T`): `-N` holds the
/// connection open and moves nothing (a port forward nobody uses); a command keeps output flowing.
fn openssh_client(r: &Rig, key_file: &Path, command: Option<&str>) -> std::process::Child {
    let mut c = std::process::Command::new("ssh");
    c.args(["-T", "-i"])
        .arg(key_file)
        .args(["-p", &r.sshd.port().to_string()])
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "ServerAliveInterval=0",
            "-o",
            "LogLevel=ERROR",
        ])
        .arg(format!("{TEST_USER}@{}", r.sshd.host()));
    match command {
        None => c.arg("-N"),
        Some(cmd) => c.arg(cmd),
    };
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ssh")
}

/// A connection without a terminal (VS Code remote, a port forward) keeps the machine alive only
/// while it carries traffic (per-socket bytes from the host's `ss -tin`): a silent one stops
/// counting after the connected-but-inactive limit, a busy one never does; once the busy one
/// closes, the guard fires with the silent one still open. Real sshd, real OpenSSH client, real ss.
#[test]
fn a_connection_without_a_terminal_counts_only_while_it_carries_traffic() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    if system_tool("ss").is_none() || system_tool("ssh").is_none() {
        eprintln!("SKIP: no ss (iproute2) or no ssh client on this machine");
        return;
    }
    link_system_tools(&r.host.bin(), &["ss"]);
    let keydir = tempfile::tempdir().expect("tmp");
    let key_file = keydir.path().join("id");
    std::fs::write(&key_file, &r.k.private_pem).expect("key");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let before = r.conns_to_sshd();
    let silent = Kill(openssh_client(&r, &key_file, None));
    // The loop ends when its output breaks (dd fails once the client is gone): a `while :` loop
    // outlived the client and the test, burning a fifth of a core each until the machine
    // restarted (three were found running after three test runs).
    let busy = Kill(openssh_client(
        &r,
        &key_file,
        Some("while dd if=/dev/zero bs=16384 count=1 2>/dev/null; do sleep 0.3; done"),
    ));
    assert!(
        wait_for(Duration::from_secs(30), || r.conns_to_sshd() >= before + 2),
        "the two ssh clients did not connect"
    );
    r.set(&GuardSpec {
        inactive_s: 4,
        ..test_spec()
    });
    // Past the limit: the silent one no longer counts, the busy one still does. Waited for in
    // the guard's own decisions (the silent one judged inactive, then IDLE_S + 2 samples more,
    // in which a guard that counted neither would have fired), not timed: an 11 s sleep raced
    // the guard's sampling on a loaded machine.
    assert!(
        wait_for(Duration::from_secs(120), || r
            .decisions()
            .last()
            .is_some_and(|d| d.ssh_inactive == Some(1))),
        "the silent connection never counted as inactive: {:#?}",
        r.decisions()
    );
    r.samples(IDLE_S as usize + 2);
    assert!(r.poweroffs().is_empty(), "{:#?}", r.decisions());
    let last = r.decisions().last().cloned().expect("decision");
    assert_eq!(
        (last.decision.as_str(), last.ssh.as_str()),
        ("keep", "busy"),
        "{last:?}"
    );
    assert_eq!(last.ssh_conns, Some(1), "the busy connection: {last:?}");
    assert_eq!(
        last.ssh_inactive,
        Some(1),
        "the silent connection: {last:?}"
    );
    // Both measured by the host's ss: nothing counts only for want of a measurement.
    assert_eq!(last.ssh_traffic.as_deref(), Some("ss"), "{last:?}");
    assert_eq!(last.ssh_unmeasured, Some(0), "{last:?}");
    drop(busy);
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "no action with only a silent connection open: {:#?}",
        r.decisions()
    );
    let act = r
        .decisions()
        .into_iter()
        .find(|d| d.decision == "act")
        .expect("act");
    assert_eq!(act.why, "idle");
    assert_eq!(act.ssh_inactive, Some(1), "{act:?}");
    let wall = std::fs::read_to_string(r.state().join("wall.log")).unwrap_or_default();
    assert!(wall.contains("no input (or traffic)"), "{wall}");
    drop(silent);
}

/// A signal it cannot read (nvidia-smi failing) counts as busy.
#[test]
fn unreadable_gpu_never_fires() {
    let Some(r) = rig(0, &[], &[("FAKE_SMI", "gpu_lost")]) else {
        return;
    };
    r.set(&test_spec());
    let ds = r.assert_never_fires("unreadable GPU");
    let last = ds.last().expect("decision");
    assert_eq!(
        (last.gpu.as_str(), last.gpu_why.as_str()),
        ("unreadable", "query_failed")
    );
    assert_eq!(last.why, "gpu");
}

/// A snooze from the CLI/app holds the action back; `off` stops the loop.
#[test]
fn snooze_is_honoured_and_off_stops_it() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    r.set(&test_spec());
    let until = r
        .w()
        .app
        .guard_snooze_with_key(LABEL, &r.w().env, &r.key, 3600, &CancelToken::new())
        .expect("snooze");
    let ds = r.assert_never_fires("snoozed");
    let sn = ds
        .iter()
        .find(|d| d.decision == "snoozed")
        .unwrap_or_else(|| panic!("no snoozed decision: {ds:#?}"));
    assert_eq!(sn.why, "idle");
    assert_eq!(sn.snooze_until, Some(until));
    let pid = r.pid().expect("pid");
    r.w()
        .app
        .guard_off_with_key(LABEL, &r.w().env, &r.key, &CancelToken::new())
        .expect("off");
    assert!(
        wait_for(Duration::from_secs(30), || !Rig::alive(pid)),
        "the loop still runs after off"
    );
    let cron = std::fs::read_to_string(r.state().join("crontab")).unwrap_or_default();
    assert!(!cron.contains("gpurent-guard"), "crontab: {cron}");
    let st = r
        .w()
        .app
        .guard_status_with_key(LABEL, &r.w().env, &r.key, &CancelToken::new())
        .expect("status");
    assert!(st.installed && !st.running, "{st:?}");
    assert_eq!(st.spec, None, "switched off");
}

/// The deadline fires while the GPU is busy.
#[test]
fn deadline_fires_while_busy() {
    let Some(r) = rig(95, &[77], &[]) else {
        return;
    };
    let spec = GuardSpec {
        idle_s: 600,
        deadline_in_s: Some(4),
        ..test_spec()
    };
    let rep = r.set(&spec);
    let deadline = rep.deadline_host_s.expect("deadline");
    assert!(
        wait_for(Duration::from_secs(60), || r.acted()),
        "the deadline did not fire: {:#?}",
        r.decisions()
    );
    let ds = r.decisions();
    let act = ds.iter().find(|d| d.decision == "act").expect("act");
    assert_eq!(act.why, "deadline");
    assert_eq!(act.gpu, "busy");
    // One warning before the deadline, not one per sample while it stands.
    let warns: Vec<&Decision> = ds.iter().filter(|d| d.decision == "warn").collect();
    assert_eq!(warns.len(), 1, "{ds:#?}");
    assert_eq!(warns[0].why, "deadline");
    assert!(warns[0].at < act.at, "{ds:#?}");
    assert!(act.at >= deadline, "{act:?}");
    // At the first sample past the deadline: at the guard's previous sample the deadline was
    // still ahead by its own clock (its `deadline - at` is the time it had left). `act.at <=
    // deadline + PERIOD_S + 1` also counted how late a loaded machine ran the loop.
    let before = sample_before_act(&ds);
    let left = before.deadline.expect("the deadline before it fired") - before.at;
    assert!(
        left > 0,
        "a sample past the deadline did not act (period {PERIOD_S} s): {ds:#?}"
    );
}

/// The guard's last sample before its act: the loop turn before (the action's own record,
/// `poweroff`, shares the act's turn and `mono`).
fn sample_before_act(ds: &[Decision]) -> &Decision {
    let pos = ds.iter().position(|d| d.decision == "act").expect("act");
    ds[..pos]
        .iter()
        .rev()
        .find(|d| d.mono != ds[pos].mono)
        .expect("a sample before the act")
}

/// After a reboot (the guard killed, its stale pid file left) the crontab's @reboot line, run
/// the way cron runs it (the login user, an empty environment), brings it back, and it fires.
#[test]
fn back_after_a_simulated_reboot() {
    let Some(r) = rig(70, &[], &[]) else {
        return;
    };
    r.set(&test_spec());
    let old = r.pid().expect("pid");
    assert!(Rig::alive(old));
    let cron = std::fs::read_to_string(r.state().join("crontab")).expect("crontab written");
    let line = cron
        .lines()
        .find(|l| l.starts_with("@reboot ") && l.ends_with("# gpurent-guard"))
        .unwrap_or_else(|| panic!("no @reboot line: {cron}"));
    let cmd = line
        .trim_start_matches("@reboot ")
        .trim_end_matches("# gpurent-guard")
        .trim();
    // The "reboot".
    std::process::Command::new("kill")
        .arg(old.to_string())
        .status()
        .expect("kill");
    assert!(wait_for(Duration::from_secs(30), || !Rig::alive(old)));
    assert_eq!(
        r.pid(),
        Some(old),
        "a real reboot leaves the pid file behind"
    );
    // cron: the user, HOME, no PATH of ours; the fake machine's own variables.
    let env = r.host.env().expect("env");
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let out = std::process::Command::new("setpriv")
        .args([
            &format!("--reuid={TEST_USER}"),
            &format!("--regid={TEST_USER}"),
            "--init-groups",
            "env",
            "-i",
            &format!("HOME={}", r.host.dir.path().join("home").display()),
            &format!("FAKEGPU_STATE={}", get("FAKEGPU_STATE")),
            &format!("FAKEGPU_SCENARIO={}", get("FAKEGPU_SCENARIO")),
            "PATH=/usr/bin:/bin",
            "/bin/sh",
            "-c",
            cmd,
        ])
        .output()
        .expect("run the @reboot line");
    assert!(out.status.success(), "{out:?}");
    let new = r.pid().expect("pid");
    assert_ne!(new, old);
    assert!(Rig::alive(new), "{out:?}");
    // Back, sampling with the configured PATH; once the GPU goes idle it fires.
    r.set_gpu(0, &[]);
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "no action after the reboot: {:#?}",
        r.decisions()
    );
}

/// A CPU-bound job (the container's cgroup `cpu.stat` growing one core's worth, as the kernel
/// counts it) keeps the machine alive with the GPU idle and nobody logged in; when it ends, the
/// guard fires.
#[test]
fn cpu_bound_job_never_fires() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let job = {
        let (root, stop) = (r.sysroot.clone(), stop.clone());
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                advance_cpu(&root, 1_000_000 + t.elapsed().as_micros() as u64);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    r.set(&test_spec());
    let ds = r.assert_never_fires("a CPU-bound job");
    let last = ds.last().expect("decision");
    assert_eq!(last.cpu.as_deref(), Some("busy"), "{last:?}");
    assert_eq!((last.decision.as_str(), last.why.as_str()), ("keep", "cpu"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = job.join();
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "no action after the job ended: {:#?}",
        r.decisions()
    );
}

/// A deadline fires once. The machine "reboots" after it (the loop killed, the @reboot line run
/// as cron runs it): the passed deadline does not fire again — before, a guarded VM powered off
/// within seconds of every power-on.
#[test]
fn a_passed_deadline_does_not_fire_again_after_a_reboot() {
    let Some(r) = rig(95, &[77], &[]) else {
        return;
    };
    let spec = GuardSpec {
        idle_s: 600,
        deadline_in_s: Some(2),
        ..test_spec()
    };
    r.set(&spec);
    assert!(
        wait_for(Duration::from_secs(60), || r.acted()),
        "the deadline did not fire: {:#?}",
        r.decisions()
    );
    let old = r.pid().expect("pid");
    std::process::Command::new("kill")
        .arg(old.to_string())
        .status()
        .expect("kill");
    assert!(wait_for(Duration::from_secs(30), || !Rig::alive(old)));
    let cron = std::fs::read_to_string(r.state().join("crontab")).expect("crontab written");
    let cmd = cron
        .lines()
        .find(|l| l.starts_with("@reboot ") && l.ends_with("# gpurent-guard"))
        .unwrap_or_else(|| panic!("no @reboot line: {cron}"))
        .trim_start_matches("@reboot ")
        .trim_end_matches("# gpurent-guard")
        .trim()
        .to_string();
    let out = std::process::Command::new("setpriv")
        .args([
            &format!("--reuid={TEST_USER}"),
            &format!("--regid={TEST_USER}"),
            "--init-groups",
            "env",
            "-i",
            &format!("HOME={}", r.host.dir.path().join("home").display()),
            &format!("FAKEGPU_STATE={}", r.state().display()),
            "PATH=/usr/bin:/bin",
            "/bin/sh",
            "-c",
            &cmd,
        ])
        .output()
        .expect("run the @reboot line");
    assert!(out.status.success(), "{out:?}");
    let new = r.pid().expect("pid");
    assert_ne!(new, old);
    let before = r.decisions().len();
    // Two samples after the restart, waited for (a 5 s sleep raced the loop on a loaded machine).
    let after: Vec<Decision> = r.samples(2).into_iter().skip(before).collect();
    assert!(after.len() >= 2, "it samples after the restart: {after:#?}");
    assert_eq!(r.poweroffs().len(), 1, "fired again: {:#?}", r.decisions());
    assert!(after
        .iter()
        .all(|d| d.deadline_fired == Some(true) && d.deadline.is_none()));
    let st = r
        .w()
        .app
        .guard_status_with_key(LABEL, &r.w().env, &r.key, &CancelToken::new())
        .expect("status");
    assert!(!st.stale, "{st:?}");
    assert!(st.last_sample_age_s.is_some_and(|a| a <= 5), "{st:?}");
}

/// An SSH login with a terminal and no input (a laptop lid closed on it) keeps the machine alive
/// only until the inactive limit: the terminals are warned first, then it counts as inactive
/// and the guard fires with the session still connected. The real `ssh -tt` client, a login
/// shell on a real pseudo-terminal of the loopback sshd.
#[test]
fn an_idle_ssh_login_stops_keeping_it_alive() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    let Some(ssh) = system_tool("ssh") else {
        eprintln!("SKIP: no ssh client");
        return;
    };
    let keyfile = r.host.dir.path().join("client_key");
    std::fs::write(&keyfile, &r.k.private_pem).expect("key");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&keyfile, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let kh = r.host.dir.path().join("client_known_hosts");
    std::fs::write(&kh, r.sshd.known_hosts_line().expect("known_hosts")).expect("kh");
    let mut login = std::process::Command::new(ssh)
        .args([
            "-tt",
            "-o",
            "BatchMode=yes",
            "-o",
            &format!("UserKnownHostsFile={}", kh.display()),
            "-i",
            &keyfile.display().to_string(),
            "-p",
            &r.sshd.port().to_string(),
            &format!("{TEST_USER}@{}", r.sshd.host()),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ssh -tt");
    assert!(
        wait_for(Duration::from_secs(30), || r.conns_to_sshd() >= 1),
        "the login did not connect"
    );
    let spec = GuardSpec {
        inactive_s: 8,
        ..test_spec()
    };
    r.set(&spec);
    assert!(
        wait_for(Duration::from_secs(40), || r.acted()),
        "the idle login kept the machine alive: {:#?}",
        r.decisions()
    );
    assert!(r.conns_to_sshd() >= 1, "the login is still connected");
    let ds = r.decisions();
    assert!(
        ds.iter().any(|d| d.ssh == "busy" && d.ssh_conns == Some(1)),
        "it counted while young: {ds:#?}"
    );
    let act = ds.iter().find(|d| d.decision == "act").expect("act");
    assert_eq!(
        (act.ssh.as_str(), act.ssh_inactive),
        ("idle", Some(1)),
        "{act:?}"
    );
    let wall = std::fs::read_to_string(r.state().join("wall.log")).unwrap_or_default();
    assert!(wall.contains("no input"), "warned first: {wall}");
    let _ = login.kill();
    let _ = login.wait();
}

/// nvidia-smi hangs (a GPU off the bus): `guard set` still returns — each query at set time is cut
/// off — and installs the guard (`nvidia_smi_hung`); the guard counts the GPU as hung, goes on
/// sampling, and its deadline fires. Before, `guard set` never returned.
#[test]
fn a_hung_nvidia_smi_neither_hangs_set_nor_stops_the_deadline() {
    let Some(r) = rig(0, &[], &[("FAKE_SMI", "hang"), ("FAKE_SMI_HANG_S", "40")]) else {
        return;
    };
    let spec = GuardSpec {
        idle_s: 600,
        deadline_in_s: Some(4),
        ..test_spec()
    };
    let t = std::time::Instant::now();
    let rep = r.set(&spec);
    assert!(t.elapsed() < Duration::from_secs(40), "{:?}", t.elapsed());
    assert!(rep.running, "{rep:?}");
    assert!(rep.notes.iter().any(|n| n == "nvidia_smi_hung"), "{rep:?}");
    assert!(
        wait_for(Duration::from_secs(60), || r.acted()),
        "the deadline did not fire: {:#?}",
        r.decisions()
    );
    let ds = r.decisions();
    let act = ds.iter().find(|d| d.decision == "act").expect("act");
    assert_eq!(
        (act.why.as_str(), act.gpu_why.as_str()),
        ("deadline", "hung"),
        "{act:?}"
    );
}

/// Rule 1 over the real sshd, gpurent closed between the checks' reads: a GPU holding 20 GB at
/// 0 % with no compute process listed (a served model between requests, in a container) is busy
/// (`gpu_why: memory`); once it is released, a download in progress (the machine's `eth0` bytes
/// growing 1 MiB/s, as the kernel counts them in `/proc/net/dev`) is busy (`net`); once that
/// ends, the guard fires.
#[test]
fn gpu_memory_held_and_a_download_never_fire() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    // The fake GPU at 0 % with 20 000 MiB used and no process.
    let csv = gpus_csv(H100, 0);
    let mut lines = csv.lines();
    let header = lines.next().expect("header");
    let row = lines.next().expect("row");
    let col = header
        .split(',')
        .position(|f| f == "memory.used")
        .expect("memory.used is queried");
    let held: Vec<String> = row
        .split(',')
        .enumerate()
        .map(|(i, v)| {
            if i == col {
                "20000".into()
            } else {
                v.to_string()
            }
        })
        .collect();
    let tmp = r.state().join(".gpus.csv.tmp");
    std::fs::write(&tmp, format!("{header}\n{}\n", held.join(","))).expect("gpus");
    std::fs::rename(&tmp, r.state().join("gpus.csv")).expect("rename");
    r.set(&test_spec());
    let ds = r.assert_never_fires("GPU memory held at 0 %");
    let last = ds.last().expect("decision");
    assert_eq!(
        (last.gpu.as_str(), last.gpu_why.as_str()),
        ("busy", "memory"),
        "{last:?}"
    );
    assert_eq!(last.gpu_procs, Some(0), "{last:?}");

    // Released; a download runs.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dl = {
        let (dev, stop) = (r.sysroot.join("proc/net/dev"), stop.clone());
        std::thread::spawn(move || {
            let t = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let rx = 100_000 + (t.elapsed().as_secs_f64() * 1_048_576.0) as u64;
                let body = format!(
                    "Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n    lo: 5000 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n  eth0: {rx} 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
                );
                let tmp = dev.with_extension("tmp");
                if std::fs::write(&tmp, body).is_ok() {
                    let _ = std::fs::rename(&tmp, &dev);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    r.set_gpu(0, &[]);
    let ds = r.assert_never_fires("a download in progress");
    let last = ds.last().expect("decision");
    assert_eq!(last.gpu, "idle", "{last:?}");
    assert_eq!(last.net.as_deref(), Some("busy"), "{last:?}");
    assert_eq!((last.decision.as_str(), last.why.as_str()), ("keep", "net"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = dl.join();
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "no action after the download ended: {:#?}",
        r.decisions()
    );
}

/// The user's escape hatch over the real sshd: `~/.gpurent/keepalive` on an otherwise idle
/// machine keeps it running (`keepalive` busy); removed, the guard fires.
#[test]
fn the_keepalive_file_holds_it_over_ssh() {
    let Some(r) = rig(0, &[], &[]) else {
        return;
    };
    // Made as the login user would (the test runs as another user: the folder is handed over).
    use std::os::unix::fs::MetadataExt;
    let home = r.host.dir.path().join("home");
    let owner = std::fs::metadata(&home).expect("home");
    let keep = home.join(".gpurent/keepalive");
    std::fs::create_dir_all(keep.parent().expect("dir")).expect("mkdir");
    std::os::unix::fs::chown(
        keep.parent().expect("dir"),
        Some(owner.uid()),
        Some(owner.gid()),
    )
    .expect("chown");
    std::fs::write(&keep, "").expect("touch keepalive");
    r.set(&test_spec());
    let ds = r.assert_never_fires("the keep-alive file");
    let last = ds.last().expect("decision");
    assert_eq!(last.keepalive.as_deref(), Some("busy"), "{last:?}");
    assert_eq!(
        (last.decision.as_str(), last.why.as_str()),
        ("keep", "keepalive")
    );
    std::fs::remove_file(&keep).expect("rm keepalive");
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), || r.acted()),
        "no action after the keep-alive file went: {:#?}",
        r.decisions()
    );
}
