//! The estimator's memory check before an Ollama pull: "will qwen2.5:32b fit this card?"
//!
//! The tag is looked up in `data/ollama-tags.csv` (library name and size -> the catalog model of
//! `models.csv`; quantisation Q4_K_M unless the tag names one, `q8_0`, `fp16`, …), the job is the
//! estimator's llama.cpp/Ollama inference (weights, f16 KV cache for the context, Ollama's graph
//! buffer and its 457 MiB reserve; `estimate::memory::inference`), split over the chosen GPUs as
//! Ollama splits layers. The context is Ollama's default unless given: since 2026-02 it is tiered
//! by the GPUs' total memory (< 23 GiB: 4 096; < 47 GiB: 32 768; else 262 144), capped by the
//! model's own limit [S24]. The host's GPUs (total and used MiB) come from one `nvidia-smi
//! --query-gpu` over the SSH connection, parsed by header name (`monitor::telemetry`).
//!
//! Verdict per GPU against the smallest free memory of the chosen cards: `fits`, `tight` (less
//! than [`TIGHT_GIB`] or [`TIGHT_SHARE`] of the need left over: a heuristic margin), or
//! `does_not_fit` — then a pull is refused (`model_does_not_fit`) unless forced; Ollama would run
//! the rest on the CPU, slowly. A tag not in the table is allowed with a note.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::OllamaError;
use crate::estimate::{fit, Engine, Job, ModelCatalog, Resolved, Task};
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::monitor::telemetry::parse_gpus;
use crate::remote::connect::Connection;
use crate::remote::exec::exec;
use crate::remote::quote::sh_c;

const TAGS_CSV: &str = include_str!("../../data/ollama-tags.csv");

/// The quantisation an Ollama library tag pulls when it names none.
pub const DEFAULT_QUANT: &str = "q4_k_m";
/// Left over below this (GiB) is `tight` (heuristic).
pub const TIGHT_GIB: f64 = 1.0;
/// Left over below this share of the need is `tight` (heuristic).
pub const TIGHT_SHARE: f64 = 0.10;

/// Note keys the UI translates.
pub const NOTE_NOT_IN_TABLE: &str = "ollama.fit.not_in_table";
pub const NOTE_UNVERIFIED: &str = "ollama.fit.unverified_row";
pub const NOTE_NO_GPU_INFO: &str = "ollama.fit.no_gpu_info";
pub const NOTE_CONTEXT_DEFAULT: &str = "ollama.fit.context_is_ollamas_default";

/// One row of `ollama-tags.csv`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct TagRow {
    name: String,
    size: String,
    model_id: String,
    default_quant: String,
    verified: String,
    source: String,
}

/// What a tag is in the estimator's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TagModel {
    /// The catalog model (`models.csv`).
    pub model_id: String,
    /// The weight format (`quant-formats.csv`).
    pub quant: String,
    /// The table row is backed by its source (else gpurent's reading of the naming).
    pub verified: bool,
    pub source: String,
}

fn rows() -> Result<Vec<TagRow>, CoreError> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(TAGS_CSV.as_bytes())
        .deserialize::<TagRow>()
        .map(|r| r.map_err(|e| CoreError::BundledData(format!("ollama-tags.csv: {e}"))))
        .collect()
}

/// The quantisation a tag part names, as a `quant-formats.csv` id (`q4_K_M` -> `q4_k_m`,
/// `fp16`/`f16` -> `f16_gguf`); `None` when the part is no quantisation name.
fn quant_of(part: &str) -> Option<String> {
    let p = part.to_ascii_lowercase();
    if p == "fp16" || p == "f16" {
        return Some("f16_gguf".into());
    }
    let b = p.as_bytes();
    let looks = (b.first() == Some(&b'q') && b.get(1).is_some_and(u8::is_ascii_digit))
        || (p.starts_with("iq") && b.get(2).is_some_and(u8::is_ascii_digit));
    looks.then_some(p)
}

