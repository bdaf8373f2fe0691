//! The bottleneck hints as a table over telemetry traces (`tests/monitor_traces/*.csv`, one
//! sample per second; each file's header says what it shows and where its shape comes from): each
//! trace raises exactly the hints in the table, with the evidence and first next step the UI shows,
//! and a healthy trace raises none.

use std::path::Path;

use gpurent_core::monitor::hints::{hints, HintKind, Sample, Window, NOTE_UTIL_MEANING};
use gpurent_core::monitor::hoststats::HostSample;
use gpurent_core::monitor::telemetry::{ComputeApp, GpuRow, ThrottleReason};

fn num(s: &str) -> Option<f64> {
    (s != "?").then(|| s.parse().expect("number"))
}

fn reason(s: &str) -> ThrottleReason {
    *ThrottleReason::ALL
        .iter()
        .find(|r| r.suffix() == s)
        .unwrap_or_else(|| panic!("unknown reason {s}"))
}

/// A trace file as samples.
fn load(name: &str) -> Vec<Sample> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/monitor_traces")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("trace");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let c = |name: &str| cells[header.iter().position(|h| *h == name).expect(name)];
            // Columns only some traces have ('?' where a trace lacks them).
            let opt = |name: &str| {
                header
                    .iter()
                    .position(|h| *h == name)
                    .map_or("?", |i| cells[i])
            };
            let uuid = c("uuid").to_string();
            let gpu = GpuRow {
                index: num(c("gpu")).map(|n| n as u32),
                uuid: Some(uuid.clone()),
                name: Some("trace".into()),
                util_gpu_pct: num(c("util_gpu")),
                util_memory_pct: num(c("util_mem")),
                memory_used_mib: num(c("mem_used_mib")),
                memory_total_mib: num(c("mem_total_mib")),
                temperature_c: num(c("temp_c")),
                power_draw_w: num(c("power_w")),
                power_limit_w: num(c("power_limit_w")),
                power_default_limit_w: num(opt("power_default_w")),
                clock_sm_mhz: num(c("sm_mhz")),
                clock_max_sm_mhz: num(opt("sm_max_mhz")),
                pcie_gen: Some(4),
                pcie_width: Some(16),
                throttle: match c("throttle") {
                    "?" => None,
                    "-" => Some(vec![]),
                    r => Some(r.split(';').map(reason).collect()),
                },
            };
            let t = num(c("t_s")).expect("t");
            let cores: Vec<f64> = c("cores_pct")
                .split(';')
                .map(|x| x.parse().expect("core"))
                .collect();
            let host = HostSample {
                uptime_s: Some(1000.0 + t),
                cpu_pct: Some(cores.iter().sum::<f64>() / cores.len() as f64),
                cpu_iowait_pct: num(c("iowait_pct")),
                cores_pct: cores,
                mem_total_mib: Some(128_000.0),
                mem_used_mib: Some(30_000.0),
                ..HostSample::default()
            };
            let apps = match c("apps") {
                "-" => vec![],
                a => a
                    .split(';')
                    .map(|p| {
                        // pid:MiB, or pid:MiB:command line
                        let mut f = p.splitn(3, ':');
                        let (pid, mib) = (f.next().expect("pid"), f.next().expect("mib"));
                        ComputeApp {
                            gpu_uuid: Some(uuid.clone()),
                            pid: pid.parse().ok(),
                            used_memory_mib: mib.parse().ok(),
                            command: f.next().map(str::to_string),
                            cpu_pct: None,
                        }
                    })
                    .collect(),
            };
            Sample {
                at_ms: (t * 1000.0) as i64,
                gpus: vec![gpu],
                host: Some(host),
                apps,
            }
        })
        .collect()
}

/// Trace, the hints it raises (in order), the first evidence key and first next step of the first.
type Row = (
    &'static str,
    &'static [HintKind],
    Option<(&'static str, &'static str)>,
);

