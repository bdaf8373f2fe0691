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
