use super::*;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/setup/");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIX}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Build probe output from (section, stdout, stderr, rc) the way probe.sh prints it.
pub(crate) fn probe(parts: &[(&str, &str, &str, i32)]) -> String {
    let mut s = String::from("@@gpurent@@ probe v1\n");
    for (name, out, err, rc) in parts {
        s.push_str(&format!("@@gpurent@@ begin {name}\n{out}"));
        if !out.is_empty() && !out.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!("@@gpurent@@ stderr {name}\n{err}"));
        if !err.is_empty() && !err.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!("@@gpurent@@ end {name} rc={rc}\n"));
    }
    s
}

#[test]
fn r570_table_and_wizard_query_of_an_h100() {
    let raw = probe(&[
        ("nvidia_smi", &fixture("smi-table-r570-h100.txt"), "", 0),
        ("nvidia_smi_query", &fixture("smi-query-h100.csv"), "", 0),
    ]);
    let f = parse(&raw);
    assert_eq!(f.probe_version, Some(1));
    assert_eq!(f.driver.smi_state, SmiState::Ok);
    assert_eq!(f.driver.driver_version.as_deref(), Some("570.124.06"));
    assert_eq!(f.driver.cuda_version.as_deref(), Some("12.8"));
    assert_eq!(f.gpus.len(), 1);
    let g = &f.gpus[0];
    assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(g.compute_cap.as_deref(), Some("9.0"));
    assert_eq!(
        (g.memory_total_mib, g.memory_used_mib),
        (Some(81559), Some(5856))
    );
    assert_eq!(g.utilization_pct, Some(0));
    assert_eq!(g.power_draw_w, Some(145.32));
    assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:61:00.0"));
    assert_eq!(
        g.uuid.as_deref(),
        Some("GPU-3f1c2a6e-8d0b-4c1e-9a57-2b6f0e4d7c11")
    );
    assert!(
        g.card_id.as_deref().is_some_and(|c| c.starts_with("h100")),
        "{:?}",
        g.card_id
    );
}

#[test]
fn headers_of_every_layout_and_the_table_fallback() {
    for (file, driver, cuda) in [
        ("smi-table-r580-a100.txt", "580.95.05", "13.0"),
        ("smi-table-r525-a10.txt", "525.85.12", "12.0"),
        ("smi-table-r535-header.txt", "535.171.04", "12.2"),
        ("smi-table-gb10.txt", "580.142", "13.0"),
    ] {
        let f = parse(&probe(&[("nvidia_smi", &fixture(file), "", 0)]));
        assert_eq!(f.driver.driver_version.as_deref(), Some(driver), "{file}");
        assert_eq!(f.driver.cuda_version.as_deref(), Some(cuda), "{file}");
    }
    // No query section: the table rows are read by pattern, not by column.
    let f = parse(&probe(&[(
        "nvidia_smi",
        &fixture("smi-table-r525-a10.txt"),
        "",
        0,
    )]));
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].name, "NVIDIA A10");
    assert_eq!(
        (f.gpus[0].memory_used_mib, f.gpus[0].memory_total_mib),
        (Some(0), Some(23028))
    );
    let f = parse(&probe(&[(
        "nvidia_smi",
        &fixture("smi-table-gb10.txt"),
        "",
        0,
    )]));
    assert_eq!(f.gpus[0].name, "NVIDIA GB10");
    assert_eq!(
        f.gpus[0].memory_total_mib, None,
        "unified memory shows Not Supported"
    );
}

#[test]
fn csv_is_read_by_header_name_whatever_the_order() {
    let rows = csv_rows(&fixture("smi-query-triton.csv"), "compute_cap");
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[1]["name"].as_deref(),
        Some("NVIDIA RTX 5880 Ada Generation")
    );
    assert_eq!(rows[1]["compute_cap"].as_deref(), Some("8.9"));
    assert_eq!(rows[0]["driver_version"].as_deref(), Some("570.86.15"));
    // [N/A] and [Not Supported] are absent values, not text.
    let rows = csv_rows(
        "index, name, memory.total [MiB]\n0, NVIDIA GB10, [N/A]\n",
        "index",
    );
    assert_eq!(rows[0]["memory.total"], None);
}

