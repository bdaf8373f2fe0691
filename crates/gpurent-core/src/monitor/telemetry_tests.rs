use super::*;

const HEADER: &str = "index, uuid, name, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], temperature.gpu, power.draw [W], power.limit [W], clocks.current.sm [MHz], pcie.link.gen.current, pcie.link.width.current, clocks_event_reasons.gpu_idle, clocks_event_reasons.applications_clocks_setting, clocks_event_reasons.sw_power_cap, clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_thermal_slowdown, clocks_event_reasons.hw_power_brake_slowdown, clocks_event_reasons.sw_thermal_slowdown, clocks_event_reasons.sync_boost";

fn row(i: u32, util: u32, reasons: [&str; 8]) -> String {
    format!(
        "{i}, GPU-{i}aaa, NVIDIA H100 80GB HBM3, {util}, 12, 40000, 81559, 61, 300.50, 700.00, 1980, 5, 16, {}",
        reasons.join(", ")
    )
}

const NONE: [&str; 8] = ["Not Active"; 8];

#[test]
fn the_query_asks_for_every_field_once_with_current_reason_names() {
    let q = GpuQuery::new();
    let f = q.fields();
    for want in [
        "utilization.gpu",
        "utilization.memory",
        "memory.used",
        "memory.total",
        "temperature.gpu",
        "power.draw",
        "power.limit",
        "clocks.sm",
        "pcie.link.gen.current",
        "pcie.link.width.current",
        "uuid",
        "index",
        "name",
        "clocks_event_reasons.sw_power_cap",
        "clocks_event_reasons.hw_thermal_slowdown",
    ] {
        assert_eq!(f.iter().filter(|x| *x == want).count(), 1, "{want}");
    }
    assert_eq!(
        q.command(Some(1000)),
        format!(
            "nvidia-smi --query-gpu={} --format=csv,nounits -lms 1000",
            f.join(",")
        )
    );
    assert!(!q.command(None).contains("-lms"));
    assert_eq!(
        apps_command(),
        "nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,nounits"
    );
}

