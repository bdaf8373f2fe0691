//! The wizard over SSH, against a REAL loopback sshd (`gpurent-testhost`) serving the fake GPU
//! hosts of `tests/fakegpu/`: a drop-in `SetEnv` puts the scenario's bin dir first (only the fake
//! tools and a whitelist of system utilities, as in the local suite), its fake root, home and
//! pip state, and `FAKEGPU_SCENARIO` (the fake tools source it) into every session. Each scenario
//! of the shared table (`setup_common`) runs through `App::setup_probe_with_key`; the fix runner meets a
//! pip that fails midway, then converges; a cancel mid-install leaves nothing running on the
//! host; verify runs the real `verify.py` against the fake torch's timed matmul and copy.
//!
//! Needs `/usr/sbin/sshd`, the `gputest` user (`scripts/setup-test-host.sh`) and root: skipped
//! with a message otherwise, except under `CI=true` where that fails.

mod remote_common;
mod setup_common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gpurent_core::app::login::LoginKey;
use gpurent_core::app::setup::{fix_commands, HostReport, SetupError};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::{NoProgress, Progress};
use gpurent_core::setup::pip::{PipFailure, PipOutcome};
use gpurent_core::setup::verify::Suspicion;
use gpurent_core::setup::Verdict;
use gpurent_core::Coded;
use gpurent_testhost::{sshd_available, Sshd, UserKey, TEST_USER};
use remote_common::{add_confirmed, login_key, spec, world, World};
use setup_common::{assert_expected, assert_sections, options, FakeHost};

const LABEL: &str = "gpu";

/// A fake GPU host behind a real sshd, saved in an App as `gpu`.
struct Remote {
    host: FakeHost,
    w: World,
    key: LoginKey,
    sshd: Sshd,
}

/// Start scenario `name` (with `extra` variables; `{bin}` in a value is the host's bin dir) behind
/// a fresh sshd; `None` when sshd can't run here.
fn remote(name: &str, extra: &[(&str, &str)]) -> Option<Remote> {
    if !sshd_available() {
        return None;
    }
    let mut host = FakeHost::new(name);
    for (k, v) in extra {
        let v = v.replace("{bin}", &host.bin().display().to_string());
        host.vars.insert(k.to_string(), v);
    }
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate("wizard-ssh").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let w = world();
    let key = login_key(&k, "k1");
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));
    Some(Remote { host, w, key, sshd })
}

impl Remote {
    fn doctor(&self) -> HostReport {
        self.w
            .app
            .setup_probe_with_key(
                LABEL,
                &self.w.env,
                &self.key,
                &options(&self.host.vars),
                &NoProgress,
                &CancelToken::new(),
            )
            .expect("setup_probe")
    }

    fn state(&self) -> PathBuf {
        self.host.dir.path().join("state")
    }
}

fn check_over_ssh(name: &str) {
    let Some(r) = remote(name, &[]) else {
        return;
    };
    let steps = Mutex::new(Vec::new());
    let sink = |p: Progress| {
        if let Progress::Step { step, .. } = p {
            steps.lock().expect("lock").push(step);
        }
    };
    let rep =
        r.w.app
            .setup_probe_with_key(
                LABEL,
                &r.w.env,
                &r.key,
                &options(&r.host.vars),
                &sink,
                &CancelToken::new(),
            )
            .expect("setup_probe");
    assert_eq!(*steps.lock().expect("lock"), vec!["connect", "probe"]);
    assert_eq!(rep.host, LABEL);
    let saved = Path::new(&rep.probe_path);
    assert_eq!(saved, r.w.app.paths().data.join("probes/gpu-1000.txt"));
    let raw = std::fs::read_to_string(saved).expect("saved probe");
    assert_sections(name, &raw);
    assert!(
        r.sshd
            .log()
            .contains(&format!("Accepted publickey for {TEST_USER}")),
        "{name}: the probe came over the sshd"
    );
    assert_expected(name, &r.host.vars, &raw, &rep.report);
    // The JSON is the --from-probe report plus the host and the saved probe.
    let json = serde_json::to_value(&rep).expect("json");
    assert_eq!(json["probe_path"], rep.probe_path.as_str());
    assert_eq!(
        json["verdict"],
        serde_json::to_value(&rep.report.verdict).expect("verdict")
    );
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => { $( #[test] fn $name() { check_over_ssh(stringify!($name)); } )* };
}

for_each_scenario!(scenarios);

/// Processes on the host whose environment belongs to this fake host (zombies excluded).
fn host_processes(state: &Path) -> Vec<String> {
    let needle = format!("FAKEGPU_STATE={}", state.display());
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").expect("proc").flatten() {
        let p = e.path();
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        let env = std::fs::read(p.join("environ")).unwrap_or_default();
        if !zombie && env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let cmd = std::fs::read(p.join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmd).replace('\0', " "));
        }
    }
    found
}

