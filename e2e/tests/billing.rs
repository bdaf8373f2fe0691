//! The Billing step in the real app: a pasted host on the real loopback sshd, its rate entered on
//! the Billing screen, shows its cost growing (read twice, the second larger); a budget set low
//! shows its 80 % and then 100 % banner — on the Billing screen and on another step — and the app
//! as a second guard (its background tick, shortened to 2 s by `GPURENT_SECOND_GUARD_PERIOD_S`)
//! records the notices it sent; "I stopped it" walks its confirm with the money in words, after
//! which the cost stops growing. Screenshots in en and zh-CN.

mod harness;

use std::time::Duration;

use harness::{add_key_and_host, Session};

/// The cost so far of `host` as the screen shows it (the exact number is in `data-usd`).
async fn so_far(s: &Session, host: &str) -> f64 {
    usd_of(s, &format!("tr[data-host='{host}'] td.so-far")).await
}

/// The exact amount behind a cell (`data-usd`).
async fn usd_of(s: &Session, css: &str) -> f64 {
    s.wait_css(css).await;
    let v = s.attr(css, "data-usd").await;
    v.parse()
        .unwrap_or_else(|_| panic!("{css}: data-usd {v:?}"))
}

/// Wait until the screen has refreshed since `after` (its `data-refreshed-ms`). Up to 60 s, a
/// hang guard only (100 polls, about 10 s, could run out on a loaded machine).
async fn next_refresh(s: &Session, after: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let now = s.attr("#view", "data-refreshed-ms").await;
        if now != after {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the Billing screen did not refresh");
}

#[tokio::test]
async fn billing_cost_grows_budget_banner_and_stop_confirm() {
    if !gpurent_testhost::sshd_available() {
        return;
    }
    let sshd = gpurent_testhost::Sshd::start().expect("sshd");
    let s = Session::start_with_env(&[("GPURENT_SECOND_GUARD_PERIOD_S", "2")]).await;
    s.wait_css("body[data-ready='true']").await;
    assert!(
        s.is_enabled("#nav-billing").await,
        "the Billing step is built"
    );
    add_key_and_host(&s, &sshd, "box").await;

    // Billing: nothing costs anything yet; enter the pasted host's rate ($3600/h per second, so
    // the cost visibly grows by $1 a second).
    s.click("#nav-billing").await;
    s.wait_text("h1", "Billing").await;
    s.wait_css("#billing-empty").await;
    s.select("#rate-host", "box").await;
    s.fill("#rate-usd", "3600").await;
    s.select("#rate-rule", "second").await;
    s.click("#rate-save").await;
    s.wait_css("tr[data-host='box'][data-state='running']")
        .await;

    // Its cost grows while the screen is open: read twice, a refresh apart.
    let r1 = next_refresh(&s, "").await;
    let first = so_far(&s, "box").await;
    next_refresh(&s, &r1).await;
    let second = so_far(&s, "box").await;
    assert!(second > first, "cost grew: {first} then {second}");
    assert!(
        second - first >= 1.0,
        "at $1/s over a 3 s refresh: {first} -> {second}"
    );
    assert_eq!(s.text("tr[data-host='box'] td.per-hour").await, "$3,600/h");
    // "By 2h from now": so far plus two more hours.
    let projected = s.text("#billing-projected").await;
    assert!(projected.starts_with("$7,2"), "{projected}");
    // The chart is drawn from the timeline.
    s.wait_css("#billing-chart-svg polyline.spend-line").await;
    s.scroll_to("h1").await;
    s.screenshot("billing-cost-en").await;

    // A total budget of $40 a day: the 80 % banner once $32 is spent, then 100 %.
    s.select("#budget-scope", "").await;
    s.select("#budget-period", "day").await;
    s.fill("#budget-usd", "40").await;
    s.click("#budget-save").await;
    s.wait_css("#billing-budgets li.budget[data-scope='total'][data-period='day']")
        .await;
    s.wait_count(
        "#budget-banner:not([hidden]) .budget-line[data-level='warn'][data-scope='total']",
        1,
        45,
    )
    .await;
    let warn = s.text("#budget-banner .budget-line").await;
    assert!(
        warn.starts_with("Budget All machines, today: 8")
            || warn.starts_with("Budget All machines, today: 9"),
        "{warn}"
    );
    s.scroll_to("#budget-banner").await;
    s.screenshot("billing-warn-en").await;
    s.wait_count(
        "#budget-banner .budget-line[data-level='over'][data-scope='total']",
        1,
        60,
    )
    .await;
    assert!(s
        .text("#budget-banner .budget-line")
        .await
        .starts_with("Budget All machines, today is used up"));
    // The second guard sent both, once each (its tick runs in the shell, remembered in SQLite).
    s.wait_count("#billing-notices li[data-kind='budget_over']", 1, 60)
        .await;
    assert_eq!(
        s.count("#billing-notices li[data-kind='budget_warn']")
            .await,
        1
    );
    assert_eq!(
        s.count("#billing-notices li[data-kind='budget_over']")
            .await,
        1
    );
    s.scroll_to("#billing-notices").await;
    s.screenshot("billing-over-en").await;

    // The banner shows on every screen.
    s.click("#nav-files").await;
    s.wait_css("#budget-banner .budget-line[data-level='over']")
        .await;
    s.screenshot("billing-banner-files-en").await;

    // "I stopped it": gpurent cannot stop a pasted host; the confirm says so, with the money.
    s.click("#nav-billing").await;
    s.click("tr[data-host='box'] button[data-action='mark-stopped']")
        .await;
    s.wait_css("#billing-confirm[open]").await;
    let words = s.text("#billing-confirm").await;
    assert!(words.contains("cannot stop it for you"), "{words}");
    assert!(words.contains("counts nothing"), "{words}");
    s.screenshot("billing-stop-confirm-en").await;
    s.click("#billing-confirm-yes").await;
    s.wait_gone("#billing-confirm").await;
    s.wait_css("tr[data-host='box'][data-state='stopped']")
        .await;
    let r3 = next_refresh(&s, "").await;
    let stopped = so_far(&s, "box").await;
    next_refresh(&s, &r3).await;
    assert_eq!(
        so_far(&s, "box").await,
        stopped,
        "stopped: the cost no longer grows"
    );
    assert!(stopped > second);
    assert_eq!(s.text("tr[data-host='box'] td.per-hour").await, "$0/h");

    // 中文.
    s.click("#rail-settings").await;
    s.select("#settings-language", "zh-CN").await;
    s.wait_text("h1", "设置").await;
    s.click("#nav-billing").await;
    s.wait_text("h1", "计费").await;
    s.wait_css("tr[data-host='box'] td.so-far").await;
    s.scroll_to("#budget-banner").await;
    let banner = s.text("#budget-banner .budget-line").await;
    assert!(
        banner.starts_with("预算「全部机器，今日」已用完"),
        "{banner}"
    );
    assert!(s
        .text("#billing-notices li[data-kind='budget_over']")
        .await
        .contains("已用完"));
    s.screenshot("billing-zh").await;
    s.scroll_to("#billing-budgets-card").await;
    s.screenshot("billing-budgets-zh").await;

    // In 中文 a new rate is in yuan by default; the host's rate set in ¥ shows ¥ and the totals
    // keep one line per currency (the dollars it cost before are never converted).
    assert_eq!(s.attr("#rate-currency", "value").await, "CNY");
    s.select("#rate-host", "box").await;
    s.fill("#rate-usd", "36").await;
    s.click("#rate-save").await;
    s.wait_css(".billing-totals[data-currency='CNY']").await;
    assert_eq!(s.count(".billing-totals[data-currency='USD']").await, 1);
    let per_hour = s.text("tr[data-host='box'] td.per-hour").await;
    assert!(per_hour.starts_with('¥'), "{per_hour}");
    s.scroll_to("h1").await;
    s.screenshot("billing-cny-zh").await;
    s.finish().await;
}

const API_KEY: &str = "rp_e2e_billing_key";

/// A machine rented from the fake RunPod (behind Prism's validating proxy for the RunPod spec)
/// with the CLI, in the app's own `GPURENT_HOME`: the Billing step lists it with its cost growing
/// and its account; Stop walks its confirm with the money in words, Release the release
/// checklist, before the provider is asked; the provider's state really changes.
#[tokio::test]
async fn billing_rented_machine_cost_stop_and_release_checklist() {
    use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Flavor, SshTarget};
    use std::os::unix::fs::PermissionsExt;

    if !gpurent_testhost::sshd_available() || !gpurent_testhost::prism_available() {
        return;
    }
    let sshd = gpurent_testhost::Sshd::start().expect("sshd");
    let key = gpurent_testhost::UserKey::generate("gpurent-billing-e2e").expect("key");
    sshd.authorize(&key.public_line).expect("authorize");
    let keys = tempfile_dir();
    let key_file = keys.join("id_ed25519");
    std::fs::write(&key_file, &key.private_pem).expect("write key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(
        keys.join("id_ed25519.pub"),
        format!("{}\n", key.public_line),
    )
    .expect("pub");
    let fake = FakeCloud::start(Flavor::Runpod, API_KEY).expect("fake cloud");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/gpurent-core/tests/provider-specs/runpod-rest-v2.openapi.json");
    let prism = gpurent_testhost::Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    let port = sshd.port().to_string();
    let url = prism.url();
    let env: Vec<(&str, &str)> = vec![
        ("GPURENT_RUNPOD_API_KEY", API_KEY),
        ("GPURENT_RUNPOD_API_URL", url.as_str()),
        ("GPURENT_RUNPOD_SSH_USER", sshd.user()),
        ("GPURENT_RUNPOD_SSH_PORT", port.as_str()),
        // No request here is meant to time out: 30 s, out of a loaded machine's reach.
        ("GPURENT_HTTP_TIMEOUT_S", "30"),
    ];
    let s = Session::start_with_env(&env).await;
    s.wait_css("body[data-ready='true']").await;

    // Rent with the CLI into the app's own home (same database, same keychain).
    let out = std::process::Command::new(harness::app_binary("gpurent"))
        .args(["rent", "--provider", "runpod", "--offer"])
        .arg(fake.offer_id())
        .arg("-i")
        .arg(&key_file)
        .args(["--ready-timeout", "60", "--yes", "--json"])
        .envs(env.iter().copied())
        .env("GPURENT_HOME", s.home.path())
        .env_remove("SSH_AUTH_SOCK")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run gpurent rent");
    assert!(
        out.status.success(),
        "rent: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rented: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let id = rented["instance"]["id"].as_str().expect("id").to_string();
    let row = format!("#billing-machines tr[data-instance='{id}']");

    // The Billing step lists it with the pasted hosts; its cost grows ($0.44/h, per second).
    s.click("#nav-billing").await;
    s.wait_css(&format!(
        "{row}[data-state='running'][data-kind='provider']"
    ))
    .await;
    let r1 = next_refresh(&s, "").await;
    let first = usd_of(&s, &format!("{row} td.so-far")).await;
    next_refresh(&s, &r1).await;
    let second = usd_of(&s, &format!("{row} td.so-far")).await;
    assert!(
        second > first,
        "the rented machine's cost grew: {first} then {second}"
    );
    // gpurent counts compute and the running pod's container disk (50 GB at $0.10/GB-month);
    // beside it, what the provider itself reports for the pod.
    assert_eq!(
        s.text(&format!("{row} td.per-hour span:first-child")).await,
        "$0.45/h"
    );
    let theirs = s.text(&format!("{row} td.per-hour .reported")).await;
    assert_eq!(theirs, "$0.44/h by the provider");
    s.wait_css("#billing-balances li.balance-row").await;
    s.scroll_to("h1").await;
    s.screenshot("billing-rented-en").await;

    // Stop: the money first; Cancel changes nothing.
    s.click(&format!("{row} button[data-action='stop']")).await;
    s.wait_css("#billing-confirm[open]").await;
    let words = s.text("#billing-confirm").await;
    assert!(
        words.contains(&format!("Stopping {id}: the GPU ($0.44/h) stops billing.")),
        "{words}"
    );
    // A RunPod pod: its container disk is wiped on stop (never "kept").
    assert!(
        words.contains("50 GB container disk is wiped when it stops"),
        "{words}"
    );
    assert!(!words.contains("kept"), "{words}");
    s.screenshot("billing-rented-stop-en").await;
    s.click("#billing-confirm-no").await;
    s.wait_gone("#billing-confirm").await;
    assert_eq!(fake.instances()[0].state, FakeState::Running);
    s.click(&format!("{row} button[data-action='stop']")).await;
    s.wait_css("#billing-confirm[open]").await;
    s.click("#billing-confirm-yes").await;
    s.wait_css(&format!("{row}[data-state='stopped']")).await;
    assert_eq!(fake.instances()[0].state, FakeState::Stopped);

    // Release walks the release checklist (disks deleted, what stopping instead costs); cancel
    // first, then confirm: the provider's state changes and the row goes.
    let dialog = format!("#release-dialog[open][data-instance='{id}']");
    s.click_until(&format!("{row} button[data-action='release']"), &dialog)
        .await;
    s.wait_css("#release-confirm:not([disabled])").await;
    s.screenshot("billing-rented-release-en").await;
    s.click("#release-cancel").await;
    s.wait_gone("#release-dialog").await;
    assert_eq!(fake.instances()[0].state, FakeState::Stopped);
    s.click_until(&format!("{row} button[data-action='release']"), &dialog)
        .await;
    s.wait_css("#release-confirm:not([disabled])").await;
    s.click("#release-confirm").await;
    s.wait_gone(&row).await;
    assert!(
        fake.instances()
            .iter()
            .all(|i| i.state == FakeState::Terminated),
        "{:?}",
        fake.instances()
    );
    prism.assert_spec_kept("RunPod");
    s.finish().await;
    let _ = std::fs::remove_dir_all(&keys);
}

/// A private temp folder for the key file (the e2e crate has no tempfile dependency).
fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("gpurent-billing-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}
