//! The guard's rules (issue 24), with `guard.sh` run locally under `dash` and fake tools, as
//! `guard_signals.rs` does: the fake `nvidia-smi` in live mode (its rows re-read every sample), a
//! fake machine root (`SYS_ROOT`) whose `sys/fs/cgroup/cpu.stat`, `proc/stat` and `proc/net/dev`
//! the test advances the way the kernel does while a job runs, fake `wall`/`date`/`crontab` where
//! a rule is about them. The monotonic clock is the real `/proc/uptime`.
//!
//! - idle means every signal agrees: GPU memory held at 0 % with no process listed, a CPU-bound
//!   job (cgroup v2 and `/proc/stat`), a download in progress, the keep-alive file, `[N/A]`;
//! - a login whose terminal had no input for the inactive limit no longer keeps the machine alive
//!   (a real TCP connection and a real pseudo-terminal, with the `SSH_CONNECTION` sshd gives);
//! - a deadline fires with nvidia-smi hung, once, and not again after a restart; a +2 h clock
//!   step acts on neither idle nor the deadline;
//! - a failing action walls once, not every sample; a second loop leaves;
//! - the crontab line survives a `$HOME` with spaces, quotes, `%` and `$(touch canary)`.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpurent_core::guard::{parse_decisions, Decision, SCRIPT};

/// Some rules look at every process of the machine (jupyter, logins): one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn fake_smi() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakegpu/bin/nvidia-smi")
}

fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn write_atomic(path: &Path, body: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, body).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

const NET_HEAD: &str = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";

fn net_dev(eth0_bytes: u64) -> String {
    format!(
        "{NET_HEAD}    lo: 5000 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n  eth0: {eth0_bytes} 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
    )
}

/// A guard in a temp dir: `root/` is the machine root of `SYS_ROOT`, `smi/` the fake GPU's
/// state, `bin/` tools put before the system's on PATH.
struct Guard {
    dir: tempfile::TempDir,
    child: Option<Child>,
    extra_conf: String,
    stop: Arc<AtomicBool>,
    workers: Vec<std::thread::JoinHandle<()>>,
}

impl Guard {
    fn new(extra_conf: &str) -> Guard {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path().to_path_buf();
        for sub in ["guard", "smi", "bin", "root/proc/net", "root/sys/fs/cgroup"] {
            std::fs::create_dir_all(d.join(sub)).expect("mkdir");
        }
        std::fs::write(d.join("guard/guard.sh"), SCRIPT).expect("script");
        let g = Guard {
            dir,
            child: None,
            extra_conf: extra_conf.to_string(),
            stop: Arc::new(AtomicBool::new(false)),
            workers: vec![],
        };
        g.set_gpu("0", "1", &[]);
        write_atomic(
            &g.root().join("sys/fs/cgroup/cpu.stat"),
            "usage_usec 1000000\nuser_usec 800000\nsystem_usec 200000\n",
        );
        write_atomic(&g.root().join("proc/net/dev"), &net_dev(100_000));
        write_exec(
            &g.bin().join("wall"),
            &format!("#!/bin/sh\ncat >> '{}'\n", d.join("wall.log").display()),
        );
        g.conf();
        g
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }
    fn gdir(&self) -> PathBuf {
        self.dir.path().join("guard")
    }

    fn set_gpu(&self, util: &str, mem_mib: &str, pids: &[u32]) {
        let smi = self.dir.path().join("smi");
        write_atomic(
            &smi.join("gpus.csv"),
            &format!("index,uuid,utilization.gpu,memory.used,memory.total\n0,GPU-1,{util},{mem_mib},81559\n"),
        );
        let mut apps = String::from("gpu_uuid,pid,used_memory\n");
        for p in pids {
            apps.push_str(&format!("GPU-1,{p},1024\n"));
        }
        write_atomic(&smi.join("apps.csv"), &apps);
    }

    /// guard.conf: a 1 s period, an idle time of 600 s unless `extra_conf` says otherwise, no
    /// watched port, `echo acted` as the action.
    fn conf(&self) {
        let smi = fake_smi().display().to_string();
        let conf = format!(
            "PERIOD=1\nIDLE=600\nWARN=1\nPORTS='1'\nACTION='echo acted'\nOLLAMA_PORT=1\n\
             SYS_ROOT='{root}'\nGUARD_PATH='{bin}:/usr/bin:/bin'\n\
             GPU_CMD='{smi} --query-gpu=index,utilization.gpu,memory.used --format=csv,nounits'\n\
             APPS_CMD='{smi} --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,nounits'\n{extra}\n",
            root = self.root().display(),
            bin = self.bin().display(),
            extra = self.extra_conf,
        );
        write_atomic(&self.gdir().join("guard.conf"), &conf);
    }

