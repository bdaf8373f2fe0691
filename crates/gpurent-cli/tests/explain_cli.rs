//! `gpurent explain` as a black box: a file, stdin, text and JSON, exit 0 whether or not anything
//! is recognised, and an unknown `--host` as a coded error.

mod cli_common;

use cli_common::{gpurent, gpurent_with_stdin, json};

fn fixture(name: &str) -> String {
    format!(
        "{}/../gpurent-core/tests/fixtures/explain/{name}.log",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_log_file_is_explained_root_cause_first_in_the_documented_shape() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(
        home.path(),
        &["explain", &fixture("oom_then_nccl_timeout"), "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    let m = v["matches"].as_array().expect("matches");
    let codes: Vec<&str> = m
        .iter()
        .map(|m| m["code"].as_str().expect("code"))
        .collect();
    assert_eq!(codes, ["cuda_out_of_memory", "nccl_timeout"]);
    for k in [
        "code",
        "title",
        "meaning",
        "confidence",
        "evidence",
        "cause",
        "fix",
    ] {
        assert!(m[0].get(k).is_some(), "{k} missing: {}", m[0]);
    }
    assert_eq!(m[0]["confidence"], "high");
    assert_eq!(m[0]["evidence"][0]["line"], 8);
    assert!(m[0]["evidence"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("torch.OutOfMemoryError: CUDA out of memory")));
    assert!(m[0]["fix"]["commands"].is_array() && m[0]["fix"]["kind"] == "manual");
    assert_eq!(m[1]["consequence_of"], "cuda_out_of_memory");
    assert!(v["host"].is_null());
}

#[test]
fn stdin_with_nothing_recognised_exits_zero_with_empty_matches() {
    let home = tempfile::tempdir().expect("tmp");
    let log = std::fs::read(fixture("unknown_error")).expect("fixture");
    let out = gpurent_with_stdin(home.path(), &["explain", "-", "--json"], &log);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["matches"], serde_json::json!([]));
    assert_eq!(v["suspicious"][0]["line"], 7);
    // Text mode says so, and shows the line.
    let out = gpurent_with_stdin(home.path(), &["explain"], &log);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("Not recognised (lines read: 7)."),
        "{text}"
    );
    assert!(
        text.contains("ValueError: Tokenizer class QwenTokenizerFast"),
        "{text}"
    );
}

#[test]
fn text_mode_shows_evidence_cause_fix_and_the_facts_a_host_would_add() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(home.path(), &["explain", &fixture("nccl_shm")]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1. [nccl_shm] Shared memory (/dev/shm) too small (high confidence)"),
        "{text}"
    );
    assert!(
        text.contains("    17: [rank1]: Error while creating shared memory segment"),
        "{text}"
    );
    assert!(
        text.contains("gpurent would check: shm, container"),
        "{text}"
    );
    assert!(text.contains("$ export NCCL_SHM_DISABLE=1"), "{text}");
}

#[test]
fn an_unknown_host_or_file_is_a_coded_error() {
    let home = tempfile::tempdir().expect("tmp");
    let out = gpurent(
        home.path(),
        &["explain", &fixture("nccl_shm"), "--host", "nope", "--json"],
    );
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(json(&out)["error"]["code"], "unknown_host");
    let out = gpurent(home.path(), &["explain", "/nonexistent/x.log", "--json"]);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(json(&out)["error"]["code"], "explain_log_unreadable");
}
