//! The local NVIDIA GPUs (name, total / free VRAM, driver version, the CUDA version the driver
//! supports), read through NVML behind a small trait so tests use a fake. No driver or no NVIDIA GPU
//! — the usual case on a Mac and on CI machines — is a normal answer, never an error.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::units::GIB;

/// One local GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LocalGpu {
    pub index: u32,
    pub name: String,
    pub total_gib: f64,
    pub free_gib: f64,
    /// The catalog card with this name, when one matches ("NVIDIA GeForce RTX 4090" -> rtx-4090).
    pub catalog_id: Option<String>,
}

/// Why no GPU is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum NoGpuReason {
    /// libnvidia-ml could not be loaded (no NVIDIA driver installed, or not an NVIDIA machine).
    NoDriver,
    /// The driver is there but reports no devices.
    NoDevices,
    /// NVML answered with an error (driver/library mismatch, permissions...).
    NvmlError,
}

/// What the machine has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LocalGpuReport {
    Found {
        gpus: Vec<LocalGpu>,
        driver_version: Option<String>,
        /// The newest CUDA the driver supports, "12.4".
        cuda_version: Option<String>,
    },
    NoLocalGpu {
        reason: NoGpuReason,
        /// Technical detail for an expandable section.
        detail: Option<String>,
    },
}

/// A raw device reading, before catalog matching.
#[derive(Debug, Clone, PartialEq)]
pub struct RawGpu {
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// What the probe found, or why nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeOutcome {
    Devices {
        gpus: Vec<RawGpu>,
        driver_version: Option<String>,
        /// NVML's encoded CUDA driver version (major × 1000 + minor × 10).
        cuda_driver_version: Option<i32>,
    },
    Unavailable {
        reason: NoGpuReason,
        detail: String,
    },
}

/// Something that can list local GPUs (NVML in the app, a fake in tests).
pub trait GpuProbe {
    fn probe(&self) -> ProbeOutcome;
}

/// The real probe: loads libnvidia-ml at run time.
#[derive(Debug, Default, Clone, Copy)]
pub struct NvmlProbe;

impl GpuProbe for NvmlProbe {
    fn probe(&self) -> ProbeOutcome {
        use nvml_wrapper::error::NvmlError;
        let nvml = match nvml_wrapper::Nvml::init() {
            Ok(n) => n,
            Err(e) => {
                let reason = match e {
                    NvmlError::LibloadingError(_)
                    | NvmlError::LibraryNotFound
                    | NvmlError::DriverNotLoaded
                    | NvmlError::FunctionNotFound => NoGpuReason::NoDriver,
                    _ => NoGpuReason::NvmlError,
                };
                return ProbeOutcome::Unavailable {
                    reason,
                    detail: e.to_string(),
                };
            }
        };
        let count = match nvml.device_count() {
            Ok(c) => c,
            Err(e) => {
                return ProbeOutcome::Unavailable {
                    reason: NoGpuReason::NvmlError,
                    detail: e.to_string(),
                }
            }
        };
        let mut gpus = Vec::new();
        for i in 0..count {
            let Ok(dev) = nvml.device_by_index(i) else {
                continue;
            };
            let name = dev.name().unwrap_or_else(|_| format!("GPU {i}"));
            let (total, free) = dev.memory_info().map_or((0, 0), |m| (m.total, m.free));
            gpus.push(RawGpu {
                name,
                total_bytes: total,
                free_bytes: free,
            });
        }
        ProbeOutcome::Devices {
            gpus,
            driver_version: nvml.sys_driver_version().ok(),
            cuda_driver_version: nvml.sys_cuda_driver_version().ok(),
        }
    }
}

/// "NVIDIA GeForce RTX 4090" -> "rtx-4090" when a catalog card has that name.
pub fn match_catalog(name: &str, cards: &[crate::catalog::Card]) -> Option<String> {
    let norm = |s: &str| {
        s.to_lowercase()
            .replace("nvidia", "")
            .replace("geforce", "")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
    };
    let want = norm(name);
    if let Some(c) = cards.iter().find(|c| norm(&c.name) == want) {
        return Some(c.id.clone());
    }
    // "NVIDIA H100 80GB HBM3" starts with the catalog's "H100 ..."? Take the longest such name.
    cards
        .iter()
        .filter(|c| want.starts_with(&norm(&c.name)))
        .max_by_key(|c| norm(&c.name).len())
        .map(|c| c.id.clone())
}