const TABLE: &[Row] = &[
    ("healthy.csv", &[], None),
    ("healthy_missing_fields.csv", &[], None),
    ("idle_empty.csv", &[], None),
    // Healthy runs that look like trouble to a naive rule: full load at the default power cap,
    // and servers that hold memory while they wait for requests.
    ("h100_training_at_cap.csv", &[], None),
    ("served_model_idle.csv", &[], None),
    ("notebook_kernel_idle.csv", &[], None),
    (
        "data_loader_bound.csv",
        &[HintKind::DataLoader],
        Some(("monitor.evidence.gpu_util_low", "monitor.step.num_workers")),
    ),
    (
        "cpu_bound_all_cores.csv",
        &[HintKind::DataLoader],
        Some(("monitor.evidence.gpu_util_low", "monitor.step.pretokenise")),
    ),
    (
        "idle_stalled.csv",
        &[HintKind::IdleWithMemory],
        Some((
            "monitor.evidence.gpu_idle_memory_held",
            "monitor.step.check_job_log",
        )),
    ),
    (
        "io_wait.csv",
        &[HintKind::IdleWithMemory],
        Some((
            "monitor.evidence.gpu_idle_memory_held",
            "monitor.step.data_on_local_disk",
        )),
    ),
    (
        "throttled_thermal.csv",
        &[HintKind::ThermalThrottle],
        Some((
            "monitor.evidence.thermal_reason_active",
            "monitor.step.other_host",
        )),
    ),
    (
        "power_brake.csv",
        &[HintKind::PowerThrottle],
        Some((
            "monitor.evidence.power_brake_active",
            "monitor.step.check_power_limit",
        )),
    ),
    (
        "power_cap_lowered.csv",
        &[HintKind::PowerThrottle],
        Some((
            "monitor.evidence.power_limit_lowered",
            "monitor.step.check_power_limit",
        )),
    ),
    (
        "power_cap_clocks_sag.csv",
        &[HintKind::PowerThrottle],
        Some((
            "monitor.evidence.power_cap_clocks_low",
            "monitor.step.check_power_limit",
        )),
    ),
    (
        "hw_slowdown.csv",
        &[HintKind::HwSlowdown],
        Some((
            "monitor.evidence.hw_slowdown_active",
            "monitor.step.other_host",
        )),
    ),
    (
        "near_oom.csv",
        &[HintKind::OomRisk],
        Some((
            "monitor.evidence.vram_near_full",
            "monitor.step.smaller_batch",
        )),
    ),
    (
        "low_intensity.csv",
        &[HintKind::LowIntensity],
        Some((
            "monitor.evidence.busy_at_low_power",
            "monitor.step.larger_batch",
        )),
    ),
];

#[test]
fn every_trace_raises_exactly_its_hints() {
    for (file, kinds, first) in TABLE {
        let samples = load(file);
        assert!(samples.len() >= 20, "{file}: a window of samples");
        let got = hints(&samples);
        assert_eq!(
            got.iter().map(|h| h.kind).collect::<Vec<_>>(),
            kinds.to_vec(),
            "{file}: {got:#?}"
        );
        if let (Some((evidence, step)), Some(h)) = (first, got.first()) {
            assert_eq!(h.evidence[0].key, *evidence, "{file}");
            assert_eq!(h.next_steps[0], *step, "{file}");
            assert_eq!(h.gpu, Some(0));
            assert_eq!(h.key, h.kind.key());
        }
    }
}

#[test]
fn every_trace_file_is_in_the_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/monitor_traces");
    for e in std::fs::read_dir(dir).expect("dir") {
        let name = e.expect("entry").file_name().to_string_lossy().into_owned();
        assert!(
            TABLE.iter().any(|(f, _, _)| *f == name),
            "{name} is not in the table"
        );
    }
}

