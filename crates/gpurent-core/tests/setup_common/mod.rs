//! The fake GPU hosts and the scenario table shared by the wizard's two scenario suites: the probe
//! run locally under `sh` (`setup_scenarios.rs`) and over a real loopback sshd
//! (`setup_ssh.rs`). The table is `fakegpu/scenarios/NAME.env` (`EXPECT_*` lines); both suites
//! assert it with [`assert_expected`] and list the scenarios with [`for_each_scenario!`].

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use gpurent_core::app::setup::fix_commands;
use gpurent_core::app::App;
use gpurent_core::infra::clock::FixedClock;
use gpurent_core::infra::paths::Paths;
use gpurent_core::setup::{probe, FixNote, Report, SetupOptions, Severity, Verdict};
use gpurent_core::Coded;
use gpurent_testhost::fakegpu;

/// Calls `$m!(name, ...)` with every scenario of the table (each must have a `.env` file).
#[macro_export]
macro_rules! for_each_scenario {
    ($m:ident) => {
        $m!(
            rtx4090_torch_cpu,
            rtx5090_torch_cu124,
            v100_driver470_torch_cu121,
            nvml_mismatch,
            no_devices_vast,
            no_gpu,
            container_old_host_driver,
            h20_vm_cuda122,
            vm_driver_450_debian,
            py313_pinned_torch23,
            index_unreachable_cn,
            offline,
            low_disk,
            disk_full,
            ready_h100,
            python_missing,
            driver_not_loaded,
            gpu_lost,
            gpu_busy,
            debian_externally_managed,
            toolkit_mismatch_off_path,
            toolkit_off_path,
        );
    };
}

pub fn fakegpu() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakegpu")
}

/// The machine's real interpreter the fake `python3` wraps.
pub fn real_python() -> PathBuf {
    fakegpu::real_python().expect("the scenario suite needs a system python3 (/usr/bin/python3)")
}

/// A fake host of this crate's `tests/fakegpu` (the layout lives in `gpurent-testhost`, shared
/// with the app's E2E journeys).
#[derive(Debug)]
pub struct FakeHost(pub fakegpu::FakeHost);

impl std::ops::Deref for FakeHost {
    type Target = fakegpu::FakeHost;
    fn deref(&self) -> &fakegpu::FakeHost {
        &self.0
    }
}

impl std::ops::DerefMut for FakeHost {
    fn deref_mut(&mut self) -> &mut fakegpu::FakeHost {
        &mut self.0
    }
}

impl FakeHost {
    pub fn new(name: &str) -> FakeHost {
        FakeHost(fakegpu::FakeHost::new(&fakegpu(), name).expect("fake host"))
    }

    /// A `sh` command in the host's cleared environment.
    pub fn sh(&self) -> Command {
        let mut c = Command::new("/bin/sh");
        c.env_clear()
            .envs(self.env().expect("host environment"))
            .current_dir(self.dir.path().join("home"));
        c
    }