    fn start(&mut self) {
        let child = Command::new("dash")
            .arg(self.gdir().join("guard.sh"))
            .arg("run")
            .env("FAKE_SMI_STATE", self.dir.path().join("smi"))
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin().display()))
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("dash guard.sh run");
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn decisions(&self) -> Vec<Decision> {
        parse_decisions(
            &std::fs::read_to_string(self.gdir().join("decisions.log")).unwrap_or_default(),
        )
        .0
    }

    fn acts(&self) -> Vec<Decision> {
        self.decisions()
            .into_iter()
            .filter(|d| d.decision == "act")
            .collect()
    }

    /// The first decision that satisfies `f`, within `secs`.
    fn wait(&self, secs: u64, what: &str, f: impl Fn(&Decision) -> bool) -> Decision {
        self.wait_after(0, secs, what, f)
    }

    /// The first decision after the first `skip` that satisfies `f`. `secs` is what it takes on
    /// an idle machine; the wait is a hang guard only (at least 60 s: a loaded machine runs the
    /// loop slower than once a second, and what a test proves about timing it reads from the
    /// loop's own samples).
    fn wait_after(
        &self,
        skip: usize,
        secs: u64,
        what: &str,
        f: impl Fn(&Decision) -> bool,
    ) -> Decision {
        let limit = Duration::from_secs(secs.max(60));
        let t = Instant::now();
        while t.elapsed() < limit {
            if let Some(d) = self.decisions().into_iter().skip(skip).find(|d| f(d)) {
                return d;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{what}: not seen in {limit:?}: {:#?}", self.decisions());
    }

    /// The loop's next `n` samples (one per 1 s period by its own clock), waited for: a sleep of
    /// `n` seconds saw fewer on a loaded machine. Up to 120 s, a hang guard only.
    fn samples(&self, n: usize) -> Vec<Decision> {
        let before = self.decisions().len();
        let t = Instant::now();
        while self.decisions().len() < before + n {
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "the loop stopped sampling: {:#?}",
                self.decisions()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        self.decisions().into_iter().skip(before).collect()
    }

    /// A kernel counter in a file of the fake root, advanced every 100 ms by `per_s` per second
    /// (what the kernel shows while a job runs), until the guard is dropped.
    fn grow(&mut self, file: &str, render: fn(u64) -> String, start: u64, per_s: u64) {
        let path = self.root().join(file);
        let stop = self.stop.clone();
        self.workers.push(std::thread::spawn(move || {
            let t = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let v = start + (t.elapsed().as_secs_f64() * per_s as f64) as u64;
                write_atomic(&path, &render(v));
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }

    fn stop_growing(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        self.stop = Arc::new(AtomicBool::new(false));
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.kill();
    }
}

fn idle_reached(g: &Guard) -> Decision {
    g.wait(20, "an idle sample", |d| d.decision == "idle")
}

/// 20 GB held at 0 % with no process listed (a served model between requests, in a container)
/// is busy; back under the 1 GiB baseline it is idle.
#[test]
fn gpu_memory_held_at_zero_util_is_busy() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("");
    g.set_gpu("0", "20480", &[]);
    g.start();
    let d = g.wait(20, "memory busy", |d| d.gpu_why == "memory");
    assert_eq!(
        (d.gpu.as_str(), d.decision.as_str()),
        ("busy", "keep"),
        "{d:?}"
    );
    assert_eq!(d.gpu_mem_max, Some(20480.0));
    assert!(d.why.contains("gpu"), "{d:?}");
    g.set_gpu("0", "900", &[]);
    let d = idle_reached(&g);
    assert_eq!(d.gpu, "idle", "{d:?}");
}

/// MIG instances and vGPU guests print `[N/A]`: busy, with its own reason (not "unparsable").
#[test]
fn not_available_utilisation_is_busy_with_a_reason() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("");
    g.set_gpu("[N/A]", "[N/A]", &[]);
    g.start();
    let d = g.wait(20, "N/A", |d| d.gpu_why == "not_available");
    assert_eq!(
        (d.gpu.as_str(), d.decision.as_str()),
        ("unreadable", "keep")
    );
}

/// A CPU-bound job (one core) in a container: cgroup v2 `cpu.stat` grows 1 s per second — busy;
/// once it stops, idle. Then a VM without cgroup v2 files: `/proc/stat`.
#[test]
fn cpu_bound_job_is_busy_in_a_container_and_on_a_vm() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("");
    g.grow(
        "sys/fs/cgroup/cpu.stat",
        |v| format!("usage_usec {v}\nuser_usec {v}\nsystem_usec 0\n"),
        1_000_000,
        1_000_000,
    );
    g.start();
    let d = g.wait(20, "cpu busy", |d| d.cpu.as_deref() == Some("busy"));
    assert!(d.cpu_pct.unwrap_or(0.0) >= 50.0, "{d:?}");
    assert_eq!(d.decision, "keep");
    assert!(d.why.contains("cpu"), "{d:?}");
    g.stop_growing();
    let d = idle_reached(&g);
    assert_eq!(d.cpu.as_deref(), Some("idle"), "{d:?}");

    // A VM: no cgroup v2 file; /proc/stat's cpu line (USER_HZ ticks) grows 100 ticks a second.
    g.kill();
    std::fs::remove_file(g.root().join("sys/fs/cgroup/cpu.stat")).expect("rm cpu.stat");
    std::fs::remove_file(g.gdir().join("decisions.log")).expect("rm log");
    g.grow(
        "proc/stat",
        |v| format!("cpu  {v} 0 100 500000 20 0 3 0 0 0\ncpu0 {v} 0 100 500000 20 0 3 0 0 0\n"),
        10_000,
        100,
    );
    g.start();
    let d = g.wait(20, "cpu busy from /proc/stat", |d| {
        d.cpu.as_deref() == Some("busy")
    });
    assert!(d.cpu_pct.unwrap_or(0.0) >= 50.0, "{d:?}");
}

/// A download under nohup: eth0's bytes grow 2 MiB/s — busy; loopback traffic is not counted.
#[test]
fn download_in_progress_is_busy() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("");
    g.grow("proc/net/dev", net_dev, 100_000, 2 * 1024 * 1024);
    g.start();
    let d = g.wait(20, "net busy", |d| d.net.as_deref() == Some("busy"));
    assert!(d.net_kbps.unwrap_or(0.0) >= 1000.0, "{d:?}");
    assert_eq!(d.decision, "keep");
    g.stop_growing();
    let d = idle_reached(&g);
    assert_eq!(d.net.as_deref(), Some("idle"));
}

/// `~/.gpurent/keepalive` keeps the machine alive (the user's escape hatch) and nothing else does.
#[test]
fn keepalive_file_keeps_it_alive() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("IDLE=2\n");
    std::fs::write(g.dir.path().join("keepalive"), "").expect("keepalive");
    g.start();
    let seen = g.samples(6);
    assert!(seen.iter().all(|d| d.decision == "keep"), "{seen:#?}");
    assert!(seen
        .iter()
        .any(|d| d.keepalive.as_deref() == Some("busy") && d.why == "keepalive"));
    std::fs::remove_file(g.dir.path().join("keepalive")).expect("rm");
    g.wait(20, "acts once the file is gone", |d| d.decision == "act");
}

/// nvidia-smi hangs (a GPU off the bus): the loop goes on (the GPU counts as hung = busy, and no
/// second nvidia-smi is started beside the stuck one), and the deadline fires at its time.
#[test]
fn hung_nvidia_smi_is_busy_and_the_deadline_still_fires() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("SMI_TIMEOUT=1\nDEADLINE_IN=6\nDEADLINE_ID='t-6'\n");
    let started = g.dir.path().join("smi-started");
    write_exec(
        &g.bin().join("nvidia-smi"),
        &format!(
            "#!/bin/sh\necho $$ >> '{}'\nexec sleep 600\n",
            started.display()
        ),
    );
    let smi = g.bin().join("nvidia-smi").display().to_string();
    g.extra_conf.push_str(&format!(
        "GPU_CMD='{smi} --query-gpu=index,utilization.gpu,memory.used --format=csv,nounits'\n"
    ));
    g.conf();
    g.start();
    let d = g.wait(30, "the deadline", |d| d.decision == "act");
    assert_eq!(d.why, "deadline", "{d:?}");
    assert_eq!(d.gpu_why, "hung", "{d:?}");
    // On time: at the loop's previous turn the deadline was still ahead by its own clock (its
    // `deadline - at`), so it acted at the first sample past it. A wall-clock bound of 20 s on
    // the whole test counted how slow a loaded machine ran the loop.
    let ds = g.decisions();
    let pos = ds.iter().position(|x| x.decision == "act").expect("act");
    let before = ds[..pos]
        .iter()
        .rev()
        .find(|x| x.mono != ds[pos].mono)
        .expect("a sample before the act");
    let left = before.deadline.expect("the deadline, before it fired") - before.at;
    assert!(left > 0, "a sample past the deadline did not act: {ds:#?}");
    let hung = g.decisions().iter().filter(|d| d.gpu_why == "hung").count();
    assert!(hung >= 2, "the loop went on sampling: {:#?}", g.decisions());
    // Each one cut off was killed (a killable one dies; one stuck in the kernel would be left,
    // and no second one started beside it while it lives).
    g.kill();
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .map(|c| c.contains("sleep"))
            .unwrap_or(false)
    };
    // Waited for (up to 30 s; one left running sleeps 600 s), not timed: a 300 ms sleep raced
    // the last one's kill on a loaded machine.
    let pids = std::fs::read_to_string(&started).unwrap_or_default();
    wait_until(Duration::from_secs(30), || !pids.lines().any(alive));
    for pid in pids.lines() {
        let alive = alive(pid);
        if alive {
            let _ = Command::new("kill").arg(pid).status();
        }
        assert!(!alive, "nvidia-smi {pid} left running");
    }
}

