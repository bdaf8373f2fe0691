//! Jobs beyond LLMs (image and video generation, image LoRA training, speech to text, 3D
//! reconstruction, rendering, grid simulations), sized from sourced figures only: memory from the
//! figure of the chosen setting (or cells × bytes per cell), a verdict for every catalog card
//! (fits / fits with offload / fits quantized / no), time only on the GPU a source measured (no
//! scaling to other cards: no source here supports one), cost for offers on those cards, and the
//! explanation as structured items. A missing figure is reported as missing, never guessed.
//! Data: `data/job-figures.csv`, `data/job-speeds.csv`. Docs: docs/estimator.md (Jobs beyond LLMs).

pub mod data;
pub mod explain;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use data::{Figure, FigureKind, JobKind, KindCatalog, SpeedFigure, Variant, WorkUnit};
pub use explain::KindExplanation;

use super::cost::{job_cost, CostSettings, JobCost, Offer};
use super::memory::{gddr_ecc, usable_gib};
use super::model::GIB;
use crate::catalog::{parse_cc, Card, Catalog};
use crate::infra::error::CoreError;

/// A non-LLM job to size. `{kind, model}` is enough; the first setting of the model is the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct KindJob {
    pub kind: JobKind,
    /// Model or workload id (`job-figures.csv` column `model`).
    pub model: String,
    /// Setting id; None = the model's first setting.
    pub setting: Option<String>,
    /// Images or videos to make (time and cost).
    pub count: u32,
    /// Hours of audio to transcribe (speech).
    pub audio_hours: f64,
    /// Grid cells (simulation; required there).
    pub cells: Option<f64>,
    /// The user's hourly prices (cost where a time is known).
    pub offers: Vec<Offer>,
}

impl Default for KindJob {
    fn default() -> Self {
        KindJob {
            kind: JobKind::Image,
            model: "flux1-dev".into(),
            setting: None,
            count: 1,
            audio_hours: 1.0,
            cells: None,
            offers: Vec::new(),
        }
    }
}

/// One card's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KindVerdict {
    /// The chosen setting fits.
    Fits,
    /// Only a setting that offloads to the CPU (or swaps blocks) fits: slower.
    FitsWithOffload,
    /// Only a quantized setting fits (with or without offload).
    FitsQuantized,
    /// The source gives no memory figure: the app cannot say.
    NoFigure,
    /// The card's compute capability is below the source's minimum.
    NeedsNewerGpu,
    DoesNotFit,
}

/// How a memory need is compared with a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Against what CUDA shows of the card (less the ECC reserve on GDDR cards with ECC).
    UsableGib,
    /// A source's card class ("≥ 24 GB") against the card's nominal GB.
    NominalGb,
}

/// The memory a setting needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Need {
    /// GiB for `usable_gib`, GB for `nominal_gb`.
    pub value: f64,
    pub basis: Basis,
    pub figure: FigureKind,
    /// Loaded and peak GiB where the source gives both (the need is the peak).
    pub loaded_gib: Option<f64>,
    pub peak_gib: Option<f64>,
}

/// One part of the memory, from the source's breakdown (decimal GB as the source prints them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Component {
    pub id: String,
    pub text: String,
    pub gb: f64,
}

/// Simulations: the honest formula.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct CellsFormula {
    pub cells: f64,
    pub bytes_per_cell: f64,
    pub gib: f64,
}

/// A time from a measured speed, on the GPU it was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct KindTime {
    pub measured_on: String,
    /// Catalog cards that are that GPU.
    pub cards: Vec<String>,
    pub seconds_per_unit: Option<f64>,
    pub work_unit: Option<WorkUnit>,
    /// Units of the job (images, videos, audio minutes).
    pub units: f64,
    pub total_s: Option<f64>,
    pub relative_speed: Option<f64>,
    pub source: String,
    /// Which GPU variant it was is not confirmed (the source says "H100" or "A100").
    pub card_unverified: bool,
}

