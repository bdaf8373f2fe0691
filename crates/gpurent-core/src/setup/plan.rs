//! The fix planner: the newest PyTorch whose CUDA variant this driver runs, whose wheels contain
//! this GPU's architecture and which supports this Python (or the pinned release), with the exact
//! commands for the right environment and a reachable wheel source.

use std::sync::OnceLock;

use serde::Deserialize;

use super::facts::{Facts, TorchState};
use super::report::{DataFlag, FixNote, PlanEnv, TorchPlan, WheelSource};
use crate::compat::{arch_runs, parse_cc, Compat, CudaVer, RunSupport, TorchWheel, Ver};
use crate::infra::error::CoreError;
use crate::remote::quote::shell_quote;

const MIRRORS_CSV: &str = include_str!("../../data/pytorch-mirrors.csv");

/// Where gpurent puts its own virtual environment (the probe prefers it once it exists).
pub const VENV: &str = "~/gpurent-venv";
/// A remote path as one shell word: left as is when it has only plain characters (so the
/// common `/usr/bin/python3` reads as usual), `~/rest` keeps its tilde for the host's shell to
/// expand, anything else goes through [`shell_quote`].
pub fn sh_path(p: &str) -> Result<String, CoreError> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, '/' | '.' | '_' | '-' | '+' | ':' | '@' | '%' | '=')
            })
    };
    let quote = |s: &str| {
        shell_quote(s).map_err(|_| CoreError::invalid("path", "a path from the probe contains a NUL byte, which no command line can carry; re-run the check"))
    };
    if plain(p) {
        return Ok(p.to_string());
    }
    match p.strip_prefix("~/") {
        Some(rest) if plain(rest) => Ok(p.to_string()),
        Some(rest) => Ok(format!("~/{}", quote(rest)?)),
        None => quote(p),
    }
}

/// Below this much free disk an install is not attempted (torch CUDA wheels + deps ≈ 7 GiB).
pub const DISK_NEEDED_MIB: u64 = 10 * 1024;
/// Below this much, pip's cache is skipped.
pub const DISK_TIGHT_MIB: u64 = 20 * 1024;

/// A wheel source from `data/pytorch-mirrors.csv`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Mirror {
    pub id: String,
    pub mode: String,
    pub url_template: String,
    pub probe_url: String,
    pub source: String,
}

impl Mirror {
    pub fn url(&self, variant: &str) -> String {
        self.url_template.replace("{variant}", variant)
    }
}

pub fn mirrors() -> Result<&'static [Mirror], CoreError> {
    static CELL: OnceLock<Result<Vec<Mirror>, String>> = OnceLock::new();
    CELL.get_or_init(|| {
        csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .from_reader(MIRRORS_CSV.as_bytes())
            .deserialize::<Mirror>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("pytorch-mirrors.csv: {e}"))
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(|e| CoreError::BundledData(e.clone()))
}

/// The host as the planner sees it.
#[derive(Debug, Clone)]
pub struct HostProfile {
    /// (GPU name, compute capability) for every GPU whose CC is known.
    pub gpus: Vec<(String, (u32, u32))>,
    pub driver: Option<Ver>,
    pub driver_cuda: Option<CudaVer>,
    pub python: Option<Ver>,
    pub flags: Vec<DataFlag>,
}

