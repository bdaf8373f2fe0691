//! Can this offer run PyTorch on its GPU? Container hosts (RunPod, Vast) cannot upgrade their
//! driver, so the host's CUDA bounds the wheels: an offer runs PyTorch when some published wheel
//! both has kernels for the GPU's architecture (the compat tables' arch lists) and needs no newer
//! CUDA than the host reports. An RTX 5090 (sm_120) needs a cu128 wheel, so a 12.4 host cannot.
//! Unknown (a VM whose driver comes with its image, or a GPU not in the catalog) stays unknown.

use crate::catalog::{parse_cc, Catalog};
use crate::compat::version::CudaVer;
use crate::compat::{arch_runs, Compat};

use super::{ProviderKind, ProviderOffer, TrafficCost};

const TRAFFIC_CSV: &str = include_str!("../../data/provider-traffic.csv");

#[derive(Debug, serde::Deserialize)]
struct TrafficRow {
    provider: String,
    basis: String,
    download_usd_per_gb: Option<f64>,
    upload_usd_per_gb: Option<f64>,
    source: String,
}

/// What traffic costs on a provider whose offers carry no traffic price
/// (`data/provider-traffic.csv`: RunPod and Lambda list none, `not_listed`, with the source);
/// `None` for a provider without a row (Vast: each ask lists its own).
pub fn traffic_default(kind: ProviderKind) -> Option<TrafficCost> {
    let mut r = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(TRAFFIC_CSV.as_bytes());
    r.deserialize::<TrafficRow>()
        .filter_map(Result::ok)
        .find(|row| row.provider == kind.as_str())
        .map(|row| TrafficCost {
            basis: row.basis,
            download_usd_per_gb: row.download_usd_per_gb,
            upload_usd_per_gb: row.upload_usd_per_gb,
            source: row.source,
        })
}

/// The compute capability of a provider's GPU name, from the catalog card it names.
pub fn gpu_cc(catalog: &Catalog, gpu: &str, vram_gib: Option<f64>) -> Option<(u32, u32)> {
    gpu_card(catalog, gpu, vram_gib).and_then(|c| parse_cc(&c.compute_capability))
}

/// A GPU name split into what identifies the model and what only describes it: `NVIDIA
/// A100-SXM4-80GB` → model `a100`, 80 GB, SXM; `Tesla T4` → `t4`; `H100 (80 GB SXM5)` → `h100`,
/// 80 GB, SXM.
#[derive(Debug, PartialEq)]
pub(crate) struct GpuName {
    pub model: String,
    pub vram_gb: Option<f64>,
    /// `sxm`, `pcie` or `nvl` where the name says (HBM3 on an H100 is the SXM part).
    pub form: Option<&'static str>,
}

/// Lower-case alphanumeric tokens.
pub(crate) fn tokens(s: &str) -> Vec<String> {
    s.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}

pub(crate) fn parse_gpu_name(s: &str) -> GpuName {
    let t = tokens(s);
    let mut model = String::new();
    let mut vram = None;
    let mut form = None;
    let mut i = 0;
    while i < t.len() {
        let w = t[i].as_str();
        let num: Option<f64> = w.parse().ok();
        if let (Some(n), Some("gb")) = (num, t.get(i + 1).map(String::as_str)) {
            vram = Some(n);
            i += 2;
            continue;
        }
        if let Some(n) = w.strip_suffix("gb").and_then(|n| n.parse::<f64>().ok()) {
            vram = Some(n);
        } else if w.starts_with("sxm") || w == "hbm3" || w == "hgx" {
            form = form.or(Some("sxm"));
        } else if w == "pcie" {
            form = Some("pcie");
        } else if w == "nvl" {
            form = Some("nvl");
        } else if !matches!(
            w,
            "nvidia" | "geforce" | "tesla" | "generation" | "gb" | "hbm2" | "hbm2e" | "hbm3e"
        ) {
            model.push_str(w);
        }
        i += 1;
    }
    GpuName {
        model,
        vram_gb: vram,
        form,
    }
}