/// One catalog card for the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct KindFit {
    pub card_id: String,
    pub card_name: String,
    pub vram_gb: f64,
    pub usable_gib: f64,
    pub ecc_reserve: bool,
    pub compute_capability: String,
    pub verdict: KindVerdict,
    /// The setting the verdict is for (the chosen one, or the offload/quantized one that fits).
    pub setting: String,
    pub need: Option<Need>,
    /// Left over on the card (GiB, or GB for card-class minimums).
    pub headroom: Option<f64>,
    /// Seconds for the whole job where a source measured this very GPU.
    pub time_s: Option<f64>,
    pub time_card_unverified: bool,
}

/// One offer, priced for the job where its card has a measured time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct KindOffer {
    pub offer_index: usize,
    pub card_id: String,
    pub verdict: KindVerdict,
    pub price_per_hour: f64,
    pub currency: String,
    pub cost: Option<JobCost>,
}

/// The whole answer for a non-LLM job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct KindEstimate {
    pub kind: JobKind,
    pub model: String,
    /// The chosen setting's row (source, confidence, unverified fields, notes).
    pub figure: Figure,
    pub need: Option<Need>,
    pub components: Vec<Component>,
    pub formula: Option<CellsFormula>,
    /// Every catalog card, best first.
    pub fits: Vec<KindFit>,
    pub times: Vec<KindTime>,
    /// Offers for fitting cards, cheapest known cost first.
    pub ranking: Vec<KindOffer>,
    pub explanation: Vec<KindExplanation>,
    /// "model/setting: field" for every unverified value this answer uses.
    pub unverified: Vec<String>,
    /// Figures of this kind the research looked for and did not find ("model/setting").
    pub not_found: Vec<String>,
}

/// The memory a row needs, or None when the source gives no number.
pub fn need_of(f: &Figure, cells: Option<f64>) -> Option<Need> {
    if let Some(bpc) = f.bytes_per_cell {
        return Some(Need {
            value: cells? * bpc / GIB,
            basis: Basis::UsableGib,
            figure: f.figure,
            loaded_gib: None,
            peak_gib: None,
        });
    }
    let unit = data::unit_bytes(&f.unit)?;
    let to_gib = |v: f64| v * unit / GIB;
    let mem = f.mem?;
    if f.figure == FigureKind::Minimum {
        return Some(Need {
            value: mem,
            basis: Basis::NominalGb,
            figure: f.figure,
            loaded_gib: None,
            peak_gib: None,
        });
    }
    Some(Need {
        value: to_gib(f.peak.unwrap_or(mem)),
        basis: Basis::UsableGib,
        figure: f.figure,
        loaded_gib: f.peak.map(|_| to_gib(mem)),
        peak_gib: f.peak.map(to_gib),
    })
}

fn headroom(n: &Need, card: &Card) -> f64 {
    match n.basis {
        Basis::UsableGib => usable_gib(card) - n.value,
        Basis::NominalGb => card.vram_gb - n.value,
    }
}

fn cc_ok(f: &Figure, card: &Card) -> bool {
    match (
        f.min_cc.as_deref().and_then(parse_cc),
        parse_cc(&card.compute_capability),
    ) {
        (Some(min), Some(have)) => have >= min,
        _ => true,
    }
}

fn check(job: &KindJob) -> Result<(), CoreError> {
    if job.count == 0 {
        return Err(CoreError::invalid(
            "count",
            "make at least 1 image or video",
        ));
    }
    if !(job.audio_hours.is_finite() && job.audio_hours > 0.0) {
        return Err(CoreError::invalid(
            "audio_hours",
            "hours of audio must be a number above 0",
        ));
    }
    if job.kind == JobKind::Simulation && !job.cells.is_some_and(|c| c.is_finite() && c >= 1.0) {
        return Err(CoreError::invalid(
            "cells",
            "a simulation needs its grid size in cells (at least 1)",
        ));
    }
    Ok(())
}

