//! The host beside the GPUs: CPU per core, RAM, disk and network throughput from `/proc`.
//!
//! In a container (a Docker rental) `/proc/stat` and `/proc/meminfo` show the whole physical
//! machine: other tenants' load, RAM the container may not use. When the host's
//! `/sys/fs/cgroup` is a cgroup v2 namespace with limits (`cpu.max` or `memory.max` there, which
//! a root cgroup has not), CPU and RAM come from the cgroup instead: `cpu.stat` `usage_usec`
//! against the `cpu.max` quota, `memory.current` less `inactive_file` against `memory.max`; the
//! per-core figures (the machine's) and iowait are left out.
//!
//! Every few samples the loop also prints the GPU processes (`--query-compute-apps`) with each
//! one's `/proc/PID/stat` and command line: the processes' own CPU time, which neither the
//! machine's other tenants nor its other processes bend.
//!
//! The host runs one small loop that prints `/proc/uptime`, `/proc/stat`, `/proc/meminfo`,
//! `/proc/diskstats` and `/proc/net/dev` with `head` (whose `==> FILE <==` lines separate them)
//! and an `==> end <==` line, once per interval. The counters are cumulative; the rates come
//! from the difference between two snapshots over the host's own uptime, so neither clock skew
//! nor a late delivery bends them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::telemetry::{parse_apps, ComputeApp};

/// The files the loop prints, in order.
pub const PROC_FILES: &[&str] = &[
    "/proc/uptime",
    "/proc/stat",
    "/proc/meminfo",
    "/proc/diskstats",
    "/proc/net/dev",
];

/// The cgroup v2 files the loop prints beside them (absent outside a container).
pub const CGROUP_FILES: &[&str] = &[
    "/sys/fs/cgroup/cpu.max",
    "/sys/fs/cgroup/cpu.stat",
    "/sys/fs/cgroup/memory.current",
    "/sys/fs/cgroup/memory.max",
    "/sys/fs/cgroup/memory.stat",
];

/// Clock ticks per second of `/proc/PID/stat` (`USER_HZ`, 100 on every Linux ABI).
pub const USER_HZ: f64 = 100.0;

/// The container's own figures (cgroup v2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cgroup {
    /// `cpu.max` quota / period; `None` for `max` (no quota).
    pub cpu_quota_cores: Option<f64>,
    /// `cpu.stat` `usage_usec`.
    pub cpu_usage_usec: Option<u64>,
    pub mem_current: Option<u64>,
    /// `memory.max`; `None` for `max` (no limit).
    pub mem_max: Option<u64>,
    /// `memory.stat` `inactive_file`: page cache the kernel reclaims first.
    pub mem_inactive_file: Option<u64>,
}

/// Jiffies of one CPU line of `/proc/stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    pub idle: u64,
    pub iowait: u64,
}

impl CpuTimes {
    fn total(&self) -> u64 {
        self.busy + self.idle + self.iowait
    }
}

/// One reading of the files (cumulative counters; `None` where a file or line was missing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcSnapshot {
    pub uptime_s: Option<f64>,
    pub cpu: Option<CpuTimes>,
    pub cores: Vec<CpuTimes>,
    pub mem_total_kib: Option<u64>,
    pub mem_available_kib: Option<u64>,
    pub disk_read_bytes: Option<u64>,
    pub disk_written_bytes: Option<u64>,
    pub net_rx_bytes: Option<u64>,
    pub net_tx_bytes: Option<u64>,
    /// Limits found under `/sys/fs/cgroup` (`None`: not in a limited cgroup v2 namespace).
    pub cgroup: Option<Cgroup>,
}

/// The host in one sample: counters since boot, rates since the previous sample (`None` on the
/// first sample, or after a counter went backwards).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct HostSample {
    pub uptime_s: Option<f64>,
    /// All cores together, percent busy since the previous sample.
    pub cpu_pct: Option<f64>,
    /// Percent of CPU time spent waiting for I/O since the previous sample.
    pub cpu_iowait_pct: Option<f64>,
    /// Each core, percent busy since the previous sample (empty on the first sample).
    pub cores_pct: Vec<f64>,
    pub mem_total_mib: Option<f64>,
    /// Total less available (what the kernel could not hand out without swapping).
    pub mem_used_mib: Option<f64>,
    pub disk_read_bytes: Option<u64>,
    pub disk_written_bytes: Option<u64>,
    pub disk_read_bps: Option<f64>,
    pub disk_write_bps: Option<f64>,
    /// Every interface but `lo`.
    pub net_rx_bytes: Option<u64>,
    pub net_tx_bytes: Option<u64>,
    pub net_rx_bps: Option<f64>,
    pub net_tx_bps: Option<f64>,
    /// CPU and RAM are the container's (cgroup v2), not the physical machine's: `cpu_pct` is
    /// against the quota, `cores_pct` and `cpu_iowait_pct` (the machine's) are left out.
    #[serde(default)]
    pub in_container: bool,
    /// The container's CPU quota in cores (`None`: no quota, or not in a container).
    #[serde(default)]
    pub cpu_limit_cores: Option<f64>,
}

