//! The GPU card catalog: specs transcribed into `data/gpus.csv` (with source ids and confidence),
//! parsed once, filtered for the UI and the CLI, and turned into plain-language advice.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::error::CoreError;

const GPUS_CSV: &str = include_str!("../data/gpus.csv");
const SOURCES_CSV: &str = include_str!("../data/gpu-sources.csv");

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Segment {
    Consumer,
    Workstation,
    Datacenter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

/// One plain-language statement about what a card is good for (or a caveat). The UI translates
/// each key; the numbers it needs are on the card itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Advice {
    /// Under 16 GB: small models or heavily quantized 7B only.
    SmallModelsOnly,
    /// 16–23 GB: 7–8B chat at 4/8-bit.
    Infer7bQuantized,
    /// 24 GB+: 7–13B inference (13B at 8-bit or less), LoRA of 7–8B.
    Infer7To13bAndLora,
    /// 40 GB+: QLoRA of a 70B at 48 GB, 30B-class inference; 70B at 4-bit from 48 GB.
    Qlora70bAndInfer70bQ4,
    /// 80 GB+: 70B inference at 8-bit on one card (bf16 on two), full fine-tune of 7B across a few.
    Large70bAndFullFinetune,
    /// Data-center card with NVLink and 80 GB+: multi-GPU training and pre-training.
    MultiGpuTraining,
    /// No NVLink: multi-GPU jobs talk over PCIe, fine for inference and data-parallel LoRA,
    /// slow for tensor-parallel training.
    PcieOnlyMultiGpu,
    /// Compute capability < 8.0: no bf16; use fp16 (`--dtype half` in vLLM).
    NoBf16,
    /// FP8 tensor cores (Ada, Hopper, Blackwell).
    Fp8,
    /// Blackwell consumer (sm_120): needs a recent PyTorch built for CUDA 12.8+.
    NeedsRecentPytorch,
    /// Memory bandwidth decides LLM decode speed; `decode_ceiling_tps_7b_q4` is the ceiling.
    BandwidthDecidesDecode,
}

/// A GPU model as sold/rented. TFLOPS are dense; `None` means the card has no such mode or the
/// value is not known. Field names carry units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Card {
    pub id: String,
    pub name: String,
    pub segment: Segment,
    pub architecture: String,
    pub launch_year: u16,
    pub vram_gb: f64,
    pub memory_type: String,
    pub mem_bw_gbps: f64,
    /// Tensor BF16/FP16 with FP32 accumulate (what training uses).
    pub bf16_dense_tflops: Option<f64>,
    pub fp16_dense_tflops_fp16acc: Option<f64>,
    pub fp8_dense_tflops: Option<f64>,
    pub fp32_tflops: Option<f64>,
    pub tdp_w: Option<f64>,
    /// "8.6", "9.0", "12.0".
    pub compute_capability: String,
    pub bf16_supported: bool,
    pub fp8_supported: bool,
    pub nvlink: bool,
    pub nvlink_gbps: Option<f64>,
    pub pcie_gen: Option<u8>,
    pub ecc: bool,
    pub form_factor: String,
    pub confidence: Confidence,
    /// Field names (as above) whose values could not be confirmed from a primary source.
    pub unverified: Vec<String>,
    /// Source ids, resolvable with [`Catalog::source`].
    pub sources: Vec<String>,
    pub notes: String,
    /// Derived: plain-language advice keys, most important first.
    pub advice: Vec<Advice>,
    /// Derived: the bandwidth ceiling of decode speed for a 7–8B model at 4-bit (Q4_K_M, 4.68 GB of
    /// weights): every generated token reads all weights once. Real engines reach 50–80 % of it.
    pub decode_ceiling_tps_7b_q4: f64,
}

/// Weights of a Llama-3.1-8B-class model at Q4_K_M in GB (llama.cpp quantize table, S31).
const Q4_7B_WEIGHTS_GB: f64 = 4.68;

