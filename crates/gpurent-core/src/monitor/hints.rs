//! Bottleneck hints: pure rules over a window of samples, each with its evidence (measured
//! numbers) and concrete next steps. Texts are keys the UI translates (`ui/js/i18n/*-monitor.js`),
//! numbers travel as parameters. Rules marked `heuristic` read intent from counters that cannot
//! prove it; the others restate what the driver itself reports.
//!
//! `utilization.gpu` is the share of time in which at least one kernel was running, not how much
//! of the chip those kernels use: 100 % can be one tiny kernel after another. Hints that lean on it
//! carry the note [`NOTE_UTIL_MEANING`].
//!
//! The rules need [`MIN_SAMPLES`] samples in the window; a condition holds when it holds in at
//! least [`SHARE`] of them (one odd sample neither raises nor silences a hint).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::hoststats::HostSample;
use super::telemetry::{serves_requests, ComputeApp, GpuRow, ThrottleReason};

/// Fewest samples a rule looks at.
pub const MIN_SAMPLES: usize = 5;
/// Share of the window in which a condition must hold.
pub const SHARE: f64 = 0.8;
/// GPU utilisation below this is "low" (percent).
pub const LOW_UTIL: f64 = 40.0;
/// At or below this the GPU is idle (percent).
pub const IDLE_UTIL: f64 = 5.0;
/// A core at or above this is saturated (percent).
pub const SATURATED_CORE: f64 = 90.0;
/// VRAM use at or above this fraction of the total is near full.
pub const VRAM_NEAR_FULL: f64 = 0.95;
/// More VRAM than this (MiB) in use means a job holds the card.
pub const HELD_MIB: f64 = 1024.0;
/// CPU time waiting for I/O at or above this (percent) points at storage.
pub const IOWAIT_HIGH: f64 = 20.0;
/// Busy (util at or above) with power below this share of the limit: small or memory-bound kernels.
pub const BUSY_UTIL: f64 = 90.0;
pub const LOW_POWER_SHARE: f64 = 0.35;
/// A power limit below this share of the card's default was lowered (by the host or provider).
pub const LOWERED_LIMIT_SHARE: f64 = 0.95;
/// At the power cap, an SM clock below this share of the card's maximum has sagged: a card
/// working normally at its cap (an H100 training at 700 W) keeps most of its clock.
pub const CLOCK_SAG_SHARE: f64 = 0.6;

pub const NOTE_UTIL_MEANING: &str = "monitor.note.util_is_kernel_time";

/// One moment on a host: its GPUs, the host beside them, the processes on the GPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct Sample {
    pub at_ms: i64,
    pub gpus: Vec<GpuRow>,
    pub host: Option<HostSample>,
    pub apps: Vec<ComputeApp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum HintKind {
    /// GPU mostly waiting while the CPU is saturated: the input pipeline is the bottleneck.
    DataLoader,
    /// VRAM near full: the next larger batch or longer sequence runs out of memory.
    OomRisk,
    /// The driver lowers the clocks because the card is too hot.
    ThermalThrottle,
    /// The driver lowers the clocks for power: an external power brake, or a power cap that was
    /// lowered below the card's default or holds the clocks far below their maximum (a card at
    /// its default cap under full load is working normally and raises nothing).
    PowerThrottle,
    /// The hardware cuts the clocks (`hw_slowdown`) and the driver does not say why: heat, a
    /// power brake or the power supply.
    HwSlowdown,
    /// A process holds VRAM but the GPU does nothing: waiting on I/O, or stalled.
    IdleWithMemory,
    /// Utilisation near 100 % at a fraction of the power limit: busy, not necessarily working hard.
    LowIntensity,
}

impl HintKind {
    /// The key of the hint's title; `.why` is the explanation.
    pub fn key(self) -> &'static str {
        match self {
            HintKind::DataLoader => "monitor.hint.data_loader",
            HintKind::OomRisk => "monitor.hint.oom_risk",
            HintKind::ThermalThrottle => "monitor.hint.thermal_throttle",
            HintKind::PowerThrottle => "monitor.hint.power_throttle",
            HintKind::HwSlowdown => "monitor.hint.hw_slowdown",
            HintKind::IdleWithMemory => "monitor.hint.idle_with_memory",
            HintKind::LowIntensity => "monitor.hint.low_intensity",
        }
    }
}

