//! The guard's provider action, end to end: a Vast machine rented with `App::rent` from the fake
//! cloud (gpurent-testhost) through Prism's validating proxy for the Vast spec, the machine being a
//! fake GPU host behind a REAL loopback sshd whose environment carries the instance's own key
//! (`CONTAINER_ID`, `CONTAINER_API_KEY`, as Vast puts them in a container). The guard is set with
//! `--action stop`, gpurent is closed (App dropped, no connection open), and the guard on the
//! machine calls the provider itself with the real `curl`: the fake instance becomes stopped, the
//! call was authorised by the per-instance key (which the fake accepts only on that instance's own
//! routes), Prism saw no violation, the decision is logged and fetched, and the next reconcile
//! puts `stopped` in the ledger. Before `curl` is on the host, the same set is refused with
//! `guard_http_tool_missing`. Then a RunPod pod on the same host, which has no key of its own:
//! refused without consent, released with the account's full key (0600 file) through GNU `wget`
//! (curl taken away), closed by the next reconcile; `guard off` removes the key.
//!
//! One test function (it sets the `GPURENT_VAST_*` variables of this process). Needs sshd, the
//! `gputest` user and Prism (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

mod remote_common;
mod setup_common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::cancel::CancelToken;
use gpurent_core::clock::FixedClock;
use gpurent_core::events::NoProgress;
use gpurent_core::guard::provider::{Credential, HttpTool};
use gpurent_core::guard::{parse_decisions, ActionKind, Decision, GuardSpec};
use gpurent_core::monitor::telemetry::GpuQuery;
use gpurent_core::paths::Paths;
use gpurent_core::providers::ledger::LedgerState;
use gpurent_core::providers::ProviderKind;
use gpurent_core::Coded;
use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Flavor, SshTarget};
use gpurent_testhost::{prism_available, sshd_available, Prism, UserKey};
use remote_common::{login_key, world, World};
use setup_common::FakeHost;

