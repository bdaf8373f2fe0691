//! Reliability against a real sshd behind the delay proxy: the connection is cut mid-transfer at
//! several points (uploads and downloads, one large file and many small ones); after
//! reconnecting every file arrives with an equal SHA-256, nothing is duplicated, no half file
//! stands under a final name, and resumes continue from verified bytes rather than from zero.
//! Also: resume after giving up (as after a restart), a full remote disk, and cancel.

mod transfer_common;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use gpurent_core::infra::events::{NoProgress, Progress};
use gpurent_core::transfer::{TransferOptions, TransferState};
use gpurent_core::Coded;
use gpurent_testhost::sshd_available;
use transfer_common::*;

const CHUNK: u64 = 256 * 1024;

fn opts() -> TransferOptions {
    TransferOptions {
        chunk_bytes: Some(CHUNK),
        ..TransferOptions::default()
    }
}

fn logs(ev: &Mutex<Vec<Progress>>) -> Vec<String> {
    ev.lock()
        .expect("lock")
        .iter()
        .filter_map(|e| match e {
            Progress::Log { line } => Some(line.clone()),
            _ => None,
        })
        .collect()
}

/// The number in a "... N bytes verified" / "resuming at byte N" log line.
fn resumed_at(lines: &[String]) -> Option<u64> {
    lines.iter().find_map(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.windows(2).find_map(|w| match (w[0], w[1]) {
            ("with", n) | ("byte", n) => n.parse().ok(),
            _ => None,
        })
    })
}

fn small_tree(root: &Path, n: usize) {
    for i in 0..n {
        let dir = root.join(format!("d{}", i % 7));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let size = 1024 + (i * 7919) % (63 * 1024);
        std::fs::write(dir.join(format!("f {i}.bin")), bytes(size, i as u64)).expect("write");
    }
}

#[test]
fn cut_uploads_and_downloads_of_a_large_file_resume_from_verified_bytes() {
    if !sshd_available() {
        return;
    }
    let r = rig(Some(Duration::ZERO));
    let proxy = r.proxy.as_ref().expect("proxy");
    let home = r.sshd.home();
    let src = r.w.tmp.path().join("model.bin");
    std::fs::write(&src, bytes(4 * 1024 * 1024 + 123, 1)).expect("write");
    for (i, cut) in [200_000u64, 1_500_000, 3_500_000].iter().enumerate() {
        let dir = home.join(format!("up{i}"));
        let ev = Mutex::new(Vec::new());
        let sink = |e: Progress| ev.lock().expect("lock").push(e);
        proxy.cut_after(*cut);
        let rep = put_with(
            &r,
            std::slice::from_ref(&src),
            &dir.display().to_string(),
            &opts(),
            &sink,
        )
        .expect("put resumes after the cut");
        let t = &rep.transfers[0];
        assert!(t.attempts >= 2, "cut at {cut}: {t:?}");
        assert_eq!(sha(&dir.join("model.bin")), sha(&src));
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        assert!(
            logs(&ev).iter().any(|l| l.contains("resuming")),
            "{:?}",
            logs(&ev)
        );

        let back = r.w.tmp.path().join(format!("down{i}"));
        let ev = Mutex::new(Vec::new());
        let sink = |e: Progress| ev.lock().expect("lock").push(e);
        proxy.cut_after(*cut);
        let rep = get_with(
            &r,
            &[format!("{}/model.bin", dir.display())],
            &back,
            &opts(),
            &sink,
        )
        .expect("get resumes after the cut");
        assert!(rep.transfers[0].attempts >= 2);
        assert_eq!(sha(&back.join("model.bin")), sha(&src));
        assert!(leftovers(&back).is_empty());
        assert!(
            logs(&ev).iter().any(|l| l.contains("resuming")),
            "{:?}",
            logs(&ev)
        );
    }
}

