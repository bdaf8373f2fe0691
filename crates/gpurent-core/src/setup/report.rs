//! The doctor's answer: facts, findings (stable code, severity, evidence, fix), the overall
//! verdict and the PyTorch install plan. Everything the UI shows is structured: it translates by
//! `code` / `key` and fills in the parameters; `message` is the English fallback.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::facts::{Facts, Provider};

/// Options for a diagnosis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct SetupOptions {
    /// Pin a PyTorch release (`2.3` = newest 2.3.x, `2.3.0` = exactly that).
    #[ts(optional)]
    pub torch: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// The Setup screen's step a finding belongs to (connect → GPU & driver → CUDA → Python →
/// PyTorch → verify; `host` is disk, network and container facts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Host,
    GpuDriver,
    Cuda,
    Python,
    Pytorch,
}

/// What a finding is, with the numbers the sentence needs. Tagged by `code` (stable snake_case;
/// codes are added, never renamed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Diagnosis {
    /// PyTorch sees the GPUs through a CUDA build the driver runs.
    Ready {
        gpus: u32,
        torch: String,
        torch_cuda: String,
        driver_cuda: Option<String>,
    },
    /// No NVIDIA driver or GPU on this host (`nvidia-smi` missing).
    NoNvidiaGpu {
        in_container: bool,
    },
    /// `nvidia-smi` cannot talk to the driver: the kernel module is not loaded.
    DriverNotLoaded {
        kernel: Option<String>,
    },
    /// User-space driver and loaded kernel module differ (upgraded without a reboot).
    NvmlDriverMismatch {
        library_version: Option<String>,
        kernel_module_version: Option<String>,
    },
    /// The driver is loaded but initialised no GPU.
    NoDevices,
    /// A GPU fell off the bus or reports an unknown error.
    GpuLost,
    /// Another process holds GPU memory or compute.
    GpuBusy {
        gpu_index: u32,
        memory_used_mib: u64,
        memory_total_mib: Option<u64>,
        processes: Vec<String>,
    },
    PythonMissing,
    TorchMissing {
        import_error: Option<String>,
    },
    /// A CPU-only build (`torch.version.cuda` is None).
    TorchCpuOnly {
        torch: String,
    },
    /// The wheel's CUDA is newer than the driver runs (`minor_version_compat`: it runs under
    /// minor-version compatibility, with caveats).
    DriverTooOldForTorch {
        torch: String,
        torch_cuda: String,
        driver: Option<String>,
        driver_cuda: String,
        minor_version_compat: bool,
        /// The driver this CUDA needs (`None` when NVIDIA lists only a branch).
        min_driver: Option<String>,
    },
    /// The wheel has no kernels for this GPU ("no kernel image is available").
    GpuArchUnsupportedByTorch {
        torch: String,
        gpu: String,
        compute_cap: String,
        arch_list: Vec<String>,
    },
    /// The (pinned or needed) PyTorch has no wheel for this Python.
    PythonUnsupportedByTorch {
        python: String,
        torch: Option<String>,
        python_min: Option<String>,
        python_max: Option<String>,
    },
    /// No `nvcc`: only needed to build CUDA extensions.
    CudaToolkitMissing {
        torch_cuda: Option<String>,
    },
    /// `nvcc`'s major differs from the wheel's, or it is newer than the driver (a real mismatch;
    /// `on_path` only says whether it is also off PATH).
    CudaToolkitMismatch {
        nvcc: String,
        torch_cuda: Option<String>,
        driver_cuda: Option<String>,
        on_path: bool,
    },
    /// `nvcc` matches (same CUDA major as PyTorch, not newer than the driver) but is not on the
    /// PATH of a non-interactive session (`dir`, e.g. `/usr/local/cuda/bin`, is not in it).
    CudaToolkitOffPath {
        nvcc: String,
        torch_cuda: Option<String>,
        /// Where it is (`/usr/local/cuda/bin/nvcc`).
        path: Option<String>,
        /// The directory to put on PATH.
        dir: String,
    },
    /// A container: the driver belongs to the host machine and cannot be changed from here.
    ContainerDriverFixed {
        provider: Option<Provider>,
        driver: Option<String>,
        driver_cuda: Option<String>,
    },
    DiskLow {
        path: String,
        available_mib: u64,
        needed_mib: u64,
    },
    /// download.pytorch.org did not answer; `mirror` is the reachable source used instead.
    PytorchIndexUnreachable {
        mirror: Option<String>,
    },
    /// torch imports and matches the driver and GPU, yet `cuda.is_available()` is False.
    TorchCudaUnavailable {
        warnings: Vec<String>,
    },
}

