//! A match made specific: the saved probe's facts (GPU and its architecture, driver and the CUDA it
//! runs, torch and its kernels, /dev/shm, disks, RAM, GPU processes) turn the rule's general cause
//! into this host's, and the probe's Setup diagnosis supplies the fix gpurent can run. Without a
//! host the cause says which facts it would need. Also the `collect_env`-like environment report.

use super::scan::Hit;
use super::{Cause, ExplainFix, HostCause};
use crate::compat::{arch_list_from_torch, arch_runs, parse_cc, Compat, CudaVer};
use crate::setup::plan::HostProfile;
use crate::setup::redact::redact_credentials;
use crate::setup::{Facts, FixKind, Report};

/// Where the probe lists the shared-memory filesystem.
pub const SHM_PATH: &str = "/dev/shm";
/// Below this /dev/shm is "the Docker default" size class (64 MB) for the sentence.
const SHM_SMALL_MIB: u64 = 1024;

fn sm_number(sm: &str) -> Option<u32> {
    sm.trim()
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .trim_end_matches('a')
        .parse()
        .ok()
}

/// The first GPU of the probe with a known compute capability: (name, (major, minor)).
fn first_gpu(f: &Facts) -> Option<(String, (u32, u32))> {
    f.gpus.iter().find_map(|g| {
        let cc = g.compute_cap.clone().or_else(|| {
            f.torch
                .devices
                .iter()
                .find(|d| d.index == g.index)
                .map(|d| d.capability.clone())
        })?;
        Some((g.name.clone(), parse_cc(&cc)?))
    })
}

fn gpu_name(f: &Facts) -> Option<String> {
    f.gpus.first().map(|g| g.name.clone())
}

/// The shared-memory size the probe saw.
pub fn shm_mib(f: &Facts) -> Option<u64> {
    f.disks
        .iter()
        .find(|d| d.path == SHM_PATH)
        .map(|d| d.total_mib)
}

/// Cause and fix of a hit, refined with the host's diagnosed probe when there is one.
pub fn refine(hit: &Hit<'_>, report: Option<&Report>) -> (Cause, ExplainFix) {
    let rule = hit.rule;
    let mut fix = ExplainFix {
        kind: FixKind::Manual,
        setup_code: None,
        commands: rule.commands.clone(),
        notes: Vec::new(),
        steps: rule.fix.clone(),
    };
    // The probe's own finding for this error: its fix is the one for this host.
    if let Some(finding) = report.and_then(|r| {
        r.findings.iter().find(|f| {
            rule.setup_codes
                .iter()
                .any(|c| c.as_str() == f.diagnosis.code())
        })
    }) {
        if let Some(x) = &finding.fix {
            fix.kind = x.kind;
            fix.notes = x.notes.clone();
            if !x.commands.is_empty() {
                fix.commands = x.commands.clone();
            }
            if matches!(x.kind, FixKind::RunHere | FixKind::Optional) && !x.commands.is_empty() {
                fix.setup_code = Some(finding.diagnosis.code().to_string());
            }
        }
    }
    let facts = report.map(|r| &r.facts);
    let (host, missing) = host_cause(hit, facts, &mut fix);
    let needs = match facts {
        None => rule.host_facts.clone(),
        Some(_) => missing,
    };
    let text = match &host {
        Some(h) => format!("{} {}", describe(h), rule.cause),
        None => rule.cause.clone(),
    };
    (
        Cause {
            text: text.trim().to_string(),
            host,
            needs,
        },
        fix,
    )
}

