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

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::Clock;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::MemoryKeyStore;
use gpurent_core::providers::ledger::LedgerState;
use gpurent_core::providers::ProviderKind;
use gpurent_core::Coded;
use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Fault, Flavor, Route};
use gpurent_testhost::{prism_available, Prism, UserKey};

const TOKEN: &str = "fake-autodl-token-faults";

/// The injected clock, moved by the test.
#[derive(Debug, Clone)]
struct StepClock(Arc<AtomicI64>);

impl Clock for StepClock {
    fn now_unix_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[test]
fn autodl_failure_words_and_empty_snapshots_never_cost_a_second_machine() {
    if !prism_available() {
        return;
    }
    let fake = FakeCloud::start(Flavor::Autodl, TOKEN).expect("fake AutoDL");
    fake.set_provisioning(Duration::from_millis(0));
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/provider-specs/autodl-pro.openapi.yaml");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    std::env::remove_var("GPURENT_AUTODL_API_KEY");
    std::env::set_var("GPURENT_AUTODL_API_URL", prism.url());
    // 30 s: a failure path only (no fault here hangs a request).
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "30");
    let tmp = tempfile::tempdir().expect("tmp");
    let clock = StepClock(Arc::new(AtomicI64::new(1_800_000_000_000)));
    let app = App::open(Paths::under(tmp.path()), Arc::new(clock.clone()), None)
        .expect("app")
        .with_keystore(Box::new(MemoryKeyStore::new()));
    app.provider_add(ProviderKind::Autodl, None, Secret::new(TOKEN))
        .expect("connect");
    let k = UserKey::generate("autodl-faults").expect("key");
    let key = LoginKey {
        label: "k".into(),
        pem: Secret::new(k.private_pem.clone()),
        public_line: k.public_line.clone(),
    };
    let env = SshEnv::under_home(tmp.path(), None);
    let req = RentRequest {
        provider: ProviderKind::Autodl,
        offer_id: fake.offer_id(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: None,
        account: None,
        max_price_usd: None,
    };

    // A refusal word is still a refusal: nothing made, nothing held.
    fake.push_fault(Route::Create, Fault::ZeroBalance);
    let e = app
        .rent(&req, &key, &env, &NoProgress, &CancelToken::new())
        .expect_err("no money");
    assert_eq!(e.code(), "insufficient_balance", "{e:?}");
    assert_eq!(fake.creates_total(), 0, "a refusal made nothing");

    // F9: the machine was made, the answer is a 200 with a failure word that is no refusal.
    fake.push_fault(Route::Create, Fault::MadeThenFailureWord);
    let e = app
        .rent(&req, &key, &env, &NoProgress, &CancelToken::new())
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
    let again = app.rent(&req, &key, &env, &NoProgress, &CancelToken::new());
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
    clock.0.fetch_add(60_000, Ordering::SeqCst);
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
}