    /// Run the real probe script; its stdout.
    pub fn probe(&self) -> String {
        let mut child = self
            .sh()
            .arg("-s")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(probe::SCRIPT.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("probe");
        assert!(
            out.status.success(),
            "probe exit {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf8")
    }
}

pub fn app(tmp: &Path) -> App {
    App::open(
        Paths::under(tmp.join("gpurent")),
        Arc::new(FixedClock(1)),
        None,
    )
    .expect("open")
}

/// The fix a user is shown first: the install plan, else the first error's commands.
pub fn primary_fix(r: &Report) -> String {
    if let Some(p) = &r.plan {
        return p.commands.join(" && ");
    }
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .find_map(|f| f.fix.as_ref().filter(|x| !x.commands.is_empty()))
        .map(|x| x.commands.join(" && "))
        .unwrap_or_default()
}

const SECTIONS: &[&str] = &[
    "meta",
    "os",
    "kernel",
    "cpu",
    "memory",
    "disk",
    "container",
    "nvidia_smi",
    "nvidia_smi_query",
    "nvidia_smi_apps",
    "nvidia_proc",
    "nvcc",
    "python",
    "pip",
    "net",
    "torch",
];

/// The options a scenario is diagnosed with (a pinned torch).
pub fn options(vars: &BTreeMap<String, String>) -> SetupOptions {
    SetupOptions {
        torch: vars.get("EXPECT_PIN").cloned(),
    }
}

/// Every section of the probe is in a raw output.
pub fn assert_sections(name: &str, raw: &str) {
    for s in SECTIONS {
        assert!(
            raw.contains(&format!("@@gpurent@@ begin {s}\n"))
                && raw.contains(&format!("@@gpurent@@ end {s} rc=")),
            "{name}: section {s} missing:\n{raw}"
        );
    }
}

/// The scenario table's expectations: codes, verdict (and what blocks it), the exact fix command,
/// the rent filter; evidence on every finding; and the commands `doctor_fix` would run.
pub fn assert_expected(name: &str, v: &BTreeMap<String, String>, raw: &str, r: &Report) {
    let ctx = || {
        format!(
            "{name}: {}\n{}",
            serde_json::to_string_pretty(&r.findings).unwrap_or_default(),
            raw
        )
    };
    let mut got: Vec<&str> = r.codes();
    got.sort_unstable();
    let mut want: Vec<&str> = v["EXPECT_CODES"].split_whitespace().collect();
    want.sort_unstable();
    assert_eq!(got, want, "codes of {}", ctx());
    let (status, needs) = match &r.verdict {
        Verdict::Ready => ("ready", String::new()),
        Verdict::Fixable { .. } => ("fixable", String::new()),
        Verdict::Blocked { needs, .. } => (
            "blocked",
            serde_json::to_value(needs)
                .expect("json")
                .as_str()
                .unwrap_or("")
                .to_string(),
        ),
    };
    assert_eq!(status, v["EXPECT_VERDICT"], "verdict of {}", ctx());
    assert_eq!(
        needs,
        v.get("EXPECT_NEEDS").cloned().unwrap_or_default(),
        "needs of {}",
        ctx()
    );
    assert_eq!(primary_fix(r), v["EXPECT_FIX"], "fix of {}", ctx());
    if let Some(c) = v.get("EXPECT_RENT_CUDA") {
        let rent = r
            .findings
            .iter()
            .flat_map(|f| f.fix.iter().flat_map(|x| x.notes.iter()))
            .find_map(|n| match n {
                FixNote::RentHostWithCuda { min_cuda, .. } => Some(min_cuda.clone()),
                _ => None,
            });
        assert_eq!(
            rent.as_deref(),
            Some(c.as_str()),
            "rent filter of {}",
            ctx()
        );
    }
    // Every finding carries evidence, and every error says how it is fixed or why it cannot be.
    for f in &r.findings {
        assert!(
            !f.evidence.is_empty(),
            "{name}: {} without evidence",
            f.diagnosis.code()
        );
        assert!(
            f.severity != Severity::Error
                || f.fix.is_some()
                || !matches!(r.verdict, Verdict::Fixable { .. }),
            "{name}: {} without fix",
            f.diagnosis.code()
        );
    }
    // What `gpurent doctor HOST --fix` runs: the shown fix when fixable, nothing otherwise.
    match (&r.verdict, fix_commands(r, None)) {
        (Verdict::Fixable { .. }, Ok(c)) => {
            assert_eq!(c.join(" && "), v["EXPECT_FIX"], "fix_commands of {}", ctx())
        }
        (Verdict::Fixable { .. }, Err(e)) => panic!("{name}: fixable but {e}"),
        (_, Ok(c)) => panic!("{name}: not fixable but would run {c:?}"),
        (_, Err(e)) => assert_eq!(e.code(), "nothing_to_fix", "{name}"),
    }
}
