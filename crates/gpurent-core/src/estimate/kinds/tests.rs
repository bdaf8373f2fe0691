//! Table tests against every figure of reference/non-llm-jobs.md (typed here from the reference,
//! independently of the CSV), verdicts on 24/48/80 GB cards, and the unverified / not-found marks.

use super::*;
use crate::estimate::cost::{Billing, BillingRule};

fn cat() -> &'static KindCatalog {
    KindCatalog::bundled().expect("job figures parse")
}

fn cards() -> &'static Catalog {
    Catalog::bundled().expect("cards")
}

fn est(kind: JobKind, model: &str, setting: Option<&str>) -> KindEstimate {
    let job = KindJob {
        kind,
        model: model.into(),
        setting: setting.map(String::from),
        ..Default::default()
    };
    estimate(&job, cat(), cards()).expect("estimate")
}

fn fit<'a>(e: &'a KindEstimate, card: &str) -> &'a KindFit {
    e.fits.iter().find(|f| f.card_id == card).expect(card)
}

/// (model, setting, mem, peak, unit, bytes/cell) for every numeric figure of the reference table.
/// (model, setting, first number, second number, unit or place, third number)
type Row = (
    &'static str,
    &'static str,
    Option<f64>,
    Option<f64>,
    &'static str,
    Option<f64>,
);