#[test]
fn r470_query_retry_without_compute_cap() {
    let out = "Field \"compute_cap\" is not a valid field to query.\n\nindex, name, uuid, pci.bus_id, driver_version, memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%], temperature.gpu, power.draw [W], power.limit [W]\n0, Tesla V100-SXM2-16GB, GPU-1, 00000000:00:04.0, 470.239.06, 16384 MiB, 0 MiB, 16160 MiB, 0 %, 31, 24.10 W, 300.00 W\n";
    let f = parse(&probe(&[("nvidia_smi_query", out, "", 0)]));
    assert_eq!(f.gpus.len(), 1);
    assert_eq!(f.gpus[0].compute_cap, None);
    assert_eq!(f.gpus[0].memory_total_mib, Some(16384));
    assert_eq!(
        f.driver.driver_version, None,
        "no nvidia_smi section: state not probed"
    );
    assert_eq!(f.driver.smi_state, SmiState::NotProbed);
}

#[test]
fn every_documented_failure_output_maps_to_a_state() {
    for (out, err, rc, state) in [
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", "", 9, SmiState::DriverNotLoaded),
        ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n", "", 18, SmiState::NvmlMismatch),
        ("No devices were found\n", "", 6, SmiState::NoDevices),
        ("", "bash: nvidia-smi: command not found\n", 127, SmiState::NotFound),
        ("", "sh: 1: nvidia-smi: not found\n", 127, SmiState::NotFound),
        ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n", "", 255, SmiState::GpuLost),
        ("something else\n", "", 3, SmiState::Failed),
    ] {
        let f = parse(&probe(&[("nvidia_smi", out, err, rc)]));
        assert_eq!(f.driver.smi_state, state, "{out}{err}");
        assert_eq!(f.driver.smi_exit_code, Some(rc));
        assert!(!f.driver.error_lines.is_empty());
    }
    let f = parse(&probe(&[(
        "nvidia_smi",
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n",
        "",
        18,
    ), ("nvidia_proc", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n", "", 0)]));
    assert_eq!(f.driver.nvml_library_version.as_deref(), Some("570.124"));
    assert_eq!(f.driver.kernel_module_version.as_deref(), Some("550.54.15"));
    let f = parse(&probe(&[("nvidia_proc", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build  (dvs-builder@U16-I3-B03-4-3)  Wed Feb 26 2025\n", "", 0)]));
    assert_eq!(
        f.driver.kernel_module_version.as_deref(),
        Some("570.124.06")
    );
}

#[test]
fn nvcc_python_torch_and_the_rest() {
    let nvcc = format!(
        "path=/usr/local/cuda/bin/nvcc\non_path=no\n{}",
        fixture("nvcc-12.8.txt")
    );
    let raw = probe(&[
        ("meta", "probe_version=1\nuser=root\nuid=0\nhome=/root\n", "", 0),
        ("os", "PRETTY_NAME=\"Ubuntu 22.04.5 LTS\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"22.04\"\n", "", 0),
        ("kernel", "Linux 5.15.0-139-generic x86_64\n", "", 0),
        ("cpu", "cpus=32\n", "", 0),
        ("memory", "MemTotal:       263842700 kB\nMemAvailable:   250000000 kB\n", "", 0),
        ("disk", "/root\t104857600\t52428800\t/\n/workspace\t1048576000\t5242880\t/workspace\n", "", 0),
        ("container", "marker=dockerenv\nenv=RUNPOD_POD_ID=abc123\nenv_name=RUNPOD_POD_ID\n", "", 0),
        ("nvcc", &nvcc, "", 0),
        ("python", "interpreter=/usr/bin/python3\nconda_prefix=/opt/conda\nconda_default_env=base\nexecutable=/opt/conda/bin/python\nversion=3.11.13\nin_venv=False\nexternally_managed=False\nvenv_module=True\n", "", 0),
        ("pip", "pip 24.0 from /opt/conda/lib/python3.11/site-packages/pip (python 3.11)\nconfig=global.index-url='https://pypi.tuna.tsinghua.edu.cn/simple'\nconfig=global.timeout='60'\n", "", 0),
        ("net", "reach https://download.pytorch.org/whl/ rc=28 http=000 curl: (28) Connection timed out after 4001 milliseconds\nreach https://pypi.tuna.tsinghua.edu.cn/simple/ rc=0 http=200\n", "", 0),
        // The section-5.1 one-liner's facts for torch 2.8.0+cu128 on an H100.
        ("torch", "dist_torch=2.8.0\ntorch_version=2.8.0+cu128\ntorch_cuda=12.8\ncuda_available=True\ndevice_count=1\ndevice=0|NVIDIA H100 80GB HBM3|9.0|85029158912\narch_list=sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120\ncudnn=91002\n", "", 0),
    ]);
    let f = parse(&raw);
    assert_eq!(
        (f.os.id.as_deref(), f.os.version_id.as_deref()),
        (Some("ubuntu"), Some("22.04"))
    );
    assert_eq!(f.os.arch.as_deref(), Some("x86_64"));
    assert_eq!((f.cpus, f.mem_total_mib), (Some(32), Some(257658)));
    assert_eq!(f.disks[1].available_mib, 5120);
    assert!(f.container.in_container);
    assert_eq!(f.container.provider, Some(Provider::Runpod));
    assert!(f.nvcc.found && !f.nvcc.on_path);
    assert_eq!(
        (f.nvcc.release.as_deref(), f.nvcc.version.as_deref()),
        (Some("12.8"), Some("12.8.93"))
    );
    assert_eq!(f.python.version.as_deref(), Some("3.11.13"));
    assert_eq!(f.python.conda_env.as_deref(), Some("base"));
    assert_eq!(
        f.pip.index_config,
        vec!["global.index-url='https://pypi.tuna.tsinghua.edu.cn/simple'".to_string()]
    );
    assert!(!f.reach[0].reachable && f.reach[1].reachable);
    assert!(f.reach[0].detail.contains("timed out"));
    assert_eq!(f.torch.state, TorchState::Present);
    assert_eq!(f.torch.cuda.as_deref(), Some("12.8"));
    assert_eq!(f.torch.devices[0].capability, "9.0");
    assert_eq!(f.torch.arch_list.len(), 7);
    assert_eq!(f.torch.cudnn, Some(91002));
}

#[test]
fn torch_missing_cpu_only_and_broken_builds() {
    let t = |out: &str| parse(&probe(&[("torch", out, "", 0)])).torch;
    assert_eq!(
        t("import_error=ModuleNotFoundError: No module named 'torch'\n").state,
        TorchState::Missing
    );
    let b = t("import_error=ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\n");
    assert_eq!(b.state, TorchState::Broken);
    let cpu = t("torch_version=2.3.0+cpu\ntorch_cuda=None\ncuda_available=False\ndevice_count=0\narch_list=\ncudnn=None\n");
    assert_eq!(
        (cpu.state, cpu.cuda.as_deref()),
        (TorchState::Present, None)
    );
    let old = t("torch_version=2.1.0+cu121\ntorch_cuda=12.1\ncuda_available=False\nwarning=CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver\n");
    assert_eq!(old.warnings.len(), 1);
    assert!(old.warnings[0].contains("found version 11040"));
}

#[test]
fn truncated_or_foreign_input_never_panics() {
    for raw in ["", "garbage\n", "@@gpurent@@ begin nvidia_smi\n| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |\n"] {
        let f = parse(raw);
        assert_eq!(f.gpus.len(), 0);
        if raw.contains("begin") {
            // Cut before its end marker: facts still read, exit code unknown.
            assert_eq!(f.driver.driver_version.as_deref(), Some("550.54.15"));
            assert_eq!(f.driver.smi_exit_code, None);
        } else {
            assert_eq!(f.driver.smi_state, SmiState::NotProbed);
        }
    }
}