impl Diagnosis {
    /// The stable code (the serde tag).
    pub fn code(&self) -> &'static str {
        match self {
            Diagnosis::Ready { .. } => "ready",
            Diagnosis::NoNvidiaGpu { .. } => "no_nvidia_gpu",
            Diagnosis::DriverNotLoaded { .. } => "driver_not_loaded",
            Diagnosis::NvmlDriverMismatch { .. } => "nvml_driver_mismatch",
            Diagnosis::NoDevices => "no_devices",
            Diagnosis::GpuLost => "gpu_lost",
            Diagnosis::GpuBusy { .. } => "gpu_busy",
            Diagnosis::PythonMissing => "python_missing",
            Diagnosis::TorchMissing { .. } => "torch_missing",
            Diagnosis::TorchCpuOnly { .. } => "torch_cpu_only",
            Diagnosis::DriverTooOldForTorch { .. } => "driver_too_old_for_torch",
            Diagnosis::GpuArchUnsupportedByTorch { .. } => "gpu_arch_unsupported_by_torch",
            Diagnosis::PythonUnsupportedByTorch { .. } => "python_unsupported_by_torch",
            Diagnosis::CudaToolkitMissing { .. } => "cuda_toolkit_missing",
            Diagnosis::CudaToolkitMismatch { .. } => "cuda_toolkit_mismatch",
            Diagnosis::CudaToolkitOffPath { .. } => "cuda_toolkit_off_path",
            Diagnosis::ContainerDriverFixed { .. } => "container_driver_fixed",
            Diagnosis::DiskLow { .. } => "disk_low",
            Diagnosis::PytorchIndexUnreachable { .. } => "pytorch_index_unreachable",
            Diagnosis::TorchCudaUnavailable { .. } => "torch_cuda_unavailable",
        }
    }
}

/// Who can carry out a fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    /// gpurent can run these commands on the host now.
    RunHere,
    /// Could be run, but nothing is broken without it (toolkit for extensions, a safer variant).
    Optional,
    /// The user has to act (free disk, stop a process, configure a proxy).
    Manual,
    /// Needs a reboot of the machine.
    Reboot,
    /// Needs a newer NVIDIA driver on this VM (and a reboot).
    DriverUpgrade,
    /// Cannot be fixed from inside: rent another host.
    DifferentHost,
}

/// A structured remark on a fix, translated by `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "key", rename_all = "snake_case")]
pub enum FixNote {
    /// `--force-reinstall`: pip would otherwise keep the installed build of the same version.
    ForceReinstall {
        installed: String,
    },
    /// download.pytorch.org is unreachable; wheels come from this mirror.
    UsesMirror {
        mirror_id: String,
        url: String,
    },
    /// Only the PyPI-default CUDA build is on PyPI mirrors, so this release was chosen.
    PypiDefaultBuildOnly {
        variant: String,
    },
    /// Low disk: pip's cache is skipped.
    NoCacheDir {
        available_mib: u64,
    },
    /// Runs under CUDA minor-version compatibility (PTX JIT and newest features may fail).
    MinorVersionCompat {
        wheel_cuda: String,
        driver_cuda: String,
    },
    /// A new virtual environment is created; activate it to use this PyTorch.
    NewVenv {
        path: String,
    },
    /// A conda environment is created for a supported Python.
    NewCondaEnv {
        name: String,
        python: String,
    },
    /// Installs into the active environment.
    ActiveEnv {
        python: String,
    },
    RebootFollows,
    /// Rent a host whose driver reports at least this "CUDA Version" (provider filter).
    RentHostWithCuda {
        min_cuda: String,
        min_driver: Option<String>,
    },
    /// Install this driver branch: the lowest supported long-term or production branch at or
    /// above `minimum_branch` (the minimum for the needed CUDA), or the minimum itself when no
    /// supported one is (then `lifecycle` says what it is). `source`: NVIDIA's branch page.
    DriverBranch {
        branch: String,
        min_driver: Option<String>,
        minimum_branch: Option<String>,
        lifecycle: crate::compat::branches::BranchLifecycle,
        /// End of life (`YYYY-MM`), when the data has it.
        supported_until: Option<String>,
        source: String,
    },
    /// Only needed to compile CUDA extensions (flash-attn from source, apex, custom ops).
    OnlyForExtensions,
    /// nvcc exists at /usr/local/cuda/bin but is not on PATH.
    AddCudaToPath,
    /// The fix puts `dir` on PATH for later sessions: a block marked "gpurent" at the top of
    /// `~/.bashrc` and `~/.profile`, added once.
    ShellProfile {
        dir: String,
    },
    /// Provider-side fault: reboot or replace the instance.
    ProviderFault,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Fix {
    pub kind: FixKind,
    /// Exact shell commands, in order (empty when there is nothing to run).
    pub commands: Vec<String>,
    pub notes: Vec<FixNote>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Finding {
    #[serde(flatten)]
    pub diagnosis: Diagnosis,
    pub severity: Severity,
    pub step: Step,
    /// The probe lines that show it.
    pub evidence: Vec<String>,
    pub fix: Option<Fix>,
    /// English fallback text.
    pub message: String,
}

/// What stands between this host and a working PyTorch, when it cannot be fixed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Blocker {
    /// The user has to act (free disk, stop processes, reach a package index).
    Manual,
    Reboot,
    DriverUpgrade,
    DifferentHost,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// PyTorch runs on the GPU.
    Ready,
    /// gpurent can fix it here: the codes with a `run_here` fix.
    Fixable { codes: Vec<String> },
    /// Needs something gpurent cannot do from here; `codes` say why.
    Blocked { needs: Blocker, codes: Vec<String> },
}

/// Where the planned wheels come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum WheelSource {
    /// download.pytorch.org.
    Official,
    /// A mirror of download.pytorch.org/whl used as the index.
    MirrorIndex,
    /// A flat directory of wheels (`-f`).
    MirrorFindLinks,
    /// A PyPI (mirror): the release's PyPI-default CUDA build.
    Pypi,
}