#[test]
fn the_evidence_carries_the_measured_numbers() {
    let h = &hints(&load("data_loader_bound.csv"))[0];
    let util = h.evidence[0].params["util_pct"];
    assert!((12.0..=35.0).contains(&util), "{util}");
    assert_eq!(h.evidence[1].key, "monitor.evidence.some_cores_saturated");
    assert_eq!(h.evidence[1].params["cores"], 8.0);
    assert_eq!(h.evidence[1].params["saturated"], 1.0);
    assert!(h.heuristic);
    assert_eq!(h.notes, vec![NOTE_UTIL_MEANING.to_string()]);

    let oom = &hints(&load("near_oom.csv"))[0];
    assert!(oom.evidence[0].params["pct"] > 99.0);
    assert_eq!(oom.evidence[0].params["total_mib"], 81_559.0);

    let idle = &hints(&load("idle_stalled.csv"))[0];
    assert!(idle
        .evidence
        .iter()
        .any(|e| e.key == "monitor.evidence.process_holds_memory" && e.params["pid"] == 4242.0));
    assert_eq!(idle.evidence[0].params["seconds"], 19.0);
}

#[test]
fn what_the_driver_reports_is_not_marked_heuristic_and_guesses_are() {
    assert!(!hints(&load("throttled_thermal.csv"))[0].heuristic);
    assert!(!hints(&load("power_brake.csv"))[0].heuristic);
    assert!(!hints(&load("power_cap_lowered.csv"))[0].heuristic);
    assert!(!hints(&load("hw_slowdown.csv"))[0].heuristic);
    assert!(hints(&load("power_cap_clocks_sag.csv"))[0].heuristic);
    for f in [
        "data_loader_bound.csv",
        "idle_stalled.csv",
        "near_oom.csv",
        "low_intensity.csv",
    ] {
        assert!(hints(&load(f))[0].heuristic, "{f}");
    }
}

#[test]
fn too_few_samples_raise_nothing_and_one_odd_sample_changes_nothing() {
    let s = load("data_loader_bound.csv");
    assert!(hints(&s[..4]).is_empty());
    let mut healthy = load("healthy.csv");
    healthy[7] = s[7].clone();
    assert!(hints(&healthy).is_empty());
}

#[test]
fn a_window_keeps_the_last_samples_and_a_trace_change_shows_up() {
    let mut w = Window::new(10);
    for s in load("healthy.csv") {
        w.push(s);
    }
    assert!(w.hints().is_empty());
    for s in load("data_loader_bound.csv").into_iter().take(10) {
        w.push(s);
    }
    assert_eq!(
        w.hints().iter().map(|h| h.kind).collect::<Vec<_>>(),
        vec![HintKind::DataLoader]
    );
}

#[test]
fn each_gpu_of_a_host_gets_its_own_hints() {
    let loader = load("data_loader_bound.csv");
    let oom = load("near_oom.csv");
    let two: Vec<Sample> = loader
        .iter()
        .zip(&oom)
        .map(|(a, b)| {
            let mut s = a.clone();
            let mut g = b.gpus[0].clone();
            g.index = Some(1);
            g.uuid = Some("GPU-1".into());
            s.gpus.push(g);
            s
        })
        .collect();
    let got: Vec<(HintKind, Option<u32>)> = hints(&two).iter().map(|h| (h.kind, h.gpu)).collect();
    assert_eq!(
        got,
        vec![
            (HintKind::DataLoader, Some(0)),
            (HintKind::OomRisk, Some(1))
        ]
    );
}

