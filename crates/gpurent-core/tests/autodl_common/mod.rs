//! One rig for the AutoDL money tests: the fake AutoDL of gpurent-testhost behind Prism's
//! validating proxy for gpurent's contract, an App on a stepped clock with the account
//! connected, a login key, and the rent request of the fake's one offer. It sets this process's
//! `GPURENT_AUTODL_*` variables: one test function per binary.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::infra::clock::Clock;
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::keys::MemoryKeyStore;
use gpurent_core::providers::ProviderKind;
use gpurent_testhost::fakecloud::{FakeCloud, Flavor};
use gpurent_testhost::{Prism, UserKey};

/// The injected clock, moved by the test.
#[derive(Debug, Clone)]
pub struct StepClock(pub Arc<AtomicI64>);

impl Clock for StepClock {
    fn now_unix_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl StepClock {
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

pub struct Rig {
    pub fake: FakeCloud,
    pub prism: Prism,
    pub clock: StepClock,
    pub app: App,
    pub key: LoginKey,
    pub env: SshEnv,
    pub req: RentRequest,
    _tmp: tempfile::TempDir,
}

/// The rig for account `token`, its clock at `t0_ms`. The fake can be set (balance, rates,
/// faults) before the first rent.
pub fn rig(token: &str, t0_ms: i64) -> Rig {
    let fake = FakeCloud::start(Flavor::Autodl, token).expect("fake AutoDL");
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/provider-specs/autodl-pro.openapi.yaml");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    std::env::remove_var("GPURENT_AUTODL_API_KEY");
    std::env::set_var("GPURENT_AUTODL_API_URL", prism.url());
    // 30 s: a failure path only (no fault here hangs a request); a few seconds could be
    // reached by a loaded machine answering a create, which is never resent.
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "30");
    let tmp = tempfile::tempdir().expect("tmp");
    let clock = StepClock(Arc::new(AtomicI64::new(t0_ms)));
    let app = App::open(Paths::under(tmp.path()), Arc::new(clock.clone()), None)
        .expect("app")
        .with_keystore(Box::new(MemoryKeyStore::new()));
    app.provider_add(ProviderKind::Autodl, None, Secret::new(token))
        .expect("connect");
    let k = UserKey::generate("autodl").expect("key");
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
    Rig {
        fake,
        prism,
        clock,
        app,
        key,
        env,
        req,
        _tmp: tmp,
    }
}
