//! Transfers against a real OpenSSH sshd on loopback: files and folders up and down with
//! SHA-256 checked on both ends, hostile names that arrive intact and run nothing, the journal,
//! an existing name, the hash-tool fallback and the remote file pane.

mod transfer_common;

use std::path::PathBuf;

use gpurent_core::infra::events::{NoProgress, Progress};
use gpurent_core::transfer::{
    FileMethod, ItemKind, RemoteEntryKind, TransferOptions, TransferState,
};
use gpurent_core::Coded;
use gpurent_testhost::sshd_available;
use transfer_common::*;

fn opts() -> TransferOptions {
    TransferOptions {
        chunk_bytes: Some(256 * 1024),
        ..TransferOptions::default()
    }
}

#[test]
fn files_and_folders_with_hostile_names_go_up_and_down_verified() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    let src = r.w.tmp.path().join("src");
    let tree = src.join("proj ($(id)) 数据");
    for (i, n) in NASTY.iter().enumerate() {
        std::fs::create_dir_all(tree.join("sub")).expect("mkdir");
        std::fs::write(tree.join(n), bytes(1000 + i * 7919, i as u64)).expect("write");
        std::fs::write(tree.join("sub").join(n), bytes(10 + i, 99 + i as u64)).expect("write");
    }
    std::fs::create_dir_all(tree.join("empty dir")).expect("mkdir");
    std::fs::write(tree.join(".gitignore"), "*.tmp\n").expect("write");
    std::fs::write(tree.join("skip.tmp"), "no").expect("write");
    let big = src.join("-big 'model' $(reboot).bin");
    std::fs::write(&big, bytes(3 * 1024 * 1024 + 17, 7)).expect("write");
    let empty = src.join("empty.txt");
    std::fs::write(&empty, b"").expect("write");

    let events = std::sync::Mutex::new(Vec::new());
    let sink = |e: Progress| events.lock().expect("lock").push(e);
    let rep =
        r.w.app
            .transfer_put_with_key(
                "box",
                Some(&r.key),
                &[big.clone(), empty.clone(), tree.clone()],
                &format!("{}/in coming/$(touch PWNED3)", r.sshd.home().display()),
                &opts(),
                &r.w.env,
                &sink,
            )
            .expect("put");
    assert_eq!(rep.transfers.len(), 3);
    assert!(rep
        .transfers
        .iter()
        .all(|t| t.state == TransferState::Done && t.verified));
    assert_eq!(rep.transfers[2].kind, ItemKind::Tree);
    let dest = r.sshd.home().join("in coming/$(touch PWNED3)");
    assert_eq!(sha(&dest.join(big.file_name().expect("n"))), sha(&big));
    assert_eq!(
        std::fs::read(dest.join("empty.txt")).expect("empty").len(),
        0
    );
    let up = dest.join(tree.file_name().expect("n"));
    let mut want = tree_hashes(&tree);
    want.retain(|(p, _)| p.to_string_lossy() != "skip.tmp");
    assert_eq!(
        tree_hashes(&up),
        want,
        "tree arrived intact, .gitignore honoured"
    );
    assert!(up.join("empty dir").is_dir());
    assert!(leftovers(&dest).is_empty(), "{:?}", leftovers(&dest));
    for p in ["PWNED", "PWNED2", "PWNED3"] {
        assert!(!r.sshd.home().join(p).exists(), "{p}: a name was executed");
    }
    let ev = events.lock().expect("lock");
    assert!(matches!(ev.first(), Some(Progress::Started { .. })));
    let last_bytes = ev.iter().rev().find_map(|e| match e {
        Progress::Bytes {
            done_bytes,
            total_bytes,
        } => Some((*done_bytes, *total_bytes)),
        _ => None,
    });
    let total: u64 = rep.transfers.iter().filter_map(|t| t.total_bytes).sum();
    assert_eq!(last_bytes, Some((total, Some(total))));
    drop(ev);

    // And back down, next to nothing: same bytes, same names.
    let back = r.w.tmp.path().join("back");
    let remotes: Vec<String> = ["-big 'model' $(reboot).bin", "proj ($(id)) 数据"]
        .iter()
        .map(|n| format!("{}/in coming/$(touch PWNED3)/{n}", r.sshd.home().display()))
        .collect();
    let rep = get_with(&r, &remotes, &back, &opts(), &NoProgress).expect("get");
    assert!(rep
        .transfers
        .iter()
        .all(|t| t.state == TransferState::Done && t.verified));
    assert_eq!(sha(&back.join(big.file_name().expect("n"))), sha(&big));
    assert_eq!(tree_hashes(&back.join(tree.file_name().expect("n"))), want);
    assert!(leftovers(&back).is_empty());

    let list = r.w.app.transfer_list(Some("box")).expect("list");
    assert_eq!(list.len(), 5);
    assert!(list
        .iter()
        .all(|t| t.state == TransferState::Done && t.sha256.is_some()));
}

