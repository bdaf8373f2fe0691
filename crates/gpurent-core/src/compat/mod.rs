//! Compatibility knowledge as data: which driver a CUDA release needs (and the minor-version
//! compatibility floors), which PyTorch wheels exist per CUDA variant with their Python range,
//! compiled architectures and exact pip command, and what each compute capability needs.
//! Transcribed into `data/{cuda-driver,torch-cuda,arch-support}.csv` with sources and an "as of"
//! date ([`DATA_AS_OF`]); versions newer than the data are answered sensibly and flagged by the
//! callers (see [`Compat::is_newer_torch`], [`Compat::newest_cuda`]), never a panic.

pub mod branches;
mod tables;
pub mod version;

use std::sync::OnceLock;

use crate::infra::error::CoreError;
pub use tables::{ArchEntry, ArchInfo, CudaRelease, TorchWheel};
pub use version::{parse_cc, CudaVer, Ver};

/// The date the bundled compatibility data describes.
pub const DATA_AS_OF: &str = "2026-11-30";

const CUDA_DRIVER_CSV: &str = include_str!("../../data/cuda-driver.csv");
const TORCH_CUDA_CSV: &str = include_str!("../../data/torch-cuda.csv");
const ARCH_SUPPORT_CSV: &str = include_str!("../../data/arch-support.csv");

/// Whether a wheel built for CUDA `T` runs on a driver whose "CUDA Version" is `C`
/// (gpu-software-compat.md section 0, check order step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSupport {
    /// T <= C.
    Native,
    /// Same major, T > C, driver at or above the major's minor-version-compatibility floor:
    /// works, but PTX JIT and features newer than the driver fail (warn).
    MinorCompat,
    /// T's major is newer than C's, or the driver is below the floor.
    No,
}

/// The minimum Linux driver for a CUDA release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverReq {
    /// The lowest minimum over the release's updates (GA); `None` when NVIDIA lists only a branch.
    pub min_driver: Option<Ver>,
    /// `R580`.
    pub branch: Option<String>,
    /// False when the release is newer than the data (then `branch` is a guess: none).
    pub known: bool,
}

/// The bundled tables.
#[derive(Debug)]
pub struct Compat {
    cuda: Vec<CudaRelease>,
    wheels: Vec<TorchWheel>,
    arches: Vec<ArchInfo>,
}

impl Compat {
    /// The data compiled into this build (parsed once).
    pub fn bundled() -> Result<&'static Compat, CoreError> {
        static CELL: OnceLock<Result<Compat, String>> = OnceLock::new();
        CELL.get_or_init(|| {
            Compat::parse(CUDA_DRIVER_CSV, TORCH_CUDA_CSV, ARCH_SUPPORT_CSV)
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| CoreError::BundledData(e.clone()))
    }

    pub fn parse(cuda_csv: &str, torch_csv: &str, arch_csv: &str) -> Result<Compat, CoreError> {
        Ok(Compat {
            cuda: tables::parse_cuda(cuda_csv)?,
            wheels: tables::parse_wheels(torch_csv)?,
            arches: tables::parse_arches(arch_csv)?,
        })
    }

    pub fn cuda_releases(&self) -> &[CudaRelease] {
        &self.cuda
    }

    /// Every wheel, newest torch first (then the data's variant order).
    pub fn wheels(&self) -> &[TorchWheel] {
        &self.wheels
    }

    pub fn arches(&self) -> &[ArchInfo] {
        &self.arches
    }

    /// The minimum driver for a CUDA release (lowest over its updates).
    pub fn min_driver(&self, cuda: CudaVer) -> DriverReq {
        let rows: Vec<&CudaRelease> = self.cuda.iter().filter(|r| r.cuda == cuda).collect();
        if rows.is_empty() {
            return DriverReq {
                min_driver: None,
                branch: None,
                known: false,
            };
        }
        DriverReq {
            min_driver: rows.iter().filter_map(|r| r.linux_min_driver.clone()).min(),
            branch: rows.iter().find_map(|r| r.driver_branch.clone()),
            known: true,
        }
    }

    /// The driver from which newer runtimes of this CUDA major run (minor-version compatibility).
    pub fn minor_compat_floor(&self, major: u32) -> Option<Ver> {
        self.cuda
            .iter()
            .filter(|r| r.cuda.major == major)
            .find_map(|r| r.minor_compat_min.clone())
    }

    /// The newest CUDA release in the data.
    pub fn newest_cuda(&self) -> Option<CudaVer> {
        self.cuda.iter().map(|r| r.cuda).max()
    }

