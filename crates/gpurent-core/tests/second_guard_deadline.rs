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

mod guard_common;
mod remote_common;
mod setup_common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gpurent_core::guard::{ActionKind, GuardSpec};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::{Clock, SystemClock};
use gpurent_core::infra::events::NoProgress;
use gpurent_core::providers::ProviderKind;
use gpurent_core::second_guard::{NoticeKind, DEADLINE_GRACE_MS};
use gpurent_testhost::fakecloud::{FakeState, Fault, Route};
use gpurent_testhost::{prism_available, sshd_available};
use guard_common::{
    rent_request, short_spec, vast_machine, wait_for, Guarded, VastMachine, INSTANCE_ID,
};
use remote_common::{world_with, World};

const ACCOUNT_KEY: &str = "fake-vast-account-key-deadline";
const INSTANCE_KEY: &str = "fake-vast-instance-key-deadline";

/// The real clock moved on by what the test says (the app's "later").
struct LaterClock(AtomicI64);

impl Clock for LaterClock {
    fn now_unix_ms(&self) -> i64 {
        SystemClock.now_unix_ms() + self.0.load(Ordering::SeqCst)
    }
}

#[test]
fn the_app_stops_a_rented_machine_whose_guard_missed_its_deadline() {
    if !sshd_available() || !prism_available() {
        return;
    }
    // The machine: busy (95 % and a compute process), so only the deadline can fire.
    let VastMachine {
        sshd: _sshd,
        key,
        bin,
        host,
        prism,
        fake,
    } = vast_machine(
        ACCOUNT_KEY,
        INSTANCE_KEY,
        "second-guard-deadline",
        95,
        &[77],
    );

    let clock = Arc::new(LaterClock(AtomicI64::new(0)));
    let World {
        tmp: _tmp,
        app,
        env,
    } = world_with(clock.clone());
    let cancel = CancelToken::new();
    let view = app
        .rent(
            &rent_request(ProviderKind::Vast, fake.offer_id()),
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
        deadline_in_s: Some(2),
        ..short_spec(3600, ActionKind::Stop, 1)
    };
    let guarded = Guarded::on(&host);
    app.guard_set_with_key(&label, &env, &key, &spec, &cancel)
        .expect("guard_set");
    // Its HTTP tool taken away: the guard's own action at the deadline fails.
    std::fs::remove_file(bin.join("curl")).expect("remove curl");
    assert!(
        wait_for(Duration::from_secs(60), || guarded
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

    // Past the deadline by more than the grace (in the app's clock), the provider failing: the
    // app's stop is not confirmed — said once — and tried again on the next tick.
    clock.0.store(DEADLINE_GRACE_MS + 60_000, Ordering::SeqCst);
    for _ in 0..8 {
        fake.push_fault(
            Route::Action,
            Fault::RateLimited {
                retry_after_s: Some(0),
            },
        );
    }
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert!(t.deadline_acted.is_empty(), "{t:?}");
    let failed = t
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::DeadlineActFailed)
        .count();
    assert_eq!(failed, 1, "{t:?}");
    assert_eq!(fake.instances()[0].state, FakeState::Running);
    fake.clear_faults();
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
    let sent = puts();
    assert!(
        sent.len() >= 2
            && sent
                .iter()
                .all(|p| p == &format!("PUT /api/v0/instances/{INSTANCE_ID}")),
        "{sent:?}"
    );
    assert!(fake.instance_key_requests().is_empty());

    // The next tick does nothing more (stopped; the act remembered): no call, no notice.
    let t = app.second_guard_tick(&env, &cancel).expect("tick");
    assert!(t.deadline_acted.is_empty() && t.notices.is_empty(), "{t:?}");
    assert_eq!(puts().len(), sent.len());

    // The user starts it again after the deadline: it fired once, it stays started.
    app.instance_action(&ledger_id, "start", true)
        .expect("start");
    let puts_after_start = puts().len();
    for _ in 0..2 {
        let t = app.second_guard_tick(&env, &cancel).expect("tick");
        assert!(t.deadline_acted.is_empty() && t.notices.is_empty(), "{t:?}");
    }
    assert_ne!(fake.instances()[0].state, FakeState::Stopped);
    assert_eq!(puts().len(), puts_after_start, "no stop after the start");

    drop(guarded);
    assert!(prism.log().contains("Request received"), "{}", prism.log());
    prism.assert_spec_kept("Vast");
}
