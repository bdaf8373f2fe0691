//! The wizard's scenario suite: each `tests/fakegpu/scenarios/NAME.env` is a fake GPU host. The
//! real probe script runs LOCALLY with `sh`, in a cleared environment whose PATH is a per-test
//! directory of links to the fake tools (`nvidia-smi`, `nvcc`, `python3` with a fake `torch`,
//! `pip`, `curl`, `df`, `id`, `conda`) and a whitelist of system utilities, and its output goes
//! through `App::doctor_from_probe_with`, exactly as a probe fetched over SSH will. Each scenario
//! asserts the finding codes, the verdict and the exact fix command. (Over SSH the same scenario
//! files serve the loopback sshd fixture once it lands.)

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use gpurent_core::app::App;
use gpurent_core::clock::FixedClock;
use gpurent_core::paths::Paths;
use gpurent_core::wizard::{probe, DoctorOptions, FixNote, Report, Severity, Verdict};

const SYS_TOOLS: &[&str] = &[
    "sh", "dash", "bash", "mktemp", "rm", "mkdir", "timeout", "cat", "tail", "head", "date",
    "uname", "nproc", "getconf", "grep", "awk", "mawk", "gawk", "sed", "env", "cut", "sort", "tr",
    "dirname", "basename", "touch", "cp", "chmod", "sleep", "wc", "ls", "printf", "od",
];

fn fakegpu() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakegpu")
}

/// The machine's real interpreter the fake `python3` wraps.
fn real_python() -> PathBuf {
    ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("the scenario suite needs a system python3 (/usr/bin/python3)")
}

/// `KEY=VALUE` lines (quotes stripped), comments skipped.
pub fn load(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .expect("scenario")
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        .collect()
}