/// A deadline fires once: its mark is on the machine, and a restart of the loop (the @reboot
/// line, `guard.sh start` again) after it fired does not fire it again.
#[test]
fn a_deadline_fires_once_and_not_again_after_a_restart() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("DEADLINE_IN=2\nDEADLINE_ID='t-2'\n");
    g.set_gpu("90", "20000", &[]); // busy: only the deadline can act
    g.start();
    g.wait(20, "the deadline", |d| {
        d.decision == "act" && d.why == "deadline"
    });
    g.samples(2);
    assert_eq!(g.acts().len(), 1, "{:#?}", g.decisions());
    assert_eq!(
        std::fs::read_to_string(g.gdir().join("deadline.fired"))
            .expect("mark")
            .trim(),
        "t-2"
    );
    // The "reboot": the loop killed, its state kept, started again.
    g.kill();
    g.start();
    let seen = g.samples(5);
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|d| d.decision != "act"), "{seen:#?}");
    assert!(seen
        .iter()
        .all(|d| d.deadline.is_none() && d.deadline_fired == Some(true)));
    // A new deadline (a new `guard set`) fires again, once.
    g.extra_conf = "DEADLINE_IN=1\nDEADLINE_ID='t-1'\n".into();
    // Only what the loop decides from here on: the first deadline's act is in the log too.
    let before = g.decisions().len();
    g.conf();
    g.wait_after(before, 20, "the new deadline", |d| {
        d.decision == "act" && d.mono.is_some() && d.deadline_fired == Some(false)
    });
    g.samples(2);
    assert_eq!(g.acts().len(), 2, "{:#?}", g.decisions());
}

