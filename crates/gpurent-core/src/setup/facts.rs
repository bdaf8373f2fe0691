//! What the probe found on a host, as parsed facts. Versions stay strings on the wire (`570.124.06`,
//! `12.8`) so nothing is lost; the diagnosis reads them with [`crate::compat::Ver`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Everything the probe reported, parsed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct Facts {
    pub probe_version: Option<u32>,
    /// The sections the probe printed (a truncated probe lacks some).
    pub sections: Vec<String>,
    pub user: Option<String>,
    pub uid: Option<u32>,
    pub home: Option<String>,
    pub os: OsFacts,
    pub cpus: Option<u32>,
    pub mem_total_mib: Option<u64>,
    pub mem_available_mib: Option<u64>,
    pub disks: Vec<DiskFree>,
    pub container: ContainerFacts,
    pub driver: DriverFacts,
    pub gpus: Vec<GpuFacts>,
    pub gpu_processes: Vec<GpuProcess>,
    pub nvcc: NvccFacts,
    pub python: PythonFacts,
    pub pip: PipFacts,
    pub reach: Vec<Reach>,
    pub torch: TorchFacts,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct OsFacts {
    /// `ubuntu`, `debian`, `rocky`, ... (os-release ID).
    pub id: Option<String>,
    pub id_like: Option<String>,
    pub version_id: Option<String>,
    pub pretty_name: Option<String>,
    /// `uname -srm`.
    pub kernel: Option<String>,
    pub arch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DiskFree {
    /// The directory asked about (home, /workspace, ...).
    pub path: String,
    pub mount: String,
    pub total_mib: u64,
    pub available_mib: u64,
}

/// A hosting provider recognised from its markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    Runpod,
    Vast,
    Autodl,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ContainerFacts {
    pub in_container: bool,
    pub provider: Option<Provider>,
    /// What gave it away: `dockerenv`, `cgroup=…`, `env=RUNPOD_POD_ID=…`, ...
    pub markers: Vec<String>,
    /// `systemd-detect-virt` (`kvm`, `docker`, `none`) where available.
    pub virt: Option<String>,
    /// DMI vendor / product (a VM shows its hypervisor or cloud).
    pub dmi: Vec<String>,
}

/// How `nvidia-smi` answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SmiState {
    /// It ran and listed GPUs.
    Ok,
    /// Not installed (exit 127 / "not found").
    NotFound,
    /// "couldn't communicate with the NVIDIA driver" (exit 9).
    DriverNotLoaded,
    /// "Driver/library version mismatch" (exit 18).
    NvmlMismatch,
    /// "No devices were found" (exit 6).
    NoDevices,
    /// "GPU is lost", "Unknown Error", fallen off the bus.
    GpuLost,
    /// Some other failure (see the evidence).
    Failed,
    /// The section is missing from the probe.
    #[default]
    NotProbed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct DriverFacts {
    pub smi_state: SmiState,
    pub smi_exit_code: Option<i32>,
    /// From the header or the query (`570.124.06`).
    pub driver_version: Option<String>,
    /// The header's "CUDA Version": the highest CUDA this driver runs, not an installed toolkit.
    pub cuda_version: Option<String>,
    /// `NVML library version: 570.124` on a mismatch.
    pub nvml_library_version: Option<String>,
    /// The loaded kernel module, from /proc/driver/nvidia/version.
    pub kernel_module_version: Option<String>,
    /// The lines nvidia-smi printed when it failed.
    pub error_lines: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct GpuFacts {
    pub index: u32,
    pub name: String,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    /// `9.0`; absent on R470 (no `compute_cap` field) until torch reports it.
    pub compute_cap: Option<String>,
    pub memory_total_mib: Option<u64>,
    pub memory_used_mib: Option<u64>,
    pub utilization_pct: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    /// The catalog card this name matches, if any.
    pub card_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct GpuProcess {
    pub pid: u32,
    pub name: String,
    pub used_mib: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct NvccFacts {
    pub found: bool,
    pub path: Option<String>,
    /// False when only /usr/local/cuda/bin/nvcc exists (add it to PATH to use it).
    pub on_path: bool,
    /// `12.8`.
    pub release: Option<String>,
    /// `12.8.93`.
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct PythonFacts {
    pub found: bool,
    pub executable: Option<String>,
    /// `3.11.13`.
    pub version: Option<String>,
    pub in_venv: bool,
    pub virtual_env: Option<String>,
    pub conda_prefix: Option<String>,
    pub conda_env: Option<String>,
    /// Path of `conda` when installed.
    pub conda: Option<String>,
    /// `name path` lines of `conda env list`.
    pub conda_envs: Vec<String>,
    /// gpurent's own venv (`~/gpurent-venv`) when it exists.
    pub gpurent_venv: Option<String>,
    /// PEP 668: pip refuses to install into this interpreter outside a venv.
    pub externally_managed: bool,
    pub venv_module: bool,
    /// Other interpreters on PATH.
    pub interpreters: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct PipFacts {
    pub version: Option<String>,
    /// `index-url` / `extra-index-url` / `find-links` settings from pip config and PIP_* variables.
    pub index_config: Vec<String>,
}

/// Whether a URL answered (any HTTP status counts as reachable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Reach {
    pub url: String,
    pub reachable: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TorchState {
    /// Imported.
    Present,
    /// `ModuleNotFoundError`.
    Missing,
    /// Import failed for another reason (see `import_error`).
    Broken,
    /// No Python, or the section is missing.
    #[default]
    NotProbed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct TorchFacts {
    pub state: TorchState,
    /// `torch.__version__` (`2.8.0+cu128`).
    pub version: Option<String>,
    /// `torch.version.cuda`; `None` with `state = present` is a CPU-only build.
    pub cuda: Option<String>,
    pub cuda_available: Option<bool>,
    pub device_count: Option<u32>,
    pub devices: Vec<TorchDevice>,
    /// `torch.cuda.get_arch_list()` (empty when CUDA is unavailable).
    pub arch_list: Vec<String>,
    /// `torch.backends.cudnn.version()` (`90100`).
    pub cudnn: Option<u32>,
    /// Installed distribution versions (`pip list` view).
    pub dist_torch: Option<String>,
    pub dist_torchvision: Option<String>,
    pub dist_torchaudio: Option<String>,
    pub import_error: Option<String>,
    /// Warnings torch raised (e.g. "The NVIDIA driver on your system is too old").
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TorchDevice {
    pub index: u32,
    pub name: String,
    /// `9.0`.
    pub capability: String,
    pub total_memory_bytes: Option<u64>,
}
