//! The probe's output -> [`Facts`]. Sections are found by their markers; every tool's output is
//! read with regexes or by header names, never by fixed columns (formats differ by driver
//! branch). A missing or damaged section leaves its facts empty; parsing never fails.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::facts::*;

/// One section of the probe's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    pub stdout: String,
    pub stderr: String,
    /// `None` when the section was cut off before its end marker.
    pub rc: Option<i32>,
}

impl Section {
    /// stdout then stderr (nvidia-smi prints its errors on stdout, other tools on stderr).
    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    fn kv(&self) -> Vec<(&str, &str)> {
        self.stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect()
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.kv()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

fn re(s: &str) -> Regex {
    Regex::new(s).unwrap_or_else(|e| panic!("bad built-in regex {s}: {e}"))
}

static MARKER: LazyLock<Regex> =
    LazyLock::new(|| re(r"^@@gpurent@@ (begin|stderr|end) ([a-z_]+)(?: rc=(-?\d+))?\s*$"));
static PROBE_VERSION: LazyLock<Regex> = LazyLock::new(|| re(r"^@@gpurent@@ probe v(\d+)"));
static DRIVER_VERSION: LazyLock<Regex> = LazyLock::new(|| re(r"Driver Version:\s*([0-9][0-9.]*)"));
static CUDA_VERSION: LazyLock<Regex> = LazyLock::new(|| re(r"CUDA Version:\s*([0-9]+\.[0-9]+)"));
static NVML_LIB: LazyLock<Regex> = LazyLock::new(|| re(r"NVML library version:\s*([0-9][0-9.]*)"));
static KMOD: LazyLock<Regex> =
    LazyLock::new(|| re(r"Kernel Module(?: for \S+)?\s+([0-9]+\.[0-9][0-9.]*)"));
static NVCC: LazyLock<Regex> = LazyLock::new(|| re(r"release (\d+\.\d+), V([0-9.]+)"));
static NUM: LazyLock<Regex> = LazyLock::new(|| re(r"^-?[0-9]+(?:\.[0-9]+)?"));
static TABLE_GPU: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|\s+([0-9A-Fa-f]+:[0-9A-Fa-f:.]+)"));
static TABLE_MEM: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+)MiB\s*/\s*(\d+)MiB"));
static REACH: LazyLock<Regex> = LazyLock::new(|| re(r"^reach (\S+) rc=(-?\d+) http=(\S*)\s*(.*)$"));

/// Split the probe output into sections by name.
pub fn sections(raw: &str) -> BTreeMap<String, Section> {
    let mut out: BTreeMap<String, Section> = BTreeMap::new();
    // (name, in_stderr)
    let mut cur: Option<(String, bool)> = None;
    for line in raw.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(c) = MARKER.captures(line) {
            let name = c[2].to_string();
            match &c[1] {
                "begin" => {
                    out.insert(name.clone(), Section::default());
                    cur = Some((name, false));
                }
                "stderr" => cur = Some((name, true)),
                _ => {
                    if let Some(s) = out.get_mut(&name) {
                        s.rc = c.get(3).and_then(|m| m.as_str().parse().ok());
                    }
                    cur = None;
                }
            }
            continue;
        }
        if let Some((name, err)) = &cur {
            if let Some(s) = out.get_mut(name) {
                let buf = if *err { &mut s.stderr } else { &mut s.stdout };
                buf.push_str(line);
                buf.push('\n');
            }
        }
    }
    out
}