/// The wall clock jumps 2 h forward (an NTP step): neither the idle time nor the deadline acts,
/// they are measured on the monotonic clock.
#[test]
fn a_clock_step_acts_on_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("IDLE=60\nDEADLINE_IN=120\nDEADLINE_ID='t-120'\n");
    let step = g.dir.path().join("step");
    write_exec(
        &g.bin().join("date"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = +%s ] && [ -f '{}' ]; then echo $(( $(/bin/date +%s) + 7200 )); else exec /bin/date \"$@\"; fi\n",
            step.display()
        ),
    );
    g.start();
    idle_reached(&g);
    std::fs::write(&step, "").expect("step");
    let seen = g.samples(6);
    assert!(
        seen.iter().any(|d| d.at > 1_000 + now_s() + 3600),
        "the fake date stepped: {seen:#?}"
    );
    assert!(
        seen.iter()
            .all(|d| !matches!(d.decision.as_str(), "act" | "warn")),
        "{seen:#?}"
    );
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A failing action is tried every sample, but the terminals get its message once, not every
/// sample.
#[test]
fn a_failing_action_walls_once() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("IDLE=1\nACTION='echo nope; exit 3'\n");
    g.start();
    g.wait(20, "act_failed", |d| d.decision == "act_failed");
    // Retried on every sample: a third failure comes (waited for, not timed: a loaded machine
    // runs the loop slower than once a second).
    let t = Instant::now();
    let failed = |g: &Guard| {
        g.decisions()
            .iter()
            .filter(|d| d.decision == "act_failed")
            .count()
    };
    while failed(&g) < 3 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "not retried every sample: {:#?}",
            g.decisions()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let wall = std::fs::read_to_string(g.dir.path().join("wall.log")).unwrap_or_default();
    let fails = wall.lines().filter(|l| l.contains("action failed")).count();
    assert_eq!(fails, 1, "{wall}");
    assert!(wall.lines().count() <= 3, "{wall}");
}

/// Two loops (two starts at once, or `off` then `set` within one period): the one whose pid file
/// is not its own leaves.
#[test]
fn a_second_loop_leaves() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("");
    g.start();
    g.wait(20, "first loop", |_| true);
    let mut second = Guard {
        dir: tempfile::tempdir().expect("unused"),
        child: None,
        extra_conf: String::new(),
        stop: Arc::new(AtomicBool::new(false)),
        workers: vec![],
    };
    let child = Command::new("dash")
        .arg(g.gdir().join("guard.sh"))
        .arg("run")
        .env("FAKE_SMI_STATE", g.dir.path().join("smi"))
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("second loop");
    second.child = Some(child);
    let first = g.child.as_mut().expect("first");
    let t = Instant::now();
    let mut exited = None;
    while t.elapsed() < Duration::from_secs(30) {
        if let Ok(Some(st)) = first.try_wait() {
            exited = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        exited.is_some(),
        "the first loop still runs beside the second"
    );
    let pid = std::fs::read_to_string(g.gdir().join("pid")).expect("pid");
    assert_eq!(
        pid.trim(),
        second
            .child
            .as_ref()
            .map(|c| c.id())
            .unwrap_or(0)
            .to_string()
    );
}

