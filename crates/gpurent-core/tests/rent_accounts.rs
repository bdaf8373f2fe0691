//! Two accounts of one provider: each offer says which account listed it, and renting that offer
//! with its account puts the machine on that account (the desktop's rent dialog passes the
//! offer's account; before, it rented with the provider's first account). The fake RunPod cloud
//! (gpurent-testhost) behind Prism's validating proxy for RunPod's spec; both accounts' keys live
//! in an in-memory keychain (the fake has one account key, so both use it). The create is not waited on (no SSH in this test).
//!
//! One test function (it sets the `GPURENT_RUNPOD_*` variables of this process). Needs Prism
//! (`npm ci`): skipped with a message otherwise, failing under `CI=true`.

use std::path::PathBuf;
use std::sync::Arc;

use gpurent_core::app::login::LoginKey;
use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::FixedClock;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::MemoryKeyStore;
use gpurent_core::providers::{OfferQuery, ProviderKind};
use gpurent_testhost::fakecloud::{FakeCloud, Flavor};
use gpurent_testhost::{prism_available, Prism, UserKey};

const ACCOUNT_KEY: &str = "fake-runpod-account-key-two-accounts";

#[test]
fn an_offer_is_rented_with_the_account_that_listed_it() {
    if !prism_available() {
        return;
    }
    let fake = FakeCloud::start(Flavor::Runpod, ACCOUNT_KEY).expect("fake cloud");
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/provider-specs/runpod-rest-v2.openapi.json");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    // Both accounts are connected through the (memory) keychain.
    std::env::remove_var("GPURENT_RUNPOD_API_KEY");
    std::env::set_var("GPURENT_RUNPOD_API_URL", prism.url());
    // 30 s: a failure path only (no fault here hangs a request); a few seconds could be
    // reached by a loaded machine answering a create, which is never resent.
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "30");
    let tmp = tempfile::tempdir().expect("tmp");
    let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(1_000)), None)
        .expect("app")
        .with_keystore(Box::new(MemoryKeyStore::new()));
    for name in ["home", "work"] {
        app.provider_add(ProviderKind::Runpod, Some(name), Secret::new(ACCOUNT_KEY))
            .expect("connect");
    }

    let view = app
        .offers(Some(ProviderKind::Runpod), &OfferQuery::default())
        .expect("offers");
    assert!(view.failed_accounts.is_empty(), "{view:?}");
    let mut whose: Vec<&str> = view
        .offers
        .iter()
        .filter(|o| o.offer_id == fake.offer_id())
        .map(|o| o.account.as_deref().expect("every offer names its account"))
        .collect();
    whose.sort_unstable();
    assert_eq!(whose, ["home", "work"]);

    let offer = view
        .offers
        .iter()
        .find(|o| o.offer_id == fake.offer_id() && o.account.as_deref() == Some("work"))
        .expect("work's offer");
    let k = UserKey::generate("two-accounts").expect("key");
    let key = LoginKey {
        label: "k".into(),
        pem: Secret::new(k.private_pem.clone()),
        public_line: k.public_line.clone(),
    };
    let req = RentRequest {
        provider: offer.provider,
        offer_id: offer.offer_id.clone(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: None,
        account: offer.account.clone(),
        max_price_usd: None,
    };
    let env = gpurent_core::app::login::SshEnv::under_home(tmp.path(), None);
    let rented = app
        .rent(&req, &key, &env, &NoProgress, &CancelToken::new())
        .expect("rent");
    assert_eq!(rented.ledger.account, "work");
    assert_eq!(fake.creates_total(), 1);
    prism.assert_spec_kept("RunPod");
}