/// A fake host: its bin dir, fake root, home and pip state, under one temp dir.
#[derive(Debug)]
pub struct FakeHost {
    pub dir: tempfile::TempDir,
    pub file: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl FakeHost {
    pub fn new(name: &str) -> FakeHost {
        let file = fakegpu().join("scenarios").join(format!("{name}.env"));
        let vars = load(&file);
        let dir = tempfile::tempdir().expect("tmp");
        let bin = dir.path().join("bin");
        for d in ["bin", "root", "home", "state"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        let mut absent: Vec<&str> = vars
            .get("FAKE_ABSENT")
            .map(|v| v.split_whitespace().collect())
            .unwrap_or_default();
        if !vars.contains_key("FAKE_CONDA_ROOT") {
            absent.push("conda");
        }
        for e in std::fs::read_dir(fakegpu().join("bin")).expect("fake bin") {
            let p = e.expect("entry").path();
            let n = p.file_name().expect("name").to_string_lossy().into_owned();
            if !absent.contains(&n.as_str()) {
                std::os::unix::fs::symlink(&p, bin.join(&n)).expect("link");
            }
        }
        for t in SYS_TOOLS {
            let target = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(t))
                .find(|p| p.exists());
            if let (Some(target), false) = (target, bin.join(t).exists()) {
                std::os::unix::fs::symlink(target, bin.join(t)).expect("link");
            }
        }
        let st = Command::new("/bin/sh")
            .arg(fakegpu().join("mkroot.sh"))
            .arg(&file)
            .arg(dir.path().join("root"))
            .env("FAKE_REAL_PYTHON", real_python())
            .status()
            .expect("mkroot");
        assert!(st.success(), "mkroot {name}");
        FakeHost { dir, file, vars }
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// A `sh` command in the host's cleared environment.
    pub fn sh(&self) -> Command {
        let mut c = Command::new("/bin/sh");
        c.env_clear()
            .env("PATH", self.bin())
            .env("HOME", self.dir.path().join("home"))
            .env("GPURENT_PROBE_ROOT", self.dir.path().join("root"))
            .env("FAKEGPU_DIR", fakegpu())
            .env("FAKEGPU_STATE", self.dir.path().join("state"))
            .env("FAKEGPU_SCENARIO", &self.file)
            .env("FAKE_REAL_PYTHON", real_python())
            .current_dir(self.dir.path().join("home"));
        for (k, v) in &self.vars {
            if !k.starts_with("EXPECT_") {
                c.env(k, v);
            }
        }
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

fn check(name: &str) -> Report {
    let host = FakeHost::new(name);
    let raw = host.probe();
    // GPURENT_SCENARIO_DUMP=DIR keeps each raw probe (e.g. to feed `gpurent doctor --from-probe`).
    if let Some(d) = std::env::var_os("GPURENT_SCENARIO_DUMP") {
        std::fs::write(Path::new(&d).join(format!("{name}.probe")), &raw).expect("dump");
    }
    for s in SECTIONS {
        assert!(
            raw.contains(&format!("@@gpurent@@ begin {s}\n"))
                && raw.contains(&format!("@@gpurent@@ end {s} rc=")),
            "{name}: section {s} missing:\n{raw}"
        );
    }
    let v = &host.vars;
    let opts = DoctorOptions {
        torch: v.get("EXPECT_PIN").cloned(),
    };
    let r = app(host.dir.path())
        .doctor_from_probe_with(&raw, &opts)
        .expect("doctor");
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
    assert_eq!(primary_fix(&r), v["EXPECT_FIX"], "fix of {}", ctx());
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
    r
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => { $( #[test] fn $name() { check(stringify!($name)); } )* };
}

scenarios!(
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
);

#[test]
fn every_scenario_file_has_a_test() {
    let src = include_str!("wizard_scenarios.rs");
    for e in std::fs::read_dir(fakegpu().join("scenarios")).expect("dir") {
        let p = e.expect("entry").path();
        let stem = p.file_stem().expect("stem").to_string_lossy().into_owned();
        assert!(
            src.contains(&format!("    {stem},\n")),
            "scenario {stem} is not in the suite"
        );
    }
}

#[test]
fn facts_of_a_scenario_are_parsed_from_the_fake_tools() {
    let r = check("v100_driver470_torch_cu121");
    let f = &r.facts;
    assert_eq!(f.driver.driver_version.as_deref(), Some("470.239.06"));
    assert_eq!(f.driver.cuda_version.as_deref(), Some("11.4"));
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(
        f.gpus[0].compute_cap, None,
        "R470 has no compute_cap: the query is retried without it"
    );
    assert_eq!(f.gpus[0].card_id.as_deref(), Some("v100-sxm2-32gb"));
    assert_eq!(f.nvcc.release.as_deref(), Some("11.4"));
    assert_eq!(f.python.version.as_deref(), Some("3.10.12"));
    assert!(
        f.torch
            .warnings
            .iter()
            .any(|w| w.contains("found version 11040")),
        "{:?}",
        f.torch.warnings
    );
    let p = r.plan.as_ref().expect("plan");
    assert!(
        p.minor_version_compat,
        "cu118 on an 11.4 driver runs under minor-version compatibility"
    );
}

/// The fix loop without SSH: run the plan's commands on the fake host (its `/usr/bin/python3` is
/// the fake interpreter in its bin dir), with a pip that fails midway the first time; pip's
/// output gives cumulative bytes and the failure's cause; re-running converges and the re-probe
/// says ready.
#[test]
fn a_fix_that_fails_midway_converges_when_re_run() {
    use gpurent_core::events::Progress;
    use gpurent_core::wizard::pip::{PipFailure, PipOutcome, PipProgress};

    let mut host = FakeHost::new("rtx4090_torch_cpu");
    host.vars.insert("FAKE_PIP_FAIL".into(), "network".into());
    host.vars.insert("FAKE_PIP_FAIL_ONCE".into(), "1".into());
    let a = app(host.dir.path());
    let plan = a
        .doctor_from_probe(&host.probe())
        .expect("doctor")
        .plan
        .expect("plan");
    let python = host.bin().join("python3");
    let run = |cmd: &str| {
        let cmd = cmd.replace("/usr/bin/python3", &python.to_string_lossy());
        let out = host.sh().arg("-c").arg(&cmd).output().expect("run");
        let mut p = PipProgress::new();
        let bytes: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| match p.feed(l) {
                Some(Progress::Bytes { done_bytes, .. }) => Some(done_bytes),
                _ => None,
            })
            .collect();
        (out.status.success(), p, bytes)
    };
    let cmd = plan.commands.last().expect("pip command");
    let (ok, p, bytes) = run(cmd);
    assert!(!ok);
    assert!(
        matches!(
            p.outcome(),
            PipOutcome::Failed {
                failure: PipFailure::Network,
                ..
            }
        ),
        "{:?}",
        p.outcome()
    );
    assert!(
        bytes.windows(2).all(|w| w[0] <= w[1]) && p.done_bytes() > 781_000_000,
        "{bytes:?}"
    );
    let (ok, p, _) = run(cmd);
    assert!(ok);
    assert_eq!(p.outcome(), PipOutcome::Installed);
    let after = a.doctor_from_probe(&host.probe()).expect("re-check");
    assert_eq!(after.verdict, Verdict::Ready, "{:?}", after.codes());
    assert_eq!(after.facts.torch.version.as_deref(), Some("2.14.0+cu126"));
    assert!(after.plan.is_none());
}