/// Look a tag (`qwen2.5:32b`, `llama3.1`, `qwen2.5:7b-instruct-q8_0`,
/// `registry.ollama.ai/library/qwen2.5:7b`) up; `None` when gpurent's table does not know it
/// (another model, a user's namespace, a quantisation the estimator has no figures for).
pub fn resolve_tag(tag: &str) -> Result<Option<TagModel>, CoreError> {
    let tag = tag.trim();
    let (path, version) = tag.split_once(':').unwrap_or((tag, "latest"));
    let name = match path.rsplit_once('/') {
        Some((ns, n)) if ns == "library" || ns.ends_with("/library") => n,
        Some(_) => return Ok(None),
        None => path,
    };
    let mut parts = version.split('-');
    let size = parts.next().unwrap_or("latest").to_ascii_lowercase();
    let quant = parts.find_map(quant_of);
    let Some(row) = rows()?
        .into_iter()
        .find(|r| r.name.eq_ignore_ascii_case(name) && r.size == size)
    else {
        return Ok(None);
    };
    let quant = quant.unwrap_or(row.default_quant);
    if ModelCatalog::bundled()?.quant(&quant).is_err() {
        return Ok(None);
    }
    Ok(Some(TagModel {
        model_id: row.model_id,
        quant,
        verified: row.verified == "yes",
        source: row.source,
    }))
}

/// One GPU of the host, as nvidia-smi reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostGpu {
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub name: Option<String>,
    pub memory_total_mib: Option<f64>,
    pub memory_used_mib: Option<f64>,
}