const ACCOUNT_KEY: &str = "fake-vast-account-key-1";
const INSTANCE_KEY: &str = "fake-vast-instance-key-77";
const RUNPOD_KEY: &str = "fake-runpod-account-key-9";
/// The fake cloud numbers instances from 1001.
const INSTANCE_ID: &str = "1001";
const IDLE_S: u64 = 3;

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

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
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
fn guard_stops_a_vast_machine_through_the_provider_with_gpurent_closed() {
    if !sshd_available() || !prism_available() {
        return;
    }
    let fake = FakeCloud::start(Flavor::Vast, ACCOUNT_KEY).expect("fake cloud");
    fake.set_provisioning(Duration::from_millis(100));
    fake.add_instance_key(INSTANCE_ID, INSTANCE_KEY);
    let spec_file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/provider-specs/vastai.openapi.yaml");
    let prism = Prism::proxy(&spec_file, &fake.url()).expect("prism proxy");

    // The machine: a fake GPU host whose sessions carry the instance's own variables. Its PATH
    // holds the fake bin dir only; the fake `curl` there (a reachability stub) is taken away
    // first, so the host has no HTTP tool at all.
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
    std::fs::write(state.join("gpus.csv"), gpus_csv(0)).expect("gpus");
    std::fs::write(state.join("apps.csv"), "gpu_uuid,pid,used_memory\n").expect("apps");
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate("guard-provider").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    // This process's provider settings (one test function in this binary).
    std::env::set_var("GPURENT_VAST_API_KEY", ACCOUNT_KEY);
    std::env::set_var("GPURENT_VAST_API_URL", prism.url());
    std::env::set_var("GPURENT_VAST_SSH_USER", sshd.user());
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "5");

    // Rent it: intent → create → running → proven key login → saved host.
    let mut w = Some(world());
    let ww = w.as_ref().expect("world");
    let cancel = CancelToken::new();
    let view = ww
        .app
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
            &ww.env,
            &NoProgress,
            &cancel,
        )
        .expect("rent");
    assert!(view.ready, "{view:?}");
    assert_eq!(
        view.ledger.provider_instance_id.as_deref(),
        Some(INSTANCE_ID)
    );
    let label = view.ledger.host_label.clone().expect("saved host");
    let ledger_id = view.ledger.id.clone();

    let spec = GuardSpec {
        period_s: 1,
        warn_s: 1,
        conn_min_age_s: 2,
        ..GuardSpec::new(IDLE_S, ActionKind::Stop)
    };
    let guarded = Guarded {
        dir: host.dir.path().join("home/.gpurent/guard"),
    };

    // No curl, no wget on the host: refused with a code, nothing installed.
    let e = ww
        .app
        .guard_set(&label, &ww.env, &key, &spec, &cancel)
        .expect_err("no HTTP tool");
    assert_eq!(e.code(), "guard_http_tool_missing", "{e}");
    assert!(!guarded.dir.join("guard.sh").exists());
    // A pasted host can't have a provider action at all (refused before connecting).
    let e = ww
        .app
        .guard_check_action("nowhere", &spec)
        .expect_err("pasted");
    assert_eq!(e.code(), "guard_provider_action_unavailable");

    // The real curl on the host: set, with the instance's own key (named in the conf, not copied).
    std::os::unix::fs::symlink("/usr/bin/curl", bin.join("curl")).expect("link curl");
    let rep = ww
        .app
        .guard_set(&label, &ww.env, &key, &spec, &cancel)
        .expect("guard_set");
    let pa = rep.provider_action.clone().expect("provider action");
    assert_eq!(pa.credential, Credential::InstanceEnv, "{rep:?}");
    assert_eq!(pa.credential_var.as_deref(), Some("CONTAINER_API_KEY"));
    assert_eq!(pa.http_tool, HttpTool::Curl);
    assert_eq!(pa.method, "PUT");
    assert_eq!(
        pa.url,
        format!("{}/api/v0/instances/{INSTANCE_ID}", prism.url())
    );
    assert_eq!(rep.action_command, "provider");
    assert!(
        !rep.notes.contains(&"full_key_on_machine".to_string()),
        "{rep:?}"
    );
    let conf = std::fs::read_to_string(guarded.dir.join("guard.conf")).expect("conf");
    assert!(
        !conf.contains(INSTANCE_KEY),
        "the instance key is not copied: {conf}"
    );
    assert!(!conf.contains(ACCOUNT_KEY));
    assert!(!guarded.dir.join("provider.key").exists());
    let before = fake.instance_key_requests().len();

    // Close gpurent: the App goes; nothing of gpurent runs, no connection stays open.
    let World { tmp, app, env } = w.take().expect("world");
    drop(app);
    let hex = format!("{:04X}", sshd.port());
    let conns = || {
        ["/proc/net/tcp", "/proc/net/tcp6"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .flat_map(|t| t.lines().skip(1).map(String::from).collect::<Vec<_>>())
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[3] == "01" && f[1].ends_with(&format!(":{hex}"))
            })
            .count()
    };
    assert!(
        wait_for(Duration::from_secs(5), || conns() == 0),
        "a connection is still open"
    );
    let stopped = || {
        fake.instances()
            .iter()
            .any(|i| i.id == INSTANCE_ID && i.state == FakeState::Stopped)
    };
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 15), stopped),
        "the guard did not stop the instance: {:#?}\naction.out: {}",
        guarded.decisions(),
        std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default()
    );
    assert!(
        wait_for(Duration::from_secs(5), || guarded
            .decisions()
            .iter()
            .any(|d| d.decision == "act")),
        "{:#?}",
        guarded.decisions()
    );
    let by_instance_key = fake.instance_key_requests();
    assert_eq!(
        by_instance_key[before..],
        [format!("PUT /api/v0/instances/{INSTANCE_ID}")],
        "the call was authorised by the per-instance key, once"
    );
    let out = std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default();
    assert!(out.starts_with("http 200 PUT "), "{out}");
    for e in std::fs::read_dir(&guarded.dir).expect("dir").flatten() {
        let body = std::fs::read(e.path()).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&body).contains(INSTANCE_KEY),
            "{} holds the instance key",
            e.path().display()
        );
    }

    // Reopen gpurent: the decision is fetched and kept; the next reconcile records the stop.
    let app = App::open(
        Paths::under(tmp.path().join("gpurent")),
        Arc::new(FixedClock(5_000)),
        None,
    )
    .expect("reopen");
    let st = app
        .guard_status(&label, &env, &key, &CancelToken::new())
        .expect("status");
    let la = st.last_action.as_ref().expect("last action");
    assert_eq!(
        (la.decision.as_str(), la.why.as_str()),
        ("act", "idle"),
        "{st:?}"
    );
    assert_eq!(la.action_rc, Some(0));
    assert!(app
        .guard_decisions(&label, 1000)
        .expect("kept")
        .iter()
        .any(|d| d.decision == "act"));
    let view = app.instances().expect("instances (reconcile)");
    let row = view
        .instances
        .iter()
        .find(|i| i.ledger.id == ledger_id)
        .expect("ledger row");
    assert_eq!(row.ledger.state, LedgerState::Stopped, "{row:?}");
    assert!(
        row.events
            .iter()
            .any(|e| e.state == LedgerState::Stopped && e.at_ms == 5_000),
        "{:?}",
        row.events
    );

    assert!(prism.log().contains("Request received"), "{}", prism.log());
    let v = prism.violations();
    assert!(
        v.is_empty(),
        "the Vast spec was violated:\n{}",
        v.join("\n")
    );

    // Phase 2 — a RunPod pod on the same host: its environment has no RUNPOD_API_KEY, so there
    // is no key of its own. Release is refused without consent; with `allow_full_key` the
    // account key goes to provider.key (0600) and the guard releases the pod with it.
    let rp = FakeCloud::start(Flavor::Runpod, RUNPOD_KEY).expect("runpod fake");
    rp.set_provisioning(Duration::from_millis(100));
    rp.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    let rp_prism = Prism::proxy(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/provider-specs/runpod-rest-v2.openapi.json"),
        &rp.url(),
    )
    .expect("runpod prism");
    std::env::set_var("GPURENT_RUNPOD_API_KEY", RUNPOD_KEY);
    std::env::set_var("GPURENT_RUNPOD_API_URL", rp_prism.url());
    std::env::set_var("GPURENT_RUNPOD_SSH_USER", sshd.user());
    let pod = app
        .rent(
            &RentRequest {
                provider: ProviderKind::Runpod,
                offer_id: rp.offer_id(),
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
        .expect("rent pod");
    let pod_label = pod.ledger.host_label.clone().expect("pod host");
    let pod_id = pod.ledger.provider_instance_id.clone().expect("pod id");
    // This time the host has GNU wget (with --method) and no curl: the guard falls back to it.
    std::fs::remove_file(bin.join("curl")).expect("unlink curl");
    std::os::unix::fs::symlink("/usr/bin/wget", bin.join("wget")).expect("link wget");
    // The first guard (it acted) goes off; then release with the full key.
    app.guard_off(&label, &env, &key, &cancel).expect("off");
    let release = GuardSpec {
        action: ActionKind::Release,
        ..spec.clone()
    };
    let e = app
        .guard_set(&pod_label, &env, &key, &release, &cancel)
        .expect_err("no own key, no consent");
    assert_eq!(e.code(), "guard_provider_credential_unavailable", "{e}");
    let consent = GuardSpec {
        allow_full_key: true,
        ..release.clone()
    };
    let rep = app
        .guard_set(&pod_label, &env, &key, &consent, &cancel)
        .expect("set with the full key");
    let pa = rep.provider_action.clone().expect("provider action");
    assert_eq!(pa.credential, Credential::FullKeyFile, "{rep:?}");
    assert_eq!(pa.http_tool, HttpTool::Wget, "{rep:?}");
    assert!(rep.notes.contains(&"http_tool_wget".to_string()), "{rep:?}");
    assert_eq!(
        (pa.method.as_str(), pa.url.clone()),
        ("DELETE", format!("{}/v2/pods/{pod_id}", rp_prism.url()))
    );
    assert!(
        rep.notes.contains(&"full_key_on_machine".to_string()),
        "{rep:?}"
    );
    let key_file = guarded.dir.join("provider.key");
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&key_file).expect("provider.key");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }
    assert_eq!(std::fs::read_to_string(&key_file).expect("key"), RUNPOD_KEY);
    let acts_before = guarded
        .decisions()
        .iter()
        .filter(|d| d.decision == "act")
        .count();
    drop(app);
    let gone = || {
        !rp.instances()
            .iter()
            .any(|i| i.id == pod_id && i.state != FakeState::Terminated)
    };
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 15), gone),
        "the guard did not release the pod: {:#?}\naction.out: {}",
        guarded.decisions(),
        std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default()
    );
    let acts = |g: &Guarded| g.decisions().iter().filter(|d| d.decision == "act").count();
    assert!(
        wait_for(Duration::from_secs(5), || acts(&guarded) > acts_before),
        "{:#?}",
        guarded.decisions()
    );
    let out = std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default();
    assert!(
        out.starts_with("http 20") && out.contains(" DELETE "),
        "{out}"
    );
    let app = App::open(
        Paths::under(tmp.path().join("gpurent")),
        Arc::new(FixedClock(9_000)),
        None,
    )
    .expect("reopen");
    let view = app.instances().expect("reconcile");
    let row = view
        .instances
        .iter()
        .find(|i| i.ledger.id == pod.ledger.id)
        .expect("pod row");
    assert_eq!(row.ledger.state, LedgerState::Terminated, "{row:?}");
    // Off removes the full key from the machine.
    app.guard_off(&pod_label, &env, &key, &cancel).expect("off");
    assert!(!key_file.exists(), "guard off removes provider.key");
    let v = rp_prism.violations();
    assert!(
        v.is_empty(),
        "the RunPod spec was violated:\n{}",
        v.join("\n")
    );
    drop(app);
    drop(tmp);
    drop(env);
    drop(guarded);
}
