//! Model shapes (`data/models.csv`) and weight formats (`data/quant-formats.csv`), and the
//! deterministic part of every estimate: how many parameters sit where, and how many bytes the
//! weights take.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::error::CoreError;

const MODELS_CSV: &str = include_str!("../../data/models.csv");
const QUANT_CSV: &str = include_str!("../../data/quant-formats.csv");

pub use crate::infra::units::GIB;

/// A transformer decoder's shape. Catalog rows have every field; a custom model may give only
/// `params_b` (then KV cache, activations and speed are reported as uncertain, not guessed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ModelSpec {
    pub id: String,
    /// Hugging Face repository the shape was read from (None for custom models).
    pub hf_repo: Option<String>,
    pub arch: Option<String>,
    /// Total parameters in billions as the model card / config states it.
    pub params_b: f64,
    pub layers: Option<u32>,
    pub hidden_size: Option<u32>,
    pub attention_heads: Option<u32>,
    pub kv_heads: Option<u32>,
    pub head_dim: Option<u32>,
    pub intermediate_size: Option<u32>,
    pub vocab_size: Option<u32>,
    pub tied_embeddings: bool,
    pub qkv_bias: bool,
    pub max_position_embeddings: Option<u32>,
    pub sliding_window: Option<u32>,
    pub context_note: String,
    /// Where the numbers come from.
    pub source: String,
}

/// The parameters that matter separately: token embedding, untied LM head, and the rest
/// (linear layers, norms, biases) — quantized formats treat them differently.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct ParamSplit {
    pub total: f64,
    pub embedding: f64,
    pub lm_head: f64,
    /// Everything else (what GPTQ/AWQ/bnb quantize).
    pub linear: f64,
    /// True when the count was computed from the full shape (exact); false when it is the
    /// catalog's rounded `params_b`.
    pub from_shape: bool,
}

impl ModelSpec {
    /// Everything the KV-cache and activation math need, or None for a params-only model.
    pub fn shape(&self) -> Option<Shape> {
        let layers = self.layers? as f64;
        let hidden = self.hidden_size? as f64;
        let heads = self.attention_heads? as f64;
        let kv_heads = self.kv_heads.or(self.attention_heads)? as f64;
        let head_dim = self.head_dim.map_or(hidden / heads, f64::from);
        Some(Shape {
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            intermediate: self.intermediate_size.map(f64::from),
            vocab: self.vocab_size.map(f64::from),
        })
    }

    /// Parameter split. With a full shape (incl. intermediate size and vocab) the count is computed
    /// from the architecture (gated MLP, GQA projections, optional QKV bias, RMSNorms); it agrees
    /// with the catalog's `params_b` within 1 % (tested) and is exact where the rounded figure isn't.
    pub fn params(&self) -> ParamSplit {
        let stated = self.params_b * 1e9;
        let shape = self.shape();
        let emb = shape
            .as_ref()
            .and_then(|s| s.vocab.map(|v| v * s.hidden))
            .unwrap_or(0.0);
        let head = if self.tied_embeddings { 0.0 } else { emb };
        if let Some(s) = shape.as_ref().filter(|s| s.intermediate.is_some()) {
            let i = s.intermediate.unwrap_or(0.0);
            let kv_w = s.kv_heads * s.head_dim;
            let q_w = s.heads * s.head_dim;
            let attn = s.hidden * q_w + 2.0 * s.hidden * kv_w + q_w * s.hidden;
            let bias = if self.qkv_bias { q_w + 2.0 * kv_w } else { 0.0 };
            let mlp = 3.0 * s.hidden * i;
            let norms = 2.0 * s.hidden;
            let linear = s.layers * (attn + bias + mlp + norms) + s.hidden;
            let total = linear + emb + head;
            // Use the shape only when it reproduces the stated size (architectures with extra
            // tensors, e.g. Gemma-2's four norms per layer, fall back to the stated count).
            if (total / stated - 1.0).abs() < 0.01 {
                return ParamSplit {
                    total,
                    embedding: emb,
                    lm_head: head,
                    linear,
                    from_shape: true,
                };
            }
        }
        ParamSplit {
            total: stated,
            embedding: emb,
            lm_head: head,
            linear: (stated - emb - head).max(0.0),
            from_shape: false,
        }
    }

