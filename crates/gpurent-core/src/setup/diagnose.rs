//! Facts -> findings, verdict and plan, in the check order of gpu-software-compat.md section 0:
//! the driver layer first (no pip command fixes it), then Python and PyTorch against the driver's
//! CUDA and the GPU's architecture, then toolkit, disk and network.

use super::checks::{self, verdict_of};
use super::distro;
use super::facts::*;
use super::plan::{self, HostProfile, NoPlan};
use super::report::*;
use crate::compat::{
    arch_list_from_torch, arch_runs, Compat, CudaVer, RunSupport, Ver, DATA_AS_OF,
};
use crate::infra::error::CoreError;

/// The disk a torch install writes to: home (venv, pip cache).
fn home_disk(f: &Facts) -> Option<&DiskFree> {
    let home = f.home.as_deref();
    f.disks
        .iter()
        .find(|d| Some(d.path.as_str()) == home)
        .or(f.disks.first())
}

fn is_datacenter(f: &Facts) -> bool {
    let cat = crate::catalog::Catalog::bundled().ok();
    f.gpus.iter().any(|g| {
        g.card_id
            .as_ref()
            .and_then(|id| cat.and_then(|c| c.get(id).ok()))
            .is_some_and(|c| c.segment == crate::catalog::Segment::Datacenter)
    })
}

/// Turing (7.5) and newer use the open kernel module.
fn open_module(h: &HostProfile) -> bool {
    h.gpus.iter().all(|(_, cc)| *cc >= (7, 5))
}

/// The fix for a driver that is too old: rent another host in a container, upgrade on a VM.
pub(crate) fn driver_fix(
    f: &Facts,
    compat: &Compat,
    h: &HostProfile,
    needs: CudaVer,
) -> Option<Fix> {
    let req = compat.min_driver(needs);
    let min_driver = req.min_driver.as_ref().map(Ver::driver_text);
    if f.container.in_container {
        return fix(
            FixKind::DifferentHost,
            Vec::new(),
            vec![FixNote::RentHostWithCuda {
                min_cuda: needs.to_string(),
                min_driver,
            }],
        );
    }
    // Not the minimum branch (often short-lived): a supported long-term or production one.
    let choice = match crate::compat::branches::driver_branches() {
        Ok(b) => crate::compat::branches::recommend(b, needs, req.branch.as_deref(), DATA_AS_OF),
        Err(_) => return fix(FixKind::DriverUpgrade, Vec::new(), Vec::new()),
    };
    let num = choice.branch.trim_start_matches('R').to_string();
    let mut notes = vec![
        FixNote::DriverBranch {
            branch: choice.branch,
            min_driver,
            minimum_branch: choice.minimum_branch,
            lifecycle: choice.lifecycle,
            supported_until: choice.supported_until,
            source: choice.source,
        },
        FixNote::RebootFollows,
    ];
    match distro::driver_upgrade(f, &num, is_datacenter(f), open_module(h)) {
        Some(cmds) => fix(FixKind::DriverUpgrade, cmds, notes),
        None => {
            notes.push(FixNote::RentHostWithCuda {
                min_cuda: needs.to_string(),
                min_driver: req.min_driver.as_ref().map(Ver::driver_text),
            });
            fix(FixKind::DriverUpgrade, Vec::new(), notes)
        }
    }
}

