//! Table tests over real-shaped logs (`tests/fixtures/explain/`): every code fires on its log —
//! as it is, in the middle of a long log, with ANSI colours, with CRLF and with zh-CN text
//! around it — the root cause ranks first, warnings alone never fire, healthy logs match nothing.

use super::*;
use crate::setup::facts::*;
use crate::setup::SetupOptions;

macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../tests/fixtures/explain/", $name, ".log")),
        )
    };
}

/// (fixture, the codes expected in rank order).
fn cases() -> Vec<((&'static str, &'static str), &'static [&'static str])> {
    vec![
        (fixture!("cuda_out_of_memory"), &["cuda_out_of_memory"]),
        (fixture!("torch_cpu_build"), &["torch_cpu_build"]),
        (fixture!("driver_not_reachable"), &["driver_not_reachable"]),
        (
            fixture!("nvml_version_mismatch"),
            &["nvml_version_mismatch"],
        ),
        (fixture!("arch_not_supported"), &["arch_not_supported"]),
        (fixture!("driver_too_old"), &["driver_too_old"]),
        (fixture!("driver_too_old_torch"), &["driver_too_old"]),
        (fixture!("nccl_shm"), &["nccl_shm"]),
        (fixture!("nccl_p2p"), &["nccl_p2p"]),
        (fixture!("nccl_timeout"), &["nccl_timeout"]),
        (fixture!("cudnn_missing"), &["cudnn_missing"]),
        (fixture!("bitsandbytes_setup"), &["bitsandbytes_setup"]),
        (fixture!("flash_attn_build"), &["flash_attn_build"]),
        (fixture!("no_matching_wheel"), &["no_matching_wheel"]),
        (fixture!("disk_full"), &["disk_full"]),
        (fixture!("device_side_assert"), &["device_side_assert"]),
        (fixture!("no_gpu_visible"), &["no_gpu_visible"]),
        (fixture!("port_not_listening"), &["port_not_listening"]),
        (fixture!("hf_auth_required"), &["hf_auth_required"]),
        (fixture!("killed_oom_host"), &["killed_oom_host"]),
        // The timeout comes first in the log; the OOM on rank 1 caused it.
        (
            fixture!("oom_then_nccl_timeout"),
            &["cuda_out_of_memory", "nccl_timeout"],
        ),
    ]
}

const HEALTHY: &str = include_str!("../../tests/fixtures/explain/healthy_training.log");

/// The log in the middle of a long one: 150 healthy lines before, 80 after.
fn long(log: &str) -> String {
    let steps: Vec<String> = (0..150)
        .map(|i| {
            format!(
                "step {i}/5000 loss {:.4} lr 1.0e-04 mem 18.2GiB",
                2.0 - i as f64 / 1000.0
            )
        })
        .collect();
    let after: String = HEALTHY
        .lines()
        .cycle()
        .take(80)
        .map(|l| format!("{l}\n"))
        .collect();
    format!("{}\n{log}\n{after}", steps.join("\n"))
}

/// Every word coloured (as `rich` / coloured loggers print).
fn ansi(log: &str) -> String {
    log.lines()
        .map(|l| format!("\x1b[1;31m{}\x1b[0m\n", l.replace(' ', "\x1b[0m \x1b[33m")))
        .collect()
}

fn crlf(log: &str) -> String {
    log.replace('\n', "\r\n")
}

fn zh(log: &str) -> String {
    format!("[2026-12-02 08:31:10] 开始训练：模型 Llama-3.1-8B，批大小 8，学习率 1e-4\n{log}训练异常退出，请联系管理员。日志已保存到 /workspace/logs/训练.log\n")
}

fn codes(e: &Explanation) -> Vec<&str> {
    e.matches.iter().map(|m| m.code.as_str()).collect()
}

/// The line `no` of `input` as the explainer shows it (colours and CR out).
fn input_line(input: &str, no: u32) -> String {
    let l = input.split('\n').nth(no as usize - 1).unwrap_or_default();
    let l = l.trim_end_matches('\r');
    scan::read(l, rules::bundled().expect("rules"))
        .first()
        .map(|l| l.shown.clone())
        .unwrap_or_default()
}