impl HostProfile {
    pub fn from_facts(f: &Facts, compat: &Compat) -> HostProfile {
        let mut flags = Vec::new();
        let cat = crate::catalog::Catalog::bundled().ok();
        let mut gpus = Vec::new();
        for g in &f.gpus {
            let from_torch = f
                .torch
                .devices
                .iter()
                .find(|d| d.index == g.index)
                .map(|d| d.capability.clone());
            let from_catalog = g
                .card_id
                .as_ref()
                .and_then(|id| cat.and_then(|c| c.get(id).ok()))
                .map(|c| c.compute_capability.clone());
            let cc = g.compute_cap.clone().or(from_torch).or(from_catalog);
            match cc.as_deref().and_then(parse_cc) {
                Some(cc) if compat.arch(cc).is_some() => gpus.push((g.name.clone(), cc)),
                Some(cc) => {
                    flags.push(DataFlag::UnknownGpuArch {
                        gpu: g.name.clone(),
                        compute_cap: Some(format!("{}.{}", cc.0, cc.1)),
                    });
                    gpus.push((g.name.clone(), cc));
                }
                None => flags.push(DataFlag::UnknownGpuArch {
                    gpu: g.name.clone(),
                    compute_cap: None,
                }),
            }
        }
        let driver = f.driver.driver_version.as_deref().and_then(Ver::parse);
        let driver_cuda = f
            .driver
            .cuda_version
            .as_deref()
            .and_then(CudaVer::parse)
            .or_else(|| driver.as_ref().and_then(|d| compat.cuda_for_driver(d)));
        if let (Some(c), Some(newest)) = (driver_cuda, compat.newest_cuda()) {
            if c > newest {
                flags.push(DataFlag::DriverCudaNewerThanData {
                    driver_cuda: c.to_string(),
                });
            }
        }
        HostProfile {
            gpus,
            driver,
            driver_cuda,
            python: f.python.version.as_deref().and_then(Ver::parse),
            flags,
        }
    }

    /// How a wheel runs here: `None` if a GPU lacks kernels or the driver cannot run it.
    pub fn runs(&self, compat: &Compat, w: &TorchWheel, ignore_driver: bool) -> Option<RunSupport> {
        let mut ptx_only = false;
        for (_, cc) in &self.gpus {
            ptx_only |= arch_runs(&w.arch_list, *cc)?;
        }
        if ignore_driver {
            return Some(RunSupport::Native);
        }
        let c = self.driver_cuda?;
        match compat.run_support(w.cuda, c, self.driver.as_ref()) {
            RunSupport::No => None,
            // PTX is JIT-compiled by the driver: it must be at least as new as the toolkit.
            RunSupport::MinorCompat if ptx_only => None,
            s => Some(s),
        }
    }
}

/// Wheels that run here, best first: newest torch; within a release native before minor-version
/// compatibility, the highest native CUDA, the lowest compat CUDA.
pub fn candidates<'a>(
    compat: &'a Compat,
    host: &HostProfile,
    python: Option<&Ver>,
    pin: Option<&Ver>,
    ignore_driver: bool,
) -> Vec<(&'a TorchWheel, RunSupport)> {
    let mut out: Vec<(&TorchWheel, RunSupport)> = compat
        .wheels()
        .iter()
        .filter(|w| pin.is_none_or(|p| w.torch.matches_prefix(p)))
        .filter(|w| python.is_none_or(|py| w.supports_python(py)))
        .filter_map(|w| host.runs(compat, w, ignore_driver).map(|s| (w, s)))
        .collect();
    out.sort_by(|(a, sa), (b, sb)| {
        b.torch.cmp(&a.torch).then_with(|| match (sa, sb) {
            (RunSupport::Native, RunSupport::Native) => b.cuda.cmp(&a.cuda),
            (RunSupport::Native, _) => std::cmp::Ordering::Less,
            (_, RunSupport::Native) => std::cmp::Ordering::Greater,
            _ => a.cuda.cmp(&b.cuda),
        })
    });
    out
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq)]
pub enum NoPlan {
    /// A wheel exists for this GPU and Python, but needs a newer driver: the best one's CUDA.
    DriverTooOld { needs_cuda: CudaVer, torch: Ver },
    /// No wheel supports this Python (within the pin); the best wheel's range.
    PythonUnsupported {
        torch: Ver,
        python_min: Ver,
        python_max: Ver,
    },
    /// No wheel in the data has kernels for this GPU (within the pin).
    ArchUnsupported,
    /// The pinned release is not in the data.
    PinUnknown,
    /// No GPU facts or no Python to plan for.
    NotEnoughFacts,
}

