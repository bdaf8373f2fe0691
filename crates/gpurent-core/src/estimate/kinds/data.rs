//! The sourced figures of non-LLM jobs (`data/job-figures.csv`, `data/job-speeds.csv`), parsed once.
//! One row per figure the research snapshot found, with its source, confidence and the fields it
//! could not confirm; rows marked `not_found` say that nothing was found.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::catalog::Confidence;
use crate::infra::error::CoreError;

const FIGURES_CSV: &str = include_str!("../../../data/job-figures.csv");
const SPEEDS_CSV: &str = include_str!("../../../data/job-speeds.csv");

/// The job kinds Pick a card sizes besides LLMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    Image,
    Video,
    /// Image-model LoRA training (SDXL, FLUX).
    Lora,
    /// Speech to text (Whisper, faster-whisper).
    Speech,
    /// 3D reconstruction (Gaussian Splatting, NeRF, photogrammetry).
    #[serde(rename = "3dgs")]
    #[ts(rename = "3dgs")]
    Recon3d,
    /// Rendering (Blender Cycles).
    Render,
    /// Grid simulations (FDTD, lattice-Boltzmann CFD): memory = cells × bytes per cell.
    Simulation,
}

/// What kind of number the source gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// A tool's reading.
    Measured,
    /// The source says "~".
    Approx,
    /// The source says "<".
    UpperBound,
    /// A card class ("≥ 24 GB"): compared with the card's nominal GB.
    Minimum,
    /// Words only, no number.
    Qualitative,
    /// Nothing was found.
    NotFound,
}

/// How the setting gets the model onto the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    Full,
    /// CPU offload or block swapping.
    Offload,
    Quantized,
    QuantizedOffload,
    /// One part of a model's memory (a breakdown row, not a setting).
    Component,
    /// A hardware rule without a memory figure.
    Rule,
}

impl Variant {
    pub fn offloads(self) -> bool {
        matches!(self, Variant::Offload | Variant::QuantizedOffload)
    }

    pub fn quantized(self) -> bool {
        matches!(self, Variant::Quantized | Variant::QuantizedOffload)
    }
}

/// One sourced memory figure or hardware rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Figure {
    pub kind: JobKind,
    pub model: String,
    pub setting: String,
    /// The setting in the source's words (technical; shown as is).
    pub setting_text: String,
    pub variant: Variant,
    pub figure: FigureKind,
    /// Memory in the source's unit (loaded, or the only figure).
    pub mem: Option<f64>,
    /// Peak memory in the source's unit, where it gives one.
    pub peak: Option<f64>,
    /// "GiB", "GB", "MB" as the source prints it.
    pub unit: String,
    /// Simulations: bytes of GPU memory per grid cell.
    pub bytes_per_cell: Option<f64>,
    /// Lowest compute capability the source names ("7.0").
    pub min_cc: Option<String>,
    /// Lowest host driver branch the source names.
    pub min_driver: Option<u32>,
    pub source: String,
    pub confidence: Confidence,
    /// Fields the snapshot could not confirm from a primary source.
    pub unverified: Vec<String>,
    pub notes: String,
}

/// What a speed figure counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum WorkUnit {
    Image,
    Video,
    AudioMinute,
}

/// One sourced speed, for a figure's (kind, model, setting).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SpeedFigure {
    pub kind: JobKind,
    pub model: String,
    pub setting: String,
    /// Wall seconds for `work_units` of `work_unit`.
    pub seconds: Option<f64>,
    pub work_units: Option<f64>,
    pub work_unit: Option<WorkUnit>,
    /// Only a speed relative to another model on the same GPU.
    pub relative_speed: Option<f64>,
    /// The GPU as the source names it.
    pub measured_on: String,
    /// Catalog cards that are that GPU (empty: the catalog has none).
    pub cards: Vec<String>,
    pub source: String,
    pub confidence: Confidence,
    pub unverified: Vec<String>,
    pub notes: String,
}

impl SpeedFigure {
    /// Seconds per one work unit, where the source gives seconds.
    pub fn seconds_per_unit(&self) -> Option<f64> {
        Some(self.seconds? / self.work_units.filter(|u| *u > 0.0)?)
    }
}

/// All figures and speeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct KindCatalog {
    pub figures: Vec<Figure>,
    pub speeds: Vec<SpeedFigure>,
}