#[test]
fn every_code_fires_on_its_log_in_every_shape() {
    type Shape = fn(&str) -> String;
    let shapes: [(&str, Shape); 5] = [
        ("plain", |s| s.to_string()),
        ("long", long),
        ("ansi", ansi),
        ("crlf", crlf),
        ("zh", zh),
    ];
    for ((name, log), want) in cases() {
        for (shape, f) in shapes {
            let input = f(log);
            let e = explain(&input, None).expect("explain");
            assert_eq!(codes(&e), *want, "{name} ({shape})");
            for m in &e.matches {
                assert!(!m.evidence.is_empty(), "{name} ({shape}): {m:?}");
                assert!(m.evidence.len() <= 5, "{name} ({shape}): {m:?}");
                for ev in &m.evidence {
                    assert_eq!(
                        input_line(&input, ev.line),
                        ev.text,
                        "{name} ({shape}): evidence line {} is that line of the log",
                        ev.line
                    );
                    assert!(!ev.text.contains('\x1b') && !ev.text.contains('\r'));
                }
                assert!(!m.title.is_empty() && !m.meaning.is_empty() && !m.fix.steps.is_empty());
                assert!(!m.sources.is_empty(), "{} cites a source", m.code);
            }
            if shape == "long" {
                let first = e.matches[0].evidence[0].line;
                assert!(
                    first > 150,
                    "{name}: the decisive line is in the middle ({first})"
                );
            }
            assert!(e.suspicious.is_empty(), "{name} ({shape})");
        }
    }
}

#[test]
fn every_code_of_the_table_has_a_log() {
    let tested: Vec<&str> = cases()
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .collect();
    for r in &rules::bundled().expect("rules").rules {
        assert!(tested.contains(&r.code.as_str()), "{} has no log", r.code);
    }
    assert_eq!(rules::bundled().expect("rules").rules.len(), 19);
}

#[test]
fn the_cause_ranks_before_its_consequence_and_says_so() {
    let e = explain(
        include_str!("../../tests/fixtures/explain/oom_then_nccl_timeout.log"),
        None,
    )
    .expect("explain");
    assert_eq!(e.matches[0].consequence_of, None);
    assert_eq!(
        e.matches[1].consequence_of.as_deref(),
        Some("cuda_out_of_memory")
    );
    // The OOM is on line 8, after the timeout on line 1: log order alone would put it second.
    assert_eq!(e.matches[0].evidence[0].line, 8);
    assert_eq!(e.matches[1].evidence[0].line, 1);
}

#[test]
fn warnings_alone_never_fire() {
    let log = include_str!("../../tests/fixtures/explain/warnings_only.log");
    let e = explain(log, None).expect("explain");
    assert_eq!(codes(&e), Vec::<&str>::new(), "{:?}", e.matches);
    // The same decisive texts as errors do fire (the near misses are near).
    for (text, code) in [
        ("RuntimeError: CUDA error: out of memory", "cuda_out_of_memory"),
        ("[rank1]: Error while creating shared memory segment /dev/shm/nccl-AbC123 (size 4194304)", "nccl_shm"),
        ("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device", "disk_full"),
        ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.", "arch_not_supported"),
    ] {
        assert_eq!(codes(&explain(text, None).expect("explain")), vec![code], "{text}");
    }
}

#[test]
fn healthy_logs_match_nothing() {
    for log in [
        HEALTHY,
        include_str!("../../tests/fixtures/explain/healthy_pip.log"),
        "",
        "\n\n",
    ] {
        let e = explain(log, None).expect("explain");
        assert!(e.matches.is_empty(), "{:?}", e.matches);
    }
}

#[test]
fn an_unknown_error_gets_the_most_suspicious_lines() {
    let e = explain(
        include_str!("../../tests/fixtures/explain/unknown_error.log"),
        None,
    )
    .expect("explain");
    assert!(e.matches.is_empty());
    assert_eq!(e.suspicious[0].line, 7);
    assert!(e.suspicious[0]
        .text
        .starts_with("ValueError: Tokenizer class QwenTokenizerFast"));
}

#[test]
fn zh_cn_text_is_kept_in_evidence() {
    let log = "开始训练\n/workspace/run.sh: 第 3 行： 48211 已杀死               python train.py --bf16\n训练失败\n";
    let e = explain(log, None).expect("explain");
    assert_eq!(codes(&e), vec!["killed_oom_host"]);
    assert!(e.matches[0].evidence[0].text.contains("已杀死"));
    assert_eq!(e.matches[0].evidence[0].line, 2);
}

