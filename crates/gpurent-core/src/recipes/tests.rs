//! Every bundled recipe parses and keeps the rules: tunnel-only ports on 127.0.0.1, an image per
//! CUDA line with a driver floor no lower than NVIDIA's for that line (`data/cuda-driver.csv`),
//! a job Pick a card knows, sources present.

use super::*;
use crate::estimate::kinds::KindCatalog;

const CUDA_DRIVER_CSV: &str = include_str!("../../data/cuda-driver.csv");

/// The lowest driver NVIDIA accepts for an app built on CUDA line `cuda` (its major's
/// minor-version-compatibility floor, column `minor_compat_linux_min`); None when the line is
/// not in the table.
fn nvidia_floor(cuda: &str) -> Option<String> {
    CUDA_DRIVER_CSV
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("cuda_version"))
        .find_map(|l| {
            let cols: Vec<&str> = l.split(',').collect();
            (cols.first() == Some(&cuda)).then(|| cols.get(6).map(|s| s.to_string()))?
        })
}

#[test]
fn every_bundled_recipe_parses_and_the_five_goals_are_there() {
    let all = all().expect("recipes");
    let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ollama-chat",
            "comfyui",
            "jupyter-pytorch",
            "whisper",
            "lora-training"
        ]
    );
    for r in &all {
        assert_eq!(validate(r), Ok(()), "{}", r.name);
        assert!(!r.goal.zh_cn.is_ascii(), "{}: zh-CN words", r.name);
    }
}

#[test]
fn every_port_is_reached_only_through_the_tunnel_on_loopback() {
    for r in all().expect("recipes") {
        for p in &r.ports {
            assert_eq!(p.bind, "127.0.0.1", "{}", r.name);
            assert_eq!(p.reach, PortReach::Tunnel, "{}", r.name);
        }
        assert!(!r.start.contains("0.0.0.0"), "{}", r.name);
        if r.app == RecipeApp::Web {
            assert!(
                r.start_command(8188).contains("127.0.0.1 --port 8188"),
                "{}",
                r.name
            );
        }
    }
}

#[test]
fn a_public_port_or_an_open_bind_cannot_be_written() {
    let text = FILES[1].1;
    // `reach` has one value: anything else does not parse.
    let public = text.replace("\"reach\": \"tunnel\"", "\"reach\": \"public\"");
    assert_ne!(public, text);
    assert!(parse("comfyui", &public).is_err());
    let open = text.replace("--listen 127.0.0.1", "--listen 0.0.0.0");
    assert_ne!(open, text);
    let e = parse("comfyui", &open).expect_err("0.0.0.0 refused");
    assert!(e.to_string().contains("every address"), "{e}");
    let bind = text.replace("\"bind\": \"127.0.0.1\"", "\"bind\": \"0.0.0.0\"");
    assert!(parse("comfyui", &bind).is_err());
    let unknown = text.replace("\"app\": \"web\"", "\"app\": \"web\", \"public\": true");
    assert!(
        parse("comfyui", &unknown).is_err(),
        "unknown fields refused"
    );
}

#[test]
fn every_image_has_a_driver_floor_at_or_above_nvidias_for_its_cuda_line() {
    for r in all().expect("recipes") {
        for i in &r.images {
            let floor = nvidia_floor(&i.cuda)
                .unwrap_or_else(|| panic!("{}: CUDA {} not in cuda-driver.csv", r.name, i.cuda));
            assert!(
                driver_at_least(&i.min_driver, &floor),
                "{}: {} needs at least {floor}, says {}",
                r.name,
                i.image,
                i.min_driver
            );
            assert!(
                i.source.contains("driver") || i.source.contains("Table 3"),
                "{}",
                r.name
            );
        }
    }
    // A toolkit-pinned image names NVIDIA's toolkit minimum exactly (12.8 GA: 570.26).
    let comfy = get("comfyui").expect("comfyui");
    assert_eq!(comfy.images[0].min_driver, "570.26");
    assert_eq!(comfy.images[1].min_driver, "580.65.06");
}

#[test]
fn images_are_filtered_by_the_host_driver() {
    let comfy = get("comfyui").expect("comfyui");
    let cuda = |d: &str| -> Vec<String> {
        comfy
            .images_for_driver(d)
            .iter()
            .map(|i| i.cuda.clone())
            .collect()
    };
    assert_eq!(cuda("580.95.05"), ["13.0", "12.8"], "newest line first");
    assert_eq!(
        cuda("570.124.06"),
        ["12.8"],
        "a cu130 image never on a 570 host"
    );
    assert_eq!(cuda("570.26"), ["12.8"]);
    assert!(cuda("565.57.01").is_empty());
    assert_eq!(comfy.min_driver(), Some("570.26"));
    assert!(driver_at_least("570.124.06", "570.26"));
    assert!(!driver_at_least("570.26", "570.124.06"));
    assert!(driver_at_least("580", "580"));
}

