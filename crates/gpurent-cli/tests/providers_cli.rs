//! `gpurent offers|rent|instances|stop|start|release` as a black box against the fake cloud
//! (gpurent-testhost), reached through Prism's validating proxy for the RunPod spec — so every
//! request and every answer is checked against the published spec — with machines that are the
//! test's real loopback sshd. The crash test SIGKILLs `gpurent rent` at every named point (and
//! once by timing, between "create sent" and "answer read") and counts orphans and double creates.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Fault, Flavor, Route, SshTarget};
use gpurent_testhost::{
    prism_available, sshd_available, Prism, Sshd, SshdOptions, UserKey, TEST_PASSWORD,
};

const API_KEY: &str = "fake-runpod-key-123";

/// The crash points `gpurent-core` names, in the order `rent` passes them.
use gpurent_core::providers::crash::RENT_POINTS as POINTS;

struct Rig {
    /// `RUNPOD`, `VAST`, `LAMBDA`.
    stem: &'static str,
    provider: &'static str,
    sshd: Sshd,
    fake: FakeCloud,
    prism: Prism,
    key_file: PathBuf,
    public_line: String,
    _keys: tempfile::TempDir,
}

fn rig() -> Option<Rig> {
    rig_for(Flavor::Runpod)
}

fn rig_for(flavor: Flavor) -> Option<Rig> {
    rig_with(flavor, true)
}

/// `authorized`: the key is on the machine already; otherwise only a password login works
/// (AutoDL hands out a root password: the sshd takes the test user's password).
fn rig_with(flavor: Flavor, authorized: bool) -> Option<Rig> {
    if !sshd_available() || !prism_available() {
        return None;
    }
    let sshd = Sshd::start_with(SshdOptions {
        password_auth: !authorized,
        ..Default::default()
    })
    .expect("sshd");
    let key = UserKey::generate("gpurent-rent-test").expect("key");
    if authorized {
        sshd.authorize(&key.public_line).expect("authorize");
    }
    let keys = tempfile::tempdir().expect("tmp");
    let key_file = keys.path().join("id_ed25519");
    std::fs::write(&key_file, &key.private_pem).expect("write key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(
        keys.path().join("id_ed25519.pub"),
        format!("{}\n", key.public_line),
    )
    .expect("pub");
    let fake = FakeCloud::start(flavor, API_KEY).expect("fake cloud");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    let (stem, provider, file) = match flavor {
        Flavor::Runpod => ("RUNPOD", "runpod", "runpod-rest-v2.openapi.json"),
        Flavor::Vast => ("VAST", "vast", "vastai.openapi.yaml"),
        Flavor::Lambda => ("LAMBDA", "lambda", "lambda-cloud-v1.6.0.openapi.json"),
        Flavor::Autodl => ("AUTODL", "autodl", "autodl-pro.openapi.yaml"),
    };
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../gpurent-core/tests/provider-specs")
        .join(file);
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    Some(Rig {
        stem,
        provider,
        sshd,
        fake,
        prism,
        key_file,
        public_line: key.public_line,
        _keys: keys,
    })
}

fn cmd(rig: &Rig, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpurent"));
    c.arg("--data-dir")
        .arg(home.join("data"))
        .args(args)
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("GPURENT_RUNPOD_API_KEY")
        .env_remove("GPURENT_VAST_API_KEY")
        .env_remove("GPURENT_LAMBDA_API_KEY")
        .env_remove("GPURENT_AUTODL_API_KEY")
        .env_remove("GPURENT_TEST_CRASH_AT")
        .env("HOME", home)
        .env(format!("GPURENT_{}_API_KEY", rig.stem), API_KEY)
        .env(format!("GPURENT_{}_API_URL", rig.stem), rig.prism.url())
        // Vast and Lambda do not report the login user (root / ubuntu), Lambda not the port.
        .env(format!("GPURENT_{}_SSH_USER", rig.stem), rig.sshd.user())
        .env(
            format!("GPURENT_{}_SSH_PORT", rig.stem),
            rig.sshd.port().to_string(),
        )
        // 30 s: a loaded machine could take 4 s through Prism to answer a create, which is never
        // resent. The one test of a create whose answer never comes sets 4 s (below).
        .env("GPURENT_HTTP_TIMEOUT_S", "30")
        .stdin(Stdio::null());
    c
}

