//! gpurent's remote scripts run the same whatever the user's login shell is. sshd hands every exec
//! request to the login shell (`SHELL -c LINE`); these tests log in to a REAL loopback sshd as
//! `gputest-fish` (login shell fish 3) and `gputest-tcsh` (tcsh), both made by
//! `scripts/setup-test-host.sh`. What the real shells do with a POSIX line: fish reads `\\` and
//! `\'` inside single quotes as escapes ("Unexpected end of string, quotes are not balanced" for
//! `'a\'`) and has no `if …; then … fi`; tcsh refuses a newline inside quotes ("Unmatched '''."),
//! i.e. every multi-line script sent as `sh -c '…'`.
//!
//! Needs `/usr/sbin/sshd`, the users and root (skipped otherwise, failing under CI=true).

mod monitor_common;
mod remote_common;

use std::time::{Duration, Instant};

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::events::Progress;
use gpurent_core::infra::secret::Secret;
use gpurent_core::monitor::stream::{run, Flow, StreamOptions, TelemetryEvent};
use gpurent_core::remote::connect::connect;
use gpurent_core::remote::{exec, sh_c, shell_quote, Auth, Endpoint};
use gpurent_core::transfer::TransferOptions;
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::{sshd_available_as, Sshd, SshdOptions, UserKey, FISH_USER, TCSH_USER};
use monitor_common::{fakegpu, write_gpus, Gpu};

const USERS: [&str; 2] = [FISH_USER, TCSH_USER];

/// Arguments that break one shell's quoting or another's.
const NASTY: &[&str] = &[
    "",
    "it's",
    "a\\",
    "back\\\\slash\\'q",
    "$(touch /tmp/gpurent-login-pwned)",
    "`touch /tmp/gpurent-login-pwned`",
    "${HOME} $HOME %s",
    "a;b&&c||d|e > f < g",
    "line1\nline2\n",
    "!history !! !$",
    "{a,b} *.txt ~ #c",
    "数据集 训练.tar 🚀",
];

/// A POSIX script with what fish and tcsh parse differently, and what it must print.
fn posix_script() -> (String, String) {
    let mut script = String::from(
        "set -e\nif [ -n \"${HOME:-}\" ]; then x=$(printf '%s' 'a\\'); fi\n\
         printf '%s|' \"$x\" \"$((6 * 7))\"\n\
         cat <<'EOF'\nhere $doc \\n\nEOF\n\
         for w in one two; do printf '%s,' \"$w\"; done\n",
    );
    let mut want = String::from("a\\|42|here $doc \\n\none,two,");
    for arg in NASTY {
        script.push_str(&format!("printf '<%s>' {}\n", shell_quote(arg).expect("q")));
        want.push_str(&format!("<{arg}>"));
    }
    (script, want)
}

fn sshd_as(user: &'static str) -> (Sshd, UserKey) {
    let sshd = Sshd::start_with(SshdOptions {
        login_user: Some(user),
        ..Default::default()
    })
    .expect("start sshd");
    let key = UserKey::generate("gpurent-login-shell").expect("key");
    sshd.authorize(&key.public_line).expect("authorize");
    (sshd, key)
}

fn connect_to(
    sshd: &Sshd,
    port: u16,
    key: &UserKey,
    cancel: &CancelToken,
) -> Result<gpurent_core::remote::Connection, gpurent_core::remote::RemoteError> {
    let pem = Secret::new(key.private_pem.clone());
    let mut verify = |_: gpurent_core::remote::Role,
                      _: &Endpoint,
                      _: &gpurent_core::remote::hostkey::PresentedKey| Ok(());
    connect(
        &Endpoint::new(sshd.host(), port, sshd.user()),
        None,
        Auth::Key(&pem),
        &remote_common::opts(),
        &mut verify,
        cancel,
    )
}

#[test]
fn posix_scripts_and_quoted_arguments_run_under_fish_and_tcsh_login_shells() {
    for user in USERS {
        if !sshd_available_as(user) {
            return;
        }
        let (sshd, key) = sshd_as(user);
        let cancel = CancelToken::new();
        let conn = connect_to(&sshd, sshd.port(), &key, &cancel).expect("connect");
        // The account's login shell is the one named (sshd runs LINE under it).
        let pw = std::process::Command::new("getent")
            .args(["passwd", user])
            .output()
            .expect("getent");
        let shell = String::from_utf8_lossy(&pw.stdout).trim().to_string();
        let want_shell = user.trim_start_matches("gputest-");
        assert!(shell.ends_with(&format!("/{want_shell}")), "{shell}");
        let (script, want) = posix_script();
        let out = exec(&conn, &sh_c(&script).expect("sh_c"), &cancel).expect("exec");
        assert_eq!(
            (out.exit_status, out.stdout_text()),
            (Some(0), want),
            "{user}: stderr {}",
            out.stderr_text()
        );
        // A plain multi-line script (not wrapped by the caller) is POSIX too.
        let out = exec(
            &conn,
            "if true; then echo \"$((1 + 1))\"; fi\nexit 3",
            &cancel,
        )
        .expect("exec");
        assert_eq!(
            (out.exit_status, out.stdout_text()),
            (Some(3), "2\n".into()),
            "{user}: {}",
            out.stderr_text()
        );
        assert!(!std::path::Path::new("/tmp/gpurent-login-pwned").exists());
    }
}

