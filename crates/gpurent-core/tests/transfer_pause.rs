//! Pause, resume and discard against a real sshd behind the delay proxy: a paused upload or
//! download keeps what arrived under its temporary name, leaves nothing running on the host and
//! no file under the final name; resuming sends only what is missing and verifies; discarding
//! removes the temporary file or folder. Items of the same put that had not started are paused
//! with it.

mod transfer_common;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use gpurent_core::app::App;
use gpurent_core::infra::events::{NoProgress, Progress};
use gpurent_core::transfer::{TransferOptions, TransferState, TransferSummary};
use gpurent_core::Coded;
use gpurent_testhost::sshd_available;
use transfer_common::*;

const CHUNK: u64 = 256 * 1024;
const BIG: usize = 24 * 1024 * 1024;

fn opts() -> TransferOptions {
    TransferOptions {
        chunk_bytes: Some(CHUNK),
        ..TransferOptions::default()
    }
}

/// A sink that pauses its operation once `after` bytes were reported.
fn pauser<'a>(app: &'a App, op: &'a Mutex<Option<String>>, after: u64) -> impl Fn(Progress) + 'a {
    move |e: Progress| match e {
        Progress::Started { op_id } => *op.lock().expect("lock") = Some(op_id),
        Progress::Bytes { done_bytes, .. } if done_bytes > after => {
            if let Some(id) = op.lock().expect("lock").take() {
                app.pause_op(&id).expect("pause");
            }
        }
        _ => {}
    }
}

fn by_id(app: &App, id: i64) -> TransferSummary {
    app.transfer_list(Some("box"))
        .expect("list")
        .into_iter()
        .find(|t| t.id == id)
        .expect("in the journal")
}

fn temp_names(dir: &Path) -> Vec<String> {
    leftovers(dir)
}

#[test]
fn paused_uploads_keep_their_bytes_and_resume_without_starting_over() {
    if !sshd_available() {
        return;
    }
    // 30 ms each way: OpenSSH's 2 MiB window then allows ~33 MiB/s, so a pause lands mid-stream.
    let r = rig(Some(Duration::from_millis(30)));
    let app = &r.w.app;
    let dir = r.sshd.home().join("p");
    let big = r.w.tmp.path().join("weights.bin");
    std::fs::write(&big, bytes(BIG, 11)).expect("write");
    let tree = r.w.tmp.path().join("corpus");
    for i in 0..300 {
        let d = tree.join(format!("d{}", i % 5));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(
            d.join(format!("f{i}.txt")),
            bytes(16 * 1024 + i * 37, i as u64),
        )
        .expect("write");
    }
    // One put of a big file and a folder: paused during the file; the folder never started.
    // While it runs, the queue marks the running item so no screen offers to resume it.
    let op = Mutex::new(None);
    let running_seen = Mutex::new(None);
    let pause = pauser(app, &op, 4 * 1024 * 1024);
    let sink = |e: Progress| {
        if let Progress::Bytes { done_bytes, .. } = &e {
            if *done_bytes > 1024 * 1024 && running_seen.lock().expect("lock").is_none() {
                let list = app.transfer_list(Some("box")).expect("list while running");
                *running_seen.lock().expect("lock") =
                    Some(list.iter().map(|t| (t.kind, t.running)).collect::<Vec<_>>());
            }
        }
        pause(e)
    };
    let e = app
        .transfer_put_with_key(
            "box",
            Some(&r.key),
            &[big.clone(), tree.clone()],
            &dir.display().to_string(),
            &opts(),
            &r.w.env,
            &sink,
        )
        .expect_err("paused");
    assert_eq!(e.code(), "paused", "{e}");
    let seen = running_seen
        .lock()
        .expect("lock")
        .take()
        .expect("listed while running");
    assert_eq!(
        seen.iter().filter(|(_, running)| *running).count(),
        1,
        "exactly the file being sent is running: {seen:?}"
    );
    let list = app.transfer_list(Some("box")).expect("list");
    assert!(list.iter().all(|t| !t.running), "{list:?}");
    assert_eq!(list.len(), 2);
    assert!(
        list.iter().all(|t| t.state == TransferState::Paused),
        "{list:?}"
    );
    assert!(
        !dir.join("weights.bin").exists(),
        "nothing under the final name"
    );
    assert_eq!(temp_names(&dir).len(), 1, "the file's temp is kept");
    let procs = rig_processes(&r);
    assert!(procs.is_empty(), "left running on the host: {procs:?}");

    // Resuming the file sends only what is not verified on the host.
    let file_id = list
        .iter()
        .find(|t| t.local_path.ends_with("weights.bin"))
        .expect("file")
        .id;
    let rep = app
        .transfer_resume_with_key(file_id, Some(&r.key), &r.w.env, &NoProgress)
        .expect("resume");
    assert_eq!(rep.transfers[0].state, TransferState::Done);
    assert!(rep.transfers[0].verified);
    assert_eq!(sha(&dir.join("weights.bin")), sha(&big));
    assert!(
        rep.wire_bytes < BIG as u64,
        "resumed, not restarted: {} of {BIG}",
        rep.wire_bytes
    );

    // The folder of the same put had not started: it goes as a whole now.
    let tree_id = list
        .iter()
        .find(|t| t.local_path.ends_with("corpus"))
        .expect("tree")
        .id;
    let rep = app
        .transfer_resume_with_key(tree_id, Some(&r.key), &r.w.env, &NoProgress)
        .expect("the never-started folder goes as a whole");
    assert_eq!(rep.transfers[0].state, TransferState::Done);
    assert_eq!(tree_hashes(&dir.join("corpus")), tree_hashes(&tree));
    assert!(temp_names(&dir).is_empty());
    assert!(
        app.transfer_resume_with_key(tree_id, Some(&r.key), &r.w.env, &NoProgress)
            .expect("resuming a finished transfer is a no-op")
            .transfers[0]
            .verified
    );
}