#[test]
fn a_full_answer_parses_by_header_name() {
    let mut reasons = NONE;
    reasons[2] = "Active";
    let text = format!("{HEADER}\n{}\n{}\n", row(0, 97, reasons), row(1, 3, NONE));
    let rows = parse_gpus(&text, None);
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert_eq!(r.index, Some(0));
    assert_eq!(r.uuid.as_deref(), Some("GPU-0aaa"));
    assert_eq!(r.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(r.util_gpu_pct, Some(97.0));
    assert_eq!(r.util_memory_pct, Some(12.0));
    assert_eq!(r.memory_used_mib, Some(40000.0));
    assert_eq!(r.memory_total_mib, Some(81559.0));
    assert_eq!(r.temperature_c, Some(61.0));
    assert_eq!(r.power_draw_w, Some(300.5));
    assert_eq!(r.power_limit_w, Some(700.0));
    assert_eq!(
        r.clock_sm_mhz,
        Some(1980.0),
        "clocks.current.sm is clocks.sm"
    );
    assert_eq!(r.pcie_gen, Some(5));
    assert_eq!(r.pcie_width, Some(16));
    assert_eq!(r.throttle, Some(vec![ThrottleReason::SwPowerCap]));
    assert_eq!(rows[1].throttle, Some(vec![]));
    assert!((r.memory_fraction().expect("fraction") - 40000.0 / 81559.0).abs() < 1e-9);
}

#[test]
fn columns_in_another_order_give_the_same_rows() {
    let a = parse_gpus(
        "index, memory.used [MiB], utilization.gpu [%]\n0, 100, 50\n",
        None,
    );
    let b = parse_gpus(
        "utilization.gpu [%], index, memory.used [MiB]\n50, 0, 100\n",
        None,
    );
    assert_eq!(a, b);
    assert_eq!(a[0].util_gpu_pct, Some(50.0));
    assert_eq!(a[0].memory_used_mib, Some(100.0));
}

#[test]
fn values_the_driver_cannot_read_are_none() {
    let text = "index, utilization.gpu [%], power.draw [W], pcie.link.gen.current, temperature.gpu, clocks_event_reasons.sw_power_cap\n\
                0, [N/A], [Not Supported], N/A, [Unknown Error], [N/A]\n";
    let r = &parse_gpus(text, None)[0];
    assert_eq!(r.index, Some(0));
    assert_eq!(r.util_gpu_pct, None);
    assert_eq!(r.power_draw_w, None);
    assert_eq!(r.pcie_gen, None);
    assert_eq!(r.temperature_c, None);
    assert_eq!(
        r.throttle, None,
        "no reason readable: unknown, not 'none active'"
    );
}

#[test]
fn a_missing_column_or_short_row_is_none_and_unknown_columns_keep_their_place() {
    let text = "index, fan.speed [%], memory.used [MiB]\n0, 30, 2048\n1, 31\n";
    let rows = parse_gpus(text, None);
    assert_eq!(rows[0].memory_used_mib, Some(2048.0));
    assert_eq!(rows[0].power_draw_w, None);
    assert_eq!(rows[1].index, Some(1));
    assert_eq!(rows[1].memory_used_mib, None);
}

#[test]
fn values_with_units_still_parse() {
    let text = "index, memory.used [MiB], power.draw [W]\n0, 2048 MiB, 61.23 W\n";
    let r = &parse_gpus(text, None)[0];
    assert_eq!(r.memory_used_mib, Some(2048.0));
    assert_eq!(r.power_draw_w, Some(61.23));
}

#[test]
fn an_explicit_header_reads_a_noheader_answer() {
    let h = Header::explicit(&[
        "memory.used",
        "index",
        "clocks_throttle_reasons.hw_slowdown",
    ]);
    let rows = parse_gpus("123, 2, Active\n", Some(&h));
    assert_eq!(rows[0].index, Some(2));
    assert_eq!(rows[0].memory_used_mib, Some(123.0));
    assert_eq!(rows[0].throttle, Some(vec![ThrottleReason::HwSlowdown]));
}

#[test]
fn old_reason_names_parse_to_the_same_reasons() {
    let text = "index, clocks_throttle_reasons.sw_thermal_slowdown, clocks_throttle_reasons.gpu_idle\n0, Active, Not Active\n";
    assert_eq!(
        parse_gpus(text, None)[0].throttle,
        Some(vec![ThrottleReason::SwThermalSlowdown])
    );
}

#[test]
fn a_refused_reason_switches_to_the_old_names_then_a_refused_field_is_dropped() {
    let q = GpuQuery::new();
    let out = "Field \"clocks_event_reasons.gpu_idle\" is not a valid field to query.\n\n";
    assert_eq!(
        rejected_field(out).as_deref(),
        Some("clocks_event_reasons.gpu_idle")
    );
    let old = q.adapt(out).expect("retry");
    assert_eq!(old.reasons, ReasonNames::Throttle);
    assert!(old.arg().contains("clocks_throttle_reasons.sw_power_cap"));
    assert!(!old.arg().contains("clocks_event_reasons."));
    let lacks = old
        .adapt("Field \"pcie.link.gen.current\" is not a valid field to query.\n")
        .expect("retry");
    assert!(!lacks
        .fields()
        .contains(&"pcie.link.gen.current".to_string()));
    assert_eq!(lacks.fields().len(), old.fields().len() - 1);
    let lacks2 = lacks
        .adapt("Field \"clocks_throttle_reasons.sync_boost\" is not a valid field to query.\n")
        .expect("an old reason the driver lacks is dropped");
    assert!(!lacks2.arg().contains("sync_boost"));
    assert_eq!(
        lacks.adapt("Field \"pcie.link.gen.current\" is not a valid field to query.\n"),
        None,
        "a field already dropped: no loop"
    );
    assert_eq!(q.adapt("No devices were found"), None);
}

#[test]
fn compute_apps_parse_by_name_and_no_processes_is_empty() {
    let text = "gpu_uuid, pid, used_gpu_memory [MiB]\nGPU-0aaa, 4242, 38000\nGPU-1aaa, 77, [N/A]\n";
    let apps = parse_apps(text, None);
    assert_eq!(
        apps,
        vec![
            ComputeApp {
                gpu_uuid: Some("GPU-0aaa".into()),
                pid: Some(4242),
                used_memory_mib: Some(38000.0),
                ..ComputeApp::default()
            },
            ComputeApp {
                gpu_uuid: Some("GPU-1aaa".into()),
                pid: Some(77),
                used_memory_mib: None,
                ..ComputeApp::default()
            },
        ]
    );
    assert!(parse_apps("gpu_uuid, pid, used_gpu_memory [MiB]\n", None).is_empty());
    assert!(parse_apps(
        "gpu_uuid, pid, used_gpu_memory [MiB]\nNo running processes found\n",
        None
    )
    .is_empty());
}

#[test]
fn a_loop_stream_groups_rows_into_samples() {
    let mut s = GpuStream::new();
    let mut out = Vec::new();
    let lines = [
        HEADER.to_string(),
        row(0, 10, NONE),
        row(1, 11, NONE),
        row(0, 20, NONE),
        row(1, 21, NONE),
        row(0, 30, NONE),
    ];
    for l in &lines {
        if let Some(sample) = s.push_line(l) {
            out.push(sample);
        }
    }
    assert_eq!(
        out.len(),
        2,
        "the second sample ends as soon as both GPUs are in"
    );
    assert_eq!(
        out.iter()
            .map(|s| s
                .iter()
                .map(|r| r.util_gpu_pct.expect("util"))
                .collect::<Vec<_>>())
            .collect::<Vec<_>>(),
        vec![vec![10.0, 11.0], vec![20.0, 21.0]]
    );
    assert_eq!(s.take().map(|r| r.len()), Some(1));
}

#[test]
fn a_loop_stream_that_repeats_its_header_still_groups() {
    let mut s = GpuStream::new();
    let mut out = Vec::new();
    for l in [
        HEADER.to_string(),
        row(0, 1, NONE),
        HEADER.to_string(),
        row(0, 2, NONE),
        row(0, 3, NONE),
    ] {
        out.extend(s.push_line(&l));
    }
    assert_eq!(out.len(), 3);
    assert_eq!(out[2][0].util_gpu_pct, Some(3.0));
}

#[test]
fn rows_before_any_header_are_ignored_and_warnings_skipped() {
    let mut s = GpuStream::new();
    assert_eq!(s.push_line("0, 1, 2"), None);
    let rows = parse_gpus(
        "WARNING: infoROM is corrupted at gpu 0000:01:00.0\nindex, utilization.gpu [%]\n0, 5\n",
        None,
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].util_gpu_pct, Some(5.0));
}