#[test]
fn every_job_is_one_pick_a_card_sizes() {
    let cat = KindCatalog::bundled().expect("kinds");
    for r in all().expect("recipes") {
        match &r.job {
            RecipeJob::Kind {
                kind,
                model,
                setting,
            } => {
                let rows: Vec<_> = cat.model_rows(*kind, model).collect();
                assert!(!rows.is_empty(), "{}: {model}", r.name);
                if let Some(s) = setting {
                    assert!(rows.iter().any(|f| &f.setting == s), "{}: {s}", r.name);
                }
            }
            RecipeJob::Llm { model } => {
                assert!(
                    crate::ollama::fit::resolve_tag(model)
                        .expect("tags")
                        .is_some(),
                    "{}: {model}",
                    r.name
                );
            }
            RecipeJob::Any => assert_eq!(r.app, RecipeApp::Jupyter, "{}", r.name),
        }
    }
}

#[test]
fn sources_and_unverified_marks_are_present() {
    for r in all().expect("recipes") {
        assert!(r.sources.iter().all(|s| !s.trim().is_empty()), "{}", r.name);
        assert!(!r.readiness.source.is_empty(), "{}", r.name);
        assert!(!r.unverified.is_empty(), "{}: say what was not run", r.name);
        for n in &r.not_shipped {
            assert!(!n.fetch.is_empty(), "{}", r.name);
        }
    }
}

#[test]
fn an_unknown_recipe_is_invalid_input_naming_the_recipes() {
    let e = get("stable-video").expect_err("unknown");
    assert_eq!(crate::Coded::code(&e), "invalid_input");
    assert!(e.to_string().contains("comfyui"), "{e}");
}

#[test]
fn offers_are_filtered_by_the_host_cuda_the_image_needs() {
    let comfy = get("comfyui").expect("comfyui");
    let lines = |h: &str| -> Vec<String> {
        comfy
            .images_for_host_cuda(h)
            .iter()
            .map(|i| i.image.clone())
            .collect()
    };
    assert_eq!(
        lines("13.0"),
        ["runpod/comfyui:cuda13.0", "runpod/comfyui:cuda12.8"]
    );
    assert_eq!(lines("12.8"), ["runpod/comfyui:cuda12.8"]);
    assert_eq!(lines("12.9"), ["runpod/comfyui:cuda12.8"]);
    assert!(
        lines("12.4").is_empty(),
        "a 12.4 host cannot start a cu128 image"
    );
}

fn offer(id: &str, host_cuda: Option<&str>, card: Option<&str>, price: f64) -> ProviderOffer {
    ProviderOffer {
        provider: crate::providers::ProviderKind::Runpod,
        offer_id: id.into(),
        gpu: "GPU".into(),
        gpu_count: 1,
        vram_gib: None,
        price_per_hour_usd: price,
        region: None,
        host_cuda: host_cuda.map(str::to_string),
        interruptible: false,
        tier: None,
        storage_usd_per_gb_month: None,
        fetched_ms: 0,
        runs_pytorch: None,
        best_torch: None,
        card_id: card.map(str::to_string),
        account: None,
        currency: crate::infra::currency::Currency::Usd,
        price_source: None,
        traffic: None,
    }
}

use crate::estimate::kinds::KindVerdict;
use crate::providers::ProviderOffer;

#[test]
fn offers_for_a_recipe_boot_the_image_of_the_hosts_cuda_line_and_leave_out_old_hosts_and_small_cards(
) {
    let comfy = get("comfyui").expect("comfyui");
    let verdicts: std::collections::HashMap<String, KindVerdict> = [
        ("rtx-4090".to_string(), KindVerdict::FitsQuantized),
        ("h100".to_string(), KindVerdict::Fits),
        ("rtx-3060".to_string(), KindVerdict::DoesNotFit),
    ]
    .into_iter()
    .collect();
    let got = offers::rank(
        &comfy,
        vec![
            offer("old-host", Some("12.4"), Some("h100"), 1.0),
            offer("4090-128", Some("12.8"), Some("rtx-4090"), 0.4),
            offer("h100-130", Some("13.0"), Some("h100"), 2.5),
            offer("3060", Some("12.8"), Some("rtx-3060"), 0.1),
            offer("vm", None, None, 0.2),
        ],
        &verdicts,
    );
    let ids: Vec<&str> = got.rows.iter().map(|r| r.offer.offer_id.as_str()).collect();
    // A card known to fit first, then one that fits quantized, then an unknown one.
    assert_eq!(ids, ["h100-130", "4090-128", "vm"]);
    assert_eq!(got.host_too_old, 1, "a CUDA 12.4 host runs no 12.8 image");
    assert_eq!(got.card_too_small, 1);
    assert_eq!(
        got.rows[0].image.as_deref(),
        Some("runpod/comfyui:cuda13.0")
    );
    assert_eq!(
        got.rows[1].image.as_deref(),
        Some("runpod/comfyui:cuda12.8"),
        "never the 13.0 image on a 12.8 host"
    );
    assert_eq!(got.rows[2].image, None, "a VM boots the provider's image");
}
