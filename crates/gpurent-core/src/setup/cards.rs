//! nvidia-smi / torch GPU names -> catalog cards. The driver's names differ from the catalog's
//! ("NVIDIA H100 80GB HBM3" is the H100 SXM5, "NVIDIA A100-SXM4-40GB" the A100 40GB SXM4), so
//! names are compared as token sets, with the few aliases the driver uses.

use crate::catalog::Card;

fn tokens(name: &str) -> Vec<String> {
    let mut t: Vec<String> = name
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty() && !matches!(*s, "nvidia" | "geforce" | "tesla"))
        .map(String::from)
        .collect();
    // The H100 SXM5 reports as "H100 80GB HBM3"; the PCIe one as "H100 PCIe".
    if t.iter().any(|s| s == "hbm3") && t.iter().any(|s| s == "h100") {
        t.push("sxm5".into());
    }
    t
}

/// The catalog card for a GPU name, if one matches unambiguously.
pub fn match_card(name: &str, cards: &[Card]) -> Option<String> {
    let have = tokens(name);
    // Every token of the catalog name is in the GPU's name: take the most specific.
    let best = cards
        .iter()
        .map(|c| (c, tokens(&c.name)))
        .filter(|(_, t)| !t.is_empty() && t.iter().all(|x| have.contains(x)))
        .max_by_key(|(_, t)| t.len());
    if let Some((c, _)) = best {
        return Some(c.id.clone());
    }
    // Only the model is named ("NVIDIA H200"): match when a single card has that model and no
    // memory size in the name contradicts it.
    let model = have.first()?;
    let same: Vec<&Card> = cards
        .iter()
        .filter(|c| tokens(&c.name).first() == Some(model))
        .collect();
    let sized = have.iter().any(|t| t.ends_with("gb"));
    match (same.as_slice(), sized) {
        ([only], false) => Some(only.id.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_names_find_their_cards() {
        let cards = crate::catalog::Catalog::bundled().expect("catalog").cards();
        for (name, want) in [
            ("NVIDIA H100 80GB HBM3", Some("h100-sxm")),
            ("NVIDIA H100 PCIe", Some("h100-pcie")),
            ("NVIDIA A100-SXM4-40GB", Some("a100-40gb-sxm")),
            ("NVIDIA A100-SXM4-80GB", Some("a100-80gb-sxm")),
            ("NVIDIA GeForce RTX 4090", Some("rtx-4090")),
            ("NVIDIA GeForce RTX 5090", Some("rtx-5090")),
            ("NVIDIA H20", Some("h20")),
            ("NVIDIA H200", Some("h200-sxm")),
            ("Tesla V100-SXM2-32GB", Some("v100-sxm2-32gb")),
            ("Tesla V100-SXM2-16GB", None),
            ("NVIDIA TITAN V", None),
        ] {
            assert_eq!(match_card(name, cards).as_deref(), want, "{name}");
        }
    }
}
