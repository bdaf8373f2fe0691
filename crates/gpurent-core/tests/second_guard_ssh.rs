//! The app as a second guard against the guard on a machine: a fake GPU host (busy, so the guard
//! on it never acts) behind a REAL loopback sshd, its guard set with a deadline 5 minutes away and
//! the host's own rate entered. One tick re-reads the guard over SSH with the host's saved key
//! (from the keychain, here an in-memory one) and re-computes the deadline in the app's own clock:
//! "deadline in 5 min", once; the next tick is quiet. A guard that cannot be read (its host's
//! sshd gone) is reported as unreadable with its code, and the deadline is still re-checked from
//! what was saved.
//!
//! Needs `/usr/sbin/sshd` and the `gputest` user: skipped with a message otherwise, failing under
//! `CI=true`.

mod remote_common;
mod setup_common;

use std::path::Path;

use gpurent_core::billing::watch::NoticeKind;
use gpurent_core::billing::{Increment, PastedRate};
use gpurent_core::cancel::CancelToken;
use gpurent_core::guard::{ActionKind, GuardSpec};
use gpurent_core::keys::{KeyAlgorithm, MemoryKeyStore};
use gpurent_core::monitor::telemetry::GpuQuery;
use gpurent_testhost::sshd_available;
use remote_common::{add_confirmed, spec, world};
use setup_common::FakeHost;

const LABEL: &str = "gpu";

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `gpus.csv` for the fake's live mode: one GPU at `util` %.
fn gpus_csv(util: u32) -> String {
    let fields = GpuQuery::new().fields();
    let value = |f: &str| -> String {
        match f {
            "index" => "0".into(),
            "uuid" => "GPU-00000000-fake-4e5f-8a9b-0c1d2e3f4a5b".into(),
            "name" => "NVIDIA H100 80GB HBM3".into(),
            "utilization.gpu" => util.to_string(),
            "memory.total" => "81559".into(),
            f if f.starts_with("clocks_event_reasons.") => "Not Active".into(),
            _ => "1".into(),
        }
    };
    let row: Vec<String> = fields.iter().map(|f| value(f)).collect();
    format!("{}\n{}\n", fields.join(","), row.join(","))
}

#[test]
fn the_app_rechecks_a_guard_deadline_and_says_it_once() {
    if !sshd_available() {
        return;
    }
    let host = FakeHost::new("ready_h100");
    let bin = host.bin();
    for t in ["mv", "nohup"] {
        let target = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .expect("system tool");
        std::os::unix::fs::symlink(target, bin.join(t)).expect("link tool");
    }
    write_exec(&bin.join("poweroff"), "#!/bin/sh\nexit 0\n");
    write_exec(&bin.join("wall"), "#!/bin/sh\ncat > /dev/null\n");
    write_exec(
        &bin.join("crontab"),
        "#!/bin/sh\ncase \"$1\" in -l) exit 1 ;; -) cat > /dev/null ;; esac\n",
    );
    let state = host.dir.path().join("state");
    std::fs::write(state.join("gpus.csv"), gpus_csv(95)).expect("gpus");
    std::fs::write(
        state.join("apps.csv"),
        "gpu_uuid,pid,used_memory\nGPU-00000000-fake-4e5f-8a9b-0c1d2e3f4a5b,77,1024\n",
    )
    .expect("apps");
    let mut sshd = host.serve().expect("serve the fake host over sshd");

    // The app's clock is fixed (1 000 ms); the key lives in an in-memory keychain.
    let mut w = world();
    w.app = w.app.with_keystore(Box::new(MemoryKeyStore::new()));
    let info = w
        .app
        .key_new("laptop", KeyAlgorithm::Ed25519, None)
        .expect("key");
    sshd.authorize(&info.public_key).expect("authorize");
    let key = w.app.host_login_key("laptop", None).expect("login key");
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));
    w.app
        .host_rate_set(
            LABEL,
            PastedRate {
                usd_per_hour: 2.0,
                rule: Increment::Second,
                storage_usd_per_day: None,
            },
            0,
        )
        .expect("rate");
    let cancel = CancelToken::new();
    let guard = GuardSpec {
        period_s: 1,
        warn_s: 2,
        conn_min_age_s: 2,
        deadline_in_s: Some(300),
        ..GuardSpec::new(600, ActionKind::Poweroff)
    };
    w.app
        .guard_set(LABEL, &w.env, &key, &guard, &cancel)
        .expect("guard set");
    let stop_guard = StopGuard(host.dir.path().join("home/.gpurent/guard"));

    let t = w.app.second_guard_tick(&w.env, &cancel).expect("tick");
    assert!(t.unreadable.is_empty(), "the guard was read: {t:?}");
    let kinds: Vec<(NoticeKind, Option<&str>, Option<i64>)> = t
        .notices
        .iter()
        .map(|n| (n.kind, n.host.as_deref(), n.minutes))
        .collect();
    assert_eq!(
        kinds,
        [(NoticeKind::DeadlineSoon, Some(LABEL), Some(5))],
        "busy: no idle notice; the deadline re-checked in the app's clock"
    );
    // The guard's decisions were fetched (and kept) on the way.
    assert!(!w
        .app
        .guard_decisions(LABEL, 10)
        .expect("decisions")
        .is_empty());
    assert!(w
        .app
        .second_guard_tick(&w.env, &cancel)
        .expect("tick")
        .notices
        .is_empty());

    // The host gone: its guard cannot be read, the tick says so and goes on.
    sshd.kill();
    let t = w.app.second_guard_tick(&w.env, &cancel).expect("tick");
    assert_eq!(t.unreadable.len(), 1, "{t:?}");
    assert_eq!(t.unreadable[0].0, LABEL);
    assert!(t.notices.is_empty(), "{t:?}");
    drop(stop_guard);
}

/// The guard outlives every connection by design: stop the one this test started.
struct StopGuard(std::path::PathBuf);

impl Drop for StopGuard {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.0.join("pid")) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
    }
}
