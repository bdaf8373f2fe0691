//! The one set of `nvidia-smi` fields gpurent reads, and the one parser for them.
//!
//! - Columns are found by header name, never by position: the query runs with
//!   `--format=csv,nounits` and keeps the header, or the caller passes the header it asked for
//!   ([`Header::explicit`]). Units in header cells (`memory.used [MiB]`) are ignored, and so are
//!   the names some drivers print instead of the query name (`clocks.current.sm` for `clocks.sm`,
//!   `used_gpu_memory` for `used_memory`).
//! - A driver that lacks a field refuses the whole query (`Field "x" is not a valid field to
//!   query.`, exit 2). [`GpuQuery::adapt`] turns that refusal into the next query to try: the
//!   clock event reasons under their pre-R535 name `clocks_throttle_reasons.*`, or the same query
//!   without the field. A value the driver cannot read (`[N/A]`, `[Not Supported]`) and a column
//!   that is not there are `None`, never an error.
//! - In loop mode (`-lms N`) nvidia-smi prints one row per GPU per sample, the header once;
//!   [`GpuStream`] groups the rows back into samples.
//!
//! `utilization.gpu` is "the percentage of time over the past sample period during which one or
//! more kernels was executing on the GPU" (nvidia-smi's documentation): a busy counter, not a
//! measure of how much of the chip the kernels use.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Why the GPU's clocks are held below their maximum (nvidia-smi's `clocks_event_reasons.*`,
/// named `clocks_throttle_reasons.*` before driver R535).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleReason {
    /// Nothing is running, clocks are low on purpose.
    GpuIdle,
    /// Clocks held by the application clocks setting.
    ApplicationsClocksSetting,
    /// The software power cap (the card is at its power limit).
    SwPowerCap,
    /// Hardware slowdown: the clocks cut by half or more for temperature, an external power brake
    /// or a power draw too high for the supply (nvidia-smi does not say which).
    HwSlowdown,
    /// Hardware slowdown because the card is too hot.
    HwThermalSlowdown,
    /// Hardware slowdown asserted by an external power brake.
    HwPowerBrakeSlowdown,
    /// Software thermal slowdown (the driver keeps the card below its maximum temperature).
    SwThermalSlowdown,
    /// Clocks lowered to match other GPUs in a sync boost group.
    SyncBoost,
}

impl ThrottleReason {
    pub const ALL: [ThrottleReason; 8] = [
        ThrottleReason::GpuIdle,
        ThrottleReason::ApplicationsClocksSetting,
        ThrottleReason::SwPowerCap,
        ThrottleReason::HwSlowdown,
        ThrottleReason::HwThermalSlowdown,
        ThrottleReason::HwPowerBrakeSlowdown,
        ThrottleReason::SwThermalSlowdown,
        ThrottleReason::SyncBoost,
    ];

    /// The field name after `clocks_event_reasons.` / `clocks_throttle_reasons.`.
    pub fn suffix(self) -> &'static str {
        match self {
            ThrottleReason::GpuIdle => "gpu_idle",
            ThrottleReason::ApplicationsClocksSetting => "applications_clocks_setting",
            ThrottleReason::SwPowerCap => "sw_power_cap",
            ThrottleReason::HwSlowdown => "hw_slowdown",
            ThrottleReason::HwThermalSlowdown => "hw_thermal_slowdown",
            ThrottleReason::HwPowerBrakeSlowdown => "hw_power_brake_slowdown",
            ThrottleReason::SwThermalSlowdown => "sw_thermal_slowdown",
            ThrottleReason::SyncBoost => "sync_boost",
        }
    }

    fn from_suffix(s: &str) -> Option<ThrottleReason> {
        ThrottleReason::ALL.into_iter().find(|r| r.suffix() == s)
    }

    /// Power or temperature is slowing the card down (the host's doing, not the job's).
    pub fn is_power(self) -> bool {
        matches!(
            self,
            ThrottleReason::SwPowerCap | ThrottleReason::HwPowerBrakeSlowdown
        )
    }

    /// Temperature is slowing the card down.
    pub fn is_thermal(self) -> bool {
        matches!(
            self,
            ThrottleReason::HwThermalSlowdown | ThrottleReason::SwThermalSlowdown
        )
    }

    /// The hardware slows the card down: heat, a power brake or the power supply; the driver's
    /// `hw_slowdown` alone does not say which (a hardware slowdown, not "too hot").
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            ThrottleReason::HwSlowdown
                | ThrottleReason::HwThermalSlowdown
                | ThrottleReason::HwPowerBrakeSlowdown
        )
    }
}