#[test]
fn an_existing_name_is_kept_unless_overwrite_and_sftp_ranges_work() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    let h = r.sshd.home().display().to_string();
    let f = r.w.tmp.path().join("w.bin");
    std::fs::write(&f, bytes(1_500_000, 3)).expect("write");
    std::fs::write(r.sshd.home().join("w.bin"), b"old").expect("old");
    let e = put_with(&r, std::slice::from_ref(&f), &h, &opts(), &NoProgress).expect_err("exists");
    assert_eq!(e.code(), "already_exists");
    assert_eq!(
        std::fs::read(r.sshd.home().join("w.bin")).expect("old"),
        b"old"
    );
    let o = TransferOptions {
        overwrite: true,
        method: Some(FileMethod::Sftp),
        streams: Some(3),
        ..opts()
    };
    put_with(&r, std::slice::from_ref(&f), &h, &o, &NoProgress)
        .expect("overwrite with 3 SFTP streams");
    assert_eq!(sha(&r.sshd.home().join("w.bin")), sha(&f));
    let missing =
        put_with(&r, &[PathBuf::from("/nope/x")], &h, &o, &NoProgress).expect_err("missing");
    assert_eq!(missing.code(), "local_file_missing");
    let gone = get_with(
        &r,
        &[format!("{h}/nope.bin")],
        r.w.tmp.path(),
        &o,
        &NoProgress,
    )
    .expect_err("remote missing");
    assert_eq!(gone.code(), "remote_file_missing");
}

#[test]
fn a_folder_download_leaves_out_what_the_excludes_name() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    let run = r.sshd.home().join("run 7");
    for (rel, n) in [
        ("final.pt", 200_000),
        ("ckpt-1.pt", 300_000),
        ("logs/ckpt-2.pt", 10),
        ("logs/train.log", 5_000),
        ("wandb/run/files.bin", 9_000),
        ("数据/ok $(x).txt", 12),
    ] {
        let p = run.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, bytes(n, n as u64)).expect("write");
    }
    let back = r.w.tmp.path().join("back");
    let o = TransferOptions {
        excludes: vec!["ckpt-*.pt".into(), "wandb/".into()],
        ..opts()
    };
    let ev = std::sync::Mutex::new(Vec::new());
    let sink = |e: gpurent_core::infra::events::Progress| ev.lock().expect("lock").push(e);
    let rep = get_with(&r, &[run.display().to_string()], &back, &o, &sink).expect("get");
    let t = &rep.transfers[0];
    assert!(t.verified && t.files_total == 3, "{t:?}");
    let got: Vec<String> = tree_hashes(&back.join("run 7"))
        .into_iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert_eq!(got, ["final.pt", "logs/train.log", "数据/ok $(x).txt"]);
    assert_eq!(
        sha(&back.join("run 7/final.pt")),
        sha(&run.join("final.pt"))
    );
    assert!(ev.lock().expect("lock").iter().any(|e| matches!(
        e,
        gpurent_core::infra::events::Progress::Log { line } if line.contains("3 file(s) left out")
    )));
}

#[test]
fn without_openssl_or_sha256sum_the_host_still_verifies() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    for tool in ["openssl", "sha256sum"] {
        r.sshd
            .install_bin(tool, "#!/bin/sh\nexit 127\n")
            .expect("fake");
    }
    let f = r.w.tmp.path().join("f.bin");
    std::fs::write(&f, bytes(600_000, 11)).expect("write");
    let rep = put_with(
        &r,
        std::slice::from_ref(&f),
        &r.sshd.home().display().to_string(),
        &opts(),
        &NoProgress,
    )
    .expect("put via fallback hash");
    assert!(rep.transfers[0].verified);
    assert_eq!(rep.transfers[0].sha256.as_deref(), Some(sha(&f).as_str()));
}

