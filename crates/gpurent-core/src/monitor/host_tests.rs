use super::*;

/// What `head -n 4000 /proc/…` prints for one snapshot (counters in jiffies, kB, sectors, bytes).
fn snapshot_text(
    up: f64,
    cpu0: [u64; 5],
    cpu1: [u64; 5],
    sectors: (u64, u64),
    net: (u64, u64),
) -> String {
    let line = |n: &str, c: [u64; 5]| {
        // user nice system idle iowait irq softirq steal guest guest_nice
        format!("{n} {} 0 {} {} {} 0 0 0 7 0", c[0], c[1], c[2], c[3])
    };
    let all = [
        cpu0[0] + cpu1[0],
        cpu0[1] + cpu1[1],
        cpu0[2] + cpu1[2],
        cpu0[3] + cpu1[3],
        0,
    ];
    format!(
        "==> /proc/uptime <==\n{up:.2} 100.00\n\n\
         ==> /proc/stat <==\n{}\n{}\n{}\nintr 1 2 3\nctxt 99\n\n\
         ==> /proc/meminfo <==\nMemTotal:       16384000 kB\nMemFree:  100 kB\nMemAvailable:    4096000 kB\n\n\
         ==> /proc/diskstats <==\n   7       0 loop0 5 0 999999 0 0 0 0 0 0 0 0\n 259       0 nvme0n1 10 0 {} 0 20 0 {} 0 0 0 0\n 259       1 nvme0n1p1 10 0 {} 0 20 0 {} 0 0 0 0\n 253       0 dm-0 1 0 {} 0 2 0 {} 0 0 0 0\n   8       0 sda 1 0 8 0 1 0 16 0 0 0 0\n   8       1 sda1 1 0 8 0 1 0 16 0 0 0 0\n\n\
         ==> /proc/net/dev <==\nInter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 5000000 1 0 0 0 0 0 0 5000000 1 0 0 0 0 0 0\n  eth0: {} 10 0 0 0 0 0 0 {} 10 0 0 0 0 0 0\n\
         ==> end <==\n",
        line("cpu", all),
        line("cpu0", cpu0),
        line("cpu1", cpu1),
        sectors.0, sectors.1, sectors.0, sectors.1, sectors.0, sectors.1,
        net.0, net.1
    )
}

fn snapshots(text: &str) -> Vec<ProcSnapshot> {
    let mut s = ProcStream::new();
    text.lines()
        .filter_map(|l| match s.push_line(l) {
            Some(ProcEvent::Snapshot(p)) => Some(p),
            _ => None,
        })
        .collect()
}

/// Runs the host loop `script` (under the proc root `root`, if any) until it has printed `n`
/// whole samples, then ends it: (stdout, stderr). Waited for, up to 30 s (a hang guard): the
/// tests gave it `timeout 1`, and a loaded machine ran fewer samples than they needed in 1 s.
fn run_loop(script: &str, root: Option<&std::path::Path>, n: usize) -> (String, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut c = std::process::Command::new("sh");
    c.args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(r) = root {
        c.env("GPURENT_PROC_ROOT", r);
    }
    let mut child = c.spawn().expect("sh");
    let mut out = child.stdout.take().expect("stdout");
    let (mut text, mut buf) = (Vec::new(), [0u8; 4096]);
    let t = std::time::Instant::now();
    while snapshots(&String::from_utf8_lossy(&text)).len() < n {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(30),
            "{}",
            String::from_utf8_lossy(&text)
        );
        let k = out.read(&mut buf).expect("read");
        if k == 0 {
            break;
        }
        text.extend_from_slice(&buf[..k]);
    }
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    (String::from_utf8_lossy(&text).into_owned(), err)
}