const FIGURES: &[Row] = &[
    ("sd15", "fp16-512", Some(5101.0), None, "MB", None),
    (
        "sd15",
        "fp16-512-seq-offload",
        Some(4539.0),
        None,
        "MB",
        None,
    ),
    ("sd15", "seq-offload-doc", Some(3.0), None, "GB", None),
    ("sd3.5-medium", "full", Some(9.9), None, "GB", None),
    (
        "flux1-dev",
        "component-transformer",
        Some(23.8),
        None,
        "GB",
        None,
    ),
    ("flux1-dev", "component-t5", Some(9.52), None, "GB", None),
    ("flux1-dev", "component-clip", Some(0.246), None, "GB", None),
    ("flux1-dev", "component-vae", Some(0.168), None, "GB", None),
    ("flux1-dev", "bf16", Some(31.4), Some(36.2), "GiB", None),
    ("flux1-dev", "bnb-nf4", Some(12.6), Some(17.3), "GiB", None),
    ("flux1-dev", "bnb-int8", Some(19.3), Some(24.4), "GiB", None),
    (
        "flux1-dev",
        "torchao-int4",
        Some(10.6),
        Some(14.7),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "torchao-int8",
        Some(17.0),
        Some(21.5),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "torchao-fp8",
        Some(17.0),
        Some(21.5),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "quanto-int4",
        Some(12.3),
        Some(16.1),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "quanto-int8",
        Some(17.3),
        Some(21.8),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "quanto-fp8",
        Some(16.4),
        Some(20.9),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "gguf-q2_k",
        Some(13.3),
        Some(17.8),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "gguf-q4_1",
        Some(16.8),
        Some(21.3),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "gguf-q8_0",
        Some(21.5),
        Some(26.0),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "fp8-layerwise",
        Some(23.7),
        Some(28.5),
        "GiB",
        None,
    ),
    (
        "flux1-dev",
        "quanto-fp8-model-offload",
        Some(16.0),
        None,
        "GB",
        None,
    ),
    (
        "wan2.1-t2v-1.3b",
        "480p-offload-t5cpu",
        Some(8.19),
        None,
        "GB",
        None,
    ),
    ("wan2.1-t2v", "diffusers", Some(13.0), None, "GB", None),
    (
        "wan2.2-a14b",
        "single-gpu-offload",
        Some(80.0),
        None,
        "GB",
        None,
    ),
    (
        "wan2.2-ti2v-5b",
        "720p24-offload",
        Some(24.0),
        None,
        "GB",
        None,
    ),
    ("hunyuanvideo", "720p-129f", Some(60.0), None, "GB", None),
    ("hunyuanvideo", "544p-129f", Some(45.0), None, "GB", None),
    (
        "hunyuanvideo",
        "diffusers-quantized",
        Some(14.0),
        None,
        "GB",
        None,
    ),
    (
        "cogvideox-2b",
        "all-optimizations",
        Some(4.0),
        None,
        "GB",
        None,
    ),
    ("cogvideox-2b", "int8", Some(3.6), None, "GB", None),
    (
        "cogvideox-5b",
        "all-optimizations",
        Some(5.0),
        None,
        "GB",
        None,
    ),
    ("cogvideox-5b", "int8", Some(4.4), None, "GB", None),
    (
        "cogvideox-5b",
        "model-offload",
        Some(19.0),
        None,
        "GB",
        None,
    ),
    ("cogvideox-5b", "no-offload", Some(33.0), None, "GB", None),
    (
        "cogvideox-5b",
        "sequential-offload",
        Some(4.0),
        None,
        "GB",
        None,
    ),
    (
        "cogvideox-5b",
        "model-offload-tiling",
        Some(11.0),
        None,
        "GB",
        None,
    ),
    (
        "cogvideox1.5-5b",
        "all-optimizations",
        Some(10.0),
        None,
        "GB",
        None,
    ),
    ("cogvideox1.5-5b", "int8", Some(7.0), None, "GB", None),
    ("ltx-video", "diffusers", Some(10.0), None, "GB", None),
    ("flux1-dev", "sd-scripts-24gb", Some(24.0), None, "GB", None),
    ("flux1-dev", "sd-scripts-16gb", Some(16.0), None, "GB", None),
    ("flux1-dev", "sd-scripts-12gb", Some(12.0), None, "GB", None),
    ("flux1-dev", "sd-scripts-10gb", Some(10.0), None, "GB", None),
    ("flux1-dev", "sd-scripts-8gb", Some(8.0), None, "GB", None),
    ("flux1-dev", "ai-toolkit", Some(24.0), None, "GB", None),
    ("sdxl", "sd-scripts-lora", Some(8.0), None, "GB", None),
    ("sdxl", "sd-scripts-full", Some(24.0), None, "GB", None),
    ("whisper-tiny", "openai", Some(1.0), None, "GB", None),
    ("whisper-base", "openai", Some(1.0), None, "GB", None),
    ("whisper-small", "openai", Some(2.0), None, "GB", None),
    ("whisper-medium", "openai", Some(5.0), None, "GB", None),
    ("whisper-large", "openai", Some(10.0), None, "GB", None),
    ("whisper-turbo", "openai", Some(6.0), None, "GB", None),
    (
        "whisper-large-v2",
        "openai-fp16",
        Some(4708.0),
        None,
        "MB",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-fp16",
        Some(4525.0),
        None,
        "MB",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-fp16-bs8",
        Some(6090.0),
        None,
        "MB",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-int8",
        Some(2926.0),
        None,
        "MB",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-int8-bs8",
        Some(4500.0),
        None,
        "MB",
        None,
    ),
    (
        "gaussian-splatting",
        "paper-quality",
        Some(24.0),
        None,
        "GB",
        None,
    ),
    ("3d-gsw", "mip-nerf360", Some(26.0), None, "GB", None),
    (
        "3d-gsw",
        "nerf-synthetic-llff",
        Some(14.0),
        None,
        "GB",
        None,
    ),
    ("fdtd-3d-yee", "float64", None, None, "", Some(56.0)),
    ("fdtd-3d-yee", "float32", None, None, "", Some(28.0)),
    (
        "lbm-d3q19",
        "fluidx3d-esoteric-fp16",
        None,
        None,
        "",
        Some(55.0),
    ),
    ("lbm-d3q19", "conventional", None, None, "", Some(333.0)),
    (
        "oceananigans",
        "biogeochemistry",
        None,
        None,
        "",
        Some(600.0),
    ),
];