    /// KV-cache bytes per token for all layers at the given element size:
    /// 2 (K and V) × layers × kv_heads × head_dim × bytes.
    pub fn kv_bytes_per_token(&self, bytes_per_element: f64) -> Option<f64> {
        let s = self.shape()?;
        Some(2.0 * s.layers * s.kv_heads * s.head_dim * bytes_per_element)
    }
}

/// Numeric view of a complete shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub layers: f64,
    pub hidden: f64,
    pub heads: f64,
    pub kv_heads: f64,
    pub head_dim: f64,
    pub intermediate: Option<f64>,
    pub vocab: Option<f64>,
}

/// How sure a data row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum QuantConfidence {
    High,
    Derived,
    Low,
}

/// A weight format with its effective bits per weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct QuantFormat {
    pub id: String,
    pub name: String,
    /// "gguf" (llama.cpp/Ollama files), "hf" (transformers/vLLM checkpoints) or "any".
    pub family: String,
    pub bits_per_weight: f64,
    /// Embeddings, LM head and norms stay 16-bit; only linear layers use `bits_per_weight`.
    pub embeddings_16bit: bool,
    pub confidence: QuantConfidence,
    pub sources: Vec<String>,
    pub notes: String,
}

impl QuantFormat {
    /// Weight bytes of a model in this format.
    pub fn weight_bytes(&self, p: &ParamSplit) -> f64 {
        if self.embeddings_16bit {
            p.linear * self.bits_per_weight / 8.0 + (p.embedding + p.lm_head) * 2.0
        } else {
            p.total * self.bits_per_weight / 8.0
        }
    }

    pub fn is_gguf(&self) -> bool {
        self.family == "gguf"
    }

    /// 4-bit GPTQ/AWQ/bnb: decode speed of their kernels at batch 1 is not bandwidth-bound in a
    /// way the snapshot lets us calibrate (see validation case D4).
    pub fn is_hf_low_bit(&self) -> bool {
        self.family == "hf" && self.bits_per_weight < 8.0
    }
}

#[derive(Debug, Deserialize)]
struct ModelRow {
    model_id: String,
    hf_repo: String,
    arch: String,
    params_b: f64,
    layers: u32,
    hidden_size: u32,
    num_attention_heads: u32,
    num_kv_heads: u32,
    head_dim: u32,
    intermediate_size: u32,
    vocab_size: u32,
    tied_embeddings: bool,
    qkv_bias: bool,
    max_position_embeddings: u32,
    context_note: String,
    sliding_window: Option<u32>,
    kv_bytes_per_token_fp16: f64,
    #[allow(dead_code)]
    kv_gib_at_32k_fp16: f64,
    source: String,
}

#[derive(Debug, Deserialize)]
struct QuantRow {
    id: String,
    name: String,
    family: String,
    bits_per_weight: f64,
    embeddings_16bit: String,
    confidence: String,
    sources: String,
    notes: String,
}

/// The bundled model and quantization catalogs.
#[derive(Debug)]
pub struct ModelCatalog {
    models: Vec<ModelSpec>,
    quants: Vec<QuantFormat>,
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes())
}

