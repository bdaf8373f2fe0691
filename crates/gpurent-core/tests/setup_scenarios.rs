//! The wizard's scenario suite: each `tests/fakegpu/scenarios/NAME.env` is a fake GPU host. The
//! real probe script runs LOCALLY with `sh`, in a cleared environment whose PATH is a per-test
//! directory of links to the fake tools (`nvidia-smi`, `nvcc`, `python3` with a fake `torch`,
//! `pip`, `curl`, `df`, `id`, `conda`) and a whitelist of system utilities, and its output goes
//! through `App::setup_from_probe_with`, exactly as a probe fetched over SSH does. Each scenario
//! asserts the finding codes, the verdict and the exact fix command from the shared table
//! (`setup_common`); `setup_ssh.rs` runs the same table over a real loopback sshd.

mod setup_common;

use std::path::Path;

use gpurent_core::setup::{Report, Verdict};
use setup_common::{app, assert_expected, assert_sections, fakegpu, options, FakeHost};

fn check(name: &str) -> Report {
    let host = FakeHost::new(name);
    let raw = host.probe();
    // GPURENT_SCENARIO_DUMP=DIR keeps each raw probe (e.g. to feed `gpurent doctor --from-probe`).
    if let Some(d) = std::env::var_os("GPURENT_SCENARIO_DUMP") {
        std::fs::write(Path::new(&d).join(format!("{name}.probe")), &raw).expect("dump");
    }
    assert_sections(name, &raw);
    let r = app(host.dir.path())
        .setup_from_probe_with(&raw, &options(&host.vars))
        .expect("doctor");
    assert_expected(name, &host.vars, &raw, &r);
    r
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => { $( #[test] fn $name() { check(stringify!($name)); } )* };
}

for_each_scenario!(scenarios);

#[test]
fn every_scenario_file_has_a_test() {
    let src = include_str!("setup_common/mod.rs");
    for e in std::fs::read_dir(fakegpu().join("scenarios")).expect("dir") {
        let p = e.expect("entry").path();
        let stem = p.file_stem().expect("stem").to_string_lossy().into_owned();
        assert!(
            src.contains(&format!("            {stem},\n")),
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
    // CUDA 12.1 needs driver 530.30.02, written as NVIDIA writes it (not "530.30.2").
    let json = serde_json::to_string(&r.findings).expect("json");
    assert!(json.contains("\"min_driver\":\"530.30.02\""), "{json}");
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
    use gpurent_core::infra::events::Progress;
    use gpurent_core::setup::pip::{PipFailure, PipOutcome, PipProgress};

    let mut host = FakeHost::new("rtx4090_torch_cpu");
    host.vars.insert("FAKE_PIP_FAIL".into(), "network".into());
    host.vars.insert("FAKE_PIP_FAIL_ONCE".into(), "1".into());
    let a = app(host.dir.path());
    let plan = a
        .setup_from_probe(&host.probe())
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
    let after = a.setup_from_probe(&host.probe()).expect("re-check");
    assert_eq!(after.verdict, Verdict::Ready, "{:?}", after.codes());
    assert_eq!(after.facts.torch.version.as_deref(), Some("2.14.0+cu126"));
    assert!(after.plan.is_none());
}

/// Remote paths from the probe (the Python, the conda root) are quoted in the plan: a space in
/// them would otherwise split the command.
#[test]
fn remote_paths_with_spaces_are_quoted_in_the_plan() {
    let mut host = FakeHost::new("debian_externally_managed");
    host.vars.insert(
        "FAKE_PY_EXECUTABLE".into(),
        "/opt/my python/bin/python3".into(),
    );
    let r = app(host.dir.path())
        .setup_from_probe(&host.probe())
        .expect("doctor");
    let plan = r.plan.expect("plan");
    assert!(
        plan.commands
            .contains(&"'/opt/my python/bin/python3' -m venv ~/gpurent-venv".to_string()),
        "{:?}",
        plan.commands
    );

    let mut host = FakeHost::new("py313_pinned_torch23");
    // The fake tools source the scenario file, so the conda root is changed in a copy of it.
    let copy = host.dir.path().join("scenario.env");
    let text = std::fs::read_to_string(&host.file).expect("scenario");
    std::fs::write(
        &copy,
        text.replace(
            "FAKE_CONDA_ROOT=/opt/conda",
            "FAKE_CONDA_ROOT='/opt/my conda'",
        ),
    )
    .expect("copy");
    host.0.file = copy;
    let r = app(host.dir.path())
        .setup_from_probe_with(&host.probe(), &options(&host.vars))
        .expect("doctor");
    let plan = r.plan.expect("plan");
    let py = "'/opt/my conda/envs/gpurent-py3.12/bin/python'";
    assert_eq!(
        plan.commands[..2],
        [
            format!("[ -x {py} ] || conda create -y -n gpurent-py3.12 python=3.12"),
            format!("{py} -m venv ~/gpurent-venv"),
        ],
        "{:?}",
        plan.commands
    );
    // The quoted command parses as one word per path in sh.
    let out = host
        .sh()
        .arg("-c")
        .arg(format!("printf '%s\\n' {py}"))
        .output()
        .expect("sh");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "/opt/my conda/envs/gpurent-py3.12/bin/python\n"
    );
}

/// A driver upgrade aims at a supported production or long-term branch at or above the minimum,
/// with its lifecycle and source, not at the minimum branch itself.
#[test]
fn a_driver_upgrade_recommends_a_supported_long_term_branch() {
    use gpurent_core::setup::FixNote;
    let r = check("vm_driver_450_debian");
    let note = r
        .findings
        .iter()
        .flat_map(|f| f.fix.iter().flat_map(|x| x.notes.iter()))
        .find_map(|n| match n {
            FixNote::DriverBranch { .. } => Some(n.clone()),
            _ => None,
        })
        .expect("driver_branch note");
    let json = serde_json::to_value(&note).expect("json");
    assert_eq!(json["branch"], "R580", "{json}");
    assert_eq!(json["minimum_branch"], "R560", "{json}");
    assert_eq!(json["lifecycle"], "long_term_support", "{json}");
    assert_eq!(json["supported_until"], "2028-06", "{json}");
    assert!(
        json["source"]
            .as_str()
            .is_some_and(|s| s.contains("docs.nvidia.com/datacenter/tesla/drivers")),
        "{json}"
    );
}
