//! Seeded, randomized fault schedules over rent → instances → stop / start → release against the
//! stateful fake RunPod cloud (gpurent-testhost), checking issue 19's invariants after every
//! step, against the fake's ground truth:
//!
//! 1. **Visible**: every machine alive at the fake is an open ledger row (with its provider id)
//!    or listed as "not started by gpurent — still billing".
//! 2. **One rent, one machine**: no label is created twice; a rent creates at most one machine;
//!    a rent after an unclear create that did make a machine creates nothing.
//! 3. **Closed only on the provider's word**: a closed row's machine is terminated at the fake
//!    (`create_failed`: no machine with its label exists).
//! 4. **True money words** (as far as checkable here): each open row's price is the price the
//!    fake bills for its machine.
//!
//! Faults: 5xx on any route, 429 with a `Retry-After` over 60 s, a create that made the machine
//! and answered 502, no capacity, and lag (a list without the new machine, a read answering
//! "not found") right after a create. The clock is injected and moved by the schedule.
//!
//! RunPod only: Vast's and Lambda's client pacing (1–12 s between calls) would make the
//! schedules slow; their clients share the code paths checked here (`app/providers.rs`).
//! `RENT_SCHEDULES=N` runs N schedules (default 48); `RENT_SEED=S` replays one.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

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
use gpurent_testhost::UserKey;

const API_KEY: &str = "fake-runpod-key-invariants";
const STEPS: usize = 10;

#[derive(Debug, Clone)]
struct StepClock(Arc<AtomicI64>);

impl Clock for StepClock {
    fn now_unix_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// xorshift64*: a seeded schedule without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_fault(rng: &mut Rng, just_created: bool) -> Option<(Route, Fault)> {
    let routes = [
        Route::Offers,
        Route::Create,
        Route::List,
        Route::Get,
        Route::Action,
        Route::Keys,
    ];
    match rng.below(10) {
        0 | 1 => Some((
            routes[rng.below(routes.len() as u64) as usize],
            Fault::ServerError(if rng.below(2) == 0 { 500 } else { 503 }),
        )),
        2 => Some((
            routes[rng.below(routes.len() as u64) as usize],
            Fault::RateLimited {
                retry_after_s: Some(90),
            },
        )),
        3 => Some((Route::Create, Fault::MadeThenFailed(502))),
        4 => Some((Route::Create, Fault::NoCapacity)),
        5 if just_created => Some((
            if rng.below(2) == 0 {
                Route::List
            } else {
                Route::Get
            },
            Fault::Lag,
        )),
        _ => None,
    }
}

/// The invariants, after the step (faults cleared; `instances` reconciles once, as every edge
/// does before it shows anything).
fn check(app: &App, fake: &FakeCloud, seed: u64, step: usize, log: &[String]) {
    fake.clear_faults();
    let ctx = || format!("seed {seed} step {step}: {}", log.join(" → "));
    let view = app.instances().expect("instances");
    assert!(
        view.reconcile.failed_accounts.is_empty(),
        "{}: {view:?}",
        ctx()
    );
    let machines = fake.instances();
    // 1. Visible.
    for m in machines.iter().filter(|m| m.state != FakeState::Terminated) {
        let row = view.instances.iter().any(|v| {
            v.ledger.provider_instance_id.as_deref() == Some(m.id.as_str())
                && v.ledger.closed_ms.is_none()
        });
        let foreign = view
            .foreign
            .iter()
            .any(|f| f.instance.id == m.id && f.billing);
        assert!(
            row || foreign,
            "{}: machine {} ({:?}) is not shown as billing",
            ctx(),
            m.id,
            m.state
        );
    }
    // 2. One rent, one machine (per label).
    for (label, n) in fake.creates_by_label() {
        assert!(n <= 1, "{}: label {label} created {n} times", ctx());
    }
    // 3. Closed only on the provider's word.
    for v in view
        .instances
        .iter()
        .filter(|v| v.ledger.closed_ms.is_some())
    {
        match v.ledger.state {
            LedgerState::Terminated => {
                let pid = v.ledger.provider_instance_id.as_deref();
                assert!(
                    machines
                        .iter()
                        .filter(|m| Some(m.id.as_str()) == pid)
                        .all(|m| m.state == FakeState::Terminated),
                    "{}: {} closed while its machine lives",
                    ctx(),
                    v.ledger.id
                );
            }
            LedgerState::CreateFailed => assert!(
                machines.iter().all(|m| m.label != v.ledger.id),
                "{}: {} create_failed but the machine was made",
                ctx(),
                v.ledger.id
            ),
            other => panic!("{}: closed in state {other:?}", ctx()),
        }
    }
    // 4. The price gpurent states is the price the machine bills at (the fake's 0.44 per GPU).
    for v in view
        .instances
        .iter()
        .filter(|v| v.ledger.closed_ms.is_none())
    {
        let want = 0.44 * f64::from(v.ledger.gpu_count);
        assert!(
            (v.ledger.price_per_hour_usd - want).abs() < 1e-9,
            "{}: {v:?}",
            ctx()
        );
    }
}