/// Without python3 on the host the fast paths (one-pass hashing on the host, python folder
/// hashing) give way to `cat` + `openssl`/`sha256sum`: files and folders with hostile names still
/// go up and down verified; with no tool at all, `hash_tool_missing` and nothing left behind.
#[test]
fn without_python3_the_shell_tools_verify_and_without_any_tool_it_is_named() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    r.sshd
        .install_bin("python3", "#!/bin/sh\nexit 127\n")
        .expect("fake");
    let src = r.w.tmp.path().join("src");
    let tree = src.join("t $(id)");
    std::fs::create_dir_all(tree.join("sub")).expect("mkdir");
    for (i, n) in NASTY.iter().enumerate() {
        std::fs::write(tree.join(n), bytes(500 + i * 4099, i as u64)).expect("write");
        std::fs::write(tree.join("sub").join(n), bytes(3 + i, 7 + i as u64)).expect("write");
    }
    let f = src.join("-f 'x' $(reboot).bin");
    std::fs::write(&f, bytes(1_500_000, 3)).expect("write");
    let dest = r.sshd.home().join("np");
    let rep = put_with(
        &r,
        &[f.clone(), tree.clone()],
        &dest.display().to_string(),
        &opts(),
        &NoProgress,
    )
    .expect("put without python3");
    assert!(rep.transfers.iter().all(|t| t.verified));
    assert_eq!(sha(&dest.join(f.file_name().expect("n"))), sha(&f));
    let want = tree_hashes(&tree);
    assert_eq!(tree_hashes(&dest.join("t $(id)")), want);
    assert!(leftovers(&dest).is_empty(), "{:?}", leftovers(&dest));

    let back = r.w.tmp.path().join("back");
    let remotes: Vec<String> = [
        f.file_name().expect("n").to_string_lossy(),
        "t $(id)".into(),
    ]
    .iter()
    .map(|n| format!("{}/{n}", dest.display()))
    .collect();
    let rep = get_with(&r, &remotes, &back, &opts(), &NoProgress).expect("get without python3");
    assert!(rep.transfers.iter().all(|t| t.verified));
    assert_eq!(sha(&back.join(f.file_name().expect("n"))), sha(&f));
    assert_eq!(tree_hashes(&back.join("t $(id)")), want);
    assert!(leftovers(&back).is_empty());
    assert!(!r.sshd.home().join("PWNED").exists());

    for tool in ["openssl", "sha256sum", "shasum"] {
        r.sshd
            .install_bin(tool, "#!/bin/sh\nexit 127\n")
            .expect("fake");
    }
    let none = r.sshd.home().join("none");
    for item in [&f, &tree] {
        let e = put_with(
            &r,
            std::slice::from_ref(item),
            &none.display().to_string(),
            &opts(),
            &NoProgress,
        )
        .expect_err("no hash tool");
        assert_eq!(e.code(), "hash_tool_missing");
    }
    let e = get_with(
        &r,
        &[format!("{}/t $(id)", dest.display())],
        &r.w.tmp.path().join("back2"),
        &opts(),
        &NoProgress,
    )
    .expect_err("no hash tool");
    assert_eq!(e.code(), "hash_tool_missing");
    assert!(leftovers(&none).is_empty(), "{:?}", leftovers(&none));
    assert!(leftovers(&r.w.tmp.path().join("back2")).is_empty());
}

#[test]
fn the_remote_pane_lists_creates_renames_and_deletes_any_name() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    let (app, env, key) = (&r.w.app, &r.w.env, Some(&r.key));
    let home = r.sshd.home();
    let hs = home.display().to_string();
    for n in NASTY {
        std::fs::write(home.join(n), n.as_bytes()).expect("write");
    }
    let l = app.remote_ls_with_key("box", key, &hs, env).expect("ls");
    assert_eq!(l.absolute, home.display().to_string());
    for n in NASTY {
        let e = l.entries.iter().find(|e| e.name == *n).expect(n);
        assert_eq!(
            (e.kind, e.size_bytes),
            (RemoteEntryKind::File, n.len() as u64)
        );
        assert!(e.modified_s.is_some());
    }
    let d = format!("{hs}/新 folder $(x)");
    let ls_dir = |dir: &str| app.remote_ls_with_key("box", key, dir, env).expect("ls");
    std::fs::create_dir(&d).expect("mkdir");
    std::fs::write(PathBuf::from(&d).join("a b"), b"1").expect("w");
    assert_eq!(ls_dir(&d).entries[0].path, format!("{d}/a b"));
    let top = ls_dir(&hs);
    assert_eq!(top.entries[0].kind, RemoteEntryKind::Dir, "folders first");
}

#[test]
fn a_folder_download_makes_symbolic_links_as_links_after_the_files() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    // The shape of a Hugging Face cache: snapshot names are links into blobs.
    let hub = r.sshd.home().join("hub");
    let blobs = hub.join("blobs");
    let snap = hub.join("snapshots/abc");
    std::fs::create_dir_all(&blobs).expect("mkdir");
    std::fs::create_dir_all(&snap).expect("mkdir");
    std::fs::write(blobs.join("1f2e"), bytes(70_000, 9)).expect("write");
    let link =
        |target: &str, at: &std::path::Path| std::os::unix::fs::symlink(target, at).expect("link");
    link("../../blobs/1f2e", &snap.join("model.safetensors"));
    link("abc", &hub.join("snapshots/main"));
    link("/etc/passwd", &hub.join("abs link"));
    link("/nonexistent/$(touch PWNED)", &hub.join("dangling"));
    let back = r.w.tmp.path().join("back");
    let rep = get_with(
        &r,
        &[hub.display().to_string()],
        &back,
        &opts(),
        &NoProgress,
    )
    .expect("get");
    assert!(rep.transfers[0].verified);
    let got = back.join("hub");
    let target = |rel: &str| {
        std::fs::read_link(got.join(rel))
            .unwrap_or_else(|e| panic!("{rel} is a link: {e}"))
            .display()
            .to_string()
    };
    assert_eq!(
        target("snapshots/abc/model.safetensors"),
        "../../blobs/1f2e"
    );
    assert_eq!(target("snapshots/main"), "abc");
    assert_eq!(target("abs link"), "/etc/passwd");
    assert_eq!(target("dangling"), "/nonexistent/$(touch PWNED)");
    // Through the links, the bytes are the host's.
    assert_eq!(
        sha(&got.join("snapshots/main/model.safetensors")),
        sha(&blobs.join("1f2e"))
    );
    assert!(!std::path::Path::new("PWNED").exists());
}