/// The environment the plan installs into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PlanEnv {
    /// The active interpreter (a venv, a conda env, or a system Python pip may write to).
    Active { python: String },
    /// A new venv at `path` made from `base_python`.
    NewVenv { path: String, base_python: String },
    /// A new conda environment.
    NewConda {
        name: String,
        python_version: String,
    },
}

/// The chosen PyTorch install.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TorchPlan {
    pub torch: String,
    pub torchvision: String,
    pub torchaudio: Option<String>,
    /// `cu128`.
    pub variant: String,
    pub wheel_cuda: String,
    /// Python `major.minor` the wheels are for.
    pub python_version: String,
    /// The interpreter to use afterwards (verify runs with it).
    pub python: String,
    pub env: PlanEnv,
    pub source: WheelSource,
    /// The index or find-links URL used.
    pub index_url: String,
    pub force_reinstall: bool,
    pub minor_version_compat: bool,
    pub pinned: bool,
    /// Exact commands, in order; safe to re-run.
    pub commands: Vec<String>,
    pub notes: Vec<FixNote>,
}

/// A version the bundled data does not describe yet (answered sensibly, flagged here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "key", rename_all = "snake_case")]
pub enum DataFlag {
    TorchNewerThanData {
        torch: String,
    },
    DriverCudaNewerThanData {
        driver_cuda: String,
    },
    UnknownGpuArch {
        gpu: String,
        compute_cap: Option<String>,
    },
    PinnedTorchUnknown {
        torch: String,
    },
}

/// The doctor's full answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Report {
    pub facts: Facts,
    /// Errors first, then warnings, then info.
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
    pub plan: Option<TorchPlan>,
    /// The date of the bundled compatibility data.
    pub data_as_of: String,
    pub data_flags: Vec<DataFlag>,
}

/// A finding, built in one place by the checks and the diagnosis.
pub(super) fn finding(
    d: Diagnosis,
    severity: Severity,
    step: Step,
    evidence: Vec<String>,
    fix: Option<Fix>,
    message: String,
) -> Finding {
    Finding {
        diagnosis: d,
        severity,
        step,
        evidence,
        fix,
        message,
    }
}

/// A fix of one kind (`None`-able so a check can write `fix(..)` where a fix is optional).
pub(super) fn fix(kind: FixKind, commands: Vec<String>, notes: Vec<FixNote>) -> Option<Fix> {
    Some(Fix {
        kind,
        commands,
        notes,
    })
}

impl Report {
    /// The finding codes, in order.
    pub fn codes(&self) -> Vec<&'static str> {
        self.findings.iter().map(|f| f.diagnosis.code()).collect()
    }
}
