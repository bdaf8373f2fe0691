//! Renting on AutoDL (容器实例 Pro) in the real app, in 中文, with amounts in ¥: the fake AutoDL
//! of gpurent-testhost behind Prism's validating proxy for the contract gpurent wrote from
//! AutoDL's docs (`autodl-pro.openapi.yaml`), whose machine is this test's real loopback sshd
//! taking only a password at first — as AutoDL hands out a root password. Through the screens:
//! connect the account (the token, the real-name note), the AutoDL offer in Pick a card priced in
//! ¥ at the documented rate (said so), the money step (documented price, the 15-day release
//! rule), the rent (the key installed with the password once, then a key login proven), the
//! machine in ¥ on the Hosts step, and the release — then the provider says released and no file
//! gpurent wrote holds the token or the password.
//!
//! Run: `cargo build -p gpurent-app && bash scripts/e2e.sh rent_autodl`.

mod harness;

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpurent_testhost::fakecloud::{FakeCloud, FakeState, Flavor, SshTarget};
use gpurent_testhost::{prism_available, sshd_available, Prism, Sshd, SshdOptions, TEST_PASSWORD};
use harness::Session;

/// Distinct bytes to look for afterwards in every file gpurent wrote.
const TOKEN: &str = "autodl-e2e-token-3c8b1f7a9e";

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[tokio::test]
async fn autodl_rent_journey_in_chinese_with_yuan() {
    if !sshd_available() || !prism_available() {
        return;
    }
    // The machine takes the password until gpurent's key is on it.
    let sshd = Sshd::start_with(SshdOptions {
        password_auth: true,
        ..Default::default()
    })
    .expect("sshd");
    let fake = FakeCloud::start(Flavor::Autodl, TOKEN).expect("fake AutoDL");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    fake.set_root_password(TEST_PASSWORD);
    fake.set_provisioning(Duration::from_secs(3));
    let spec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/gpurent-core/tests/provider-specs/autodl-pro.openapi.yaml");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    let url = prism.url();
    // AutoDL's machines log in as root; this machine's sshd takes its test user (as the CLI's
    // AutoDL test sets it).
    let port = sshd.port().to_string();
    let s = Session::start_with_env(&[
        ("GPURENT_AUTODL_API_URL", url.as_str()),
        ("GPURENT_AUTODL_SSH_USER", sshd.user()),
        ("GPURENT_AUTODL_SSH_PORT", port.as_str()),
        // No request here is meant to time out: 30 s, out of a loaded machine's reach.
        ("GPURENT_HTTP_TIMEOUT_S", "30"),
    ])
    .await;
    s.wait_css("body[data-ready='true']").await;

    // 中文 first: the user of this provider reads Chinese.
    s.click("#rail-settings").await;
    s.select("#settings-language", "zh-CN").await;
    s.wait_text("h1", "设置").await;

    // A key to rent with; it is NOT on the machine: the rent installs it with the root password.
    s.click("#nav-keys").await;
    s.fill("#key-label", "laptop").await;
    s.click("#key-create").await;
    let public_line = s.text("code.pubkey[data-label='laptop']").await;
    assert!(public_line.starts_with("ssh-ed25519 "), "{public_line}");

    // Settings → Accounts: AutoDL, its token.
    s.click("#rail-settings").await;
    s.wait_css("#accounts-none").await;
    s.select("#account-provider", "autodl").await;
    s.fill("#account-key", TOKEN).await;
    s.click("#account-add").await;
    s.wait_css("#accounts-list li[data-account='autodl'][data-source='keychain']")
        .await;
    s.scroll_to("#accounts").await;
    s.screenshot("autodl-accounts-zh").await;
    let accounts = s.text("#accounts").await;
    assert!(
        accounts.contains("实名"),
        "the account form says the API needs a real-name verified account: {accounts}"
    );

    // Pick a card: a 7B LoRA; the AutoDL offer joins the ranking, priced in ¥ at the documented
    // rate (AutoDL quotes no price before the create), said so.
    s.click("#nav-pick").await;
    s.click("#tab-estimate").await;
    s.click("#preset-lora7b").await;
    s.wait_css("#est-total").await;
    s.wait_gone("#est-result[data-pending]").await;
    let row = "#live-table tr.offer[data-provider='autodl']";
    s.wait_count(row, 1, 30).await;
    let price = s.text(&format!("{row} td:nth-child(3)")).await;
    assert!(price.starts_with('¥'), "the price in yuan: {price}");
    assert_eq!(
        s.count(&format!("{row} .price-documented")).await,
        1,
        "the documented rate is said to be one"
    );
    s.scroll_to("#live-offers").await;
    s.screenshot("autodl-offers-zh").await;

    // The money step: the documented price and its source, the 15-day release rule; nothing
    // created before the confirm.
    s.click(&format!("{row} button.rent-offer")).await;
    s.wait_css("#rent-dialog[open] #rent-next").await;
    s.select("#rent-key", "laptop").await;
    s.click("#rent-next").await;
    s.wait_css("#rent-money li[data-money='price']").await;
    let money = s.text("#rent-money li[data-money='price']").await;
    assert!(money.contains('¥'), "{money}");
    s.wait_css("#rent-money li[data-money='price_source']")
        .await;
    // The documented rate's source and date in Chinese (it was "(unverified, read …)").
    let source = s.text("#rent-money li[data-money='price_source']").await;
    assert!(
        source.contains("未核实") && !source.contains("unverified"),
        "{source}"
    );
    let days = s.text("#rent-money li[data-money='release_days']").await;
    assert!(days.contains("15"), "{days}");
    assert!(s.text("#rent-create").await.contains('¥'));
    s.screenshot("autodl-money-zh").await;
    assert_eq!(
        fake.creates_total(),
        0,
        "nothing is created before the confirm"
    );
    s.click("#rent-create").await;

    // Ready only after a key login: the key went on with the password, once.
    s.wait_count("#rent-done", 1, 120).await;
    let id = s.attr("#rent-done", "data-instance").await;
    assert!(id.starts_with("gpurent-"), "{id}");
    let machine = format!("#rented-table tr[data-instance='{id}'][data-state='running']");
    s.wait_css(&machine).await;
    let line = s.text(&machine).await;
    assert!(line.contains('¥'), "the machine's price in yuan: {line}");
    // The machine's own rate (its snapshot's payg_price), read after the create, beside it.
    let own = s.text(&format!("{machine} .own-rate")).await;
    assert!(own.contains("本机实际价 ¥1.97"), "{own}");
    s.scroll_to("#rented").await;
    s.screenshot("autodl-ready-zh").await;
    assert_eq!(fake.creates_total(), 1);
    let authorized =
        std::fs::read_to_string(sshd.home().join(".ssh/authorized_keys")).unwrap_or_default();
    assert!(
        authorized.contains(public_line.split_whitespace().nth(1).unwrap_or("?")),
        "gpurent's key was installed with the root password"
    );

    // Release: AutoDL powers it off first, then releases; the provider's word closes the row.
    let release = format!("#rented-table tr[data-instance='{id}'] button[data-action='release']");
    s.click(&release).await;
    s.wait_css("#rented-money[data-effect='everything_deleted']")
        .await;
    s.click("#rented-confirm").await;
    s.wait_css("#release-dialog[open] #release-body").await;
    s.click("#release-confirm").await;
    s.wait_css(&format!(
        "#rented-closed li[data-instance='{id}'][data-state='terminated']"
    ))
    .await;
    s.screenshot("autodl-released-zh").await;
    let instances = fake.instances();
    assert_eq!(instances.len(), 1, "{instances:?}");
    assert_eq!(instances[0].state, FakeState::Terminated);
    prism.assert_spec_kept("AutoDL");

    // No file gpurent wrote holds the token or the root password.
    let mut files = vec![];
    files_under(s.home.path(), &mut files);
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(TOKEN), "the token is in {}", f.display());
        assert!(
            !text.contains(TEST_PASSWORD),
            "the root password is in {}",
            f.display()
        );
    }
}