fn gpurent(rig: &Rig, home: &Path, args: &[&str]) -> Output {
    cmd(rig, home, args).output().expect("run gpurent")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn rent_args<'a>(rig: &'a Rig, offer: &'a str) -> Vec<&'a str> {
    vec![
        "rent",
        "--provider",
        rig.provider,
        "--offer",
        offer,
        "-i",
        rig.key_file.to_str().expect("utf8"),
        "--ready-timeout",
        "60",
        "--yes",
        "--json",
    ]
}

fn assert_spec_clean(rig: &Rig) {
    rig.prism.assert_spec_kept("RunPod");
}

#[test]
fn offers_rent_ready_stop_start_release_through_the_spec() {
    let Some(rig) = rig() else { return };
    let home = tempfile::tempdir().expect("home");
    let h = home.path();

    let out = gpurent(&rig, h, &["offers", "--gpu", "4090", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let offers = json(&out);
    let offer = &offers["offers"][0];
    assert_eq!(offer["provider"], "runpod");
    assert_eq!(offer["offer_id"], rig.fake.offer_id().as_str());
    assert_eq!(offer["price_per_hour_usd"], 0.44);
    assert_eq!(offer["host_cuda"], "12.8");
    // An RTX 4090 (sm_89) on a CUDA 12.8 host runs a published PyTorch wheel.
    assert_eq!(offer["runs_pytorch"], true, "{offer}");
    assert!(
        offer["best_torch"]
            .as_str()
            .is_some_and(|t| t.contains("+cu")),
        "{offer}"
    );
    let none = json(&gpurent(
        &rig,
        h,
        &["offers", "--max-price", "0.1", "--json"],
    ));
    assert_eq!(none["offers"].as_array().map(Vec::len), Some(0));

    let offer_id = rig.fake.offer_id();
    let out = gpurent(&rig, h, &rent_args(&rig, &offer_id));
    assert!(
        out.status.success(),
        "rent: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let inst = json(&out)["instance"].clone();
    let id = inst["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("gpurent-"), "{inst}");
    assert_eq!(inst["state"], "running");
    assert_eq!(inst["ready"], true);
    assert_eq!(inst["host_label"], id.as_str());
    // The label went into the provider's name field, and the key into the pod.
    let fake = rig.fake.instances();
    assert_eq!(fake.len(), 1);
    assert_eq!(fake[0].label, id);
    assert!(fake[0].keys.iter().any(|k| k == &rig.public_line));
    // Every state change is timestamped, starting with the intent written before the create.
    let states: Vec<&str> = inst["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["state"].as_str().expect("s"))
        .collect();
    assert_eq!(states.first(), Some(&"intent"), "{states:?}");
    assert!(
        states.contains(&"provisioning") && states.contains(&"running"),
        "{states:?}"
    );
    // The ready machine is a saved host pinned to its host key.
    let hosts = json(&gpurent(&rig, h, &["host", "list", "--json"]));
    let host = hosts["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .find(|x| x["label"] == id.as_str())
        .cloned()
        .expect("host saved");
    assert!(host["host_keys"][0]["fingerprint"]
        .as_str()
        .expect("fp")
        .starts_with("SHA256:"));

    // Money actions need --yes; without it nothing is sent.
    let out = gpurent(&rig, h, &["release", &id, "--json"]);
    assert_eq!(json(&out)["error"]["code"], "confirmation_required");
    assert_eq!(
        rig.fake.instances()[0].state,
        gpurent_testhost::fakecloud::FakeState::Running
    );

    let out = gpurent(&rig, h, &["stop", &id, "--yes", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["instance"]["state"], "stopped");
    let out = gpurent(&rig, h, &["start", &id, "--yes", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert!(["provisioning", "running"]
        .contains(&json(&out)["instance"]["state"].as_str().expect("state")));
    let out = gpurent(&rig, h, &["release", &id, "--yes", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["instance"]["state"], "terminated");
    assert!(json(&out)["instance"]["closed_ms"].is_i64());

    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    assert_eq!(list["instances"][0]["state"], "terminated");
    assert_eq!(list["foreign"].as_array().map(Vec::len), Some(0));

    // Its saved host is marked released and is never connected to again (that address may be
    // another customer's machine now); forgetting it works.
    let hosts = json(&gpurent(&rig, h, &["host", "list", "--json"]));
    assert_eq!(
        hosts["hosts"][0]["released_ms"],
        list["instances"][0]["closed_ms"]
    );
    let out = gpurent(&rig, h, &["host", "check", &id, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "host_released");
    let out = gpurent(&rig, h, &["host", "list"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("released"),
        "{out:?}"
    );
    let out = gpurent(&rig, h, &["host", "delete", &id, "--json"]);
    assert_eq!(json(&out)["deleted"], id.as_str());

    // `offers --count N` lists machines of exactly N GPUs (the fake's secure cloud has 1–8).
    let two = json(&gpurent(&rig, h, &["offers", "--count", "2", "--json"]));
    let two = two["offers"].as_array().expect("offers");
    assert!(!two.is_empty());
    assert!(two.iter().all(|o| o["gpu_count"] == 2), "{two:?}");

    // A machine started in the provider's console: listed as billing, released by its provider
    // id from the CLI after a yes, done only when the provider no longer shows it.
    let pid = rig.fake.add_console_machine("my-console-pod");
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    let foreign = list["foreign"].as_array().expect("foreign");
    assert_eq!(foreign.len(), 1, "{list}");
    assert_eq!(foreign[0]["instance"]["id"], pid.as_str());
    assert_eq!(foreign[0]["billing"], true);
    let out = gpurent(&rig, h, &["release", &pid, "--json"]);
    assert_eq!(
        json(&out)["error"]["code"],
        "confirmation_required",
        "{out:?}"
    );
    assert!(rig
        .fake
        .instances()
        .iter()
        .any(|i| i.id == pid && i.state == FakeState::Running));
    let out = gpurent(&rig, h, &["release", &pid, "--yes", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let done = json(&out);
    assert_eq!(
        done["foreign"]["provider_instance_id"],
        pid.as_str(),
        "{done}"
    );
    assert!(rig
        .fake
        .instances()
        .iter()
        .any(|i| i.id == pid && i.state == FakeState::Terminated));

    assert_eq!(rig.fake.creates_total(), 1);
    assert_spec_clean(&rig);
}

#[test]
fn provider_faults_become_typed_outcomes() {
    let Some(rig) = rig() else { return };
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let offer_id = rig.fake.offer_id();
    let rent = rent_args(&rig, &offer_id);
    let mut no_wait = rent.clone();
    no_wait.push("--no-wait");

    // Reads are retried: a 429 with Retry-After, a 429 without, a 503.
    rig.fake.push_fault(
        Route::Offers,
        Fault::RateLimited {
            retry_after_s: Some(1),
        },
    );
    rig.fake.push_fault(
        Route::Offers,
        Fault::RateLimited {
            retry_after_s: None,
        },
    );
    rig.fake.push_fault(Route::Offers, Fault::ServerError(503));
    let started = Instant::now();
    let out = gpurent(&rig, h, &["offers", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );

    // A create is never retried: capacity, balance and 429 on create are clear refusals, each
    // sent once; a 500 may have made the machine (below).
    for (fault, code) in [
        (Fault::NoCapacity, "insufficient_capacity"),
        (Fault::ZeroBalance, "insufficient_balance"),
        (
            Fault::RateLimited {
                retry_after_s: Some(30),
            },
            "rate_limited",
        ),
    ] {
        let before = rig
            .fake
            .requests()
            .iter()
            .filter(|r| r.as_str() == "POST /v2/pods")
            .count();
        rig.fake.push_fault(Route::Create, fault);
        let out = gpurent(&rig, h, &no_wait);
        assert_eq!(json(&out)["error"]["code"], code, "{out:?}");
        let after = rig
            .fake
            .requests()
            .iter()
            .filter(|r| r.as_str() == "POST /v2/pods")
            .count();
        assert_eq!(
            after - before,
            1,
            "{code}: the create was sent exactly once"
        );
    }
    assert_eq!(rig.fake.creates_total(), 0);
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    let states: Vec<&str> = list["instances"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["state"].as_str().expect("s"))
        .collect();
    assert_eq!(states, vec!["create_failed"; 3], "{list}");

    // A 500 to a create is not "nothing was made": create_outcome_unknown, the row stays open,
    // and the next rent straight after sends no create while it cannot tell.
    let creates_sent = |rig: &Rig| {
        rig.fake
            .requests()
            .iter()
            .filter(|r| r.as_str() == "POST /v2/pods")
            .count()
    };
    let before = creates_sent(&rig);
    rig.fake.push_fault(Route::Create, Fault::ServerError(500));
    let out = gpurent(&rig, h, &no_wait);
    assert_eq!(
        json(&out)["error"]["code"],
        "create_outcome_unknown",
        "{out:?}"
    );
    let out = gpurent(&rig, h, &no_wait);
    assert_eq!(
        json(&out)["error"]["code"],
        "create_outcome_unknown",
        "{out:?}"
    );
    assert_eq!(
        creates_sent(&rig) - before,
        1,
        "the retry sent no second create"
    );
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    let unclear: Vec<&serde_json::Value> = list["instances"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["state"] == "unknown")
        .collect();
    assert_eq!(unclear.len(), 1, "{list}");
    assert!(unclear[0]["closed_ms"].is_null(), "{list}");
    // Not listed 15 s later (the wait the next rent gives the listing): a rent may go ahead.
    std::thread::sleep(Duration::from_secs(16));

    // A create whose answer never comes: outcome unknown, not resent, found by its label. The
    // answer comes after 8 s, the client gives up at 4 s.
    rig.fake.set_create_delay(Duration::from_secs(8));
    let out = cmd(&rig, h, &no_wait)
        .env("GPURENT_HTTP_TIMEOUT_S", "4")
        .output()
        .expect("run gpurent");
    assert_eq!(
        json(&out)["error"]["code"],
        "create_outcome_unknown",
        "{out:?}"
    );
    rig.fake.set_create_delay(Duration::ZERO);
    std::thread::sleep(Duration::from_secs(5));
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    assert_eq!(rig.fake.creates_total(), 1);
    let adopted = list["instances"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["provider_instance_id"].is_string())
        .count();
    assert_eq!(adopted, 1, "{list}");
    // The next rent says the earlier one made a machine, with its id and price, and creates
    // nothing more.
    let out = gpurent(&rig, h, &no_wait);
    let e = &json(&out)["error"];
    assert_eq!(e["code"], "earlier_create_found", "{out:?}");
    assert_eq!(rig.fake.creates_total(), 1, "one rent, one machine");

    // A listing that cannot be read is reported, and the ledger is left alone.
    rig.fake.push_fault(Route::List, Fault::ServerError(500));
    rig.fake.push_fault(Route::List, Fault::ServerError(500));
    rig.fake.push_fault(Route::List, Fault::ServerError(500));
    rig.fake.push_fault(Route::List, Fault::ServerError(500));
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    assert_eq!(
        list["reconcile"]["failed_accounts"][0]["code"], "provider_outage",
        "{list}"
    );
    assert_eq!(list["instances"].as_array().map(Vec::len), Some(5));

    // A machine that does not become ready in time still bills: not_ready, the release command
    // is printed, the ledger keeps it open, and release ends it.
    rig.fake.set_provisioning(Duration::from_secs(120));
    let slow: Vec<&str> = rent
        .iter()
        .map(|a| if *a == "60" { "2" } else { *a })
        .collect();
    let out = gpurent(&rig, h, &slow);
    assert_eq!(json(&out)["error"]["code"], "not_ready", "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(stderr.contains("gpurent release gpurent-"), "{stderr}");
    let stuck = stderr
        .split_whitespace()
        .find(|w| w.starts_with("gpurent-") && w.len() == 20)
        .expect("id in the hint")
        .to_string();
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    let row = list["instances"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["id"] == stuck.as_str())
        .cloned()
        .expect("row");
    assert_eq!(row["state"], "provisioning", "{row}");
    let out = gpurent(&rig, h, &["release", &stuck, "--yes", "--json"]);
    assert_eq!(json(&out)["instance"]["state"], "terminated", "{out:?}");
    rig.fake.set_provisioning(Duration::from_millis(300));

    // A wrong key is auth_rejected.
    let mut c = cmd(&rig, h, &["offers", "--json"]);
    c.env("GPURENT_RUNPOD_API_KEY", "wrong");
    let out = c.output().expect("run");
    assert_eq!(
        json(&out)["failed_accounts"][0]["code"],
        "auth_rejected",
        "{out:?}"
    );
    assert_spec_clean(&rig);
}

#[test]
fn killed_rent_at_any_point_leaves_no_orphan_and_no_double_create() {
    let Some(rig) = rig() else { return };
    let offer_id = rig.fake.offer_id();
    let mut orphans = 0;
    let mut doubles = 0;
    let mut killed = 0;
    let mut seen_fake: usize = 0;
    let mut report = vec![];
    let homes: Vec<tempfile::TempDir> = (0..=POINTS.len())
        .map(|_| tempfile::tempdir().expect("home"))
        .collect();
    for (i, point) in POINTS
        .iter()
        .copied()
        .chain(["create_in_flight"])
        .enumerate()
    {
        let h = homes[i].path();
        let args = rent_args(&rig, &offer_id);
        let status = if point == "create_in_flight" {
            // Kill by timing: the create has reached the cloud, its answer has not come back.
            rig.fake.set_create_delay(Duration::from_secs(20));
            let before = rig.fake.creates_total();
            let mut child = cmd(&rig, h, &args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            let deadline = Instant::now() + Duration::from_secs(60);
            while rig.fake.creates_total() == before && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            child.kill().expect("SIGKILL");
            let st = child.wait().expect("wait");
            rig.fake.set_create_delay(Duration::ZERO);
            st
        } else {
            let mut c = cmd(&rig, h, &args);
            c.env("GPURENT_TEST_CRASH_AT", point);
            c.output().expect("run").status
        };
        assert_eq!(
            status.signal(),
            Some(9),
            "{point}: gpurent was killed there (status {status:?})"
        );
        killed += 1;

        // Restart: `gpurent instances` reconciles with the fake cloud.
        let out = gpurent(&rig, h, &["instances", "--json"]);
        assert!(out.status.success(), "{point}: {out:?}");
        let list = json(&out);
        let rows = list["instances"].as_array().expect("rows").clone();
        assert_eq!(rows.len(), 1, "{point}: one ledger row per rent: {list}");
        let label = rows[0]["id"].as_str().expect("id").to_string();
        let fake = rig.fake.instances();
        let new: Vec<_> = fake[seen_fake..].to_vec();
        seen_fake = fake.len();
        let by_label: HashMap<String, u32> = rig.fake.creates_by_label();
        let creates = by_label.get(&label).copied().unwrap_or(0);
        if creates > 1 {
            doubles += 1;
        }
        for n in &new {
            let known = rows
                .iter()
                .filter(|r| r["provider_instance_id"].as_str() == Some(n.id.as_str()))
                .count();
            if known != 1 {
                orphans += 1;
            }
        }
        let created = !new.is_empty();
        let expect_create = !matches!(
            point,
            "after_intent" | "after_key_registered" | "before_create"
        );
        assert_eq!(created, expect_create, "{point}: created={created} {list}");
        report.push(format!(
            "{point}: creates={creates} state={} provider_id={}",
            rows[0]["state"], rows[0]["provider_instance_id"]
        ));
    }
    eprintln!("crash points:\n  {}", report.join("\n  "));
    eprintln!("killed {killed} times: {orphans} orphans, {doubles} double creates");
    assert!(killed >= 10);
    assert_eq!((orphans, doubles), (0, 0));
    assert_spec_clean(&rig);
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                files_under(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

#[test]
fn provider_accounts_check_the_key_first_and_never_write_it() {
    let Some(rig) = rig() else { return };
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    // The environment's key is an account named after the provider, stored nowhere.
    let list = json(&gpurent(&rig, h, &["provider", "list", "--json"]));
    assert_eq!(list["accounts"][0]["name"], "runpod");
    assert_eq!(list["accounts"][0]["key_source"], "environment");
    let out = gpurent(&rig, h, &["provider", "test", "runpod", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["ok"], true);

    let add = |key: &str| {
        let mut c = cmd(
            &rig,
            h,
            &[
                "provider",
                "add",
                "runpod",
                "--key-stdin",
                "--name",
                "work",
                "--json",
            ],
        );
        c.env_remove("GPURENT_RUNPOD_API_KEY")
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/nonexistent/gpurent-test-bus",
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = c.spawn().expect("spawn");
        std::io::Write::write_all(
            &mut child.stdin.take().expect("stdin"),
            format!("{key}\n").as_bytes(),
        )
        .expect("write");
        child.wait_with_output().expect("wait")
    };
    // A key the provider rejects is never saved anywhere.
    assert_eq!(json(&add("not-the-key"))["error"]["code"], "auth_rejected");
    // An accepted key goes to the keychain only (none is reachable in this test).
    assert_eq!(json(&add(API_KEY))["error"]["code"], "keychain_unavailable");
    let out = gpurent(&rig, h, &["provider", "add", "runpod", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "no key on the command line: {out:?}"
    );

    // Rent and list with the key in the environment, then scan every file gpurent wrote.
    let offer = rig.fake.offer_id();
    let mut args = rent_args(&rig, &offer);
    args.push("--no-wait");
    assert!(gpurent(&rig, h, &args).status.success());
    assert!(gpurent(&rig, h, &["instances", "--json"]).status.success());
    let mut files = vec![];
    files_under(h, &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().ends_with(".sqlite3")),
        "the scan covers gpurent's database: {files:?}"
    );
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !bytes
                .windows(API_KEY.len())
                .any(|w| w == API_KEY.as_bytes()),
            "the API key was written to {}",
            f.display()
        );
    }
    assert_spec_clean(&rig);
}

#[test]
fn vast_and_lambda_journeys_through_their_specs() {
    for flavor in [Flavor::Vast, Flavor::Lambda] {
        let Some(rig) = rig_for(flavor) else { return };
        let home = tempfile::tempdir().expect("home");
        let h = home.path();
        let offers = json(&gpurent(&rig, h, &["offers", "--json"]));
        let offer = offers["offers"][0]["offer_id"]
            .as_str()
            .expect("offer")
            .to_string();
        assert_eq!(offer, rig.fake.offer_id());
        let out = gpurent(&rig, h, &rent_args(&rig, &offer));
        assert!(
            out.status.success(),
            "{}: {}\n{}",
            rig.provider,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let inst = json(&out)["instance"].clone();
        let id = inst["id"].as_str().expect("id").to_string();
        assert_eq!(
            (inst["ready"].as_bool(), inst["state"].as_str()),
            (Some(true), Some("running")),
            "{inst}"
        );
        let fake = rig.fake.instances();
        assert_eq!(fake.len(), 1);
        assert_eq!(
            fake[0].label, id,
            "{}: the label is in the name/label field",
            rig.provider
        );
        assert!(
            fake[0].keys.iter().any(|k| k == &rig.public_line),
            "{}: key attached / named",
            rig.provider
        );
        if flavor == Flavor::Vast {
            let out = gpurent(&rig, h, &["stop", &id, "--yes", "--json"]);
            assert_eq!(json(&out)["instance"]["state"], "stopped", "{out:?}");
            let out = gpurent(&rig, h, &["start", &id, "--yes", "--json"]);
            assert!(out.status.success(), "{out:?}");
        } else {
            let out = gpurent(&rig, h, &["stop", &id, "--yes", "--json"]);
            assert_eq!(json(&out)["error"]["code"], "action_unsupported", "{out:?}");
        }
        let out = gpurent(&rig, h, &["release", &id, "--yes", "--json"]);
        assert_eq!(
            json(&out)["instance"]["state"],
            "terminated",
            "{}: {out:?}",
            rig.provider
        );
        assert_eq!(rig.fake.creates_total(), 1);
        assert_spec_clean(&rig);
    }
}

#[test]
fn offers_and_rent_take_an_account_by_name() {
    let Some(rig) = rig() else { return };
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    // The environment's key is the account `runpod`.
    let out = gpurent(&rig, h, &["offers", "--account", "runpod", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let offers = json(&out)["offers"].as_array().expect("offers").clone();
    assert!(!offers.is_empty());
    // Each offer names the account that listed it (renting it from the app uses that account).
    assert!(
        offers.iter().all(|o| o["account"] == "runpod"),
        "{offers:?}"
    );
    let out = gpurent(&rig, h, &["offers", "--account", "nosuch", "--json"]);
    assert_eq!(json(&out)["error"]["code"], "unknown_account", "{out:?}");

    let offer = rig.fake.offer_id();
    let mut args = rent_args(&rig, &offer);
    args.extend(["--no-wait", "--account", "nosuch"]);
    let out = gpurent(&rig, h, &args);
    assert_eq!(json(&out)["error"]["code"], "unknown_account", "{out:?}");
    assert_eq!(
        rig.fake.creates_total(),
        0,
        "nothing is created for an unknown account"
    );
    let mut args = rent_args(&rig, &offer);
    args.extend(["--no-wait", "--account", "runpod"]);
    let out = gpurent(&rig, h, &args);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json(&out)["instance"]["account"], "runpod");
    assert_eq!(rig.fake.creates_total(), 1);
    assert_spec_clean(&rig);
}

/// Defect: `rent` spent money without a confirm. Off a terminal it now needs `--yes`: without it
/// the price is stated, `confirmation_required` comes back and nothing is created; a
/// `--max-price` under the offer's price is refused with `price_rose`, nothing created.
#[test]
fn rent_states_the_price_and_needs_yes_off_a_terminal() {
    let Some(rig) = rig() else { return };
    let tmp = tempfile::tempdir().expect("tmp");
    let offer = rig.fake.offer_id();
    let mut args = rent_args(&rig, &offer);
    args.retain(|a| *a != "--yes" && *a != "--json");
    let out = gpurent(&rig, tmp.path(), &args);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/h") && err.contains("--yes"), "{err}");
    assert_eq!(rig.fake.creates_total(), 0, "created without a yes");
    let mut args = rent_args(&rig, &offer);
    args.extend(["--max-price", "0.01"]);
    let out = gpurent(&rig, tmp.path(), &args);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("price_rose")
            || String::from_utf8_lossy(&out.stderr).contains("price_rose"),
        "{out:?}"
    );
    assert_eq!(
        rig.fake.creates_total(),
        0,
        "created above the confirmed price"
    );
}

/// AutoDL like the other three: the account added with its token on stdin (checked first), the
/// documented rate in CNY, a rent that installs the key with the machine's root password once
/// (the key is not on the machine before), instances, release (powered off first), all through
/// gpurent's contract. The password is never written anywhere.
#[test]
fn autodl_journey_installs_the_key_with_the_root_password() {
    let Some(rig) = rig_with(Flavor::Autodl, false) else {
        return;
    };
    rig.fake.set_root_password(TEST_PASSWORD);
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let mut add = cmd(
        &rig,
        h,
        &[
            "provider",
            "add",
            "autodl",
            "--key-stdin",
            "--name",
            "cn",
            "--json",
        ],
    );
    add.env_remove("GPURENT_AUTODL_API_KEY")
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/gpurent-test-bus",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = add.spawn().expect("spawn");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), b"not-the-token\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(json(&out)["error"]["code"], "auth_rejected", "{out:?}");

    let offers = json(&gpurent(
        &rig,
        h,
        &["offers", "--provider", "autodl", "--json"],
    ));
    let o = &offers["offers"][0];
    assert_eq!(o["offer_id"], rig.fake.offer_id(), "{offers}");
    assert_eq!(o["price_per_hour_usd"], 1.97, "{offers}");
    let out = gpurent(&rig, h, &rent_args(&rig, &rig.fake.offer_id()));
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let inst = json(&out)["instance"].clone();
    let id = inst["id"].as_str().expect("id").to_string();
    assert_eq!(
        (inst["ready"].as_bool(), inst["state"].as_str()),
        (Some(true), Some("running")),
        "{inst}"
    );
    assert_eq!(inst["terms"]["currency"], "CNY", "{inst}");
    // The key went on with the password: it is in the machine's authorized_keys now.
    let keys =
        std::fs::read_to_string(rig.sshd.home().join(".ssh/authorized_keys")).unwrap_or_default();
    assert!(keys.contains(rig.public_line.trim()), "{keys}");
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    assert!(list.to_string().contains(&id), "{list}");
    let out = gpurent(&rig, h, &["release", &id, "--yes", "--json"]);
    assert_eq!(json(&out)["instance"]["state"], "terminated", "{out:?}");
    assert_eq!(rig.fake.creates_total(), 1);
    let mut files = vec![];
    files_under(h, &mut files);
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !bytes
                .windows(TEST_PASSWORD.len())
                .any(|w| w == TEST_PASSWORD.as_bytes()),
            "the root password was written to {}",
            f.display()
        );
    }
    rig.prism.assert_spec_kept("AutoDL");
}
