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
use gpurent_core::Coded;
use gpurent_testhost::fakecloud::{FakeCloud, Fault, Flavor, Route, VastAsk};
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
                // Through Prism; no request here is meant to time out (5 s could be reached by a
                // loaded machine).
                connect_timeout: Duration::from_secs(30),
                request_timeout: Duration::from_secs(30),
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

fn create_req(label: &str, offer_id: &str, image: &str) -> CreateRequest {
    CreateRequest {
        label: label.into(),
        offer_id: offer_id.into(),
        image: image.into(),
        disk_gb: 50,
        public_key: "ssh-ed25519 AAAA t".into(),
        key_label: "t".into(),
    }
}

/// Defect (issue 19): RunPod's create pinned no host CUDA, so a pod whose image is built for
/// CUDA 12.8 could land on a 12.4 host, whose driver cannot run it (a container host cannot
/// upgrade its driver). The create now sends the spec's `gpu.minCudaVersion` from the image's
/// CUDA line; the fake's scheduler places pods on the oldest host the floor allows and refuses
/// a floor no host of the cloud meets, as the spec says (a 400 capacity error).
#[test]
fn runpod_create_pins_the_host_cuda_its_image_needs() {
    if !prism_available() {
        eprintln!("skipped: no Prism (npm ci)");
        return;
    }
    let fake = FakeCloud::start(Flavor::Runpod, "k").expect("fake");
    fake.add_community_cloud();
    fake.place_pods_on_oldest_host();
    let prism = Prism::proxy(&spec("runpod-rest-v2.openapi.json"), &fake.url()).expect("prism");
    let c = client(ProviderKind::Runpod, &prism.url());
    let cu128 = "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404";
    let secure = "secure:1:NVIDIA GeForce RTX 4090";

    // The secure cloud has 12.4 and 12.8 hosts: the pin puts the pod on a 12.8 one.
    let id = c
        .create(
            &create_req("gpurent-cuda1", secure, cu128),
            &KeyRegistration::Account,
        )
        .expect("create");
    let pod = c.get(&id).expect("read").expect("pod");
    assert_eq!(
        pod.host_cuda.as_deref(),
        Some("12.8"),
        "a CUDA 12.8 image must not land on an older host: {pod:?}"
    );

    // The community cloud has only 12.4 hosts: refused as capacity, nothing made.
    let before = fake.creates_total();
    let e = c
        .create(
            &create_req(
                "gpurent-cuda2",
                "community:1:NVIDIA GeForce RTX 4090",
                cu128,
            ),
            &KeyRegistration::Account,
        )
        .expect_err("no host new enough");
    assert_eq!(e.code(), "insufficient_capacity", "{e:?}");
    assert_eq!(fake.creates_total(), before, "nothing was made");

    // An image whose CUDA line is unknown pins nothing (and may land on the oldest host).
    let id = c
        .create(
            &create_req("gpurent-cuda3", secure, "ubuntu:22.04"),
            &KeyRegistration::Account,
        )
        .expect("create");
    assert_eq!(
        c.get(&id).expect("read").expect("pod").host_cuda.as_deref(),
        Some("12.4")
    );
    prism.assert_spec_kept("RunPod");
}

fn ask(id: i64, gpu: &str, ram_mb: u64, usd: f64, verification: &str) -> VastAsk {
    VastAsk {
        id,
        gpu_name: gpu.into(),
        num_gpus: 1,
        gpu_ram_mb: ram_mb,
        usd_per_gpu_hour: usd,
        verification: verification.into(),
    }
}