/// The chosen wheel source for a wheel.
struct Source {
    kind: WheelSource,
    mirror: Option<Mirror>,
}

/// Pick the first reachable source; `None` when the probe found none reachable.
fn source_for(f: &Facts, ms: &[Mirror], w: &TorchWheel) -> Option<Source> {
    if f.reach.is_empty() {
        return Some(Source {
            kind: WheelSource::Official,
            mirror: None,
        });
    }
    for m in ms {
        if !f.reach.iter().any(|r| r.reachable && r.url == m.probe_url) {
            continue;
        }
        let kind = match m.mode.as_str() {
            "index_url" if m.id == "pytorch" => WheelSource::Official,
            "index_url" => WheelSource::MirrorIndex,
            "find_links" => WheelSource::MirrorFindLinks,
            "pypi" if w.pypi_default => WheelSource::Pypi,
            _ => continue,
        };
        let mirror = (kind != WheelSource::Official).then(|| m.clone());
        return Some(Source { kind, mirror });
    }
    None
}

/// `torch==2.3.0 torchvision==0.18.0 torchaudio==2.3.0` from the data's command.
fn packages(w: &TorchWheel, local_label: bool) -> Vec<String> {
    w.pip_command
        .split_whitespace()
        .filter(|t| t.starts_with("torch"))
        .map(|t| {
            let base = t.split('+').next().unwrap_or(t);
            if local_label && (base.starts_with("torch==") || base.starts_with("torchvision==")) {
                format!("{base}+{}", w.variant)
            } else if local_label {
                t.to_string()
            } else {
                base.to_string()
            }
        })
        .collect()
}

/// The pip command for a wheel from a source, run with `py`.
fn pip_command(
    py: &str,
    w: &TorchWheel,
    src: &Source,
    force: bool,
    no_cache: bool,
) -> Result<String, CoreError> {
    let py = sh_path(py)?;
    let tail: Vec<&str> = w.pip_command.split_whitespace().skip(2).collect();
    let mut cmd = match (src.kind, &src.mirror) {
        (WheelSource::MirrorIndex, Some(m)) => format!(
            "{py} -m pip install {}",
            tail.join(" ").replace(&w.index_url, &m.url(&w.variant))
        ),
        (WheelSource::MirrorFindLinks, Some(m)) => {
            format!(
                "{py} -m pip install {} -f {}",
                packages(w, true).join(" "),
                m.url(&w.variant)
            )
        }
        (WheelSource::Pypi, Some(m)) => format!(
            "{py} -m pip install {} --index-url {}",
            packages(w, false).join(" "),
            m.url(&w.variant)
        ),
        _ => format!("{py} -m pip install {}", tail.join(" ")),
    };
    if force {
        cmd.push_str(" --force-reinstall");
    }
    if no_cache {
        cmd.push_str(" --no-cache-dir");
    }
    Ok(cmd)
}

/// The best wheel for `python` with a reachable source, and that source.
fn pick<'a>(
    f: &Facts,
    compat: &'a Compat,
    host: &HostProfile,
    python: Option<&Ver>,
    pin: Option<&Ver>,
) -> Result<Option<(&'a TorchWheel, RunSupport, Source)>, CoreError> {
    let ms = mirrors()?;
    let cands = candidates(compat, host, python, pin, false);
    if cands.is_empty() {
        return Ok(None);
    }
    for (w, s) in &cands {
        if let Some(src) = source_for(f, ms, w) {
            return Ok(Some((w, *s, src)));
        }
    }
    // Nothing reachable: plan with the official index (the diagnosis reports it as blocked).
    let (w, s) = cands[0];
    Ok(Some((
        w,
        s,
        Source {
            kind: WheelSource::Official,
            mirror: None,
        },
    )))
}