/// A login with a terminal and no input for the inactive limit (a laptop lid closed on an SSH
/// session) no longer keeps the machine alive; one with input does. A real TCP connection to a
/// watched port, and a real pseudo-terminal whose reader has the `SSH_CONNECTION` of that
/// connection (what sshd gives a login shell).
#[test]
fn an_ssh_login_without_input_stops_counting() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: no python3 for the pseudo-terminal");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let (_server, _) = listener.accept().expect("accept");
    let cport = client.local_addr().expect("local").port();
    let mut g = Guard::new(&format!(
        "PORTS='{port}'\nCONN_MIN_AGE=1\nINACTIVE=5\nWARN=2\nIDLE=2\n"
    ));
    // The login: a pty whose reader (cat) has SSH_CONNECTION; input written to the master is
    // read by it, which is what moves the terminal's atime (as typing does).
    let feed = g.dir.path().join("feed");
    let login = Command::new("/usr/bin/python3")
        .args([
            "-c",
            r#"
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", "exec cat > /dev/null"])
os.set_blocking(fd, False)
feed = sys.argv[1]
while True:
    if os.path.exists(feed):
        os.write(fd, b"x\n")
    try:
        os.read(fd, 4096)
    except OSError:
        pass
    time.sleep(1)
"#,
            feed.to_str().expect("utf-8"),
        ])
        .env(
            "SSH_CONNECTION",
            format!("127.0.0.1 {cport} 127.0.0.1 {port}"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 pty");
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _login = Kill(login);
    // With input every second the login counts (the terminal's atime moves every 8 s at most).
    std::fs::write(&feed, "").expect("feed");
    g.extra_conf = format!("PORTS='{port}'\nCONN_MIN_AGE=1\nINACTIVE=12\nWARN=2\nIDLE=2\n");
    g.conf();
    g.start();
    let seen = g.samples(16);
    let tail: Vec<&Decision> = seen.iter().skip(3).collect();
    assert!(!tail.is_empty());
    assert!(
        tail.iter().all(|d| d.ssh == "busy" && d.decision == "keep"),
        "{seen:#?}"
    );
    // No input: after the limit the session no longer counts, the terminals were warned, and it acts.
    std::fs::remove_file(&feed).expect("no more input");
    g.extra_conf = format!("PORTS='{port}'\nCONN_MIN_AGE=1\nINACTIVE=5\nWARN=2\nIDLE=2\n");
    g.conf();
    let d = g.wait(40, "inactive", |d| {
        d.ssh_inactive == Some(1) && d.ssh == "idle"
    });
    assert_eq!(d.ssh_conns, Some(0), "{d:?}");
    g.wait(20, "acts", |d| d.decision == "act");
    let wall = std::fs::read_to_string(g.dir.path().join("wall.log")).unwrap_or_default();
    assert!(wall.contains("no input"), "{wall}");
    drop(client);
    let _ = std::io::stdout().flush();
}

/// `guard.sh boot` under a `$HOME` with spaces, quotes, `%` and `$(touch canary)`: the crontab
/// line, run the way cron runs it (`%` unescaped, the rest to sh), starts the guard, and nothing
/// else runs. Only where a cron daemon runs (a fake one here); without it: `boot=none`.
#[test]
fn the_crontab_line_survives_a_hostile_home() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let g = Guard::new("");
    let home = g.dir.path().join("it's 100% $(touch canary) home");
    let gdir = home.join(".gpurent/guard");
    std::fs::create_dir_all(&gdir).expect("mkdir");
    std::fs::copy(g.gdir().join("guard.sh"), gdir.join("guard.sh")).expect("copy");
    std::fs::copy(g.gdir().join("guard.conf"), gdir.join("guard.conf")).expect("copy");
    let tab = g.dir.path().join("crontab.txt");
    write_exec(
        &g.bin().join("crontab"),
        &format!(
            "#!/bin/sh\nf='{}'\ncase \"$1\" in\n  -l) [ -f \"$f\" ] || exit 1; cat \"$f\" ;;\n  -) cat > \"$f\" ;;\n  *) exit 2 ;;\nesac\n",
            tab.display()
        ),
    );
    let path = format!("{}:/usr/bin:/bin", g.bin().display());
    let run = |what: &str| {
        let out = Command::new("dash")
            .arg(gdir.join("guard.sh"))
            .arg(what)
            .current_dir(g.dir.path())
            .env("PATH", &path)
            .env("FAKE_SMI_STATE", g.dir.path().join("smi"))
            .output()
            .expect("guard.sh");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    // No cron daemon: an @reboot line would never run.
    assert!(run("boot").contains("boot=none"));
    assert!(!tab.exists());
    // A cron daemon (a process whose name is cron).
    let cron_bin = g.bin().join("cron");
    std::os::unix::fs::symlink("/bin/sleep", &cron_bin).expect("link");
    let mut cron = Command::new(&cron_bin)
        .arg("60")
        .spawn()
        .expect("fake cron");
    assert!(run("boot").contains("boot=crontab"));
    let tab_text = std::fs::read_to_string(&tab).expect("crontab");
    let line = tab_text
        .lines()
        .find(|l| l.ends_with("# gpurent-guard"))
        .expect("line")
        .trim_start_matches("@reboot ")
        .to_string();
    // cron: an unescaped % ends the command (the rest is stdin); \% is a %.
    let mut cmd = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'%') => {
                cmd.push('%');
                chars.next();
            }
            '%' => break,
            c => cmd.push(c),
        }
    }
    let st = Command::new("/bin/sh")
        .arg("-c")
        .arg(&cmd)
        .current_dir(g.dir.path())
        .env_clear()
        .env("PATH", &path)
        .env("FAKE_SMI_STATE", g.dir.path().join("smi"))
        .status()
        .expect("cron line");
    assert!(st.success(), "{cmd}");
    let pid = std::fs::read_to_string(gdir.join("pid")).expect("started from the cron line");
    let _ = Command::new("kill").arg(pid.trim()).status();
    let _ = cron.kill();
    let _ = cron.wait();
    assert!(
        !g.dir.path().join("canary").exists(),
        "a folder name ran as a command"
    );
    // The loop was sent SIGTERM: it is gone once the signal lands (not at once).
    assert!(
        (0..300).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            run("state").contains("running=0")
        }),
        "the loop still runs"
    );
}

