//! Multi-GPU launch over a REAL loopback sshd with a fake `torchrun` (a real CPU PyTorch from PyPI
//! would pull gigabytes of CUDA wheels; the fake checks gpurent's arguments and gives each rank
//! torchrun's environment): every rank's lines arrive with their rank and environment, the GPUs
//! chosen by UUID reach the ranks, and a cancel leaves no rank alive on the host.

mod monitor_common;

use std::time::{Duration, Instant};

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::multigpu::{rank_line, torchrun_command, LaunchSpec, JOB_DIR, JOB_NAME};
use gpurent_core::remote::job::{run_job, JobOutcome};
use monitor_common::{remote_processes, LiveHost};

const SCRIPT: &str = "import os, time\nprint('hello', os.environ['RANK'], os.environ['WORLD_SIZE'], os.environ['LOCAL_RANK'], os.environ.get('CUDA_VISIBLE_DEVICES'), os.environ['MASTER_PORT'])\nif os.environ.get('HANG'):\n    time.sleep(600)\n";

#[test]
fn ranks_stream_with_their_environment_and_a_cancel_kills_them_all() {
    let Some(h) = LiveHost::start("ready_h100", &[], &[], &[]) else {
        return;
    };
    let script = h.host.dir.path().join("home/train_ddp.py");
    std::fs::write(&script, SCRIPT).expect("script");
    let cancel = CancelToken::new();
    let conn = h.connect(h.sshd.port(), &cancel).expect("connect");
    let spec = LaunchSpec {
        nproc: 2,
        gpus: vec!["GPU-a".into(), "GPU-b".into()],
        script: vec![script.display().to_string()],
    };
    let mut lines = Vec::new();
    let out = run_job(
        &conn,
        JOB_DIR,
        JOB_NAME,
        &torchrun_command(&spec).expect("cmd"),
        &mut |l| lines.push(rank_line(l)),
        &cancel,
    )
    .expect("launch");
    assert_eq!(out, JobOutcome::Exited(Some(0)), "{lines:?}");
    let mut hello: Vec<(Option<u32>, String)> =
        lines.iter().map(|l| (l.rank, l.line.clone())).collect();
    hello.sort();
    assert_eq!(
        hello,
        vec![
            (Some(0), "hello 0 2 0 GPU-a,GPU-b 29500".to_string()),
            (Some(1), "hello 1 2 1 GPU-a,GPU-b 29500".to_string()),
        ]
    );

    // A rank that fails: torchrun exits 1, as the real one does (its ChildFailedError summary).
    let failing = h.host.dir.path().join("home/fail.py");
    std::fs::write(
        &failing,
        "import os, sys\nsys.exit(3 if os.environ['RANK'] == '1' else 0)\n",
    )
    .expect("script");
    let mut failed = Vec::new();
    let out = run_job(
        &conn,
        JOB_DIR,
        JOB_NAME,
        &torchrun_command(&LaunchSpec {
            nproc: 2,
            gpus: vec![],
            script: vec![failing.display().to_string()],
        })
        .expect("cmd"),
        &mut |l| failed.push(rank_line(l)),
        &cancel,
    )
    .expect("launch");
    assert_eq!(out, JobOutcome::Exited(Some(1)), "{failed:?}");
    assert!(
        failed
            .iter()
            .any(|l| l.rank.is_none() && l.line.contains("exitcode  : 3")),
        "{failed:?}"
    );

    // A hanging job: cancel once both ranks spoke; nothing of it stays on the host.
    let hang = format!(
        "HANG=1 {}",
        torchrun_command(&LaunchSpec {
            gpus: vec![],
            ..spec
        })
        .expect("cmd")
    );
    let stopper = cancel.clone();
    let mut spoke = 0;
    let t = Instant::now();
    let r = run_job(
        &conn,
        JOB_DIR,
        JOB_NAME,
        &hang,
        &mut |l| {
            if rank_line(l).rank.is_some() {
                spoke += 1;
            }
            if spoke == 2 {
                stopper.cancel();
            }
        },
        &cancel,
    );
    assert!(r.is_err(), "cancelled: {r:?}");
    assert!(t.elapsed() < Duration::from_secs(60));
    let needle = script.display().to_string();
    let t = Instant::now();
    while !remote_processes(&needle).is_empty() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        remote_processes(&needle),
        Vec::<String>::new(),
        "no rank alive"
    );
}
