//! AutoDL failing the way that costs money (money review F9 and F12), on the fake AutoDL behind
//! Prism's validating proxy for gpurent's contract:
//!
//! - a create that made the machine and then answered HTTP 200 with a failure word that is not a
//!   refusal (`InternalError` / 服务繁忙): AutoDL documents no failure codes, so only the words
//!   that say "refused" may mean nothing was made; anything else is unclear, the row stays open,
//!   and the next rent finds the machine instead of making a second one;
//! - a snapshot answered `data: null` (the contract allows it; AutoDL sometimes has no details
//!   right after a create): the account's list still reads, with no rate for that machine yet.
//!
//! One test function (it sets `GPURENT_AUTODL_*` variables of this process). Needs Prism
//! (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

mod autodl_common;

use std::time::Duration;

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::providers::ledger::LedgerState;
use gpurent_core::Coded;
use gpurent_testhost::fakecloud::{FakeState, Fault, Route};
use gpurent_testhost::prism_available;

const TOKEN: &str = "fake-autodl-token-faults";

#[test]
fn autodl_failure_words_and_empty_snapshots_never_cost_a_second_machine() {
    if !prism_available() {
        return;
    }
    let autodl_common::Rig {
        fake,
        prism,
        clock,
        app,
        key,
        env,
        req,
        ..
    } = &autodl_common::rig(TOKEN, 1_800_000_000_000);
    fake.set_provisioning(Duration::from_millis(0));

    // A refusal word is still a refusal: nothing made, nothing held.
    fake.push_fault(Route::Create, Fault::ZeroBalance);
    let e = app
        .rent(req, key, env, &NoProgress, &CancelToken::new())
        .expect_err("no money");
    assert_eq!(e.code(), "insufficient_balance", "{e:?}");
    assert_eq!(fake.creates_total(), 0, "a refusal made nothing");

    // F9: the machine was made, the answer is a 200 with a failure word that is no refusal.
    fake.push_fault(Route::Create, Fault::MadeThenFailureWord);
    let e = app
        .rent(req, key, env, &NoProgress, &CancelToken::new())
        .expect_err("a failure word");
    assert_eq!(e.code(), "create_outcome_unknown", "{e:?}");
    assert_eq!(fake.creates_total(), 1, "the machine was made");
    let view = app.instances().expect("instances");
    let open: Vec<_> = view
        .instances
        .iter()
        .filter(|r| r.ledger.closed_ms.is_none())
        .collect();
    assert_eq!(open.len(), 1, "the row stays open: {view:?}");
    assert_ne!(open[0].ledger.state, LedgerState::CreateFailed, "{view:?}");
    // The next rent finds that machine and makes none: one intended rent, one machine.
    let again = app.rent(req, key, env, &NoProgress, &CancelToken::new());
    assert_eq!(fake.creates_total(), 1, "a second machine: {again:?}");
    assert_eq!(
        fake.instances()
            .iter()
            .filter(|i| i.state != FakeState::Terminated)
            .count(),
        1
    );

    // F12: the running machine's snapshot has no details yet: the list still reads, the machine
    // is shown (no rate yet), nothing is closed.
    clock.advance(60_000);
    fake.autodl_snapshot_null(5);
    let view = app
        .instances()
        .expect("a null snapshot is not an unreadable account");
    assert!(
        view.instances
            .iter()
            .any(|r| r.ledger.closed_ms.is_none() && r.ledger.provider_instance_id.is_some()),
        "{view:?}"
    );
    assert!(
        view.reconcile.failed_accounts.is_empty(),
        "the account was read: {:?}",
        view.reconcile.failed_accounts
    );
    assert!(
        view.reconcile.closed.is_empty(),
        "nothing closed on an empty snapshot: {view:?}"
    );
    // Every request and every answer kept to the contract (a null snapshot and a 200 with a
    // failure word included).
    prism.assert_spec_kept("AutoDL");
}