/// Kill the processes whose pids these files hold, when they are still a guard loop.
fn kill_loops(files: &[PathBuf]) {
    for f in files {
        if let Ok(pid) = std::fs::read_to_string(f) {
            let pid = pid.trim();
            let ours = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains("guard.sh"))
                .unwrap_or(false);
            if ours {
                let _ = Command::new("kill").arg(pid).status();
            }
        }
    }
}

fn loop_alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/cmdline", pid.trim()))
        .map(|c| c.contains("guard.sh"))
        .unwrap_or(false)
}

/// Where systemd runs and the guard's unit is installed, `guard.sh start` (what `guard set`
/// runs over SSH) starts the loop through the unit — `systemctl start` — so the loop is the
/// unit's and not a child of the SSH session; a loop an older gpurent started from a session is
/// replaced (one loop, never two); a second start leaves the unit's loop alone; `stop` stops the
/// unit. A fake `systemctl` that does what systemd does for a `Type=simple` unit (runs its
/// ExecStart, tracks its main pid), the unit folders in the temp dir. Root only (`boot` writes a
/// unit only as root).
#[test]
fn start_goes_through_the_systemd_unit() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
    {
        eprintln!("SKIP: not root (guard.sh boot writes a systemd unit only as root)");
        return;
    }
    let mut g = Guard::new("");
    let d = g.dir.path().to_path_buf();
    std::fs::create_dir_all(d.join("run-systemd")).expect("mkdir");
    std::fs::create_dir_all(d.join("units")).expect("mkdir");
    g.extra_conf = format!(
        "SYSTEMD_DIR='{}'\nUNIT_DIR='{}'\n",
        d.join("run-systemd").display(),
        d.join("units").display()
    );
    g.conf();
    write_exec(
        &g.bin().join("systemctl"),
        &format!(
            r#"#!/bin/sh
d='{d}'
echo "$*" >> "$d/systemctl.log"
[ "$1" = is-active ] && [ "$2" = --quiet ] && set -- is-active "$3"
alive() {{ p=$(cat "$d/unit.pid" 2>/dev/null); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }}
case "$1" in
  daemon-reload|enable|disable) exit 0 ;;
  is-active) alive ;;
  start) alive && exit 0
    cmd=$(sed -n 's/^ExecStart=//p' "$d/units/$2") || exit 1
    [ -n "$cmd" ] || {{ echo "Unit $2 not found." >&2; exit 5; }}
    sh -c "exec $cmd" < /dev/null > /dev/null 2>&1 &
    echo $! > "$d/unit.pid"; exit 0 ;;
  stop) p=$(cat "$d/unit.pid" 2>/dev/null); [ -n "$p" ] && kill "$p" 2>/dev/null; rm -f "$d/unit.pid"; exit 0 ;;
  *) exit 1 ;;
esac
"#,
            d = d.display()
        ),
    );
    let path = format!("{}:/usr/bin:/bin", g.bin().display());
    let run = |what: &str| {
        let out = Command::new("dash")
            .arg(g.gdir().join("guard.sh"))
            .arg(what)
            .env("PATH", &path)
            .env("FAKE_SMI_STATE", d.join("smi"))
            .env("HOME", &d)
            .stdin(Stdio::null())
            .output()
            .expect("guard.sh");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let pidfiles = [g.gdir().join("pid"), d.join("unit.pid")];
    struct Cleanup(Vec<PathBuf>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            kill_loops(&self.0);
        }
    }
    let _cleanup = Cleanup(pidfiles.to_vec());
    // An older gpurent's loop, started from the SSH session (no unit yet).
    let out = run("start");
    assert!(out.contains("started pid="), "{out}");
    let session_loop = std::fs::read_to_string(g.gdir().join("pid")).expect("pid");
    assert!(run("boot").contains("boot=systemd"));
    let unit = std::fs::read_to_string(d.join("units/gpurent-guard.service")).expect("unit");
    assert!(unit.contains("Type=simple"), "{unit}");
    assert!(unit.contains("guard.sh\" run"), "{unit}");
    let out = run("start");
    assert!(out.contains("unit=gpurent-guard.service"), "{out}");
    let log = std::fs::read_to_string(d.join("systemctl.log")).expect("systemctl called");
    assert!(log.contains("start gpurent-guard.service"), "{log}");
    let unit_pid = std::fs::read_to_string(d.join("unit.pid")).expect("unit pid");
    assert_eq!(
        std::fs::read_to_string(g.gdir().join("pid"))
            .expect("pid")
            .trim(),
        unit_pid.trim(),
        "the loop is the unit's"
    );
    assert!(
        (0..300).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            !loop_alive(&session_loop)
        }),
        "the session's loop still runs beside the unit's"
    );
    // Again: the unit's loop runs, nothing is started.
    let out = run("start");
    assert!(out.contains("running pid="), "{out}");
    let log = std::fs::read_to_string(d.join("systemctl.log")).expect("log");
    assert_eq!(
        log.matches("start gpurent-guard.service").count(),
        1,
        "{log}"
    );
    assert!(run("state").contains("running=1"));
    // stop stops the unit.
    run("stop");
    let log = std::fs::read_to_string(d.join("systemctl.log")).expect("log");
    assert!(log.contains("stop gpurent-guard.service"), "{log}");
    assert!(
        (0..300).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            !loop_alive(&unit_pid)
        }),
        "the unit's loop still runs"
    );
    g.kill();
}