/// The conda base prefix from `conda env list` (`base  *  /opt/conda`; the prefix may contain
/// spaces).
fn conda_base(f: &Facts) -> Option<String> {
    f.python.conda_envs.iter().find_map(|l| {
        let rest = l.trim_start().strip_prefix("base")?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let rest = rest.trim_start();
        let prefix = rest.strip_prefix('*').unwrap_or(rest).trim();
        (!prefix.is_empty()).then(|| prefix.to_string())
    })
}

/// Make the install plan, or say why none exists.
pub fn plan(
    f: &Facts,
    compat: &Compat,
    host: &HostProfile,
    pin: Option<&str>,
    disk_free_mib: Option<u64>,
) -> Result<Result<TorchPlan, NoPlan>, CoreError> {
    let pin = match pin {
        Some(p) => match Ver::parse(p) {
            Some(v) if compat.wheels().iter().any(|w| w.torch.matches_prefix(&v)) => Some(v),
            _ => return Ok(Err(NoPlan::PinUnknown)),
        },
        None => None,
    };
    if host.gpus.is_empty() || host.driver_cuda.is_none() || !f.python.found {
        return Ok(Err(NoPlan::NotEnoughFacts));
    }
    let mut notes = Vec::new();
    let mut commands = Vec::new();
    let py_exec = f
        .python
        .executable
        .clone()
        .unwrap_or_else(|| "python3".into());
    let (chosen, env, python) =
        if let Some(c) = pick(f, compat, host, host.python.as_ref(), pin.as_ref())? {
            let in_env = f.python.in_venv
                || f.python
                    .conda_prefix
                    .as_deref()
                    .is_some_and(|p| py_exec.starts_with(p));
            let env = if in_env || !f.python.externally_managed {
                notes.push(FixNote::ActiveEnv {
                    python: py_exec.clone(),
                });
                PlanEnv::Active {
                    python: py_exec.clone(),
                }
            } else {
                if !f.python.venv_module {
                    commands.extend(super::distro::venv_module_install(f));
                }
                commands.push(format!("{} -m venv {VENV}", sh_path(&py_exec)?));
                notes.push(FixNote::NewVenv { path: VENV.into() });
                PlanEnv::NewVenv {
                    path: VENV.into(),
                    base_python: py_exec.clone(),
                }
            };
            let python = match &env {
                PlanEnv::Active { python } => python.clone(),
                _ => format!("{VENV}/bin/python"),
            };
            (c, env, python)
        } else {
            // This Python has no wheel: use another interpreter on the host, or a conda env.
            let Some((best, _)) = candidates(compat, host, None, pin.as_ref(), false)
                .first()
                .copied()
            else {
                let relaxed = candidates(compat, host, host.python.as_ref(), pin.as_ref(), true);
                let relaxed = if relaxed.is_empty() {
                    candidates(compat, host, None, pin.as_ref(), true)
                } else {
                    relaxed
                };
                return Ok(Err(match relaxed.first() {
                    // The lowest CUDA that gets the newest release: the widest choice of hosts.
                    Some((w, _)) => NoPlan::DriverTooOld {
                        needs_cuda: relaxed
                            .iter()
                            .filter(|(x, _)| x.torch == w.torch)
                            .map(|(x, _)| x.cuda)
                            .min()
                            .unwrap_or(w.cuda),
                        torch: w.torch.clone(),
                    },
                    None => NoPlan::ArchUnsupported,
                }));
            };
            let unsupported = NoPlan::PythonUnsupported {
                torch: best.torch.clone(),
                python_min: best.python_min.clone(),
                python_max: best.python_max.clone(),
            };
            let other = f
                .python
                .interpreters
                .iter()
                .filter_map(|p| {
                    let v = Ver::parse(p.rsplit("python").next()?)?;
                    (v.0.len() == 2 && best.supports_python(&v)).then(|| (v, p.clone()))
                })
                .max_by(|a, b| a.0.cmp(&b.0));
            let (base, ver) = if let Some((v, p)) = other {
                (p, v)
            } else if let Some(root) = f.python.conda.as_ref().and_then(|_| conda_base(f)) {
                let ver = best.python_max.clone();
                let name = format!("gpurent-py{ver}");
                let py = format!("{root}/envs/{name}/bin/python");
                let q = sh_path(&py)?;
                commands.push(format!(
                    "[ -x {q} ] || conda create -y -n {name} python={ver}"
                ));
                notes.push(FixNote::NewCondaEnv {
                    name,
                    python: ver.to_string(),
                });
                (py, ver)
            } else {
                return Ok(Err(unsupported));
            };
            let Some(c) = pick(f, compat, host, Some(&ver), pin.as_ref())? else {
                return Ok(Err(unsupported));
            };
            commands.push(format!("{} -m venv {VENV}", sh_path(&base)?));
            notes.push(FixNote::NewVenv { path: VENV.into() });
            (
                c,
                PlanEnv::NewVenv {
                    path: VENV.into(),
                    base_python: base,
                },
                format!("{VENV}/bin/python"),
            )
        };
    let (w, support, src) = chosen;
    // Same env with a CPU build or another variant of the same release: pip would keep it.
    let installed = f
        .torch
        .version
        .clone()
        .filter(|_| f.torch.state == TorchState::Present);
    let force = matches!(env, PlanEnv::Active { .. })
        && installed.as_deref().is_some_and(|v| {
            let cpu = f.torch.cuda.is_none() || v.contains("+cpu");
            let same_release = Ver::parse(v).is_some_and(|iv| iv == w.torch);
            cpu || (same_release && !v.ends_with(&format!("+{}", w.variant)))
        });
    if let (true, Some(v)) = (force, &installed) {
        notes.push(FixNote::ForceReinstall {
            installed: v.clone(),
        });
    }
    let no_cache = disk_free_mib.is_some_and(|d| d < DISK_TIGHT_MIB);
    if let (true, Some(d)) = (no_cache, disk_free_mib) {
        notes.push(FixNote::NoCacheDir { available_mib: d });
    }
    let minor_compat = support == RunSupport::MinorCompat;
    if minor_compat {
        if let Some(c) = host.driver_cuda {
            notes.push(FixNote::MinorVersionCompat {
                wheel_cuda: w.cuda.to_string(),
                driver_cuda: c.to_string(),
            });
        }
    }
    let index_url = match (&src.mirror, src.kind) {
        (Some(m), _) => m.url(&w.variant),
        (None, _) => w.index_url.clone(),
    };
    if let Some(m) = &src.mirror {
        if src.kind == WheelSource::Pypi {
            notes.push(FixNote::PypiDefaultBuildOnly {
                variant: w.variant.clone(),
            });
        }
        notes.push(FixNote::UsesMirror {
            mirror_id: m.id.clone(),
            url: index_url.clone(),
        });
    }
    commands.push(pip_command(&python, w, &src, force, no_cache)?);
    let py_mm = match &host.python {
        Some(p)
            if w.supports_python(p)
                && matches!(env, PlanEnv::Active { .. } | PlanEnv::NewVenv { .. })
                && !notes
                    .iter()
                    .any(|n| matches!(n, FixNote::NewCondaEnv { .. })) =>
        {
            format!("{}.{}", p.major(), p.minor())
        }
        _ => w.python_max.to_string(),
    };
    Ok(Ok(TorchPlan {
        torch: w.torch.to_string(),
        torchvision: w.torchvision.clone(),
        torchaudio: w.torchaudio.clone(),
        variant: w.variant.clone(),
        wheel_cuda: w.cuda.to_string(),
        python_version: py_mm,
        python,
        env,
        source: src.kind,
        index_url,
        force_reinstall: force,
        minor_version_compat: minor_compat,
        pinned: pin.is_some(),
        commands,
        notes,
    }))
}