impl ModelCatalog {
    pub fn bundled() -> Result<&'static ModelCatalog, CoreError> {
        static CELL: OnceLock<Result<ModelCatalog, String>> = OnceLock::new();
        CELL.get_or_init(|| ModelCatalog::parse(MODELS_CSV, QUANT_CSV).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| CoreError::BundledData(e.clone()))
    }

    pub fn parse(models_csv: &str, quant_csv: &str) -> Result<ModelCatalog, CoreError> {
        let bad = |e: csv::Error| CoreError::BundledData(e.to_string());
        let mut models = Vec::new();
        for row in reader(models_csv).deserialize::<ModelRow>() {
            let r = row.map_err(bad)?;
            let m = ModelSpec {
                id: r.model_id,
                hf_repo: Some(r.hf_repo),
                arch: Some(r.arch),
                params_b: r.params_b,
                layers: Some(r.layers),
                hidden_size: Some(r.hidden_size),
                attention_heads: Some(r.num_attention_heads),
                kv_heads: Some(r.num_kv_heads),
                head_dim: Some(r.head_dim),
                intermediate_size: Some(r.intermediate_size),
                vocab_size: Some(r.vocab_size),
                tied_embeddings: r.tied_embeddings,
                qkv_bias: r.qkv_bias,
                max_position_embeddings: Some(r.max_position_embeddings),
                sliding_window: r.sliding_window,
                context_note: r.context_note,
                source: r.source,
            };
            let kv = m.kv_bytes_per_token(2.0).unwrap_or(0.0);
            if (kv - r.kv_bytes_per_token_fp16).abs() > 0.5 {
                return Err(CoreError::BundledData(format!(
                    "models.csv {}: kv_bytes_per_token_fp16 {} disagrees with the shape ({kv})",
                    m.id, r.kv_bytes_per_token_fp16
                )));
            }
            models.push(m);
        }
        let mut quants = Vec::new();
        for row in reader(quant_csv).deserialize::<QuantRow>() {
            let r = row.map_err(bad)?;
            let confidence = match r.confidence.as_str() {
                "high" => QuantConfidence::High,
                "derived" => QuantConfidence::Derived,
                "low" => QuantConfidence::Low,
                c => {
                    return Err(CoreError::BundledData(format!(
                        "quant-formats.csv {}: unknown confidence {c:?}",
                        r.id
                    )))
                }
            };
            quants.push(QuantFormat {
                id: r.id,
                name: r.name,
                family: r.family,
                bits_per_weight: r.bits_per_weight,
                embeddings_16bit: r.embeddings_16bit == "yes",
                confidence,
                sources: r
                    .sources
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                notes: r.notes,
            });
        }
        Ok(ModelCatalog { models, quants })
    }

    pub fn models(&self) -> &[ModelSpec] {
        &self.models
    }

    pub fn quants(&self) -> &[QuantFormat] {
        &self.quants
    }

    pub fn model(&self, id: &str) -> Result<&ModelSpec, CoreError> {
        let want = id.trim().to_lowercase();
        self.models
            .iter()
            .find(|m| m.id == want)
            .ok_or_else(|| CoreError::invalid(
                    "model",
                    format!("unknown model '{id}': pick one from the model list, or describe a custom model by its parameter count"),
                ))
    }

    pub fn quant(&self, id: &str) -> Result<&QuantFormat, CoreError> {
        let want = id.trim().to_lowercase().replace('-', "_");
        self.quants
            .iter()
            .find(|q| q.id == want)
            .ok_or_else(|| CoreError::invalid(
                    "quant",
                    format!("unknown weight format '{id}': use one of the listed formats (bf16, fp16, fp8, int8, nf4_dq, q4_k_m, …)"),
                ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat() -> &'static ModelCatalog {
        ModelCatalog::bundled().expect("bundled model catalog parses")
    }

    #[test]
    fn every_model_has_a_source_and_a_full_shape() {
        assert_eq!(cat().models().len(), 10);
        for m in cat().models() {
            assert!(!m.source.is_empty(), "{}", m.id);
            assert!(m.shape().is_some(), "{}", m.id);
        }
    }

    #[test]
    fn shape_count_matches_the_stated_size() {
        for m in cat().models() {
            let p = m.params();
            let rel = p.total / (m.params_b * 1e9) - 1.0;
            assert!(rel.abs() < 0.01, "{}: {} vs {}", m.id, p.total, m.params_b);
        }
        // Qwen2.5-7B: 1.09B embedding + head params (gpu-catalog.md section 4).
        let q = cat().model("qwen2.5-7b").expect("qwen").params();
        assert!(q.from_shape);
        assert!(((q.embedding + q.lm_head) / 1e9 - 1.09).abs() < 0.005);
    }

    #[test]
    fn gemma_with_extra_norms_falls_back_to_the_stated_count() {
        let g = cat().model("gemma-2-9b").expect("gemma").params();
        assert_eq!(g.lm_head, 0.0, "tied embeddings have no separate head");
        assert!((g.total - 9.24e9).abs() < 0.1e9);
    }

    #[test]
    fn unknown_ids_are_input_errors() {
        assert!(matches!(
            cat().model("gpt-9"),
            Err(CoreError::InvalidInput { .. })
        ));
        assert!(cat().quant("Q4_K_M").is_ok());
        assert!(cat().quant("q4-k-m").is_ok());
        assert!(cat().quant("q1").is_err());
    }

    #[test]
    fn damaged_model_data_is_an_error() {
        assert!(ModelCatalog::parse("model_id\nx\n", QUANT_CSV).is_err());
    }
}
