//! Rows of the three compatibility tables and their parsers.

use serde::Deserialize;

use super::version::{CudaVer, Ver};
use crate::infra::error::CoreError;

/// One CUDA toolkit release (GA or update) and the driver it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaRelease {
    pub cuda: CudaVer,
    /// `12.8 Update 1`.
    pub release: String,
    pub toolkit_version: Option<Ver>,
    pub linux_min_driver: Option<Ver>,
    pub driver_branch: Option<String>,
    /// The driver from which newer runtimes of this major run (minor-version compatibility).
    pub minor_compat_min: Option<Ver>,
    pub notes: String,
    pub source: String,
}

/// One architecture in a wheel's compiled list: `sass` = machine code, `ptx` = also as PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchEntry {
    pub cc: (u32, u32),
    pub sass: bool,
    pub ptx: bool,
}

/// One PyTorch release × CUDA variant (Linux x86_64).
#[derive(Debug, Clone, PartialEq)]
pub struct TorchWheel {
    pub torch: Ver,
    pub released: String,
    pub python_min: Ver,
    pub python_max: Ver,
    /// `cu128`.
    pub variant: String,
    pub cuda: CudaVer,
    pub index_url: String,
    /// `stable`, `experimental`, `legacy (...)` as the data says.
    pub status: String,
    pub pypi_default: bool,
    pub torchvision: String,
    /// `None` when the release has no torchaudio.
    pub torchaudio: Option<String>,
    pub arch_list: Vec<ArchEntry>,
    /// The exact command as published (`pip install torch==… --index-url …`).
    pub pip_command: String,
    pub notes: String,
    pub source: String,
}

impl TorchWheel {
    /// Whether the release supports this Python (`3.11.13` is in `3.9`–`3.11`).
    pub fn supports_python(&self, py: &Ver) -> bool {
        let mm = Ver(vec![py.major(), py.minor()]);
        self.python_min <= mm && mm <= self.python_max
    }
}

/// What the data says about a compute capability.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchInfo {
    pub ccs: Vec<(u32, u32)>,
    pub sm: String,
    pub architecture: String,
    pub example_gpus: String,
    /// The first CUDA toolkit that compiles for it (`None` for "(pre-11)").
    pub min_cuda: Option<CudaVer>,
    pub min_cuda_text: String,
    pub last_cuda_text: String,
    pub last_driver_branch: String,
    pub kernel_module: String,
    pub first_torch_wheel_text: String,
    pub notes: String,
    pub source: String,
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes())
}

fn bad(file: &str, what: impl std::fmt::Display) -> CoreError {
    CoreError::BundledData(format!("{file}: {what}"))
}

fn opt_ver(s: &str) -> Option<Ver> {
    if s.trim().is_empty() {
        None
    } else {
        Ver::parse(s)
    }
}

#[derive(Deserialize)]
struct CudaRow {
    cuda_version: String,
    release: String,
    toolkit_version: String,
    linux_min_driver: String,
    driver_branch: String,
    minor_compat_linux_min: String,
    notes: String,
    source: String,
}

pub(super) fn parse_cuda(text: &str) -> Result<Vec<CudaRelease>, CoreError> {
    let f = "cuda-driver.csv";
    let mut out = Vec::new();
    for row in reader(text).deserialize::<CudaRow>() {
        let r = row.map_err(|e| bad(f, e))?;
        let cuda = CudaVer::parse(&r.cuda_version)
            .ok_or_else(|| bad(f, format!("bad cuda_version {:?}", r.cuda_version)))?;
        if !r.linux_min_driver.is_empty() && Ver::parse(&r.linux_min_driver).is_none() {
            return Err(bad(f, format!("bad driver {:?}", r.linux_min_driver)));
        }
        out.push(CudaRelease {
            cuda,
            release: r.release,
            toolkit_version: opt_ver(&r.toolkit_version),
            linux_min_driver: opt_ver(&r.linux_min_driver),
            driver_branch: Some(r.driver_branch).filter(|b| !b.is_empty()),
            minor_compat_min: opt_ver(&r.minor_compat_linux_min),
            notes: r.notes,
            source: r.source,
        });
    }
    if out.is_empty() {
        return Err(bad(f, "no rows"));
    }
    Ok(out)
}