#[test]
fn a_saved_host_with_a_fish_or_tcsh_login_shell_moves_files_verified() {
    for user in USERS {
        if !sshd_available_as(user) {
            return;
        }
        let (sshd, k) = sshd_as(user);
        let w = remote_common::world();
        let key = remote_common::login_key(&k, "laptop");
        remote_common::add_confirmed(&w, "box", remote_common::spec(&sshd), Some(&key));
        let src = w.tmp.path().join("src");
        let tree = src.join("proj 'q' $(id) 数据");
        std::fs::create_dir_all(tree.join("sub")).expect("mkdir");
        std::fs::write(tree.join("a\\'b.txt"), b"backslash quote").expect("write");
        std::fs::write(tree.join("sub").join("line\nbreak"), b"newline").expect("write");
        let file = src.join("model !1.bin");
        std::fs::write(&file, vec![7u8; 300_000]).expect("write");
        let opts = TransferOptions::default();
        let dir = format!("{}/in 'coming' \\ !x", sshd.home().display());
        let sink = |_: Progress| {};
        w.app
            .transfer_put_with_key(
                "box",
                Some(&key),
                &[file.clone(), tree.clone()],
                &dir,
                &opts,
                &w.env,
                &sink,
            )
            .unwrap_or_else(|e| panic!("{user}: put: {e:?}"));
        let back = w.tmp.path().join("back");
        std::fs::create_dir_all(&back).expect("mkdir");
        let remote_tree = format!("{dir}/{}", tree.file_name().expect("n").to_string_lossy());
        w.app
            .transfer_get_with_key(
                "box",
                Some(&key),
                &[format!("{dir}/model !1.bin"), remote_tree],
                &back,
                &opts,
                &w.env,
                &sink,
            )
            .unwrap_or_else(|e| panic!("{user}: get: {e:?}"));
        assert_eq!(
            std::fs::read(back.join("model !1.bin")).expect("file back"),
            vec![7u8; 300_000]
        );
        let t = back.join(tree.file_name().expect("n"));
        assert_eq!(
            std::fs::read(t.join("a\\'b.txt")).expect("tree back"),
            b"backslash quote"
        );
        assert_eq!(
            std::fs::read(t.join("sub").join("line\nbreak")).expect("tree back"),
            b"newline"
        );
    }
}

#[test]
fn the_telemetry_stream_runs_under_a_fish_login_shell_and_ends_with_the_watch() {
    if !sshd_available_as(FISH_USER) {
        return;
    }
    let host = FakeHost::new(&fakegpu(), "ready_h100").expect("fake host");
    write_gpus(
        &host.dir.path().join("state"),
        &[Gpu::busy(61), Gpu::busy(62)],
        &[],
    );
    let sshd = host.serve_as(FISH_USER).expect("serve");
    let key = UserKey::generate("monitor").expect("key");
    sshd.authorize(&key.public_line).expect("authorize");
    let opts = StreamOptions {
        interval_ms: 200,
        apps_every: 2,
        retry_initial_ms: 100,
        retry_max_ms: 400,
        max_failures: Some(3),
        stall_ms: Some(3000),
    };
    let cancel = CancelToken::new();
    let mut seen: Vec<TelemetryEvent> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    run(
        &mut |c| connect_to(&sshd, sshd.port(), &key, c),
        &opts,
        &SystemClock,
        &mut |ev| {
            seen.push(ev);
            assert!(Instant::now() < deadline, "ran past a minute: {seen:?}");
            let gpus = seen
                .iter()
                .filter(|e| matches!(e, TelemetryEvent::Gpus { gpus, .. } if gpus.len() == 2))
                .count();
            let hosts = seen
                .iter()
                .filter(
                    |e| matches!(e, TelemetryEvent::Host { host, .. } if host.cpu_pct.is_some()),
                )
                .count();
            if gpus >= 3 && hosts >= 2 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        },
        &cancel,
    )
    .expect("stream");
    assert!(
        matches!(seen[0], TelemetryEvent::Connected { attempt: 1, .. }),
        "{seen:?}"
    );
    // Nothing of the stream stays on the host after the watch ends.
    let bin = host.bin().display().to_string();
    let procs = || {
        let out = std::process::Command::new("ps")
            .args(["-u", FISH_USER, "-o", "args="])
            .output()
            .expect("ps");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&bin) || l.contains("gpurent-telemetry"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let t = Instant::now();
    while !procs().is_empty() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(procs(), Vec::<String>::new());
}