#[derive(Debug, Deserialize)]
struct Row {
    id: String,
    name: String,
    segment: String,
    architecture: String,
    launch_year: u16,
    vram_gb: f64,
    memory_type: String,
    mem_bw_gbps: f64,
    bf16_dense_tflops: Option<f64>,
    fp16_dense_tflops_fp16acc: Option<f64>,
    fp8_dense_tflops: Option<f64>,
    fp32_tflops: Option<f64>,
    tdp_w: Option<f64>,
    compute_capability: String,
    bf16_supported: String,
    fp8_supported: String,
    nvlink: String,
    nvlink_gbps: Option<f64>,
    pcie_gen: Option<u8>,
    ecc: String,
    form_factor: String,
    confidence: String,
    unverified: String,
    sources: String,
    notes: String,
}

fn yes(field: &str, v: &str, id: &str) -> Result<bool, CoreError> {
    match v {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(CoreError::BundledData(format!(
            "gpus.csv {id}.{field}: expected yes/no, got {v:?}"
        ))),
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Row {
    fn into_card(self) -> Result<Card, CoreError> {
        let id = self.id.clone();
        let segment = match self.segment.as_str() {
            "consumer" => Segment::Consumer,
            "workstation" => Segment::Workstation,
            "datacenter" => Segment::Datacenter,
            s => {
                return Err(CoreError::BundledData(format!(
                    "gpus.csv {id}: unknown segment {s:?}"
                )))
            }
        };
        let confidence = match self.confidence.as_str() {
            "high" => Confidence::High,
            "medium" => Confidence::Medium,
            "low" => Confidence::Low,
            s => {
                return Err(CoreError::BundledData(format!(
                    "gpus.csv {id}: unknown confidence {s:?}"
                )))
            }
        };
        let mut card = Card {
            bf16_supported: yes("bf16_supported", &self.bf16_supported, &id)?,
            fp8_supported: yes("fp8_supported", &self.fp8_supported, &id)?,
            nvlink: yes("nvlink", &self.nvlink, &id)?,
            ecc: yes("ecc", &self.ecc, &id)?,
            id: self.id,
            name: self.name,
            segment,
            architecture: self.architecture,
            launch_year: self.launch_year,
            vram_gb: self.vram_gb,
            memory_type: self.memory_type,
            mem_bw_gbps: self.mem_bw_gbps,
            bf16_dense_tflops: self.bf16_dense_tflops,
            fp16_dense_tflops_fp16acc: self.fp16_dense_tflops_fp16acc,
            fp8_dense_tflops: self.fp8_dense_tflops,
            fp32_tflops: self.fp32_tflops,
            tdp_w: self.tdp_w,
            compute_capability: self.compute_capability,
            nvlink_gbps: self.nvlink_gbps,
            pcie_gen: self.pcie_gen,
            form_factor: self.form_factor,
            confidence,
            unverified: split_list(&self.unverified),
            sources: split_list(&self.sources),
            notes: self.notes,
            advice: Vec::new(),
            decode_ceiling_tps_7b_q4: 0.0,
        };
        card.advice = advice_for(&card);
        card.decode_ceiling_tps_7b_q4 = (card.mem_bw_gbps / Q4_7B_WEIGHTS_GB).round();
        Ok(card)
    }
}

/// Compute capability as (major, minor); "12.0" -> (12, 0).
pub fn parse_cc(cc: &str) -> Option<(u32, u32)> {
    let (a, b) = cc.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Plain-language advice from the specs (rules from the user guides, numbers from the catalog).
pub fn advice_for(card: &Card) -> Vec<Advice> {
    let mut out = Vec::new();
    let vram = card.vram_gb;
    if vram < 16.0 {
        out.push(Advice::SmallModelsOnly);
    } else if vram < 24.0 {
        out.push(Advice::Infer7bQuantized);
    } else if vram < 40.0 {
        out.push(Advice::Infer7To13bAndLora);
    } else if vram < 80.0 {
        out.push(Advice::Qlora70bAndInfer70bQ4);
    } else {
        out.push(Advice::Large70bAndFullFinetune);
    }
    if card.segment == Segment::Datacenter && card.nvlink && vram >= 80.0 {
        out.push(Advice::MultiGpuTraining);
    }
    out.push(Advice::BandwidthDecidesDecode);
    if !card.nvlink {
        out.push(Advice::PcieOnlyMultiGpu);
    }
    if !card.bf16_supported {
        out.push(Advice::NoBf16);
    }
    if card.fp8_supported {
        out.push(Advice::Fp8);
    }
    if parse_cc(&card.compute_capability).is_some_and(|(major, _)| major >= 12) {
        out.push(Advice::NeedsRecentPytorch);
    }
    out
}

/// Filter for listing cards. All fields optional; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct CardFilter {
    /// Minimum VRAM in decimal GB (as vendors quote it).
    #[ts(optional)]
    pub min_vram_gb: Option<f64>,
    #[ts(optional)]
    pub segment: Option<Segment>,
    /// Case-insensitive substring of the name or id.
    #[ts(optional)]
    pub text: Option<String>,
}

impl CardFilter {
    pub fn validate(&self) -> Result<(), CoreError> {
        if let Some(v) = self.min_vram_gb {
            if !v.is_finite() || v < 0.0 {
                return Err(CoreError::invalid(
                    "min_vram_gb",
                    "must be a number of GB, 0 or more",
                ));
            }
        }
        Ok(())
    }

    pub fn matches(&self, c: &Card) -> bool {
        self.min_vram_gb.is_none_or(|m| c.vram_gb >= m)
            && self.segment.is_none_or(|s| c.segment == s)
            && self.text.as_deref().is_none_or(|t| {
                let t = t.trim().to_lowercase();
                t.is_empty() || c.name.to_lowercase().contains(&t) || c.id.contains(&t)
            })
    }
}

/// A source a catalog value cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Source {
    pub id: String,
    pub description: String,
}

/// The bundled catalog.
#[derive(Debug)]
pub struct Catalog {
    cards: Vec<Card>,
    sources: BTreeMap<String, String>,
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes())
}

