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
    let out = std::process::Command::new("timeout")
        .args(["1", "sh", "-c", &proc_loop_script(200, None, 1)])
        .output()
        .expect("sh");
    let s = snapshots(&String::from_utf8_lossy(&out.stdout));
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
    let out = std::process::Command::new("timeout")
        .args(["1", "sh", "-c", &proc_loop_script(200, None, 1)])
        .env("GPURENT_PROC_ROOT", root.path())
        .output()
        .expect("sh");
    let s = snapshots(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(s[0].uptime_s, Some(42.5));
    assert_eq!(s[0].mem_total_kib, Some(2048));
    assert_eq!(s[0].cpu, None, "no stat file there");
}