/// Over SSH `/usr/bin/python3` would be this machine's real interpreter: the fake one in the
/// host's bin dir reports itself as the executable instead, so the plan runs it.
const FAKE_PY: (&str, &str) = ("FAKE_PY_EXECUTABLE", "{bin}/python3");

fn events() -> (Mutex<Vec<Progress>>, CancelToken) {
    (Mutex::new(Vec::new()), CancelToken::new())
}

#[test]
fn a_fix_that_fails_midway_reports_why_and_converges_when_re_run_then_verifies() {
    let Some(r) = remote(
        "rtx4090_torch_cpu",
        &[
            ("FAKE_PIP_FAIL", "network"),
            ("FAKE_PIP_FAIL_ONCE", "1"),
            FAKE_PY,
            ("FAKE_VERIFY_TFLOPS", "120"),
            ("FAKE_VERIFY_GBPS", "900"),
        ],
    ) else {
        return;
    };
    let before = r.doctor();
    let py = r.host.bin().join("python3").display().to_string();
    // The table's fix, run with the fake interpreter.
    let want = r.host.vars["EXPECT_FIX"].replace("/usr/bin/python3", &py);
    let commands = fix_commands(&before.report, None).expect("fixable");
    assert_eq!(commands.join(" && "), want);

    let (seen, cancel) = events();
    let sink = |p: Progress| seen.lock().expect("lock").push(p);
    let fix = |sink: &dyn gpurent_core::infra::events::ProgressSink| {
        r.w.app.setup_fix_with_key(
            LABEL,
            &r.w.env,
            &r.key,
            &before.report,
            None,
            &options(&r.host.vars),
            sink,
            &cancel,
        )
    };
    let err = fix(&sink).expect_err("the first run fails midway");
    let SetupError::FixFailed {
        command,
        exit_status,
        failure,
        line,
        done_bytes,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(err.code(), "fix_failed_network");
    assert_eq!((command.as_str(), *exit_status), (want.as_str(), Some(1)));
    assert_eq!(*failure, Some(PipFailure::Network));
    assert!(
        line.as_deref()
            .is_some_and(|l| l.contains("Read timed out")),
        "{line:?}"
    );
    let events = std::mem::take(&mut *seen.lock().expect("lock"));
    let bytes: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Progress::Bytes { done_bytes, .. } => Some(*done_bytes),
            _ => None,
        })
        .collect();
    assert!(bytes.windows(2).all(|w| w[0] <= w[1]), "{bytes:?}");
    // torch (781 MB) finished, cudnn 40 % of 664.8 MB when the network dropped.
    assert_eq!(*done_bytes, 781_000_000 + 265_900_000);
    assert_eq!(bytes.last(), Some(done_bytes));
    let logs: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Progress::Log { line } => Some(line.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(logs.first().copied(), Some(format!("$ {want}").as_str()));
    assert!(logs.contains(&"Collecting torch==2.14.0"), "{logs:?}");
    assert!(!logs.iter().any(|l| l.contains("@@gpurent@@")), "{logs:?}");

    // Re-running the same fix converges; the re-probe says ready.
    let done = fix(&sink).expect("the re-run converges");
    assert_eq!(done.commands, commands);
    assert_eq!(done.pip, PipOutcome::Installed);
    assert_eq!(done.downloaded_bytes, 781_000_000 + 664_800_000 + 7_000_000);
    assert_eq!(
        done.after.report.verdict,
        Verdict::Ready,
        "{:?}",
        done.after.report.codes()
    );
    assert_eq!(
        done.after.report.facts.torch.version.as_deref(),
        Some("2.14.0+cu126")
    );
    assert_ne!(done.after.probe_path, before.probe_path);
    let steps: Vec<String> = seen
        .lock()
        .expect("lock")
        .iter()
        .filter_map(|e| match e {
            Progress::Step { step, .. } => Some(step.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(steps, vec!["connect", "fix_command", "recheck"]);
    // Nothing left to run now.
    let again = r.w.app.setup_fix_with_key(
        LABEL,
        &r.w.env,
        &r.key,
        &done.after.report,
        None,
        &options(&r.host.vars),
        &NoProgress,
        &CancelToken::new(),
    );
    assert_eq!(again.expect_err("ready").code(), "nothing_to_fix");

    // Verify with the interpreter the re-probe names, on the fake torch's timed matmul and copy.
    let v =
        r.w.app
            .setup_verify_with_key(LABEL, &r.w.env, &r.key, &NoProgress, &CancelToken::new())
            .expect("verify");
    assert_eq!(v.python, py);
    assert_eq!(
        v.probe_path, done.after.probe_path,
        "facts of the newest probe"
    );
    assert_eq!(v.verify.torch.as_deref(), Some("2.14.0+cu126"));
    let g = &v.verify.gpus[0];
    assert_eq!(g.card_id.as_deref(), Some("rtx-4090"));
    assert!(
        (g.matmul_tflops.expect("tflops") - 120.0).abs() < 0.5,
        "{g:?}"
    );
    assert!((g.copy_gbps.expect("gbps") - 900.0).abs() < 1.0, "{g:?}");
    assert!(v.verify.ok, "{:?}", v.verify);
}

#[test]
fn cancelling_mid_install_kills_the_install_on_the_host_and_a_re_run_converges() {
    let Some(r) = remote(
        "rtx4090_torch_cpu",
        // The first run goes quiet for 120 s after each progress line, as pip does while it
        // resolves or when the network stalls: closing the channel alone would not stop it (pip
        // would only die of the broken pipe at its next line, 120 s later).
        &[
            FAKE_PY,
            ("FAKE_PIP_DELAY", "120"),
            ("FAKE_PIP_DELAY_ONCE", "1"),
        ],
    ) else {
        return;
    };
    let before = r.doctor();
    let state = r.state();
    let (seen, cancel) = events();
    let running_at_cancel = Mutex::new(Vec::new());
    let sink = |p: Progress| {
        // Cancel as the first download starts (pip then goes quiet).
        if matches!(p, Progress::Bytes { .. }) && !cancel.is_cancelled() {
            *running_at_cancel.lock().expect("lock") = host_processes(&state);
            cancel.cancel();
        }
        seen.lock().expect("lock").push(p);
    };
    let started = Instant::now();
    let err =
        r.w.app
            .setup_fix_with_key(
                LABEL,
                &r.w.env,
                &r.key,
                &before.report,
                None,
                &options(&r.host.vars),
                &sink,
                &cancel,
            )
            .expect_err("cancelled");
    assert_eq!(err.code(), "cancelled", "{err:?}");
    let at_cancel = running_at_cancel.lock().expect("lock").clone();
    assert!(
        at_cancel.iter().any(|c| c.contains("/bin/pip")),
        "pip was running when cancelled: {at_cancel:?}"
    );
    // Nothing of the job is left (not pip, not its sleep, not the wrapper), well before pip's
    // quiet 120 s would end by itself. Polled up to 30 s: the kill is the product's, the time a
    // loaded machine takes to reap the processes is not (a sleep of 800 ms raced it).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut left = host_processes(&state);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = host_processes(&state);
    }
    assert!(left.is_empty(), "left running on the host: {left:?}");
    assert!(!r
        .host
        .dir
        .path()
        .join("home/.gpurent/jobs/fix.pid")
        .exists());
    assert!(!state.join("installed.env").exists(), "pip did not finish");
    // Waiting for the install would take 120 s (pip's first quiet spell): 60 s is a bound
    // that catches that wait and that no scheduling delay comes near.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the cancel did not wait for the install ({:?})",
        started.elapsed()
    );
    // Safe to re-run after a cancel.
    let done =
        r.w.app
            .setup_fix_with_key(
                LABEL,
                &r.w.env,
                &r.key,
                &before.report,
                None,
                &options(&r.host.vars),
                &NoProgress,
                &CancelToken::new(),
            )
            .expect("re-run");
    assert_eq!(done.after.report.verdict, Verdict::Ready);
}

#[test]
fn verify_flags_a_card_far_below_its_spec_and_probes_first_when_nothing_is_saved() {
    let Some(r) = remote(
        "ready_h100",
        &[
            FAKE_PY,
            ("FAKE_VERIFY_TFLOPS", "300"),
            ("FAKE_VERIFY_GBPS", "2900"),
        ],
    ) else {
        return;
    };
    assert_eq!(r.w.app.setup_latest_probe(LABEL).expect("probes"), None);
    let v =
        r.w.app
            .setup_verify_with_key(LABEL, &r.w.env, &r.key, &NoProgress, &CancelToken::new())
            .expect("verify");
    assert_eq!(
        r.w.app
            .setup_latest_probe(LABEL)
            .expect("probes")
            .as_deref(),
        Some(Path::new(&v.probe_path))
    );
    assert_eq!(v.python, r.host.bin().join("python3").display().to_string());
    assert!(v.verify.cuda_available);
    assert!(!v.verify.ok);
    let g = &v.verify.gpus[0];
    assert_eq!(g.card_id.as_deref(), Some("h100-sxm"));
    assert!(g.suspect());
    assert!(
        g.suspicions.iter().any(|s| matches!(
            s,
            Suspicion::SlowMatmul { achieved_tflops, .. } if (*achieved_tflops - 300.0).abs() < 0.5
        )),
        "{:?}",
        g.suspicions
    );
    assert!(!g
        .suspicions
        .iter()
        .any(|s| matches!(s, Suspicion::SlowMemory { .. })));
}

/// A private index with a token in its URL (pip config and PIP_EXTRA_INDEX_URL): no byte of the
/// credentials survives in the saved probe, the report JSON or the evidence.
#[test]
fn index_credentials_never_reach_the_saved_probe_the_report_or_the_evidence() {
    let Some(r) = remote(
        "ready_h100",
        &[
            (
                "FAKE_PIP_INDEX",
                "https://alice:s3cr3t-TOKEN@pypi.corp.example/simple",
            ),
            (
                "PIP_EXTRA_INDEX_URL",
                "https://__token__:pypi-AgEIcHlwaS5vcmcSECRET@upload.pypi.org/legacy/",
            ),
        ],
    ) else {
        return;
    };
    let rep = r.doctor();
    let saved = std::fs::read_to_string(&rep.probe_path).expect("saved probe");
    let json = serde_json::to_string(&rep).expect("json");
    let evidence: String = rep
        .report
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter().cloned())
        .collect();
    assert!(
        saved.contains("https://***@pypi.corp.example/simple")
            && saved.contains("https://***@upload.pypi.org/legacy/"),
        "{saved}"
    );
    for secret in [
        "alice",
        "s3cr3t-TOKEN",
        "__token__",
        "pypi-AgEIcHlwaS5vcmcSECRET",
    ] {
        assert!(!saved.contains(secret), "{secret} in the saved probe");
        assert!(!json.contains(secret), "{secret} in the report");
        assert!(!evidence.contains(secret), "{secret} in the evidence");
    }
}

