//! Stoplight Prism on loopback, for the provider tests: `prism mock SPEC` (validates each request
//! against the spec, answers from its examples; an invalid request gets 422/400 and a
//! `Violation:` line in the log) and `prism proxy SPEC UPSTREAM --errors` (validates the request
//! and the upstream's answer; a violation becomes an error answer).
//!
//! The binary is the repository's pinned `@stoplight/prism-cli` (`npm ci`), run as
//! `node_modules/.bin/prism` — what `npx --no-install prism` runs, without an npm process in
//! between, so stopping the child stops Prism. Tests call [`prism_available`] first: without
//! node or the package it prints a loud SKIPPED line, under `CI=true` it panics.

use std::fs;
use std::io;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository root (two levels above this crate).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned Prism binary, if `npm ci` installed it.
pub fn prism_bin() -> Option<PathBuf> {
    let p = repo_root().join("node_modules/.bin/prism");
    p.exists().then_some(p)
}

/// Why Prism cannot run here, or `None` when it can.
pub fn prism_missing_reason() -> Option<String> {
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return Some("node is not installed (apt-get install nodejs npm)".into());
    }
    if prism_bin().is_none() {
        return Some(
            "@stoplight/prism-cli is not installed (run `npm ci` at the repository root)".into(),
        );
    }
    None
}

/// `true` when Prism can run; otherwise a loud SKIPPED message — or a panic under `CI=true`.
pub fn prism_available() -> bool {
    match prism_missing_reason() {
        None => true,
        Some(why) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("spec test cannot run under CI=true: {why}");
            }
            eprintln!(
                "\n*** SKIPPED (needs Prism to validate against the provider spec): {why} ***\n"
            );
            false
        }
    }
}

/// A running Prism; killed on drop.
#[derive(Debug)]
pub struct Prism {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Prism {
    /// `prism mock SPEC` with request validation (the default) and static example answers.
    pub fn mock(spec: &Path) -> io::Result<Prism> {
        Self::start(|port| {
            vec![
                "mock".into(),
                "-h".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                spec.display().to_string(),
            ]
        })
    }

    /// `prism proxy SPEC UPSTREAM --errors`: requests and the upstream's answers are validated;
    /// a violation turns into an error answer.
    pub fn proxy(spec: &Path, upstream: &str) -> io::Result<Prism> {
        Self::start(|port| {
            vec![
                "proxy".into(),
                "-h".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                spec.display().to_string(),
                upstream.to_string(),
                "--errors".into(),
            ]
        })
    }

    fn start(args: impl Fn(u16) -> Vec<String>) -> io::Result<Prism> {
        let bin = prism_bin().ok_or_else(|| io::Error::other("prism is not installed"))?;
        let dir = tempfile::Builder::new()
            .prefix("gpurent-prism-")
            .tempdir()?;
        let log = dir.path().join("prism.log");
        let mut last = None;
        for _ in 0..3 {
            let port = free_port()?;
            let out = fs::File::create(&log)?;
            let mut child = Command::new(&bin)
                .args(args(port))
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out)
                .spawn()?;
            // Prism takes a few seconds to load a large spec (longer on a busy machine).
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                if let Some(status) = child.try_wait()? {
                    last = Some(io::Error::other(format!(
                        "prism exited ({status}): {}",
                        fs::read_to_string(&log).unwrap_or_default()
                    )));
                    break;
                }
                // Ready when *this* Prism says so, not when something answers on the port: the
                // port was free when picked, but a parallel test can take it meanwhile (a
                // connect would then reach the other listener, and requests fail).
                let ready = format!("Prism is listening on http://127.0.0.1:{port}");
                if fs::read_to_string(&log).is_ok_and(|l| l.contains(&ready))
                    && TcpStream::connect(("127.0.0.1", port)).is_ok()
                {
                    return Ok(Prism {
                        child: Some(child),
                        port,
                        log,
                        _dir: dir,
                    });
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = Some(io::Error::other("prism did not start listening in 120 s"));
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("prism did not start")))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Everything Prism logged so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log lines that report a violation of the spec (request or answer).
    pub fn violations(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains("Violation:") || l.contains("✖"))
            .map(|l| l.to_string())
            .collect()
    }

    /// The traffic really went through this validating proxy, and none of it broke the `name`
    /// provider's spec (panics otherwise: for tests).
    pub fn assert_spec_kept(&self, name: &str) {
        let log = self.log();
        assert!(
            log.contains("Request received"),
            "no request reached Prism:\n{log}"
        );
        let v = self.violations();
        assert!(
            v.is_empty(),
            "the {name} spec was violated:\n{}",
            v.join("\n")
        );
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
