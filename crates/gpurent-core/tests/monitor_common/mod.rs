//! Fake GPU hosts for the Monitor's tests: a scenario of `tests/fakegpu/` whose `nvidia-smi`
//! answers in live mode from `state/gpus.csv` and `state/apps.csv` (re-read every sample), served
//! by a real loopback sshd.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::{connect, Auth, ConnectOptions, Connection, Endpoint, RemoteError};
use gpurent_testhost::fakegpu::FakeHost;
use gpurent_testhost::{Sshd, UserKey};

pub fn fakegpu() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakegpu")
}

/// Every field of the live file, in nvidia-smi's names.
pub const COLUMNS: &[&str] = &[
    "index",
    "uuid",
    "name",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "power.default_limit",
    "clocks.sm",
    "clocks.max.sm",
    "pcie.link.gen.current",
    "pcie.link.width.current",
    "clocks_event_reasons.gpu_idle",
    "clocks_event_reasons.applications_clocks_setting",
    "clocks_event_reasons.sw_power_cap",
    "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown",
    "clocks_event_reasons.sync_boost",
];

/// One GPU's live values.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub util: String,
    pub mem_used: u32,
    pub mem_total: u32,
    pub temp: u32,
    pub power: f64,
    pub limit: f64,
    /// Active reasons (suffixes: `sw_power_cap`, ...).
    pub reasons: Vec<&'static str>,
}

impl Gpu {
    pub fn busy(util: u32) -> Gpu {
        Gpu {
            util: util.to_string(),
            mem_used: 20_000,
            mem_total: 81_559,
            temp: 55,
            power: 300.0,
            limit: 700.0,
            reasons: vec![],
        }
    }
}

fn value(i: usize, g: &Gpu, col: &str) -> String {
    match col {
        "index" => i.to_string(),
        "uuid" => format!("GPU-{i}0000000-fake-live"),
        "name" => "NVIDIA H100 80GB HBM3".into(),
        "utilization.gpu" => g.util.clone(),
        "utilization.memory" => "10".into(),
        "memory.used" => g.mem_used.to_string(),
        "memory.total" => g.mem_total.to_string(),
        "temperature.gpu" => g.temp.to_string(),
        "power.draw" => format!("{:.2}", g.power),
        "power.limit" => format!("{:.2}", g.limit),
        "power.default_limit" => "700.00".into(),
        "clocks.max.sm" => "1980".into(),
        "clocks.sm" => "1980".into(),
        "pcie.link.gen.current" => "5".into(),
        "pcie.link.width.current" => "16".into(),
        r => {
            let s = r.trim_start_matches("clocks_event_reasons.");
            if g.reasons.contains(&s) {
                "Active"
            } else {
                "Not Active"
            }
            .into()
        }
    }
}

/// Write `state/gpus.csv` atomically, leaving out the columns in `omit` (a driver that lacks them).
pub fn write_gpus(state: &Path, gpus: &[Gpu], omit: &[&str]) {
    let cols: Vec<&str> = COLUMNS
        .iter()
        .copied()
        .filter(|c| !omit.contains(c))
        .collect();
    let mut text = cols.join(",") + "\n";
    for (i, g) in gpus.iter().enumerate() {
        let row: Vec<String> = cols.iter().map(|c| value(i, g, c)).collect();
        text += &(row.join(",") + "\n");
    }
    atomic_write(&state.join("gpus.csv"), &text);
}

/// Write `state/apps.csv`: (gpu index, pid, MiB).
pub fn write_apps(state: &Path, apps: &[(usize, u32, u32)]) {
    let mut text = "gpu_uuid,pid,used_memory\n".to_string();
    for (i, pid, mib) in apps {
        text += &format!("GPU-{i}0000000-fake-live,{pid},{mib}\n");
    }
    atomic_write(&state.join("apps.csv"), &text);
}

fn atomic_write(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write live state");
    std::fs::rename(&tmp, path).expect("rename live state");
}

/// A live fake GPU host behind a real sshd, and a key it accepts.
pub struct LiveHost {
    pub host: FakeHost,
    pub sshd: Sshd,
    pub key: UserKey,
}

impl LiveHost {
    /// Scenario `name` with `extra` variables and `gpus` in its live file; `None` without sshd.
    pub fn start(
        name: &str,
        extra: &[(&str, &str)],
        gpus: &[Gpu],
        omit: &[&str],
    ) -> Option<LiveHost> {
        LiveHost::start_with(name, extra, gpus, omit, &|_| {})
    }

    /// [`LiveHost::start`], with `prepare` run on the laid-out host before it is served (e.g. to
    /// take a tool off its bin dir or put a real one there).
    pub fn start_with(
        name: &str,
        extra: &[(&str, &str)],
        gpus: &[Gpu],
        omit: &[&str],
        prepare: &dyn Fn(&FakeHost),
    ) -> Option<LiveHost> {
        if !gpurent_testhost::sshd_available() {
            return None;
        }
        let mut host = FakeHost::new(&fakegpu(), name).expect("fake host");
        for (k, v) in extra {
            host.vars.insert(k.to_string(), v.to_string());
        }
        if !gpus.is_empty() {
            write_gpus(&host.dir.path().join("state"), gpus, omit);
        }
        prepare(&host);
        let sshd = host.serve().expect("serve the fake host");
        let key = UserKey::generate("monitor").expect("key");
        sshd.authorize(&key.public_line).expect("authorize");
        Some(LiveHost { host, sshd, key })
    }

    pub fn state(&self) -> PathBuf {
        self.host.dir.path().join("state")
    }

    /// Connect to `port` (the sshd's own, or a proxy's in front of it).
    pub fn connect(&self, port: u16, cancel: &CancelToken) -> Result<Connection, RemoteError> {
        let pem = Secret::new(self.key.private_pem.clone());
        let mut verify =
            |_: gpurent_core::remote::Role,
             _: &Endpoint,
             _: &gpurent_core::remote::hostkey::PresentedKey| Ok(());
        connect(
            &Endpoint::new(self.sshd.host(), port, self.sshd.user()),
            None,
            Auth::Key(&pem),
            &opts(),
            &mut verify,
            cancel,
        )
    }
}

pub fn opts() -> ConnectOptions {
    ConnectOptions {
        dns_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
        handshake_timeout: Duration::from_secs(10),
        io_timeout: Duration::from_secs(30),
    }
}

/// A port nothing listens on now (on this machine's loopback).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Local addresses listening on `port` (from /proc/net/tcp and tcp6, hex `ADDR:PORT`).
pub fn listening(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for l in std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let c: Vec<&str> = l.split_whitespace().collect();
            if c.len() > 3 && c[3] == "0A" && c[1].ends_with(&format!(":{port:04X}")) {
                out.push(c[1].to_string());
            }
        }
    }
    out
}

/// Command lines of the login user's processes that mention `needle`.
pub fn remote_processes(needle: &str) -> Vec<String> {
    let out = std::process::Command::new("ps")
        .args(["-u", gpurent_testhost::TEST_USER, "-o", "args="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}