/// Parse the whole probe output.
pub fn parse(raw: &str) -> Facts {
    let secs = sections(raw);
    let empty = Section::default();
    let sec = |n: &str| secs.get(n).unwrap_or(&empty);
    let mut f = Facts {
        probe_version: raw
            .lines()
            .find_map(|l| PROBE_VERSION.captures(l))
            .and_then(|c| c[1].parse().ok()),
        sections: secs.keys().cloned().collect(),
        ..Facts::default()
    };
    let meta = sec("meta");
    f.user = meta.get("user").map(String::from);
    f.uid = meta.get("uid").and_then(|v| v.parse().ok());
    f.home = meta.get("home").map(String::from);
    f.os = parse_os(&sec("os").stdout, &sec("kernel").stdout);
    f.cpus = sec("cpu").get("cpus").and_then(|v| v.parse().ok());
    for line in sec("memory").stdout.lines() {
        let kib = line
            .split_whitespace()
            .nth(1)
            .and_then(|v| v.parse::<u64>().ok());
        if line.starts_with("MemTotal:") {
            f.mem_total_mib = kib.map(|k| k / 1024);
        } else if line.starts_with("MemAvailable:") {
            f.mem_available_mib = kib.map(|k| k / 1024);
        }
    }
    f.disks = parse_disks(&sec("disk").stdout);
    f.container = parse_container(sec("container"));
    f.driver = parse_driver(
        secs.get("nvidia_smi"),
        sec("nvidia_smi_query"),
        sec("nvidia_proc"),
    );
    f.gpus = parse_gpu_query(&sec("nvidia_smi_query").stdout);
    if f.gpus.is_empty() && f.driver.smi_state == SmiState::Ok {
        f.gpus = parse_gpu_table(&sec("nvidia_smi").stdout);
    }
    f.gpu_processes = parse_apps(&sec("nvidia_smi_apps").stdout);
    f.nvcc = parse_nvcc(sec("nvcc"));
    f.python = parse_python(secs.get("python"));
    f.pip = parse_pip(sec("pip"));
    f.reach = sec("net")
        .stdout
        .lines()
        .filter_map(|l| REACH.captures(l))
        .map(|c| Reach {
            url: c[1].to_string(),
            reachable: &c[2] == "0" && &c[3] != "000" && !c[3].is_empty(),
            detail: format!("rc={} http={} {}", &c[2], &c[3], c[4].trim())
                .trim()
                .to_string(),
        })
        .collect();
    f.torch = parse_torch(secs.get("torch"));
    if let Ok(cat) = crate::catalog::Catalog::bundled() {
        for g in &mut f.gpus {
            g.card_id = super::cards::match_card(&g.name, cat.cards());
        }
    }
    f
}

fn unquote(v: &str) -> String {
    v.trim().trim_matches('"').trim_matches('\'').to_string()
}

fn parse_os(os_release: &str, uname: &str) -> OsFacts {
    let get = |k: &str| {
        os_release
            .lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(unquote)
    };
    let kernel = uname
        .lines()
        .next()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    OsFacts {
        id: get("ID"),
        id_like: get("ID_LIKE"),
        version_id: get("VERSION_ID"),
        pretty_name: get("PRETTY_NAME"),
        arch: kernel
            .and_then(|k| k.split_whitespace().last())
            .map(String::from),
        kernel: kernel.map(String::from),
    }
}

fn parse_disks(text: &str) -> Vec<DiskFree> {
    text.lines()
        .filter_map(|l| {
            let p: Vec<&str> = l.split('\t').collect();
            if p.len() < 4 {
                return None;
            }
            Some(DiskFree {
                path: p[0].to_string(),
                total_mib: p[1].trim().parse::<u64>().ok()? / 1024,
                available_mib: p[2].trim().parse::<u64>().ok()? / 1024,
                mount: p[3].trim().to_string(),
            })
        })
        .collect()
}

fn parse_container(s: &Section) -> ContainerFacts {
    let mut c = ContainerFacts::default();
    for (k, v) in s.kv() {
        match k {
            "marker" | "cgroup" | "env" | "env_name" => c.markers.push(format!("{k}={v}")),
            "virt" if !v.is_empty() => c.virt = Some(v.to_string()),
            "dmi_sys_vendor" | "dmi_product_name" if !v.is_empty() => c.dmi.push(v.to_string()),
            _ => {}
        }
    }
    let has = |needle: &str| {
        c.markers
            .iter()
            .any(|m| m.to_ascii_lowercase().contains(needle))
    };
    c.provider = if has("runpod") {
        Some(Provider::Runpod)
    } else if has("vast_") {
        Some(Provider::Vast)
    } else if has("autodl") {
        Some(Provider::Autodl)
    } else {
        None
    };
    let virt_container = c.virt.as_deref().is_some_and(|v| {
        matches!(
            v,
            "docker"
                | "podman"
                | "lxc"
                | "lxc-libvirt"
                | "systemd-nspawn"
                | "rkt"
                | "wsl"
                | "container-other"
                | "openvz"
        )
    });
    c.in_container = virt_container
        || c.provider.is_some()
        || c.markers
            .iter()
            .any(|m| m.starts_with("marker=") || m.starts_with("cgroup="));
    c
}