/// The catalog card a provider's GPU name names, checked against the memory the offer reports
/// (`vram_gib`, else the memory in the name): the model must be the same (`A10` is not `A100`),
/// a card whose memory differs by more than 10 % is no match (`A100 (80 GB SXM4)` is not the
/// 40 GB card; an H100 NVL's 94 GB is not the 80 GB SXM), and the form factor the name states
/// picks between variants.
pub fn gpu_card<'c>(
    catalog: &'c Catalog,
    gpu: &str,
    vram_gib: Option<f64>,
) -> Option<&'c crate::catalog::Card> {
    let want = parse_gpu_name(gpu);
    if want.model.len() < 2 {
        return None;
    }
    let vram = vram_gib.or(want.vram_gb);
    let cands: Vec<(&crate::catalog::Card, GpuName)> = catalog
        .cards()
        .iter()
        .map(|c| (c, parse_gpu_name(&c.name)))
        .filter(|(_, n)| n.model == want.model)
        .filter(|(c, _)| vram.is_none_or(|v| (c.vram_gb - v).abs() <= 0.10 * c.vram_gb))
        .collect();
    let form_ok: Vec<&(&crate::catalog::Card, GpuName)> = match want.form {
        Some(f) => cands.iter().filter(|(_, n)| n.form == Some(f)).collect(),
        None => cands.iter().collect(),
    };
    if want.form.is_some() && form_ok.is_empty() {
        // The name says a form the catalog does not have (an H100 NVL): no card.
        return None;
    }
    form_ok.first().map(|(c, _)| *c)
}

