//! The CLI as a black box: run the built `gpurent` binary with a throwaway data dir.

use std::process::{Command, Output};

fn gpurent(home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home)
        .args(args)
        .env_remove("GPURENT_HOME")
        .output()
        .expect("run gpurent")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn cards_json_filters_by_vram_and_keeps_its_shape() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["cards", "--min-vram", "80", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    let cards = v["cards"].as_array().expect("cards array");
    let ids: Vec<&str> = cards
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    for want in ["h100-sxm", "h200-sxm", "a100-80gb-sxm", "b200"] {
        assert!(ids.contains(&want), "{want} missing from {ids:?}");
    }
    assert!(!ids.contains(&"rtx-4090"));
    let h100 = cards.iter().find(|c| c["id"] == "h100-sxm").expect("h100");
    // The documented fields, with units in their names.
    for field in [
        "name",
        "segment",
        "vram_gb",
        "mem_bw_gbps",
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "compute_capability",
        "nvlink",
        "nvlink_gbps",
        "tdp_w",
        "confidence",
        "unverified",
        "sources",
        "advice",
        "decode_ceiling_tps_7b_q4",
    ] {
        assert!(h100.get(field).is_some(), "h100 lacks {field}");
    }
    assert_eq!(h100["mem_bw_gbps"], 3350.0);
    assert_eq!(h100["segment"], "datacenter");
    // The data dir was used, not the user's home.
    assert!(home.path().join("data/gpurent.sqlite3").exists());
}

#[test]
fn cards_table_marks_unverified_values() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["cards", "--search", "h20"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("h20 "))
        .expect("h20 row");
    assert!(row.contains("148*"), "{row}");
    assert!(text.contains("not confirmed by a primary source"));
}

#[test]
fn bad_input_is_a_json_error_with_exit_code_2() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["cards", "--min-vram=-5", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(v["error"]["code"], "invalid_input");
    // The detail names the field and says what is wrong with it.
    assert_eq!(
        v["error"]["detail"],
        "min_vram_gb: must be a number of GB, 0 or more"
    );
}

#[test]
fn version_and_help() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["--version"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
    let out = gpurent(home.path(), &["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("cards") && help.contains("--data-dir"),
        "{help}"
    );
}