/// A guard the user switched off (`gpurent guard off` leaves the file `off`) is not brought back
/// by `guard.sh start` — what a boot hook left behind runs when the machine starts — with or
/// without a unit; the mark stays (only `gpurent guard set` removes it).
#[test]
fn start_does_not_undo_off() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let g = Guard::new("");
    let d = g.dir.path().to_path_buf();
    std::fs::write(g.gdir().join("off"), "").expect("off");
    let path = format!("{}:/usr/bin:/bin", g.bin().display());
    let out = Command::new("dash")
        .arg(g.gdir().join("guard.sh"))
        .arg("start")
        .env("PATH", &path)
        .env("FAKE_SMI_STATE", d.join("smi"))
        .env("HOME", &d)
        .stdin(Stdio::null())
        .output()
        .expect("guard.sh start");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    std::thread::sleep(Duration::from_millis(1500));
    kill_loops(&[g.gdir().join("pid")]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("off"), "{text}");
    assert!(g.gdir().join("off").exists(), "start removed the off mark");
    assert!(
        !g.gdir().join("pid").exists() && g.decisions().is_empty(),
        "a switched-off guard ran: {text} {:#?}",
        g.decisions()
    );
}

/// The first sample has no earlier one to compare CPU and network counters with: both count as
/// busy, and say why — "no reading yet", not "cannot read" — while a counter that cannot be read
/// at all says nothing; the second sample reads them.
#[test]
fn the_first_sample_has_no_cpu_or_network_reading_yet() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("");
    g.start();
    let first = g.wait(20, "a first sample", |_| true);
    assert_eq!(first.cpu.as_deref(), Some("unreadable"), "{first:?}");
    assert_eq!(
        first.cpu_why.as_deref(),
        Some("no_reading_yet"),
        "{first:?}"
    );
    assert_eq!(first.net.as_deref(), Some("unreadable"), "{first:?}");
    assert_eq!(
        first.net_why.as_deref(),
        Some("no_reading_yet"),
        "{first:?}"
    );
    let later = idle_reached(&g);
    assert_eq!(later.cpu.as_deref(), Some("idle"), "{later:?}");
    // No /proc/net/dev at all: cannot read, with no "yet".
    g.kill();
    std::fs::remove_file(g.root().join("proc/net/dev")).expect("rm net/dev");
    std::fs::remove_file(g.gdir().join("decisions.log")).expect("rm log");
    g.start();
    let seen = g.samples(3);
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|d| d.net.as_deref() == Some("unreadable") && d.net_why.as_deref() == Some("")),
        "{seen:#?}"
    );
}

/// `--action poweroff` (RECORD_POWEROFF=1): before the action runs, the guard records it on the
/// machine — host time and this boot's id in `poweroff.rec`, a `poweroff` decision — since a real
/// power-off ends the guard before it can log anything; a failed action takes the record back.
#[test]
fn a_poweroff_is_recorded_before_it_runs() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = Guard::new("IDLE=1\nRECORD_POWEROFF=1\n");
    let rec = g.gdir().join("poweroff.rec");
    // The action checks that the record is already there when it runs.
    g.extra_conf.push_str(&format!(
        "ACTION='test -s \"{}\" && echo recorded'\n",
        rec.display()
    ));
    g.conf();
    g.start();
    let act = g.wait(20, "act", |d| d.decision == "act");
    assert_eq!(
        act.action_rc,
        Some(0),
        "the record was there first: {act:?}"
    );
    let ds = g.decisions();
    let p = ds
        .iter()
        .position(|d| d.decision == "poweroff")
        .expect("a poweroff decision");
    let a = ds.iter().position(|d| d.decision == "act").expect("act");
    assert!(p < a, "{ds:#?}");
    let text = std::fs::read_to_string(&rec).expect("poweroff.rec");
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot id");
    let mut w = text.split_whitespace();
    let at: i64 = w.next().and_then(|a| a.parse().ok()).expect("time");
    assert!((at - now_s()).abs() < 60, "{text}");
    assert_eq!(w.next(), Some(boot.trim()), "{text}");
    // A failing power-off takes its record back.
    g.kill();
    std::fs::remove_file(&rec).expect("rm");
    g.extra_conf = "IDLE=1\nRECORD_POWEROFF=1\nACTION='exit 3'\n".into();
    g.conf();
    std::fs::remove_file(g.gdir().join("decisions.log")).expect("rm log");
    g.start();
    g.wait(20, "act_failed", |d| d.decision == "act_failed");
    assert!(!rec.exists(), "a failed power-off left its record");
}

