//! `gpurent put|get|transfers` as a black box against a real loopback sshd: JSON lines of
//! progress then the result, the files verified on both ends, the journal listed.

mod cli_common;

use std::process::{Command, Output, Stdio};

use cli_common::{gpurent, saved_host};
use gpurent_testhost::{sshd_available, Sshd};

fn lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A sshd with a host `box` saved through the CLI, and the login key as a file (`-i`).
fn host_box() -> (Sshd, tempfile::TempDir, std::path::PathBuf) {
    let sshd = Sshd::start().expect("sshd");
    let (home, id_file) = saved_host(&sshd, "cli", "box");
    (sshd, home, id_file.into())
}

#[test]
fn put_and_get_print_json_lines_and_verify() {
    if !sshd_available() {
        return;
    }
    let (sshd, home, id_file) = host_box();

    let src = home.path().join("数据 $(x).bin");
    let data: Vec<u8> = (0..700_000u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&src, &data).expect("write");
    let dest = sshd.home().join("in");
    let id = id_file.to_string_lossy().to_string();
    let (s, d) = (
        src.to_string_lossy().to_string(),
        dest.to_string_lossy().to_string(),
    );
    let out = gpurent(home.path(), &["put", "box", &s, &d, "-i", &id, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let l = lines(&out);
    assert_eq!(l[0]["kind"], "started");
    assert!(l
        .iter()
        .any(|v| v["kind"] == "bytes" && v["done_bytes"] == 700_000));
    let last = l.last().expect("result");
    assert_eq!(last["kind"], "result");
    assert_eq!(last["report"]["transfers"][0]["verified"], true);
    assert_eq!(
        std::fs::read(dest.join("数据 $(x).bin")).expect("arrived"),
        data
    );

    let back = home.path().join("back");
    let remote = dest.join("数据 $(x).bin").to_string_lossy().to_string();
    let b = back.to_string_lossy().to_string();
    let out = gpurent(
        home.path(),
        &["get", "box", &remote, &b, "-i", &id, "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read(back.join("数据 $(x).bin")).expect("back"),
        data
    );

    let again = gpurent(home.path(), &["put", "box", &s, &d, "-i", &id, "--json"]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        lines(&again).last().expect("err")["error"]["code"],
        "already_exists"
    );

    let out = gpurent(home.path(), &["transfers", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let t = v["transfers"].as_array().expect("array");
    assert_eq!(t.len(), 3);
    assert_eq!(t[2]["state"], "done");
    assert_eq!(t[0]["state"], "failed");
}

#[test]
fn ctrl_c_pauses_a_put_and_discard_removes_what_arrived() {
    if !sshd_available() {
        return;
    }
    use std::io::BufRead;
    let (sshd, home, id_file) = host_box();
    // Large (sparse) so that it is still moving when the interrupt arrives.
    let src = home.path().join("big.bin");
    std::fs::File::create(&src)
        .and_then(|f| f.set_len(1 << 30))
        .expect("sparse");
    let dest = sshd.home().join("ctrlc");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .args(["put", "box"])
        .arg(&src)
        .arg(&dest)
        .arg("-i")
        .arg(&id_file)
        .arg("--json")
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    let mut line = String::new();
    // Interrupt once bytes are moving.
    while reader.read_line(&mut line).expect("read") > 0 {
        let v: serde_json::Value = serde_json::from_str(&line).expect("json line");
        line.clear();
        let moving = v["kind"] == "bytes" && v["done_bytes"].as_u64().unwrap_or(0) > 0;
        seen.push(v);
        if moving {
            let ok = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .expect("kill");
            assert!(ok.success());
            break;
        }
    }
    while reader.read_line(&mut line).expect("read") > 0 {
        seen.push(serde_json::from_str(&line).expect("json line"));
        line.clear();
    }
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(1));
    let last = seen.last().expect("a last line");
    assert_eq!(last["error"]["code"], "paused", "{seen:?}");
    let out = gpurent(home.path(), &["transfers", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let t = &list["transfers"][0];
    assert_eq!(t["state"], "paused");
    assert!(!dest.join("big.bin").exists());
    let temps = || {
        std::fs::read_dir(&dest)
            .map(|d| d.flatten().count())
            .unwrap_or(0)
    };
    assert_eq!(temps(), 1, "the partial upload is kept while paused");
    let tid = t["id"].as_i64().expect("id").to_string();
    let id = id_file.to_string_lossy().to_string();
    let out = gpurent(home.path(), &["discard", &tid, "-i", &id, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["transfer"]["state"], "cancelled");
    assert_eq!(temps(), 0, "discard removed it on the host");
}