#[test]
fn every_numeric_figure_matches_the_reference_exactly() {
    let numeric: Vec<&Figure> = cat()
        .figures
        .iter()
        .filter(|f| f.mem.is_some() || f.bytes_per_cell.is_some())
        .collect();
    assert_eq!(numeric.len(), FIGURES.len(), "a figure was added or lost");
    for (model, setting, mem, peak, unit, bpc) in FIGURES {
        let f = numeric
            .iter()
            .find(|f| f.model == *model && f.setting == *setting)
            .unwrap_or_else(|| panic!("{model}/{setting} missing"));
        assert_eq!(
            (f.mem, f.peak, f.unit.as_str(), f.bytes_per_cell),
            (*mem, *peak, *unit, *bpc),
            "{model}/{setting}"
        );
        assert!(!f.source.is_empty(), "{model}/{setting} has no source");
    }
}

/// (model, setting, seconds, work units, measured on, relative speed)
const SPEEDS: &[Row] = &[
    (
        "sd15",
        "fp32-512-50ddim",
        Some(9.50),
        Some(1.0),
        "Titan RTX",
        None,
    ),
    ("sd15", "fp16-512", Some(3.61), Some(1.0), "Titan RTX", None),
    (
        "sd15",
        "fp16-mem-efficient-attn",
        Some(2.63),
        Some(1.0),
        "Titan RTX",
        None,
    ),
    ("flux1-dev", "bf16", Some(12.0), Some(1.0), "H100", None),
    ("flux1-dev", "bnb-nf4", Some(12.0), Some(1.0), "H100", None),
    ("flux1-dev", "bnb-int8", Some(27.0), Some(1.0), "H100", None),
    (
        "flux1-dev",
        "torchao-int4",
        Some(109.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "torchao-int8",
        Some(15.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "torchao-fp8",
        Some(15.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "quanto-int4",
        Some(109.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "quanto-int8",
        Some(15.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "quanto-fp8",
        Some(16.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "gguf-q2_k",
        Some(26.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "gguf-q4_1",
        Some(23.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "gguf-q8_0",
        Some(15.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "flux1-dev",
        "fp8-layerwise",
        Some(13.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "wan2.1-t2v-1.3b",
        "480p-offload-t5cpu",
        Some(240.0),
        Some(1.0),
        "RTX 4090",
        None,
    ),
    (
        "hunyuanvideo",
        "720p-129f",
        Some(3234.0),
        Some(1.0),
        "A100",
        None,
    ),
    (
        "cogvideox-2b",
        "all-optimizations",
        Some(90.0),
        Some(1.0),
        "A100",
        None,
    ),
    (
        "cogvideox-2b",
        "all-optimizations",
        Some(45.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "cogvideox-5b",
        "all-optimizations",
        Some(180.0),
        Some(1.0),
        "A100",
        None,
    ),
    (
        "cogvideox-5b",
        "all-optimizations",
        Some(90.0),
        Some(1.0),
        "H100",
        None,
    ),
    (
        "cogvideox1.5-5b",
        "all-optimizations",
        Some(1000.0),
        Some(1.0),
        "A100",
        None,
    ),
    (
        "cogvideox1.5-5b",
        "all-optimizations",
        Some(550.0),
        Some(1.0),
        "H100",
        None,
    ),
    ("whisper-tiny", "openai", None, None, "A100", Some(10.0)),
    ("whisper-base", "openai", None, None, "A100", Some(7.0)),
    ("whisper-small", "openai", None, None, "A100", Some(4.0)),
    ("whisper-medium", "openai", None, None, "A100", Some(2.0)),
    ("whisper-large", "openai", None, None, "A100", Some(1.0)),
    ("whisper-turbo", "openai", None, None, "A100", Some(8.0)),
    (
        "whisper-large-v2",
        "openai-fp16",
        Some(143.0),
        Some(13.0),
        "RTX 3070 Ti",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-fp16",
        Some(63.0),
        Some(13.0),
        "RTX 3070 Ti",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-fp16-bs8",
        Some(17.0),
        Some(13.0),
        "RTX 3070 Ti",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-int8",
        Some(59.0),
        Some(13.0),
        "RTX 3070 Ti",
        None,
    ),
    (
        "whisper-large-v2",
        "fw-int8-bs8",
        Some(16.0),
        Some(13.0),
        "RTX 3070 Ti",
        None,
    ),
];

#[test]
fn every_speed_matches_the_reference_exactly() {
    let s = &cat().speeds;
    assert_eq!(s.len(), SPEEDS.len());
    for (model, setting, secs, units, on, rel) in SPEEDS {
        assert!(
            s.iter().any(|x| x.model == *model
                && x.setting == *setting
                && x.seconds == *secs
                && x.work_units == *units
                && x.measured_on == *on
                && x.relative_speed == *rel),
            "{model}/{setting} on {on}"
        );
    }
}

/// The reference's NOT FOUND rows stay marked as such (and carry no number).
#[test]
fn not_found_figures_are_marked_and_carry_no_number() {
    let nf: Vec<String> = cat()
        .figures
        .iter()
        .filter(|f| f.figure == FigureKind::NotFound)
        .map(|f| format!("{}/{}", f.model, f.setting))
        .collect();
    for want in [
        "flux1-schnell/any",
        "sdxl/any",
        "wan2.1-t2v-14b/any",
        "instant-ngp/any",
        "colmap/any",
        "blender-cycles/cuda",
        "blender-cycles/optix",
        "blender-cycles/oidn-gpu",
    ] {
        assert!(nf.contains(&want.to_string()), "{want} not marked: {nf:?}");
    }
    let e = est(JobKind::Image, "flux1-schnell", None);
    assert!(e.need.is_none());
    assert!(e.fits.iter().all(|f| f.verdict == KindVerdict::NoFigure));
    assert!(e
        .explanation
        .contains(&KindExplanation::NoMemoryFigure { not_found: true }));
    assert!(e.not_found.contains(&"sdxl/any".to_string()));
}

/// The unverified fields of the snapshot are carried and reported.
#[test]
fn unverified_marks_are_present() {
    let marked = |m: &str, s: &str, field: &str| {
        cat()
            .figures
            .iter()
            .any(|f| f.model == m && f.setting == s && f.unverified.iter().any(|x| x == field))
    };
    assert!(marked("fdtd-3d-yee", "float32", "bytes_per_cell"));
    assert!(marked("lbm-d3q19", "conventional", "bytes_per_cell"));
    assert!(marked("sd3.5-medium", "full", "mem"));
    let e = est(JobKind::Image, "flux1-dev", Some("bf16"));
    assert!(
        e.unverified
            .iter()
            .any(|u| u.contains("speed on H100: cards")),
        "{:?}",
        e.unverified
    );
    assert!(fit(&e, "h100-sxm").time_card_unverified);
    let job = KindJob {
        kind: JobKind::Simulation,
        model: "fdtd-3d-yee".into(),
        setting: Some("float32".into()),
        cells: Some(1e6),
        ..Default::default()
    };
    let e = estimate(&job, cat(), cards()).expect("fdtd");
    assert_eq!(
        e.unverified,
        vec!["fdtd-3d-yee/float32: bytes_per_cell".to_string()]
    );
}

/// The blog's "GB" are GiB: its BF16 components (decimal GB) add up to its loaded figure.
#[test]
fn flux_components_add_up_to_the_loaded_figure_in_gib() {
    let e = est(JobKind::Image, "flux1-dev", Some("bf16"));
    assert_eq!(e.components.len(), 4);
    let sum_gb: f64 = e.components.iter().map(|c| c.gb).sum();
    let loaded = e.need.as_ref().and_then(|n| n.loaded_gib).expect("loaded");
    assert!(
        (sum_gb * 1e9 / GIB - loaded).abs() < 0.02,
        "{sum_gb} GB vs {loaded} GiB"
    );
    assert_eq!(e.need.as_ref().and_then(|n| n.peak_gib), Some(36.2));
}

#[test]
fn flux_dev_verdicts_on_24_48_80_gb_cards() {
    let e = est(JobKind::Image, "flux1-dev", Some("bf16"));
    // 36.2 GiB peak: 80 and 48 GB cards fit; 24 GB cards only quantized (quanto int8, 21.8 GiB
    // peak, the largest quantized setting that fits 23.76 GiB).
    assert_eq!(fit(&e, "h100-sxm").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "l40s").verdict, KindVerdict::Fits);
    let r4090 = fit(&e, "rtx-4090");
    assert_eq!(r4090.verdict, KindVerdict::FitsQuantized);
    assert_eq!(r4090.setting, "quanto-int8");
    // A T4 (16 GB with ECC: 14.85 GiB) holds torchao int4 (14.7 GiB peak).
    assert_eq!(fit(&e, "t4").setting, "torchao-int4");
    // Time on the measured GPU only: 12 s per image on the H100.
    assert_eq!(fit(&e, "h100-sxm").time_s, Some(12.0));
    assert_eq!(fit(&e, "h100-pcie").time_s, None);
    assert_eq!(fit(&e, "l40s").time_s, None);
    assert_eq!(e.fits[0].verdict, KindVerdict::Fits);
    assert!(e.explanation.iter().any(|x| matches!(
        x,
        KindExplanation::UseOtherSetting { vram_gb, verdict: KindVerdict::FitsQuantized, .. } if *vram_gb == 24.0
    )));
    assert!(e.explanation.iter().any(|x| matches!(
        x,
        KindExplanation::TimeMeasuredOnlyOn { measured_on, total_s, .. } if measured_on == "H100" && *total_s == 12.0
    )));
}

#[test]
fn card_class_minimums_compare_with_nominal_gb() {
    // Wan 2.2 A14B: ">= 80 GB" — 80 GB cards fit, 48 GB do not.
    let e = est(JobKind::Video, "wan2.2-a14b", None);
    assert_eq!(fit(&e, "h100-sxm").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "a100-80gb-pcie").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "l40s").verdict, KindVerdict::DoesNotFit);
    assert_eq!(fit(&e, "rtx-4090").verdict, KindVerdict::DoesNotFit);
    // HunyuanVideo 720p (>= 60 GB): 48 GB only via the quantized diffusers pipeline.
    let e = est(JobKind::Video, "hunyuanvideo", Some("720p-129f"));
    assert_eq!(fit(&e, "h100-sxm").verdict, KindVerdict::Fits);
    let l40s = fit(&e, "l40s");
    assert_eq!(
        (l40s.verdict, l40s.setting.as_str()),
        (KindVerdict::FitsQuantized, "diffusers-quantized")
    );
    assert_eq!(fit(&e, "rtx-4090").verdict, KindVerdict::FitsQuantized);
    assert_eq!(fit(&e, "a100-80gb-sxm").time_s, Some(3234.0));
    // FLUX LoRA with sd-scripts at the 24 GB tier: 24 GB cards fit, a 16 GB T4 swaps blocks.
    let e = est(JobKind::Lora, "flux1-dev", Some("sd-scripts-24gb"));
    assert_eq!(fit(&e, "rtx-4090").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "l40s").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "h100-sxm").verdict, KindVerdict::Fits);
    let t4 = fit(&e, "t4");
    assert_eq!(
        (t4.verdict, t4.setting.as_str()),
        (KindVerdict::FitsQuantized, "sd-scripts-16gb")
    );
}

#[test]
fn offload_alternative_comes_before_quantized() {
    // CogVideoX-5B without offload needs 33 GB: a 24 GB card runs it with model offload (19 GB).
    let e = est(JobKind::Video, "cogvideox-5b", Some("no-offload"));
    let c = fit(&e, "rtx-4090");
    assert_eq!(
        (c.verdict, c.setting.as_str()),
        (KindVerdict::FitsWithOffload, "model-offload")
    );
    assert_eq!(fit(&e, "l40s").verdict, KindVerdict::Fits);
    assert!(e.explanation.contains(&KindExplanation::OffloadIsSlower));
    // No speed for that setting: said so.
    assert!(e.explanation.contains(&KindExplanation::NoSpeedFigure));
}

#[test]
fn simulation_memory_is_cells_times_bytes_per_cell() {
    let sim = |setting: &str, cells: f64| {
        let job = KindJob {
            kind: JobKind::Simulation,
            model: if setting.starts_with("float") {
                "fdtd-3d-yee"
            } else {
                "lbm-d3q19"
            }
            .into(),
            setting: Some(setting.into()),
            cells: Some(cells),
            ..Default::default()
        };
        estimate(&job, cat(), cards()).expect("sim")
    };
    // The source's own check: N = 200^3 at 56 B/cell is about 450 MB.
    let e = sim("float64", 200f64.powi(3));
    let f = e.formula.expect("formula");
    assert_eq!(f.bytes_per_cell, 56.0);
    assert!((f.gib * GIB / 1e6 - 448.0).abs() < 1e-6, "{}", f.gib);
    assert!(e.fits.iter().all(|x| x.verdict == KindVerdict::Fits));
    // FluidX3D: 55 B/cell, about 19 M cells per GB; 1e9 cells = 51.2 GiB: 80 GB yes, 48 GB no.
    let e = sim("fluidx3d-esoteric-fp16", 1e9);
    assert!((e.formula.expect("f").gib - 55e9 / GIB).abs() < 1e-9);
    assert_eq!(fit(&e, "h100-sxm").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "l40s").verdict, KindVerdict::DoesNotFit);
    assert_eq!(fit(&e, "rtx-4090").verdict, KindVerdict::DoesNotFit);
    // A simulation without cells is refused.
    let job = KindJob {
        kind: JobKind::Simulation,
        model: "lbm-d3q19".into(),
        ..Default::default()
    };
    assert!(matches!(
        estimate(&job, cat(), cards()),
        Err(CoreError::InvalidInput { field, .. }) if field == "cells"
    ));
}

#[test]
fn blender_rules_without_memory_figures() {
    let e = est(JobKind::Render, "blender-cycles", Some("oidn-gpu"));
    // CC >= 7.0 for OIDN on the GPU: every catalog card has it (V100 is 7.0).
    assert!(e.fits.iter().all(|f| f.verdict == KindVerdict::NoFigure));
    assert!(e
        .explanation
        .contains(&KindExplanation::NoMemoryFigure { not_found: true }));
    let e = est(JobKind::Render, "blender-cycles", Some("optix"));
    assert!(e
        .explanation
        .contains(&KindExplanation::NeedsHostDriver { min_driver: 535 }));
    // A card below the minimum is refused (a hand-made CC 6.1 card).
    let f = chosen(
        &KindJob {
            kind: JobKind::Render,
            model: "blender-cycles".into(),
            setting: Some("oidn-gpu".into()),
            ..Default::default()
        },
        cat(),
    )
    .expect("row");
    let mut old = cards().get("t4").expect("t4").clone();
    old.compute_capability = "6.1".into();
    assert_eq!(fit_card(f, &[], &old, None).0, KindVerdict::NeedsNewerGpu);
}

#[test]
fn gaussian_splatting_needs_24_gb_and_cc_7() {
    let e = est(JobKind::Recon3d, "gaussian-splatting", None);
    assert_eq!(fit(&e, "rtx-4090").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "a10").verdict, KindVerdict::Fits);
    assert_eq!(fit(&e, "t4").verdict, KindVerdict::DoesNotFit);
    assert!(e.explanation.iter().any(
        |x| matches!(x, KindExplanation::NeedsComputeCapability { min_cc, .. } if min_cc == "7.0")
    ));
    // 3D-GSW on Mip-NeRF360 (~26 GB): 24 GB cards no, 32 GB yes.
    let e = est(JobKind::Recon3d, "3d-gsw", Some("mip-nerf360"));
    assert_eq!(fit(&e, "rtx-4090").verdict, KindVerdict::DoesNotFit);
    assert_eq!(fit(&e, "rtx-5090").verdict, KindVerdict::Fits);
}

#[test]
fn speech_time_only_on_the_measured_gpu_and_relative_speeds_stay_relative() {
    let job = KindJob {
        kind: JobKind::Speech,
        model: "whisper-large-v2".into(),
        setting: Some("fw-int8".into()),
        audio_hours: 3.0,
        ..Default::default()
    };
    let e = estimate(&job, cat(), cards()).expect("speech");
    // 59 s per 13 min of audio; 3 h = 180 min: 59 / 13 × 180 s.
    let t = &e.times[0];
    assert_eq!(t.measured_on, "RTX 3070 Ti");
    assert!((t.total_s.expect("total") - 59.0 / 13.0 * 180.0).abs() < 1e-9);
    // The catalog has no RTX 3070 Ti: no card gets a time.
    assert!(e.fits.iter().all(|f| f.time_s.is_none()));
    assert!(e.fits.iter().all(|f| f.verdict == KindVerdict::Fits));
    let e = est(JobKind::Speech, "whisper-turbo", None);
    assert!(e.explanation.contains(&KindExplanation::RelativeSpeedOnly {
        measured_on: "A100".into(),
        relative_speed: 8.0
    }));
    assert!(e.times.iter().all(|t| t.total_s.is_none()));
}

#[test]
fn cost_only_where_a_time_was_measured() {
    let offer = |card: &str, p: f64| Offer {
        card_id: card.into(),
        price_per_gpu_hour: p,
        billing: Billing {
            rule: BillingRule::PerSecond,
            minimum_minutes: 0.0,
        },
        ..Default::default()
    };
    let job = KindJob {
        kind: JobKind::Image,
        model: "flux1-dev".into(),
        setting: Some("bf16".into()),
        count: 300,
        offers: vec![offer("l40s", 0.8), offer("h100-sxm", 3.0), offer("t4", 0.2)],
        ..Default::default()
    };
    let e = estimate(&job, cat(), cards()).expect("cost");
    // 300 images × 12 s = 1 h on the H100 at 3.00/h.
    let h = e
        .ranking
        .iter()
        .find(|o| o.card_id == "h100-sxm")
        .expect("h100");
    let c = h.cost.as_ref().expect("cost");
    assert!((c.job_hours - 1.0).abs() < 1e-9 && (c.total_cost - 3.0).abs() < 1e-9);
    assert_eq!(e.ranking[0].card_id, "h100-sxm");
    // The L40S fits but nobody measured it: price per hour only.
    assert!(e
        .ranking
        .iter()
        .any(|o| o.card_id == "l40s" && o.cost.is_none()));
    // The T4 runs it only quantized (torchao int4), not measured there either.
    assert!(e
        .ranking
        .iter()
        .any(|o| o.card_id == "t4" && o.verdict == KindVerdict::FitsQuantized));
}

#[test]
fn bad_inputs_are_refused() {
    let bad = |job: KindJob, field: &str| match estimate(&job, cat(), cards()) {
        Err(CoreError::InvalidInput { field: f, .. }) => assert_eq!(f, field),
        other => panic!("{field}: {other:?}"),
    };
    bad(
        KindJob {
            model: "nope".into(),
            ..Default::default()
        },
        "model",
    );
    bad(
        KindJob {
            setting: Some("nope".into()),
            ..Default::default()
        },
        "setting",
    );
    bad(
        KindJob {
            setting: Some("component-t5".into()),
            ..Default::default()
        },
        "setting",
    );
    bad(
        KindJob {
            count: 0,
            ..Default::default()
        },
        "count",
    );
    bad(
        KindJob {
            audio_hours: f64::NAN,
            ..Default::default()
        },
        "audio_hours",
    );
}

/// Every model of every kind estimates without error (the UI offers them all).
#[test]
fn every_setting_estimates() {
    for f in cat()
        .figures
        .iter()
        .filter(|f| f.variant != Variant::Component)
    {
        let job = KindJob {
            kind: f.kind,
            model: f.model.clone(),
            setting: Some(f.setting.clone()),
            cells: Some(1e6),
            ..Default::default()
        };
        let e = estimate(&job, cat(), cards())
            .unwrap_or_else(|e| panic!("{}/{}: {e}", f.model, f.setting));
        assert_eq!(e.fits.len(), cards().cards().len());
        assert!(!e.explanation.is_empty());
    }
}