#[derive(Debug, Deserialize)]
struct FigureRow {
    kind: JobKind,
    model: String,
    setting: String,
    setting_text: String,
    variant: Variant,
    figure: FigureKind,
    mem: Option<f64>,
    peak: Option<f64>,
    unit: String,
    bytes_per_cell: Option<f64>,
    min_cc: Option<String>,
    min_driver: Option<u32>,
    source: String,
    confidence: Confidence,
    unverified: String,
    notes: String,
}

#[derive(Debug, Deserialize)]
struct SpeedRow {
    kind: JobKind,
    model: String,
    setting: String,
    seconds: Option<f64>,
    work_units: Option<f64>,
    work_unit: Option<WorkUnit>,
    relative_speed: Option<f64>,
    measured_on: String,
    cards: String,
    source: String,
    confidence: Confidence,
    unverified: String,
    notes: String,
}

fn list(v: &str) -> Vec<String> {
    v.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes())
}

/// Bytes per unit the source prints ("GB" and "MB" read as binary: the larger reading).
pub fn unit_bytes(unit: &str) -> Option<f64> {
    match unit {
        "GiB" | "GB" => Some(1024.0 * 1024.0 * 1024.0),
        "MiB" | "MB" => Some(1024.0 * 1024.0),
        _ => None,
    }
}

impl KindCatalog {
    /// The figures compiled into this build (parsed once).
    pub fn bundled() -> Result<&'static KindCatalog, CoreError> {
        static CELL: OnceLock<Result<KindCatalog, String>> = OnceLock::new();
        CELL.get_or_init(|| KindCatalog::parse(FIGURES_CSV, SPEEDS_CSV).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| CoreError::BundledData(e.clone()))
    }

    pub fn parse(figures_csv: &str, speeds_csv: &str) -> Result<KindCatalog, CoreError> {
        let bad = |e: csv::Error| CoreError::BundledData(format!("job figures: {e}"));
        let mut figures = Vec::new();
        for row in reader(figures_csv).deserialize::<FigureRow>() {
            let r = row.map_err(bad)?;
            let numeric = r.mem.is_some() || r.bytes_per_cell.is_some();
            let wants_number = !matches!(r.figure, FigureKind::Qualitative | FigureKind::NotFound);
            if numeric != wants_number || (r.mem.is_some() && unit_bytes(&r.unit).is_none()) {
                return Err(CoreError::BundledData(format!(
                    "job-figures.csv {}/{}: figure {:?} with mem {:?} {:?}, bytes/cell {:?}",
                    r.model, r.setting, r.figure, r.mem, r.unit, r.bytes_per_cell
                )));
            }
            figures.push(Figure {
                kind: r.kind,
                model: r.model,
                setting: r.setting,
                setting_text: r.setting_text,
                variant: r.variant,
                figure: r.figure,
                mem: r.mem,
                peak: r.peak,
                unit: r.unit,
                bytes_per_cell: r.bytes_per_cell,
                min_cc: r.min_cc.filter(|s| !s.is_empty()),
                min_driver: r.min_driver,
                source: r.source,
                confidence: r.confidence,
                unverified: list(&r.unverified),
                notes: r.notes,
            });
        }
        let mut speeds = Vec::new();
        for row in reader(speeds_csv).deserialize::<SpeedRow>() {
            let r = row.map_err(bad)?;
            if !figures
                .iter()
                .any(|f| f.kind == r.kind && f.model == r.model && f.setting == r.setting)
            {
                return Err(CoreError::BundledData(format!(
                    "job-speeds.csv {}/{}: no such figure",
                    r.model, r.setting
                )));
            }
            speeds.push(SpeedFigure {
                kind: r.kind,
                model: r.model,
                setting: r.setting,
                seconds: r.seconds,
                work_units: r.work_units,
                work_unit: r.work_unit,
                relative_speed: r.relative_speed,
                measured_on: r.measured_on,
                cards: list(&r.cards),
                source: r.source,
                confidence: r.confidence,
                unverified: list(&r.unverified),
                notes: r.notes,
            });
        }
        Ok(KindCatalog { figures, speeds })
    }

    /// The rows of one model of one kind (settings and components).
    pub fn model_rows(&self, kind: JobKind, model: &str) -> impl Iterator<Item = &Figure> {
        let model = model.to_string();
        self.figures
            .iter()
            .filter(move |f| f.kind == kind && f.model == model)
    }
}