/// The host-specific cause (from the facts, or from the log's own details), and the facts that
/// were wanted but missing from the probe.
fn host_cause(
    hit: &Hit<'_>,
    f: Option<&Facts>,
    fix: &mut ExplainFix,
) -> (Option<HostCause>, Vec<String>) {
    let mut missing = Vec::new();
    let need = |m: &mut Vec<String>, what: &str| m.push(what.to_string());
    let cause = match hit.rule.code.as_str() {
        "arch_not_supported" => {
            // From the log: "CUDA capability sm_120", "supports CUDA capabilities sm_50 ... sm_90".
            let log_sm = hit.cap(0).map(String::from);
            let log_list: Vec<String> = hit
                .cap(1)
                .map(|s| s.split_whitespace().map(String::from).collect())
                .unwrap_or_default();
            let gpu = f.and_then(first_gpu);
            let list = match f {
                Some(f) if !f.torch.arch_list.is_empty() => f.torch.arch_list.clone(),
                _ => log_list,
            };
            if f.is_some() && gpu.is_none() {
                need(&mut missing, "compute_cap");
            }
            if f.is_some_and(|f| f.torch.arch_list.is_empty()) {
                need(&mut missing, "arch_list");
            }
            let sm = gpu
                .as_ref()
                .map(|(_, (a, b))| format!("sm_{a}{b}"))
                .or(log_sm);
            let torch_has_it = match (&gpu, list.is_empty()) {
                (Some((_, cc)), false) => arch_runs(&arch_list_from_torch(&list), *cc).is_some(),
                _ => false,
            };
            let torch_max_sm = list
                .iter()
                .filter(|s| s.starts_with("sm_"))
                .max_by_key(|s| sm_number(s))
                .cloned();
            (sm.is_some() || torch_max_sm.is_some()).then(|| HostCause::ArchMissing {
                gpu: gpu.map(|(n, _)| n).or_else(|| f.and_then(gpu_name)),
                sm,
                torch: f.and_then(|f| f.torch.version.clone()),
                torch_max_sm,
                torch_has_it,
            })
        }
        "driver_too_old" => {
            // What the program needs: `cuda>=12.8`, or a `+cu124` build in the log; else the probed torch.
            let needs = hit
                .cap(1)
                .and_then(CudaVer::parse)
                .or_else(|| {
                    hit.cap(2)
                        .and_then(|v| CudaVer::from_variant(&format!("cu{v}")))
                })
                .or_else(|| {
                    f.and_then(|f| f.torch.cuda.as_deref())
                        .and_then(CudaVer::parse)
                });
            let compat = Compat::bundled().ok();
            let min_driver = match (needs, compat) {
                (Some(n), Some(c)) => c.min_driver(n).min_driver.map(|v| v.driver_text()),
                _ => None,
            };
            if let Some(f) = f {
                if f.driver.driver_version.is_none() {
                    need(&mut missing, "driver");
                }
                // No Setup finding (the probed torch is fine, the failing program is not): the
                // driver fix for what the log needs.
                if fix.notes.is_empty() {
                    if let (Some(n), Some(c)) = (needs, compat) {
                        if let Some(x) = crate::setup::diagnose::driver_fix(
                            f,
                            c,
                            &HostProfile::from_facts(f, c),
                            n,
                        ) {
                            fix.kind = x.kind;
                            fix.notes = x.notes;
                            if !x.commands.is_empty() {
                                fix.commands = x.commands;
                            }
                        }
                    }
                }
            }
            if needs.is_none() {
                need(&mut missing, "torch");
            }
            Some(HostCause::DriverTooOld {
                driver: f.and_then(|f| f.driver.driver_version.clone()),
                driver_cuda: f.and_then(|f| f.driver.cuda_version.clone()),
                needs_cuda: needs.map(|n| n.to_string()),
                min_driver,
                in_container: f.is_some_and(|f| f.container.in_container),
            })
            .filter(|_| f.is_some() || needs.is_some())
        }
        "nccl_shm" | "nccl_p2p" => match f.map(|f| (shm_mib(f), f.container.in_container)) {
            Some((Some(shm), in_container)) => {
                if hit.rule.code == "nccl_shm" && in_container {
                    fix.commands.insert(
                        0,
                        "docker run --shm-size=16g ... (or --ipc=host): the container must be recreated".into(),
                    );
                }
                Some(HostCause::ShmSize {
                    shm_mib: shm,
                    in_container,
                })
            }
            Some((None, _)) => {
                need(&mut missing, "shm");
                None
            }
            None => None,
        },
        "cuda_out_of_memory" => f.map(|f| {
            if f.gpus.is_empty() {
                need(&mut missing, "gpu_memory");
            }
            HostCause::GpuMemory {
                gpu: gpu_name(f),
                total_mib: f.gpus.first().and_then(|g| g.memory_total_mib),
                tried: hit.cap(0).map(String::from),
                others_mib: f.gpu_processes.iter().filter_map(|p| p.used_mib).sum(),
                processes: f
                    .gpu_processes
                    .iter()
                    .map(|p| format!("{} ({})", p.name, p.pid))
                    .collect(),
            }
        }),
        "killed_oom_host" => match f.and_then(|f| f.mem_total_mib.map(|t| (t, f))) {
            Some((total_mib, f)) => Some(HostCause::HostMemory {
                total_mib,
                available_mib: f.mem_available_mib,
            }),
            None => {
                if f.is_some() {
                    need(&mut missing, "memory");
                }
                None
            }
        },
        "disk_full" => match f.and_then(|f| {
            f.disks
                .iter()
                .filter(|d| d.path != SHM_PATH)
                .min_by_key(|d| d.available_mib)
        }) {
            Some(d) => Some(HostCause::DiskFree {
                path: d.path.clone(),
                available_mib: d.available_mib,
                total_mib: d.total_mib,
            }),
            None => {
                if f.is_some() {
                    need(&mut missing, "disk");
                }
                None
            }
        },
        "torch_cpu_build" => f.and_then(|f| {
            f.torch.version.clone().map(|torch| HostCause::TorchBuild {
                torch,
                cuda: f.torch.cuda.clone(),
            })
        }),
        "no_gpu_visible" => f.map(|f| HostCause::GpusVisible {
            count: f.gpus.len() as u32,
            smi_state: f.driver.smi_state,
        }),
        "driver_not_reachable" | "nvml_version_mismatch" => f.map(|f| HostCause::DriverState {
            smi_state: f.driver.smi_state,
            driver: f.driver.driver_version.clone(),
            kernel_module: f.driver.kernel_module_version.clone(),
            in_container: f.container.in_container,
        }),
        "port_not_listening" => listens_on(hit),
        _ => None,
    };
    (cause, missing)
}

