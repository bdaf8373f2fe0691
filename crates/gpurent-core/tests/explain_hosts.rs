//! "Explain this error" with a host's facts, on the fake GPU hosts of `tests/fakegpu/`: the real
//! probe runs (locally under `sh`, and over a REAL loopback sshd through `App::setup_probe_with_key`,
//! which saves it), and `App::explain_log` reads the host's saved probe by its label. Covers the
//! host-refined answers for arch_not_supported (RTX 5090 sm_120 with a cu124 torch), nccl_shm
//! (a container with Docker's 64 MB /dev/shm) and driver_too_old (a cu121 torch on a driver that
//! runs CUDA 11.0, in a container). The SSH half skips without sshd (fails under `CI=true`).

mod remote_common;
mod setup_common;

use gpurent_core::explain::{explain, Explanation, HostCause, HostInput};
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::setup::{FixKind, FixNote};
use gpurent_core::Coded;
use gpurent_testhost::{sshd_available, UserKey};
use remote_common::{add_confirmed, login_key, spec, world};
use setup_common::{app, options, FakeHost};

const ARCH_LOG: &str = include_str!("fixtures/explain/arch_not_supported.log");
const SHM_LOG: &str = include_str!("fixtures/explain/nccl_shm.log");
const DRIVER_LOG: &str = include_str!("fixtures/explain/driver_too_old_torch.log");

fn assert_arch(e: &Explanation) {
    let m = &e.matches[0];
    assert_eq!(m.code, "arch_not_supported");
    assert_eq!(
        m.cause.host,
        Some(HostCause::ArchMissing {
            gpu: Some("NVIDIA GeForce RTX 5090".into()),
            sm: Some("sm_120".into()),
            torch: Some("2.5.1+cu124".into()),
            torch_max_sm: Some("sm_90".into()),
            torch_has_it: false,
        })
    );
    // The Setup fix for this host: the cu128 wheel the scenario table expects.
    assert_eq!(
        m.fix.setup_code.as_deref(),
        Some("gpu_arch_unsupported_by_torch")
    );
    assert_eq!(m.fix.kind, FixKind::RunHere);
    assert_eq!(
        m.fix.commands.join(" && "),
        "/usr/bin/python3 -m pip install torch==2.11.0 torchvision==0.26.0 torchaudio==2.11.0 --index-url https://download.pytorch.org/whl/cu128"
    );
}

fn assert_shm(e: &Explanation) {
    let m = &e.matches[0];
    assert_eq!(m.code, "nccl_shm");
    assert_eq!(
        m.cause.host,
        Some(HostCause::ShmSize {
            shm_mib: 64,
            in_container: true
        })
    );
    assert!(m.fix.commands[0].contains("--shm-size=16g"), "{:?}", m.fix);
    assert!(m.cause.needs.is_empty(), "{:?}", m.cause);
}

fn assert_driver(e: &Explanation) {
    let m = &e.matches[0];
    assert_eq!(m.code, "driver_too_old");
    assert_eq!(
        m.cause.host,
        Some(HostCause::DriverTooOld {
            driver: Some("450.51.06".into()),
            driver_cuda: Some("11.0".into()),
            needs_cuda: Some("12.1".into()),
            min_driver: Some("530.30.02".into()),
            in_container: true,
        })
    );
    // The container's driver is the host machine's: the Setup finding says rent another host.
    assert_eq!(m.fix.kind, FixKind::DifferentHost);
    assert_eq!(m.fix.setup_code, None);
    assert!(
        m.fix
            .notes
            .iter()
            .any(|n| matches!(n, FixNote::RentHostWithCuda { .. })),
        "{:?}",
        m.fix.notes
    );
}

/// The probe run locally, its report handed to the explainer.
fn local(name: &str, log: &str) -> Explanation {
    let host = FakeHost::new(name);
    let raw = host.probe();
    let r = app(host.dir.path())
        .setup_from_probe_with(&raw, &options(&host.vars))
        .expect("doctor");
    explain(
        log,
        Some(HostInput {
            label: name,
            probe: Some((&r, "local")),
        }),
    )
    .expect("explain")
}

#[test]
fn arch_not_supported_on_a_fake_rtx5090() {
    assert_arch(&local("rtx5090_torch_cu124", ARCH_LOG));
}

#[test]
fn nccl_shm_on_a_fake_container_with_64_mb_shm() {
    assert_shm(&local("rtx5090_torch_cu124", SHM_LOG));
}

#[test]
fn driver_too_old_on_a_fake_container_with_an_old_host_driver() {
    assert_driver(&local("container_old_host_driver", DRIVER_LOG));
}

/// Over a real sshd: probe the host by its label (saved), then explain by that label.
#[test]
fn over_ssh_the_saved_probe_of_the_host_refines_the_answer() {
    if !sshd_available() {
        return;
    }
    for (name, checks) in [
        (
            "rtx5090_torch_cu124",
            vec![
                (ARCH_LOG, assert_arch as fn(&Explanation)),
                (SHM_LOG, assert_shm),
            ],
        ),
        (
            "container_old_host_driver",
            vec![(DRIVER_LOG, assert_driver)],
        ),
    ] {
        let host = FakeHost::new(name);
        let sshd = host.serve().expect("serve the fake host over sshd");
        let k = UserKey::generate("explain-ssh").expect("key");
        sshd.authorize(&k.public_line).expect("authorize");
        let w = world();
        let key = login_key(&k, "k1");
        add_confirmed(&w, "gpu", spec(&sshd), Some(&key));
        // Before any probe: answered without host facts, and it says which it would need.
        let e = w.app.explain_log(SHM_LOG, Some("gpu")).expect("explain");
        let h = e.host.as_ref().expect("host");
        assert_eq!(
            (h.probe_path.as_ref(), h.environment.as_ref()),
            (None, None)
        );
        assert_eq!(e.matches[0].cause.needs, vec!["shm", "container"]);
        let rep = w
            .app
            .setup_probe_with_key(
                "gpu",
                &w.env,
                &key,
                &options(&host.vars),
                &NoProgress,
                &CancelToken::new(),
            )
            .expect("probe over ssh");
        for (log, check) in checks {
            let e = w.app.explain_log(log, Some("gpu")).expect("explain");
            check(&e);
            let h = e.host.as_ref().expect("host");
            assert_eq!(h.probe_path.as_deref(), Some(rep.probe_path.as_str()));
            assert!(
                h.environment
                    .as_deref()
                    .is_some_and(|t| t.contains("Driver:")),
                "{h:?}"
            );
        }
        let err = w
            .app
            .explain_log(SHM_LOG, Some("nope"))
            .expect_err("unknown host");
        assert_eq!(err.code(), "unknown_host");
    }
}