fn cpu_line(l: &str) -> Option<(Option<usize>, CpuTimes)> {
    let mut it = l.split_whitespace();
    let name = it.next()?;
    let core = name.strip_prefix("cpu")?;
    let core = if core.is_empty() {
        None
    } else {
        Some(core.parse::<usize>().ok()?)
    };
    let v: Vec<u64> = it.map(|x| x.parse().unwrap_or(0)).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal (guest time is already inside user).
    let t = CpuTimes {
        busy: at(0) + at(1) + at(2) + at(5) + at(6) + at(7),
        idle: at(3),
        iowait: at(4),
    };
    Some((core, t))
}

/// Whole disks of `/proc/diskstats` (no partitions, loop, RAM, optical, device-mapper or md
/// devices, which would count the same bytes twice): total sectors read and written × 512.
fn disk_totals(lines: &[String]) -> Option<(u64, u64)> {
    let rows: Vec<(&str, u64, u64)> = lines
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((*f.get(2)?, f.get(5)?.parse().ok()?, f.get(9)?.parse().ok()?))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let skip = |n: &str| {
        ["loop", "ram", "zram", "sr", "fd", "dm-", "md"]
            .iter()
            .any(|p| n.starts_with(p))
            || names.iter().any(|d| {
                d.len() < n.len()
                    && n.starts_with(d)
                    && n[d.len()..]
                        .trim_start_matches('p')
                        .chars()
                        .all(|c| c.is_ascii_digit())
            })
    };
    let (mut r, mut w) = (0u64, 0u64);
    for (n, rs, ws) in rows {
        if !skip(n) {
            r += rs * 512;
            w += ws * 512;
        }
    }
    Some((r, w))
}

/// Received and sent bytes of `/proc/net/dev`, every interface but `lo`.
fn net_totals(lines: &[String]) -> Option<(u64, u64)> {
    let mut any = false;
    let (mut rx, mut tx) = (0u64, 0u64);
    for l in lines {
        let Some((name, rest)) = l.split_once(':') else {
            continue;
        };
        let name = name.trim();
        let f: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if f.len() < 9 {
            continue;
        }
        any = true;
        if name != "lo" {
            rx += f[0];
            tx += f[8];
        }
    }
    any.then_some((rx, tx))
}

