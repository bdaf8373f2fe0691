//! Test helpers for the facade's unit tests: an `App` under a temp dir at a fixed time, and a
//! saved host that is never contacted (TEST-NET-3 address).

use std::sync::Arc;

use crate::app::App;
use crate::clock::FixedClock;
use crate::paths::Paths;
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

/// Tie saved host `label` to a rented RunPod instance in the ledger that was terminated at
/// `released_ms` (as a confirmed release records it).
pub fn released_rental(app: &App, label: &str, released_ms: i64) {
    use crate::providers::ledger::{self, EventSource, Intent, LedgerState};
    app.with_store(|s| {
        let c = s.conn();
        let intent = Intent {
            provider: crate::providers::ProviderKind::Runpod,
            account: "runpod".into(),
            offer_id: "o".into(),
            gpu: "NVIDIA GeForce RTX 4090".into(),
            gpu_count: 1,
            price_per_hour_usd: 0.44,
            disk_gb: 20,
            storage_usd_per_gb_month: None,
            image: "runpod/pytorch".into(),
        };
        let fail = |e: crate::providers::ProviderError| CoreError::invalid("ledger", e.to_string());
        let id = ledger::insert_intent(c, &intent, released_ms - 2_000).map_err(fail)?;
        ledger::set_host_label(c, &id, label, released_ms - 1_000).map_err(fail)?;
        ledger::record(
            c,
            &id,
            LedgerState::Terminated,
            EventSource::Provider,
            None,
            released_ms,
        )
        .map_err(fail)?;
        Ok(())
    })
    .expect("ledger");
}
