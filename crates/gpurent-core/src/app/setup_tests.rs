use std::sync::Arc;

use super::*;
use crate::infra::clock::FixedClock;
use crate::infra::ipc::Coded;
use crate::infra::paths::Paths;
use crate::setup::pip::PipFailure;
use crate::setup::Facts;

fn app(root: &std::path::Path) -> App {
    App::open(Paths::under(root), Arc::new(FixedClock(1_700)), None).expect("open")
}

const NO_GPU: &str = "@@gpurent@@ probe v1\n@@gpurent@@ begin nvidia_smi\n@@gpurent@@ stderr nvidia_smi\nsh: 1: nvidia-smi: not found\n@@gpurent@@ end nvidia_smi rc=127\n";

#[test]
fn probes_are_kept_under_the_data_dir_with_the_app_clock_and_never_overwritten() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = app(tmp.path());
    assert_eq!(a.setup_latest_probe("box").expect("none"), None);
    let first = a.save_probe("box", "one").expect("save");
    let second = a.save_probe("box", "two").expect("save");
    a.save_probe("box-1", "other host").expect("save");
    assert_eq!(first, a.paths().data.join("probes/box-1700.txt"));
    assert_eq!(second, a.paths().data.join("probes/box-1700.1.txt"));
    assert_eq!(std::fs::read_to_string(&first).expect("read"), "one");
    assert_eq!(a.setup_latest_probe("box").expect("latest"), Some(second));
}

#[test]
fn a_blocked_or_ready_host_has_nothing_to_run_and_errors_have_codes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let r = app(tmp.path()).setup_from_probe(NO_GPU).expect("report");
    let e = fix_commands(&r, None).expect_err("blocked");
    assert_eq!(e.code(), "nothing_to_fix");
    assert!(e.to_string().contains("no_nvidia_gpu"), "{e}");
    let e = fix_commands(&r, Some("no_nvidia_gpu")).expect_err("different host");
    assert_eq!(e.code(), "nothing_to_fix");
    let failed = SetupError::FixFailed {
        command: "pip install torch".into(),
        exit_status: Some(1),
        failure: Some(PipFailure::Network),
        line: Some("ReadTimeoutError".into()),
        done_bytes: 42,
    };
    assert_eq!(failed.code(), "fix_failed_network");
    assert_eq!(
        failed.detail().as_deref(),
        Some("ReadTimeoutError (42 bytes downloaded)")
    );
    assert_eq!(
        SetupError::FixBusy { pgid: 7 }.code(),
        "fix_already_running"
    );
}

#[test]
fn verify_runs_with_gpurent_venv_first_then_the_probed_interpreter() {
    let mut f = Facts::default();
    assert_eq!(best_python(&f), "python3");
    f.python.executable = Some("/usr/bin/python3".into());
    assert_eq!(best_python(&f), "/usr/bin/python3");
    f.python.gpurent_venv = Some("/root/gpurent-venv/".into());
    assert_eq!(best_python(&f), "/root/gpurent-venv/bin/python");
}

#[test]
fn foreign_text_is_refused_and_a_probe_is_diagnosed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(1)), None).expect("open");
    match app.setup_from_probe("hello") {
        Err(CoreError::InvalidInput { field, .. }) => assert_eq!(field, "probe"),
        other => panic!("{other:?}"),
    }
    let raw = "@@gpurent@@ probe v1\n@@gpurent@@ begin nvidia_smi\n@@gpurent@@ stderr nvidia_smi\nsh: 1: nvidia-smi: not found\n@@gpurent@@ end nvidia_smi rc=127\n";
    let r = app.setup_from_probe(raw).expect("report");
    assert_eq!(r.codes(), vec!["no_nvidia_gpu"]);
    assert!(matches!(
        r.verdict,
        crate::setup::Verdict::Blocked {
            needs: crate::setup::Blocker::DifferentHost,
            ..
        }
    ));
    assert!(app.setup_probe_script().starts_with("#!/bin/sh"));
    let v = app.verify_from_output("available=False\n").expect("verify");
    assert!(!v.ok);
}

/// Output that is not the probe's is its own outcome with the saved path and the host's stderr
/// (not "invalid input").
#[test]
fn a_host_that_did_not_run_the_probe_says_so_with_the_saved_path_and_stderr() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = app(tmp.path());
    let e = a
        .keep_and_diagnose(
            "box",
            "Welcome to the rental console\n",
            "sh: 1: sh: not found\n",
            &SetupOptions::default(),
        )
        .expect_err("not a probe");
    assert_eq!(e.code(), "probe_not_run");
    let saved = a.paths().data.join("probes").join("box-1700.txt");
    match &e {
        SetupError::ProbeNotRun { probe_path, stderr } => {
            assert_eq!(probe_path, &saved.display().to_string());
            assert_eq!(stderr, "sh: 1: sh: not found");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(&saved).expect("kept"),
        "Welcome to the rental console\n"
    );
    assert_eq!(
        e.detail(),
        Some(format!("{}: sh: 1: sh: not found", saved.display()))
    );
}

const SECRETS: [&str; 4] = [
    "alice",
    "s3cr3t-TOKEN",
    "__token__",
    "pypi-AgEIcHlwaS5vcmcSECRET",
];

fn probe_with_private_index() -> String {
    format!(
        "{NO_GPU}@@gpurent@@ begin pip\npip 24.0 from /usr/lib/python3/dist-packages/pip (python 3.11)\nconfig=global.index-url='https://alice:s3cr3t-TOKEN@pypi.corp.example/simple'\nenv=PIP_EXTRA_INDEX_URL=https://__token__:pypi-AgEIcHlwaS5vcmcSECRET@upload.pypi.org/legacy/\n@@gpurent@@ stderr pip\n@@gpurent@@ end pip rc=0\n"
    )
}

/// Index credentials never reach the saved probe, the report JSON or the evidence.
#[test]
fn index_credentials_are_redacted_before_the_probe_is_saved_or_shown() {
    let tmp = tempfile::tempdir().expect("tmp");
    let a = app(tmp.path());
    let raw = probe_with_private_index();
    let rep = a
        .keep_and_diagnose("box", &raw, "", &SetupOptions::default())
        .expect("report");
    let saved = std::fs::read_to_string(&rep.probe_path).expect("saved");
    let json = serde_json::to_string(&rep).expect("json");
    let offline = serde_json::to_string(&a.setup_from_probe(&raw).expect("offline")).expect("json");
    let evidence: String = rep
        .report
        .findings
        .iter()
        .flat_map(|f| f.evidence.iter().cloned())
        .collect();
    for s in SECRETS {
        for (what, text) in [
            ("saved probe", &saved),
            ("report", &json),
            ("offline report", &offline),
            ("evidence", &evidence),
        ] {
            assert!(!text.contains(s), "{s} survives in the {what}: {text}");
        }
    }
    assert_eq!(
        rep.report.facts.pip.index_config,
        vec![
            "global.index-url='https://***@pypi.corp.example/simple'".to_string(),
            "PIP_EXTRA_INDEX_URL=https://***@upload.pypi.org/legacy/".to_string(),
        ]
    );
}
