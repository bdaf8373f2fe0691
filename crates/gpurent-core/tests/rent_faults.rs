//! `App::rent`, the reconcile and the actions against the stateful fake cloud (gpurent-testhost)
//! when the provider blips, lags or loses an answer (issue 19): a machine that bills is never
//! shown as gone, a row closes only on the provider's word (two "gone" reads some seconds apart
//! on the injected clock), a closed row whose machine is alive is reopened, and a create whose
//! answer is unclear keeps its row open and is resolved before the next rent creates anything.
//!
//! The fake is talked to directly (no Prism: the spec checks are in providers_fake.rs and
//! providers_cli.rs). The tests set `GPURENT_RUNPOD_*` variables of this process, so they run
//! one at a time (a lock).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
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
use gpurent_core::providers::{ProviderError, ProviderKind};
use gpurent_core::Coded;
use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Fault, Flavor, Route};
use gpurent_testhost::UserKey;

const API_KEY: &str = "fake-runpod-key-faults";

static ENV: Mutex<()> = Mutex::new(());

/// The injected clock, moved by the test.
#[derive(Debug, Clone)]
struct StepClock(Arc<AtomicI64>);

impl Clock for StepClock {
    fn now_unix_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl StepClock {
    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

struct Rig {
    _guard: MutexGuard<'static, ()>,
    /// The provider's `GPURENT_<stem>_…` variables the rig set.
    stem: &'static str,
    fake: FakeCloud,
    app: App,
    clock: StepClock,
    key: LoginKey,
    env: SshEnv,
    _tmp: tempfile::TempDir,
}

fn rig() -> Rig {
    rig_on(Flavor::Runpod, "RUNPOD", API_KEY)
}

/// A fake cloud of `flavor` answering `api_key`, and an app on it through
/// `GPURENT_<stem>_API_KEY` / `_API_URL` (cleared again when the rig drops; the env lock held).
fn rig_on(flavor: Flavor, stem: &'static str, api_key: &str) -> Rig {
    let guard = ENV.lock().unwrap_or_else(|p| p.into_inner());
    let fake = FakeCloud::start(flavor, api_key).expect("fake cloud");
    std::env::set_var(format!("GPURENT_{stem}_API_KEY"), api_key);
    std::env::set_var(format!("GPURENT_{stem}_API_URL"), fake.url());
    // 30 s: a failure path only (no fault here hangs a request); a few seconds could be
    // reached by a loaded machine answering a create, which is never resent.
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "30");
    let tmp = tempfile::tempdir().expect("tmp");
    let clock = StepClock(Arc::new(AtomicI64::new(1_800_000_000_000)));
    let app = App::open(Paths::under(tmp.path()), Arc::new(clock.clone()), None)
        .expect("app")
        .with_keystore(Box::new(MemoryKeyStore::new()));
    let k = UserKey::generate("rent-faults").expect("key");
    let key = LoginKey {
        label: "k".into(),
        pem: Secret::new(k.private_pem.clone()),
        public_line: k.public_line.clone(),
    };
    let env = SshEnv::under_home(tmp.path(), None);
    Rig {
        _guard: guard,
        stem,
        fake,
        app,
        clock,
        key,
        env,
        _tmp: tmp,
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        std::env::remove_var(format!("GPURENT_{}_API_KEY", self.stem));
        std::env::remove_var(format!("GPURENT_{}_API_URL", self.stem));
    }
}

impl Rig {
    fn rent(&self, no_wait: bool, ready_timeout_s: u64) -> Result<String, ProviderError> {
        let req = RentRequest {
            provider: ProviderKind::Runpod,
            offer_id: self.fake.offer_id(),
            image: None,
            disk_gb: None,
            no_wait,
            ready_timeout_s: Some(ready_timeout_s),
            account: None,
            max_price_usd: None,
        };
        self.app
            .rent(&req, &self.key, &self.env, &NoProgress, &CancelToken::new())
            .map(|v| v.ledger.id)
    }

    /// The one ledger row (state, closed).
    fn rows(&self) -> Vec<(String, LedgerState, bool, Option<String>)> {
        self.app
            .instances()
            .expect("instances")
            .instances
            .into_iter()
            .map(|v| {
                (
                    v.ledger.id,
                    v.ledger.state,
                    v.ledger.closed_ms.is_some(),
                    v.ledger.provider_instance_id,
                )
            })
            .collect()
    }

