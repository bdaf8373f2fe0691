//! Money for a machine rented on AutoDL (issue 23): everything Billing says about it is in yuan
//! and never mixed into the dollars — its rate (AutoDL's documented one, since the API quotes no
//! price before the create), the machine's own rate read after the create beside it, the totals
//! line, the budgets (a yuan budget counts it, a dollar budget does not), the account's wallet
//! balance (1/1000 yuan on the wire) and how long it lasts; and once it is powered off, the date
//! AutoDL would release it (15 days off in a row, data wiped) and the second guard's notice
//! before that.
//!
//! The fake AutoDL of gpurent-testhost behind Prism's validating proxy for gpurent's contract.
//! The rent does not wait for a login (no SSH here: the key install is proven in providers_cli
//! and the E2E journey). One test function (it sets `GPURENT_AUTODL_*` variables of this
//! process). Needs Prism (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

mod autodl_common;

use std::time::{Duration, Instant};

use gpurent_core::billing::budget::Period;
use gpurent_core::billing::money::Money;
use gpurent_core::billing::platforms::Platform;
use gpurent_core::billing::Currency;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::Clock;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::providers::ProviderKind;
use gpurent_core::second_guard::notice::NoticeKind;
use gpurent_testhost::fakecloud::FakeState;
use gpurent_testhost::prism_available;

const TOKEN: &str = "fake-autodl-token-money";
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn an_autodl_machine_is_billed_in_yuan_and_warned_before_its_release() {
    if !prism_available() {
        return;
    }
    let t0 = 1_800_000_000_000;
    let autodl_common::Rig {
        fake,
        prism,
        clock,
        app,
        key,
        env,
        req,
        ..
    } = &autodl_common::rig(TOKEN, t0);
    fake.set_provisioning(Duration::from_millis(300));
    // The wallet: ¥88.50 (88500 on the wire); the machine's own rate: ¥2.10/h (payg_price 2100),
    // not the documented ¥1.97 the offer showed.
    fake.set_balance(88.5);
    fake.set_reported_price(Some(2.1));
    let rented = app
        .rent(req, key, env, &NoProgress, &CancelToken::new())
        .expect("rent");
    let id = rented.ledger.id.clone();
    assert!(near(rented.ledger.price_per_hour_usd, 1.97));
    let deadline = Instant::now() + Duration::from_secs(20);
    while fake.instances()[0].state != FakeState::Running {
        assert!(Instant::now() < deadline, "never running");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Running, read live: the machine in yuan, AutoDL's own rate beside gpurent's.
    app.cost_all(None).expect("first read");
    clock.advance(2 * HOUR);
    let report = app.cost_all(None).expect("cost");
    let m = report
        .machines
        .iter()
        .find(|m| m.instance.as_deref() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(m.currency, Currency::Cny, "{m:?}");
    assert!(near(m.per_hour_now, 1.97), "{m:?}");
    assert!(near(m.so_far.total(), 2.0 * 1.97), "{m:?}");
    assert!(
        m.notes.iter().any(|n| n == "price_documented_not_quoted"),
        "{m:?}"
    );
    let own = m
        .reported
        .as_ref()
        .expect("AutoDL's own rate, read after the create");
    assert!(near(own.usd_per_hour, 2.1), "{own:?}");
    assert_eq!(own.differs, Some(true), "{own:?}");
    assert!(own.source.contains("payg_price"), "{own:?}");
    assert_eq!(m.platform_release_at_ms, None, "running: no release date");
    // One totals line, in yuan; nothing counted in dollars.
    let cny = report
        .totals
        .iter()
        .find(|t| t.currency == Currency::Cny)
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(
        near(cny.per_hour_now, 1.97) && near(cny.so_far, 2.0 * 1.97),
        "{cny:?}"
    );
    assert!(report.totals.iter().all(|t| t.currency == Currency::Cny));
    assert_eq!(report.total_usd_per_hour_now, 0.0);
    // The wallet in yuan, and how long it lasts at the machine's rate.
    let b = report
        .balances
        .iter()
        .find(|b| b.provider == ProviderKind::Autodl)
        .unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(b.currency, Currency::Cny);
    assert_eq!(b.balance(), Some(88.5), "{b:?}");
    assert!(near(b.per_hour(), 1.97), "{b:?}");
    assert!(near(b.runs_out_in_h.expect("lasts"), 88.5 / 1.97), "{b:?}");

    // A yuan budget counts it; a dollar budget does not.
    app.budget_set_in(None, Period::Day, Money::new(3.0, Currency::Cny), None)
        .expect("yuan budget");
    app.budget_set_in(None, Period::Month, Money::new(100.0, Currency::Usd), None)
        .expect("dollar budget");
    let budgets = app.budget_list().expect("budgets");
    let spent = |c: Currency| {
        budgets
            .iter()
            .find(|b| b.status.budget.currency == c)
            .map(|b| b.status.spent)
            .unwrap_or_else(|| panic!("{budgets:?}"))
    };
    assert!(near(spent(Currency::Cny), 2.0 * 1.97), "{budgets:?}");
    assert_eq!(spent(Currency::Usd), 0.0, "{budgets:?}");

    // Powered off: AutoDL would release it 15 days after this stop (data wiped).
    clock.advance(HOUR);
    let stopped_at = clock.now_unix_ms();
    app.instance_action_with(&id, "stop", true, Some(env), &CancelToken::new())
        .expect("power off");
    let report = app.cost_all(None).expect("cost after the stop");
    let m = report
        .machines
        .iter()
        .find(|m| m.instance.as_deref() == Some(id.as_str()))
        .expect("still listed");
    assert_eq!(m.platform, Some(Platform::Autodl));
    assert_eq!(
        m.platform_release_at_ms,
        Some(stopped_at + 15 * DAY),
        "{m:?}"
    );

    // Ten days off: nothing yet. Thirteen: the second guard warns, once.
    let cancel = CancelToken::new();
    clock.advance(10 * DAY);
    let tick = app.second_guard_tick(env, &cancel).expect("tick");
    assert!(
        tick.notices
            .iter()
            .all(|n| n.kind != NoticeKind::ReleaseSoon),
        "{:?}",
        tick.notices
    );
    clock.advance(3 * DAY);
    let tick = app.second_guard_tick(env, &cancel).expect("tick");
    let soon: Vec<_> = tick
        .notices
        .iter()
        .filter(|n| n.kind == NoticeKind::ReleaseSoon)
        .collect();
    assert_eq!(soon.len(), 1, "{:?}", tick.notices);
    assert_eq!(soon[0].platform, Some(Platform::Autodl));
    assert_eq!(soon[0].hours, Some(48.0), "{:?}", soon[0]);
    let tick = app.second_guard_tick(env, &cancel).expect("tick");
    assert!(tick
        .notices
        .iter()
        .all(|n| n.kind != NoticeKind::ReleaseSoon));
    prism.assert_spec_kept("AutoDL");
}