#[test]
fn every_key_a_hint_carries_is_translated_with_its_numbers() {
    let dict = |lang: &str| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ui/js/i18n")
            .join(format!("{lang}-monitor.js"));
        std::fs::read_to_string(p).expect("dictionary")
    };
    for lang in ["en", "zh-CN"] {
        let d = dict(lang);
        let text = |key: &str| -> String {
            let at = d
                .find(&format!("'{key}':"))
                .unwrap_or_else(|| panic!("{lang}: {key} missing"));
            // The whole entry: the formatter may put a long text on the next line.
            let rest = &d[at + 1..];
            let end = rest.find("\n  '").unwrap_or(rest.len());
            d[at..at + 1 + end].to_string()
        };
        for (file, _, _) in TABLE {
            for h in hints(&load(file)) {
                text(&h.key);
                for k in h.next_steps.iter().chain(&h.notes) {
                    text(k);
                }
                for e in &h.evidence {
                    let t = text(&e.key);
                    for p in e.params.keys() {
                        assert!(
                            t.contains(&format!("{{{p}}}")),
                            "{lang}: {} lacks {{{p}}}",
                            e.key
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_lowered_limit_carries_the_default_and_a_served_model_beside_a_stalled_job_is_left_out() {
    let low = &hints(&load("power_cap_lowered.csv"))[0];
    assert_eq!(low.evidence[0].params["limit_w"], 450.0);
    assert_eq!(low.evidence[0].params["default_w"], 700.0);
    // A stalled job and an idle served model on the same card: the hint names the job only.
    let mut both = load("idle_stalled.csv");
    let served = load("served_model_idle.csv");
    for (s, m) in both.iter_mut().zip(&served) {
        s.apps.extend(m.apps.iter().cloned().map(|mut a| {
            a.gpu_uuid = s.gpus[0].uuid.clone();
            a
        }));
    }
    let h = hints(&both);
    assert_eq!(h.len(), 1, "{h:#?}");
    assert_eq!(h[0].kind, HintKind::IdleWithMemory);
    let pids: Vec<f64> = h[0]
        .evidence
        .iter()
        .filter(|e| e.key == "monitor.evidence.process_holds_memory")
        .map(|e| e.params["pid"])
        .collect();
    assert_eq!(pids, vec![4242.0]);
}

/// `samples` as a container would report them: `/proc` shows the machine (its cores as the trace
/// has them: another tenant's load), the container's CPU is `quota_pct` of its quota, and the
/// job's process uses `app_cpu` % of a core.
fn in_container(mut samples: Vec<Sample>, quota_pct: f64, app_cpu: Option<f64>) -> Vec<Sample> {
    for s in &mut samples {
        if let Some(h) = &mut s.host {
            h.in_container = true;
            h.cpu_limit_cores = Some(8.0);
            h.cpu_pct = Some(quota_pct);
        }
        for a in &mut s.apps {
            a.cpu_pct = app_cpu;
        }
    }
    samples
}

#[test]
fn in_a_container_other_tenants_load_raises_no_data_loader_hint_but_the_jobs_own_cpu_does() {
    // The machine shows a saturated core, but it is not the job's: the job's process is at 20 %
    // of a core and the container at 30 % of its quota.
    let quiet = in_container(load("data_loader_bound.csv"), 30.0, Some(20.0));
    assert!(hints(&quiet).is_empty(), "{:#?}", hints(&quiet));
    // The job's own process holds a full core: the single-process loader.
    let hot = in_container(load("data_loader_bound.csv"), 30.0, Some(99.0));
    let h = hints(&hot);
    assert_eq!(h.len(), 1, "{h:#?}");
    assert_eq!(h[0].kind, HintKind::DataLoader);
    assert_eq!(
        h[0].evidence[1].key,
        "monitor.evidence.process_cpu_saturated"
    );
    assert_eq!(h[0].evidence[1].params["pid"], 4242.0);
    assert_eq!(h[0].next_steps[0], "monitor.step.num_workers");
    // The container's quota is full (loader workers on every core it may use).
    let full = in_container(load("data_loader_bound.csv"), 97.0, None);
    let h = hints(&full);
    assert_eq!(h[0].evidence[1].key, "monitor.evidence.cpu_quota_saturated");
    assert_eq!(h[0].evidence[1].params["cores"], 8.0);
    assert_eq!(h[0].next_steps[0], "monitor.step.pretokenise");
}