fn kib(lines: &[String], key: &str) -> Option<u64> {
    lines.iter().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

impl ProcSnapshot {
    /// Parse the files' text, section by section (`file` ends with one of [`PROC_FILES`]).
    pub fn from_sections(sections: &[(String, Vec<String>)]) -> ProcSnapshot {
        let mut s = ProcSnapshot::default();
        for (file, lines) in sections {
            let file = PROC_FILES
                .iter()
                .chain(CGROUP_FILES)
                .find(|f| file.ends_with(*f))
                .copied()
                .unwrap_or("");
            let first = || {
                lines
                    .first()
                    .map(|l| l.trim().to_string())
                    .unwrap_or_default()
            };
            match file {
                "/sys/fs/cgroup/cpu.max" => {
                    let f = first();
                    let mut it = f.split_whitespace();
                    let quota = it.next().and_then(|q| q.parse::<f64>().ok());
                    let period = it.next().and_then(|p| p.parse::<f64>().ok());
                    s.cgroup.get_or_insert_with(Cgroup::default).cpu_quota_cores =
                        match (quota, period) {
                            (Some(q), Some(p)) if p > 0.0 && q > 0.0 => Some(q / p),
                            _ => None,
                        };
                }
                "/sys/fs/cgroup/memory.max" => {
                    s.cgroup.get_or_insert_with(Cgroup::default).mem_max = first().parse().ok()
                }
                _ => {}
            }
            match file {
                "/proc/uptime" => {
                    s.uptime_s = lines
                        .first()
                        .and_then(|l| l.split_whitespace().next())
                        .and_then(|x| x.parse().ok())
                }
                "/proc/stat" => {
                    for l in lines {
                        match cpu_line(l) {
                            Some((None, t)) => s.cpu = Some(t),
                            Some((Some(_), t)) => s.cores.push(t),
                            None => {}
                        }
                    }
                }
                "/proc/meminfo" => {
                    s.mem_total_kib = kib(lines, "MemTotal");
                    s.mem_available_kib = kib(lines, "MemAvailable");
                }
                "/proc/diskstats" => {
                    if let Some((r, w)) = disk_totals(lines) {
                        s.disk_read_bytes = Some(r);
                        s.disk_written_bytes = Some(w);
                    }
                }
                "/proc/net/dev" => {
                    if let Some((r, t)) = net_totals(lines) {
                        s.net_rx_bytes = Some(r);
                        s.net_tx_bytes = Some(t);
                    }
                }
                _ => {}
            }
        }
        // cpu.stat and memory.current exist in a root cgroup too: they count only where a limit
        // file showed that this is a container's own cgroup.
        if s.cgroup.is_some() {
            let key = |file: &str, key: &str| -> Option<u64> {
                let (_, lines) = sections.iter().find(|(f, _)| f.ends_with(file))?;
                lines.iter().find_map(|l| {
                    let mut it = l.split_whitespace();
                    (it.next()? == key).then_some(())?;
                    it.next()?.parse().ok()
                })
            };
            let current = sections
                .iter()
                .find(|(f, _)| f.ends_with("/sys/fs/cgroup/memory.current"))
                .and_then(|(_, l)| l.first()?.trim().parse().ok());
            let cg = s.cgroup.get_or_insert_with(Cgroup::default);
            cg.cpu_usage_usec = key("/sys/fs/cgroup/cpu.stat", "usage_usec");
            cg.mem_inactive_file = key("/sys/fs/cgroup/memory.stat", "inactive_file");
            cg.mem_current = current;
        }
        s
    }

    /// This snapshot as a sample, with rates against `prev` (the snapshot before it).
    pub fn sample(&self, prev: Option<&ProcSnapshot>) -> HostSample {
        let mib = |k: u64| k as f64 / 1024.0;
        let mut h = HostSample {
            uptime_s: self.uptime_s,
            mem_total_mib: self.mem_total_kib.map(mib),
            mem_used_mib: match (self.mem_total_kib, self.mem_available_kib) {
                (Some(t), Some(a)) => Some(mib(t.saturating_sub(a))),
                _ => None,
            },
            disk_read_bytes: self.disk_read_bytes,
            disk_written_bytes: self.disk_written_bytes,
            net_rx_bytes: self.net_rx_bytes,
            net_tx_bytes: self.net_tx_bytes,
            ..HostSample::default()
        };
        if let Some(cg) = &self.cgroup {
            h.in_container = true;
            h.cpu_limit_cores = cg.cpu_quota_cores;
            if let Some(max) = cg.mem_max {
                let max = mib(max / 1024);
                h.mem_total_mib = Some(h.mem_total_mib.map_or(max, |t| t.min(max)));
            }
            if let Some(cur) = cg.mem_current {
                let used = cur.saturating_sub(cg.mem_inactive_file.unwrap_or(0));
                h.mem_used_mib = Some(mib(used / 1024));
            }
        }
        let Some(p) = prev else { return h };
        if let (Some(cg), Some(pcg)) = (&self.cgroup, &p.cgroup) {
            // The container's CPU against its quota (or every core the machine shows).
            let cores = cg
                .cpu_quota_cores
                .or((!self.cores.is_empty()).then_some(self.cores.len() as f64));
            let used = match (cg.cpu_usage_usec, pcg.cpu_usage_usec) {
                (Some(a), Some(b)) => a.checked_sub(b),
                _ => None,
            };
            h.cpu_pct = match (used, cores, self.uptime_s, p.uptime_s) {
                (Some(u), Some(c), Some(a), Some(b)) if a > b && c > 0.0 => {
                    Some((100.0 * u as f64 / 1e6 / (a - b) / c).min(100.0))
                }
                _ => None,
            };
        }
        let pct = |a: &CpuTimes, b: &CpuTimes| -> Option<(f64, f64)> {
            let dt = a.total().checked_sub(b.total())?;
            let busy = a.busy.checked_sub(b.busy)?;
            let io = a.iowait.checked_sub(b.iowait)?;
            (dt > 0).then(|| {
                (
                    100.0 * busy as f64 / dt as f64,
                    100.0 * io as f64 / dt as f64,
                )
            })
        };
        if let (Some(a), Some(b), false) = (&self.cpu, &p.cpu, h.in_container) {
            if let Some((busy, io)) = pct(a, b) {
                h.cpu_pct = Some(busy);
                h.cpu_iowait_pct = Some(io);
            }
        }
        if self.cores.len() == p.cores.len() && !h.in_container {
            let cores: Option<Vec<f64>> = self
                .cores
                .iter()
                .zip(&p.cores)
                .map(|(a, b)| pct(a, b).map(|x| x.0))
                .collect();
            h.cores_pct = cores.unwrap_or_default();
        }
        let dt = match (self.uptime_s, p.uptime_s) {
            (Some(a), Some(b)) if a > b => a - b,
            _ => return h,
        };
        let rate = |a: Option<u64>, b: Option<u64>| Some(a?.checked_sub(b?)? as f64 / dt);
        h.disk_read_bps = rate(self.disk_read_bytes, p.disk_read_bytes);
        h.disk_write_bps = rate(self.disk_written_bytes, p.disk_written_bytes);
        h.net_rx_bps = rate(self.net_rx_bytes, p.net_rx_bytes);
        h.net_tx_bps = rate(self.net_tx_bytes, p.net_tx_bytes);
        h
    }
}

/// What one line of the host loop completed.
// A host sample is larger than the other events; events are moved once each, not stored.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ProcEvent {
    Snapshot(ProcSnapshot),
    /// The `--query-compute-apps` answer the loop prints every few samples.
    Apps(Vec<ComputeApp>),
}

