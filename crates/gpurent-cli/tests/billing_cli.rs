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

    // A new price on the stopped machine does not start it (it bills from the next start, the
    // stop keeps its time); `rate started` does.
    let stopped_ms =
        json(&gpurent(home.path(), &["rate", "show", "box", "--json"]))["stopped_ms"].clone();
    let out = gpurent(
        home.path(),
        &[
            "rate",
            "set",
            "box",
            "$3/h",
            "--storage-per-day",
            "0.48",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["stopped_ms"], stopped_ms, "{v}");
    assert_eq!(v["rate"]["per_hour"], 3.0, "{v}");
    let out = gpurent(home.path(), &["rate", "show", "box"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("stopped") && text.contains("gpurent rate started box"),
        "{text}"
    );
    let v = json(&gpurent(home.path(), &["cost", "--host", "box", "--json"]));
    assert_eq!(v["state"], "stopped", "{v}");
    assert!(
        (v["per_hour_now"].as_f64().expect("rate") - 0.02).abs() < 1e-9,
        "{v}"
    );
    let out = gpurent(home.path(), &["rate", "started", "box", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert!(json(&out)["stopped_ms"].is_null());
    let v = json(&gpurent(home.path(), &["cost", "--host", "box", "--json"]));
    assert_eq!(v["state"], "running", "{v}");
    assert!(
        (v["per_hour_now"].as_f64().expect("rate") - 3.02).abs() < 1e-9,
        "{v}"
    );
    let out = gpurent(home.path(), &["rate", "started", "box", "--json"]);
    assert!(out.status.success(), "already running: {out:?}");

    let out = gpurent(home.path(), &["cost", "--host", "nowhere", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// Money in two currencies: the default currency from `gpurent settings`, a rate in yuan typed as
/// `¥2.5/h` or with `--currency`, one in dollars as `$0.4/h`; `cost` gives one total per currency
/// (the `usd` totals stay USD only) and a budget in CNY counts only the CNY host.
#[test]
fn rates_and_budgets_in_two_currencies() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let home = tempfile::tempdir().expect("tmp");
    let paste = format!("ssh -p {} gputest@127.0.0.1", sshd.port());
    let fp = sshd.host_key_fingerprint().expect("fp");
    for label in ["cn", "us"] {
        let out = gpurent(
            home.path(),
            &[
                "host", "add", &paste, "--label", label, "--trust", &fp, "--json",
            ],
        );
        assert!(out.status.success(), "{out:?}");
    }
    let out = gpurent(
        home.path(),
        &["settings", "set", "--currency", "CNY", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["effective_currency"], "CNY");
    let out = gpurent(home.path(), &["settings", "set", "--currency", "EUR"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    // No sign: the settings' currency.
    let out = gpurent(
        home.path(),
        &["rate", "set", "cn", "2.5", "--started-ago", "2h", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["rate"]["currency"], "CNY");
    let out = gpurent(
        home.path(),
        &["rate", "set", "cn", "¥2.5/h", "--currency", "USD", "--json"],
    );
    assert_eq!(out.status.code(), Some(2), "two currencies: {out:?}");
    let out = gpurent(
        home.path(),
        &[
            "rate",
            "set",
            "us",
            "$0.4/h",
            "--started-ago",
            "2h",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["rate"]["currency"], "USD");
    // The platform it was rented on: AutoDL's rules (rounding not known: the default rule).
    let out = gpurent(
        home.path(),
        &[
            "rate",
            "set",
            "cn",
            "2.5",
            "--platform",
            "autodl",
            "--started-ago",
            "2h",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["rate"]["platform"], "autodl");
    assert_eq!(v["rate"]["rule"], "second");
    let out = gpurent(
        home.path(),
        &["rate", "set", "cn", "2.5", "--platform", "aws", "--json"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = gpurent(home.path(), &["rate", "platforms", "--json"]);
    let v = json(&out);
    let autodl = &v["platforms"][0];
    assert_eq!(autodl["platform"], "autodl");
    assert_eq!(autodl["release_after_days_off"], 15);
    assert!(autodl["increment"].is_null());
    assert_eq!(autodl["no_gpu_cny_per_hour"], 0.1);
    let out = gpurent(home.path(), &["rate", "platforms"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no-GPU mode ¥0.10/h (console)"),
        "{out:?}"
    );
    let out = gpurent(home.path(), &["rate", "show", "cn"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("¥2.5/h per-second on autodl"),
        "{out:?}"
    );

    let out = gpurent(home.path(), &["cost", "--offline", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    let totals = v["totals"].as_array().expect("totals");
    assert_eq!(totals.len(), 2, "{v}");
    assert_eq!(totals[0]["currency"], "CNY");
    assert!(
        (totals[0]["so_far"].as_f64().expect("cny") - 5.0).abs() < 0.01,
        "{v}"
    );
    assert_eq!(totals[1]["currency"], "USD");
    assert!(
        (totals[1]["so_far"].as_f64().expect("usd") - 0.8).abs() < 0.01,
        "{v}"
    );
    assert!(
        (v["total_so_far_usd"].as_f64().expect("usd") - 0.8).abs() < 0.01,
        "USD only"
    );
    let out = gpurent(home.path(), &["cost", "--offline"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Total in CNY: ¥") && text.contains("Total in USD: $"),
        "{text}"
    );

    // A budget with no currency named: the settings' (CNY); it counts only the CNY host. The
    // test may straddle UTC midnight: spent is at most the 2 h so far.
    let out = gpurent(
        home.path(),
        &[
            "budget", "set", "--per", "month", "--amount", "100", "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["currency"], "CNY");
    let out = gpurent(
        home.path(),
        &[
            "budget", "set", "--host", "us", "--per", "month", "--usd", "1", "--json",
        ],
    );
    assert_eq!(json(&out)["currency"], "USD");
    let out = gpurent(home.path(), &["budget", "status", "--json"]);
    let v = json(&out);
    for b in v["budgets"].as_array().expect("budgets") {
        let spent = b["spent_usd"].as_f64().expect("spent");
        match b["budget"]["currency"].as_str() {
            Some("CNY") => assert!(spent <= 5.01, "the USD host is not counted: {b}"),
            Some("USD") => assert!(spent <= 0.81, "{b}"),
            other => panic!("{other:?}"),
        }
    }
}