/// Which name the driver knows the clock event reasons by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ReasonNames {
    /// `clocks_event_reasons.*` (driver R535 and later).
    Event,
    /// `clocks_throttle_reasons.*` (older drivers).
    Throttle,
}

impl ReasonNames {
    pub fn prefix(self) -> &'static str {
        match self {
            ReasonNames::Event => "clocks_event_reasons.",
            ReasonNames::Throttle => "clocks_throttle_reasons.",
        }
    }
}

/// The `--query-gpu` fields besides the clock event reasons, in the order they are asked for.
pub const GPU_FIELDS: &[&str] = &[
    "index",
    "uuid",
    "name",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "power.default_limit",
    "clocks.sm",
    "clocks.max.sm",
    "pcie.link.gen.current",
    "pcie.link.width.current",
];

/// The `--query-compute-apps` fields.
pub const APP_FIELDS: &[&str] = &["gpu_uuid", "pid", "used_memory"];

/// The `--query-gpu` list to ask for: the fields of [`GPU_FIELDS`] and the reasons under the
/// name the driver knows, less any field the driver refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuQuery {
    pub reasons: ReasonNames,
    /// Fields the driver refused (full names), left out of the query.
    pub dropped: Vec<String>,
    /// The reason (suffix) whose refusal made this query try the old names.
    trying_old_names_for: Option<String>,
    /// The reason names are decided.
    settled: bool,
}

impl Default for GpuQuery {
    fn default() -> Self {
        GpuQuery::new()
    }
}

impl GpuQuery {
    /// Every field, reasons under their current name.
    pub fn new() -> GpuQuery {
        GpuQuery {
            reasons: ReasonNames::Event,
            dropped: Vec::new(),
            trying_old_names_for: None,
            settled: false,
        }
    }

    /// The fields asked for, in order.
    pub fn fields(&self) -> Vec<String> {
        GPU_FIELDS
            .iter()
            .map(|f| f.to_string())
            .chain(
                ThrottleReason::ALL
                    .iter()
                    .map(|r| format!("{}{}", self.reasons.prefix(), r.suffix())),
            )
            .filter(|f| !self.dropped.contains(f))
            .collect()
    }

    /// The value of `--query-gpu=`.
    pub fn arg(&self) -> String {
        self.fields().join(",")
    }

    /// The command line: one shot, or a sample every `loop_ms` milliseconds until killed.
    pub fn command(&self, loop_ms: Option<u64>) -> String {
        let mut c = format!("nvidia-smi --query-gpu={} --format=csv,nounits", self.arg());
        if let Some(ms) = loop_ms {
            c.push_str(&format!(" -lms {ms}"));
        }
        c
    }

    /// The query to try after the driver refused this one with `output`; `None` when the output
    /// is not a field refusal, or when the refused field is not one this query asked for.
    ///
    /// A refused `clocks_event_reasons.X` first tries the old names; if the driver refuses
    /// `clocks_throttle_reasons.X` as well, it knows neither name for X only: back to the current
    /// names, without X.
    pub fn adapt(&self, output: &str) -> Option<GpuQuery> {
        let field = rejected_field(output)?;
        if !self.fields().contains(&field) {
            return None;
        }
        let (ev, th) = (ReasonNames::Event.prefix(), ReasonNames::Throttle.prefix());
        let mut next = self.clone();
        match (&self.trying_old_names_for, self.reasons) {
            (None, ReasonNames::Event) if field.starts_with(ev) && !self.settled => {
                next.reasons = ReasonNames::Throttle;
                next.dropped = self.dropped.iter().map(|d| d.replace(ev, th)).collect();
                next.trying_old_names_for = Some(field.replacen(ev, "", 1));
            }
            (Some(suffix), ReasonNames::Throttle) if field == format!("{th}{suffix}") => {
                next.reasons = ReasonNames::Event;
                next.dropped = self.dropped.iter().map(|d| d.replace(th, ev)).collect();
                next.dropped.push(format!("{ev}{suffix}"));
                next.trying_old_names_for = None;
                next.settled = true;
            }
            _ => {
                next.dropped.push(field);
                if next.reasons == ReasonNames::Throttle {
                    // Another field refused: the old names were accepted for the first one.
                    next.trying_old_names_for = None;
                    next.settled = true;
                }
            }
        }
        Some(next)
    }
}

