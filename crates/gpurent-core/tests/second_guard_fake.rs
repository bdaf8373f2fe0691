//! The app as a second guard against a provider: a RunPod pod rented with `App::rent` from the
//! fake cloud (gpurent-testhost) through Prism's validating proxy for the RunPod spec, its "machine"
//! a REAL loopback sshd. A total daily budget set far below what the pod costs goes over: the
//! tick notifies once and stops nothing while "stop at 100 %" is off; once the user ticks it, the
//! next tick stops the pod through the provider — confirmed by the provider's answer, the fake
//! pod stopped, the ledger says stopped — and the tick after that has nothing to do.
//!
//! A RunPod stop is destructive: it wipes the pod's container disk (its spec: "ephemeral, wiped
//! on restart"; the fake cloud models it). So this test does not claim the stop kept anything:
//! it asserts the stop happens only when the user chose it, that gpurent says before any stop of
//! this pod that its disk is wiped (`gpu_billing_stops_disk_wiped`), and that the file a job left
//! on the container disk is gone after the budget's stop — what the user agreed to lose.
//!
//! One test function (it sets the `GPURENT_RUNPOD_*` variables of this process). Needs sshd and
//! Prism (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

mod guard_common;
mod remote_common;
mod setup_common;

use std::sync::Arc;
use std::time::Duration;

use gpurent_core::billing::budget::Period;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::providers::ProviderKind;
use gpurent_core::second_guard::NoticeKind;
use gpurent_testhost::fakecloud::{FakeState, Flavor};
use gpurent_testhost::{prism_available, sshd_available, Sshd, UserKey};
use guard_common::{cloud, rent_request, set_provider_env};
use remote_common::{login_key, world_with, World};

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
    let (fake, prism) = cloud(Flavor::Runpod, RUNPOD_KEY, &sshd);
    set_provider_env("RUNPOD", RUNPOD_KEY, &prism.url(), &sshd);

    // The real clock: the pod's cost grows with the ledger's timestamps.
    let World {
        tmp: _tmp,
        app,
        env,
    } = world_with(Arc::new(SystemClock));
    let cancel = CancelToken::new();
    let pod = app
        .rent(
            &rent_request(ProviderKind::Runpod, fake.offer_id()),
            &key,
            &env,
            &NoProgress,
            &cancel,
        )
        .expect("rent");
    assert!(pod.ready, "{pod:?}");
    let id = pod.ledger.id.clone();
    let pod_id = pod
        .ledger
        .provider_instance_id
        .clone()
        .expect("provider id");
    // A job's result on the container disk (not on a network volume).
    fake.put_container_file(&pod_id, "/root/results/model.pt");
    // What a stop of this pod does, as gpurent says it: the container disk is wiped.
    let money = app.instance_money(&id, "stop").expect("money");
    assert_eq!(money.effect, "gpu_billing_stops_disk_wiped", "{money:?}");

    // $0.00005 a day: a pod at $0.44/h is over it within a second.
    app.budget_set_with(None, Period::Day, 0.00005, false)
        .expect("budget");
    std::thread::sleep(Duration::from_millis(1500));
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    let kinds: Vec<NoticeKind> = t.notices.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, [NoticeKind::BudgetOver], "{t:?}");
    assert!(t.stopped.is_empty(), "not chosen: nothing stopped");
    assert_eq!(fake.instances()[0].state, FakeState::Running);
    assert_eq!(
        fake.container_files(&pod_id),
        ["/root/results/model.pt"],
        "not chosen: the disk is untouched"
    );

    // The user ticks "stop at 100 %": the next tick stops the pod (no second notice).
    let row = app
        .budget_set_with(None, Period::Day, 0.00005, true)
        .expect("budget");
    assert!(row.stop_at_100);
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert_eq!(t.stopped, std::slice::from_ref(&id), "{t:?}");
    assert!(t.notices.is_empty(), "{t:?}");
    assert_eq!(fake.instances()[0].state, FakeState::Stopped);
    // The stop the user chose wiped the container disk, as RunPod's does: nothing was kept.
    assert!(
        fake.container_files(&pod_id).is_empty(),
        "a RunPod stop wipes the container disk"
    );
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
    prism.assert_spec_kept("RunPod");
}
