//! The plain-language explanation of a non-LLM job, as structured items: a stable `key` plus the
//! numbers the UI needs to write the sentence in zh-CN or English.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{
    Basis, CellsFormula, Figure, FigureKind, KindFit, KindTime, KindVerdict, Need, WorkUnit,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "key", rename_all = "snake_case")]
pub enum KindExplanation {
    /// What the source says the setting needs (always first when there is a figure).
    MemoryFigure {
        value: f64,
        basis: Basis,
        figure: FigureKind,
        loaded_gib: Option<f64>,
        peak_gib: Option<f64>,
    },
    /// Simulations: cells × bytes per cell.
    CellsFormula {
        cells: f64,
        bytes_per_cell: f64,
        gib: f64,
    },
    /// The source gives only words (`qualitative`) or nothing was found: no verdict on memory.
    NoMemoryFigure { not_found: bool },
    /// The smallest card that runs the chosen setting.
    SmallestFit { card_id: String, vram_gb: f64 },
    /// No catalog card holds the chosen setting or any offload/quantized one.
    NoCardFits,
    /// On cards of this size only another setting fits (offload or quantized).
    UseOtherSetting {
        vram_gb: f64,
        verdict: KindVerdict,
        setting: String,
    },
    /// CPU offload or block swapping keeps the weights but runs slower.
    OffloadIsSlower,
    /// A time from a speed measured on one GPU only (not scaled to other cards).
    TimeMeasuredOnlyOn {
        measured_on: String,
        total_s: f64,
        units: f64,
        work_unit: WorkUnit,
    },
    /// Only a speed relative to another model on the same GPU.
    RelativeSpeedOnly {
        measured_on: String,
        relative_speed: f64,
    },
    /// No source gives a speed for this setting: no time, no cost.
    NoSpeedFigure,
    /// Cards below the source's lowest compute capability.
    NeedsComputeCapability {
        min_cc: String,
        card_ids: Vec<String>,
    },
    /// The host's NVIDIA driver must be at least this branch.
    NeedsHostDriver { min_driver: u32 },
}

pub fn explain(
    f: &Figure,
    need: Option<&Need>,
    fits: &[KindFit],
    times: &[KindTime],
    formula: Option<&CellsFormula>,
) -> Vec<KindExplanation> {
    use KindExplanation as E;
    let mut out = Vec::new();
    match need {
        Some(n) => out.push(E::MemoryFigure {
            value: n.value,
            basis: n.basis,
            figure: n.figure,
            loaded_gib: n.loaded_gib,
            peak_gib: n.peak_gib,
        }),
        None if f.bytes_per_cell.is_none() => out.push(E::NoMemoryFigure {
            not_found: f.figure == FigureKind::NotFound,
        }),
        None => {}
    }
    if let Some(c) = formula {
        out.push(E::CellsFormula {
            cells: c.cells,
            bytes_per_cell: c.bytes_per_cell,
            gib: c.gib,
        });
    }
    if let Some(min_cc) = &f.min_cc {
        out.push(E::NeedsComputeCapability {
            min_cc: min_cc.clone(),
            card_ids: fits
                .iter()
                .filter(|x| x.verdict == KindVerdict::NeedsNewerGpu)
                .map(|x| x.card_id.clone())
                .collect(),
        });
    }
    if let Some(d) = f.min_driver {
        out.push(E::NeedsHostDriver { min_driver: d });
    }
    if need.is_some() {
        match fits.iter().find(|x| x.verdict == KindVerdict::Fits) {
            Some(best) => out.push(E::SmallestFit {
                card_id: best.card_id.clone(),
                vram_gb: best.vram_gb,
            }),
            None if !fits.iter().any(|x| x.verdict < KindVerdict::NoFigure) => {
                out.push(E::NoCardFits)
            }
            None => {}
        }
        let mut sizes: Vec<f64> = Vec::new();
        for x in fits.iter().filter(|x| {
            matches!(
                x.verdict,
                KindVerdict::FitsWithOffload | KindVerdict::FitsQuantized
            )
        }) {
            if !sizes.contains(&x.vram_gb) {
                sizes.push(x.vram_gb);
                out.push(E::UseOtherSetting {
                    vram_gb: x.vram_gb,
                    verdict: x.verdict,
                    setting: x.setting.clone(),
                });
            }
        }
    }
    if f.variant.offloads()
        || fits
            .iter()
            .any(|x| x.verdict == KindVerdict::FitsWithOffload)
    {
        out.push(E::OffloadIsSlower);
    }
    let mut timed = false;
    for t in times {
        if let (Some(total_s), Some(work_unit)) = (t.total_s, t.work_unit) {
            timed = true;
            out.push(E::TimeMeasuredOnlyOn {
                measured_on: t.measured_on.clone(),
                total_s,
                units: t.units,
                work_unit,
            });
        } else if let Some(r) = t.relative_speed {
            timed = true;
            out.push(E::RelativeSpeedOnly {
                measured_on: t.measured_on.clone(),
                relative_speed: r,
            });
        }
    }
    if !timed {
        out.push(E::NoSpeedFigure);
    }
    out
}