fn parse_driver(smi: Option<&Section>, query: &Section, proc_version: &Section) -> DriverFacts {
    let mut d = DriverFacts {
        kernel_module_version: KMOD
            .captures(&proc_version.stdout)
            .map(|c| c[1].to_string()),
        ..DriverFacts::default()
    };
    let Some(smi) = smi else {
        return d;
    };
    let text = smi.text();
    d.smi_exit_code = smi.rc;
    d.driver_version = DRIVER_VERSION.captures(&text).map(|c| c[1].to_string());
    d.cuda_version = CUDA_VERSION.captures(&text).map(|c| c[1].to_string());
    d.nvml_library_version = NVML_LIB.captures(&text).map(|c| c[1].to_string());
    let has = |s: &str| text.contains(s);
    d.smi_state = if smi.rc == Some(127)
        || (smi.rc != Some(0) && (has("not found") || has("No such file")))
    {
        SmiState::NotFound
    } else if has("couldn't communicate with the NVIDIA driver") {
        SmiState::DriverNotLoaded
    } else if has("Driver/library version mismatch") {
        SmiState::NvmlMismatch
    } else if has("No devices were found") {
        SmiState::NoDevices
    } else if has("GPU is lost")
        || has("Unknown Error")
        || has("fallen off the bus")
        || has("Unable to determine the device handle")
    {
        SmiState::GpuLost
    } else if smi.rc == Some(0) {
        SmiState::Ok
    } else {
        SmiState::Failed
    };
    if d.smi_state != SmiState::Ok {
        d.error_lines = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(6)
            .map(String::from)
            .collect();
    }
    if d.driver_version.is_none() {
        d.driver_version = csv_rows(&query.stdout, "index")
            .into_iter()
            .find_map(|r| r.get("driver_version").cloned().flatten());
    }
    d
}

/// Rows of nvidia-smi CSV output (`--format=csv` with a header), keyed by field name without its
/// unit (`memory.total [MiB]` -> `memory.total`); `[N/A]`-style values are `None`. Uses the last
/// header that starts with `first_field` (a retried query prints its own header).
pub fn csv_rows(text: &str, first_field: &str) -> Vec<BTreeMap<String, Option<String>>> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(h) = lines
        .iter()
        .rposition(|l| l.split(',').next().map(str::trim) == Some(first_field))
    else {
        return Vec::new();
    };
    let header: Vec<String> = lines[h]
        .split(',')
        .map(|c| c.trim().split(' ').next().unwrap_or("").to_string())
        .collect();
    lines[h + 1..]
        .iter()
        .filter(|l| l.contains(','))
        .map(|l| {
            let mut cells: Vec<String> = l.split(',').map(|c| c.trim().to_string()).collect();
            // A name containing commas: glue the surplus back into the `name` cell.
            if let Some(ni) = header.iter().position(|x| x == "name") {
                while cells.len() > header.len() && ni + 1 < cells.len() {
                    let extra = cells.remove(ni + 1);
                    cells[ni] = format!("{}, {}", cells[ni], extra);
                }
            }
            header
                .iter()
                .cloned()
                .zip(cells.into_iter().map(|v| {
                    let bad =
                        v.is_empty() || v.starts_with('[') || v == "N/A" || v == "Not Supported";
                    (!bad).then_some(v)
                }))
                .collect()
        })
        .collect()
}

fn num(v: Option<&Option<String>>) -> Option<f64> {
    let v = v?.as_deref()?;
    NUM.find(v)?.as_str().parse().ok()
}

fn parse_gpu_query(text: &str) -> Vec<GpuFacts> {
    csv_rows(text, "index")
        .into_iter()
        .filter_map(|r| {
            let s = |k: &str| r.get(k).cloned().flatten();
            Some(GpuFacts {
                index: num(r.get("index"))? as u32,
                name: s("name")?,
                uuid: s("uuid"),
                pci_bus_id: s("pci.bus_id"),
                compute_cap: s("compute_cap"),
                memory_total_mib: num(r.get("memory.total")).map(|v| v as u64),
                memory_used_mib: num(r.get("memory.used")).map(|v| v as u64),
                utilization_pct: num(r.get("utilization.gpu")).map(|v| v as u32),
                temperature_c: num(r.get("temperature.gpu")).map(|v| v as u32),
                power_draw_w: num(r.get("power.draw")),
                power_limit_w: num(r.get("power.limit")),
                card_id: None,
            })
        })
        .collect()
}

/// Fallback when only the default table is there: GPU rows and their memory line.
fn parse_gpu_table(text: &str) -> Vec<GpuFacts> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(c) = TABLE_GPU.captures(l) else {
            continue;
        };
        let mem = lines.get(i + 1).and_then(|n| TABLE_MEM.captures(n));
        out.push(GpuFacts {
            index: c[1].parse().unwrap_or(0),
            name: c[2].trim().to_string(),
            pci_bus_id: Some(c[3].to_string()),
            memory_used_mib: mem.as_ref().and_then(|m| m[1].parse().ok()),
            memory_total_mib: mem.as_ref().and_then(|m| m[2].parse().ok()),
            ..GpuFacts::default()
        });
    }
    out
}

