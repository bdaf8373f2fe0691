//! `gpurent cost` over provider machines, as a black box: a machine rented from the fake Vast cloud
//! through Prism's validating proxy for the Vast spec (every request and answer checked), costed
//! from the ledger's timestamps with Vast's rules, with Vast's own rate (`dph_total`) beside
//! gpurent's (`differs` when the fake changes it) and the account balance with "runs out in".

mod cli_common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use cli_common::json;
use gpurent_testhost::fakecloud::{FakeCloud, Flavor};
use gpurent_testhost::{prism_available, Prism, UserKey};

const API_KEY: &str = "fake-vast-key-123";

fn gpurent(prism: &Prism, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home.join("data"))
        .args(args)
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("GPURENT_RUNPOD_API_KEY")
        .env_remove("GPURENT_LAMBDA_API_KEY")
        .env_remove("GPURENT_TEST_CRASH_AT")
        .env("HOME", home)
        .env("GPURENT_VAST_API_KEY", API_KEY)
        .env("GPURENT_VAST_API_URL", prism.url())
        // 30 s: no request here is meant to time out (a loaded machine could reach 4 s).
        .env("GPURENT_HTTP_TIMEOUT_S", "30")
        .stdin(Stdio::null())
        .output()
        .expect("run gpurent")
}

/// Run gpurent on a pseudo-terminal (`script -qec`), typing `input`; `None` without `script`.
fn on_a_tty(prism: &Prism, home: &Path, args: &[&str], input: &str) -> Option<Output> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED the terminal part: no util-linux `script`");
        return None;
    }
    let q = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec![
        q(env!("CARGO_BIN_EXE_gpurent")),
        "--data-dir".into(),
        q(&home.join("data").display().to_string()),
    ];
    line.extend(args.iter().map(|a| q(a)));
    let mut child = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("GPURENT_RUNPOD_API_KEY")
        .env_remove("GPURENT_LAMBDA_API_KEY")
        .env("HOME", home)
        .env("GPURENT_VAST_API_KEY", API_KEY)
        .env("GPURENT_VAST_API_URL", prism.url())
        // 30 s: no request here is meant to time out (a loaded machine could reach 4 s).
        .env("GPURENT_HTTP_TIMEOUT_S", "30")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        std::thread::sleep(Duration::from_millis(1500));
        stdin.write_all(input.as_bytes()).expect("type");
    }
    Some(child.wait_with_output().expect("wait"))
}

fn machine(report: &serde_json::Value) -> serde_json::Value {
    let ms = report["machines"].as_array().expect("machines");
    assert_eq!(ms.len(), 1, "{report}");
    ms[0].clone()
}

