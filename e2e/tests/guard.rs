//! The Guard panel of the Billing step in the real app: a pasted host on the real loopback sshd
//! with the fake GPU tools (`nvidia-smi` reading `state/gpus.csv`, the GPU at 90 %). Power off is
//! refused while the login user is not root and has no passwordless sudo (the code translated,
//! with what to do next); as root with a fake `poweroff` on its PATH the guard is set from the
//! panel, the deadline shown as the clock
//! time it means; its status shows every signal and that the GPU keeps the machine alive; Snooze
//! and Off work on the machine itself. Screenshots in en and zh-CN.

mod harness;

use std::path::{Path, PathBuf};

use harness::{add_key_and_host, Session};

fn fakegpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/gpurent-core/tests/fakegpu")
}

/// nvidia-smi's query names, as the fake reads them from the live file.
const COLUMNS: &str = "index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm,pcie.link.gen.current,pcie.link.width.current,clocks_event_reasons.gpu_idle,clocks_event_reasons.applications_clocks_setting,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.sync_boost";

const FAKE_POWEROFF: &str =
    "#!/bin/sh\necho \"$(date +%s) poweroff $*\" >> \"$FAKEGPU_STATE/poweroff.log\"\n";
const FAKE_ID: &str = "#!/bin/sh\nu=$(cat \"$FAKEGPU_STATE/uid\" 2>/dev/null || echo 0)\ncase \"$1\" in -u) echo \"$u\" ;; -un) [ \"$u\" = 0 ] && echo root || echo gputest ;; *) echo \"uid=$u\" ;; esac\n";
const FAKE_WALL: &str = "#!/bin/sh\n{ date +%s; cat; } >> \"$FAKEGPU_STATE/wall.log\"\n";
const FAKE_CRONTAB: &str = "#!/bin/sh\nf=\"$FAKEGPU_STATE/crontab\"\ncase \"$1\" in\n  -l) [ -f \"$f\" ] || { echo 'no crontab for user' >&2; exit 1; }; cat \"$f\" ;;\n  -) cat > \"$f\" ;;\n  *) exit 2 ;;\nesac\n";

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    // The fake host's tools are symlinks into the shared fakegpu/bin: writing through one would
    // replace the shared fake for every other test (it did: `id`). Replace the link, not its target.
    let _ = std::fs::remove_file(path);
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A process ended on drop (also when the journey fails).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn system_tool(name: &str) -> std::path::PathBuf {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .expect("system tool")
}