fn parse_apps(text: &str) -> Vec<GpuProcess> {
    csv_rows(text, "pid")
        .into_iter()
        .filter_map(|r| {
            Some(GpuProcess {
                pid: num(r.get("pid"))? as u32,
                name: r.get("process_name").cloned().flatten().unwrap_or_default(),
                used_mib: num(r.get("used_gpu_memory")).map(|v| v as u64),
            })
        })
        .collect()
}

fn parse_nvcc(s: &Section) -> NvccFacts {
    let text = s.text();
    let cap = NVCC.captures(&text);
    NvccFacts {
        found: cap.is_some(),
        path: s.get("path").map(String::from),
        on_path: s.get("on_path") == Some("yes"),
        release: cap.as_ref().map(|c| c[1].to_string()),
        version: cap.as_ref().map(|c| c[2].to_string()),
    }
}

fn parse_python(s: Option<&Section>) -> PythonFacts {
    let Some(s) = s else {
        return PythonFacts::default();
    };
    let get = |k: &str| s.get(k).map(String::from);
    let all = |k: &str| -> Vec<String> {
        s.kv()
            .into_iter()
            .filter(|(kk, _)| *kk == k)
            .map(|(_, v)| v.to_string())
            .collect()
    };
    PythonFacts {
        found: s.get("version").is_some(),
        executable: get("executable"),
        version: get("version"),
        in_venv: s.get("in_venv") == Some("True"),
        virtual_env: get("virtual_env"),
        conda_prefix: get("conda_prefix"),
        conda_env: get("conda_default_env"),
        conda: get("conda"),
        conda_envs: all("conda_env"),
        gpurent_venv: get("gpurent_venv"),
        externally_managed: s.get("externally_managed") == Some("True"),
        venv_module: s.get("venv_module") == Some("True"),
        interpreters: all("interpreter"),
    }
}

fn parse_pip(s: &Section) -> PipFacts {
    PipFacts {
        version: s
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("pip "))
            .and_then(|r| r.split_whitespace().next())
            .map(String::from),
        index_config: s
            .kv()
            .into_iter()
            .filter(|(k, _)| *k == "config" || *k == "env")
            .map(|(_, v)| v.to_string())
            .filter(|v| {
                let l = v.to_ascii_lowercase();
                l.contains("index-url")
                    || l.contains("index_url")
                    || l.contains("find-links")
                    || l.contains("find_links")
            })
            .collect(),
    }
}

fn parse_torch(s: Option<&Section>) -> TorchFacts {
    let Some(s) = s else {
        return TorchFacts::default();
    };
    let get = |k: &str| s.get(k).map(String::from);
    let kv = s.kv();
    let mut t = TorchFacts {
        version: get("torch_version"),
        cuda: get("torch_cuda").filter(|v| v != "None"),
        cuda_available: s.get("cuda_available").map(|v| v == "True"),
        device_count: s.get("device_count").and_then(|v| v.parse().ok()),
        arch_list: s
            .get("arch_list")
            .map(|v| v.split_whitespace().map(String::from).collect())
            .unwrap_or_default(),
        cudnn: s.get("cudnn").and_then(|v| v.parse().ok()),
        dist_torch: get("dist_torch"),
        dist_torchvision: get("dist_torchvision"),
        dist_torchaudio: get("dist_torchaudio"),
        import_error: get("import_error"),
        warnings: kv
            .iter()
            .filter(|(k, _)| *k == "warning")
            .map(|(_, v)| v.to_string())
            .collect(),
        errors: kv
            .iter()
            .filter(|(k, _)| k.ends_with("_error") && *k != "import_error")
            .map(|(k, v)| format!("{k}: {v}"))
            .collect(),
        ..TorchFacts::default()
    };
    for (k, v) in &kv {
        if *k != "device" {
            continue;
        }
        let Some((idx, rest)) = v.split_once('|') else {
            continue;
        };
        let mut tail = rest.rsplitn(3, '|');
        let (mem, cc, name) = (tail.next(), tail.next(), tail.next());
        if let (Some(mem), Some(cc), Some(name)) = (mem, cc, name) {
            t.devices.push(TorchDevice {
                index: idx.parse().unwrap_or(0),
                name: name.to_string(),
                capability: cc.to_string(),
                total_memory_bytes: mem.parse().ok(),
            });
        }
    }
    t.state = if t.version.is_some() {
        TorchState::Present
    } else if let Some(e) = &t.import_error {
        if e.starts_with("ModuleNotFoundError") && e.contains("'torch'") {
            TorchState::Missing
        } else {
            TorchState::Broken
        }
    } else {
        TorchState::NotProbed
    };
    t
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
