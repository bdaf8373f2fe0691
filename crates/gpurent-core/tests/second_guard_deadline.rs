//! The app acts on a deadline the guard on the machine missed. A Vast machine rented with
//! `App::rent` from the fake cloud (gpurent-testhost) through Prism's validating proxy for the
//! Vast spec, the machine a fake GPU host behind a REAL loopback sshd carrying the instance's own
//! key. Its guard is set with `--action stop` and a deadline 2 s away while the GPU is busy, then
//! the host's HTTP tool is taken away: at the deadline the guard on the machine tries and fails
//! (`act_failed` in its log). The app's clock then stands past the deadline by more than the
//! grace; one tick of the second guard reconciles, finds the machine still running, stops it
//! through the provider with the account key, reads the state back (the ledger says stopped)
//! and says so once; the next tick does nothing more. Prism sees no violation.
//!
//! One test function (it sets the `GPURENT_VAST_*` variables of this process). Needs sshd, the
//! `gputest` user and Prism (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

mod remote_common;
mod setup_common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::billing::watch::{NoticeKind, DEADLINE_GRACE_MS};
use gpurent_core::cancel::CancelToken;
use gpurent_core::clock::{Clock, SystemClock};
use gpurent_core::events::NoProgress;
use gpurent_core::guard::{parse_decisions, ActionKind, Decision, GuardSpec};
use gpurent_core::monitor::telemetry::GpuQuery;
use gpurent_core::paths::Paths;
use gpurent_core::providers::ProviderKind;
use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Flavor, SshTarget};
use gpurent_testhost::{prism_available, sshd_available, Prism, UserKey};
use remote_common::login_key;
use setup_common::FakeHost;

const ACCOUNT_KEY: &str = "fake-vast-account-key-deadline";
const INSTANCE_KEY: &str = "fake-vast-instance-key-deadline";
/// The fake cloud numbers instances from 1001.
const INSTANCE_ID: &str = "1001";

/// The real clock moved on by what the test says (the app's "later").
struct LaterClock(AtomicI64);

impl Clock for LaterClock {
    fn now_unix_ms(&self) -> i64 {
        SystemClock.now_unix_ms() + self.0.load(Ordering::SeqCst)
    }
}

fn gpus_csv(util: u32) -> String {
    let fields = GpuQuery::new().fields();
    let value = |f: &str| -> String {
        match f {
            "index" => "0".into(),
            "uuid" => "GPU-00000000-fake-4e5f-8a9b-0c1d2e3f4a5b".into(),
            "name" => "NVIDIA GeForce RTX 4090".into(),
            "utilization.gpu" => util.to_string(),
            "memory.total" => "24564".into(),
            f if f.starts_with("clocks_event_reasons.") => "Not Active".into(),
            _ => "1".into(),
        }
    };
    let row: Vec<String> = fields.iter().map(|f| value(f)).collect();
    format!("{}\n{}\n", fields.join(","), row.join(","))
}

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

struct Guarded {
    dir: PathBuf,
}

impl Guarded {
    fn decisions(&self) -> Vec<Decision> {
        parse_decisions(
            &std::fs::read_to_string(self.dir.join("decisions.log")).unwrap_or_default(),
        )
        .0
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // The guard outlives every connection by design: stop the one this test started.
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pid")) {
            let pid = pid.trim().to_string();
            let ours = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains("guard.sh"))
                .unwrap_or(false);
            if ours {
                let _ = std::process::Command::new("kill").arg(&pid).status();
            }
        }
    }
}