#[tokio::test]
async fn guard_panel_set_status_snooze_off() {
    if !gpurent_testhost::sshd_available() {
        return;
    }
    let mut host =
        gpurent_testhost::fakegpu::FakeHost::new(&fakegpu_dir(), "ready_h100").expect("fake host");
    // A quiet machine: the guard's CPU and network readings come from a fixed /proc and cgroup
    // under GPURENT_PROC_ROOT (this machine's own are busy with the build), so only the GPU keeps
    // it alive.
    let root = host.dir.path().join("sysroot");
    std::fs::create_dir_all(root.join("proc/net")).expect("sysroot");
    std::fs::create_dir_all(root.join("sys/fs/cgroup")).expect("sysroot");
    std::fs::write(
        root.join("proc/stat"),
        "cpu  1000 0 100 500000 20 0 3 0 0 0\n",
    )
    .expect("stat");
    std::fs::write(
        root.join("proc/net/dev"),
        "Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n    lo: 5000 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n  eth0: 100000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n",
    )
    .expect("net/dev");
    std::fs::write(
        root.join("sys/fs/cgroup/cpu.stat"),
        "usage_usec 1000000\nuser_usec 1000000\nsystem_usec 0\n",
    )
    .expect("cpu.stat");
    host.vars
        .insert("GPURENT_PROC_ROOT".into(), root.display().to_string());
    let bin = host.bin();
    for t in ["mv", "nohup"] {
        let target = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .expect("system tool");
        std::os::unix::fs::symlink(target, bin.join(t)).expect("link tool");
    }
    // Who logs in, from a state file: a user with no sudo first, then root. (The guard finds
    // poweroff off the login PATH too — /usr/sbin here — so "no poweroff" cannot be arranged on
    // this machine; "not root and no sudo" can.)
    write_exec(&bin.join("id"), FAKE_ID);
    write_exec(&bin.join("wall"), FAKE_WALL);
    write_exec(&bin.join("crontab"), FAKE_CRONTAB);
    // A cron daemon runs (the guard writes an @reboot line only where one does): a process named
    // cron, ended when the journey ends.
    std::os::unix::fs::symlink(system_tool("sleep"), bin.join("cron")).expect("link cron");
    let _cron = Child(
        std::process::Command::new(bin.join("cron"))
            .arg("3600")
            .spawn()
            .expect("fake cron"),
    );
    let state = host.dir.path().join("state");
    std::fs::write(
        state.join("gpus.csv"),
        format!("{COLUMNS}\n0,GPU-00000000-fake-guard,NVIDIA H100 80GB HBM3,90,40,30145,81559,60,520.00,700.00,1980,5,16,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active,Not Active\n"),
    )
    .expect("gpus.csv");
    std::fs::write(state.join("apps.csv"), "gpu_uuid,pid,used_memory\n").expect("apps.csv");
    let sshd = host.serve().expect("serve the fake host");

    let s = Session::start().await;
    s.wait_css("body[data-ready='true']").await;
    add_key_and_host(&s, &sshd, "gpu").await;

    // Billing → the Guard panel: a pasted host is offered power off and its own command, not
    // stop/release; each action says what it does to the bill.
    s.click("#nav-billing").await;
    s.wait_css("#guard-card #guard-host").await;
    s.wait_css("#guard-not-set").await;
    assert_eq!(
        s.count("#guard-controls[hidden]").await,
        1,
        "no Snooze/Off before a guard is set"
    );
    assert_eq!(s.attr("#guard-card", "data-provider").await, "pasted");
    assert_eq!(s.count("#guard-action option").await, 2);
    s.wait_css("#guard-action option[value='poweroff']").await;
    assert!(s.text("#guard-action-money").await.contains("VM"));
    s.fill("#guard-idle", "20").await;
    s.fill("#guard-util", "10").await;
    // No deadline yet: said as a warning where it is chosen.
    let none = s.text("#guard-deadline-at").await;
    assert!(
        none.contains("nothing bounds the bill"),
        "no deadline is a warning: {none}"
    );
    s.fill("#guard-deadline", "2.5h").await;
    let mut at = String::new();
    // Up to 30 s, a hang guard only (50 polls could run out on a loaded machine).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < until {
        at = s.text("#guard-deadline-at").await;
        if at.starts_with("that is ") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        at.starts_with("that is ") && at.contains(':'),
        "the clock time: {at}"
    );

    // Not root and no passwordless sudo: refused before anything is installed, with what to do
    // next.
    std::fs::write(state.join("uid"), "1001\n").expect("uid");
    s.click("#guard-set").await;
    s.wait_css("#guard-error[data-code='guard_poweroff_unavailable']")
        .await;
    assert!(s.text("#guard-error .guard-next").await.contains("sudo"));
    assert!(!host
        .dir
        .path()
        .join("home/.gpurent/guard/guard.sh")
        .exists());
    s.scroll_to("#guard-card").await;
    s.screenshot("guard-refused-en").await;

    // As root with a poweroff on its PATH (a fake that only logs): set, running, its command by
    // full path and the reboot start said.
    std::fs::write(state.join("uid"), "0\n").expect("uid");
    write_exec(&bin.join("poweroff"), FAKE_POWEROFF);
    s.click("#guard-set").await;
    s.wait_css("#guard-set-ok[data-running='true']").await;
    let lines = s.text("#guard-result").await;
    let runs = format!("When it acts it runs: {}", bin.join("poweroff").display());
    assert!(lines.contains(&runs), "{lines}");
    assert!(lines.contains("crontab @reboot"), "{lines}");
    assert!(host
        .dir
        .path()
        .join("home/.gpurent/guard/guard.sh")
        .exists());

    // The status read after the first sample: every signal, the GPU keeps it alive.
    s.wait_css("#guard-signals tr[data-signal='gpu'][data-state='busy']")
        .await;
    assert_eq!(s.attr("#guard-because", "data-decision").await, "keep");
    // The first sample has no CPU or network delta yet: those count as busy too (unreadable is
    // busy), after the GPU.
    let why = s.attr("#guard-because", "data-why").await;
    assert!(why.split(',').next() == Some("gpu"), "{why}");
    assert!(s.text("#guard-because").await.contains("GPU"));
    let gpu = s
        .text("#guard-signals tr[data-signal='gpu'] td.reading")
        .await;
    assert!(gpu.contains("90"), "{gpu}");
    assert_eq!(
        s.text("#guard-signals tr[data-signal='gpu'] td.keeps")
            .await,
        "yes"
    );
    assert_eq!(
        s.attr("#guard-signals tr[data-signal='ssh']", "data-state")
            .await,
        "idle"
    );
    assert_eq!(s.count("#guard-signals tbody tr").await, 7);
    assert_eq!(s.text("#guard-idle-since").await, "not idle");
    assert!(s
        .text("#guard-deadline-shown")
        .await
        .contains("(in 2 h 29 min"));
    s.wait_css("#guard-decisions li[data-decision='keep']")
        .await;
    assert!(s.text("#guard-spec").await.contains("20 min"));
    s.scroll_to("#guard-status").await;
    s.screenshot("guard-status-en").await;

    // Snooze: written on the machine, read back.
    s.fill("#guard-snooze-for", "45m").await;
    s.click("#guard-snooze").await;
    s.wait_css("#guard-snoozed").await;
    let until: i64 = std::fs::read_to_string(host.dir.path().join("home/.gpurent/guard/snooze"))
        .expect("snooze file")
        .trim()
        .parse()
        .expect("snooze time");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    assert!(
        (until - now - 2700).abs() < 60,
        "snoozed for 45 min: {until} vs {now}"
    );

    // 中文: the same panel.
    s.click("#rail-settings").await;
    s.select("#settings-language", "zh-CN").await;
    s.wait_text("h1", "设置").await;
    s.click("#nav-billing").await;
    s.wait_css("#guard-signals tr[data-signal='gpu'][data-state='busy']")
        .await;
    assert!(s.text("#guard-because").await.starts_with("保持运行的原因"));
    s.scroll_to("#guard-card").await;
    s.screenshot("guard-form-zh").await;
    s.scroll_to("#guard-status").await;
    s.screenshot("guard-status-zh").await;

    // Off: the loop ends and the reboot start is removed; the panel says so.
    s.click("#guard-off").await;
    s.wait_css("#guard-is-off").await;
    assert_eq!(s.count("#guard-controls[hidden]").await, 1);
    let cron = std::fs::read_to_string(state.join("crontab")).unwrap_or_default();
    assert!(!cron.contains("gpurent-guard"), "{cron}");
    assert!(
        std::fs::read_to_string(state.join("poweroff.log")).is_err(),
        "the busy machine was never powered off"
    );
    s.finish().await;
}
