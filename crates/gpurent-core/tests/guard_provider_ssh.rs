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

mod guard_common;
mod remote_common;
mod setup_common;

use std::sync::Arc;
use std::time::Duration;

use gpurent_core::app::App;
use gpurent_core::guard::provider::{Credential, HttpTool};
use gpurent_core::guard::{ActionKind, GuardSpec};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::FixedClock;
use gpurent_core::infra::paths::Paths;
use gpurent_core::providers::ledger::LedgerState;
use gpurent_core::providers::ProviderKind;
use gpurent_core::Coded;
use gpurent_testhost::fakecloud::{FakeState, Flavor};
use gpurent_testhost::{prism_available, sshd_available};
use guard_common::{
    cloud, established_conns, rent_ready, set_provider_env, short_spec, vast_machine, wait_for,
    Guarded, VastMachine, INSTANCE_ID,
};
use remote_common::{world, World};

/// The provider settings are this process's environment (`set_provider_env`): one test at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const ACCOUNT_KEY: &str = "fake-vast-account-key-1";
const INSTANCE_KEY: &str = "fake-vast-instance-key-77";
const RUNPOD_KEY: &str = "fake-runpod-account-key-9";
const IDLE_S: u64 = 3;

#[test]
fn guard_stops_a_vast_machine_through_the_provider_with_gpurent_closed() {
    if !sshd_available() || !prism_available() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // The machine: a fake GPU host whose sessions carry the instance's own variables. Its PATH
    // holds the fake bin dir only; the fake `curl` there (a reachability stub) is taken away
    // first, so the host has no HTTP tool at all. The fake Vast cloud is behind Prism.
    let VastMachine {
        fake,
        prism,
        host,
        bin,
        key,
        sshd,
    } = vast_machine(ACCOUNT_KEY, INSTANCE_KEY, "guard-provider", 0, &[]);

    // Rent it: intent → create → running → proven key login → saved host.
    let mut w = Some(world());
    let ww = w.as_ref().expect("world");
    let cancel = CancelToken::new();
    let view = rent_ready(&ww.app, &ww.env, ProviderKind::Vast, fake.offer_id(), &key);
    assert!(view.ready, "{view:?}");
    assert_eq!(
        view.ledger.provider_instance_id.as_deref(),
        Some(INSTANCE_ID)
    );
    let label = view.ledger.host_label.clone().expect("saved host");
    let ledger_id = view.ledger.id.clone();

    let spec = short_spec(IDLE_S, ActionKind::Stop, 1);
    let guarded = Guarded::on(&host);

    // No curl, no wget on the host: refused with a code, nothing installed.
    let e = ww
        .app
        .guard_set_with_key(&label, &ww.env, &key, &spec, &cancel)
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
        .guard_set_with_key(&label, &ww.env, &key, &spec, &cancel)
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
    assert!(
        wait_for(Duration::from_secs(30), || established_conns(sshd.port())
            == 0),
        "a connection is still open"
    );
    let stopped = || {
        fake.instances()
            .iter()
            .any(|i| i.id == INSTANCE_ID && i.state == FakeState::Stopped)
    };
    assert!(
        wait_for(Duration::from_secs(IDLE_S + 60), stopped),
        "the guard did not stop the instance: {:#?}\naction.out: {}",
        guarded.decisions(),
        std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default()
    );
    assert!(
        wait_for(Duration::from_secs(30), || guarded
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
        .guard_status_with_key(&label, &env, &key, &CancelToken::new())
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
    prism.assert_spec_kept("Vast");

    // Phase 2 — a RunPod pod on the same host: its environment has no RUNPOD_API_KEY, so there
    // is no key of its own. Release is refused without consent; with `allow_full_key` the
    // account key goes to provider.key (0600) and the guard releases the pod with it.
    let (rp, rp_prism) = cloud(Flavor::Runpod, RUNPOD_KEY, &sshd);
    set_provider_env("RUNPOD", RUNPOD_KEY, &rp_prism.url(), &sshd);
    let pod = rent_ready(&app, &env, ProviderKind::Runpod, rp.offer_id(), &key);
    let pod_label = pod.ledger.host_label.clone().expect("pod host");
    let pod_id = pod.ledger.provider_instance_id.clone().expect("pod id");
    // This time the host has GNU wget (with --method) and no curl: the guard falls back to it.
    std::fs::remove_file(bin.join("curl")).expect("unlink curl");
    std::os::unix::fs::symlink("/usr/bin/wget", bin.join("wget")).expect("link wget");
    // The first guard (it acted) goes off; then release with the full key.
    app.guard_off_with_key(&label, &env, &key, &cancel)
        .expect("off");
    let release = GuardSpec {
        action: ActionKind::Release,
        ..spec.clone()
    };
    let e = app
        .guard_set_with_key(&pod_label, &env, &key, &release, &cancel)
        .expect_err("no own key, no consent");
    assert_eq!(e.code(), "guard_provider_credential_unavailable", "{e}");
    let consent = GuardSpec {
        allow_full_key: true,
        ..release.clone()
    };
    let rep = app
        .guard_set_with_key(&pod_label, &env, &key, &consent, &cancel)
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
    // Off removes the full key from the machine; set it again for the release.
    app.guard_off_with_key(&pod_label, &env, &key, &cancel)
        .expect("off");
    assert!(!key_file.exists(), "guard off removes provider.key");
    // A set whose guard does not start (no setsid, no nohup on the host) leaves no key behind.
    let (setsid, nohup) = (bin.join("setsid"), bin.join("nohup"));
    let setsid_target = std::fs::read_link(&setsid).expect("setsid link");
    let nohup_target = std::fs::read_link(&nohup).expect("nohup link");
    std::fs::remove_file(&setsid).expect("unlink setsid");
    std::fs::remove_file(&nohup).expect("unlink nohup");
    let e = app
        .guard_set_with_key(&pod_label, &env, &key, &consent, &cancel)
        .expect_err("the guard cannot start");
    assert_eq!(e.code(), "guard_install_failed", "{e}");
    assert!(!key_file.exists(), "a failed install left the full key");
    std::os::unix::fs::symlink(setsid_target, &setsid).expect("relink setsid");
    std::os::unix::fs::symlink(nohup_target, &nohup).expect("relink nohup");
    app.guard_set_with_key(&pod_label, &env, &key, &consent, &cancel)
        .expect("set with the full key again");
    assert!(key_file.exists());
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
        wait_for(Duration::from_secs(IDLE_S + 60), gone),
        "the guard did not release the pod: {:#?}\naction.out: {}",
        guarded.decisions(),
        std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default()
    );
    let acts = |g: &Guarded| g.decisions().iter().filter(|d| d.decision == "act").count();
    assert!(
        wait_for(Duration::from_secs(30), || acts(&guarded) > acts_before),
        "{:#?}",
        guarded.decisions()
    );
    let out = std::fs::read_to_string(guarded.dir.join("action.out")).unwrap_or_default();
    assert!(
        out.starts_with("http 20") && out.contains(" DELETE "),
        "{out}"
    );
    // The provider confirmed the release: the guard took the full key off the disk.
    assert!(
        !key_file.exists(),
        "the full key stayed on the machine after its confirmed release"
    );
    // Closed only on the provider's word: one "gone" read is noted (the row stays open), a
    // second one 15 s later closes it (issue 19: two reads some seconds apart, on the clock).
    {
        let app = App::open(
            Paths::under(tmp.path().join("gpurent")),
            Arc::new(FixedClock(300_000)),
            None,
        )
        .expect("reopen");
        let view = app.instances().expect("reconcile");
        let row = view
            .instances
            .iter()
            .find(|i| i.ledger.id == pod.ledger.id)
            .expect("pod row");
        assert!(row.ledger.closed_ms.is_none(), "one gone read: {row:?}");
    }
    let app = App::open(
        Paths::under(tmp.path().join("gpurent")),
        Arc::new(FixedClock(315_000)),
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
    // The released machine (and the key on it) is gone: nothing connects to its address again.
    let e = app
        .guard_off_with_key(&pod_label, &env, &key, &cancel)
        .expect_err("released");
    assert_eq!(e.code(), "host_released", "{e}");
    rp_prism.assert_spec_kept("RunPod");
    drop(app);
    drop(tmp);
    drop(env);
    drop(guarded);
}

/// The saved host of a rented Vast machine answers as ANOTHER instance (its `CONTAINER_ID`
/// names 2002, the ledger's is 1001): `guard set` is refused with `guard_wrong_machine`, even
/// with consent to the full key — nothing is installed and no key is written there. Before, with
/// consent, the account's full key went onto the other machine.
#[test]
fn a_host_naming_another_instance_gets_no_guard_and_no_key() {
    if !sshd_available() || !prism_available() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let VastMachine {
        fake,
        host,
        bin,
        key,
        prism: _prism,
        sshd: _sshd,
    } = guard_common::vast_machine_as(ACCOUNT_KEY, INSTANCE_KEY, "guard-wrong", 0, &[], "2002");
    std::os::unix::fs::symlink("/usr/bin/curl", bin.join("curl")).expect("link curl");
    let w = world();
    let cancel = CancelToken::new();
    let view = rent_ready(&w.app, &w.env, ProviderKind::Vast, fake.offer_id(), &key);
    assert_eq!(
        view.ledger.provider_instance_id.as_deref(),
        Some(INSTANCE_ID)
    );
    let label = view.ledger.host_label.clone().expect("saved host");
    let guarded = Guarded::on(&host);
    for allow_full_key in [false, true] {
        let spec = GuardSpec {
            allow_full_key,
            ..short_spec(IDLE_S, ActionKind::Release, 1)
        };
        let e = w
            .app
            .guard_set_with_key(&label, &w.env, &key, &spec, &cancel)
            .expect_err("another instance");
        assert_eq!(e.code(), "guard_wrong_machine", "{e}");
        assert!(e.detail().unwrap_or_default().contains("2002"), "{e:?}");
    }
    assert!(
        !guarded.dir.join(pa_key_file()).exists(),
        "a key was written"
    );
    assert!(
        !guarded.dir.join("guard.sh").exists(),
        "a guard was installed"
    );
}

fn pa_key_file() -> &'static str {
    gpurent_core::guard::provider::KEY_FILE
}