/// Diagnose parsed facts.
pub fn diagnose(facts: Facts, opts: &SetupOptions) -> Result<Report, CoreError> {
    let compat = Compat::bundled()?;
    let f = &facts;
    let h = HostProfile::from_facts(f, compat);
    let mut flags = h.flags.clone();
    let mut out: Vec<Finding> = Vec::new();
    let d = &f.driver;
    let smi_lines = d.error_lines.clone();
    let reboot_or_host = || {
        if f.container.in_container {
            FixKind::DifferentHost
        } else {
            FixKind::Reboot
        }
    };
    let sudo = distro::sudo(f);

    // 1. The driver layer.
    let gpu_ok = match d.smi_state {
        SmiState::Ok | SmiState::NotProbed => true,
        SmiState::NotFound => {
            let mut ev = smi_lines.clone();
            ev.push("/proc/driver/nvidia/version: absent".into());
            out.push(finding(Diagnosis::NoNvidiaGpu { in_container: f.container.in_container }, Severity::Error, Step::GpuDriver, ev,
                fix(FixKind::DifferentHost, Vec::new(), Vec::new()),
                "No NVIDIA driver or GPU on this host (nvidia-smi is missing). Rent a GPU instance, or start the container with GPU access.".into()));
            false
        }
        SmiState::DriverNotLoaded => {
            let cmds = if f.container.in_container {
                Vec::new()
            } else {
                vec![
                    format!("lsmod | grep nvidia"),
                    format!("{sudo}dkms status"),
                    format!("{sudo}dmesg | grep -iE 'nvrm|nvidia|nouveau'"),
                    format!("{sudo}reboot"),
                ]
            };
            out.push(finding(Diagnosis::DriverNotLoaded { kernel: f.os.kernel.clone() }, Severity::Error, Step::GpuDriver, smi_lines.clone(),
                fix(reboot_or_host(), cmds, vec![FixNote::RebootFollows]),
                "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded (kernel updated without a DKMS rebuild, nouveau, Secure Boot, or no GPU attached).".into()));
            false
        }
        SmiState::NvmlMismatch => {
            let mut ev = smi_lines.clone();
            if let Some(k) = &d.kernel_module_version {
                ev.push(format!("/proc/driver/nvidia/version: kernel module {k}"));
            }
            let cmds = if f.container.in_container {
                Vec::new()
            } else {
                vec![format!("{sudo}reboot")]
            };
            out.push(finding(Diagnosis::NvmlDriverMismatch { library_version: d.nvml_library_version.clone(), kernel_module_version: d.kernel_module_version.clone() },
                Severity::Error, Step::GpuDriver, ev, fix(reboot_or_host(), cmds, vec![FixNote::RebootFollows]),
                "The driver libraries were upgraded but the old kernel module is still loaded. A reboot loads the new one.".into()));
            false
        }
        SmiState::NoDevices | SmiState::GpuLost | SmiState::Failed => {
            let (diag, msg) = if d.smi_state == SmiState::GpuLost {
                (Diagnosis::GpuLost, "A GPU fell off the bus or reports an unknown error: a provider-side fault. Reboot or replace the instance.")
            } else {
                (Diagnosis::NoDevices, "The driver is loaded but found no GPU: a provider-side fault, or a driver too old for this GPU. Replace the instance.")
            };
            let cmds = if f.container.in_container {
                Vec::new()
            } else {
                vec![
                    format!("{sudo}dmesg | grep -iE 'NVRM|Xid'"),
                    format!("{sudo}reboot"),
                ]
            };
            out.push(finding(
                diag,
                Severity::Error,
                Step::GpuDriver,
                smi_lines.clone(),
                fix(reboot_or_host(), cmds, vec![FixNote::ProviderFault]),
                msg.into(),
            ));
            false
        }
    };

    // 2. Busy GPUs and the container's fixed driver.
    for g in &f.gpus {
        let procs: Vec<String> = f
            .gpu_processes
            .iter()
            .map(|p| format!("pid {} {} {} MiB", p.pid, p.name, p.used_mib.unwrap_or(0)))
            .collect();
        let used = g.memory_used_mib.unwrap_or(0);
        let total = g.memory_total_mib.unwrap_or(0);
        let heavy = used > 1024 && total > 0 && used * 10 > total;
        if (!procs.is_empty() && g.index == 0) || heavy {
            out.push(finding(Diagnosis::GpuBusy { gpu_index: g.index, memory_used_mib: used, memory_total_mib: g.memory_total_mib, processes: procs.clone() },
                Severity::Warning, Step::GpuDriver, [vec![format!("GPU {}: {used} MiB / {total} MiB used, {}% busy", g.index, g.utilization_pct.unwrap_or(0))], procs].concat(),
                fix(FixKind::Manual, Vec::new(), Vec::new()),
                "Another process is using this GPU's memory; stop it or your job may run out of memory.".into()));
        }
    }
    if f.container.in_container {
        out.push(finding(Diagnosis::ContainerDriverFixed { provider: f.container.provider, driver: d.driver_version.clone(), driver_cuda: d.cuda_version.clone() },
            Severity::Info, Step::GpuDriver, f.container.markers.clone(), None,
            "This is a container: the NVIDIA driver belongs to the host machine and cannot be changed from here.".into()));
    }

    // 3. Python and PyTorch.
    let pin = opts
        .torch
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    if let Some(p) = pin {
        if Ver::parse(p).is_none_or(|v| !compat.wheels().iter().any(|w| w.torch.matches_prefix(&v)))
        {
            flags.push(DataFlag::PinnedTorchUnknown {
                torch: p.to_string(),
            });
        }
    }
    let t = &f.torch;
    let torch_ver = t.version.as_deref().and_then(Ver::parse);
    if let Some(v) = &torch_ver {
        if compat.is_newer_torch(v) {
            flags.push(DataFlag::TorchNewerThanData {
                torch: v.to_string(),
            });
        }
    }
    let disk = home_disk(f);
    let mut needs_install: Vec<usize> = Vec::new();
    let python_ok = f.python.found || !f.sections.iter().any(|s| s == "python");
    if !python_ok {
        let cmds = distro::python_install(f);
        let kind = if cmds.is_some() {
            FixKind::RunHere
        } else {
            FixKind::Manual
        };
        out.push(finding(
            Diagnosis::PythonMissing,
            Severity::Error,
            Step::Python,
            vec!["python3: not found".into()],
            fix(kind, cmds.unwrap_or_default(), Vec::new()),
            "No Python interpreter on this host.".into(),
        ));
    }
    let torch_cuda = t.cuda.as_deref().and_then(CudaVer::parse);
    if f.python.found {
        match t.state {
            TorchState::Missing | TorchState::Broken => {
                needs_install.push(out.len());
                out.push(finding(
                    Diagnosis::TorchMissing {
                        import_error: t.import_error.clone(),
                    },
                    Severity::Error,
                    Step::Pytorch,
                    t.import_error
                        .iter()
                        .map(|e| format!("import torch: {e}"))
                        .collect(),
                    None,
                    "PyTorch is not installed for this Python.".into(),
                ));
            }
            TorchState::Present if torch_cuda.is_none() => {
                let v = t.version.clone().unwrap_or_default();
                needs_install.push(out.len());
                out.push(finding(Diagnosis::TorchCpuOnly { torch: v.clone() }, Severity::Error, Step::Pytorch,
                    vec![format!("torch.__version__ = {v}"), "torch.version.cuda = None".into()], None,
                    "This PyTorch is a CPU-only build (\"Torch not compiled with CUDA enabled\"): reinstall it from a CUDA index.".into()));
            }
            TorchState::Present => {
                let v = t.version.clone().unwrap_or_default();
                let tc = torch_cuda.unwrap_or(CudaVer::new(0, 0));
                let mut broken = false;
                if let (Some(c), true) = (h.driver_cuda, gpu_ok) {
                    let support = compat.run_support(tc, c, h.driver.as_ref());
                    if support != RunSupport::Native {
                        let compat_ok = support == RunSupport::MinorCompat;
                        let mut ev = vec![
                            format!("torch.version.cuda = {tc}"),
                            format!(
                                "nvidia-smi: Driver Version: {}  CUDA Version: {c}",
                                d.driver_version.as_deref().unwrap_or("?")
                            ),
                        ];
                        ev.extend(
                            t.warnings
                                .iter()
                                .filter(|w| w.contains("too old") || w.contains("insufficient"))
                                .cloned(),
                        );
                        let idx = out.len();
                        if !compat_ok {
                            needs_install.push(idx);
                            broken = true;
                        }
                        out.push(finding(Diagnosis::DriverTooOldForTorch { torch: v.clone(), torch_cuda: tc.to_string(), driver: d.driver_version.clone(), driver_cuda: c.to_string(),
                                minor_version_compat: compat_ok, min_driver: compat.min_driver(tc).min_driver.map(|m| m.driver_text()) },
                            if compat_ok { Severity::Warning } else { Severity::Error }, Step::Pytorch, ev, None,
                            if compat_ok { format!("PyTorch's CUDA {tc} is newer than the driver's {c}; it runs under minor-version compatibility, but PTX JIT and the newest features may fail.") }
                            else { format!("PyTorch was built for CUDA {tc}, but this driver runs CUDA {c} at most.") }));
                    }
                }
                // Architecture: the installed wheel's own list, else the data's for its release.
                let list = if !t.arch_list.is_empty() {
                    Some(arch_list_from_torch(&t.arch_list))
                } else {
                    torch_ver
                        .as_ref()
                        .and_then(|tv| compat.wheel(tv, &tc.variant()))
                        .map(|w| w.arch_list.clone())
                };
                if let Some(list) = list {
                    for (name, cc) in &h.gpus {
                        if arch_runs(&list, *cc).is_none() {
                            needs_install.push(out.len());
                            broken = true;
                            let arch_names: Vec<String> = if t.arch_list.is_empty() {
                                list.iter()
                                    .map(|a| format!("sm_{}{}", a.cc.0, a.cc.1))
                                    .collect()
                            } else {
                                t.arch_list.clone()
                            };
                            let mut ev = vec![
                                format!("{name}: compute capability {}.{}", cc.0, cc.1),
                                format!("torch.cuda.get_arch_list() = {}", arch_names.join(" ")),
                            ];
                            ev.extend(
                                t.warnings
                                    .iter()
                                    .filter(|w| {
                                        w.contains("not compatible") || w.contains("too old")
                                    })
                                    .cloned(),
                            );
                            out.push(finding(Diagnosis::GpuArchUnsupportedByTorch { torch: v.clone(), gpu: name.clone(), compute_cap: format!("{}.{}", cc.0, cc.1), arch_list: arch_names },
                                Severity::Error, Step::Pytorch, ev, None,
                                format!("This PyTorch has no kernels for {name} (sm_{}{}): \"no kernel image is available\".", cc.0, cc.1)));
                            break;
                        }
                    }
                }
                if !broken && gpu_ok && t.cuda_available == Some(false) && !f.gpus.is_empty() {
                    out.push(finding(Diagnosis::TorchCudaUnavailable { warnings: t.warnings.clone() }, Severity::Error, Step::Pytorch,
                        [t.warnings.clone(), t.errors.clone()].concat(), fix(FixKind::Manual, vec!["echo $CUDA_VISIBLE_DEVICES".into(), "nvidia-smi -L".into()], Vec::new()),
                        "PyTorch matches the driver and GPU but torch.cuda.is_available() is False (check CUDA_VISIBLE_DEVICES).".into()));
                }
            }
            TorchState::NotProbed => {}
        }
    }

    // 4. The plan, when PyTorch has to be (re)installed.
    let mut plan_out = None;
    if !needs_install.is_empty() && gpu_ok && f.python.found {
        match plan::plan(f, compat, &h, pin, disk.map(|d| d.available_mib))? {
            Ok(p) => {
                for &i in &needs_install {
                    out[i].fix = fix(FixKind::RunHere, p.commands.clone(), p.notes.clone());
                }
                plan_out = Some(p);
            }
            Err(np) => {
                let fx = match &np {
                    NoPlan::DriverTooOld { needs_cuda, .. } => {
                        driver_fix(f, compat, &h, *needs_cuda)
                    }
                    NoPlan::PythonUnsupported { .. } => {
                        fix(FixKind::Manual, Vec::new(), Vec::new())
                    }
                    NoPlan::ArchUnsupported => fix(FixKind::DifferentHost, Vec::new(), Vec::new()),
                    NoPlan::PinUnknown | NoPlan::NotEnoughFacts => {
                        fix(FixKind::Manual, Vec::new(), Vec::new())
                    }
                };
                for &i in &needs_install {
                    out[i].fix = fx.clone();
                }
                if let NoPlan::PythonUnsupported {
                    torch,
                    python_min,
                    python_max,
                } = &np
                {
                    let py = f.python.version.clone().unwrap_or_default();
                    out.push(finding(Diagnosis::PythonUnsupportedByTorch { python: py.clone(), torch: Some(torch.to_string()), python_min: Some(python_min.to_string()), python_max: Some(python_max.to_string()) },
                        Severity::Error, Step::Python, vec![format!("python {py}"), format!("torch {torch} supports Python {python_min}–{python_max}")],
                        fx.clone(), format!("PyTorch {torch} has no wheels for Python {py}; install Python {python_min}–{python_max}.")));
                }
            }
        }
    }
    if let Some(p) = &plan_out {
        if p.notes
            .iter()
            .any(|n| matches!(n, FixNote::NewCondaEnv { .. }))
            || !p.env_uses_host_python(f)
        {
            let py = f.python.version.clone().unwrap_or_default();
            out.push(finding(Diagnosis::PythonUnsupportedByTorch { python: py.clone(), torch: Some(p.torch.clone()), python_min: None, python_max: None },
                Severity::Error, Step::Python, vec![format!("python {py}"), format!("torch {} wheels need Python {}", p.torch, p.python_version)],
                fix(FixKind::RunHere, p.commands.clone(), p.notes.clone()),
                format!("PyTorch {} has no wheels for Python {py}; a Python {} environment is created for it.", p.torch, p.python_version)));
        }
    }

    // 5. Toolkit (only for building extensions), disk, network.
    let tc = plan_out
        .as_ref()
        .and_then(|p| CudaVer::parse(&p.wheel_cuda))
        .or(torch_cuda);
    if gpu_ok {
        out.extend(checks::toolkit(f, &h, tc));
    }
    out.extend(checks::disk(f, disk, plan_out.as_ref()));
    out.extend(checks::network(f, plan_out.as_ref()));

    // 6. Verdict.
    let verdict = verdict_of(&out);
    if verdict == Verdict::Ready && gpu_ok && t.state == TorchState::Present {
        out.insert(
            0,
            finding(
                Diagnosis::Ready {
                    gpus: t.device_count.unwrap_or(0),
                    torch: t.version.clone().unwrap_or_default(),
                    torch_cuda: t.cuda.clone().unwrap_or_default(),
                    driver_cuda: d.cuda_version.clone(),
                },
                Severity::Info,
                Step::Pytorch,
                vec![format!(
                    "torch {} (CUDA {}), cuda.is_available() = True, {} GPU(s)",
                    t.version.as_deref().unwrap_or("?"),
                    t.cuda.as_deref().unwrap_or("?"),
                    t.device_count.unwrap_or(0)
                )],
                None,
                "PyTorch runs on the GPU.".into(),
            ),
        );
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    Ok(Report {
        facts,
        findings: out,
        verdict,
        plan: plan_out,
        data_as_of: DATA_AS_OF.into(),
        data_flags: flags,
    })
}