#[test]
fn a_paused_folder_upload_resumes_and_a_discarded_one_leaves_nothing() {
    if !sshd_available() {
        return;
    }
    let r = rig(Some(Duration::from_millis(30)));
    let app = &r.w.app;
    let dir = r.sshd.home().join("t");
    let tree = r.w.tmp.path().join("run 1");
    for i in 0..300 {
        let d = tree.join(format!("part {}", i % 3));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(format!("{i}.bin")), bytes(64 * 1024, 100 + i as u64)).expect("w");
    }
    let total = 300 * 64 * 1024;
    for discard in [false, true] {
        let op = Mutex::new(None);
        let e = app
            .transfer_put_with_key(
                "box",
                Some(&r.key),
                std::slice::from_ref(&tree),
                &dir.display().to_string(),
                &TransferOptions {
                    overwrite: true,
                    ..opts()
                },
                &r.w.env,
                &pauser(app, &op, 6 * 1024 * 1024),
            )
            .expect_err("paused");
        assert_eq!(e.code(), "paused");
        let id = app.transfer_list(Some("box")).expect("list")[0].id;
        assert_eq!(by_id(app, id).state, TransferState::Paused);
        assert_eq!(temp_names(&dir).len(), 1, "the partial folder is kept");
        assert!(rig_processes(&r).is_empty(), "tar is not left running");
        if discard {
            let s = app
                .transfer_discard_with_key(id, Some(&r.key), &r.w.env)
                .expect("discard");
            assert_eq!(s.state, TransferState::Cancelled);
            assert!(temp_names(&dir).is_empty(), "temp folder removed");
        } else {
            let rep = app
                .transfer_resume_with_key(id, Some(&r.key), &r.w.env, &NoProgress)
                .expect("resume");
            assert_eq!(rep.transfers[0].state, TransferState::Done);
            // Files that arrived whole before the pause are not sent again.
            assert!(rep.wire_bytes < total as u64, "{}", rep.wire_bytes);
            assert_eq!(tree_hashes(&dir.join("run 1")), tree_hashes(&tree));
            assert_eq!(
                app.transfer_discard_with_key(id, Some(&r.key), &r.w.env)
                    .expect_err("done")
                    .code(),
                "transfer_done"
            );
        }
    }
}

#[test]
fn a_paused_download_keeps_its_partial_file_and_discard_removes_it() {
    if !sshd_available() {
        return;
    }
    let r = rig(Some(Duration::from_millis(10)));
    let app = &r.w.app;
    let src = r.sshd.home().join("out.ckpt");
    // Large enough that the first progress report (after 100 ms) comes well before the end,
    // even with the 32 MiB receive window gpurent opens on long links.
    let size = 64 * 1024 * 1024;
    std::fs::write(&src, bytes(size, 21)).expect("write");
    let back = r.w.tmp.path().join("back");
    for discard in [false, true] {
        let _ = std::fs::remove_file(back.join("out.ckpt"));
        let op = Mutex::new(None);
        let e = app
            .transfer_get_with_key(
                "box",
                Some(&r.key),
                &[src.display().to_string()],
                &back,
                &TransferOptions {
                    overwrite: true,
                    ..opts()
                },
                &r.w.env,
                &pauser(app, &op, 0),
            )
            .expect_err("paused");
        assert_eq!(e.code(), "paused");
        let id = app.transfer_list(Some("box")).expect("list")[0].id;
        assert_eq!(by_id(app, id).state, TransferState::Paused);
        assert!(!back.join("out.ckpt").exists());
        assert_eq!(temp_names(&back).len(), 1);
        assert!(rig_processes(&r).is_empty(), "no cat/tail left on the host");
        if discard {
            // A download's temp is here: no connection needed.
            app.transfer_discard_with_key(id, None, &r.w.env)
                .expect("discard");
            assert!(temp_names(&back).is_empty());
            assert_eq!(by_id(app, id).state, TransferState::Cancelled);
        } else {
            let rep = app
                .transfer_resume_with_key(id, Some(&r.key), &r.w.env, &NoProgress)
                .expect("resume");
            assert!(rep.wire_bytes < size as u64, "{}", rep.wire_bytes);
            assert_eq!(sha(&back.join("out.ckpt")), sha(&src));
            assert!(temp_names(&back).is_empty());
        }
    }
}

#[test]
fn a_pause_before_any_byte_moved_still_records_every_item_as_paused() {
    if !sshd_available() {
        return;
    }
    let r = rig(None);
    let app = &r.w.app;
    let dir = r.sshd.home().join("new folder");
    let a = r.w.tmp.path().join("a.txt");
    std::fs::write(&a, b"alpha").expect("write");
    let sink = |e: Progress| {
        if let Progress::Started { op_id } = e {
            app.pause_op(&op_id).expect("pause");
        }
    };
    let e = app
        .transfer_put_with_key(
            "box",
            Some(&r.key),
            std::slice::from_ref(&a),
            &dir.display().to_string(),
            &opts(),
            &r.w.env,
            &sink,
        )
        .expect_err("paused");
    assert_eq!(e.code(), "paused");
    let list = app.transfer_list(Some("box")).expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].state, TransferState::Paused);
    assert!(!dir.join("a.txt").exists());
    let rep = app
        .transfer_resume_with_key(list[0].id, Some(&r.key), &r.w.env, &NoProgress)
        .expect("resume");
    assert!(rep.transfers[0].verified);
    assert_eq!(std::fs::read(dir.join("a.txt")).expect("arrived"), b"alpha");
}