/// The `--query-compute-apps` command line.
pub fn apps_command() -> String {
    format!(
        "nvidia-smi --query-compute-apps={} --format=csv,nounits",
        APP_FIELDS.join(",")
    )
}

/// The field nvidia-smi refused: `Field "x" is not a valid field to query.`
pub fn rejected_field(output: &str) -> Option<String> {
    output.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("Field \"")?;
        let (name, tail) = rest.split_once('"')?;
        tail.contains("not a valid field").then(|| name.to_string())
    })
}

/// One GPU in one sample. `None`: the driver did not report it (`[N/A]`, `[Not Supported]`, a
/// field it lacks).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct GpuRow {
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    /// Percent of the sample period during which a kernel was running (not how much of the chip
    /// it used).
    pub util_gpu_pct: Option<f64>,
    /// Percent of the sample period during which device memory was read or written.
    pub util_memory_pct: Option<f64>,
    pub memory_used_mib: Option<f64>,
    pub memory_total_mib: Option<f64>,
    pub temperature_c: Option<f64>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    /// The card's default power limit: a `power_limit_w` below it was lowered by the host.
    pub power_default_limit_w: Option<f64>,
    pub clock_sm_mhz: Option<f64>,
    /// The highest SM clock the card runs at.
    pub clock_max_sm_mhz: Option<f64>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    /// The active clock event reasons; `None` when the driver reported none of them.
    pub throttle: Option<Vec<ThrottleReason>>,
}

impl GpuRow {
    /// VRAM in use as a fraction of the total.
    pub fn memory_fraction(&self) -> Option<f64> {
        match (self.memory_used_mib, self.memory_total_mib) {
            (Some(u), Some(t)) if t > 0.0 => Some(u / t),
            _ => None,
        }
    }
}

/// One process using a GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct ComputeApp {
    pub gpu_uuid: Option<String>,
    pub pid: Option<u32>,
    pub used_memory_mib: Option<f64>,
    /// The process's command line (from the host's `/proc/PID/cmdline`; `None` when the host
    /// could not read it, e.g. a PID from outside a container).
    #[serde(default)]
    pub command: Option<String>,
    /// The process's own CPU use since the previous reading, percent of one core (100 = one core
    /// busy all the time; more for several threads).
    #[serde(default)]
    pub cpu_pct: Option<f64>,
}