    fn live_machines(&self) -> usize {
        self.fake
            .instances()
            .iter()
            .filter(|i| i.state != FakeState::Terminated)
            .count()
    }
}

/// Defect: a transient error while waiting for the machine became "gone while starting" and
/// the row was closed while the pod billed. Now the wait polls on until its deadline.
#[test]
fn a_blip_while_waiting_never_closes_the_row() {
    let r = rig();
    // The machine stays provisioning past the wait; every read of it fails once with a 503
    // (four tries: the HTTP layer's retries are used up).
    r.fake.set_provisioning(Duration::from_secs(60));
    for _ in 0..4 {
        r.fake.push_fault(Route::Get, Fault::ServerError(503));
    }
    let e = r.rent(false, 6).expect_err("not ready in 6 s");
    assert_eq!(e.code(), "not_ready", "{e:?}");
    assert_eq!(r.live_machines(), 1);
    let rows = r.rows();
    assert_eq!(rows.len(), 1);
    assert!(
        !rows[0].2,
        "the row of a billing machine stays open: {rows:?}"
    );
    assert_eq!(rows[0].1, LedgerState::Provisioning, "{rows:?}");
}

/// Defect: one "gone" read (a lagging read right after a create, or any 404) closed a row.
/// Now two gone reads some seconds apart on the injected clock are needed; a read that shows
/// the machine in between clears the first.
#[test]
fn one_gone_read_never_closes_a_row_and_a_closed_row_with_a_live_machine_reopens() {
    let r = rig();
    let id = r.rent(true, 60).expect("rent");
    r.clock.advance(5 * 60 * 1000);
    // The list and the direct read lag (404).
    r.fake.push_fault(Route::List, Fault::Lag);
    r.fake.push_fault(Route::Get, Fault::Lag);
    let rows = r.rows();
    assert!(!rows[0].2, "one gone read closed the row: {rows:?}");
    // Seen again, then gone once more 30 s later: still open (the first read no longer counts).
    r.clock.advance(30_000);
    assert!(!r.rows()[0].2);
    r.clock.advance(30_000);
    r.fake.push_fault(Route::List, Fault::Lag);
    r.fake.push_fault(Route::Get, Fault::Lag);
    assert!(!r.rows()[0].2, "a cleared gone read counted");
    // Two gone reads 20 s apart: the provider's word — closed.
    r.clock.advance(20_000);
    r.fake.push_fault(Route::List, Fault::Lag);
    r.fake.push_fault(Route::Get, Fault::Lag);
    let view = r.app.instances().expect("instances");
    assert_eq!(view.reconcile.closed, vec![id.clone()]);
    // The machine is still there (it was lag): the next reconcile lists it, and the closed row
    // is reopened with an event instead of hiding the machine as "ours, closed".
    let view = r.app.instances().expect("instances");
    assert!(view.foreign.is_empty(), "{view:?}");
    let row = &view.instances[0];
    assert!(row.ledger.closed_ms.is_none(), "{row:?}");
    assert!(
        row.events.iter().any(|e| e
            .detail
            .as_deref()
            .is_some_and(|d| d.starts_with("reopened"))),
        "{row:?}"
    );
    // Billing sees it in the provider's state again, as Hosts does (money review F1: the
    // timeline stopped at the close, so the reopened machine stayed 'terminated' at 0 per hour
    // in Billing, budgets and the second guard).
    let c = r
        .app
        .cost_report(gpurent_core::app::billing::CostOptions {
            ahead_ms: None,
            live: false,
            include_closed: false,
        })
        .expect("cost");
    let m = c
        .machines
        .iter()
        .find(|m| m.instance.as_deref() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("the reopened row is in Billing: {c:?}"));
    assert_ne!(
        m.state,
        Some(gpurent_core::billing::rules::InstanceState::Terminated),
        "{m:?}"
    );
    assert_eq!(
        m.ledger_state.as_deref(),
        Some(row.ledger.state.as_str()),
        "{m:?}"
    );
    // And it can be released from gpurent.
    let out = r
        .app
        .instance_action(&id, "release", true)
        .expect("release");
    assert_eq!(out.ledger.state, LedgerState::Terminated);
    assert_eq!(r.live_machines(), 0);
}

/// Defect: `release` refused a closed row even when the provider still had the machine.
#[test]
fn release_of_a_closed_row_whose_machine_bills_reopens_and_releases_it() {
    let r = rig();
    let id = r.rent(true, 60).expect("rent");
    r.clock.advance(5 * 60 * 1000);
    for _ in 0..2 {
        r.fake.push_fault(Route::List, Fault::Lag);
        r.fake.push_fault(Route::Get, Fault::Lag);
        let _ = r.rows();
        r.clock.advance(20_000);
    }
    let row = r.app.instance_money(&id, "release").expect("row");
    let _ = row;
    assert!(r.rows()[0].2 || r.live_machines() == 1);
    // Straight to release (the app's button; no reconcile in between).
    let out = r
        .app
        .instance_action(&id, "release", true)
        .expect("release of a machine that bills");
    assert_eq!(out.ledger.state, LedgerState::Terminated);
    assert_eq!(r.live_machines(), 0);
}

/// Defect: a 5xx answer to a create was `provider_outage` → `create_failed` ("nothing was
/// made"). Now it is `create_outcome_unknown`, the row stays open, and the next rent on that
/// account resolves it first: when the first create did make a machine it says so (id, price)
/// and creates nothing more.
#[test]
fn an_unclear_create_is_resolved_before_the_next_rent_creates_anything() {
    let r = rig();
    // A 500 that made nothing.
    r.fake.push_fault(Route::Create, Fault::ServerError(500));
    let e = r.rent(true, 60).expect_err("500");
    assert_eq!(e.code(), "create_outcome_unknown", "{e:?}");
    let rows = r.rows();
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].2, "an unclear create keeps its row open: {rows:?}");
    assert_eq!(rows[0].1, LedgerState::Unknown);
    // Straight away: not resolved yet, nothing is created.
    let e = r.rent(true, 60).expect_err("unresolved");
    assert_eq!(e.code(), "create_outcome_unknown", "{e:?}");
    assert_eq!(r.fake.creates_total(), 0);
    // Later, still not listed: the next rent goes ahead (the old row stays open, unknown).
    r.clock.advance(20_000);
    r.rent(true, 60)
        .expect("rent after the unclear create was not listed");
    assert_eq!(r.fake.creates_total(), 1);
    // A 502 whose create did make the machine.
    r.fake.push_fault(Route::Create, Fault::MadeThenFailed(502));
    let e = r.rent(true, 60).expect_err("502");
    assert_eq!(e.code(), "create_outcome_unknown", "{e:?}");
    assert_eq!(r.fake.creates_total(), 2);
    // The next rent finds it and says so, creating nothing.
    let e = r.rent(true, 60).expect_err("found");
    assert_eq!(e.code(), "earlier_create_found", "{e:?}");
    let said: serde_json::Value =
        serde_json::from_str(&e.detail().expect("detail")).expect("json detail");
    assert!(
        said["provider_instance_id"]
            .as_str()
            .is_some_and(|p| p.starts_with("pod")),
        "{said}"
    );
    assert_eq!(said["price_per_hour_usd"], 0.44, "{said}");
    assert_eq!(r.fake.creates_total(), 2, "one rent, one machine");
    // Every machine the cloud made is an open row.
    let open: Vec<_> = r.rows().into_iter().filter(|x| !x.2).collect();
    assert_eq!(r.live_machines(), 2);
    assert!(
        r.fake
            .instances()
            .iter()
            .all(|i| open.iter().any(|x| x.3.as_deref() == Some(i.id.as_str()))),
        "{open:?}"
    );
    // Told once: the rent after that goes ahead.
    r.rent(true, 60).expect("rent");
    assert_eq!(r.fake.creates_total(), 3);
}