#[test]
fn vast_machine_cost_beside_the_providers_rate_and_balance() {
    if !prism_available() {
        return;
    }
    let fake = FakeCloud::start(Flavor::Vast, API_KEY).expect("fake");
    fake.set_provisioning(Duration::from_millis(100));
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../gpurent-core/tests/provider-specs/vastai.openapi.yaml");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism");
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let key = UserKey::generate("cost-test").expect("key");
    let key_file = h.join("id_ed25519");
    std::fs::write(&key_file, &key.private_pem).expect("key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(h.join("id_ed25519.pub"), format!("{}\n", key.public_line)).expect("pub");

    let offer = fake.offer_id();
    let out = gpurent(
        &prism,
        h,
        &[
            "rent",
            "--provider",
            "vast",
            "--offer",
            &offer,
            "-i",
            key_file.to_str().expect("utf8"),
            "--no-wait",
            "--yes",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let id = json(&out)["instance"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    std::thread::sleep(Duration::from_millis(300));

    // Running: the offer's dph_total $0.35/h, which includes 50 GB × $0.15/GB-month (compute is
    // dph_base, the rest): storage is not counted twice; Vast says 0.35.
    let storage_h = 50.0 * 0.15 / 720.0;
    let out = gpurent(&prism, h, &["cost", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let r = json(&out);
    assert_eq!(r["live"], true);
    let m = machine(&r);
    assert_eq!(m["kind"], "provider");
    assert_eq!(m["instance"], id.as_str());
    assert_eq!(m["provider"], "vast");
    assert_eq!(m["ledger_state"], "running", "{m}");
    assert_eq!(m["state"], "running");
    assert_eq!(m["rule"], "per-second");
    let now = m["usd_per_hour_now"].as_f64().expect("now");
    assert!((now - 0.35).abs() < 1e-9, "{m}");
    assert!(
        m["so_far"]["total_usd"].as_f64().expect("so far") > 0.0,
        "{m}"
    );
    assert_eq!(m["reported"]["usd_per_hour"], 0.35, "{m}");
    assert_eq!(m["reported"]["differs"], false, "{m}");
    let b = &r["balances"][0];
    assert_eq!(b["provider"], "vast", "{r}");
    assert_eq!(b["balance_usd"], 10.0);
    let runs_out = b["runs_out_in_h"].as_f64().expect("runs out");
    assert!((runs_out - 10.0 / 0.35).abs() < 1e-6, "{b}");

    // The provider's own number changes: it is shown beside gpurent's, marked as differing.
    fake.set_reported_price(Some(0.50));
    fake.set_balance(1.0);
    let out = gpurent(&prism, h, &["cost", &id, "--by", "2h", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let m = json(&out);
    assert_eq!(m["reported"]["usd_per_hour"], 0.5, "{m}");
    assert_eq!(m["reported"]["differs"], true, "{m}");
    let so_far = m["so_far"]["total_usd"].as_f64().expect("so far");
    let projected = m["projected"]["total_usd"].as_f64().expect("projected");
    assert!(
        (projected - so_far - 2.0 * 0.35).abs() < 1e-3,
        "2 h more at the running rate: {m}"
    );

    // Stopped: compute stops, storage goes on; the balance lasts at the storage rate.
    let out = gpurent(&prism, h, &["stop", &id, "--yes", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let out = gpurent(&prism, h, &["cost", "--json"]);
    let r = json(&out);
    let m = machine(&r);
    assert_eq!(m["ledger_state"], "stopped", "{m}");
    let now = m["usd_per_hour_now"].as_f64().expect("now");
    assert!((now - storage_h).abs() < 1e-9, "{m}");
    assert_eq!(m["reported"]["differs"], serde_json::Value::Null, "{m}");
    let runs_out = r["balances"][0]["runs_out_in_h"].as_f64().expect("h");
    assert!((runs_out - 1.0 / storage_h).abs() < 1e-6, "{r}");

    // Offline: the ledger only, no provider asked.
    let before = fake.requests().len();
    let out = gpurent(&prism, h, &["cost", "--offline", "--json"]);
    let r = json(&out);
    assert_eq!(fake.requests().len(), before, "offline asks nobody");
    assert_eq!(r["live"], false);
    assert_eq!(machine(&r)["reported"], serde_json::Value::Null);

    // The release checklist: the disk that goes, what stopping costs instead (Vast keeps
    // billing the disk: 50 GB × $0.15), no saved host yet (not waited for) so nothing to read.
    let out = gpurent(&prism, h, &["release", &id, "--checklist", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let c = &json(&out)["checklist"];
    assert_eq!(c["instance"], id.as_str(), "{c}");
    assert_eq!(c["disks"][0]["kind"], "instance_disk");
    assert_eq!(c["disks"][0]["size_gb"], 50);
    let month = c["stop_instead"]["usd_per_month"].as_f64().expect("month");
    assert!((month - 7.5).abs() < 1e-9, "{c}");
    assert_eq!(c["stop_instead"]["keeps_disk"], true);
    assert!(
        c["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .any(|n| n == "no_host"),
        "{c}"
    );
    assert_eq!(
        fake.instances()[0].state,
        gpurent_testhost::fakecloud::FakeState::Stopped
    );
    let out = gpurent(
        &prism,
        h,
        &["release", "gpurent-nope", "--checklist", "--json"],
    );
    assert_eq!(json(&out)["error"]["code"], "unknown_instance", "{out:?}");

    // On a terminal, `release` prints the checklist and asks; "n" sends nothing. (`script`
    // gives the command a pty; skipped where util-linux's script is missing.)
    if let Some(out) = on_a_tty(&prism, h, &["release", &id], "n\n") {
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(text.contains("Before releasing"), "{text}");
        assert!(
            text.contains("deleted: the instance disk (50 GB)"),
            "{text}"
        );
        assert!(
            text.contains("stopping instead keeps the disk for about $7.50 a month"),
            "{text}"
        );
        assert!(text.contains("Not released."), "{text}");
        assert_eq!(
            fake.instances()[0].state,
            gpurent_testhost::fakecloud::FakeState::Stopped
        );
    }

    // Released: gone from the list, kept with --closed at its final cost.
    let out = gpurent(&prism, h, &["release", &id, "--yes", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["instance"]["state"], "terminated", "{v}");
    assert_eq!(v["checklist"]["disks"][0]["kind"], "instance_disk", "{v}");
    let r = json(&gpurent(&prism, h, &["cost", "--json"]));
    assert_eq!(r["machines"].as_array().map(Vec::len), Some(0), "{r}");
    let r = json(&gpurent(
        &prism,
        h,
        &["cost", "--closed", "--offline", "--json"],
    ));
    let m = machine(&r);
    assert_eq!(m["state"], "terminated");
    assert_eq!(m["usd_per_hour_now"], 0.0);

    prism.assert_spec_kept("Vast");
}
