//! The host-level checks (CUDA toolkit, disk, network) and the verdict.

use super::distro;
use super::facts::{DiskFree, Facts};
use super::plan::{HostProfile, DISK_NEEDED_MIB, DISK_TIGHT_MIB};
use super::report::*;
use crate::compat::{CudaVer, Ver};

/// No nvcc (info); one whose major differs from PyTorch's or that is newer than the driver
/// (`cuda_toolkit_mismatch`); a matching one off the non-interactive PATH (`cuda_toolkit_off_path`).
pub fn toolkit(f: &Facts, h: &HostProfile, tc: Option<CudaVer>) -> Option<Finding> {
    if !f.sections.iter().any(|s| s == "nvcc") {
        return None;
    }
    if !f.nvcc.found {
        let cmds = tc
            .and_then(|c| distro::toolkit_install(f, c.major, c.minor))
            .unwrap_or_default();
        return Some(finding(
            Diagnosis::CudaToolkitMissing { torch_cuda: tc.map(|c| c.to_string()) },
            Severity::Info,
            Step::Cuda,
            vec!["nvcc: not found".into()],
            fix(FixKind::Optional, cmds, vec![FixNote::OnlyForExtensions]),
            "No CUDA toolkit (nvcc). pip's PyTorch does not need it; only compiling CUDA extensions does.".into(),
        ));
    }
    let n = f.nvcc.release.as_deref().and_then(CudaVer::parse)?;
    let major_differs = tc.is_some_and(|c| c.major != n.major);
    let newer_than_driver = h.driver_cuda.is_some_and(|c| n > c && n.major != c.major);
    let mismatch = major_differs || newer_than_driver;
    if !mismatch && f.nvcc.on_path {
        return None;
    }
    let path = f
        .nvcc
        .path
        .as_ref()
        .map(|p| format!(" ({p})"))
        .unwrap_or_default();
    let evidence = vec![
        format!("nvcc: release {n}{path}"),
        format!("on PATH: {}", if f.nvcc.on_path { "yes" } else { "no" }),
    ];
    if !mismatch {
        // Same CUDA as PyTorch, only off the non-interactive PATH: not a mismatch.
        let dir = f
            .nvcc
            .path
            .as_deref()
            .and_then(|p| p.strip_suffix("/nvcc"))
            .unwrap_or("/usr/local/cuda/bin")
            .to_string();
        let fx = match distro::persist_path(&dir) {
            Some(cmds) => fix(
                FixKind::Optional,
                cmds,
                vec![
                    FixNote::OnlyForExtensions,
                    FixNote::AddCudaToPath,
                    FixNote::ShellProfile { dir: dir.clone() },
                ],
            ),
            // A directory that would need quoting inside the profile: the user adds it.
            None => fix(
                FixKind::Manual,
                Vec::new(),
                vec![FixNote::OnlyForExtensions, FixNote::AddCudaToPath],
            ),
        };
        return Some(finding(
            Diagnosis::CudaToolkitOffPath {
                nvcc: n.to_string(),
                torch_cuda: tc.map(|c| c.to_string()),
                path: f.nvcc.path.clone(),
                dir: dir.clone(),
            },
            Severity::Info,
            Step::Cuda,
            evidence,
            fx,
            format!("The CUDA toolkit (nvcc {n}) matches PyTorch's CUDA but {dir} is not on the PATH of non-interactive sessions: building CUDA extensions would not find nvcc. The fix adds it to ~/.bashrc and ~/.profile."),
        ));
    }
    let notes = vec![FixNote::OnlyForExtensions];
    let cmds = match tc.filter(|_| major_differs) {
        Some(c) => distro::toolkit_install(f, c.major, c.minor).unwrap_or_default(),
        None => Vec::new(),
    };
    Some(finding(
        Diagnosis::CudaToolkitMismatch {
            nvcc: n.to_string(),
            torch_cuda: tc.map(|c| c.to_string()),
            driver_cuda: h.driver_cuda.map(|c| c.to_string()),
            on_path: f.nvcc.on_path,
        },
        Severity::Warning,
        Step::Cuda,
        evidence,
        fix(FixKind::Optional, cmds, notes),
        "The CUDA toolkit (nvcc) does not match PyTorch's CUDA major, or is newer than the driver: building CUDA extensions would fail.".into(),
    ))
}

