//! Black-box tests of `gpurent estimate` and `gpurent models`: run the built binary with a temporary
//! data directory and check the JSON document.

mod cli_common;

use cli_common::{fit, run_fresh as run};
use serde_json::Value;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn qwen_7b_bf16_transformers_breakdown_and_fits() {
    let (code, doc) = run(&[
        "estimate",
        "--model",
        "qwen2.5-7b",
        "--task",
        "infer",
        "--quant",
        "bf16",
        "--engine",
        "transformers",
        "--context",
        "2048",
        "--batch",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0);
    let b = &doc["per_gpu_gib"]["breakdown"];
    for key in [
        "weights",
        "kv_cache",
        "activations",
        "gradients",
        "optimizer",
        "overhead",
    ] {
        assert!(b[key].is_number(), "breakdown.{key} missing: {b}");
    }
    // 7.6B × 2 bytes = 14.19 GiB of weights; 56 KiB of KV per token.
    assert!((num(&b["weights"]) - 14.19).abs() < 0.05);
    assert!((num(&b["kv_cache"]) - 2048.0 * 57_344.0 / 1_073_741_824.0).abs() < 1e-6);
    let sum: f64 = [
        "weights",
        "kv_cache",
        "activations",
        "gradients",
        "optimizer",
        "overhead",
    ]
    .iter()
    .map(|k| num(&b[k]))
    .sum();
    assert!((sum - num(&doc["per_gpu_gib"]["total"])).abs() < 1e-9);
    assert_eq!(fit(&doc, "h100-sxm")["verdict"], "fits_on1");
    assert_eq!(fit(&doc, "rtx-4090")["verdict"], "fits_on1");
    assert_eq!(
        doc["fits"].as_array().expect("fits").len(),
        29,
        "one row per catalog card"
    );
    let s = &fit(&doc, "h100-sxm")["speed"];
    assert!(num(&s["decode_tokens_per_s"]) > 0.0);
    assert!(num(&s["prefill_tokens_per_s"]) > num(&s["decode_tokens_per_s"]));
}

#[test]
fn qlora_70b_fits_a_48gb_card_not_a_24gb_one() {
    let (code, doc) = run(&[
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--task",
        "qlora",
        "--grad-checkpointing",
        "--optimizer",
        "paged-adamw-8bit",
        "--lora-rank",
        "16",
        "--loss",
        "chunked",
        "--keep-16bit-embeddings",
        // At 2,048 tokens it needs 45.8 GiB: more than the 44.6 GiB an L40S shows with ECC on.
        "--context",
        "1024",
        "--json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(doc["quant"]["id"], "nf4_dq");
    assert_eq!(fit(&doc, "l40s")["verdict"], "fits_on1");
    assert_eq!(fit(&doc, "l40s")["ecc_reserve"], true);
    assert_ne!(fit(&doc, "rtx-4090")["verdict"], "fits_on1");
    assert!(doc["uncertain"]
        .as_array()
        .expect("uncertain")
        .iter()
        .any(|u| u["key"] == "paged_optimizer_residency"));
}

#[test]
fn prices_rank_offers_and_pretraining_time_is_24_6_days() {
    let (code, doc) = run(&[
        "estimate",
        "--params-b",
        "7",
        "--task",
        "pretrain",
        "--gpus",
        "8",
        "--tokens",
        "2e11",
        "--mfu",
        "0.5",
        "--price",
        "h100-sxm=2.0",
        "--price",
        "a100-80gb-sxm=1.2",
        "--billing",
        "per-started-hour",
        "--json",
    ]);
    assert_eq!(code, 0);
    let h100 = fit(&doc, "h100-sxm");
    assert_eq!(h100["gpus"], 8);
    assert!((num(&h100["speed"]["job_days"]) - 24.57).abs() < 0.05);
    let ranking = doc["ranking"].as_array().expect("ranking");
    assert_eq!(ranking.len(), 2);
    let costs: Vec<f64> = ranking
        .iter()
        .map(|r| num(&r["cost"]["total_cost"]))
        .collect();
    assert!(costs[0] <= costs[1]);
    // Billed hours are whole hours under per-started-hour billing.
    let billed = num(&ranking[0]["cost"]["billed_hours"]);
    assert_eq!(billed, billed.ceil());
    // A params-only model has no shape: activations are reported as uncertain, not guessed.
    assert!(doc["uncertain"]
        .as_array()
        .expect("uncertain")
        .iter()
        .any(|u| u["key"] == "activations_unknown_shape"));
}

#[test]
fn custom_model_shape_gives_kv_cache() {
    let (code, doc) = run(&[
        "estimate",
        "--params-b",
        "8.03",
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--heads",
        "32",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--intermediate",
        "14336",
        "--vocab",
        "128256",
        "--context",
        "8192",
        "--json",
    ]);
    assert_eq!(code, 0);
    // 128 KiB per token × 8,192 tokens = 1 GiB.
    assert!((num(&doc["per_gpu_gib"]["breakdown"]["kv_cache"]) - 1.0).abs() < 1e-9);
    assert_eq!(doc["kv_cache_bytes_per_token"], 131072.0);
}

#[test]
fn bad_input_is_a_json_error_with_exit_code_2() {
    let (code, doc) = run(&["estimate", "--model", "gpt-9", "--json"]);
    assert_eq!(code, 2);
    assert_eq!(doc["error"]["code"], "invalid_input");
    let (code, doc) = run(&[
        "estimate",
        "--model",
        "qwen2.5-7b",
        "--quant",
        "q4_k_m",
        "--json",
    ]);
    assert_eq!(code, 2, "GGUF in transformers must be refused: {doc}");
}

#[test]
fn models_lists_the_catalog_with_sources() {
    let (code, doc) = run(&["models", "--json"]);
    assert_eq!(code, 0);
    let models = doc["models"].as_array().expect("models");
    assert_eq!(models.len(), 10);
    assert!(models
        .iter()
        .all(|m| !m["source"].as_str().unwrap_or("").is_empty()));
    let quants = doc["quant_formats"].as_array().expect("quants");
    let awq = quants.iter().find(|q| q["id"] == "awq_int4").expect("awq");
    assert_eq!(awq["embeddings_16bit"], true);
}

/// `--currency` defaults to the settings' currency (here CNY, chosen with `gpurent settings`),
/// not USD; the text says every price with its currency's sign — the offers and the cheapest
/// offer read "¥…", never "N CNY" — and an explicit `--currency` still wins.
#[test]
fn prices_default_to_the_settings_currency_and_read_with_its_sign() {
    let dir = tempfile::tempdir().expect("tmp");
    let gpurent = |args: &[&str]| cli_common::gpurent(dir.path(), args);
    let out = gpurent(&["settings", "set", "--currency", "CNY", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let job = [
        "estimate",
        "--params-b",
        "7",
        "--task",
        "pretrain",
        "--gpus",
        "8",
        "--tokens",
        "2e11",
        "--mfu",
        "0.5",
        "--price",
        "h100-sxm=15",
    ];
    let out = gpurent(&[&job[..], &["--json"]].concat());
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["ranking"][0]["cost"]["currency"], "CNY", "{doc}");
    let out = gpurent(&job);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("¥120.00/h"), "8 × ¥15: {text}");
    let cheapest = text
        .lines()
        .find(|l| l.contains("cheapest of your prices"))
        .unwrap_or_else(|| panic!("no cheapest-offer line: {text}"));
    assert!(
        cheapest.contains("8 × h100-sxm, ¥") && !cheapest.contains("CNY"),
        "{cheapest}"
    );
    let out = gpurent(&[&job[..], &["--currency", "USD", "--json"]].concat());
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["ranking"][0]["cost"]["currency"], "USD", "{doc}");
}