/// Splits the loop's output into snapshots: `==> FILE <==` starts a section, `==> end <==` ends
/// the snapshot; `==> apps <==` … `==> apps end <==` is a compute-apps answer.
#[derive(Debug, Clone, Default)]
pub struct ProcStream {
    sections: Vec<(String, Vec<String>)>,
    /// Each GPU process's CPU ticks (utime + stime) and the host's uptime at the last reading.
    ticks: std::collections::HashMap<u32, (u64, f64)>,
}

/// utime + stime of a `/proc/PID/stat` line (after the command name, which may hold spaces).
fn stat_ticks(line: &str) -> Option<(u32, u64)> {
    let pid = line.split_whitespace().next()?.parse().ok()?;
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // fields 3.. of stat: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((pid, utime + stime))
}

impl ProcStream {
    pub fn new() -> ProcStream {
        ProcStream::default()
    }

    pub fn push_line(&mut self, line: &str) -> Option<ProcEvent> {
        if let Some(name) = line
            .trim()
            .strip_prefix("==> ")
            .and_then(|r| r.strip_suffix(" <=="))
        {
            match name {
                "end" => {
                    let s = ProcSnapshot::from_sections(&self.sections);
                    self.sections.clear();
                    return Some(ProcEvent::Snapshot(s));
                }
                "apps end" => {
                    if self.sections.last().is_some_and(|(n, _)| n == "apps") {
                        let (_, lines) = self.sections.pop()?;
                        return Some(ProcEvent::Apps(self.apps(&lines)));
                    }
                }
                _ => self.sections.push((name.to_string(), Vec::new())),
            }
            return None;
        }
        if let Some((_, lines)) = self.sections.last_mut() {
            if !line.trim().is_empty() {
                lines.push(line.to_string());
            }
        }
        None
    }

    /// The compute apps of an `apps` section, with each process's command line and its CPU use
    /// since the previous reading (against the host's uptime in the same snapshot).
    fn apps(&mut self, lines: &[String]) -> Vec<ComputeApp> {
        let (mut stats, mut cmds, mut csv) = (Vec::new(), Vec::new(), Vec::new());
        for l in lines {
            if let Some(r) = l.strip_prefix("stat ") {
                stats.extend(stat_ticks(r));
            } else if let Some(r) = l.strip_prefix("cmd ") {
                if let Some((pid, cmd)) = r.split_once(' ') {
                    cmds.extend(pid.parse::<u32>().ok().map(|p| (p, cmd.trim().to_string())));
                }
            } else {
                csv.push(l.as_str());
            }
        }
        let uptime = self
            .sections
            .iter()
            .find(|(f, _)| f.ends_with("/proc/uptime"))
            .and_then(|(_, l)| l.first()?.split_whitespace().next()?.parse::<f64>().ok());
        let mut apps = parse_apps(&csv.join("\n"), None);
        let mut seen = std::collections::HashMap::new();
        for a in &mut apps {
            let Some(pid) = a.pid else { continue };
            a.command = cmds
                .iter()
                .find(|(p, _)| *p == pid)
                .map(|(_, c)| c.clone())
                .filter(|c| !c.is_empty());
            let Some(&(_, ticks)) = stats.iter().find(|(p, _)| *p == pid) else {
                continue;
            };
            if let (Some(&(t0, u0)), Some(u)) = (self.ticks.get(&pid), uptime) {
                if u > u0 && ticks >= t0 {
                    a.cpu_pct = Some(100.0 * (ticks - t0) as f64 / USER_HZ / (u - u0));
                }
            }
            if let Some(u) = uptime {
                seen.insert(pid, (ticks, u));
            }
        }
        self.ticks = seen;
        apps
    }

