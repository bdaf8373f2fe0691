// Shared by several test binaries; each uses a different subset of it.
#![allow(dead_code)]

//! Starts WebKitWebDriver (which starts the app) and wraps a fantoccini client with waits that
//! poll the DOM (assert on the DOM, not on screenshot pixels).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use std::future::Future;

use fantoccini::elements::Element;
use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator};

/// How long a wait polls before it fails (generous: CI machines are slower and busier than
/// this one; a passing wait returns as soon as its condition holds).
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Session {
    pub client: Client,
    pub home: TempHome,
    pub driver: Child,
}

/// A throwaway GPURENT_HOME, removed on drop.
#[derive(Debug)]
pub struct TempHome(PathBuf);

impl TempHome {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A binary built into the same target dir as this test (`gpurent-app`, `bare-window`).
pub fn app_binary(name: &str) -> PathBuf {
    // target/debug/deps/webdriver-HASH -> target/debug/<name>
    let exe = std::env::current_exe().expect("current exe");
    let debug = exe.parent().and_then(Path::parent).expect("target/debug");
    let app = debug.join(name);
    assert!(
        app.exists(),
        "{} is missing: run `cargo build -p {name}` first",
        app.display()
    );
    app
}

/// A node that was replaced after it was found (the screen redrew), or one not shown yet (a
/// section drawn hidden until its read arrives): both are "not yet".
fn not_yet(err: &CmdError) -> bool {
    let e = format!("{err:?}");
    e.contains("StaleElementReference") || e.contains("ElementNotInteractable")
}

pub fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("out");
    std::fs::create_dir_all(&dir).expect("e2e/out");
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl Session {
    /// Start gpurent.
    pub async fn start() -> Session {
        Self::start_app(&app_binary("gpurent-app")).await
    }

    /// Start gpurent with extra environment (a fake cloud's base URL, a test setting); the app
    /// inherits it from WebKitWebDriver.
    pub async fn start_with_env(env: &[(&str, &str)]) -> Session {
        Self::start_app_with_env(&app_binary("gpurent-app"), env).await
    }

    /// Start any Tauri binary through WebKitWebDriver.
    pub async fn start_app(binary: &Path) -> Session {
        Self::start_app_with_env(binary, &[]).await
    }

    async fn start_app_with_env(binary: &Path, env: &[(&str, &str)]) -> Session {
        assert!(
            std::env::var_os("DISPLAY").is_some(),
            "E2E needs an X display: run under xvfb-run"
        );
        let home = TempHome(std::env::temp_dir().join(format!(
            "gpurent-e2e-{}-{}",
            std::process::id(),
            free_port()
        )));
        let port = free_port();
        let driver = Command::new("WebKitWebDriver")
            .arg(format!("--port={port}"))
            .env("TAURI_WEBVIEW_AUTOMATION", "true")
            .env("GPURENT_HOME", home.path())
            // An English OS locale that exists on every Debian (en_US may not be generated).
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .env("LANGUAGE", "en")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start WebKitWebDriver (package webkit2gtk-driver)");
        let caps: serde_json::Map<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({
                "webkitgtk:browserOptions": { "binary": binary, "args": [] }
            }))
            .expect("caps");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + TIMEOUT;
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("WebDriver session did not start: {e}"),
            }
        };
        Session {
            client,
            home,
            driver,
        }
    }

    /// The first match of `css`, waiting until there is one. Any failed find is "not yet" until
    /// TIMEOUT: besides "no such element", WebKit's driver answers "stale element" when a redraw
    /// replaced the node while it was being found (the Monitor and Billing steps redraw every
    /// few seconds).
    async fn find(&self, css: &str) -> Element {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(e) => return e,
                Err(err) if Instant::now() >= deadline => panic!(
                    "{css} did not appear: {err}\n--- what the screen said ---\n{}",
                    self.screen_text().await
                ),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// The visible text of the page (the first 3 000 characters), for a failure message: a
    /// journey that fails on CI says what the screen showed instead.
    async fn screen_text(&self) -> String {
        match self
            .client
            .execute("return document.body.innerText.slice(0, 3000)", vec![])
            .await
        {
            Ok(serde_json::Value::String(t)) => t,
            Ok(other) => other.to_string(),
            Err(e) => format!("(unreadable: {e})"),
        }
    }

    /// Run `op` on the first match of `css`; when the node was replaced between the find and
    /// `op`, find it again and retry, until TIMEOUT.
    async fn on_node<T, F, Fut>(&self, css: &str, what: &str, op: F) -> T
    where
        F: Fn(Element) -> Fut,
        Fut: Future<Output = Result<T, CmdError>>,
    {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match op(self.find(css).await).await {
                Ok(v) => return v,
                Err(err) if Instant::now() < deadline && not_yet(&err) => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(err) => panic!("{what} {css}: {err:?}"),
            }
        }
    }

    pub async fn wait_css(&self, css: &str) {
        self.find(css).await;
    }

    pub async fn wait_gone(&self, css: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.count(css).await > 0 {
            assert!(Instant::now() < deadline, "{css} did not go away");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Poll until the first match of `css` has exactly `want` as its text.
    pub async fn wait_text(&self, css: &str, want: &str) {
        let deadline = Instant::now() + TIMEOUT;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Ok(e) = self.client.find(Locator::Css(css)).await {
                if let Ok(t) = e.text().await {
                    if t.trim() == want {
                        return;
                    }
                    last = t;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css}: wanted {want:?}, last saw {last:?}");
    }

    /// The first match's text (found again when a redraw replaced the node meanwhile).
    pub async fn text(&self, css: &str) -> String {
        self.on_node(css, "text of", |e| async move { e.text().await })
            .await
            .trim()
            .to_string()
    }

    /// The first match's attribute `name` (found again when the node was replaced meanwhile).
    pub async fn attr(&self, css: &str, name: &str) -> String {
        self.on_node(css, "attribute of", |e| async move { e.attr(name).await })
            .await
            .unwrap_or_else(|| panic!("{css} has no {name}"))
    }

    /// Scroll an element to the top of its scrolling container (for screenshots).
    pub async fn scroll_to(&self, css: &str) {
        self.wait_css(css).await;
        self.client
            .execute(
                "document.querySelector(arguments[0]).scrollIntoView({block: 'start'})",
                vec![serde_json::Value::String(css.to_string())],
            )
            .await
            .unwrap_or_else(|err| panic!("scroll to {css}: {err:?}"));
    }

    /// Replace an input's text.
    pub async fn fill(&self, css: &str, text: &str) {
        self.click(css).await;
        self.on_node(css, "type into", |e| async move {
            e.clear().await?;
            e.send_keys(text).await
        })
        .await;
    }

    /// Replace an input's text and commit it (Enter: a `change` event, as when the user leaves
    /// the field).
    pub async fn type_into(&self, css: &str, text: &str) {
        self.fill(css, &format!("{text}\u{E007}")).await;
    }

    /// Wait until at least `n` elements match `css` (for work that takes a while).
    pub async fn wait_count(&self, css: &str, n: usize, secs: u64) {
        let deadline = Instant::now() + std::time::Duration::from_secs(secs);
        while self.count(css).await < n {
            assert!(
                Instant::now() < deadline,
                "fewer than {n} of {css} after {secs} s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .map(|v| v.len())
            .unwrap_or(0)
    }

    pub async fn is_enabled(&self, css: &str) -> bool {
        self.on_node(css, "is enabled", |e| async move { e.is_enabled().await })
            .await
    }

    /// Click the first match (found again when a redraw replaced it before the click landed:
    /// the Billing step redraws every few seconds).
    pub async fn click(&self, css: &str) {
        self.on_node(css, "click", |e| async move {
            // Bring it into view inside scrolling containers first (WebKit's driver only
            // scrolls the page).
            self.client
                .execute(
                    "arguments[0].scrollIntoView({block: 'center'})",
                    vec![serde_json::to_value(&e)?],
                )
                .await?;
            e.click().await
        })
        .await;
    }

    /// Click `css` until `then` appears (clicked again every 5 s, until TIMEOUT): for a button
    /// in a part that redraws every few seconds (Billing's table), where a click can land on the
    /// node a redraw is replacing and be lost, as a person's click sometimes is (who clicks again).
    pub async fn click_until(&self, css: &str, then: &str) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            self.click(css).await;
            let again = Instant::now() + Duration::from_secs(5);
            while Instant::now() < again {
                if self.count(then).await > 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{then} did not appear after clicking {css}\n--- what the screen said ---\n{}",
                    self.screen_text().await
                );
            }
        }
    }

    pub async fn select(&self, css: &str, value: &str) {
        self.on_node(css, "select", |e| async move {
            e.select_by_value(value).await.map(|_| ())
        })
        .await;
    }

    /// Screenshot of the whole X display (always current, unlike WebDriver's). Falls back to
    /// WebDriver's own screenshot when ImageMagick's `import` is missing.
    pub async fn screenshot(&self, name: &str) {
        let path = out_dir().join(format!("{name}.png"));
        // Let the compositor present the current DOM: two animation frames, then a short pause
        // (under load the X window can lag the DOM by a few hundred ms).
        let _ = self
            .client
            .execute_async(
                "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
                vec![],
            )
            .await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        let x11 = Command::new("import")
            .args(["-window", "root"])
            .arg(&path)
            .status();
        if !matches!(x11, Ok(s) if s.success()) {
            let png = self.client.screenshot().await.expect("screenshot");
            std::fs::write(&path, png).expect("write screenshot");
        }
        eprintln!("screenshot: {}", path.display());
    }

    /// End the WebDriver session (closes the app); the driver stops on drop.
    pub async fn finish(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // WebKitWebDriver stops its browser on SIGTERM; SIGKILL would leave it running.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.driver.id().to_string())
            .status();
        let _ = self.driver.wait();
    }
}

/// Keys step: create `laptop`; authorize it on `sshd`; Hosts step: paste its SSH command, trust the
/// fingerprint, save as `label`.
pub async fn add_key_and_host(s: &Session, sshd: &gpurent_testhost::Sshd, label: &str) {
    add_key_and_host_with(s, sshd, label, None).await
}

/// [`add_key_and_host`], the key protected by `passphrase` when given: adding the host then asks
/// for it once (a wrong answer first, which asks again).
pub async fn add_key_and_host_with(
    s: &Session,
    sshd: &gpurent_testhost::Sshd,
    label: &str,
    passphrase: Option<&str>,
) {
    add_key_and_host_at(s, sshd, sshd.port(), label, passphrase).await
}

/// [`add_key_and_host_with`], the host reached at `port` on the sshd's address (a
/// [`gpurent_testhost::DelayProxy`] in front of it, say).
pub async fn add_key_and_host_at(
    s: &Session,
    sshd: &gpurent_testhost::Sshd,
    port: u16,
    label: &str,
    passphrase: Option<&str>,
) {
    s.click("#nav-keys").await;
    s.fill("#key-label", "laptop").await;
    if let Some(p) = passphrase {
        s.fill("#key-passphrase", p).await;
    }
    s.click("#key-create").await;
    // The key is in the keychain once the Keys step lists it (leaving the step earlier would
    // redraw it from a list read before the key existed).
    s.wait_css("code.pubkey[data-label='laptop']").await;
    add_host_at(s, sshd, port, label, passphrase).await
}

/// Keys step: authorize the existing key `laptop` on `sshd`; Hosts step: paste its SSH command
/// with `port`, trust the fingerprint, save as `label` (the key's `passphrase`, when it has one,
/// is asked once, after a wrong answer first).
pub async fn add_host_at(
    s: &Session,
    sshd: &gpurent_testhost::Sshd,
    port: u16,
    label: &str,
    passphrase: Option<&str>,
) {
    s.click("#nav-keys").await;
    let public_line = s.text("code.pubkey[data-label='laptop']").await;
    sshd.authorize(&public_line).expect("authorize our key");
    s.click("#nav-hosts").await;
    s.fill(
        "#host-paste",
        &format!("ssh -p {port} {}@{}", sshd.user(), sshd.host()),
    )
    .await;
    // The paste's preview lands 200 ms later and moves the form down: wait for it, as a user
    // would read it, so no click below lands where a button was a moment before.
    s.wait_css("#host-preview p").await;
    s.fill("#host-label", label).await;
    s.click("#host-add").await;
    if let Some(p) = passphrase {
        s.wait_css("#passphrase-dialog[open][data-key='laptop']")
            .await;
        s.fill("#passphrase-input", "not the passphrase").await;
        s.click("#passphrase-ok").await;
        s.wait_css("#passphrase-dialog[open] #passphrase-wrong")
            .await;
        s.screenshot("unlock-wrong-en").await;
        s.fill("#passphrase-input", p).await;
        s.click("#passphrase-ok").await;
        s.wait_gone("#passphrase-dialog").await;
    }
    s.click("#hostkey-trust").await;
    s.wait_css(&format!(".card.host[data-host='{label}']"))
        .await;
}
