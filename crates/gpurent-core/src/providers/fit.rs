//! Can this offer run PyTorch on its GPU? Container hosts (RunPod, Vast) cannot upgrade their
//! driver, so the host's CUDA bounds the wheels: an offer runs PyTorch when some published wheel
//! both has kernels for the GPU's architecture (the compat tables' arch lists) and needs no newer
//! CUDA than the host reports. An RTX 5090 (sm_120) needs a cu128 wheel, so a 12.4 host cannot.
//! Unknown (a VM whose driver comes with its image, or a GPU not in the catalog) stays unknown.

use crate::catalog::{parse_cc, Catalog};
use crate::compat::version::CudaVer;
use crate::compat::{arch_runs, Compat};

use super::Offer;

fn norm(s: &str) -> String {
    s.to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// The compute capability of a provider's GPU name, from the catalog card it names.
pub fn gpu_cc(catalog: &Catalog, gpu: &str) -> Option<(u32, u32)> {
    gpu_card(catalog, gpu).and_then(|c| parse_cc(&c.compute_capability))
}

/// The catalog card a provider's GPU name names.
pub fn gpu_card<'c>(catalog: &'c Catalog, gpu: &str) -> Option<&'c crate::catalog::Card> {
    // "H100 (80 GB SXM5)" → "h100"; "NVIDIA GeForce RTX 4090" → "nvidiageforcertx4090".
    let head = gpu.split('(').next().unwrap_or(gpu);
    let want = norm(head).replace("nvidia", "").replace("geforce", "");
    if want.len() < 3 {
        return None;
    }
    let named: Vec<(String, &crate::catalog::Card)> = catalog
        .cards()
        .iter()
        .map(|c| {
            (
                norm(&c.name).replace("nvidia", "").replace("geforce", ""),
                c,
            )
        })
        .collect();
    // The form factor the full name states ("H100 (80 GB SXM5)"): a card of that form wins.
    let full = norm(gpu);
    let form_miss = |n: &str| {
        ["sxm", "pcie", "nvl"]
            .iter()
            .filter(|f| full.contains(*f) && !n.contains(*f))
            .count()
    };
    // The exact name first, else the shortest catalog name containing it ("a10" is not "a100").
    named
        .iter()
        .find(|(n, _)| *n == want)
        .or_else(|| {
            named
                .iter()
                .filter(|(n, _)| n.contains(&want) || (n.len() >= 4 && want.contains(n.as_str())))
                .min_by_key(|(n, _)| (form_miss(n), n.len()))
        })
        .map(|(_, c)| *c)
}

/// Mark an offer: `runs_pytorch` and the newest wheel that fits (`2.8.0+cu128`).
pub fn annotate(offer: &mut Offer, catalog: &Catalog, compat: &Compat) {
    offer.card_id = gpu_card(catalog, &offer.gpu).map(|c| c.id.clone());
    let Some(host) = offer.host_cuda.as_deref().and_then(CudaVer::parse) else {
        return;
    };
    let Some(cc) = gpu_cc(catalog, &offer.gpu) else {
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
    fn offer(gpu: &str, cuda: Option<&str>) -> Offer {
        Offer {
            host_cuda: cuda.map(String::from),
            ..crate::providers::tests::offer(gpu, 1, None, 1.0)
        }
    }

    #[test]
    fn a_blackwell_card_needs_a_new_enough_host() {
        let (cat, compat) = (
            Catalog::bundled().expect("cat"),
            Compat::bundled().expect("compat"),
        );
        assert_eq!(gpu_cc(cat, "NVIDIA GeForce RTX 4090"), Some((8, 9)));
        assert_eq!(gpu_cc(cat, "RTX 4090"), Some((8, 9)));
        assert_eq!(
            gpu_card(cat, "NVIDIA GeForce RTX 4090").map(|c| c.id.as_str()),
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
}
