//! Black-box tests of `gpurent job` (jobs beyond LLMs): the built binary, a temporary data
//! directory, the JSON document.

mod cli_common;

use cli_common::{fit, run_fresh as run};

#[test]
fn flux_nf4_on_24_48_80_gb_cards_with_time_and_cost_on_the_measured_gpu() {
    let (code, doc) = run(&[
        "job",
        "--kind",
        "image",
        "--model",
        "flux1-dev",
        "--precision",
        "bnb-nf4",
        "--count",
        "300",
        "--price",
        "h100-sxm=3",
        "--price",
        "rtx-4090=0.5",
        "--json",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["figure"]["setting"], "bnb-nf4");
    assert_eq!(doc["need"]["value"], 17.3);
    assert_eq!(doc["need"]["loaded_gib"], 12.6);
    for card in ["rtx-4090", "l40s", "h100-sxm"] {
        assert_eq!(fit(&doc, card)["verdict"], "fits", "{card}");
    }
    // 300 images × 12 s on the H100 the blog measured; no time for the 4090.
    assert_eq!(fit(&doc, "h100-sxm")["time_s"], 3600.0);
    assert!(fit(&doc, "rtx-4090")["time_s"].is_null());
    let ranking = doc["ranking"].as_array().expect("ranking");
    assert_eq!(ranking[0]["card_id"], "h100-sxm");
    assert_eq!(ranking[0]["cost"]["total_cost"], 3.0);
    assert!(ranking[1]["cost"].is_null());
    assert_eq!(doc["components"].as_array().map(Vec::len), Some(4));
    assert!(doc["unverified"]
        .as_array()
        .expect("unverified")
        .iter()
        .any(|u| u.as_str().is_some_and(|s| s.contains("cards"))));
    assert!(doc["not_found"]
        .as_array()
        .expect("not_found")
        .iter()
        .any(|u| u == "flux1-schnell/any"));
}

#[test]
fn simulation_shows_cells_times_bytes_and_refuses_a_missing_grid() {
    let (code, doc) = run(&[
        "job",
        "--kind",
        "fdtd",
        "--model",
        "fdtd-3d-yee",
        "--cells",
        "8e6",
        "--json",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["formula"]["bytes_per_cell"], 56.0);
    assert_eq!(doc["formula"]["cells"], 8e6);
    let (code, doc) = run(&["job", "--kind", "lbm", "--model", "lbm-d3q19", "--json"]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["error"]["code"], "invalid_input");
}

#[test]
fn list_names_every_kind() {
    let (code, doc) = run(&["job", "--list", "--json"]);
    assert_eq!(code, 0);
    let kinds: Vec<&str> = doc["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    for k in [
        "image",
        "video",
        "lora",
        "speech",
        "3dgs",
        "render",
        "simulation",
    ] {
        assert!(kinds.contains(&k), "{k}");
    }
    assert!(!doc["speeds"].as_array().expect("speeds").is_empty());
}