#[test]
fn cut_folder_transfers_complete_without_duplicates_or_half_files() {
    if !sshd_available() {
        return;
    }
    let r = rig(Some(Duration::ZERO));
    let proxy = r.proxy.as_ref().expect("proxy");
    let home = r.sshd.home();
    let src = r.w.tmp.path().join("dataset");
    small_tree(&src, 150);
    let want = tree_hashes(&src);
    for (i, cut) in [50_000u64, 2_000_000].iter().enumerate() {
        let dir = home.join(format!("t{i}"));
        proxy.cut_after(*cut);
        let rep = put_with(
            &r,
            std::slice::from_ref(&src),
            &dir.display().to_string(),
            &opts(),
            &NoProgress,
        )
        .expect("tree put resumes");
        assert!(rep.transfers[0].attempts >= 2);
        assert_eq!(
            tree_hashes(&dir.join("dataset")),
            want,
            "exactly the same files"
        );
        assert!(leftovers(&dir).is_empty());

        let back = r.w.tmp.path().join(format!("b{i}"));
        proxy.cut_after(*cut);
        let rep = get_with(
            &r,
            &[format!("{}/dataset", dir.display())],
            &back,
            &opts(),
            &NoProgress,
        )
        .expect("tree get resumes");
        assert!(rep.transfers[0].attempts >= 2);
        assert_eq!(tree_hashes(&back.join("dataset")), want);
        assert!(leftovers(&back).is_empty());
    }
}

#[test]
fn a_transfer_left_partial_resumes_later_by_id_with_the_keychain_key() {
    if !sshd_available() {
        return;
    }
    let r = rig_keychain(Some(Duration::ZERO));
    let proxy = r.proxy.as_ref().expect("proxy");
    let dir = r.sshd.home().join("later");
    let src = r.w.tmp.path().join("ckpt.pt");
    std::fs::write(&src, bytes(3 * 1024 * 1024, 5)).expect("write");
    let o = TransferOptions {
        retries: Some(0),
        ..opts()
    };
    proxy.cut_after(2_000_000);
    let e =
        r.w.app
            .transfer_put(
                "box",
                std::slice::from_ref(&src),
                &dir.display().to_string(),
                &o,
                &r.w.env,
                &NoProgress,
            )
            .expect_err("gives up");
    assert_eq!(e.code(), "connection_lost");
    assert!(
        !dir.join("ckpt.pt").exists(),
        "no half file under the final name"
    );
    let list = r.w.app.transfer_list(Some("box")).expect("list");
    assert_eq!(list[0].state, TransferState::Partial);
    assert!(
        list[0].done_bytes > 0 && list[0].done_bytes < 3 * 1024 * 1024,
        "{:?}",
        list[0]
    );
    assert_eq!(list[0].error_code.as_deref(), Some("connection_lost"));
    // The host's writer sees the cut a moment later and writes what it had read: wait for it to
    // end before looking at the file.
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !rig_processes(&r).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    // What is on the host now decides where the resume starts: the last whole verified chunk.
    let part = std::fs::read_dir(&dir)
        .expect("ls")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .expect("the temp file is kept for the resume");
    let on_host = part.metadata().expect("meta").len();
    let expect_from = on_host / CHUNK * CHUNK;
    let ev = Mutex::new(Vec::new());
    let sink = |e: Progress| ev.lock().expect("lock").push(e);
    let rep =
        r.w.app
            .transfer_resume(list[0].id, &r.w.env, &sink)
            .expect("resume");
    assert_eq!(rep.transfers[0].state, TransferState::Done);
    assert_eq!(sha(&dir.join("ckpt.pt")), sha(&src));
    assert_eq!(resumed_at(&logs(&ev)), Some(expect_from), "{:?}", logs(&ev));
    assert_eq!(
        rep.wire_bytes,
        3 * 1024 * 1024 - expect_from,
        "only the missing chunks went again"
    );
    assert!(leftovers(&dir).is_empty());

    // The same for a download: the partial local file's verified prefix is kept.
    let back = r.w.tmp.path().join("back");
    proxy.cut_after(1_500_000);
    let e =
        r.w.app
            .transfer_get(
                "box",
                &[format!("{}/ckpt.pt", dir.display())],
                &back,
                &o,
                &r.w.env,
                &NoProgress,
            )
            .expect_err("gives up");
    assert_eq!(e.code(), "connection_lost");
    assert!(!back.join("ckpt.pt").exists());
    let id = r.w.app.transfer_list(Some("box")).expect("list")[0].id;
    let part = std::fs::read_dir(&back)
        .expect("ls")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .expect("partial download kept");
    let have = part.metadata().expect("meta").len();
    let ev = Mutex::new(Vec::new());
    let sink = |e: Progress| ev.lock().expect("lock").push(e);
    let rep =
        r.w.app
            .transfer_resume(id, &r.w.env, &sink)
            .expect("resume download");
    assert_eq!(sha(&back.join("ckpt.pt")), sha(&src));
    if have > 0 {
        assert_eq!(resumed_at(&logs(&ev)), Some(have), "{:?}", logs(&ev));
    }
    assert_eq!(rep.wire_bytes, 3 * 1024 * 1024 - have);
    assert!(leftovers(&back).is_empty());

    // The remote pane through the keychain key: mkdir, rename, delete with care.
    let hs = r.sshd.home().display().to_string();
    let (app, env) = (&r.w.app, &r.w.env);
    app.remote_mkdir("box", &format!("{hs}/新 dir"), env)
        .expect("mkdir");
    assert_eq!(
        app.remote_mkdir("box", &format!("{hs}/新 dir"), env)
            .expect_err("again")
            .code(),
        "already_exists"
    );
    app.remote_rename(
        "box",
        &format!("{hs}/later/ckpt.pt"),
        &format!("{hs}/新 dir/$(x) 'a'.pt"),
        env,
    )
    .expect("rename");
    assert_eq!(sha(&r.sshd.home().join("新 dir/$(x) 'a'.pt")), sha(&src));
    let nonempty = app
        .remote_delete("box", &format!("{hs}/新 dir"), false, env)
        .expect_err("not empty");
    assert_ne!(nonempty.code(), "ok");
    assert!(r.sshd.home().join("新 dir").exists());
    app.remote_delete("box", &format!("{hs}/新 dir"), true, env)
        .expect("recursive");
    assert!(!r.sshd.home().join("新 dir").exists());
    for p in ["/", "/tmp/..", "~", ""] {
        assert_eq!(
            app.remote_delete("box", p, true, env).expect_err(p).code(),
            "unsafe_delete",
            "{p}"
        );
    }
}