/// A local HTTP server standing for the provider: answers each request with 200 and the next
/// body of `bodies` (the last one again once they run out); keeps each request's head.
fn provider_stub(bodies: Vec<&'static str>) -> (u16, Arc<Mutex<Vec<String>>>) {
    use std::io::Read;
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, s) in l.incoming().enumerate() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // The head, then the body its Content-Length says.
            while !String::from_utf8_lossy(&buf).contains("\r\n\r\n") {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                }
            }
            let text = String::from_utf8_lossy(&buf).to_string();
            let len: usize = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            let head_end = text.find("\r\n\r\n").map_or(text.len(), |i| i + 4);
            let mut have = buf.len().saturating_sub(head_end);
            while have < len {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => have += k,
                }
            }
            log.lock().unwrap_or_else(|p| p.into_inner()).push(text);
            let body = bodies[n.min(bodies.len() - 1)];
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// The provider call (`--action stop|release`, the full key in `provider.key`): a 2xx whose body
/// says `"success": false` (as Vast answers a refusal) is a failure (`act_failed`, status 5; the
/// key stays for the retry), never an act; the user's `~/.curlrc` (here a dead proxy) is not
/// read (`curl -q`); the 0600 config file holding the key is gone after each call; once the
/// provider confirms, the guard acts and the key leaves the disk.
#[test]
fn a_provider_call_ignores_curlrc_and_a_2xx_saying_failure_fails() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (port, seen) = provider_stub(vec![
        r#"{"success": false, "msg": "no such instance"}"#,
        r#"{"success": false, "msg": "no such instance"}"#,
        r#"{"success": true}"#,
    ]);
    let mut g = Guard::new(&format!(
        "IDLE=2\nACTION=provider\nPROVIDER_METHOD=PUT\n\
         PROVIDER_URL='http://127.0.0.1:{port}/api/v0/instances/1001'\n\
         PROVIDER_BODY='{{\"state\":\"stopped\"}}'\nPROVIDER_CRED=file\nPROVIDER_CRED_VAR=''\nHTTP_TOOL=curl\n"
    ));
    std::fs::write(g.gdir().join("provider.key"), "fake-account-key-42").expect("key");
    // The user's own curl settings: a proxy nobody listens on.
    std::fs::write(
        g.dir.path().join(".curlrc"),
        "proxy = \"http://127.0.0.1:1\"\n",
    )
    .expect("curlrc");
    g.start();
    let failed = g.wait(30, "act_failed", |d| d.decision == "act_failed");
    assert_eq!(
        failed.action_rc,
        Some(5),
        "a 2xx saying success:false: {failed:?}"
    );
    assert!(
        g.gdir().join("provider.key").exists(),
        "the key went before the provider confirmed"
    );
    let act = g.wait(30, "act", |d| d.decision == "act");
    assert_eq!(act.action_rc, Some(0), "{act:?}");
    let reqs = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(reqs.len() >= 3, "{reqs:?}");
    assert!(
        reqs.iter()
            .all(|r| r.starts_with("PUT /api/v0/instances/1001 ")
                && r.contains("Bearer fake-account-key-42")),
        "{reqs:?}"
    );
    assert!(
        wait_until(Duration::from_secs(30), || !g
            .gdir()
            .join("provider.key")
            .exists()),
        "the key stayed after the provider confirmed"
    );
    let left: Vec<_> = std::fs::read_dir(g.gdir())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".http."))
        .collect();
    assert!(left.is_empty(), "the key's config file stayed: {left:?}");
}

/// AutoDL's guard call (`--action stop|release` with the full token, issue 23): the token goes
/// alone (`Authorization: <token>`, no "Bearer" — to AutoDL "Bearer <token>" is another, unknown
/// token), and AutoDL answers a refusal with HTTP 200 and a failure word, so a 2xx counts only
/// when the body says `"code": "Success"` (`PROVIDER_OK`). Before, the guard sent "Bearer" and
/// took any 2xx for done: it removed the key and never stopped the machine.
#[test]
fn an_autodl_guard_call_sends_the_token_alone_and_needs_the_success_word() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (port, seen) = provider_stub(vec![
        r#"{"code": "AuthorizeFailed", "msg": "Token 无效", "data": null}"#,
        r#"{"code": "Success", "msg": "", "data": null}"#,
    ]);
    let mut g = Guard::new(&format!(
        "IDLE=2\nACTION=provider\nPROVIDER_METHOD=POST\n\
         PROVIDER_URL='http://127.0.0.1:{port}/api/v1/dev/instance/pro/power_off'\n\
         PROVIDER_BODY='{{\"instance_uuid\":\"pro-1\"}}'\nPROVIDER_CRED=file\nPROVIDER_CRED_VAR=''\n\
         PROVIDER_AUTH=plain\nPROVIDER_OK='\"code\":\"Success\"'\nHTTP_TOOL=curl\n"
    ));
    std::fs::write(g.gdir().join("provider.key"), "fake-autodl-token-7").expect("key");
    g.start();
    let failed = g.wait(30, "act_failed", |d| d.decision == "act_failed");
    assert_eq!(
        failed.action_rc,
        Some(5),
        "a 200 without Success: {failed:?}"
    );
    assert!(g.gdir().join("provider.key").exists());
    let act = g.wait(30, "act", |d| d.decision == "act");
    assert_eq!(act.action_rc, Some(0), "{act:?}");
    let reqs = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(
        reqs.iter().all(|r| {
            let lower = r.to_ascii_lowercase();
            r.starts_with("POST /api/v1/dev/instance/pro/power_off ")
                && lower.contains("authorization: fake-autodl-token-7\r\n")
                && !lower.contains("bearer")
        }),
        "{reqs:?}"
    );
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}