/// Defect (issue 19): Vast's search fetched 64 unsorted asks and filtered them on the client, so
/// the cheapest ask, or the only ask of the GPU asked for, was missing whenever the market had
/// more than 64 asks in front of it; and unverified machines were listed unasked. The search now
/// filters (`gpu_name`, `num_gpus`, `gpu_ram`, `dph_total`, `verified`) and orders (`order`) on
/// the server, and lists unverified machines only when asked, each offer saying which.
#[test]
fn vast_search_filters_and_orders_on_the_server() {
    if !prism_available() {
        eprintln!("skipped: no Prism (npm ci)");
        return;
    }
    let fake = FakeCloud::start(Flavor::Vast, "k").expect("fake");
    // A market of 70 RTX 3090s, dearest first, the cheapest beyond the first 64; then one H100
    // and one cheap unverified machine, both at the end.
    for i in 0..70 {
        fake.add_vast_ask(ask(
            5000 + i,
            "RTX 3090",
            24576,
            0.30 - 0.002 * i as f64,
            "verified",
        ));
    }
    fake.add_vast_ask(ask(6000, "H100 SXM", 81920, 2.0, "verified"));
    fake.add_vast_ask(ask(6001, "RTX 3090", 24576, 0.05, "unverified"));
    let prism = Prism::proxy(&spec("vastai.openapi.yaml"), &fake.url()).expect("prism");
    let c = client(ProviderKind::Vast, &prism.url());

    let all = c.offers(&OfferQuery::default(), 0).expect("offers");
    let cheapest = all.first().expect("offers");
    assert_eq!(
        cheapest.offer_id, "5069",
        "the cheapest verified ask: {cheapest:?}"
    );
    assert!(
        all.iter().all(|o| o.tier.as_deref() == Some("verified")),
        "unverified machines only when asked: {all:?}"
    );
    assert!(all
        .windows(2)
        .all(|w| w[0].price_per_hour_usd <= w[1].price_per_hour_usd));

    let h100 = c
        .offers(
            &OfferQuery {
                gpu: Some("H100".into()),
                ..OfferQuery::default()
            },
            0,
        )
        .expect("offers");
    assert_eq!(
        h100.iter().map(|o| o.offer_id.as_str()).collect::<Vec<_>>(),
        ["6000"],
        "the server filters the GPU name: {h100:?}"
    );
    let big = c
        .offers(
            &OfferQuery {
                min_vram_gib: Some(80.0),
                ..OfferQuery::default()
            },
            0,
        )
        .expect("offers");
    assert_eq!(
        big.iter().map(|o| o.offer_id.as_str()).collect::<Vec<_>>(),
        ["6000"]
    );
    // A 24 GiB floor keeps the 24564 MB RTX 4090 the offer shows as 24.0 GiB.
    let q24 = OfferQuery {
        gpu: Some("4090".into()),
        min_vram_gib: Some(24.0),
        ..OfferQuery::default()
    };
    let r4090 = c.offers(&q24, 0).expect("offers");
    assert!(r4090.iter().any(|o| o.offer_id == "4242"), "{r4090:?}");
    let cheap = c
        .offers(
            &OfferQuery {
                max_price_per_hour_usd: Some(0.165),
                ..OfferQuery::default()
            },
            0,
        )
        .expect("offers");
    assert!(!cheap.is_empty() && cheap.iter().all(|o| o.price_per_hour_usd <= 0.165));

    // Asked for: the unverified machine too, marked as such.
    let with = c
        .offers(
            &OfferQuery {
                include_unverified: Some(true),
                ..OfferQuery::default()
            },
            0,
        )
        .expect("offers");
    let first = with.first().expect("offers");
    assert_eq!(first.offer_id, "6001");
    assert_eq!(first.tier.as_deref(), Some("unverified"));
    // An unverified ask is found again for the rent.
    assert!(c.offer("6001", 0).expect("read").is_some());

    // Each ask carries its traffic prices.
    let t = cheapest.traffic.as_ref().expect("traffic listed");
    assert_eq!(t.basis, "listed");
    assert_eq!(t.download_usd_per_gb, Some(0.004));
    assert_eq!(t.upload_usd_per_gb, Some(0.008));

    // A listing that cannot be read is an error, never "no offers".
    fake.push_fault(Route::Offers, Fault::Garbage);
    let e = c
        .offers(&OfferQuery::default(), 0)
        .expect_err("unparseable");
    assert_eq!(e.code(), "listing_unparseable", "{e:?}");
    prism.assert_spec_kept("Vast");
}