/// The chosen row of the job (the model's first setting when none is given).
pub fn chosen<'a>(job: &KindJob, cat: &'a KindCatalog) -> Result<&'a Figure, CoreError> {
    let mut rows = cat
        .model_rows(job.kind, &job.model)
        .filter(|f| f.variant != Variant::Component)
        .peekable();
    if rows.peek().is_none() {
        return Err(CoreError::invalid(
            "model",
            format!("no figures for '{}' among {:?} jobs", job.model, job.kind),
        ));
    }
    match job.setting.as_deref() {
        None => rows
            .next()
            .ok_or_else(|| CoreError::invalid("model", "no settings")),
        Some(s) => rows.find(|f| f.setting == s).ok_or_else(|| {
            CoreError::invalid(
                "setting",
                format!("'{s}' is not a setting of '{}'", job.model),
            )
        }),
    }
}

/// The verdict for one card, and the row it is for.
fn fit_card<'a>(
    f: &'a Figure,
    alternatives: &[&'a Figure],
    card: &Card,
    cells: Option<f64>,
) -> (KindVerdict, &'a Figure, Option<Need>) {
    if !cc_ok(f, card) {
        return (KindVerdict::NeedsNewerGpu, f, need_of(f, cells));
    }
    let Some(need) = need_of(f, cells) else {
        return (KindVerdict::NoFigure, f, None);
    };
    if headroom(&need, card) >= 0.0 {
        return (KindVerdict::Fits, f, Some(need));
    }
    // The closest-to-full alternative that fits: offload first (same weights), then quantized.
    let best = |pick: fn(Variant) -> bool| {
        alternatives
            .iter()
            .filter(|a| pick(a.variant) && cc_ok(a, card))
            .filter_map(|a| need_of(a, cells).map(|n| (*a, n)))
            .filter(|(_, n)| headroom(n, card) >= 0.0)
            .max_by(|x, y| x.1.value.total_cmp(&y.1.value))
    };
    if let Some((a, n)) = best(|v| v == Variant::Offload) {
        return (KindVerdict::FitsWithOffload, a, Some(n));
    }
    if let Some((a, n)) = best(Variant::quantized) {
        return (KindVerdict::FitsQuantized, a, Some(n));
    }
    (KindVerdict::DoesNotFit, f, Some(need))
}

fn units(job: &KindJob, unit: Option<WorkUnit>) -> f64 {
    match unit {
        Some(WorkUnit::AudioMinute) => job.audio_hours * 60.0,
        _ => f64::from(job.count),
    }
}

fn time_of(s: &SpeedFigure, job: &KindJob) -> KindTime {
    let u = units(job, s.work_unit);
    let spu = s.seconds_per_unit();
    KindTime {
        measured_on: s.measured_on.clone(),
        cards: s.cards.clone(),
        seconds_per_unit: spu,
        work_unit: s.work_unit,
        units: u,
        total_s: spu.map(|x| x * u),
        relative_speed: s.relative_speed,
        source: s.source.clone(),
        card_unverified: s.unverified.iter().any(|x| x == "cards"),
    }
}

fn speeds_of<'a>(
    cat: &'a KindCatalog,
    f: &'a Figure,
) -> impl Iterator<Item = &'a SpeedFigure> + 'a {
    cat.speeds
        .iter()
        .filter(move |s| s.kind == f.kind && s.model == f.model && s.setting == f.setting)
}