impl Catalog {
    /// The catalog compiled into this build (parsed once).
    pub fn bundled() -> Result<&'static Catalog, CoreError> {
        static CELL: OnceLock<Result<Catalog, String>> = OnceLock::new();
        CELL.get_or_init(|| Catalog::parse(GPUS_CSV, SOURCES_CSV).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| CoreError::BundledData(e.clone()))
    }

    pub fn parse(gpus_csv: &str, sources_csv: &str) -> Result<Catalog, CoreError> {
        let bad = |e: csv::Error| CoreError::BundledData(e.to_string());
        let mut cards = Vec::new();
        for row in reader(gpus_csv).deserialize::<Row>() {
            cards.push(row.map_err(bad)?.into_card()?);
        }
        let mut sources = BTreeMap::new();
        for rec in reader(sources_csv).deserialize::<Source>() {
            let s = rec.map_err(bad)?;
            sources.insert(s.id, s.description);
        }
        for c in &cards {
            for s in &c.sources {
                if !sources.contains_key(s) {
                    return Err(CoreError::BundledData(format!(
                        "card {} cites unknown source {s}",
                        c.id
                    )));
                }
            }
        }
        Ok(Catalog { cards, sources })
    }

    pub fn cards(&self) -> &[Card] {
        &self.cards
    }

    pub fn get(&self, id: &str) -> Result<&Card, CoreError> {
        self.cards
            .iter()
            .find(|c| c.id == id)
            .ok_or_else(|| CoreError::UnknownCard(id.to_string()))
    }

    /// Cards matching the filter, in catalog order.
    pub fn list(&self, filter: &CardFilter) -> Result<Vec<Card>, CoreError> {
        filter.validate()?;
        Ok(self
            .cards
            .iter()
            .filter(|c| filter.matches(c))
            .cloned()
            .collect())
    }

    pub fn source(&self, id: &str) -> Option<Source> {
        self.sources.get(id).map(|d| Source {
            id: id.to_string(),
            description: d.clone(),
        })
    }

    /// The sources a card cites, resolved.
    pub fn sources_for(&self, card: &Card) -> Vec<Source> {
        card.sources.iter().filter_map(|s| self.source(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat() -> &'static Catalog {
        Catalog::bundled().expect("bundled catalog parses")
    }

    #[test]
    fn every_reference_card_is_present_with_sources() {
        let c = cat();
        assert_eq!(c.cards().len(), 29);
        for card in c.cards() {
            assert!(!card.sources.is_empty(), "{} has no source", card.id);
            assert!(card.vram_gb > 0.0 && card.mem_bw_gbps > 0.0, "{}", card.id);
            assert!(parse_cc(&card.compute_capability).is_some(), "{}", card.id);
        }
    }

    #[test]
    fn spot_check_values_against_the_reference() {
        let c = cat();
        let h100 = c.get("h100-sxm").expect("h100");
        assert_eq!(h100.vram_gb, 80.0);
        assert_eq!(h100.mem_bw_gbps, 3350.0);
        assert_eq!(h100.bf16_dense_tflops, Some(989.4));
        assert_eq!(h100.nvlink_gbps, Some(900.0));
        let t4 = c.get("t4").expect("t4");
        assert_eq!(t4.bf16_dense_tflops, None);
        assert!(!t4.bf16_supported);
        assert!(t4.advice.contains(&Advice::NoBf16));
        let r5090 = c.get("rtx-5090").expect("5090");
        assert_eq!(r5090.unverified, vec!["bf16_dense_tflops".to_string()]);
        assert!(r5090.advice.contains(&Advice::NeedsRecentPytorch));
    }

    #[test]
    fn filter_80gb_has_big_cards_only() {
        let f = CardFilter {
            min_vram_gb: Some(80.0),
            ..Default::default()
        };
        let ids: Vec<String> = cat()
            .list(&f)
            .expect("list")
            .into_iter()
            .map(|c| c.id)
            .collect();
        for want in [
            "h100-sxm",
            "h200-sxm",
            "a100-80gb-sxm",
            "a100-80gb-pcie",
            "b200",
        ] {
            assert!(ids.iter().any(|i| i == want), "{want} missing from {ids:?}");
        }
        assert!(!ids.iter().any(|i| i == "rtx-4090"));
        assert!(ids
            .iter()
            .all(|i| cat().get(i).expect("card").vram_gb >= 80.0));
    }

    #[test]
    fn filter_by_text_and_segment() {
        let f = CardFilter {
            text: Some("4090".into()),
            segment: Some(Segment::Consumer),
            ..Default::default()
        };
        let ids: Vec<String> = cat()
            .list(&f)
            .expect("list")
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, vec!["rtx-4090", "rtx-4090d"]);
    }

    #[test]
    fn bad_filter_is_an_input_error() {
        let f = CardFilter {
            min_vram_gb: Some(-1.0),
            ..Default::default()
        };
        assert!(matches!(
            cat().list(&f),
            Err(CoreError::InvalidInput { .. })
        ));
    }

    #[test]
    fn advice_follows_vram_classes() {
        let c = cat();
        assert_eq!(
            c.get("rtx-4090").expect("4090").advice[0],
            Advice::Infer7To13bAndLora
        );
        assert_eq!(
            c.get("l40s").expect("l40s").advice[0],
            Advice::Qlora70bAndInfer70bQ4
        );
        let h200 = c.get("h200-sxm").expect("h200");
        assert_eq!(h200.advice[0], Advice::Large70bAndFullFinetune);
        assert!(h200.advice.contains(&Advice::MultiGpuTraining));
        assert!(c
            .get("rtx-4090")
            .expect("4090")
            .advice
            .contains(&Advice::PcieOnlyMultiGpu));
    }

    #[test]
    fn decode_ceiling_is_bandwidth_over_weights() {
        // 1008 GB/s / 4.68 GB = 215 tokens/s ceiling for a 4-bit 7-8B model on a 4090.
        assert_eq!(
            cat()
                .get("rtx-4090")
                .expect("4090")
                .decode_ceiling_tps_7b_q4,
            215.0
        );
    }

    #[test]
    fn damaged_data_is_reported_not_panicked() {
        let bad = "id,name\nx,y\n";
        assert!(matches!(
            Catalog::parse(bad, SOURCES_CSV),
            Err(CoreError::BundledData(_))
        ));
    }

    #[test]
    fn every_source_is_resolvable() {
        let c = cat();
        for card in c.cards() {
            assert_eq!(c.sources_for(card).len(), card.sources.len());
        }
    }
}