/// A create answered with a clear refusal still closes its row as `create_failed`.
#[test]
fn a_refused_create_is_create_failed() {
    let r = rig();
    r.fake.push_fault(Route::Create, Fault::NoCapacity);
    let e = r.rent(true, 60).expect_err("capacity");
    assert_eq!(e.code(), "insufficient_capacity");
    let rows = r.rows();
    assert_eq!((rows[0].1, rows[0].2), (LedgerState::CreateFailed, true));
    // And the next rent is not held up by it.
    r.rent(true, 60).expect("rent");
}

/// Defect: `GPURENT_RUNPOD_API_KEY` replaced the key of every stored account, so a row made
/// with a keychain account was reconciled with another account's key, not seen (404), and
/// closed — and `release` took that 404 for success. Now the environment key is its own
/// account, and a row is bound to the key it was made with.
#[test]
fn another_accounts_key_never_closes_a_row() {
    let r = rig();
    std::env::remove_var("GPURENT_RUNPOD_API_KEY");
    r.app
        .provider_add(ProviderKind::Runpod, Some("home"), Secret::new(API_KEY))
        .expect("connect home");
    let req = RentRequest {
        provider: ProviderKind::Runpod,
        offer_id: r.fake.offer_id(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: None,
        account: Some("home".into()),
        max_price_usd: None,
    };
    let id = r
        .app
        .rent(&req, &r.key, &r.env, &NoProgress, &CancelToken::new())
        .expect("rent")
        .ledger
        .id;
    // Another provider account's key appears in the environment.
    r.fake.add_account("fake-runpod-key-of-another-account");
    std::env::set_var(
        "GPURENT_RUNPOD_API_KEY",
        "fake-runpod-key-of-another-account",
    );
    let names: Vec<String> = r
        .app
        .provider_list()
        .expect("accounts")
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(
        names,
        ["home", "runpod"],
        "the environment key is its own account"
    );
    for _ in 0..3 {
        r.clock.advance(5 * 60 * 1000);
        let view = r.app.instances().expect("instances");
        let row = view
            .instances
            .iter()
            .find(|v| v.ledger.id == id)
            .expect("row");
        assert!(row.ledger.closed_ms.is_none(), "{row:?}");
        assert!(
            row.remote.is_some(),
            "home's own key still sees it: {row:?}"
        );
    }
    assert_eq!(r.live_machines(), 1);
    let out = r
        .app
        .instance_action(&id, "release", true)
        .expect("release");
    assert_eq!(out.ledger.state, LedgerState::Terminated);
    assert_eq!(r.live_machines(), 0, "released with home's own key");
}

/// Defect: a RunPod offer for several GPUs was read again with a count of 1, so it was never
/// found again: every multi-GPU rent failed `offer_gone`.
#[test]
fn a_multi_gpu_runpod_offer_can_be_rented() {
    let r = rig();
    let req = RentRequest {
        provider: ProviderKind::Runpod,
        offer_id: "secure:2:NVIDIA GeForce RTX 4090".into(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: None,
        account: None,
        max_price_usd: None,
    };
    let v = r
        .app
        .rent(&req, &r.key, &r.env, &NoProgress, &CancelToken::new())
        .expect("a 2-GPU offer is found again");
    assert_eq!(v.ledger.gpu_count, 2);
    assert_eq!(
        r.fake.instances()[0].gpu_count,
        2,
        "the create asked for 2 GPUs"
    );
    assert!((v.ledger.price_per_hour_usd - 0.88).abs() < 1e-9, "{v:?}");
    assert_eq!(r.fake.creates_total(), 1);
}

/// Defect: `provider remove` with open machines orphaned them (no key left to see or release
/// them). Now it is refused, naming them.
#[test]
fn an_account_with_open_machines_is_not_removed() {
    let r = rig();
    std::env::remove_var("GPURENT_RUNPOD_API_KEY");
    r.app
        .provider_add(ProviderKind::Runpod, Some("home"), Secret::new(API_KEY))
        .expect("connect home");
    let req = RentRequest {
        provider: ProviderKind::Runpod,
        offer_id: r.fake.offer_id(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: None,
        account: Some("home".into()),
        max_price_usd: None,
    };
    let id = r
        .app
        .rent(&req, &r.key, &r.env, &NoProgress, &CancelToken::new())
        .expect("rent")
        .ledger
        .id;
    let e = r.app.provider_remove("home").expect_err("open machine");
    assert_eq!(e.code(), "account_has_machines", "{e:?}");
    assert!(e.detail().is_some_and(|d| d.contains(&id)), "{e:?}");
    r.app
        .instance_action(&id, "release", true)
        .expect("release");
    r.app
        .provider_remove("home")
        .expect("removed once released");
}

/// Defect (invariant 1 in Billing): a pod the account lists that gpurent did not start was
/// shown on Hosts as "still billing" at $0.44/h while Billing counted nothing ("no machine has
/// a cost"). Now it is a `foreign` machine in the cost report, in the totals, also between the
/// screen's live reads, and what it billed since gpurent first saw it counts as "so far".
#[test]
fn billing_counts_a_machine_gpurent_did_not_start() {
    use gpurent_core::app::billing::{CostOptions, MachineKind};
    let r = rig();
    let pid = r.fake.add_console_machine("my-notebook");
    let live = CostOptions {
        ahead_ms: Some(3_600_000),
        live: true,
        include_closed: false,
    };
    let c = r.app.cost_report(live).expect("cost");
    assert_eq!(c.machines.len(), 1, "{c:?}");
    let m = &c.machines[0];
    assert_eq!(m.kind, MachineKind::Foreign);
    assert_eq!(m.provider_instance_id.as_deref(), Some(pid.as_str()));
    assert_eq!(m.account.as_deref(), Some("runpod"));
    assert!((m.usd_per_hour_now - 0.44).abs() < 1e-9, "{m:?}");
    assert!((c.total_usd_per_hour_now - 0.44).abs() < 1e-9, "{c:?}");
    assert_eq!(c.foreign_count, 1);
    assert!((c.foreign_usd_per_hour - 0.44).abs() < 1e-9);
    assert!(
        m.notes.iter().any(|n| n == "not_started_by_gpurent"),
        "{m:?}"
    );
    let projected = c.total_projected_usd.expect("projected");
    assert!((projected - 0.44).abs() < 1e-9, "{c:?}");
    // Between live reads (the screen computes from what it saw): still there, and growing.
    r.clock.advance(1_800_000);
    let v = r.app.billing_view(None, false).expect("view");
    assert_eq!(v.cost.machines.len(), 1, "{v:?}");
    assert!((v.cost.total_so_far_usd - 0.22).abs() < 1e-6, "{v:?}");
    assert!((v.cost.total_usd_per_hour_now - 0.44).abs() < 1e-9);
    // The next live read adds the half hour it billed; the account's balance counts it too.
    r.clock.advance(1_800_000);
    let c = r.app.cost_report(live).expect("cost");
    assert!((c.total_so_far_usd - 0.44).abs() < 1e-6, "{c:?}");
    let b = c
        .balances
        .iter()
        .find(|b| b.account == "runpod")
        .expect("balance row");
    assert!((b.usd_per_hour - 0.44).abs() < 1e-9, "{b:?}");
    // A second one is counted beside it.
    r.fake.add_console_machine("other");
    let c = r.app.cost_report(live).expect("cost");
    assert_eq!(c.foreign_count, 2);
}

/// Defect (invariant 1: "can be released from gpurent"): a machine gpurent did not start could
/// only be managed in the provider's console. Now it is released by its provider id after a
/// confirm, done only on the provider's answer; a transient error is never "not found".
#[test]
fn a_machine_gpurent_did_not_start_is_released_by_its_provider_id() {
    let r = rig();
    let pid = r.fake.add_console_machine("my-notebook");
    // Without a yes nothing is sent: what it is and costs comes back.
    let e = r
        .app
        .foreign_release(&pid, None, false)
        .expect_err("asks first");
    assert_eq!(e.code(), "confirmation_required");
    let detail = e.detail().unwrap_or_default();
    assert!(detail.contains("0.44") && detail.contains(&pid), "{detail}");
    assert_eq!(r.live_machines(), 1);
    // The provider cannot be read: not "unknown", the error.
    for _ in 0..4 {
        r.fake.push_fault(Route::Get, Fault::ServerError(503));
    }
    let e = r.app.foreign_release(&pid, None, true).expect_err("503");
    assert_ne!(e.code(), "unknown_instance", "{e:?}");
    assert_eq!(r.live_machines(), 1);
    r.fake.clear_faults();
    // Another account name: not found there.
    let e = r
        .app
        .foreign_release(&pid, Some("nobody"), true)
        .expect_err("no such account's machine");
    assert_eq!(e.code(), "unknown_instance");
    // Shown in Billing, released, and gone from Billing.
    use gpurent_core::app::billing::CostOptions;
    let live = CostOptions {
        ahead_ms: None,
        live: true,
        include_closed: false,
    };
    assert_eq!(r.app.cost_report(live).expect("cost").foreign_count, 1);
    let done = r.app.foreign_release(&pid, None, true).expect("released");
    assert_eq!(done.provider_instance_id, pid);
    assert_eq!(done.account, "runpod");
    assert_eq!(r.live_machines(), 0);
    let v = r.app.billing_view(None, false).expect("view");
    assert_eq!(v.cost.foreign_count, 0, "{v:?}");
    // A machine gpurent started is released by its gpurent id, not as a foreign one.
    let id = r.rent(true, 60).expect("rent");
    let ours = r.app.instances().expect("instances").instances[0]
        .ledger
        .provider_instance_id
        .clone()
        .expect("pid");
    assert!(r.app.foreign_release(&ours, None, true).is_err());
    assert!(r.app.instance_known(&id).expect("known"));
}

/// Defect: a machine that failed while starting (RunPod `ERROR`) was waited on for the whole
/// ready timeout (20–30 min) while it billed. Now the rent fails fast with `machine_failed`,
/// names the machine that still bills and how to release it; the row stays open.
#[test]
fn a_machine_in_error_fails_fast_and_says_it_still_bills() {
    let r = rig();
    r.fake.fail_next_machines(1);
    let started = std::time::Instant::now();
    let e = r.rent(false, 120).expect_err("in ERROR");
    assert_eq!(e.code(), "machine_failed", "{e:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "waited {:?}",
        started.elapsed()
    );
    let rows = r.rows();
    let id = rows[0].0.clone();
    assert!(
        !rows[0].2,
        "the row of a billing machine stays open: {rows:?}"
    );
    assert!(
        e.to_string().contains(&format!("gpurent release {id}")),
        "{e}"
    );
    assert_eq!(
        e.data().and_then(|d| d.still_billing).as_deref(),
        Some(id.as_str())
    );
    assert_eq!(r.live_machines(), 1);
    let out = r
        .app
        .instance_action(&id, "release", true)
        .expect("release");
    assert_eq!(out.ledger.state, LedgerState::Terminated);
    assert_eq!(r.live_machines(), 0);
}

/// Defect: a failure after the create (here an unreadable answer while waiting) did not say
/// that the machine was made and bills. Now every such failure keeps its code and names the
/// machine: "still bills: gpurent release ID".
#[test]
fn a_failure_after_the_create_says_the_machine_still_bills() {
    let r = rig();
    r.fake.set_provisioning(Duration::from_secs(60));
    for _ in 0..4 {
        r.fake.push_fault(Route::Get, Fault::Garbage);
    }
    let e = r.rent(false, 30).expect_err("unreadable");
    let id = r.rows()[0].0.clone();
    assert_ne!(e.code(), "machine_failed");
    assert!(
        e.to_string()
            .contains(&format!("still bills: gpurent release {id}")),
        "{e}"
    );
    assert_eq!(
        e.data().and_then(|d| d.still_billing).as_deref(),
        Some(id.as_str())
    );
    assert_eq!(r.live_machines(), 1);
}

/// Defect (invariant 4): `RentRequest` carried no confirmed price, so a price that rose between
/// the confirm and the create was rented at. Now the offer read just before the create must not
/// cost more than `max_price_usd`: `price_rose`, and nothing is created or written.
#[test]
fn a_price_above_the_confirmed_one_is_refused() {
    let r = rig();
    let mut req = RentRequest {
        provider: ProviderKind::Runpod,
        offer_id: r.fake.offer_id(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: None,
        account: None,
        max_price_usd: Some(0.40),
    };
    let e = r
        .app
        .rent(&req, &r.key, &r.env, &NoProgress, &CancelToken::new())
        .expect_err("0.44 > 0.40");
    assert_eq!(e.code(), "price_rose", "{e:?}");
    assert_eq!(r.fake.creates_total(), 0);
    assert!(r.rows().is_empty());
    req.max_price_usd = Some(0.44);
    r.app
        .rent(&req, &r.key, &r.env, &NoProgress, &CancelToken::new())
        .expect("at the confirmed price");
    assert_eq!(r.fake.creates_total(), 1);
}

/// Defect (issue 19): a Vast rent with a disk other than 50 GB re-read the ask's price at 50 GB
/// (Vast's `dph_total` includes the disk's storage), so a 200 GB machine was created while the
/// price checked against the confirmed one was the 50 GB price: the user was rented above what
/// they confirmed. The rent now reads the price at the disk it creates.
#[test]
fn a_vast_rent_is_priced_and_capped_at_the_disk_it_creates() {
    let Rig {
        fake,
        app,
        key,
        env,
        ..
    } = &rig_on(Flavor::Vast, "VAST", "fake-vast-key-disk");
    let rent = |max: f64| {
        let req = RentRequest {
            provider: ProviderKind::Vast,
            offer_id: "4242".into(),
            image: None,
            disk_gb: Some(200),
            no_wait: true,
            ready_timeout_s: Some(60),
            account: None,
            max_price_usd: Some(max),
        };
        app.rent(&req, key, env, &NoProgress, &CancelToken::new())
    };
    // The listing's price (50 GB, the disk gpurent creates by default).
    let listed = app
        .offer_read(ProviderKind::Vast, None, "4242")
        .expect("offer")
        .price_per_hour_usd;
    let at_200 = app
        .offer_read_at(ProviderKind::Vast, None, "4242", 200)
        .expect("offer")
        .price_per_hour_usd;
    assert!(at_200 > listed + 1e-6, "{at_200} vs {listed}");

    // Capped at the 50 GB price, the 200 GB machine costs more: refused, nothing created.
    let e = rent(listed).expect_err("above the confirmed price");
    assert_eq!(e.code(), "price_rose", "{e:?}");
    assert_eq!(fake.creates_total(), 0, "nothing was created");

    // Confirmed at the 200 GB price: the row's price is what the created machine bills.
    let view = rent(at_200).expect("rented");
    assert!((view.ledger.price_per_hour_usd - at_200).abs() < 1e-9);
    assert_eq!(view.ledger.disk_gb, 200);
    let billed = app
        .instances()
        .expect("instances")
        .instances
        .into_iter()
        .find(|i| i.ledger.id == view.ledger.id)
        .and_then(|i| i.remote)
        .and_then(|r| r.price_per_hour_usd)
        .expect("the provider's price");
    assert!(
        (billed - at_200).abs() < 1e-9,
        "confirmed {at_200}, billed {billed}"
    );
}

/// Defect (issue 19, "Vast partial listings pass as complete"): Vast's instance list is paged
/// (25 a page); a page that ended the list early (`next_token: null` while `total_instances`
/// counts more) was taken as the whole list, and the machines on the pages never read dropped out
/// of Billing. Now such a list is an error: the account is reported as not read and Billing keeps
/// what it last saw.
#[test]
fn a_vast_list_cut_short_is_never_taken_as_complete() {
    use gpurent_core::app::billing::CostOptions;
    let Rig { fake, app, .. } = &rig_on(Flavor::Vast, "VAST", "fake-vast-key-pages");
    // 30 machines started in Vast's console: two pages.
    for n in 0..30 {
        fake.add_console_machine(&format!("console-{n}"));
    }
    let live = CostOptions {
        ahead_ms: Some(3_600_000),
        live: true,
        include_closed: false,
    };
    let c = app.cost_report(live).expect("cost");
    assert_eq!(c.foreign_count, 30, "every page is read: {c:?}");
    let per_hour = c.foreign_usd_per_hour;
    assert!(per_hour > 0.0);

    // The next list ends after its first page although it counts 30.
    fake.push_fault(Route::List, Fault::CutList);
    let (report, _) = app.providers_reconcile().expect("reconcile");
    assert_eq!(
        report
            .failed_accounts
            .iter()
            .map(|f| (f.account.as_str(), f.code.as_str()))
            .collect::<Vec<_>>(),
        vec![("vast", "listing_unparseable")],
        "a cut list is not the account's machines: {report:?}"
    );
    assert!(
        report.failed_accounts[0]
            .message
            .contains("could not be understood"),
        "{report:?}"
    );
    // Billing still counts all 30 (what it last saw of the account it could not read).
    let v = app.billing_view(None, false).expect("view");
    assert_eq!(v.cost.foreign_count, 30, "{v:?}");
    assert!((v.cost.foreign_usd_per_hour - per_hour).abs() < 1e-9);
}

/// Defect (issue 19, "a lost action answer is not read back"): a stop or release the provider
/// did but whose answer was lost (a gateway 5xx) was reported as failed and the ledger kept the
/// old state. Now an unclear answer is read back: when the provider shows the change it is
/// recorded and the action succeeds; when it does not, the error stands and nothing is recorded.
#[test]
fn a_lost_action_answer_is_read_back() {
    let r = rig();
    let id = r.rent(true, 60).expect("rent");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(r.rows()[0].1, LedgerState::Running);

    // A 500 that did nothing: still an error, the row as it was, the machine running.
    r.fake.push_fault(Route::Action, Fault::ServerError(500));
    let e = r
        .app
        .instance_action(&id, "stop", true)
        .expect_err("nothing was done");
    assert_eq!(e.code(), "provider_outage", "{e:?}");
    assert_eq!(r.fake.instances()[0].state, FakeState::Running);
    assert_eq!(r.rows()[0].1, LedgerState::Running);

    // The stop is done, its answer lost: read back, recorded as stopped.
    r.fake.push_fault(Route::Action, Fault::MadeThenFailed(502));
    let v = r
        .app
        .instance_action(&id, "stop", true)
        .expect("the provider shows the stop");
    assert_eq!(r.fake.instances()[0].state, FakeState::Stopped);
    assert_eq!(v.ledger.state, LedgerState::Stopped);

    // The release is done, its answer lost: the provider no longer has it — one read, which
    // is not its word yet. The error stands, the row stays open; a second read later (the
    // reconcile, past the create's lag window) closes it.
    r.fake.push_fault(Route::Action, Fault::MadeThenFailed(502));
    let e = r
        .app
        .instance_action(&id, "release", true)
        .expect_err("one gone read");
    assert_eq!(e.code(), "provider_outage", "{e:?}");
    assert_eq!(r.live_machines(), 0);
    assert!(!r.rows()[0].2, "one read closed the row: {:?}", r.rows());
    r.clock.advance(3 * 60 * 1000);
    let rows = r.rows();
    assert_eq!(rows[0].1, LedgerState::Terminated, "{rows:?}");
    assert!(rows[0].2, "{rows:?}");
}

/// Defect (issue 19, pacing): the pacing lived in each HTTP client and the app makes a client per
/// call, so two calls in a row — a stop, then a start at once — went out as fast as the user
/// clicked. Vast refuses calls that come too often per endpoint (429 "threshold=1.0"), and an
/// action is sent once: the start was lost as `rate_limited`. Now pacing is per account across
/// calls (`Pacer::for_account`) and the fake refuses what the real one would.
#[test]
fn a_stop_then_a_start_at_once_keep_vasts_interval() {
    let Rig {
        fake,
        app,
        key,
        env,
        ..
    } = &rig_on(Flavor::Vast, "VAST", "fake-vast-key-pace");
    fake.enforce_vast_thresholds();
    let req = RentRequest {
        provider: ProviderKind::Vast,
        offer_id: "4242".into(),
        image: None,
        disk_gb: None,
        no_wait: true,
        ready_timeout_s: Some(60),
        account: None,
        max_price_usd: None,
    };
    let id = app
        .rent(&req, key, env, &NoProgress, &CancelToken::new())
        .expect("rented")
        .ledger
        .id;
    std::thread::sleep(Duration::from_millis(400));
    app.instances().expect("instances");
    let cancel = CancelToken::new();
    let stopped = app
        .instance_action_with(&id, "stop", true, None, &cancel)
        .expect("stop");
    assert_eq!(stopped.ledger.state, LedgerState::Stopped, "{stopped:?}");
    // At once, on a new client: the write waits its turn instead of being refused.
    let started = app
        .instance_action_with(&id, "start", true, None, &cancel)
        .unwrap_or_else(|e| panic!("start right after the stop: {} {e}", e.code()));
    assert!(
        matches!(
            started.ledger.state,
            LedgerState::Running | LedgerState::Provisioning
        ),
        "{started:?}"
    );
    assert!(
        fake.instances()
            .iter()
            .all(|i| i.state == FakeState::Running),
        "the fake runs it again: {:?}",
        fake.instances()
    );
}