/// A measured fact behind a hint: a key and its numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Evidence {
    pub key: String,
    pub params: BTreeMap<String, f64>,
}

fn ev(key: &str, params: &[(&str, f64)]) -> Evidence {
    Evidence {
        key: key.to_string(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), (v * 10.0).round() / 10.0))
            .collect(),
    }
}

/// One hint for one GPU (by `nvidia-smi` index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Hint {
    pub kind: HintKind,
    /// The title key ([`HintKind::key`]).
    pub key: String,
    pub gpu: Option<u32>,
    /// Read from counters that cannot prove the cause.
    pub heuristic: bool,
    pub evidence: Vec<Evidence>,
    /// Keys of the next steps, most useful first.
    pub next_steps: Vec<String>,
    /// Keys of notes on how to read the numbers.
    pub notes: Vec<String>,
}

fn hint(
    kind: HintKind,
    gpu: Option<u32>,
    heuristic: bool,
    evidence: Vec<Evidence>,
    steps: &[&str],
    notes: &[&str],
) -> Hint {
    Hint {
        kind,
        key: kind.key().to_string(),
        gpu,
        heuristic,
        evidence,
        next_steps: steps.iter().map(|s| s.to_string()).collect(),
        notes: notes.iter().map(|s| s.to_string()).collect(),
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// `cond` holds in at least [`SHARE`] of the samples where it could be judged, and could be
/// judged in at least [`MIN_SAMPLES`].
fn mostly<T>(items: &[T], cond: impl Fn(&T) -> Option<bool>) -> bool {
    let judged: Vec<bool> = items.iter().filter_map(cond).collect();
    judged.len() >= MIN_SAMPLES
        && judged.iter().filter(|b| **b).count() as f64 >= SHARE * judged.len() as f64
}

/// The hints for the window `samples` (oldest first). Healthy: none.
pub fn hints(samples: &[Sample]) -> Vec<Hint> {
    if samples.len() < MIN_SAMPLES {
        return Vec::new();
    }
    let gpu_count = samples.iter().map(|s| s.gpus.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for pos in 0..gpu_count {
        // (this GPU's row, the host, the apps on this GPU) per sample that has the GPU.
        let rows: Vec<(&GpuRow, Option<&HostSample>, Vec<&ComputeApp>)> = samples
            .iter()
            .filter_map(|s| {
                let g = s.gpus.get(pos)?;
                let apps = s
                    .apps
                    .iter()
                    .filter(|a| a.gpu_uuid.is_some() && a.gpu_uuid == g.uuid)
                    .collect();
                Some((g, s.host.as_ref(), apps))
            })
            .collect();
        let index = rows.last().and_then(|r| r.0.index).or(Some(pos as u32));
        out.extend(gpu_hints(index, &rows));
    }
    out
}

type Row<'a> = (&'a GpuRow, Option<&'a HostSample>, Vec<&'a ComputeApp>);

/// A process that holds memory on purpose while idle: a served model or a notebook kernel.
fn serving(a: &ComputeApp) -> bool {
    a.command.as_deref().is_some_and(serves_requests)
}

/// Memory is held by something other than a server waiting for requests: every process that
/// holds memory is known and serves requests, or no process is known and the card's memory is
/// taken.
fn held_by_job(r: &Row<'_>) -> bool {
    let holders: Vec<&&ComputeApp> =
        r.2.iter()
            .filter(|a| a.used_memory_mib.is_none_or(|m| m > 0.0))
            .collect();
    if !holders.is_empty() && holders.iter().all(|a| serving(a)) {
        return false;
    }
    held(r)
}

fn held(r: &Row<'_>) -> bool {
    r.0.memory_used_mib.is_some_and(|m| m > HELD_MIB)
        || r.2
            .iter()
            .any(|a| a.used_memory_mib.is_some_and(|m| m > HELD_MIB))
}

fn gpu_hints(gpu: Option<u32>, rows: &[Row<'_>]) -> Vec<Hint> {
    let mut out = Vec::new();
    let utils: Vec<f64> = rows.iter().filter_map(|r| r.0.util_gpu_pct).collect();
    let util_mean = mean(&utils);
    let busiest = |h: &HostSample| {
        h.cores_pct
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))))
    };
    let saturated = |h: &HostSample| h.cores_pct.iter().filter(|c| **c >= SATURATED_CORE).count();

    // GPU waiting while the CPU is saturated (one core: a single-process loader; all: CPU-bound).
    let low_util_with_job = mostly(rows, |r| Some(r.0.util_gpu_pct? < LOW_UTIL && held(r)));
    // The job's own process at a full core (its own CPU time: neither the machine's other
    // tenants nor its other processes bend it); in a container, the quota full (the machine's
    // cores are other tenants' too); on a whole machine, its busiest core.
    let proc_hot = |r: &Row<'_>| {
        r.2.iter()
            .filter_map(|a| Some((a.pid?, a.cpu_pct?)))
            .filter(|(_, c)| *c >= SATURATED_CORE)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let cpu_bound = mostly(rows, |r| {
        if proc_hot(r).is_some() {
            return Some(true);
        }
        let h = r.1?;
        if h.in_container {
            return Some(h.cpu_pct? >= SATURATED_CORE);
        }
        Some(busiest(h)? >= SATURATED_CORE)
    });
    if low_util_with_job && cpu_bound {
        let hosts: Vec<&HostSample> = rows.iter().filter_map(|r| r.1).collect();
        let container = hosts.last().is_some_and(|h| h.in_container);
        let cores = hosts.last().map_or(0, |h| h.cores_pct.len());
        let sat = mean(
            &hosts
                .iter()
                .map(|h| saturated(h) as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        let quota_pct = mean(&hosts.iter().filter_map(|h| h.cpu_pct).collect::<Vec<_>>());
        let all = if container {
            quota_pct.is_some_and(|p| p >= SATURATED_CORE)
        } else {
            cores > 0 && sat >= 0.8 * cores as f64
        };
        let mut evidence = vec![ev(
            "monitor.evidence.gpu_util_low",
            &[
                ("util_pct", util_mean.unwrap_or(0.0)),
                ("threshold_pct", LOW_UTIL),
            ],
        )];
        let hot = rows.iter().rev().find_map(proc_hot);
        if container && all {
            let limit = hosts.last().and_then(|h| h.cpu_limit_cores).unwrap_or(0.0);
            evidence.push(ev(
                "monitor.evidence.cpu_quota_saturated",
                &[
                    ("cpu_pct", quota_pct.unwrap_or(0.0)),
                    ("cores", limit),
                    ("threshold_pct", SATURATED_CORE),
                ],
            ));
        } else if let (Some((pid, pct)), false) = (hot, all) {
            evidence.push(ev(
                "monitor.evidence.process_cpu_saturated",
                &[
                    ("pid", pid as f64),
                    ("cpu_pct", pct),
                    ("threshold_pct", SATURATED_CORE),
                ],
            ));
        } else {
            evidence.push(ev(
                if all {
                    "monitor.evidence.all_cores_saturated"
                } else {
                    "monitor.evidence.some_cores_saturated"
                },
                &[
                    ("saturated", sat.round()),
                    ("cores", cores as f64),
                    ("threshold_pct", SATURATED_CORE),
                ],
            ));
        }
        let steps: &[&str] = if all {
            &[
                "monitor.step.pretokenise",
                "monitor.step.num_workers",
                "monitor.step.more_cpu_host",
            ]
        } else {
            &[
                "monitor.step.num_workers",
                "monitor.step.pin_memory",
                "monitor.step.pretokenise",
            ]
        };
        out.push(hint(
            HintKind::DataLoader,
            gpu,
            true,
            evidence,
            steps,
            &[NOTE_UTIL_MEANING],
        ));
    } else if mostly(rows, |r| {
        Some(r.0.util_gpu_pct? <= IDLE_UTIL && held_by_job(r))
    }) {
        // A job holds memory and the GPU does nothing (and the CPU is not the reason). A served
        // model or a notebook kernel waiting for requests is idle by design: not a stalled job.
        let last = &rows[rows.len() - 1];
        let mib = last.0.memory_used_mib.unwrap_or(0.0);
        let mut evidence = vec![ev(
            "monitor.evidence.gpu_idle_memory_held",
            &[
                ("util_pct", util_mean.unwrap_or(0.0)),
                ("memory_mib", mib),
                ("seconds", span_s(rows)),
            ],
        )];
        for a in last.2.iter().filter(|a| !serving(a)) {
            if let Some(pid) = a.pid {
                evidence.push(ev(
                    "monitor.evidence.process_holds_memory",
                    &[
                        ("pid", pid as f64),
                        ("memory_mib", a.used_memory_mib.unwrap_or(0.0)),
                    ],
                ));
            }
        }
        let io: Vec<f64> = rows.iter().filter_map(|r| r.1?.cpu_iowait_pct).collect();
        let io_wait = mean(&io).is_some_and(|m| m >= IOWAIT_HIGH);
        let steps: &[&str] = if io_wait {
            evidence.push(ev(
                "monitor.evidence.iowait_high",
                &[
                    ("iowait_pct", mean(&io).unwrap_or(0.0)),
                    ("threshold_pct", IOWAIT_HIGH),
                ],
            ));
            &[
                "monitor.step.data_on_local_disk",
                "monitor.step.check_job_log",
                "monitor.step.py_spy_dump",
            ]
        } else {
            &[
                "monitor.step.check_job_log",
                "monitor.step.py_spy_dump",
                "monitor.step.stop_idle_job",
            ]
        };
        out.push(hint(
            HintKind::IdleWithMemory,
            gpu,
            true,
            evidence,
            steps,
            &[NOTE_UTIL_MEANING],
        ));
    }

    // VRAM near full, at the latest samples (what matters for the next step of the job).
    let recent = &rows[rows.len().saturating_sub(MIN_SAMPLES)..];
    if mostly(recent, |r| Some(r.0.memory_fraction()? >= VRAM_NEAR_FULL)) {
        let last = recent[recent.len() - 1].0;
        let (used, total) = (
            last.memory_used_mib.unwrap_or(0.0),
            last.memory_total_mib.unwrap_or(0.0),
        );
        out.push(hint(
            HintKind::OomRisk,
            gpu,
            true,
            vec![ev(
                "monitor.evidence.vram_near_full",
                &[
                    ("used_mib", used),
                    ("total_mib", total),
                    ("pct", 100.0 * used / total.max(1.0)),
                ],
            )],
            &[
                "monitor.step.smaller_batch",
                "monitor.step.gradient_checkpointing",
                "monitor.step.lower_precision",
                "monitor.step.estimate",
            ],
            &["monitor.note.caching_allocator"],
        ));
    }

    // Throttling the driver reports while the card has work.
    let busy = |r: &&Row<'_>| r.0.util_gpu_pct.is_some_and(|u| u >= LOW_UTIL);
    let working: Vec<&Row<'_>> = rows.iter().filter(busy).collect();
    let reason_share = |pick: fn(ThrottleReason) -> bool| {
        mostly(&working, |r| {
            Some(r.0.throttle.as_ref()?.iter().any(|t| pick(*t)))
        })
    };
    let temps: Vec<f64> = working.iter().filter_map(|r| r.0.temperature_c).collect();
    let clocks: Vec<f64> = working.iter().filter_map(|r| r.0.clock_sm_mhz).collect();
    if reason_share(ThrottleReason::is_thermal) {
        out.push(hint(
            HintKind::ThermalThrottle,
            gpu,
            false,
            vec![ev(
                "monitor.evidence.thermal_reason_active",
                &[
                    ("temperature_c", mean(&temps).unwrap_or(0.0)),
                    ("sm_mhz", mean(&clocks).unwrap_or(0.0)),
                ],
            )],
            &[
                "monitor.step.other_host",
                "monitor.step.ask_provider_cooling",
            ],
            &[],
        ));
    }
    let brake = reason_share(|t| t == ThrottleReason::HwPowerBrakeSlowdown);
    let at_cap = reason_share(|t| t == ThrottleReason::SwPowerCap);
    let draws: Vec<f64> = working.iter().filter_map(|r| r.0.power_draw_w).collect();
    let last_of = |f: fn(&GpuRow) -> Option<f64>| working.iter().rev().find_map(|r| f(r.0));
    let limit = last_of(|g| g.power_limit_w);
    let default = last_of(|g| g.power_default_limit_w);
    let max_clock = last_of(|g| g.clock_max_sm_mhz);
    // At the cap, something is wrong only if the cap was lowered or the clocks sag far below
    // their maximum; a card at its default cap under full load is working as designed.
    let lowered = match (limit, default) {
        (Some(l), Some(d)) if d > 0.0 => l < LOWERED_LIMIT_SHARE * d,
        _ => false,
    };
    let sagging = match (mean(&clocks), max_clock) {
        (Some(c), Some(m)) if m > 0.0 => c < CLOCK_SAG_SHARE * m,
        _ => false,
    };
    if brake || (at_cap && (lowered || sagging)) {
        let (power_w, limit_w, sm_mhz) = (
            mean(&draws).unwrap_or(0.0),
            limit.unwrap_or(0.0),
            mean(&clocks).unwrap_or(0.0),
        );
        let evidence = if brake {
            ev(
                "monitor.evidence.power_brake_active",
                &[
                    ("power_w", power_w),
                    ("limit_w", limit_w),
                    ("sm_mhz", sm_mhz),
                ],
            )
        } else if lowered {
            ev(
                "monitor.evidence.power_limit_lowered",
                &[
                    ("power_w", power_w),
                    ("limit_w", limit_w),
                    ("default_w", default.unwrap_or(0.0)),
                ],
            )
        } else {
            ev(
                "monitor.evidence.power_cap_clocks_low",
                &[
                    ("power_w", power_w),
                    ("limit_w", limit_w),
                    ("sm_mhz", sm_mhz),
                    ("max_mhz", max_clock.unwrap_or(0.0)),
                ],
            )
        };
        out.push(hint(
            HintKind::PowerThrottle,
            gpu,
            // A brake or a lowered limit is what the driver reports; a sagging clock is a reading.
            !brake && !lowered,
            vec![evidence],
            &["monitor.step.check_power_limit", "monitor.step.other_host"],
            &[],
        ));
    }
    // The hardware cuts the clocks for a reason the driver does not name (and neither heat nor a
    // brake was reported beside it).
    let thermal = reason_share(ThrottleReason::is_thermal);
    if !thermal && !brake && reason_share(|t| t == ThrottleReason::HwSlowdown) {
        out.push(hint(
            HintKind::HwSlowdown,
            gpu,
            false,
            vec![ev(
                "monitor.evidence.hw_slowdown_active",
                &[
                    ("temperature_c", mean(&temps).unwrap_or(0.0)),
                    ("power_w", mean(&draws).unwrap_or(0.0)),
                    ("sm_mhz", mean(&clocks).unwrap_or(0.0)),
                ],
            )],
            &[
                "monitor.step.other_host",
                "monitor.step.ask_provider_hw_slowdown",
            ],
            &[],
        ));
    }

    // "100 % busy" at a fraction of the power limit, with no slowdown to explain the low power.
    if mostly(rows, |r| {
        let limit = r.0.power_limit_w?;
        let slowed = r.0.throttle.as_ref().is_some_and(|t| {
            t.iter()
                .any(|x| x.is_power() || x.is_thermal() || x.is_hardware())
        });
        Some(
            r.0.util_gpu_pct? >= BUSY_UTIL
                && r.0.power_draw_w? < LOW_POWER_SHARE * limit
                && !slowed,
        )
    }) {
        let draws: Vec<f64> = rows.iter().filter_map(|r| r.0.power_draw_w).collect();
        let limit = rows
            .iter()
            .rev()
            .find_map(|r| r.0.power_limit_w)
            .unwrap_or(0.0);
        out.push(hint(
            HintKind::LowIntensity,
            gpu,
            true,
            vec![ev(
                "monitor.evidence.busy_at_low_power",
                &[
                    ("util_pct", util_mean.unwrap_or(0.0)),
                    ("power_w", mean(&draws).unwrap_or(0.0)),
                    ("limit_w", limit),
                ],
            )],
            &["monitor.step.larger_batch", "monitor.step.profile"],
            &[NOTE_UTIL_MEANING],
        ));
    }
    out
}

/// Seconds covered by the window (0 without times).
fn span_s(rows: &[Row<'_>]) -> f64 {
    let ups: Vec<f64> = rows.iter().filter_map(|r| r.1?.uptime_s).collect();
    match (ups.first(), ups.last()) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => 0.0,
    }
}

/// The last `len` samples of a stream, for [`hints`].
#[derive(Debug, Clone)]
pub struct Window {
    len: usize,
    samples: std::collections::VecDeque<Sample>,
}

impl Window {
    pub fn new(len: usize) -> Window {
        Window {
            len: len.max(1),
            samples: Default::default(),
        }
    }

    pub fn push(&mut self, s: Sample) {
        if self.samples.len() == self.len {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    pub fn hints(&self) -> Vec<Hint> {
        let v: Vec<Sample> = self.samples.iter().cloned().collect();
        hints(&v)
    }

    pub fn clear(&mut self) {
        self.samples.clear();
    }
}
