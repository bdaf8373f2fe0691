//! `gpurent host` as a black box against a real loopback sshd: the fingerprint refusal without
//! --trust (no terminal), pinning with --trust, list/check/delete JSON shapes.

mod cli_common;

use cli_common::{gpurent, json};
use gpurent_testhost::{sshd_available, Sshd};

#[test]
fn host_add_refuses_without_trust_pins_with_it_and_lists_checks_deletes() {
    if !sshd_available() {
        return;
    }
    let sshd = Sshd::start().expect("sshd");
    let home = tempfile::tempdir().expect("tmp");
    let paste = format!("登录指令：ssh -p {} gputest@127.0.0.1", sshd.port());
    let fp = sshd.host_key_fingerprint().expect("fp");

    let out = gpurent(
        home.path(),
        &["host", "add", &paste, "--label", "box", "--json"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = json(&out);
    assert_eq!(err["error"]["code"], "host_key_unknown");
    assert_eq!(err["error"]["detail"], fp.as_str());
    assert!(err["error"]["message"].as_str().expect("msg").contains(&fp));
    // The same facts as fields (added; scripts read these, not the text).
    assert_eq!(err["error"]["data"]["fingerprint"], fp.as_str());
    assert_eq!(err["error"]["data"]["role"], "target");
    assert_eq!(err["error"]["data"]["port"], sshd.port());

    let out = gpurent(
        home.path(),
        &[
            "host",
            "add",
            &paste,
            "--label",
            "box",
            "--trust",
            "SHA256:wrongwrongwrong",
            "--json",
        ],
    );
    assert_eq!(
        json(&out)["error"]["code"],
        "host_key_trust_mismatch",
        "{out:?}"
    );

    let out = gpurent(
        home.path(),
        &[
            "host", "add", &paste, "--label", "box", "--trust", &fp, "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["host"]["label"], "box");
    assert_eq!(v["host"]["port"], sshd.port());
    assert_eq!(v["host"]["host_keys"][0]["fingerprint"], fp.as_str());
    assert_eq!(v["host"]["host_keys"][0]["source"], "user");
    assert!(v["key_install"].is_null());

    let v = json(&gpurent(home.path(), &["host", "list", "--json"]));
    assert_eq!(v["hosts"].as_array().map(|a| a.len()), Some(1));
    assert_eq!(v["hosts"][0]["user"], "gputest");

    // No key chosen for this host: a typed error, not a crash.
    let out = gpurent(home.path(), &["host", "check", "box", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "key_unavailable");

    let out = gpurent(home.path(), &["host", "check", "nope", "--json"]);
    assert_eq!(json(&out)["error"]["code"], "unknown_host");

    let v = json(&gpurent(home.path(), &["host", "delete", "box", "--json"]));
    assert_eq!(v["deleted"], "box");
    let v = json(&gpurent(home.path(), &["host", "list", "--json"]));
    assert_eq!(v["hosts"].as_array().map(|a| a.len()), Some(0));
}