/// `127.0.0.1:7860` from the app's own "Running on ..." line.
fn listens_on(hit: &Hit<'_>) -> Option<HostCause> {
    let re = hit.rule.support.first()?;
    hit.evidence.iter().find_map(|e| {
        let c = re.captures(&e.text)?;
        Some(HostCause::ListensOn {
            address: c.get(1)?.as_str().to_string(),
            port: c.get(2)?.as_str().parse().ok()?,
        })
    })
}

/// The host-specific sentence (English fallback).
pub fn describe(h: &HostCause) -> String {
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "?".into());
    match h {
        HostCause::ArchMissing {
            gpu,
            sm,
            torch,
            torch_max_sm,
            torch_has_it,
        } => {
            let gpu = match (gpu, sm) {
                (Some(g), Some(s)) => format!("This is an {g} ({s})"),
                (None, Some(s)) => format!("This GPU is {s}"),
                (Some(g), None) => format!("This is an {g}"),
                (None, None) => "This GPU".into(),
            };
            match (torch_has_it, torch_max_sm) {
                (true, _) => format!("{gpu}; the probed torch {} has kernels for it, so the failing process used another environment or a CUDA extension built without them.", opt(torch)),
                (false, Some(m)) => format!("{gpu}; the installed torch {} has kernels up to {m}.", opt(torch)),
                (false, None) => format!("{gpu}."),
            }
        }
        HostCause::DriverTooOld {
            driver,
            driver_cuda,
            needs_cuda,
            min_driver,
            in_container,
        } => format!(
            "The driver {} runs CUDA up to {}; the program needs CUDA {} (driver {} or newer){}.",
            opt(driver),
            opt(driver_cuda),
            opt(needs_cuda),
            opt(min_driver),
            if *in_container {
                "; in a container the driver belongs to the host machine: rent another one"
            } else {
                ""
            }
        ),
        HostCause::ShmSize {
            shm_mib,
            in_container,
        } => format!(
            "/dev/shm on this host is {shm_mib} MiB{}{}.",
            if *shm_mib < SHM_SMALL_MIB {
                " (Docker's default is 64 MB)"
            } else {
                ""
            },
            if *in_container {
                ", set when the container was created"
            } else {
                ""
            }
        ),
        HostCause::GpuMemory {
            gpu,
            total_mib,
            tried,
            others_mib,
            processes,
        } => {
            let mut s = format!(
                "The {} has {} MiB",
                opt(gpu),
                total_mib.map_or("?".into(), |t| t.to_string())
            );
            if let Some(t) = tried {
                s.push_str(&format!("; the program tried to allocate {t} more"));
            }
            if *others_mib > 0 {
                s.push_str(&format!(
                    "; other processes held {others_mib} MiB when probed ({})",
                    processes.join(", ")
                ));
            }
            s.push('.');
            s
        }
        HostCause::HostMemory {
            total_mib,
            available_mib,
        } => format!(
            "This machine has {total_mib} MiB of RAM ({} MiB free when probed).",
            available_mib.map_or("?".into(), |a| a.to_string())
        ),
        HostCause::DiskFree {
            path,
            available_mib,
            total_mib,
        } => format!("{path} had {available_mib} MiB free of {total_mib} MiB when probed."),
        HostCause::TorchBuild { torch, cuda } => match cuda {
            None => format!("The probed torch {torch} is a CPU build."),
            Some(c) => format!("The probed torch {torch} is a CUDA {c} build: the failing program runs another environment."),
        },
        HostCause::GpusVisible { count, smi_state } => {
            format!("The probe saw {count} GPU(s) (nvidia-smi: {smi_state:?}).")
        }
        HostCause::DriverState {
            smi_state,
            driver,
            kernel_module,
            in_container,
        } => format!(
            "nvidia-smi: {smi_state:?}; driver {}, loaded kernel module {}{}.",
            opt(driver),
            opt(kernel_module),
            if *in_container {
                "; this is a container, so it is the host machine's fault"
            } else {
                ""
            }
        ),
        HostCause::ListensOn { address, port } => {
            format!("The app listens on {address}:{port}.")
        }
    }
}