impl HostGpu {
    /// Free memory, GiB.
    pub fn free_gib(&self) -> Option<f64> {
        match (self.memory_total_mib, self.memory_used_mib) {
            (Some(t), Some(u)) => Some(((t - u) / 1024.0).max(0.0)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FitState {
    Fits,
    /// Fits with little to spare (see [`TIGHT_GIB`], [`TIGHT_SHARE`]).
    Tight,
    DoesNotFit,
    /// Not in gpurent's table, or the host reported no GPU memory: no verdict.
    Unknown,
}

/// The answer of the memory check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ModelFit {
    /// The tag as asked.
    pub model: String,
    /// What the table maps it to; `None`: not in gpurent's table.
    pub resolved: Option<TagModel>,
    /// The context the figure is for (tokens).
    pub context_tokens: u32,
    /// The GPUs the check is for (the chosen ones, or all).
    pub gpus: Vec<HostGpu>,
    /// What the model needs on each of them, GiB.
    pub need_gib: Option<f64>,
    /// The smallest free memory among them, GiB.
    pub have_gib: Option<f64>,
    pub verdict: FitState,
    /// Note keys (`ollama.fit.*`) the UI translates.
    pub notes: Vec<String>,
}

impl ModelFit {
    /// The refusal a pull gets unless forced.
    pub fn refusal(&self) -> Option<OllamaError> {
        match (self.verdict, self.need_gib, self.have_gib) {
            (FitState::DoesNotFit, Some(need_gib), Some(have_gib)) => {
                Some(OllamaError::ModelDoesNotFit {
                    model: self.model.clone(),
                    need_gib,
                    have_gib,
                })
            }
            _ => None,
        }
    }
}

/// Ollama's default context for GPUs with `total_gib` of memory together, capped by the model's
/// limit [S24].
pub fn default_context(total_gib: f64, model_max: Option<u32>) -> u32 {
    let tier = if total_gib < 23.0 {
        4096
    } else if total_gib < 47.0 {
        32_768
    } else {
        262_144
    };
    model_max.map_or(tier, |m| tier.min(m))
}

/// The chosen GPUs (by UUID; empty: all) of `all`.
pub fn choose(all: &[HostGpu], uuids: &[String]) -> Result<Vec<HostGpu>, CoreError> {
    if uuids.is_empty() {
        return Ok(all.to_vec());
    }
    uuids
        .iter()
        .map(|u| {
            all.iter()
                .find(|g| g.uuid.as_deref() == Some(u.as_str()))
                .cloned()
                .ok_or_else(|| CoreError::invalid("gpus", format!("no GPU {u} on this host")))
        })
        .collect()
}

/// The check for `model` on `gpus` (already chosen) at `context` (None: Ollama's default).
pub fn evaluate(
    model: &str,
    gpus: &[HostGpu],
    context: Option<u32>,
) -> Result<ModelFit, CoreError> {
    let resolved = resolve_tag(model)?;
    let mut notes = Vec::new();
    let frees: Option<Vec<f64>> = gpus.iter().map(HostGpu::free_gib).collect();
    let have_gib = frees
        .filter(|f| !f.is_empty())
        .map(|f| f.into_iter().fold(f64::INFINITY, f64::min));
    if have_gib.is_none() {
        notes.push(NOTE_NO_GPU_INFO.to_string());
    }
    let total_gib: f64 = gpus.iter().filter_map(|g| g.memory_total_mib).sum::<f64>() / 1024.0;
    let Some(tm) = resolved.clone() else {
        notes.push(NOTE_NOT_IN_TABLE.to_string());
        return Ok(ModelFit {
            model: model.to_string(),
            resolved: None,
            context_tokens: context.unwrap_or_else(|| default_context(total_gib, None)),
            gpus: gpus.to_vec(),
            need_gib: None,
            have_gib,
            verdict: FitState::Unknown,
            notes,
        });
    };
    if !tm.verified {
        notes.push(NOTE_UNVERIFIED.to_string());
    }
    let models = ModelCatalog::bundled()?;
    let spec = models.model(&tm.model_id)?;
    let context_tokens = match context {
        Some(c) => c,
        None => {
            notes.push(NOTE_CONTEXT_DEFAULT.to_string());
            default_context(total_gib, spec.max_position_embeddings)
        }
    };
    let n = u32::try_from(gpus.len().max(1)).unwrap_or(u32::MAX);
    let job = Job {
        model: Some(tm.model_id.clone()),
        task: Task::Infer,
        quant: Some(tm.quant.clone()),
        engine: Engine::LlamaCpp,
        context_tokens,
        gpus: n,
        ..Job::default()
    };
    let r = Resolved::new(&job, models)?;
    let mut unc = Vec::new();
    let need = fit::per_gpu(&r, n, &mut unc).total;
    let verdict = match have_gib {
        None => FitState::Unknown,
        Some(have) if need > have => FitState::DoesNotFit,
        Some(have) if have - need < TIGHT_GIB.max(TIGHT_SHARE * need) => FitState::Tight,
        Some(_) => FitState::Fits,
    };
    Ok(ModelFit {
        model: model.to_string(),
        resolved,
        context_tokens,
        gpus: gpus.to_vec(),
        need_gib: Some(need),
        have_gib,
        verdict,
        notes,
    })
}

/// The host's GPUs from one `nvidia-smi --query-gpu` (with its header); empty when the host has
/// no working nvidia-smi.
pub fn host_gpus(conn: &Connection, cancel: &CancelToken) -> Result<Vec<HostGpu>, OllamaError> {
    let out = exec(
        conn,
        &sh_c(
            "nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used --format=csv,nounits",
        )?,
        cancel,
    )?;
    if !out.success() {
        return Ok(Vec::new());
    }
    Ok(parse_gpus(&out.stdout_text(), None)
        .into_iter()
        .map(|g| HostGpu {
            index: g.index,
            uuid: g.uuid,
            name: g.name,
            memory_total_mib: g.memory_total_mib,
            memory_used_mib: g.memory_used_mib,
        })
        .collect())
}

/// The check over the connection: the host's GPUs, the chosen ones, the verdict.
pub fn check(
    conn: &Connection,
    model: &str,
    gpus: &[String],
    context: Option<u32>,
    cancel: &CancelToken,
) -> Result<ModelFit, OllamaError> {
    let all = host_gpus(conn, cancel)?;
    let chosen = choose(&all, gpus)?;
    Ok(evaluate(model, &chosen, context)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(uuid: &str, total_mib: f64, used_mib: f64) -> HostGpu {
        HostGpu {
            index: Some(0),
            uuid: Some(uuid.into()),
            name: Some("card".into()),
            memory_total_mib: Some(total_mib),
            memory_used_mib: Some(used_mib),
        }
    }

    #[test]
    fn every_row_names_a_catalog_model_and_format_and_has_a_source() {
        let models = ModelCatalog::bundled().expect("catalog");
        for r in rows().expect("rows") {
            models.model(&r.model_id).expect("model in models.csv");
            models.quant(&r.default_quant).expect("format");
            assert!(matches!(r.verified.as_str(), "yes" | "no"), "{r:?}");
            assert!(!r.source.trim().is_empty(), "{r:?}");
        }
    }

    #[test]
    fn tags_resolve_with_default_and_named_quantisation() {
        let t = |s: &str| resolve_tag(s).expect("table");
        let q = t("qwen2.5:32b").expect("known");
        assert_eq!(
            (q.model_id.as_str(), q.quant.as_str()),
            ("qwen2.5-32b", "q4_k_m")
        );
        assert!(q.verified);
        assert_eq!(t("llama3.1:8b").expect("known").model_id, "llama-3.1-8b");
        assert_eq!(
            t("llama3.1").expect("bare name is latest").model_id,
            "llama-3.1-8b"
        );
        assert_eq!(t("qwen2.5:7b-instruct-q8_0").expect("known").quant, "q8_0");
        assert_eq!(
            t("qwen2.5:7b-instruct-q4_K_S").expect("known").quant,
            "q4_k_s"
        );
        assert_eq!(
            t("llama3.1:8b-instruct-fp16").expect("known").quant,
            "f16_gguf"
        );
        assert_eq!(
            t("registry.ollama.ai/library/qwen2.5:14b")
                .expect("library path")
                .model_id,
            "qwen2.5-14b"
        );
        assert!(!t("llama3.1:70b").expect("known").verified);
        assert_eq!(t("qwen2.5-coder:32b"), None, "another model");
        assert_eq!(t("someone/qwen2.5:7b"), None, "a user's namespace");
        assert_eq!(t("qwen2.5:3b"), None, "a size the catalog lacks");
        assert_eq!(
            t("qwen2.5:7b-instruct-q4_1"),
            None,
            "a format without figures"
        );
    }

    #[test]
    fn default_context_follows_ollamas_tiers_capped_by_the_model() {
        assert_eq!(default_context(16.0, Some(131_072)), 4096);
        assert_eq!(default_context(24.0, Some(131_072)), 32_768);
        assert_eq!(default_context(79.6, Some(131_072)), 131_072);
        assert_eq!(default_context(79.6, Some(32_768)), 32_768);
        assert_eq!(default_context(79.6, None), 262_144);
    }

    /// The table: qwen2.5:32b (Q4_K_M, ~18.5 GiB of weights) on common cards.
    #[test]
    fn verdicts_for_qwen25_32b() {
        // An empty 80 GB H100: context 32 768 (the model's limit); fits with room.
        let h100 = evaluate("qwen2.5:32b", &[gpu("a", 81_559.0, 0.0)], None).expect("fit");
        assert_eq!(h100.verdict, FitState::Fits, "{h100:?}");
        assert_eq!(h100.context_tokens, 32_768);
        let need = h100.need_gib.expect("need");
        assert!(
            need > 18.5 + 8.0 && need < 40.0,
            "weights + 8 GiB KV + graph: {need}"
        );
        assert!(h100.notes.contains(&NOTE_CONTEXT_DEFAULT.to_string()));
        // The same card with 60 GB used by another job: does not fit, the refusal carries both.
        let busy = evaluate("qwen2.5:32b", &[gpu("a", 81_559.0, 60_000.0)], None).expect("fit");
        assert_eq!(busy.verdict, FitState::DoesNotFit);
        match busy.refusal() {
            Some(OllamaError::ModelDoesNotFit {
                need_gib, have_gib, ..
            }) => {
                assert!((have_gib - (81_559.0 - 60_000.0) / 1024.0).abs() < 1e-9);
                assert!(need_gib > have_gib);
            }
            other => panic!("{other:?}"),
        }
        // A 24 GB card: Ollama's default context there is 32 768 too: does not fit.
        let rtx = evaluate("qwen2.5:32b", &[gpu("a", 24_564.0, 300.0)], None).expect("fit");
        assert_eq!(rtx.verdict, FitState::DoesNotFit, "{rtx:?}");
        // At 4 096 tokens the weights (~18.5 GiB) + ~1 GiB KV + graph fit a 24 GB card.
        let short = evaluate("qwen2.5:32b", &[gpu("a", 24_564.0, 300.0)], Some(4096)).expect("fit");
        assert!(
            matches!(short.verdict, FitState::Fits | FitState::Tight),
            "{short:?}"
        );
        assert!(!short.notes.contains(&NOTE_CONTEXT_DEFAULT.to_string()));
        // Two 24 GB cards share the layers: each needs about half.
        let two = evaluate(
            "qwen2.5:32b",
            &[gpu("a", 24_564.0, 300.0), gpu("b", 24_564.0, 300.0)],
            Some(4096),
        )
        .expect("fit");
        assert!(two.need_gib.expect("need") < short.need_gib.expect("need") * 0.6);
        assert!(two.refusal().is_none());
    }

    #[test]
    fn tight_small_unknown_and_no_gpu_info() {
        // llama3.1:8b Q4_K_M at 4 096 tokens needs about 6 GiB: an 8 GB card is tight or short,
        // a 24 GB card fits.
        let small =
            evaluate("llama3.1:8b", &[gpu("a", 8_192.0, 1_500.0)], Some(4096)).expect("fit");
        assert_eq!(small.verdict, FitState::Tight, "{small:?}");
        assert!(small.notes.contains(&NOTE_UNVERIFIED.to_string()));
        assert!(small.refusal().is_none(), "tight is allowed");
        let big = evaluate("llama3.1:8b", &[gpu("a", 24_564.0, 0.0)], Some(4096)).expect("fit");
        assert_eq!(big.verdict, FitState::Fits);
        // Not in the table: allowed, with the note.
        let other = evaluate("qwen2.5-coder:32b", &[gpu("a", 8_192.0, 0.0)], None).expect("fit");
        assert_eq!(other.verdict, FitState::Unknown);
        assert_eq!(other.need_gib, None);
        assert!(other.notes.contains(&NOTE_NOT_IN_TABLE.to_string()));
        assert!(other.refusal().is_none());
        // No GPU reported: no verdict.
        let none = evaluate("qwen2.5:32b", &[], None).expect("fit");
        assert_eq!(none.verdict, FitState::Unknown);
        assert!(none.notes.contains(&NOTE_NO_GPU_INFO.to_string()));
    }

    #[test]
    fn gpus_are_chosen_by_uuid() {
        let all = [gpu("GPU-a", 1.0, 0.0), gpu("GPU-b", 2.0, 0.0)];
        assert_eq!(choose(&all, &[]).expect("all").len(), 2);
        let b = choose(&all, &["GPU-b".into()]).expect("b");
        assert_eq!(b[0].uuid.as_deref(), Some("GPU-b"));
        assert!(choose(&all, &["GPU-x".into()]).is_err());
    }
}
