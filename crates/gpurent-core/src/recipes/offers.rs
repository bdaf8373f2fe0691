//! Live offers for a recipe: the offers whose host can start one of the recipe's images (the
//! offer's host CUDA against each image's CUDA line), each with the image it would boot and its
//! card's verdict for the recipe's job (Pick a card's sizing), ranked: cards that fit first, then
//! the cheapest. An offer left out is counted, by why.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::estimate::kinds::KindVerdict;
use crate::providers::ProviderOffer;

use super::Recipe;

/// One offer a recipe can run on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecipeOfferRow {
    pub offer: ProviderOffer,
    /// The recipe's image for the newest CUDA line the offer's host runs; `None` when the offer
    /// lists no host CUDA (a VM: its driver comes with the provider's image).
    pub image: Option<String>,
    /// The card's verdict for the recipe's job (`None`: no sizing for this job, or a GPU that is
    /// no catalog card).
    pub verdict: Option<KindVerdict>,
}

/// The offers for a recipe, and how many were left out and why.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, TS)]
pub struct RecipeOffers {
    pub rows: Vec<RecipeOfferRow>,
    /// Left out: the host's CUDA is older than every image of the recipe.
    pub host_too_old: u32,
    /// Left out: the card cannot hold the job (or is too old a GPU for it).
    pub card_too_small: u32,
}

/// A verdict that means the job does not run on that card.
fn cannot_run(v: KindVerdict) -> bool {
    matches!(v, KindVerdict::DoesNotFit | KindVerdict::NeedsNewerGpu)
}

/// Rank `offers` for `recipe`; `verdicts` maps a catalog card id to its verdict for the job.
pub fn rank(
    recipe: &Recipe,
    offers: Vec<ProviderOffer>,
    verdicts: &HashMap<String, KindVerdict>,
) -> RecipeOffers {
    let mut out = RecipeOffers::default();
    for offer in offers {
        let image = match &offer.host_cuda {
            Some(h) => match recipe.images_for_host_cuda(h).first() {
                Some(i) => Some(i.image.clone()),
                None => {
                    out.host_too_old += 1;
                    continue;
                }
            },
            None => None,
        };
        let verdict = offer
            .card_id
            .as_ref()
            .and_then(|c| verdicts.get(c))
            .copied();
        if verdict.is_some_and(cannot_run) {
            out.card_too_small += 1;
            continue;
        }
        out.rows.push(RecipeOfferRow {
            offer,
            image,
            verdict,
        });
    }
    // Known to fit first, then unknown, each cheapest first.
    let rank = |r: &RecipeOfferRow| match r.verdict {
        Some(KindVerdict::Fits) => 0,
        Some(KindVerdict::FitsQuantized | KindVerdict::FitsWithOffload) => 1,
        _ => 2,
    };
    out.rows.sort_by(|a, b| {
        rank(a).cmp(&rank(b)).then(
            a.offer
                .price_per_hour_usd
                .total_cmp(&b.offer.price_per_hour_usd),
        )
    });
    out
}