/// A `collect_env`-like report of the probe, credentials redacted.
pub fn environment(f: &Facts) -> String {
    let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let mut s = String::new();
    let mut line = |k: &str, v: String| s.push_str(&format!("{k:<24}{v}\n"));
    line(
        "OS:",
        f.os.pretty_name
            .clone()
            .or_else(|| f.os.id.clone())
            .unwrap_or_else(|| "unknown".into()),
    );
    line("Kernel:", o(&f.os.kernel));
    line(
        "Container:",
        match (f.container.in_container, f.container.provider) {
            (false, _) => "no".into(),
            (true, Some(p)) => format!("yes ({p:?})"),
            (true, None) => "yes".into(),
        },
    );
    line(
        "CPUs / RAM:",
        format!(
            "{} / {} MiB",
            f.cpus.map_or("?".into(), |c| c.to_string()),
            f.mem_total_mib.map_or("?".into(), |m| m.to_string())
        ),
    );
    for g in &f.gpus {
        line(
            &format!("GPU {}:", g.index),
            format!(
                "{} (compute capability {}, {} MiB)",
                g.name,
                o(&g.compute_cap),
                g.memory_total_mib.map_or("?".into(), |m| m.to_string())
            ),
        );
    }
    line("nvidia-smi:", format!("{:?}", f.driver.smi_state));
    line("Driver:", o(&f.driver.driver_version));
    line("Driver CUDA version:", o(&f.driver.cuda_version));
    line(
        "nvcc:",
        if f.nvcc.found {
            o(&f.nvcc.version)
        } else {
            "not found".into()
        },
    );
    line(
        "Python:",
        format!("{} ({})", o(&f.python.version), o(&f.python.executable)),
    );
    line("pip:", o(&f.pip.version));
    for c in &f.pip.index_config {
        line("pip index:", c.clone());
    }
    line("PyTorch:", o(&f.torch.version));
    line("PyTorch CUDA:", o(&f.torch.cuda));
    line(
        "CUDA available:",
        f.torch
            .cuda_available
            .map_or("unknown".into(), |b| b.to_string()),
    );
    line("Arch list:", f.torch.arch_list.join(" "));
    line(
        "cuDNN:",
        f.torch.cudnn.map_or("unknown".into(), |c| c.to_string()),
    );
    for d in &f.disks {
        line(
            "Disk:",
            format!(
                "{} ({}) {} of {} MiB free",
                d.path, d.mount, d.available_mib, d.total_mib
            ),
        );
    }
    redact_credentials(&s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm_numbers_order_numerically() {
        assert!(sm_number("sm_120") > sm_number("sm_90"));
        assert_eq!(sm_number("sm_90a"), Some(90));
        assert_eq!(sm_number("compute_120"), Some(120));
    }

    #[test]
    fn driver_versions_keep_nvidias_two_digit_third_part() {
        let v = |s: &str| crate::compat::Ver::parse(s).expect("ver");
        assert_eq!(v("530.30.02").driver_text(), "530.30.02");
        assert_eq!(v("570.124.06").driver_text(), "570.124.06");
        assert_eq!(v("570.26").driver_text(), "570.26");
    }

    #[test]
    fn environment_redacts_index_credentials() {
        let mut f = Facts::default();
        f.pip.index_config = vec!["global.index-url='https://u:tok@pypi.corp/simple'".into()];
        let env = environment(&f);
        assert!(env.contains("https://***@pypi.corp/simple"), "{env}");
        assert!(!env.contains("tok"), "{env}");
    }
}