#[test]
fn the_app_stops_a_rented_machine_whose_guard_missed_its_deadline() {
    if !sshd_available() || !prism_available() {
        return;
    }
    let fake = FakeCloud::start(Flavor::Vast, ACCOUNT_KEY).expect("fake cloud");
    fake.set_provisioning(Duration::from_millis(100));
    fake.add_instance_key(INSTANCE_ID, INSTANCE_KEY);
    let spec_file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/provider-specs/vastai.openapi.yaml");
    let prism = Prism::proxy(&spec_file, &fake.url()).expect("prism proxy");

    // The machine: busy (95 % and a compute process), so only the deadline can fire.
    let mut host = FakeHost::new("ready_h100");
    host.vars.insert("CONTAINER_ID".into(), INSTANCE_ID.into());
    host.vars
        .insert("CONTAINER_API_KEY".into(), INSTANCE_KEY.into());
    let bin = host.bin();
    std::fs::remove_file(bin.join("curl")).expect("remove the fake curl");
    for t in ["mv", "nohup"] {
        let target = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .expect("system tool");
        std::os::unix::fs::symlink(target, bin.join(t)).expect("link tool");
    }
    write_exec(&bin.join("wall"), "#!/bin/sh\ncat > /dev/null\n");
    let state = host.dir.path().join("state");
    std::fs::write(state.join("gpus.csv"), gpus_csv(95)).expect("gpus");
    std::fs::write(
        state.join("apps.csv"),
        "gpu_uuid,pid,used_memory\nGPU-00000000-fake-4e5f-8a9b-0c1d2e3f4a5b,77,1024\n",
    )
    .expect("apps");
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate("second-guard-deadline").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    std::env::set_var("GPURENT_VAST_API_KEY", ACCOUNT_KEY);
    std::env::set_var("GPURENT_VAST_API_URL", prism.url());
    std::env::set_var("GPURENT_VAST_SSH_USER", sshd.user());
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "5");

    let tmp = tempfile::tempdir().expect("tmp");
    let clock = Arc::new(LaterClock(AtomicI64::new(0)));
    let app = App::open(
        Paths::under(tmp.path().join("gpurent")),
        clock.clone(),
        None,
    )
    .expect("app");
    let mut env = gpurent_core::app::login::SshEnv::under_home(&tmp.path().join("home"), None);
    env.connect = remote_common::opts();
    let cancel = CancelToken::new();
    let view = app
        .rent(
            &RentRequest {
                provider: ProviderKind::Vast,
                offer_id: fake.offer_id(),
                image: None,
                disk_gb: None,
                no_wait: false,
                ready_timeout_s: Some(60),
                account: None,
            },
            &key,
            &env,
            &NoProgress,
            &cancel,
        )
        .expect("rent");
    assert!(view.ready, "{view:?}");
    let label = view.ledger.host_label.clone().expect("saved host");
    let ledger_id = view.ledger.id.clone();

    // The guard: stop through the provider at a deadline 2 s away; the idle time far off.
    std::os::unix::fs::symlink("/usr/bin/curl", bin.join("curl")).expect("link curl");
    let spec = GuardSpec {
        period_s: 1,
        warn_s: 1,
        conn_min_age_s: 2,
        deadline_in_s: Some(2),
        ..GuardSpec::new(3600, ActionKind::Stop)
    };
    let guarded = Guarded {
        dir: host.dir.path().join("home/.gpurent/guard"),
    };
    app.guard_set(&label, &env, &key, &spec, &cancel)
        .expect("guard_set");
    // Its HTTP tool taken away: the guard's own action at the deadline fails.
    std::fs::remove_file(bin.join("curl")).expect("remove curl");
    assert!(
        wait_for(Duration::from_secs(20), || guarded
            .decisions()
            .iter()
            .any(|d| d.decision == "act_failed" && d.why == "deadline")),
        "the guard on the machine did not try (and fail) at its deadline: {:#?}",
        guarded.decisions()
    );
    assert_eq!(fake.instances()[0].state, FakeState::Running);

    // Within the grace the app leaves it to the guard on the machine.
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert!(t.deadline_acted.is_empty(), "{t:?}");
    assert_eq!(fake.instances()[0].state, FakeState::Running);

    // Past the deadline by more than the grace (in the app's clock): the app stops it.
    clock.0.store(DEADLINE_GRACE_MS + 60_000, Ordering::SeqCst);
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert_eq!(t.deadline_acted, std::slice::from_ref(&ledger_id), "{t:?}");
    let acted: Vec<_> = t
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::DeadlineActed)
        .collect();
    assert_eq!(acted.len(), 1, "{t:?}");
    assert_eq!(acted[0].host.as_deref(), Some(label.as_str()));
    assert_eq!(acted[0].action.as_deref(), Some("stop"));
    assert!(acted[0].state.is_some(), "the provider's state: {t:?}");
    assert!(
        !t.notices
            .iter()
            .any(|n| n.kind == NoticeKind::DeadlineMissed),
        "{t:?}"
    );
    assert_eq!(fake.instances()[0].state, FakeState::Stopped);
    let cost = app.cost_all(None).expect("cost");
    let m = cost
        .machines
        .iter()
        .find(|m| m.instance.as_deref() == Some(ledger_id.as_str()))
        .expect("the machine");
    assert_eq!(m.ledger_state.as_deref(), Some("stopped"), "{m:?}");
    let recent = app.notices_recent(10).expect("recent");
    assert!(recent.iter().any(|n| n.kind == NoticeKind::DeadlineActed));

    // One call on the instance in all: the app's stop (the guard on the machine sent none).
    let puts = || {
        fake.requests()
            .iter()
            .filter(|r| r.starts_with("PUT /api/v0/instances/"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(puts(), [format!("PUT /api/v0/instances/{INSTANCE_ID}")]);
    assert!(fake.instance_key_requests().is_empty());

    // The next tick does nothing more (stopped; the act remembered): no call, no notice.
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert!(t.deadline_acted.is_empty() && t.notices.is_empty(), "{t:?}");
    assert_eq!(puts().len(), 1);

    drop(guarded);
    assert!(prism.log().contains("Request received"), "{}", prism.log());
    let v = prism.violations();
    assert!(
        v.is_empty(),
        "the Vast spec was violated:\n{}",
        v.join("\n")
    );
}
