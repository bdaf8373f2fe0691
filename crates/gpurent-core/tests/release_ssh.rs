//! The release checklist over a REAL loopback sshd (`gpurent-testhost`), the machine a fake GPU
//! host: result folders are really downloaded with `App::transfer_get_with_key` (so the transfer
//! journal knows what was downloaded and when), one of them then changes on the machine; the
//! checklist (one exec on the machine) lists the changed folder with the new file, does not list
//! the unchanged one, lists a never-downloaded folder and a missing one, and the environment
//! recipe carries the fake `pip freeze` and the PyTorch index of its `+cu128` torch. Saving the
//! recipe writes a replayable sh script under the data dir.
//!
//! Needs `/usr/sbin/sshd` and the `gputest` user: skipped with a message otherwise, failing under
//! `CI=true`.

mod remote_common;
mod setup_common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::events::NoProgress;
use gpurent_core::transfer::TransferOptions;
use gpurent_testhost::{sshd_available, UserKey};
use remote_common::{add_confirmed, login_key, spec, world_with};
use setup_common::FakeHost;

const LABEL: &str = "gpu";

#[test]
fn checklist_lists_changed_folders_and_the_recipe_has_the_pip_freeze() {
    if !sshd_available() {
        return;
    }
    let host = FakeHost::new("ready_h100");
    let bin = host.bin();
    for t in [
        "mv",
        "find",
        "tar",
        "sha256sum",
        "xargs",
        "stat",
        "gzip",
        "ln",
        "readlink",
    ] {
        if bin.join(t).exists() {
            continue;
        }
        if let Some(target) = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
        {
            std::os::unix::fs::symlink(target, bin.join(t)).expect("link tool");
        }
    }
    let home = host.dir.path().join("home");
    for (dir, file) in [
        ("results", "epoch1.ckpt"),
        ("logs", "train.log"),
        ("never", "x.txt"),
        ("moved", "a.txt"),
        ("real-ckpt", "step1.pt"),
        ("real-ckpt", "step2.pt"),
    ] {
        std::fs::create_dir_all(home.join(dir)).expect("dir");
        std::fs::write(home.join(dir).join(file), b"old bytes\n").expect("file");
    }
    // A results folder that is a symlink (to a bigger disk, say): never downloaded.
    std::os::unix::fs::symlink(home.join("real-ckpt"), home.join("linked")).expect("symlink");
    // A file staged long ago elsewhere: after the download it is moved in with its old mtime.
    let staged = home.join("staged.bin");
    std::fs::write(&staged, b"moved bytes\n").expect("staged");
    let st = std::process::Command::new("touch")
        .args(["-d", "2020-01-01"])
        .arg(&staged)
        .status()
        .expect("touch");
    assert!(st.success());
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate("release").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");

    // The app's own clock is the real one here: the journal's times and the machine's mtimes
    // are compared (through the skew the checklist measures).
    let w = world_with(Arc::new(SystemClock));
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));

    // The files were written more than a second before the downloads start (mtimes have 1 s
    // resolution in the reference comparison).
    std::thread::sleep(Duration::from_millis(1200));
    let results = home.join("results").display().to_string();
    let logs = home.join("logs").display().to_string();
    let moved = home.join("moved").display().to_string();
    let local = w.tmp.path().join("downloads");
    for remote in [&results, &logs, &moved] {
        let rep = w
            .app
            .transfer_get_with_key(
                LABEL,
                Some(&key),
                std::slice::from_ref(remote),
                &local,
                &TransferOptions::default(),
                &w.env,
                &NoProgress,
            )
            .expect("download");
        assert!(
            rep.transfers
                .iter()
                .all(|t| t.state == gpurent_core::transfer::TransferState::Done),
            "{rep:?}"
        );
    }
    // After the download, training writes a new checkpoint into results/.
    std::thread::sleep(Duration::from_millis(1200));
    std::fs::write(home.join("results/epoch2.ckpt"), b"new bytes\n").expect("new file");
    std::fs::rename(&staged, home.join("moved/staged.bin")).expect("mv");

    let never = home.join("never").display().to_string();
    let gone = home.join("gone").display().to_string();
    let linked = home.join("linked").display().to_string();
    let folders = vec![
        results.clone(),
        logs.clone(),
        never.clone(),
        gone.clone(),
        linked.clone(),
        moved.clone(),
    ];
    let c = w
        .app
        .release_checklist(LABEL, &folders, &w.env, Some(&key), &CancelToken::new())
        .expect("checklist");
    assert_eq!(c.remote_error, None, "{c:?}");
    assert_eq!(c.host.as_deref(), Some(LABEL));
    let changed: Vec<&str> = c.changed.iter().map(|f| f.path.as_str()).collect();
    assert!(changed.contains(&results.as_str()), "{c:#?}");
    assert!(
        !changed.contains(&logs.as_str()),
        "unchanged is not listed: {c:#?}"
    );
    assert_eq!(c.unchanged, vec![logs.clone()], "{c:#?}");
    assert_eq!(c.missing, vec![gone.clone()], "{c:#?}");
    let r = c
        .changed
        .iter()
        .find(|f| f.path == results)
        .expect("results");
    assert_eq!(r.reason, "changed_since_download");
    assert_eq!(r.files_changed, 1, "only the new file: {r:?}");
    assert!(r.sample[0].ends_with("results/epoch2.ckpt"), "{r:?}");
    assert!(r.last_downloaded_ms.is_some());
    let n = c.changed.iter().find(|f| f.path == never).expect("never");
    assert_eq!(n.reason, "never_downloaded");
    // The symlinked folder is followed (before: 0 files, "up to date").
    let l = c
        .changed
        .iter()
        .find(|f| f.path == linked)
        .unwrap_or_else(|| panic!("linked: {c:#?}"));
    assert_eq!(
        (l.reason.as_str(), l.files_changed),
        ("never_downloaded", 2),
        "{l:?}"
    );
    // The file moved in keeps its 2020 mtime; its change time is new (before: "up to date").
    let m = c
        .changed
        .iter()
        .find(|f| f.path == moved)
        .unwrap_or_else(|| panic!("moved: {c:#?}"));
    assert_eq!(m.files_changed, 1, "{m:?}");
    assert!(m.sample[0].ends_with("moved/staged.bin"), "{m:?}");
    assert!(c.unchecked.is_empty(), "{c:?}");
    // A pasted host: no provider disks or stop price, and no saved Setup probe.
    assert!(c.disks.is_empty() && c.stop_instead.is_none(), "{c:?}");
    assert!(c.notes.contains(&"no_setup_probe".to_string()), "{c:?}");

    // The recipe: the fake pip freeze, PyTorch from its index.
    let recipe = c.recipe.clone().expect("recipe");
    assert!(
        recipe
            .pip_freeze
            .contains(&"fakegpu-results==0.1".to_string()),
        "{recipe:?}"
    );
    assert!(recipe
        .pip_freeze
        .contains(&"torch==2.8.0+cu128".to_string()));
    assert_eq!(
        recipe.torch_index.as_deref(),
        Some("https://download.pytorch.org/whl/cu128")
    );
    assert!(
        recipe.script.contains("fakegpu-results==0.1"),
        "{}",
        recipe.script
    );
    assert!(
        recipe
            .script
            .contains("--index-url 'https://download.pytorch.org/whl/cu128'"),
        "{}",
        recipe.script
    );
    let path = w.app.release_save_recipe(&recipe).expect("save");
    assert!(path.starts_with(
        &w.tmp
            .path()
            .join("gpurent/data/recipes")
            .display()
            .to_string()
    ));
    assert_eq!(std::fs::read_to_string(&path).expect("read"), recipe.script);
    let st = std::process::Command::new("sh")
        .arg("-n")
        .arg(&path)
        .status()
        .expect("sh -n");
    assert!(st.success(), "the saved recipe is valid sh");
}

