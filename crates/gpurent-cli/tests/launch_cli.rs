//! `gpurent launch` (against the fake `torchrun` of `gpurent-core/tests/fakegpu` on a fake host
//! behind a real loopback sshd) and `gpurent export skypilot` as black boxes.

mod cli_common;

use std::path::Path;

use cli_common::{gpurent, saved_host};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::sshd_available;

#[test]
fn launch_streams_each_rank_and_exits_with_the_jobs_status() {
    if !sshd_available() {
        return;
    }
    let fakegpu = Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpurent-core/tests/fakegpu");
    let host = FakeHost::new(&fakegpu, "ready_h100").expect("fake host");
    let script = host.dir.path().join("home/ddp.py");
    std::fs::write(
        &script,
        "import os\nprint('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])\n",
    )
    .expect("script");
    let sshd = host.serve().expect("serve");
    let (home, id) = saved_host(&sshd, "launch", "box");
    let s = script.display().to_string();
    let out = gpurent(
        home.path(),
        &[
            "launch", "box", "--gpus", "3", "--json", "-i", &id, "--", &s,
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let mut logs: Vec<String> = lines
        .iter()
        .filter(|l| l["kind"] == "log")
        .map(|l| format!("{}:{}", l["rank"], l["line"].as_str().unwrap_or_default()))
        .collect();
    logs.sort();
    assert_eq!(
        logs,
        vec!["0:rank 0 of 3", "1:rank 1 of 3", "2:rank 2 of 3"]
    );
    let last = lines.last().expect("exit");
    assert_eq!(last["kind"], "exit");
    assert_eq!(last["status"], 0);
    let bad = gpurent(
        home.path(),
        &[
            "launch",
            "box",
            "--gpus",
            "2",
            "--gpu-ids",
            "GPU-a",
            "--json",
            "-i",
            &id,
            "--",
            &s,
        ],
    );
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
}

#[test]
fn export_skypilot_prints_a_task() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(
        home.path(),
        &[
            "export",
            "skypilot",
            "--accelerators",
            "A100:4",
            "--nodes",
            "2",
            "--setup",
            "pip install -r requirements.txt",
            "--",
            "train.py",
            "--lr",
            "1e-4",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let y = String::from_utf8_lossy(&out.stdout);
    assert!(y.contains("accelerators: A100:4"), "{y}");
    assert!(y.contains("num_nodes: 2"), "{y}");
    assert!(y.contains("--nproc_per_node=4"), "{y}");
    assert!(y.contains("gpurent does not orchestrate clusters"), "{y}");
}