    /// The highest CUDA a driver version supports, from the minimum-driver table (for hosts whose
    /// nvidia-smi header was not captured). A row's floor is its minimum driver, or, where NVIDIA
    /// lists only a branch (13.4: R615), that branch's first version. Drivers newer than the data
    /// get the newest CUDA whose requirement is known; a row with no verified minimum or branch
    /// (13.5) is never claimed.
    pub fn cuda_for_driver(&self, driver: &Ver) -> Option<CudaVer> {
        self.cuda
            .iter()
            .filter(|r| {
                let floor = r.linux_min_driver.clone().or_else(|| {
                    r.driver_branch
                        .as_deref()
                        .and_then(|b| b.strip_prefix('R'))
                        .and_then(Ver::parse)
                });
                floor.is_some_and(|m| m <= *driver)
            })
            .map(|r| r.cuda)
            .max()
    }

    /// Whether a wheel built for CUDA `wheel` runs on a driver reporting `driver_cuda`.
    /// `driver` (the version) is checked against the floor when known.
    pub fn run_support(
        &self,
        wheel: CudaVer,
        driver_cuda: CudaVer,
        driver: Option<&Ver>,
    ) -> RunSupport {
        if wheel <= driver_cuda {
            return RunSupport::Native;
        }
        if wheel.major != driver_cuda.major {
            return RunSupport::No;
        }
        match (self.minor_compat_floor(wheel.major), driver) {
            (Some(floor), Some(d)) if *d < floor => RunSupport::No,
            _ => RunSupport::MinorCompat,
        }
    }

    /// The wheel row for a torch release and variant (`2.8.0`, `cu128`).
    pub fn wheel(&self, torch: &Ver, variant: &str) -> Option<&TorchWheel> {
        self.wheels
            .iter()
            .find(|w| w.torch == *torch && w.variant == variant)
    }

    /// The newest torch release in the data.
    pub fn newest_torch(&self) -> Option<&Ver> {
        self.wheels.iter().map(|w| &w.torch).max()
    }

    /// True for a torch release newer than every row (its wheels are not described).
    pub fn is_newer_torch(&self, torch: &Ver) -> bool {
        self.newest_torch().is_some_and(|n| torch > n)
    }

    /// What the data says about a compute capability (`8.9` is listed with its family).
    pub fn arch(&self, cc: (u32, u32)) -> Option<&ArchInfo> {
        self.arches.iter().find(|a| a.ccs.contains(&cc))
    }

    /// The oldest wheel (torch release, then variant) whose architectures run this CC.
    pub fn first_wheel_for(&self, cc: (u32, u32)) -> Option<&TorchWheel> {
        self.wheels
            .iter()
            .filter(|w| arch_runs(&w.arch_list, cc).is_some())
            .min_by(|a, b| a.torch.cmp(&b.torch).then(a.cuda.cmp(&b.cuda)))
    }
}

/// How a wheel's architecture list reaches a GPU: `Some(false)` by SASS (same major, minor <= the
/// device's), `Some(true)` only through PTX (`compute_XY` with XY <= CC; needs a driver at least
/// as new as the wheel's toolkit), `None` not at all ("no kernel image is available").
pub fn arch_runs(list: &[ArchEntry], cc: (u32, u32)) -> Option<bool> {
    if list
        .iter()
        .any(|a| a.sass && a.cc.0 == cc.0 && a.cc.1 <= cc.1)
    {
        return Some(false);
    }
    if list.iter().any(|a| a.ptx && a.cc <= cc) {
        return Some(true);
    }
    None
}

/// Parse `torch.cuda.get_arch_list()` items (`sm_90`, `compute_120`, `sm_90a`) into entries.
pub fn arch_list_from_torch(items: &[String]) -> Vec<ArchEntry> {
    let mut out: Vec<ArchEntry> = Vec::new();
    for it in items {
        let (ptx, digits) = if let Some(d) = it.strip_prefix("compute_") {
            (true, d)
        } else if let Some(d) = it.strip_prefix("sm_") {
            (false, d)
        } else {
            continue;
        };
        // Arch-specific targets (sm_90a, sm_100f) are not forward-compatible; skip them.
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let (maj, min) = digits.split_at(digits.len() - 1);
        let (Ok(maj), Ok(min)) = (maj.parse(), min.parse()) else {
            continue;
        };
        match out.iter_mut().find(|e| e.cc == (maj, min)) {
            Some(e) => {
                e.ptx |= ptx;
                e.sass |= !ptx;
            }
            None => out.push(ArchEntry {
                cc: (maj, min),
                sass: !ptx,
                ptx,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests;