struct Mount(std::path::PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_remote_disk_is_reported_and_the_partial_upload_removed() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    let small = r.sshd.home().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,uid=1001,mode=0777", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "mount tmpfs failed under CI"
        );
        eprintln!("SKIPPED: cannot mount a small tmpfs here");
        return;
    }
    let _m = Mount(small.clone());
    let src = r.w.tmp.path().join("too big.bin");
    std::fs::write(&src, bytes(3 * 1024 * 1024, 9)).expect("write");
    let tree = r.w.tmp.path().join("tree");
    small_tree(&tree, 60);
    for method in [None, Some(gpurent_core::transfer::FileMethod::Sftp)] {
        let o = TransferOptions { method, ..opts() };
        for p in [&src, &tree] {
            let e = put_with(
                &r,
                &[p.to_path_buf()],
                &small.display().to_string(),
                &o,
                &NoProgress,
            )
            .expect_err("disk full");
            assert_eq!(e.code(), "remote_disk_full", "{method:?} {p:?}: {e:?}");
            let left: Vec<_> = std::fs::read_dir(&small)
                .expect("ls")
                .flatten()
                .map(|e| e.file_name())
                .collect();
            assert!(left.is_empty(), "partial upload removed: {left:?}");
        }
    }
    let list = r.w.app.transfer_list(None).expect("list");
    assert!(list
        .iter()
        .all(|t| t.state == TransferState::Failed
            && t.error_code.as_deref() == Some("remote_disk_full")));
}

#[test]
fn cancel_stops_everything_on_the_host_and_removes_the_temp_file() {
    if !sshd_available() {
        return;
    }
    let r = rig(Some(Duration::from_millis(15)));
    let dir = r.sshd.home().join("c");
    let src = r.w.tmp.path().join("big.bin");
    std::fs::write(&src, bytes(64 * 1024 * 1024, 2)).expect("write");
    let tree = r.w.tmp.path().join("many");
    small_tree(&tree, 400);
    for p in [&src, &tree] {
        let op = Mutex::new(None::<String>);
        let app = &r.w.app;
        let sink = |e: Progress| match e {
            Progress::Started { op_id } => *op.lock().expect("lock") = Some(op_id),
            Progress::Bytes { done_bytes, .. } if done_bytes > 300_000 => {
                if let Some(id) = op.lock().expect("lock").take() {
                    app.cancel_op(&id).expect("cancel");
                }
            }
            _ => {}
        };
        let e = app
            .transfer_put_with_key(
                "box",
                Some(&r.key),
                &[p.to_path_buf()],
                &dir.display().to_string(),
                &opts(),
                &r.w.env,
                &sink,
            )
            .expect_err("cancelled");
        assert_eq!(e.code(), "cancelled");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("ls")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "temp removed: {left:?}");
        let procs = rig_processes(&r);
        assert!(procs.is_empty(), "left running on the host: {procs:?}");
    }
    let list = r.w.app.transfer_list(Some("box")).expect("list");
    assert!(
        list.iter().all(|t| t.state == TransferState::Cancelled),
        "{list:?}"
    );
}
