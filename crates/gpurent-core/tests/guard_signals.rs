//! The guard script's Ollama and Jupyter signals, run locally under `sh` (no SSH needed): a real
//! HTTP listener on loopback answers `/api/ps` as Ollama does, and real processes whose command
//! line says `ipykernel_launcher` stand for Jupyter kernels, idle or spinning. The loop re-reads
//! `guard.conf` on every sample, so the test changes ports there while it runs.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpurent_core::guard::{parse_decisions, Decision, SCRIPT};

/// The Jupyter signal sees every process of the machine: the two tests take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn fake_smi() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakegpu/bin/nvidia-smi")
}

/// An HTTP server on loopback answering every request with the current body.
fn ollama(body: Arc<Mutex<String>>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().expect("clone"));
            let mut line = String::new();
            while r.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                line.clear();
            }
            let b = body.lock().map(|b| b.clone()).unwrap_or_default();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}",
                b.len()
            );
        }
    });
    port
}

struct Guard {
    dir: tempfile::TempDir,
    child: Child,
    kernels: Vec<Child>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for k in &mut self.kernels {
            let _ = k.kill();
            let _ = k.wait();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Guard {
    fn conf(&self, ollama_port: u16) {
        let smi = fake_smi().display().to_string();
        let conf = format!(
            "PERIOD=1\nIDLE=600\nWARN=1\nPORTS='1'\nACTION='true'\nOLLAMA_PORT={ollama_port}\n\
             SYS_ROOT='{root}'\n\
             GPU_CMD='{smi} --query-gpu=index,utilization.gpu,memory.used --format=csv,nounits'\n\
             APPS_CMD='{smi} --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,nounits'\n",
            root = self.dir.path().join("root").display(),
        );
        let tmp = self.dir.path().join("guard.conf.tmp");
        std::fs::write(&tmp, conf).expect("conf");
        std::fs::rename(&tmp, self.dir.path().join("guard.conf")).expect("rename");
    }

    fn start(ollama_port: u16) -> Guard {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("guard.sh"), SCRIPT).expect("script");
        let state = dir.path().join("smi");
        std::fs::create_dir(&state).expect("state");
        std::fs::write(
            state.join("gpus.csv"),
            "index,uuid,utilization.gpu,memory.used\n0,GPU-1,0,1\n",
        )
        .expect("gpus");
        // A quiet machine for the CPU and network signals (this one's are busy with builds).
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sys/fs/cgroup")).expect("root");
        std::fs::create_dir_all(root.join("proc/net")).expect("root");
        std::fs::write(root.join("sys/fs/cgroup/cpu.stat"), "usage_usec 1000000\n").expect("cpu");
        std::fs::write(
            root.join("proc/net/dev"),
            "Inter-|\n face |\n  eth0: 100 1 0 0 0 0 0 0 200 1 0 0 0 0 0 0\n",
        )
        .expect("net");
        std::fs::write(state.join("apps.csv"), "gpu_uuid,pid,used_memory\n").expect("apps");
        let child = Command::new("/bin/sh")
            .arg(dir.path().join("guard.sh"))
            .arg("run")
            .env("FAKE_SMI_STATE", &state)
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("guard");
        let g = Guard {
            dir,
            child,
            kernels: vec![],
        };
        g.conf(ollama_port);
        g
    }

    fn decisions(&self) -> Vec<Decision> {
        parse_decisions(
            &std::fs::read_to_string(self.dir.path().join("decisions.log")).unwrap_or_default(),
        )
        .0
    }

    /// Wait for a decision logged after `after` (unix s) that satisfies `f`.
    fn wait(&self, after: i64, what: &str, f: impl Fn(&Decision) -> bool) -> Decision {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if let Some(d) = self.decisions().into_iter().find(|d| d.at > after && f(d)) {
                return d;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{what}: not seen in 60 s: {:#?}", self.decisions());
    }

    fn kernel(&mut self, code: &str) {
        let k = Command::new("python3")
            .args(["-c", code, "ipykernel_launcher", "-f", "kernel-test.json"])
            .stdin(Stdio::null())
            .spawn()
            .expect("python3");
        self.kernels.push(k);
    }
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[test]
fn ollama_signal() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let body = Arc::new(Mutex::new(r#"{"models":[]}"#.to_string()));
    let port = ollama(body.clone());
    let closed = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let g = Guard::start(closed);
    // After the first sample (the CPU and network signals have no delta before it).
    let d = g.wait(0, "absent", |d| {
        d.ollama == "absent" && d.cpu.as_deref() == Some("idle")
    });
    assert_eq!(d.decision, "idle", "{d:?}");
    let t = now_s();
    g.conf(port);
    let d = g.wait(t, "idle Ollama", |d| d.ollama == "idle");
    assert_eq!(d.decision, "idle", "{d:?}");
    *body.lock().expect("lock") =
        r#"{"models":[{"name":"llama3:8b","size":4661224676,"expires_at":"2026-12-01T10:00:00Z"}]}"#
            .into();
    let t = now_s();
    let d = g.wait(t, "busy Ollama", |d| d.ollama == "busy");
    assert_eq!((d.decision.as_str(), d.why.as_str()), ("keep", "ollama"));
    *body.lock().expect("lock") = "<html>not ollama</html>".into();
    let t = now_s();
    let d = g.wait(t, "unreadable Ollama", |d| d.ollama == "unreadable");
    assert_eq!(
        d.decision, "keep",
        "an answer it cannot read counts as busy"
    );
}

#[test]
fn jupyter_signal() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let closed = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut g = Guard::start(closed);
    g.kernel("import time; time.sleep(120)");
    let t = now_s();
    let d = g.wait(t, "idle kernel", |d| d.jupyter == "idle");
    assert_eq!(d.decision, "idle", "{d:?}");
    g.kernel("while True: pass");
    let t = now_s() + 1;
    let d = g.wait(t, "busy kernel", |d| d.jupyter == "busy");
    assert_eq!((d.decision.as_str(), d.why.as_str()), ("keep", "jupyter"));
}