#[test]
fn a_snapshot_reads_every_file() {
    let s = &snapshots(&snapshot_text(
        1000.5,
        [100, 50, 800, 50, 0],
        [10, 10, 980, 0, 0],
        (2048, 4096),
        (1_000_000, 2_000_000),
    ))[0];
    assert_eq!(s.uptime_s, Some(1000.5));
    assert_eq!(s.cores.len(), 2);
    assert_eq!(
        s.cpu,
        Some(CpuTimes {
            busy: 110 + 60,
            idle: 1780,
            iowait: 50
        })
    );
    assert_eq!(s.mem_total_kib, Some(16_384_000));
    assert_eq!(s.mem_available_kib, Some(4_096_000));
    assert_eq!(
        s.disk_read_bytes,
        Some((2048 + 8) * 512),
        "nvme0n1 + sda; partitions, loop and dm not counted twice"
    );
    assert_eq!(s.disk_written_bytes, Some((4096 + 16) * 512));
    assert_eq!(s.net_rx_bytes, Some(1_000_000), "lo left out");
    assert_eq!(s.net_tx_bytes, Some(2_000_000));
}

#[test]
fn rates_come_from_two_snapshots_over_the_hosts_uptime() {
    let text = snapshot_text(
        1000.0,
        [100, 0, 100, 0, 0],
        [100, 0, 100, 0, 0],
        (0, 0),
        (0, 0),
    ) + &snapshot_text(
        1002.0,
        // core 0 fully busy for 200 jiffies; core 1: 50 busy, 100 idle, 50 iowait.
        [300, 0, 100, 0, 0],
        [150, 0, 200, 50, 0],
        (4096, 2048),
        (2_000_000, 500_000),
    );
    let s = snapshots(&text);
    let first = s[0].sample(None);
    assert_eq!(first.cpu_pct, None);
    assert!(first.cores_pct.is_empty());
    assert_eq!(first.mem_total_mib, Some(16000.0));
    assert_eq!(first.mem_used_mib, Some(12000.0));
    let h = s[1].sample(Some(&s[0]));
    assert_eq!(h.cores_pct, vec![100.0, 25.0]);
    assert_eq!(h.cpu_pct, Some(62.5));
    assert_eq!(h.cpu_iowait_pct, Some(12.5));
    assert_eq!(h.disk_read_bps, Some(4096.0 * 512.0 / 2.0));
    assert_eq!(h.disk_write_bps, Some(2048.0 * 512.0 / 2.0));
    assert_eq!(h.net_rx_bps, Some(1_000_000.0));
    assert_eq!(h.net_tx_bps, Some(250_000.0));
    assert_eq!(h.net_rx_bytes, Some(2_000_000), "cumulative counters stay");
}

#[test]
fn a_counter_that_went_backwards_gives_no_rate() {
    let a = ProcSnapshot {
        uptime_s: Some(10.0),
        net_rx_bytes: Some(100),
        ..Default::default()
    };
    let b = ProcSnapshot {
        uptime_s: Some(5.0),
        net_rx_bytes: Some(50),
        ..Default::default()
    };
    assert_eq!(b.sample(Some(&a)).net_rx_bps, None);
}

