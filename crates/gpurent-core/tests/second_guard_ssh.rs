//! The app as a second guard against the guard on a machine: a fake GPU host (busy, so the guard
//! on it never acts) behind a REAL loopback sshd, its guard set with a deadline 5 minutes away and
//! the host's own rate entered. One tick re-reads the guard over SSH with the host's saved key
//! (from the keychain, here an in-memory one) and re-computes the deadline in the app's own clock:
//! "deadline in 5 min", once; the next tick is quiet. A guard that cannot be read (its host's
//! sshd gone) is reported as unreadable with its code, and the deadline is still re-checked from
//! what was saved.
//!
//! Needs `/usr/sbin/sshd` and the `gputest` user: skipped with a message otherwise, failing under
//! `CI=true`.

mod guard_common;
mod remote_common;
mod setup_common;

use gpurent_core::billing::{Increment, PastedRate};
use gpurent_core::guard::{ActionKind, GuardSpec};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::keys::{KeyAlgorithm, MemoryKeyStore};
use gpurent_core::second_guard::NoticeKind;
use gpurent_testhost::sshd_available;
use guard_common::{link_system_tools, short_spec, write_exec, write_gpu_state, Guarded, H100};
use remote_common::{add_confirmed, spec, world, world_with};
use setup_common::FakeHost;

const LABEL: &str = "gpu";

#[test]
fn the_app_rechecks_a_guard_deadline_and_says_it_once() {
    if !sshd_available() {
        return;
    }
    let host = FakeHost::new("ready_h100");
    let bin = host.bin();
    link_system_tools(&bin, &["mv", "nohup"]);
    write_exec(&bin.join("poweroff"), "#!/bin/sh\nexit 0\n");
    write_exec(&bin.join("wall"), "#!/bin/sh\ncat > /dev/null\n");
    write_exec(
        &bin.join("crontab"),
        "#!/bin/sh\ncase \"$1\" in -l) exit 1 ;; -) cat > /dev/null ;; esac\n",
    );
    write_gpu_state(&host, H100, 95, &[77]);
    let mut sshd = host.serve().expect("serve the fake host over sshd");

    // The app's clock is fixed (1 000 ms); the key lives in an in-memory keychain.
    let mut w = world();
    w.app = w.app.with_keystore(Box::new(MemoryKeyStore::new()));
    let info = w
        .app
        .key_new("laptop", KeyAlgorithm::Ed25519, None)
        .expect("key");
    sshd.authorize(&info.public_key).expect("authorize");
    let key = w.app.host_login_key("laptop", None).expect("login key");
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));
    w.app
        .host_rate_set(
            LABEL,
            PastedRate {
                usd_per_hour: 2.0,
                rule: Increment::Second,
                storage_usd_per_day: None,
                currency: gpurent_core::billing::Currency::Usd,
                platform: None,
            },
            0,
        )
        .expect("rate");
    let cancel = CancelToken::new();
    let guard = GuardSpec {
        deadline_in_s: Some(300),
        ..short_spec(600, ActionKind::Poweroff, 2)
    };
    w.app
        .guard_set_with_key(LABEL, &w.env, &key, &guard, &cancel)
        .expect("guard set");
    let stop_guard = Guarded::on(&host);
    // `guard set` returns once the loop started (through the boot start first, then the loop);
    // its first sample follows within a period or so.
    assert!(
        guard_common::wait_for(std::time::Duration::from_secs(60), || !stop_guard
            .decisions()
            .is_empty()),
        "the guard never sampled"
    );

    let t = w.app.second_guard_tick(&w.env, &cancel).expect("tick");
    assert!(t.unreadable.is_empty(), "the guard was read: {t:?}");
    let kinds: Vec<(NoticeKind, Option<&str>, Option<i64>)> = t
        .notices
        .iter()
        .map(|n| (n.kind, n.host.as_deref(), n.minutes))
        .collect();
    assert_eq!(
        kinds,
        [(NoticeKind::DeadlineSoon, Some(LABEL), Some(5))],
        "busy: no idle notice; the deadline re-checked in the app's clock"
    );
    // The guard's decisions were fetched (and kept) on the way.
    assert!(!w
        .app
        .guard_decisions(LABEL, 10)
        .expect("decisions")
        .is_empty());
    assert!(w
        .app
        .second_guard_tick(&w.env, &cancel)
        .expect("tick")
        .notices
        .is_empty());

    // The host gone: its guard cannot be read, the tick says so and goes on.
    sshd.kill();
    let t = w.app.second_guard_tick(&w.env, &cancel).expect("tick");
    assert_eq!(t.unreadable.len(), 1, "{t:?}");
    assert_eq!(t.unreadable[0].0, LABEL);
    assert!(t.notices.is_empty(), "{t:?}");
    drop(stop_guard);
}