/// What a command line says a GPU process is waiting for, when it is a server that sits idle by
/// design between requests: a served model (Ollama, vLLM, TGI, llama.cpp's server) or a notebook
/// kernel (Jupyter). An idle GPU under such a process is not a stalled job.
pub fn serves_requests(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    let exe = first.rsplit('/').next().unwrap_or(first);
    let exe_server = matches!(
        exe,
        "ollama"
            | "ollama_llama_server"
            | "llama-server"
            | "text-generation-launcher"
            | "text-generation-server"
            | "jupyter"
            | "jupyter-lab"
            | "jupyter-notebook"
    );
    exe_server
        || command.split_whitespace().any(|w| {
            let w = w.rsplit('/').next().unwrap_or(w);
            matches!(
                w,
                "ipykernel_launcher"
                    | "ipykernel"
                    | "ipykernel_launcher.py"
                    | "vllm.entrypoints.openai.api_server"
            ) || (w == "vllm" && command.contains(" serve"))
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Index,
    Uuid,
    Name,
    UtilGpu,
    UtilMem,
    MemUsed,
    MemTotal,
    Temp,
    PowerDraw,
    PowerLimit,
    PowerDefault,
    ClockSm,
    ClockMax,
    PcieGen,
    PcieWidth,
    Reason(ThrottleReason),
    Pid,
    /// A field this parser does not read (kept so the other columns keep their place).
    Other,
}

/// A header cell's field name without its unit: `memory.used [MiB]` -> `memory.used`.
fn bare(cell: &str) -> &str {
    let c = cell.trim();
    match c.find(" [") {
        Some(i) if c.ends_with(']') => &c[..i],
        _ => c,
    }
}

fn col_of(name: &str) -> Col {
    let n = bare(name);
    for names in [ReasonNames::Event, ReasonNames::Throttle] {
        if let Some(s) = n.strip_prefix(names.prefix()) {
            return ThrottleReason::from_suffix(s).map_or(Col::Other, Col::Reason);
        }
    }
    match n {
        "index" => Col::Index,
        "uuid" | "gpu_uuid" => Col::Uuid,
        "name" | "gpu_name" => Col::Name,
        "utilization.gpu" => Col::UtilGpu,
        "utilization.memory" => Col::UtilMem,
        "memory.used" | "used_memory" | "used_gpu_memory" => Col::MemUsed,
        "memory.total" => Col::MemTotal,
        "temperature.gpu" => Col::Temp,
        "power.draw" | "power.draw.instant" => Col::PowerDraw,
        "power.limit" => Col::PowerLimit,
        "power.default_limit" => Col::PowerDefault,
        "clocks.max.sm" | "clocks.max.sm_clock" => Col::ClockMax,
        "clocks.sm" | "clocks.current.sm" => Col::ClockSm,
        "pcie.link.gen.current" | "pcie.link.gen.gpucurrent" => Col::PcieGen,
        "pcie.link.width.current" => Col::PcieWidth,
        "pid" => Col::Pid,
        _ => Col::Other,
    }
}

/// Looks like a field name (`memory.used [MiB]`), which no value does: values are numbers,
/// names with capitals, `GPU-…` UUIDs, `Active`, `[N/A]`.
fn is_field_name(cell: &str) -> bool {
    let n = bare(cell);
    let mut chars = n.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_')
}

/// The columns of a CSV answer, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    cols: Vec<Col>,
}

impl Header {
    /// A header line nvidia-smi printed; `None` when `line` is not one.
    pub fn parse(line: &str) -> Option<Header> {
        let cells = split(line);
        if cells.is_empty() || !cells.iter().all(|c| is_field_name(c)) {
            return None;
        }
        let cols: Vec<Col> = cells.iter().map(|c| col_of(c)).collect();
        cols.iter()
            .any(|c| *c != Col::Other)
            .then_some(Header { cols })
    }

    /// The header of a `noheader` answer: the fields that were asked for, in order.
    pub fn explicit<S: AsRef<str>>(fields: &[S]) -> Header {
        Header {
            cols: fields.iter().map(|f| col_of(f.as_ref())).collect(),
        }
    }

    /// A data row for these columns: not empty, and not a one-cell message such as "No running
    /// processes found" when more than one column was asked for.
    fn is_row(&self, line: &str) -> bool {
        !line.trim().is_empty() && (self.cols.len() == 1 || line.contains(','))
    }

    fn gpu_row(&self, line: &str) -> GpuRow {
        let mut row = GpuRow::default();
        let mut reasons: Option<Vec<ThrottleReason>> = None;
        for (col, cell) in self.cols.iter().zip(split(line)) {
            let Some(v) = value(cell) else { continue };
            match col {
                Col::Index => row.index = v.parse().ok(),
                Col::Uuid => row.uuid = Some(v.to_string()),
                Col::Name => row.name = Some(v.to_string()),
                Col::UtilGpu => row.util_gpu_pct = number(v),
                Col::UtilMem => row.util_memory_pct = number(v),
                Col::MemUsed => row.memory_used_mib = number(v),
                Col::MemTotal => row.memory_total_mib = number(v),
                Col::Temp => row.temperature_c = number(v),
                Col::PowerDraw => row.power_draw_w = number(v),
                Col::PowerLimit => row.power_limit_w = number(v),
                Col::PowerDefault => row.power_default_limit_w = number(v),
                Col::ClockMax => row.clock_max_sm_mhz = number(v),
                Col::ClockSm => row.clock_sm_mhz = number(v),
                Col::PcieGen => row.pcie_gen = number(v).map(|n| n as u32),
                Col::PcieWidth => row.pcie_width = number(v).map(|n| n as u32),
                Col::Reason(r) => {
                    let active = match v {
                        "Active" => true,
                        "Not Active" => false,
                        _ => continue,
                    };
                    let list = reasons.get_or_insert_with(Vec::new);
                    if active {
                        list.push(*r);
                    }
                }
                Col::Pid | Col::Other => {}
            }
        }
        row.throttle = reasons;
        row
    }

    fn app_row(&self, line: &str) -> ComputeApp {
        let mut app = ComputeApp::default();
        for (col, cell) in self.cols.iter().zip(split(line)) {
            let Some(v) = value(cell) else { continue };
            match col {
                Col::Uuid => app.gpu_uuid = Some(v.to_string()),
                Col::Pid => app.pid = v.parse().ok(),
                Col::MemUsed => app.used_memory_mib = number(v),
                _ => {}
            }
        }
        app
    }
}

fn split(line: &str) -> Vec<&str> {
    let l = line.trim();
    if l.is_empty() {
        return Vec::new();
    }
    l.split(',').map(str::trim).collect()
}

/// A cell's value; `None` for what the driver could not read.
fn value(cell: &str) -> Option<&str> {
    let v = cell.trim();
    let unknown =
        v.is_empty() || v.eq_ignore_ascii_case("n/a") || (v.starts_with('[') && v.ends_with(']'));
    (!unknown).then_some(v)
}

/// The number in a cell, with or without a unit after it (`61.23` or `61.23 W`).
fn number(v: &str) -> Option<f64> {
    v.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
}

/// One answer to `--query-gpu` (its header line first, or `header` for a `noheader` answer).
/// Lines that are neither header nor row (a warning) are skipped.
pub fn parse_gpus(text: &str, header: Option<&Header>) -> Vec<GpuRow> {
    let mut h = header.cloned();
    let mut rows = Vec::new();
    for line in text.lines() {
        if let Some(new) = Header::parse(line) {
            h = Some(new);
        } else if let Some(h) = &h {
            if h.is_row(line) {
                rows.push(h.gpu_row(line));
            }
        }
    }
    rows
}

/// One answer to `--query-compute-apps` (header first, or `header`). No processes: no rows.
pub fn parse_apps(text: &str, header: Option<&Header>) -> Vec<ComputeApp> {
    let mut h = header.cloned();
    let mut apps = Vec::new();
    for line in text.lines() {
        if let Some(new) = Header::parse(line) {
            h = Some(new);
        } else if let Some(h) = &h {
            if h.is_row(line) {
                let a = h.app_row(line);
                if a.pid.is_some() {
                    apps.push(a);
                }
            }
        }
    }
    apps
}

/// Rows of `nvidia-smi --query-gpu=… -lms N` grouped back into samples: a sample ends when a
/// GPU seen in it comes again, or (once the number of GPUs is known) when every GPU has a row.
#[derive(Debug, Clone, Default)]
pub struct GpuStream {
    header: Option<Header>,
    pending: Vec<GpuRow>,
    gpus: Option<usize>,
}

impl GpuStream {
    /// A stream whose answer has a header line.
    pub fn new() -> GpuStream {
        GpuStream::default()
    }

    /// A `noheader` stream of the fields that were asked for.
    pub fn with_header(h: Header) -> GpuStream {
        GpuStream {
            header: Some(h),
            ..GpuStream::default()
        }
    }

    /// Feed one line; returns a finished sample (one row per GPU) when this line completes one.
    pub fn push_line(&mut self, line: &str) -> Option<Vec<GpuRow>> {
        if let Some(h) = Header::parse(line) {
            self.header = Some(h);
            if !self.pending.is_empty() {
                self.gpus = Some(self.pending.len());
            }
            return self.take();
        }
        let h = self.header.as_ref()?;
        if !h.is_row(line) {
            return None;
        }
        let row = h.gpu_row(line);
        let key = |r: &GpuRow| (r.index, r.uuid.clone());
        let mut done = None;
        if (row.index.is_some() || row.uuid.is_some())
            && self.pending.iter().any(|p| key(p) == key(&row))
        {
            self.gpus = Some(self.pending.len());
            done = self.take();
        }
        self.pending.push(row);
        if done.is_none() && self.gpus == Some(self.pending.len()) {
            done = self.take();
        }
        done
    }

    /// The rows of an unfinished sample (e.g. when the stream ended).
    pub fn take(&mut self) -> Option<Vec<GpuRow>> {
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }

    /// Forget the GPU count and partial rows (after a reconnect); the header is kept.
    pub fn reset(&mut self) {
        self.pending.clear();
        self.gpus = None;
    }
}

#[cfg(test)]
#[path = "telemetry_tests.rs"]
mod tests;