#[test]
fn missing_files_are_none_and_apps_sections_are_their_own_event() {
    let text = "==> /proc/stat <==\ncpu 1 2 3 4 5 6 7 8 0 0\n==> apps <==\ngpu_uuid, pid, used_gpu_memory [MiB]\nGPU-1, 42, 100\n==> apps end <==\n==> end <==\n";
    let mut s = ProcStream::new();
    let ev: Vec<ProcEvent> = text.lines().filter_map(|l| s.push_line(l)).collect();
    assert_eq!(ev.len(), 2);
    match &ev[0] {
        ProcEvent::Apps(a) => assert_eq!(a[0].pid, Some(42)),
        other => panic!("{other:?}"),
    }
    match &ev[1] {
        ProcEvent::Snapshot(p) => {
            assert_eq!(p.uptime_s, None);
            assert_eq!(p.mem_total_kib, None);
            assert_eq!(p.net_rx_bytes, None);
            assert!(p.cpu.is_some());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_loop_script_prints_the_files_and_an_end_marker_each_interval() {
    let s = proc_loop_script(
        1500,
        Some("nvidia-smi --query-compute-apps=pid --format=csv"),
        5,
    );
    assert!(s.contains(
        r#"head -n 4000 "$r"/proc/uptime "$r"/proc/stat "$r"/proc/meminfo "$r"/proc/diskstats "$r"/proc/net/dev"#
    ));
    assert!(s.contains("sleep 1.500"));
    assert!(s.contains("$((i % 5))"));
    assert!(!proc_loop_script(250, None, 5).contains("apps"));
    assert!(proc_loop_script(250, None, 5).contains("sleep 0.250"));
}

#[test]
fn the_loop_script_runs_here_and_parses() {
    let (out, _) = run_loop(&proc_loop_script(200, None, 1), None, 2);
    let s = snapshots(&out);
    assert!(s.len() >= 2, "{s:?}");
    let h = s[1].sample(Some(&s[0]));
    assert!(h.uptime_s.is_some() && h.mem_total_mib.is_some());
    assert!(
        h.cpu_pct.is_some_and(|p| (0.0..=100.0).contains(&p)),
        "{h:?}"
    );
    assert!(!h.cores_pct.is_empty());
}

#[test]
fn the_loop_reads_under_a_proc_root_when_the_host_sets_one() {
    let root = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(root.path().join("proc/net")).expect("dir");
    std::fs::write(root.path().join("proc/uptime"), "42.50 1.00\n").expect("w");
    std::fs::write(
        root.path().join("proc/meminfo"),
        "MemTotal: 2048 kB\nMemAvailable: 1024 kB\n",
    )
    .expect("w");
    let (out, _) = run_loop(&proc_loop_script(200, None, 1), Some(root.path()), 1);
    let s = snapshots(&out);
    assert_eq!(s[0].uptime_s, Some(42.5));
    assert_eq!(s[0].mem_total_kib, Some(2048));
    assert_eq!(s[0].cpu, None, "no stat file there");
}

/// A container's snapshot: the machine's `/proc` (64 cores, 1 TiB, other tenants busy) and the
/// container's cgroup v2 files (a 4-core quota, 32 GiB).
fn container_text(up: f64, machine_busy: u64, usage_usec: u64) -> String {
    let mut t = format!("==> /proc/uptime <==\n{up:.2} 1.00\n==> /proc/stat <==\n");
    t += &format!("cpu {} 0 0 {} 0 0 0 0 0 0\n", machine_busy * 2, 1000);
    t += &format!("cpu0 {machine_busy} 0 0 500 0 0 0 0 0 0\n");
    t += &format!("cpu1 {machine_busy} 0 0 500 0 0 0 0 0 0\n");
    t += "==> /proc/meminfo <==\nMemTotal: 1073741824 kB\nMemAvailable: 107374182 kB\n";
    t += "==> /sys/fs/cgroup/cpu.max <==\n400000 100000\n";
    t += &format!(
        "==> /sys/fs/cgroup/cpu.stat <==\nusage_usec {usage_usec}\nuser_usec 1\nsystem_usec 1\n"
    );
    t += "==> /sys/fs/cgroup/memory.current <==\n8589934592\n";
    t += "==> /sys/fs/cgroup/memory.max <==\n34359738368\n";
    t += "==> /sys/fs/cgroup/memory.stat <==\nanon 1\nfile 2\ninactive_file 1073741824\n";
    t += "==> end <==\n";
    t
}

#[test]
fn in_a_container_cpu_and_ram_are_the_cgroups_not_the_machines() {
    // Two seconds apart: the machine's cores went from 0 to 1000 busy jiffies (other tenants),
    // the container used 2 s of CPU of its 4-core quota (25 %).
    let a = &snapshots(&container_text(100.0, 0, 10_000_000))[0];
    let b = &snapshots(&container_text(102.0, 1000, 12_000_000))[0];
    let h = b.sample(Some(a));
    assert!(h.in_container);
    assert_eq!(h.cpu_limit_cores, Some(4.0));
    assert_eq!(h.mem_total_mib, Some(32_768.0), "memory.max, not MemTotal");
    assert_eq!(
        h.mem_used_mib,
        Some(7_168.0),
        "memory.current less inactive_file"
    );
    assert_eq!(
        h.cpu_pct,
        Some(25.0),
        "the container's CPU against its quota"
    );
    assert!(
        h.cores_pct.is_empty(),
        "the machine's cores are other tenants' too"
    );
    assert_eq!(h.cpu_iowait_pct, None);
}

#[test]
fn a_root_cgroup_is_not_a_container() {
    // cpu.stat exists in a root cgroup; without a limit file the machine's /proc counts.
    let text = "==> /proc/uptime <==\n1.00 1.00\n==> /proc/stat <==\ncpu 1 0 0 1 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n==> /sys/fs/cgroup/cpu.stat <==\nusage_usec 5\n==> end <==\n";
    let s = &snapshots(text)[0];
    assert_eq!(s.cgroup, None);
    assert!(!s.sample(None).in_container);
}

#[test]
fn the_gpu_processes_carry_their_command_line_and_their_own_cpu_use() {
    let apps = |up: f64, ticks: u64| {
        format!(
            "==> /proc/uptime <==\n{up:.2} 1.00\n==> apps <==\ngpu_uuid, pid, used_gpu_memory [MiB]\nGPU-1, 4242, 18000\n\
             stat 4242 (pt_main thread) S 1 4242 4242 0 -1 4194560 1 0 0 0 {ticks} 0 0 0 20 0\n\
             cmd 4242 /usr/bin/python3 train.py --data a,b\n==> apps end <==\n==> end <==\n"
        )
    };
    let mut s = ProcStream::new();
    let mut got = Vec::new();
    for text in [apps(100.0, 1000), apps(105.0, 1495)] {
        for l in text.lines() {
            if let Some(ProcEvent::Apps(a)) = s.push_line(l) {
                got.push(a);
            }
        }
    }
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].len(), 1, "the stat and cmd lines are not processes");
    assert_eq!(
        got[0][0].command.as_deref(),
        Some("/usr/bin/python3 train.py --data a,b")
    );
    assert_eq!(got[0][0].cpu_pct, None, "no earlier reading");
    // 495 ticks of 100 Hz in 5 s: 99 % of a core.
    assert_eq!(got[1][0].cpu_pct, Some(99.0));
}

#[test]
fn the_loop_prints_the_cgroup_and_each_gpu_process_under_a_proc_root() {
    let root = tempfile::tempdir().expect("tmp");
    let p = root.path();
    std::fs::create_dir_all(p.join("proc/4242")).expect("dir");
    std::fs::create_dir_all(p.join("sys/fs/cgroup")).expect("dir");
    std::fs::write(p.join("proc/uptime"), "42.50 1.00\n").expect("w");
    std::fs::write(
        p.join("proc/4242/stat"),
        "4242 (python3) S 1 4242 4242 0 -1 0 0 0 0 0 700 300 0 0 20 0\n",
    )
    .expect("w");
    std::fs::write(
        p.join("proc/4242/cmdline"),
        "python3\0train.py\0--lr\x001e-4\0",
    )
    .expect("w");
    std::fs::write(p.join("sys/fs/cgroup/cpu.max"), "200000 100000\n").expect("w");
    std::fs::write(p.join("sys/fs/cgroup/memory.max"), "max\n").expect("w");
    let smi = "printf 'gpu_uuid, pid, used_gpu_memory [MiB]\\nGPU-1, 4242, 100\\nGPU-1, 999, 5\\n'";
    // Two samples: the first one's processes are printed whole by then.
    let (text, err) = run_loop(&proc_loop_script(200, Some(smi), 1), Some(p), 2);
    let mut s = ProcStream::new();
    let (mut apps, mut snaps) = (None, Vec::new());
    for l in text.lines() {
        match s.push_line(l) {
            Some(ProcEvent::Apps(a)) => apps = apps.or(Some(a)),
            Some(ProcEvent::Snapshot(x)) => snaps.push(x),
            None => {}
        }
    }
    let apps = apps.expect("apps");
    assert_eq!(apps.len(), 2, "{text}");
    assert_eq!(
        apps[0].command.as_deref(),
        Some("python3 train.py --lr 1e-4")
    );
    assert_eq!(apps[1].command, None, "pid 999 is not there");
    assert_eq!(
        snaps[0].cgroup.as_ref().and_then(|c| c.cpu_quota_cores),
        Some(2.0)
    );
    assert!(err.trim().is_empty(), "{err:?}");
}