/// The real clock moved on by what the test says (the app's "later").
struct LaterClock(std::sync::atomic::AtomicI64);

impl gpurent_core::infra::clock::Clock for LaterClock {
    fn now_unix_ms(&self) -> i64 {
        gpurent_core::infra::clock::SystemClock.now_unix_ms()
            + self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A pasted host WITHOUT a rate (issue 24: such hosts got no idle or deadline notices — the tick
/// only knew machines with a cost): its guard answers, so it is on; past its deadline (in the
/// app's clock) with the guard on the machine not having acted, the app says "still bills after
/// its deadline", once, and that it cannot stop a pasted host itself.
#[test]
fn a_pasted_host_without_a_rate_still_gets_its_deadline_notices() {
    use std::sync::atomic::{AtomicI64, Ordering};
    if !sshd_available() {
        return;
    }
    let host = FakeHost::new("ready_h100");
    let bin = host.bin();
    link_system_tools(&bin, &["mv", "nohup"]);
    write_exec(&bin.join("poweroff"), "#!/bin/sh\nexit 0\n");
    write_exec(&bin.join("wall"), "#!/bin/sh\ncat > /dev/null\n");
    write_gpu_state(&host, H100, 95, &[77]);
    let mut sshd = host.serve().expect("serve the fake host over sshd");
    let clock = std::sync::Arc::new(LaterClock(AtomicI64::new(0)));
    let mut w = world_with(clock.clone());
    w.app = w.app.with_keystore(Box::new(MemoryKeyStore::new()));
    let info = w
        .app
        .key_new("laptop", KeyAlgorithm::Ed25519, None)
        .expect("key");
    sshd.authorize(&info.public_key).expect("authorize");
    let key = w.app.host_login_key("laptop", None).expect("login key");
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));
    let cancel = CancelToken::new();
    let guard = GuardSpec {
        deadline_in_s: Some(600),
        ..short_spec(3600, ActionKind::Poweroff, 2)
    };
    w.app
        .guard_set_with_key(LABEL, &w.env, &key, &guard, &cancel)
        .expect("guard set");
    let stop_guard = Guarded::on(&host);
    assert!(
        guard_common::wait_for(std::time::Duration::from_secs(60), || !stop_guard
            .decisions()
            .is_empty()),
        "the guard never sampled"
    );
    // 14 min later in the app's clock: 4 min past the deadline (the grace is 3).
    clock.0.store(14 * 60_000, Ordering::SeqCst);
    let t = w.app.second_guard_tick(&w.env, &cancel).expect("tick");
    assert!(t.unreadable.is_empty(), "{t:?}");
    let missed: Vec<_> = t
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::DeadlineMissed)
        .collect();
    assert_eq!(missed.len(), 1, "{t:?}");
    assert_eq!(missed[0].host.as_deref(), Some(LABEL));
    assert_eq!(
        missed[0].no_act,
        Some(gpurent_core::second_guard::NoActReason::PastedHost),
        "{t:?}"
    );
    assert!(t.stopped.is_empty() && t.deadline_acted.is_empty(), "{t:?}");
    let t = w.app.second_guard_tick(&w.env, &cancel).expect("tick");
    assert!(t.notices.is_empty(), "said once: {t:?}");
    sshd.kill();
    drop(stop_guard);
}
