//! Offer searches against the stateful fake cloud (gpurent-testhost) behind Prism's validating
//! proxy, where the fake scopes and filters like the real APIs (issue 19):
//! - RunPod's catalog scopes `availability`, `dataCenters` and `cudaVersions` by the query's
//!   `count` and `cloud` (default SECURE): a community offer must carry the community cloud's
//!   own host CUDA, and a count no machine of a cloud has lists nothing there;
//! - Vast's search honours `num_gpus` and prices `dph_total` at the search's `allocated_storage`
//!   (default 8 GB): the offer gpurent shows must cost what the machine it creates (50 GB) bills.

use std::path::PathBuf;
use std::time::Duration;

use gpurent_core::infra::secret::Secret;
use gpurent_core::providers::http::HttpOptions;
use gpurent_core::providers::{
    self, ClientConfig, CreateRequest, KeyRegistration, OfferQuery, Provider, ProviderKind,
};
use gpurent_testhost::fakecloud::{FakeCloud, Flavor};
use gpurent_testhost::{prism_available, Prism};

fn spec(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/provider-specs")
        .join(file)
}

fn client(kind: ProviderKind, url: &str) -> Box<dyn Provider> {
    providers::client(
        kind,
        ClientConfig {
            base_url: url.to_string(),
            api_key: Secret::new("k"),
            http: HttpOptions {
                connect_timeout: Duration::from_secs(3),
                request_timeout: Duration::from_secs(5),
                read_attempts: 2,
                backoff_base: Duration::from_millis(50),
                max_wait: Duration::from_secs(5),
                min_intervals: vec![],
                extra_headers: vec![],
            },
            ssh_user: Some("gputest".into()),
            ssh_port: Some(2222),
        },
    )
    .expect("client")
}

fn count(n: u32) -> OfferQuery {
    OfferQuery {
        count: Some(n),
        ..OfferQuery::default()
    }
}

/// Defect: the catalog was read with no `cloud`, so community offers showed the secure cloud's
/// host CUDA and capacity (the spec: "Upstream default when omitted: SECURE").
#[test]
fn runpod_offers_carry_their_own_clouds_capacity_and_cuda() {
    if !prism_available() {
        eprintln!("skipped: no Prism (npm ci)");
        return;
    }
    let fake = FakeCloud::start(Flavor::Runpod, "k").expect("fake");
    fake.add_community_cloud();
    let prism = Prism::proxy(&spec("runpod-rest-v2.openapi.json"), &fake.url()).expect("prism");
    let c = client(ProviderKind::Runpod, &prism.url());

    let one = c.offers(&count(1), 0).expect("offers");
    let secure = one.iter().find(|o| o.tier.as_deref() == Some("secure"));
    let community = one.iter().find(|o| o.tier.as_deref() == Some("community"));
    let (secure, community) = (secure.expect("secure"), community.expect("community"));
    assert_eq!(secure.host_cuda.as_deref(), Some("12.8"), "{secure:?}");
    assert_eq!(
        community.host_cuda.as_deref(),
        Some("12.4"),
        "a community offer carries the community cloud's CUDA: {community:?}"
    );
    assert!((community.price_per_hour_usd - 0.31).abs() < 1e-9);

    // Six GPUs: only the secure cloud has machines that large.
    let six = c.offers(&count(6), 0).expect("offers");
    assert_eq!(
        six.iter().map(|o| o.offer_id.as_str()).collect::<Vec<_>>(),
        ["secure:6:NVIDIA GeForce RTX 4090"],
        "{six:?}"
    );
    assert!((six[0].price_per_hour_usd - 6.0 * 0.44).abs() < 1e-9);
    // The offer read again before a rent asks its own cloud.
    let again = c
        .offer("community:1:NVIDIA GeForce RTX 4090", 0)
        .expect("read")
        .expect("offered");
    assert_eq!(again.host_cuda.as_deref(), Some("12.4"));
    assert!(c.offers(&count(9), 0).expect("offers").is_empty());
    prism.assert_spec_kept("RunPod");
}

/// Defect: Vast's search priced an 8 GB disk (its default `allocated_storage`) while gpurent
/// creates 50 GB, so the price shown was not the price billed.
#[test]
fn vast_offer_price_is_the_price_the_created_machine_bills() {
    if !prism_available() {
        eprintln!("skipped: no Prism (npm ci)");
        return;
    }
    let fake = FakeCloud::start(Flavor::Vast, "k").expect("fake");
    let prism = Prism::proxy(&spec("vastai.openapi.yaml"), &fake.url()).expect("prism");
    let c = client(ProviderKind::Vast, &prism.url());

    // The GPU count filter is the server's.
    let two = c.offers(&count(2), 0).expect("offers");
    assert_eq!(
        two.iter().map(|o| o.offer_id.as_str()).collect::<Vec<_>>(),
        ["4243"],
        "{two:?}"
    );
    let offer = c
        .offers(&count(1), 0)
        .expect("offers")
        .into_iter()
        .find(|o| o.offer_id == "4242")
        .expect("4242");
    let read = c.offer("4242", 0).expect("read").expect("offered");
    assert_eq!(read.price_per_hour_usd, offer.price_per_hour_usd);

    let id = c
        .create(
            &CreateRequest {
                label: "gpurent-price".into(),
                offer_id: offer.offer_id.clone(),
                image: "pytorch/pytorch".into(),
                disk_gb: ProviderKind::Vast.spec().default_disk_gb,
                public_key: "ssh-ed25519 AAAA t".into(),
                key_label: "t".into(),
            },
            &KeyRegistration::Account,
        )
        .expect("create");
    let billed = c
        .get(&id)
        .expect("read")
        .and_then(|r| r.price_per_hour_usd)
        .expect("dph_total");
    assert!(
        (offer.price_per_hour_usd - billed).abs() < 1e-9,
        "shown {} but billed {billed}",
        offer.price_per_hour_usd
    );
    prism.assert_spec_kept("Vast");
}