#[test]
fn tokens_in_evidence_are_masked() {
    let log = "huggingface_hub.errors.GatedRepoError: 401 Client Error for https://user:hf_abcdefghijklmnopqrstuvwxyz0123@huggingface.co/x token=hf_abcdefghijklmnopqrstuvwxyz0123";
    let e = explain(log, None).expect("explain");
    let t = &e.matches[0].evidence[0].text;
    assert!(!t.contains("abcdefghijklmnop"), "{t}");
    assert!(t.contains("https://***@huggingface.co"), "{t}");
}

#[test]
fn without_a_host_the_cause_says_which_facts_it_needs() {
    let e = explain(
        include_str!("../../tests/fixtures/explain/nccl_shm.log"),
        None,
    )
    .expect("explain");
    assert_eq!(e.matches[0].cause.needs, vec!["shm", "container"]);
    assert_eq!(e.matches[0].fix.setup_code, None);
    assert_eq!(e.host, None);
    // The log's own details still count: the GPU's architecture and the wheel's kernels.
    let e = explain(
        include_str!("../../tests/fixtures/explain/arch_not_supported.log"),
        None,
    )
    .expect("explain");
    assert_eq!(
        e.matches[0].cause.host,
        Some(HostCause::ArchMissing {
            gpu: None,
            sm: Some("sm_120".into()),
            torch: None,
            torch_max_sm: Some("sm_90".into()),
            torch_has_it: false,
        })
    );
}

// ---- with a host: facts as the probe parser produces them, diagnosed by Setup ----

fn report(f: Facts) -> Report {
    crate::setup::diagnose(f, &SetupOptions::default()).expect("diagnose")
}

fn rtx5090_cu124() -> Facts {
    let mut f = Facts::default();
    f.container.in_container = true;
    f.driver.smi_state = SmiState::Ok;
    f.driver.driver_version = Some("570.124.06".into());
    f.driver.cuda_version = Some("12.8".into());
    f.gpus = vec![GpuFacts {
        name: "NVIDIA GeForce RTX 5090".into(),
        compute_cap: Some("12.0".into()),
        memory_total_mib: Some(32607),
        ..Default::default()
    }];
    f.python.found = true;
    f.python.version = Some("3.12.3".into());
    f.python.executable = Some("/usr/bin/python3".into());
    f.torch.state = TorchState::Present;
    f.torch.version = Some("2.5.1+cu124".into());
    f.torch.cuda = Some("12.4".into());
    f.torch.arch_list = [
        "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
    ]
    .map(String::from)
    .to_vec();
    f.disks = vec![DiskFree {
        path: "/dev/shm".into(),
        mount: "/dev/shm".into(),
        total_mib: 64,
        available_mib: 64,
    }];
    f
}

#[test]
fn arch_not_supported_names_this_gpu_and_the_setup_fix() {
    let r = report(rtx5090_cu124());
    let e = explain(
        include_str!("../../tests/fixtures/explain/arch_not_supported.log"),
        Some(HostInput {
            label: "gpu",
            probe: Some((&r, "/p/gpu-1.txt")),
        }),
    )
    .expect("explain");
    let m = &e.matches[0];
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
    assert!(m.cause.text.starts_with(
        "This is an NVIDIA GeForce RTX 5090 (sm_120); the installed torch 2.5.1+cu124 has kernels up to sm_90."
    ), "{}", m.cause.text);
    assert_eq!(
        m.fix.setup_code.as_deref(),
        Some("gpu_arch_unsupported_by_torch")
    );
    assert_eq!(m.fix.kind, FixKind::RunHere);
    assert!(
        m.fix
            .commands
            .iter()
            .any(|c| c.contains("/whl/cu12") || c.contains("/whl/cu13")),
        "{:?}",
        m.fix.commands
    );
    assert!(m.cause.needs.is_empty());
    let h = e.host.as_ref().expect("host");
    assert_eq!(h.probe_path.as_deref(), Some("/p/gpu-1.txt"));
    assert!(h
        .environment
        .as_deref()
        .is_some_and(|t| t.contains("NVIDIA GeForce RTX 5090")));
}

