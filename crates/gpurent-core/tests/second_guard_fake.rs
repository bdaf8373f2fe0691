//! The app as a second guard against a provider: a RunPod pod rented with `App::rent` from the
//! fake cloud (gpurent-testhost) through Prism's validating proxy for the RunPod spec, its "machine"
//! a REAL loopback sshd. A total daily budget set far below what the pod costs goes over: the
//! tick notifies once and stops nothing while "stop at 100 %" is off; once the user ticks it, the
//! next tick stops the pod through the provider — confirmed by the provider's answer, the fake
//! pod really stopped, the ledger says stopped — and the tick after that has nothing to do.
//!
//! One test function (it sets the `GPURENT_RUNPOD_*` variables of this process). Needs sshd and
//! Prism (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

mod remote_common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gpurent_core::app::login::SshEnv;
use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::billing::budget::Period;
use gpurent_core::billing::watch::NoticeKind;
use gpurent_core::cancel::CancelToken;
use gpurent_core::clock::SystemClock;
use gpurent_core::events::NoProgress;
use gpurent_core::paths::Paths;
use gpurent_core::providers::ProviderKind;
use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Flavor, SshTarget};
use gpurent_testhost::{prism_available, sshd_available, Prism, Sshd, UserKey};
use remote_common::login_key;

const RUNPOD_KEY: &str = "fake-runpod-account-key-second-guard";

#[test]
fn budget_over_stops_a_rented_pod_only_when_the_user_chose_it() {
    if !sshd_available() || !prism_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let k = UserKey::generate("second-guard").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    let fake = FakeCloud::start(Flavor::Runpod, RUNPOD_KEY).expect("fake cloud");
    fake.set_provisioning(Duration::from_millis(100));
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    let prism = Prism::proxy(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/provider-specs/runpod-rest-v2.openapi.json"),
        &fake.url(),
    )
    .expect("prism proxy");
    std::env::set_var("GPURENT_RUNPOD_API_KEY", RUNPOD_KEY);
    std::env::set_var("GPURENT_RUNPOD_API_URL", prism.url());
    std::env::set_var("GPURENT_RUNPOD_SSH_USER", sshd.user());
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "5");

    // The real clock: the pod's cost grows with the ledger's timestamps.
    let tmp = tempfile::tempdir().expect("tmp");
    let app = App::open(
        Paths::under(tmp.path().join("gpurent")),
        Arc::new(SystemClock),
        None,
    )
    .expect("app");
    let mut env = SshEnv::under_home(&tmp.path().join("home"), None);
    env.connect = remote_common::opts();
    let cancel = CancelToken::new();
    let pod = app
        .rent(
            &RentRequest {
                provider: ProviderKind::Runpod,
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
    assert!(pod.ready, "{pod:?}");
    let id = pod.ledger.id.clone();

    // $0.00005 a day: a pod at $0.44/h is over it within a second.
    app.budget_set_with(None, Period::Day, 0.00005, false)
        .expect("budget");
    std::thread::sleep(Duration::from_millis(1500));
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    let kinds: Vec<NoticeKind> = t.notices.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, [NoticeKind::BudgetOver], "{t:?}");
    assert!(t.stopped.is_empty(), "not chosen: nothing stopped");
    assert_eq!(fake.instances()[0].state, FakeState::Running);

    // The user ticks "stop at 100 %": the next tick stops the pod (no second notice).
    let row = app
        .budget_set_with(None, Period::Day, 0.00005, true)
        .expect("budget");
    assert!(row.stop_at_100);
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert_eq!(t.stopped, std::slice::from_ref(&id), "{t:?}");
    assert!(t.notices.is_empty(), "{t:?}");
    assert_eq!(fake.instances()[0].state, FakeState::Stopped);
    let cost = app.cost_all(None).expect("cost");
    let m = cost
        .machines
        .iter()
        .find(|m| m.instance.as_deref() == Some(id.as_str()))
        .expect("the pod");
    assert_eq!(m.ledger_state.as_deref(), Some("stopped"), "{m:?}");

    // Stopped: the next tick has nothing to do.
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert!(t.stopped.is_empty() && t.notices.is_empty(), "{t:?}");

    assert!(prism.log().contains("Request received"), "{}", prism.log());
    let v = prism.violations();
    assert!(
        v.is_empty(),
        "the RunPod spec was violated:\n{}",
        v.join("\n")
    );
}