/// An environment recipe saved from one machine replays on the next: PyTorch from its own index
/// and everything else through `pip install -r /dev/stdin`, into the Python Setup found there
/// (`python3` without a probe), every line streamed as it comes; a script that fails says so
/// (exit status and its last lines) instead of passing; only a saved recipe's file name is taken.
#[test]
fn a_saved_recipe_replays_on_the_next_machine() {
    use gpurent_core::infra::events::Progress;
    use gpurent_core::release::{recipe_script, EnvRecipe};
    use gpurent_core::Coded;
    use std::sync::Mutex;

    if !sshd_available() {
        return;
    }
    let host = FakeHost::new("ready_h100");
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate("replay").expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    let w = world_with(Arc::new(SystemClock));
    add_confirmed(&w, LABEL, spec(&sshd), Some(&key));

    let freeze: Vec<String> = ["numpy==2.1.3", "torch==2.8.0+cu128", "einops==0.8.0"]
        .map(String::from)
        .to_vec();
    let script = recipe_script(
        "old-box",
        "2026-12-01T12:00:00Z",
        Some("python3"),
        &freeze,
        Some("https://download.pytorch.org/whl/cu128"),
        &[],
        &[],
    )
    .expect("script");
    let saved = w
        .app
        .release_save_recipe(&EnvRecipe {
            host: "old-box".into(),
            python: Some("python3".into()),
            pip_freeze: freeze.clone(),
            torch_index: Some("https://download.pytorch.org/whl/cu128".into()),
            pip_index: vec![],
            apt_packages: vec![],
            skipped: vec![],
            script,
        })
        .expect("save");
    let list = w.app.env_recipes().expect("list");
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0].path, saved);
    assert_eq!((list[0].host.as_str(), list[0].packages), ("old-box", 3));

    let lines: Mutex<Vec<String>> = Mutex::default();
    let sink = |p: Progress| {
        if let Progress::Log { line } = p {
            lines.lock().expect("lines").push(line);
        }
    };
    let cancel = CancelToken::new();
    let report = w
        .app
        .env_recipe_replay_with_key(LABEL, &list[0].name, &w.env, &key, &sink, &cancel)
        .expect("replay");
    assert!(report.ok, "{report:?}");
    assert_eq!(report.python, "python3");
    let state = host.dir.path().join("state");
    let reqs = std::fs::read_to_string(state.join("requirements.log")).expect("requirements");
    assert_eq!(
        reqs.lines().collect::<Vec<_>>(),
        ["numpy==2.1.3", "einops==0.8.0"]
    );
    let installed = std::fs::read_to_string(state.join("installed.env")).expect("torch");
    assert!(
        installed.contains("FAKE_TORCH_VERSION=2.8.0+cu128"),
        "{installed}"
    );
    let seen = lines.lock().expect("lines").clone();
    assert!(
        seen.iter()
            .any(|l| l.contains("Looking in indexes: https://download.pytorch.org/whl/cu128")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.starts_with("Successfully installed numpy-2.1.3")),
        "{seen:?}"
    );

    // A recipe whose install fails on the new machine is a failed replay, with pip's exit
    // status and last lines.
    let missing = vec!["nosuchpkg-gpurent==1.0".to_string()];
    let failing = w
        .app
        .release_save_recipe(&EnvRecipe {
            host: "broken".into(),
            python: None,
            pip_freeze: missing.clone(),
            torch_index: None,
            pip_index: vec![],
            apt_packages: vec![],
            skipped: vec![],
            script: recipe_script("broken", "now", None, &missing, None, &[], &[]).expect("script"),
        })
        .expect("save");
    let name = Path::new(&failing)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let bad = w
        .app
        .env_recipe_replay_with_key(LABEL, &name, &w.env, &key, &NoProgress, &cancel)
        .expect("ran");
    assert!(!bad.ok);
    assert_eq!(bad.exit_status, Some(1));
    assert_eq!(
        bad.tail.last().map(String::as_str),
        Some("ERROR: No matching distribution found for nosuchpkg-gpurent==1.0")
    );
    // A saved file with a line gpurent does not write (edited, or poisoned by an older
    // gpurent's heredoc) never reaches the machine: refused before any connection.
    let edited = w
        .app
        .release_save_recipe(&EnvRecipe {
            host: "edited".into(),
            python: None,
            pip_freeze: vec![],
            torch_index: None,
            pip_index: vec![],
            apt_packages: vec![],
            skipped: vec![],
            script: "#!/bin/sh\necho 'about to fail'\ntouch ~/edited-ran\n".into(),
        })
        .expect("save");
    let name = Path::new(&edited)
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let e = w
        .app
        .env_recipe_replay_with_key(LABEL, &name, &w.env, &key, &NoProgress, &cancel)
        .expect_err("an edited recipe is refused");
    assert_eq!(e.code(), "invalid_input", "{e:?}");
    // Only a saved recipe's name: no path goes to the machine.
    for evil in ["../../etc/passwd", "/etc/passwd", "x.txt", ".sh"] {
        let e = w
            .app
            .env_recipe_replay_with_key(LABEL, evil, &w.env, &key, &NoProgress, &cancel)
            .expect_err(evil);
        assert_eq!(e.code(), "invalid_input", "{evil}: {e}");
    }
}
