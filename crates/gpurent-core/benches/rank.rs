//! Ranking all catalog cards × 10,000 synthetic offers for one job (issue 3: must stay under 10 ms).
//! Run: `cargo bench -p gpurent-core --bench rank`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use gpurent_core::catalog::Catalog;
use gpurent_core::estimate::fit::{fit_card, rank_cards, rank_offers};
use gpurent_core::estimate::{CostSettings, Job, ModelCatalog, Offer, Resolved, Task};

fn offers(cards: &Catalog, n: usize) -> Vec<Offer> {
    // Deterministic synthetic prices (a small LCG), spread over every card.
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    (0..n)
        .map(|i| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let card = &cards.cards()[i % cards.cards().len()];
            Offer {
                card_id: card.id.clone(),
                price_per_gpu_hour: 0.2 + (x >> 40) as f64 / (1u64 << 24) as f64 * 4.0,
                spot_price_per_gpu_hour: (i % 3 == 0).then_some(0.1),
                ..Default::default()
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let cards = Catalog::bundled().expect("catalog");
    let models = ModelCatalog::bundled().expect("models");
    let job = Job {
        model: Some("llama-3.1-8b".into()),
        task: Task::Lora,
        train_tokens: Some(1e8),
        ..Default::default()
    };
    let r = Resolved::new(&job, models).expect("job");
    let offers = offers(cards, 10_000);
    let settings = CostSettings::default();
    c.bench_function("fit all cards + rank 10k offers", |b| {
        b.iter(|| {
            let mut fits: Vec<_> = cards
                .cards()
                .iter()
                .map(|card| fit_card(&r, card))
                .collect();
            rank_cards(&mut fits);
            black_box(rank_offers(&fits, black_box(&offers), &settings))
        })
    });
    let mut fits: Vec<_> = cards
        .cards()
        .iter()
        .map(|card| fit_card(&r, card))
        .collect();
    rank_cards(&mut fits);
    c.bench_function("rank 10k offers (fits precomputed)", |b| {
        b.iter(|| black_box(rank_offers(&fits, black_box(&offers), &settings)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