/// Mark an offer: `runs_pytorch` and the newest wheel that fits (`2.8.0+cu128`), and what its
/// traffic costs where the provider's listing did not say ([`traffic_default`]).
pub fn annotate(offer: &mut ProviderOffer, catalog: &Catalog, compat: &Compat) {
    offer.card_id = gpu_card(catalog, &offer.gpu, offer.vram_gib).map(|c| c.id.clone());
    if offer.traffic.is_none() {
        offer.traffic = traffic_default(offer.provider);
    }
    let Some(host) = offer.host_cuda.as_deref().and_then(CudaVer::parse) else {
        return;
    };
    let Some(cc) = gpu_cc(catalog, &offer.gpu, offer.vram_gib) else {
        return;
    };
    let best = compat
        .wheels()
        .iter()
        .filter(|w| w.cuda <= host && arch_runs(&w.arch_list, cc).is_some())
        .max_by(|a, b| a.torch.cmp(&b.torch).then(a.cuda.cmp(&b.cuda)));
    offer.runs_pytorch = Some(best.is_some());
    offer.best_torch = best.map(|w| format!("{}+{}", w.torch, w.variant));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared test offer with a host CUDA (`annotate` reads only the GPU and the host CUDA).
    fn offer(gpu: &str, cuda: Option<&str>) -> ProviderOffer {
        ProviderOffer {
            host_cuda: cuda.map(String::from),
            ..crate::providers::tests::offer(gpu, 1, None, 1.0)
        }
    }

    #[test]
    fn traffic_is_listed_per_ask_or_said_to_be_not_listed_with_its_source() {
        for k in [ProviderKind::Runpod, ProviderKind::Lambda] {
            let t = traffic_default(k).expect("row");
            assert_eq!(t.basis, "not_listed");
            assert_eq!((t.download_usd_per_gb, t.upload_usd_per_gb), (None, None));
            assert!(t.source.contains("spec"), "{t:?}");
        }
        assert_eq!(traffic_default(ProviderKind::Vast), None);
        let (cat, compat) = (
            Catalog::bundled().expect("cat"),
            Compat::bundled().expect("compat"),
        );
        let mut o = ProviderOffer {
            provider: ProviderKind::Runpod,
            ..offer("NVIDIA GeForce RTX 4090", Some("12.8"))
        };
        annotate(&mut o, cat, compat);
        assert_eq!(o.traffic.map(|t| t.basis).as_deref(), Some("not_listed"));
    }

    #[test]
    fn a_blackwell_card_needs_a_new_enough_host() {
        let (cat, compat) = (
            Catalog::bundled().expect("cat"),
            Compat::bundled().expect("compat"),
        );
        assert_eq!(gpu_cc(cat, "NVIDIA GeForce RTX 4090", None), Some((8, 9)));
        assert_eq!(gpu_cc(cat, "RTX 4090", None), Some((8, 9)));
        assert_eq!(
            gpu_card(cat, "NVIDIA GeForce RTX 4090", None).map(|c| c.id.as_str()),
            Some("rtx-4090")
        );
        let mut old = offer("NVIDIA GeForce RTX 5090", Some("12.4"));
        annotate(&mut old, cat, compat);
        assert_eq!(old.runs_pytorch, Some(false), "{old:?}");
        let mut new = offer("NVIDIA GeForce RTX 5090", Some("12.8"));
        annotate(&mut new, cat, compat);
        assert_eq!(new.runs_pytorch, Some(true), "{new:?}");
        assert!(
            new.best_torch
                .as_deref()
                .is_some_and(|t| t.contains("cu12")),
            "{new:?}"
        );
        let mut ada = offer("RTX 4090", Some("12.4"));
        annotate(&mut ada, cat, compat);
        assert_eq!(ada.runs_pytorch, Some(true), "{ada:?}");
        let mut vm = offer("H100 (80 GB SXM5)", None);
        annotate(&mut vm, cat, compat);
        assert_eq!(vm.runs_pytorch, None, "a VM's driver is its image's");
        assert_eq!(
            vm.card_id.as_deref(),
            Some("h100-sxm"),
            "joined even without a host CUDA"
        );
    }

    #[test]
    fn provider_gpu_names_map_to_their_card_checked_by_memory() {
        let cat = Catalog::bundled().expect("cat");
        let id = |gpu: &str, vram: Option<f64>| gpu_card(cat, gpu, vram).map(|c| c.id.clone());
        // RunPod ids.
        assert_eq!(
            id("NVIDIA H100 80GB HBM3", Some(80.0)).as_deref(),
            Some("h100-sxm")
        );
        assert_eq!(
            id("NVIDIA H100 PCIe", Some(80.0)).as_deref(),
            Some("h100-pcie")
        );
        assert_eq!(
            id("NVIDIA A100-SXM4-80GB", Some(80.0)).as_deref(),
            Some("a100-80gb-sxm")
        );
        assert_eq!(
            id("NVIDIA A100 80GB PCIe", Some(80.0)).as_deref(),
            Some("a100-80gb-pcie")
        );
        assert_eq!(id("NVIDIA H100 NVL", Some(94.0)), None, "no NVL card");
        // Vast names, with the ask's gpu_ram.
        assert_eq!(
            id("A100 SXM4", Some(80.0)).as_deref(),
            Some("a100-80gb-sxm")
        );
        assert_eq!(
            id("A100 SXM4", Some(40.0)).as_deref(),
            Some("a100-40gb-sxm")
        );
        assert_eq!(id("Tesla T4", Some(15.0)).as_deref(), Some("t4"));
        assert_eq!(id("NVIDIA L4", Some(22.5)).as_deref(), Some("l4"));
        assert_eq!(id("RTX 4090", Some(24.0)).as_deref(), Some("rtx-4090"));
        // Lambda descriptions carry the memory and the form.
        assert_eq!(
            id("A100 (80 GB SXM4)", None).as_deref(),
            Some("a100-80gb-sxm")
        );
        assert_eq!(
            id("A100 (40 GB SXM4)", None).as_deref(),
            Some("a100-40gb-sxm")
        );
        assert_eq!(id("H100 (80 GB SXM5)", None).as_deref(), Some("h100-sxm"));
        // An A10 is not an A100, and a memory that disagrees by more than 10 % is no match.
        assert_eq!(id("NVIDIA A10", Some(24.0)).as_deref(), Some("a10"));
        assert_eq!(id("A10", None).as_deref(), Some("a10"));
        assert_eq!(id("NVIDIA GeForce RTX 4090", Some(48.0)), None);
        assert_eq!(id("RTX 4090 D", Some(24.0)).as_deref(), Some("rtx-4090d"));
    }
}