    /// Drop a half-read snapshot (after a reconnect).
    pub fn reset(&mut self) {
        self.sections.clear();
    }
}

/// The host loop: every `interval_ms`, the files of [`PROC_FILES`] and, every `apps_every`
/// samples when `apps` is set, the compute apps; to stdout (the caller redirects). The files are
/// read under `$GPURENT_PROC_ROOT` when the host sets it (the tests' fake hosts; like the probe's
/// `GPURENT_PROBE_ROOT`), else from `/proc`.
pub fn proc_loop_script(interval_ms: u64, apps: Option<&str>, apps_every: u32) -> String {
    let secs = format!("{}.{:03}", interval_ms / 1000, interval_ms % 1000);
    // Each process of the answer (its pid is the second column): `stat PID (comm) ...` and
    // `cmd PID ARGS` (NULs and newlines made spaces, at most 400 characters).
    let apps = match apps {
        Some(cmd) => format!(
            "[ $((i % {every})) -eq 0 ] && {{ echo '==> apps <=='; a=$({cmd} 2>&1); echo \"$a\"; \
             for p in $(echo \"$a\" | sed -n 's/^[^,]*, *\\([0-9][0-9]*\\) *,.*/\\1/p'); do \
             s=$(cat 2>/dev/null \"$r/proc/$p/stat\") && echo \"stat $s\"; \
             c=$(tr '\\000\\n' '  ' 2>/dev/null <\"$r/proc/$p/cmdline\" | cut -c1-400) && echo \"cmd $p $c\"; \
             done; echo '==> apps end <=='; }}; ",
            every = apps_every.max(1)
        ),
        None => String::new(),
    };
    let files: Vec<String> = PROC_FILES
        .iter()
        .chain(CGROUP_FILES)
        .map(|f| format!("\"$r\"{f}"))
        .collect();
    format!(
        "r=${{GPURENT_PROC_ROOT:-}}; i=0; while :; do head -n 4000 {files} 2>/dev/null; {apps}echo '==> end <=='; i=$((i+1)); sleep {secs} || exit 0; done",
        files = files.join(" "),
    )
}

/// [`proc_loop_script`] for the telemetry stream: each snapshot is read whole, then written
/// through `timeout` (where the host has it): a write that blocks for `write_limit_s` (the
/// connection died without a FIN, and sshd stopped reading) ends the loop instead of hanging for
/// hours; and the loop ends when the process `$pp` (the shell of the SSH session that started it)
/// is gone.
pub fn guarded_loop_script(
    interval_ms: u64,
    apps: Option<&str>,
    apps_every: u32,
    write_limit_s: u32,
) -> String {
    let secs = format!("{}.{:03}", interval_ms / 1000, interval_ms % 1000);
    let apps = match apps {
        Some(cmd) => format!(
            "if [ $((i % {every})) -eq 0 ]; then echo '==> apps <=='; a=$({cmd} 2>&1); echo \"$a\"; \
             for p in $(echo \"$a\" | sed -n 's/^[^,]*, *\\([0-9][0-9]*\\) *,.*/\\1/p'); do \
             s=$(cat 2>/dev/null \"$r/proc/$p/stat\") && echo \"stat $s\"; \
             c=$(tr '\\000\\n' '  ' 2>/dev/null <\"$r/proc/$p/cmdline\" | cut -c1-400) && echo \"cmd $p $c\"; \
             done; echo '==> apps end <=='; fi; ",
            every = apps_every.max(1)
        ),
        None => String::new(),
    };
    let files: Vec<String> = PROC_FILES
        .iter()
        .chain(CGROUP_FILES)
        .map(|f| format!("\"$r\"{f}"))
        .collect();
    format!(
        "r=${{GPURENT_PROC_ROOT:-}}; i=0; to=; command -v timeout >/dev/null 2>&1 && to=\"timeout {write_limit_s}\"; \
         while kill -0 \"$pp\" 2>/dev/null; do o=$(head -n 4000 {files} 2>/dev/null; {apps}echo '==> end <=='); \
         printf '%s\\n' \"$o\" | $to cat || exit 0; i=$((i+1)); sleep {secs} || exit 0; done",
        files = files.join(" "),
    )
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
