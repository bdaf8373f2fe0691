//! `gpurent setup` (alias `gpurent doctor`, kept for scripts) as a black box: a saved probe in, the documented JSON out
//! (docs/cli-setup.md); and the real probe script run on this machine, piped back in.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn gpurent(home: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home)
        .args(args)
        .env_remove("GPURENT_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpurent");
    if let Some(s) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(s.as_bytes())
            .expect("write");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("wait")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn section(name: &str, out: &str, rc: i32) -> String {
    format!("@@gpurent@@ begin {name}\n{out}@@gpurent@@ stderr {name}\n@@gpurent@@ end {name} rc={rc}\n")
}

/// An RTX 4090 on driver 550 with a CPU-only torch: the first example.
fn cpu_torch_probe() -> String {
    [
        "@@gpurent@@ probe v1\n".to_string(),
        section("meta", "probe_version=1\nuser=root\nuid=0\nhome=/root\n", 0),
        section("os", "ID=ubuntu\nVERSION_ID=\"22.04\"\n", 0),
        section("nvidia_smi", "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n", 0),
        section("nvidia_smi_query", "index, name, uuid, pci.bus_id, driver_version, compute_cap, memory.total [MiB], memory.used [MiB]\n0, NVIDIA GeForce RTX 4090, GPU-1, 00000000:01:00.0, 550.54.15, 8.9, 24564 MiB, 1 MiB\n", 0),
        section("python", "executable=/usr/bin/python3\nversion=3.11.9\nin_venv=False\nexternally_managed=False\nvenv_module=True\n", 0),
        section("torch", "torch_version=2.3.0+cpu\ntorch_cuda=None\ncuda_available=False\ndevice_count=0\n", 0),
    ]
    .concat()
}

#[test]
fn json_report_has_the_documented_shape() {
    let home = tempfile::tempdir().expect("tmp");
    let file = home.path().join("probe.txt");
    std::fs::write(&file, cpu_torch_probe()).expect("write");
    let out = gpurent(
        home.path(),
        &[
            "doctor", // the old name still works
            "--from-probe",
            file.to_str().expect("utf8"),
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["verdict"]["status"], "fixable");
    assert_eq!(v["verdict"]["codes"][0], "torch_cpu_only");
    let f = &v["findings"][0];
    assert_eq!(f["code"], "torch_cpu_only");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["step"], "pytorch");
    assert_eq!(f["torch"], "2.3.0+cpu");
    assert!(f["evidence"].as_array().is_some_and(|e| !e.is_empty()));
    assert_eq!(f["fix"]["kind"], "run_here");
    let cmd = f["fix"]["commands"][0].as_str().expect("command");
    assert_eq!(
        cmd,
        v["plan"]["commands"][0].as_str().expect("plan command")
    );
    assert!(
        cmd.starts_with("/usr/bin/python3 -m pip install torch=="),
        "{cmd}"
    );
    assert!(cmd.ends_with("--force-reinstall"), "{cmd}");
    assert_eq!(v["facts"]["driver"]["cuda_version"], "12.4");
    assert_eq!(v["facts"]["gpus"][0]["card_id"], "rtx-4090");
    assert_eq!(v["data_as_of"], "2026-11-30");
    // Pinning a release plans exactly that release.
    let out = gpurent(
        home.path(),
        &["setup", "--from-probe", "-", "--torch", "2.4", "--json"],
        Some(&cpu_torch_probe()),
    );
    let v = json(&out);
    assert_eq!(v["plan"]["torch"], "2.4.1");
    assert_eq!(v["plan"]["pinned"], true);
}

#[test]
fn bad_input_is_a_coded_error_with_exit_2() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["setup", "--json"], None);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(json(&out)["error"]["code"], "invalid_input");
    let out = gpurent(
        home.path(),
        &["setup", "--from-probe", "-", "--json"],
        Some("not a probe\n"),
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // The detail names the field and says what is wrong and what to pass instead.
    let detail = json(&out)["error"]["detail"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        detail.starts_with("probe: this is not the output of gpurent's probe script")
            && detail.contains("sh -s < probe.sh"),
        "{detail}"
    );
    let out = gpurent(
        home.path(),
        &["setup", "--from-probe", "/nonexistent/probe.txt", "--json"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "io_error");
}

#[test]
fn the_printed_probe_runs_here_and_degrades_cleanly_without_a_gpu() {
    let home = tempfile::tempdir().expect("tmp");
    let script = gpurent(home.path(), &["setup", "--print-probe"], None);
    assert!(script.status.success());
    let run = Command::new("/bin/sh")
        .arg("-s")
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().expect("stdin").write_all(&script.stdout)?;
            c.wait_with_output()
        })
        .expect("sh");
    assert!(run.status.success());
    let raw = String::from_utf8(run.stdout).expect("utf8");
    assert!(raw.trim_end().ends_with("@@gpurent@@ done"), "{raw}");
    let out = gpurent(
        home.path(),
        &["setup", "--from-probe", "-", "--json"],
        Some(&raw),
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["facts"]["sections"].as_array().map(Vec::len), Some(16));
    assert!(v["facts"]["cpus"].as_u64().is_some_and(|n| n > 0));
    let has_smi = ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| std::path::Path::new(d).join("nvidia-smi").exists());
    if !has_smi {
        assert_eq!(v["facts"]["driver"]["smi_state"], "not_found");
        assert_eq!(v["verdict"]["status"], "blocked");
        assert_eq!(v["verdict"]["needs"], "different_host");
        assert_eq!(v["findings"][0]["code"], "no_nvidia_gpu");
    }
    // The text form says the same.
    let out = gpurent(home.path(), &["setup", "--from-probe", "-"], Some(&raw));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Verdict: "), "{text}");
}

/// `setup <host>`: an unknown host is the SSH layer's `unknown_host`; `--fix` off a terminal
/// without `--yes` is refused before anything connects; the host form excludes `--from-probe`.
#[test]
fn setup_host_form_errors_are_coded() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["setup", "nosuch", "--json"], None);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(json(&out)["error"]["code"], "unknown_host");

    let out = gpurent(home.path(), &["setup", "nosuch", "--fix", "--json"], None);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e = json(&out);
    assert_eq!(
        (e["error"]["code"].as_str(), e["error"]["detail"].as_str()),
        (
            Some("invalid_input"),
            Some("yes: not on a terminal: pass --yes to let gpurent run the fix's commands")
        )
    );

    let out = gpurent(
        home.path(),
        &["setup", "nosuch", "--from-probe", "x.txt", "--json"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "clap refuses the mix: {out:?}");
    let out = gpurent(home.path(), &["setup", "--verify"], None);
    assert_eq!(out.status.code(), Some(2), "--verify needs a host: {out:?}");
}