#[test]
fn driver_too_old_says_the_cuda_needed_and_the_driver_for_it() {
    // A container whose host driver runs CUDA 12.8; the image needs 12.8+ → fine; needs 13.0 here.
    let mut f = rtx5090_cu124();
    f.driver.driver_version = Some("550.127.05".into());
    f.driver.cuda_version = Some("12.4".into());
    f.torch.version = Some("2.4.1+cu124".into());
    f.torch.arch_list.push("sm_120".into());
    let r = report(f);
    let e = explain(
        include_str!("../../tests/fixtures/explain/driver_too_old.log"),
        Some(HostInput {
            label: "gpu",
            probe: Some((&r, "/p")),
        }),
    )
    .expect("explain");
    let m = &e.matches[0];
    assert_eq!(
        m.cause.host,
        Some(HostCause::DriverTooOld {
            driver: Some("550.127.05".into()),
            driver_cuda: Some("12.4".into()),
            needs_cuda: Some("12.8".into()),
            min_driver: Some("570.26".into()),
            in_container: true,
        })
    );
    // In a container the driver is the host machine's: rent one whose driver runs CUDA 12.8.
    assert_eq!(m.fix.kind, FixKind::DifferentHost);
    assert!(
        m.fix
            .notes
            .iter()
            .any(|n| matches!(n, FixNote::RentHostWithCuda { min_cuda, .. } if min_cuda == "12.8")),
        "{:?}",
        m.fix.notes
    );
    assert_eq!(m.fix.setup_code, None);
}

#[test]
fn nccl_shm_reports_the_shm_size_seen_and_the_container_flags() {
    let r = report(rtx5090_cu124());
    let e = explain(
        include_str!("../../tests/fixtures/explain/nccl_shm.log"),
        Some(HostInput {
            label: "gpu",
            probe: Some((&r, "/p")),
        }),
    )
    .expect("explain");
    let m = &e.matches[0];
    assert_eq!(
        m.cause.host,
        Some(HostCause::ShmSize {
            shm_mib: 64,
            in_container: true
        })
    );
    assert!(m
        .cause
        .text
        .starts_with("/dev/shm on this host is 64 MiB (Docker's default is 64 MB)"));
    assert!(
        m.fix.commands[0].contains("--shm-size=16g"),
        "{:?}",
        m.fix.commands
    );
    assert!(m
        .fix
        .commands
        .iter()
        .any(|c| c == "export NCCL_SHM_DISABLE=1"));
    assert!(m.cause.needs.is_empty());
    // A probe without /dev/shm (older probe) says it needs that fact.
    let mut f = rtx5090_cu124();
    f.disks.clear();
    let r = report(f);
    let e = explain(
        include_str!("../../tests/fixtures/explain/nccl_shm.log"),
        Some(HostInput {
            label: "gpu",
            probe: Some((&r, "/p")),
        }),
    )
    .expect("explain");
    assert_eq!(e.matches[0].cause.host, None);
    assert_eq!(e.matches[0].cause.needs, vec!["shm"]);
}

#[test]
fn a_host_without_a_saved_probe_is_named_and_not_an_error() {
    let e = explain(
        "RuntimeError: No CUDA GPUs are available",
        Some(HostInput {
            label: "gpu",
            probe: None,
        }),
    )
    .expect("explain");
    assert_eq!(codes(&e), vec!["no_gpu_visible"]);
    let h = e.host.expect("host");
    assert_eq!(
        (h.label.as_str(), h.probe_path, h.environment),
        ("gpu", None, None)
    );
    assert_eq!(e.matches[0].cause.needs, vec!["gpu", "driver", "container"]);
}

#[test]
fn a_damaged_table_is_an_error_with_a_code() {
    let e = rules::parse("code,layer\nx,1\n").expect_err("damaged");
    assert_eq!(e.code(), "bundled_data_damaged");
}

#[test]
fn every_code_has_its_ui_texts_in_both_languages() {
    let en = include_str!("../../../../ui/js/i18n/en-explain.js");
    let zh = include_str!("../../../../ui/js/i18n/zh-CN-explain.js");
    // A key as prettier writes it (single quotes), or double-quoted.
    let has = |file: &str, key: &str| {
        file.contains(&format!("'{key}'")) || file.contains(&format!("\"{key}\""))
    };
    for r in &rules::bundled().expect("rules").rules {
        for part in ["title", "meaning", "cause", "fix"] {
            let key = format!("explain.code.{}.{part}", r.code);
            assert!(has(en, &key) && has(zh, &key), "{key}");
        }
    }
    // The host causes the UI translates by key.
    for key in [
        "arch_missing",
        "driver_too_old",
        "shm_size",
        "gpu_memory",
        "host_memory",
        "disk_free",
        "gpus_visible",
        "driver_state",
        "listens_on",
    ] {
        let k = format!("explain.cause.{key}");
        assert!(has(en, &k) && has(zh, &k), "{k}");
    }
}