/// nvcc matching PyTorch but off the non-interactive PATH: the fix writes a marked block into the
/// shell profile, so the NEXT session (the re-probe, a new exec over the sshd) finds nvcc; running
/// it again adds nothing.
#[test]
fn the_path_fix_takes_effect_on_the_next_probe_and_is_idempotent() {
    let Some(r) = remote("toolkit_off_path", &[]) else {
        return;
    };
    let before = r.doctor();
    assert!(
        before.report.codes().contains(&"cuda_toolkit_off_path"),
        "{:?}",
        before.report.codes()
    );
    assert!(!before.report.facts.nvcc.on_path);
    let code = Some("cuda_toolkit_off_path");
    let commands = fix_commands(&before.report, code).expect("a runnable fix");
    assert!(
        !commands.iter().any(|c| c.starts_with("export PATH")),
        "{commands:?}"
    );
    let fix = |report: &gpurent_core::setup::Report| {
        r.w.app
            .setup_fix_with_key(
                LABEL,
                &r.w.env,
                &r.key,
                report,
                code,
                &options(&r.host.vars),
                &NoProgress,
                &CancelToken::new(),
            )
            .expect("fix")
    };
    let done = fix(&before.report);
    let after = &done.after.report;
    assert!(after.facts.nvcc.on_path, "{:?}", after.facts.nvcc);
    assert!(
        !after.codes().contains(&"cuda_toolkit_off_path"),
        "{:?}",
        after.codes()
    );
    assert_eq!(after.verdict, Verdict::Ready);
    // Idempotent: a second run leaves one block per profile.
    fix(&before.report);
    let home = r.host.dir.path().join("home");
    let dir = before.report.facts.nvcc.path.clone().expect("path");
    let dir = dir.strip_suffix("/nvcc").expect("dir");
    let marker = gpurent_core::setup::distro::path_block_marker(dir);
    for profile in [".bashrc", ".profile"] {
        let text = std::fs::read_to_string(home.join(profile)).expect(profile);
        assert_eq!(text.matches(&marker).count(), 1, "{profile}:\n{text}");
        assert!(text.starts_with(&marker), "{profile} starts with the block");
    }
}