#[test]
fn a_current_driver_that_lacks_one_reason_keeps_the_current_names_without_it() {
    let refuse = |f: &str| format!("Field \"{f}\" is not a valid field to query.\n");
    let q = GpuQuery::new();
    let trying = q
        .adapt(&refuse("clocks_event_reasons.sync_boost"))
        .expect("try the old names");
    assert_eq!(trying.reasons, ReasonNames::Throttle);
    let settled = trying
        .adapt(&refuse("clocks_throttle_reasons.sync_boost"))
        .expect("neither name: drop it");
    assert_eq!(settled.reasons, ReasonNames::Event);
    assert_eq!(
        settled.dropped,
        vec!["clocks_event_reasons.sync_boost".to_string()]
    );
    assert!(settled.arg().contains("clocks_event_reasons.sw_power_cap"));
    let again = settled
        .adapt(&refuse("clocks_event_reasons.hw_slowdown"))
        .expect("drop");
    assert_eq!(
        again.reasons,
        ReasonNames::Event,
        "decided: no second switch"
    );
    assert_eq!(again.dropped.len(), 2);
}

#[test]
fn servers_are_told_by_their_command_line() {
    for server in [
        "/usr/local/bin/ollama runner --model /root/.ollama/models/blobs/sha256-1 --port 41077",
        "/usr/local/bin/ollama serve",
        "/usr/bin/python3 -m ipykernel_launcher -f /root/.local/share/jupyter/runtime/kernel-1.json",
        "python -m vllm.entrypoints.openai.api_server --model m",
        "vllm serve meta-llama/Llama-3.1-8B",
        "/app/llama-server -m model.gguf",
    ] {
        assert!(serves_requests(server), "{server}");
    }
    for job in [
        "/usr/bin/python3 train.py --bf16",
        "torchrun --nproc_per_node=8 train.py",
        "python ollama_finetune.py",
        "",
    ] {
        assert!(!serves_requests(job), "{job}");
    }
}
