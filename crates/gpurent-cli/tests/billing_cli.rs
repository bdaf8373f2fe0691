//! `gpurent rate` and `gpurent cost` as a black box: a pasted host saved against a real loopback
//! sshd, its rate set with the guides' per-started-hour rule, cost so far / per hour / projected.

mod cli_common;

use cli_common::{gpurent, json};
use gpurent_testhost::{sshd_available, Sshd};

fn compute(v: &serde_json::Value) -> f64 {
    v["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .find(|l| l["meter"] == "compute")
        .and_then(|l| l["usd"].as_f64())
        .expect("compute line")
}

#[test]
fn rate_and_cost_of_a_pasted_host() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let home = tempfile::tempdir().expect("tmp");
    let paste = format!("ssh -p {} gputest@127.0.0.1", sshd.port());
    let fp = sshd.host_key_fingerprint().expect("fp");
    let out = gpurent(
        home.path(),
        &[
            "host", "add", &paste, "--label", "box", "--trust", &fp, "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");

    let out = gpurent(
        home.path(),
        &[
            "rate",
            "set",
            "box",
            "--usd-per-hour",
            "2",
            "--rule",
            "per-hourly",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "bad rule is bad input: {out:?}");
    assert_eq!(json(&out)["error"]["code"], "invalid_input");

    let out = gpurent(
        home.path(),
        &[
            "rate",
            "set",
            "box",
            "--usd-per-hour",
            "2",
            "--rule",
            "per-hour-rounded-up",
            "--storage-usd-per-day",
            "0.48",
            "--started-ago",
            "70m",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["host"], "box");
    assert_eq!(v["rate"]["rule"], "hour");

    // 1 h 10 min at $2 per started hour: $4 so far; by 2 h from now (3 h 10 min): $8.
    let out = gpurent(
        home.path(),
        &["cost", "--host", "box", "--by", "2h", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["state"], "running");
    assert_eq!(compute(&v["so_far"]), 4.0);
    assert_eq!(compute(&v["projected"]), 8.0);
    assert!((v["usd_per_hour_now"].as_f64().expect("rate") - 2.02).abs() < 1e-9);

    // A daily budget for this host: $4.02 spent today at most (it started 70 min ago; the test
    // may straddle UTC midnight, so only the shape and the level's range are checked).
    let out = gpurent(
        home.path(),
        &[
            "budget", "set", "--host", "box", "--per", "day", "--usd", "5", "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["period"], "day");
    let out = gpurent(home.path(), &["budget", "status", "--json"]);
    let v = json(&out);
    let b = &v["budgets"][0];
    assert_eq!(b["budget"]["host"], "box");
    let spent = b["spent_usd"].as_f64().expect("spent");
    assert!(spent > 0.0 && spent <= 4.03, "{b}");
    assert!(
        ["ok", "warn"].contains(&b["level"].as_str().expect("level")),
        "{b}"
    );
    let out = gpurent(
        home.path(),
        &["budget", "set", "--per", "week", "--usd", "5", "--json"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    let out = gpurent(home.path(), &["rate", "stopped", "box", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let out = gpurent(home.path(), &["cost", "--json"]);
    let v = json(&out);
    assert_eq!(v["machines"][0]["state"], "stopped");
    assert!((v["total_usd_per_hour_now"].as_f64().expect("rate") - 0.02).abs() < 1e-9);
    assert!(v["total_projected_usd"].is_null());

    let out = gpurent(home.path(), &["cost", "--host", "nowhere", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