/// Turn a probe outcome into the report the UI shows.
pub fn report(probe: &dyn GpuProbe, cards: &[crate::catalog::Card]) -> LocalGpuReport {
    match probe.probe() {
        ProbeOutcome::Unavailable { reason, detail } => LocalGpuReport::NoLocalGpu {
            reason,
            detail: Some(detail),
        },
        ProbeOutcome::Devices { gpus, .. } if gpus.is_empty() => LocalGpuReport::NoLocalGpu {
            reason: NoGpuReason::NoDevices,
            detail: None,
        },
        ProbeOutcome::Devices {
            gpus,
            driver_version,
            cuda_driver_version,
        } => LocalGpuReport::Found {
            gpus: gpus
                .into_iter()
                .enumerate()
                .map(|(i, g)| LocalGpu {
                    index: i as u32,
                    catalog_id: match_catalog(&g.name, cards),
                    name: g.name,
                    total_gib: g.total_bytes as f64 / GIB,
                    free_gib: g.free_bytes as f64 / GIB,
                })
                .collect(),
            driver_version,
            cuda_version: cuda_driver_version.map(|v| {
                format!(
                    "{}.{}",
                    nvml_wrapper::cuda_driver_version_major(v),
                    nvml_wrapper::cuda_driver_version_minor(v)
                )
            }),
        },
    }
}

/// A probe that answers what it was given (tests of this and other modules).
#[cfg(test)]
pub(crate) struct FakeProbe(pub ProbeOutcome);

#[cfg(test)]
impl GpuProbe for FakeProbe {
    fn probe(&self) -> ProbeOutcome {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    use FakeProbe as Fake;

    fn cards() -> &'static [crate::catalog::Card] {
        Catalog::bundled().expect("catalog").cards()
    }

    #[test]
    fn a_fake_4090_is_reported_and_matched_to_the_catalog() {
        let fake = Fake(ProbeOutcome::Devices {
            gpus: vec![RawGpu {
                name: "NVIDIA GeForce RTX 4090".into(),
                total_bytes: 25_386_352_640,
                free_bytes: 24_000_000_000,
            }],
            driver_version: Some("550.54.14".into()),
            cuda_driver_version: Some(12040),
        });
        match report(&fake, cards()) {
            LocalGpuReport::Found {
                gpus,
                driver_version,
                cuda_version,
            } => {
                assert_eq!(gpus.len(), 1);
                assert_eq!(gpus[0].catalog_id.as_deref(), Some("rtx-4090"));
                assert!((gpus[0].total_gib - 23.64).abs() < 0.01);
                assert_eq!(driver_version.as_deref(), Some("550.54.14"));
                assert_eq!(cuda_version.as_deref(), Some("12.4"));
            }
            other => panic!("expected a GPU, got {other:?}"),
        }
    }

    #[test]
    fn no_devices_and_no_driver_are_normal_outcomes() {
        let none = Fake(ProbeOutcome::Devices {
            gpus: vec![],
            driver_version: Some("550".into()),
            cuda_driver_version: None,
        });
        assert_eq!(
            report(&none, cards()),
            LocalGpuReport::NoLocalGpu {
                reason: NoGpuReason::NoDevices,
                detail: None
            }
        );
        let missing = Fake(ProbeOutcome::Unavailable {
            reason: NoGpuReason::NoDriver,
            detail: "libnvidia-ml.so: cannot open shared object file".into(),
        });
        assert!(matches!(
            report(&missing, cards()),
            LocalGpuReport::NoLocalGpu {
                reason: NoGpuReason::NoDriver,
                ..
            }
        ));
    }

    #[test]
    fn real_nvml_probe_never_fails() {
        // On this machine (no NVIDIA driver) the real NVML path must answer NoLocalGpu; on a machine
        // with a GPU it lists devices. Either way it is a value, not an error or a panic.
        match report(&NvmlProbe, cards()) {
            LocalGpuReport::NoLocalGpu { reason, detail } => {
                assert!(matches!(
                    reason,
                    NoGpuReason::NoDriver | NoGpuReason::NoDevices | NoGpuReason::NvmlError
                ));
                if reason == NoGpuReason::NoDriver {
                    assert!(detail.is_some());
                }
            }
            LocalGpuReport::Found { gpus, .. } => {
                assert!(gpus.iter().all(|g| g.total_gib > 0.0));
            }
        }
    }

    #[test]
    fn name_matching_prefers_the_most_specific_card() {
        assert_eq!(
            match_catalog("NVIDIA GeForce RTX 4090 D", cards()).as_deref(),
            Some("rtx-4090d")
        );
        assert_eq!(
            match_catalog("NVIDIA GeForce RTX 4090", cards()).as_deref(),
            Some("rtx-4090")
        );
        assert_eq!(match_catalog("Quadro P1000", cards()), None);
    }
}