#[derive(Deserialize)]
struct WheelRow {
    torch: String,
    released: String,
    python_min: String,
    python_max: String,
    variant: String,
    cuda: String,
    index_url: String,
    status: String,
    pypi_default: String,
    torchvision: String,
    torchaudio: String,
    arch_list: String,
    pip_command: String,
    notes: String,
    source: String,
}

/// `7.5;8.0;12.0+PTX` -> entries (the `+PTX` one is both SASS and PTX).
pub(super) fn parse_arch_list(s: &str) -> Option<Vec<ArchEntry>> {
    s.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (cc, ptx) = match p.strip_suffix("+PTX") {
                Some(cc) => (cc, true),
                None => (p, false),
            };
            Some(ArchEntry {
                cc: crate::catalog::parse_cc(cc)?,
                sass: true,
                ptx,
            })
        })
        .collect()
}

pub(super) fn parse_wheels(text: &str) -> Result<Vec<TorchWheel>, CoreError> {
    let f = "torch-cuda.csv";
    let mut out = Vec::new();
    for row in reader(text).deserialize::<WheelRow>() {
        let r = row.map_err(|e| bad(f, e))?;
        let ctx = format!("{} {}", r.torch, r.variant);
        let ver =
            |s: &str| Ver::parse(s).ok_or_else(|| bad(f, format!("{ctx}: bad version {s:?}")));
        let cuda = CudaVer::parse(&r.cuda)
            .filter(|c| Some(*c) == CudaVer::from_variant(&r.variant))
            .ok_or_else(|| bad(f, format!("{ctx}: cuda {:?} vs variant", r.cuda)))?;
        let arch_list = parse_arch_list(&r.arch_list)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad(f, format!("{ctx}: bad arch_list {:?}", r.arch_list)))?;
        if !r.pip_command.starts_with("pip install torch==")
            || !r.pip_command.contains(&r.index_url)
        {
            return Err(bad(f, format!("{ctx}: unexpected pip_command")));
        }
        out.push(TorchWheel {
            torch: ver(&r.torch)?,
            released: r.released,
            python_min: ver(&r.python_min)?,
            python_max: ver(&r.python_max)?,
            variant: r.variant,
            cuda,
            index_url: r.index_url,
            status: r.status,
            pypi_default: r.pypi_default == "yes",
            torchvision: r.torchvision,
            torchaudio: Some(r.torchaudio).filter(|a| a != "none" && !a.is_empty()),
            arch_list,
            pip_command: r.pip_command,
            notes: r.notes,
            source: r.source,
        });
    }
    if out.is_empty() {
        return Err(bad(f, "no rows"));
    }
    // Newest release first; keep the data's variant order within a release.
    out.sort_by(|a, b| b.torch.cmp(&a.torch));
    Ok(out)
}

#[derive(Deserialize)]
struct ArchRow {
    compute_capability: String,
    sm: String,
    architecture: String,
    example_gpus: String,
    min_cuda_toolkit: String,
    last_cuda_toolkit: String,
    last_driver_branch: String,
    kernel_module: String,
    first_torch_wheel: String,
    notes: String,
    source: String,
}

pub(super) fn parse_arches(text: &str) -> Result<Vec<ArchInfo>, CoreError> {
    let f = "arch-support.csv";
    let mut out = Vec::new();
    for row in reader(text).deserialize::<ArchRow>() {
        let r = row.map_err(|e| bad(f, e))?;
        let ccs = r
            .compute_capability
            .split(';')
            .map(crate::catalog::parse_cc)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                bad(
                    f,
                    format!("bad compute_capability {:?}", r.compute_capability),
                )
            })?;
        out.push(ArchInfo {
            ccs,
            min_cuda: CudaVer::parse(&r.min_cuda_toolkit),
            sm: r.sm,
            architecture: r.architecture,
            example_gpus: r.example_gpus,
            min_cuda_text: r.min_cuda_toolkit,
            last_cuda_text: r.last_cuda_toolkit,
            last_driver_branch: r.last_driver_branch,
            kernel_module: r.kernel_module,
            first_torch_wheel_text: r.first_torch_wheel,
            notes: r.notes,
            source: r.source,
        });
    }
    if out.is_empty() {
        return Err(bad(f, "no rows"));
    }
    Ok(out)
}