fn schedule(seed: u64, key: &LoginKey) {
    let fake = FakeCloud::start(Flavor::Runpod, API_KEY).expect("fake cloud");
    fake.set_provisioning(std::time::Duration::from_millis(50));
    std::env::set_var("GPURENT_RUNPOD_API_URL", fake.url());
    let tmp = tempfile::tempdir().expect("tmp");
    let clock = StepClock(Arc::new(AtomicI64::new(1_800_000_000_000)));
    let app = App::open(Paths::under(tmp.path()), Arc::new(clock.clone()), None)
        .expect("app")
        .with_keystore(Box::new(MemoryKeyStore::new()));
    let env = SshEnv::under_home(tmp.path(), None);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut log: Vec<String> = vec![];
    let mut just_created = false;
    for step in 0..STEPS {
        if let Some((route, f)) = random_fault(&mut rng, just_created) {
            log.push(format!("fault {route:?} {f:?}"));
            fake.push_fault(route, f);
        }
        just_created = false;
        let open: Vec<String> = app
            .instances()
            .map(|v| {
                v.instances
                    .into_iter()
                    .filter(|i| {
                        i.ledger.closed_ms.is_none() && i.ledger.provider_instance_id.is_some()
                    })
                    .map(|i| i.ledger.id)
                    .collect()
            })
            .unwrap_or_default();
        match rng.below(6) {
            0 | 1 => {
                let count = if rng.below(3) == 0 { 2 } else { 1 };
                let req = RentRequest {
                    provider: ProviderKind::Runpod,
                    offer_id: format!("secure:{count}:NVIDIA GeForce RTX 4090"),
                    image: None,
                    disk_gb: None,
                    no_wait: true,
                    ready_timeout_s: None,
                    account: None,
                };
                let before = fake.creates_total();
                let out = app.rent(&req, key, &env, &NoProgress, &CancelToken::new());
                let made = fake.creates_total() - before;
                assert!(made <= 1, "seed {seed}: one rent made {made} machines");
                if let Err(e) = &out {
                    if e.code() == "earlier_create_found" {
                        assert_eq!(made, 0, "seed {seed}: told, and created anyway");
                    }
                }
                log.push(format!(
                    "rent x{count} → {}",
                    out.as_ref()
                        .map_or_else(|e| e.code().to_string(), |_| "ok".into())
                ));
                just_created = made == 1;
            }
            2 | 3 if !open.is_empty() => {
                let id = &open[rng.below(open.len() as u64) as usize];
                let act = ["stop", "start", "release"][rng.below(3) as usize];
                let out = app.instance_action(id, act, true);
                log.push(format!(
                    "{act} → {}",
                    out.as_ref()
                        .map_or_else(|e| e.code().to_string(), |_| "ok".into())
                ));
            }
            4 => {
                let ms = (rng.below(90) as i64 + 1) * 1000;
                clock.0.fetch_add(ms, Ordering::SeqCst);
                log.push(format!("+{} s", ms / 1000));
            }
            _ => {
                let out = app.instances();
                log.push(format!(
                    "instances → {}",
                    out.as_ref()
                        .map_or_else(|e| e.code().to_string(), |_| "ok".into())
                ));
            }
        }
        check(&app, &fake, seed, step, &log);
    }
}

#[test]
fn invariants_hold_under_seeded_fault_schedules() {
    std::env::set_var("GPURENT_RUNPOD_API_KEY", API_KEY);
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "3");
    let k = UserKey::generate("rent-invariants").expect("key");
    let key = LoginKey {
        label: "k".into(),
        pem: Secret::new(k.private_pem.clone()),
        public_line: k.public_line.clone(),
    };
    let seeds: Vec<u64> = match std::env::var("RENT_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(s) => vec![s],
        None => {
            let n: u64 = std::env::var("RENT_SCHEDULES")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(48);
            (1..=n).collect()
        }
    };
    let started = std::time::Instant::now();
    for &seed in &seeds {
        schedule(seed, &key);
    }
    eprintln!(
        "rent invariants: {} schedules × {STEPS} steps held in {:.1} s",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
}