/// Free space where the install writes: an error when a planned install cannot fit.
pub fn disk(f: &Facts, dk: Option<&DiskFree>, plan: Option<&TorchPlan>) -> Option<Finding> {
    let dk = dk?;
    let planned = plan.is_some();
    if !((planned && dk.available_mib < DISK_TIGHT_MIB) || dk.available_mib < 5 * 1024) {
        return None;
    }
    let too_little = planned && dk.available_mib < DISK_NEEDED_MIB;
    let py = f
        .python
        .executable
        .clone()
        .unwrap_or_else(|| "python3".into());
    Some(finding(
        Diagnosis::DiskLow {
            path: dk.path.clone(),
            available_mib: dk.available_mib,
            needed_mib: DISK_NEEDED_MIB,
        },
        if too_little {
            Severity::Error
        } else {
            Severity::Warning
        },
        Step::Host,
        vec![format!(
            "{}: {} MiB free of {} MiB (mount {})",
            dk.path, dk.available_mib, dk.total_mib, dk.mount
        )],
        fix(
            FixKind::Manual,
            vec![
                format!("{py} -m pip cache purge"),
                format!("du -sh {}/* 2>/dev/null | sort -h | tail", dk.path),
            ],
            Vec::new(),
        ),
        format!(
            "Only {} MiB free in {}; a CUDA PyTorch install needs about {} MiB.",
            dk.available_mib, dk.path, DISK_NEEDED_MIB
        ),
    ))
}

/// download.pytorch.org unreachable: a warning when a mirror serves the plan, an error when a
/// plan needs wheels and nothing answered.
pub fn network(f: &Facts, plan: Option<&TorchPlan>) -> Option<Finding> {
    let official = f
        .reach
        .iter()
        .find(|r| r.url.starts_with("https://download.pytorch.org"))
        .filter(|r| !r.reachable)?;
    let mirror = plan
        .filter(|p| p.source != WheelSource::Official)
        .map(|p| p.index_url.clone());
    let blocked = plan.is_some() && mirror.is_none();
    let fx = plan.and_then(|p| {
        let notes = p
            .notes
            .iter()
            .filter(|n| {
                matches!(
                    n,
                    FixNote::UsesMirror { .. } | FixNote::PypiDefaultBuildOnly { .. }
                )
            })
            .cloned()
            .collect();
        let kind = if blocked {
            FixKind::Manual
        } else {
            FixKind::RunHere
        };
        fix(
            kind,
            if blocked {
                Vec::new()
            } else {
                p.commands.clone()
            },
            notes,
        )
    });
    let msg = match &mirror {
        Some(u) => format!(
            "download.pytorch.org is unreachable from this host; wheels come from the mirror {u}."
        ),
        None => format!(
            "download.pytorch.org is unreachable from this host ({}).",
            official.detail
        ),
    };
    Some(finding(
        Diagnosis::PytorchIndexUnreachable { mirror },
        if blocked {
            Severity::Error
        } else {
            Severity::Warning
        },
        Step::Host,
        f.reach
            .iter()
            .map(|r| format!("{} {}", r.url, r.detail))
            .collect(),
        fx,
        msg,
    ))
}

/// Blocked when an error has no fix that can run here; fixable when an error or warning has one.
pub fn verdict_of(findings: &[Finding]) -> Verdict {
    let mut blockers: Vec<(Blocker, &'static str)> = Vec::new();
    let mut fixable: Vec<String> = Vec::new();
    for f in findings {
        let kind = f.fix.as_ref().map(|x| x.kind);
        match (f.severity, kind) {
            (Severity::Error, Some(FixKind::RunHere))
            | (Severity::Warning, Some(FixKind::RunHere)) => {
                fixable.push(f.diagnosis.code().into())
            }
            (Severity::Error, k) => {
                let b = match k {
                    Some(FixKind::Reboot) => Blocker::Reboot,
                    Some(FixKind::DriverUpgrade) => Blocker::DriverUpgrade,
                    Some(FixKind::DifferentHost) => Blocker::DifferentHost,
                    _ => Blocker::Manual,
                };
                blockers.push((b, f.diagnosis.code()));
            }
            _ => {}
        }
    }
    if let Some(needs) = blockers.iter().map(|(b, _)| *b).max() {
        let mut codes: Vec<String> = blockers
            .iter()
            .filter(|(b, _)| *b == needs)
            .map(|(_, c)| c.to_string())
            .collect();
        codes.dedup();
        return Verdict::Blocked { needs, codes };
    }
    if fixable.is_empty() {
        Verdict::Ready
    } else {
        fixable.dedup();
        Verdict::Fixable { codes: fixable }
    }
}

impl TorchPlan {
    /// True when the plan installs for the probed interpreter's Python version.
    pub(super) fn env_uses_host_python(&self, f: &Facts) -> bool {
        match (&self.env, f.python.version.as_deref().and_then(Ver::parse)) {
            (PlanEnv::Active { .. }, _) => true,
            (PlanEnv::NewVenv { base_python, .. }, _)
                if Some(base_python) == f.python.executable.as_ref() =>
            {
                true
            }
            (_, Some(v)) => format!("{}.{}", v.major(), v.minor()) == self.python_version,
            _ => false,
        }
    }
}
