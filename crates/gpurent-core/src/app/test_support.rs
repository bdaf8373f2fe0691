//! Test helpers for the facade's unit tests: an `App` under a temp dir at a fixed time, and a
//! saved host that is never contacted (TEST-NET-3 address).

use std::sync::Arc;

use crate::app::App;
use crate::infra::clock::FixedClock;
use crate::infra::paths::Paths;
use crate::remote::HostSpec;
use crate::CoreError;

/// An `App` whose data lives under `root` and whose clock reads `now_ms`.
pub fn app_at(root: &std::path::Path, now_ms: i64) -> App {
    App::open(Paths::under(root), Arc::new(FixedClock(now_ms)), None).expect("open")
}

/// Save `label` as a pasted host at 203.0.113.9 (documentation range: never reached).
pub fn save_host(app: &App, label: &str) {
    let spec = HostSpec {
        address: "203.0.113.9".into(),
        port: 22,
        user: "root".into(),
        jump: None,
        provider: None,
        notes: None,
    };
    app.with_store(|s| {
        crate::remote::hosts::insert(s, label, &spec, None, 0)
            .map_err(|e| CoreError::invalid("host", e.to_string()))
    })
    .expect("save host");
}

/// Tie saved host `label` to a machine rented from `provider` (provider id `p-1`) whose ledger
/// state became `state` at `at_ms` (`Terminated`: released then, as a confirmed release records it).
pub fn rental(
    app: &App,
    label: &str,
    provider: crate::providers::ProviderKind,
    state: crate::providers::ledger::LedgerState,
    at_ms: i64,
) {
    use crate::providers::ledger::{self, EventSource, Intent};
    app.with_db(|c| {
        let intent = Intent {
            provider,
            account: "acct".into(),
            offer_id: "o1".into(),
            gpu: "NVIDIA GeForce RTX 4090".into(),
            gpu_count: 1,
            price_per_hour_usd: 0.44,
            disk_gb: 20,
            storage_usd_per_gb_month: None,
            image: "img".into(),
        };
        let id = ledger::insert_intent(c, &intent, at_ms - 2_000)?;
        ledger::set_host_label(c, &id, label, at_ms - 1_000)?;
        ledger::set_provider_id(c, &id, "p-1", state, EventSource::Provider, "", at_ms)
    })
    .expect("ledger row");
}

/// [`rental`] of a RunPod machine released at `released_ms`.
pub fn released_rental(app: &App, label: &str, released_ms: i64) {
    rental(
        app,
        label,
        crate::providers::ProviderKind::Runpod,
        crate::providers::ledger::LedgerState::Terminated,
        released_ms,
    );
}

/// Record a guard on `label` (idle 30 min, power off, no deadline) installed at `installed_ms`, as
/// `guard set` records it.
pub fn guard_row(app: &App, label: &str, installed_ms: i64) {
    let spec = crate::guard::GuardSpec::new(1800, crate::guard::ActionKind::Poweroff);
    app.with_store(|s| {
        crate::guard::saved::save(
            s,
            label,
            &spec,
            "poweroff",
            None,
            crate::guard::Boot::None,
            installed_ms,
        )
    })
    .expect("guard row");
}