/// Size a non-LLM job against the card catalog.
pub fn estimate(
    job: &KindJob,
    cat: &KindCatalog,
    cards: &Catalog,
) -> Result<KindEstimate, CoreError> {
    check(job)?;
    let f = chosen(job, cat)?;
    let need = need_of(f, job.cells);
    let alternatives: Vec<&Figure> = cat
        .model_rows(job.kind, &job.model)
        .filter(|a| {
            a.setting != f.setting && !matches!(a.variant, Variant::Component | Variant::Rule)
        })
        .collect();
    let mut fits: Vec<KindFit> = cards
        .cards()
        .iter()
        .map(|card| {
            let (verdict, row, n) = fit_card(f, &alternatives, card, job.cells);
            let runs = matches!(
                verdict,
                KindVerdict::Fits | KindVerdict::FitsWithOffload | KindVerdict::FitsQuantized
            );
            let timed = speeds_of(cat, row)
                .filter(|s| runs && s.cards.contains(&card.id))
                .find_map(|s| time_of(s, job).total_s.map(|t| (t, s)));
            KindFit {
                card_id: card.id.clone(),
                card_name: card.name.clone(),
                vram_gb: card.vram_gb,
                usable_gib: usable_gib(card),
                ecc_reserve: gddr_ecc(card),
                compute_capability: card.compute_capability.clone(),
                verdict,
                setting: row.setting.clone(),
                headroom: n.as_ref().map(|n| headroom(n, card)),
                need: n,
                time_s: timed.map(|(t, _)| t),
                time_card_unverified: timed
                    .is_some_and(|(_, s)| s.unverified.iter().any(|x| x == "cards")),
            }
        })
        .collect();
    fits.sort_by(|a, b| {
        a.verdict
            .cmp(&b.verdict)
            .then_with(|| a.vram_gb.total_cmp(&b.vram_gb))
            .then_with(|| a.card_id.cmp(&b.card_id))
    });
    let times: Vec<KindTime> = speeds_of(cat, f).map(|s| time_of(s, job)).collect();
    let ranking = rank_offers(&fits, &job.offers);
    let components: Vec<Component> = cat
        .model_rows(job.kind, &job.model)
        .filter(|c| c.variant == Variant::Component)
        .filter_map(|c| {
            Some(Component {
                id: c.setting.clone(),
                text: c.setting_text.clone(),
                gb: c.mem?,
            })
        })
        .collect();
    let formula = f
        .bytes_per_cell
        .zip(job.cells)
        .map(|(bpc, cells)| CellsFormula {
            cells,
            bytes_per_cell: bpc,
            gib: cells * bpc / GIB,
        });
    let mut unverified: Vec<String> = f
        .unverified
        .iter()
        .map(|x| format!("{}/{}: {x}", f.model, f.setting))
        .collect();
    for s in speeds_of(cat, f) {
        for x in &s.unverified {
            let m = format!("{}/{} speed on {}: {x}", f.model, f.setting, s.measured_on);
            if !unverified.contains(&m) {
                unverified.push(m);
            }
        }
    }
    let not_found = cat
        .figures
        .iter()
        .filter(|x| x.kind == job.kind && x.figure == FigureKind::NotFound)
        .map(|x| format!("{}/{}", x.model, x.setting))
        .collect();
    let explanation = explain::explain(f, need.as_ref(), &fits, &times, formula.as_ref());
    Ok(KindEstimate {
        kind: job.kind,
        model: job.model.clone(),
        figure: f.clone(),
        need,
        components,
        formula,
        fits,
        times,
        ranking,
        explanation,
        unverified,
        not_found,
    })
}

/// Price every offer whose card runs the job; with a measured time, the job's cost.
fn rank_offers(fits: &[KindFit], offers: &[Offer]) -> Vec<KindOffer> {
    let settings = CostSettings::default();
    let mut out: Vec<KindOffer> = offers
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let f = fits.iter().find(|f| f.card_id == o.card_id)?;
            let runs = matches!(
                f.verdict,
                KindVerdict::Fits
                    | KindVerdict::FitsWithOffload
                    | KindVerdict::FitsQuantized
                    | KindVerdict::NoFigure
            );
            if !(runs && o.price_per_gpu_hour.is_finite() && o.price_per_gpu_hour >= 0.0) {
                return None;
            }
            Some(KindOffer {
                offer_index: i,
                card_id: o.card_id.clone(),
                verdict: f.verdict,
                price_per_hour: o.price_per_gpu_hour,
                currency: o.currency.clone(),
                cost: f.time_s.map(|t| job_cost(t / 3600.0, 1, o, &settings)),
            })
        })
        .collect();
    let key = |o: &KindOffer| o.cost.as_ref().map_or(f64::INFINITY, |c| c.total_cost);
    out.sort_by(|a, b| {
        key(a)
            .total_cmp(&key(b))
            .then(a.verdict.cmp(&b.verdict))
            .then_with(|| a.price_per_hour.total_cmp(&b.price_per_hour))
    });
    out
}
