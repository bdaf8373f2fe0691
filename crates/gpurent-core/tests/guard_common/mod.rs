//! Shared set-up for the guard's SSH tests (`guard_ssh.rs`, `guard_provider_ssh.rs`,
//! `second_guard_*.rs`, `release_ssh.rs`): the fake GPU's live-mode files, the system tools a
//! fake host's PATH needs, a fake cloud behind Prism's validating proxy for its spec, a rented
//! machine (a fake GPU host on the real loopback sshd, with a key), the guard's short test
//! period settings and the guard a test started (stopped on drop).
//!
//! Uses `remote_common` and `setup_common`: a test file declares all three modules.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpurent_core::app::login::LoginKey;
use gpurent_core::app::providers::RentRequest;
use gpurent_core::guard::{parse_decisions, ActionKind, Decision, GuardSpec};
use gpurent_core::monitor::telemetry::GpuQuery;
use gpurent_core::providers::ProviderKind;
use gpurent_testhost::fakecloud::{FakeCloud, Flavor, SshTarget};
use gpurent_testhost::{Prism, Sshd, UserKey};

use crate::remote_common::login_key;
use crate::setup_common::FakeHost;

/// The fake GPU's UUID in `gpus.csv` and `apps.csv`.
pub const GPU_UUID: &str = "GPU-00000000-fake-4e5f-8a9b-0c1d2e3f4a5b";
/// `(name, memory.total)` of the fake GPUs.
pub const H100: (&str, &str) = ("NVIDIA H100 80GB HBM3", "81559");
pub const RTX4090: (&str, &str) = ("NVIDIA GeForce RTX 4090", "24564");

pub fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, body).expect("write tool");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `gpus.csv` for the fake's live mode: every field the monitor asks for, one `gpu` at `util` %.
pub fn gpus_csv(gpu: (&str, &str), util: u32) -> String {
    let fields = GpuQuery::new().fields();
    let value = |f: &str| -> String {
        match f {
            "index" => "0".into(),
            "uuid" => GPU_UUID.into(),
            "name" => gpu.0.into(),
            "utilization.gpu" => util.to_string(),
            "memory.total" => gpu.1.into(),
            f if f.starts_with("clocks_event_reasons.") => "Not Active".into(),
            _ => "1".into(),
        }
    };
    let row: Vec<String> = fields.iter().map(|f| value(f)).collect();
    format!("{}\n{}\n", fields.join(","), row.join(","))
}

/// `apps.csv` for the fake's live mode: `pids` computing on the GPU.
pub fn apps_csv(pids: &[u32]) -> String {
    let mut s = String::from("gpu_uuid,pid,used_memory\n");
    for p in pids {
        s.push_str(&format!("{GPU_UUID},{p},1024\n"));
    }
    s
}

/// Write the fake GPU's state files directly (before anything reads them).
pub fn write_gpu_state(host: &FakeHost, gpu: (&str, &str), util: u32, pids: &[u32]) {
    let state = host.dir.path().join("state");
    std::fs::write(state.join("gpus.csv"), gpus_csv(gpu, util)).expect("gpus");
    std::fs::write(state.join("apps.csv"), apps_csv(pids)).expect("apps");
}

/// A quiet machine for the guard's CPU and network signals: a fake root (`GPURENT_PROC_ROOT` in
/// the host's sessions; the guard saves it as `SYS_ROOT`) whose `sys/fs/cgroup/cpu.stat`,
/// `proc/stat` and `proc/net/dev` stand still — this machine's own are busy with the other
/// tests' builds. A test makes it busy by advancing them ([`advance_cpu`]). Returns the root.
pub fn quiet_machine(host: &mut FakeHost) -> PathBuf {
    let root = host.dir.path().join("sysroot");
    std::fs::create_dir_all(root.join("proc/net")).expect("sysroot");
    std::fs::create_dir_all(root.join("sys/fs/cgroup")).expect("sysroot");
    std::fs::write(
        root.join("proc/stat"),
        "cpu  1000 0 100 500000 20 0 3 0 0 0
",
    )
    .expect("stat");
    std::fs::write(
        root.join("proc/net/dev"),
        "Inter-|   Receive |  Transmit
 face |bytes packets|bytes packets
    lo: 5000 10 0 0 0 0 0 0 5000 10 0 0 0 0 0 0
  eth0: 100000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0
",
    )
    .expect("net/dev");
    advance_cpu(&root, 1_000_000);
    host.vars
        .insert("GPURENT_PROC_ROOT".into(), root.display().to_string());
    root
}

/// Set the fake container's CPU usage (cgroup v2 `usage_usec`), as the kernel counts it.
pub fn advance_cpu(root: &Path, usage_usec: u64) {
    let f = root.join("sys/fs/cgroup/cpu.stat");
    let tmp = f.with_extension("tmp");
    std::fs::write(
        &tmp,
        format!(
            "usage_usec {usage_usec}
user_usec {usage_usec}
system_usec 0
"
        ),
    )
    .expect("cpu.stat");
    std::fs::rename(&tmp, &f).expect("rename cpu.stat");
}

/// Link the system's `tools` into a fake host's bin dir (each must exist on this machine).
pub fn link_system_tools(bin: &Path, tools: &[&str]) {
    for t in tools {
        let target = system_tool(t).expect("system tool");
        std::os::unix::fs::symlink(target, bin.join(t)).expect("link tool");
    }
}

/// Where the system's `tool` is (`/usr/bin` or `/bin`).
pub fn system_tool(tool: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.exists())
}

pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// Established TCP connections to the loopback `port` right now.
pub fn established_conns(port: u16) -> usize {
    let hex = format!("{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().skip(1).map(String::from).collect::<Vec<_>>())
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[3] == "01" && f[1].ends_with(&format!(":{hex}"))
        })
        .count()
}

/// The guard's documented short test settings: a 1 s period, `warn_s`, connections counted
/// from 2 s.
pub fn short_spec(idle_s: u64, action: ActionKind, warn_s: u32) -> GuardSpec {
    GuardSpec {
        period_s: 1,
        warn_s,
        conn_min_age_s: 2,
        ..GuardSpec::new(idle_s, action)
    }
}

/// The guard a test started on a fake host: its decisions, and stopped on drop (the guard
/// outlives every connection by design).
pub struct Guarded {
    pub dir: PathBuf,
}

impl Guarded {
    pub fn on(host: &FakeHost) -> Guarded {
        Guarded {
            dir: host.dir.path().join("home/.gpurent/guard"),
        }
    }

    pub fn decisions(&self) -> Vec<Decision> {
        parse_decisions(
            &std::fs::read_to_string(self.dir.join("decisions.log")).unwrap_or_default(),
        )
        .0
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pid")) {
            let pid = pid.trim().to_string();
            let ours = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map(|c| c.contains("guard.sh"))
                .unwrap_or(false);
            if ours {
                let _ = std::process::Command::new("kill").arg(&pid).status();
            }
        }
    }
}

pub fn ssh_target(sshd: &Sshd) -> SshTarget {
    SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    }
}

/// A fake cloud of `flavor` (100 ms provisioning) whose machines are `sshd`, behind Prism's
/// validating proxy for the provider's spec.
pub fn cloud(flavor: Flavor, account_key: &str, sshd: &Sshd) -> (FakeCloud, Prism) {
    let fake = FakeCloud::start(flavor, account_key).expect("fake cloud");
    fake.set_provisioning(Duration::from_millis(100));
    fake.set_ssh(ssh_target(sshd));
    let spec = match flavor {
        Flavor::Vast => "vastai.openapi.yaml",
        Flavor::Runpod => "runpod-rest-v2.openapi.json",
        _ => panic!("no provider spec in this test set-up for this flavor"),
    };
    let spec_file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/provider-specs")
        .join(spec);
    let prism = Prism::proxy(&spec_file, &fake.url()).expect("prism proxy");
    (fake, prism)
}

/// This process's provider settings (`GPURENT_<P>_API_KEY`, `_API_URL`, `_SSH_USER`) and a
/// 5 s HTTP timeout.
pub fn set_provider_env(prefix: &str, account_key: &str, url: &str, sshd: &Sshd) {
    std::env::set_var(format!("GPURENT_{prefix}_API_KEY"), account_key);
    std::env::set_var(format!("GPURENT_{prefix}_API_URL"), url);
    std::env::set_var(format!("GPURENT_{prefix}_SSH_USER"), sshd.user());
    // 30 s: a failure path only (no fault here hangs a request); a few seconds could be
    // reached by a loaded machine answering a create, which is never resent.
    std::env::set_var("GPURENT_HTTP_TIMEOUT_S", "30");
}

/// Rent `offer_id` and wait (60 s at most) until it is ready.
pub fn rent_request(provider: ProviderKind, offer_id: String) -> RentRequest {
    RentRequest {
        provider,
        offer_id,
        image: None,
        disk_gb: None,
        no_wait: false,
        ready_timeout_s: Some(60),
        account: None,
        max_price_usd: None,
    }
}

/// `app.rent` of [`rent_request`]`(provider, offer_id)` with `key`: no progress shown, never
/// cancelled; panics on an error.
pub fn rent_ready(
    app: &gpurent_core::app::App,
    env: &gpurent_core::app::login::SshEnv,
    provider: ProviderKind,
    offer_id: String,
    key: &LoginKey,
) -> gpurent_core::app::providers::InstanceView {
    app.rent(
        &rent_request(provider, offer_id),
        key,
        env,
        &gpurent_core::infra::events::NoProgress,
        &gpurent_core::infra::cancel::CancelToken::new(),
    )
    .expect("rent")
}

/// The fake cloud numbers instances from 1001.
pub const INSTANCE_ID: &str = "1001";

/// A Vast machine to rent: a fake GPU host whose sessions carry the instance's own variables
/// (`CONTAINER_ID`, `CONTAINER_API_KEY`), with no HTTP tool (the fake `curl` is taken away),
/// `mv`, `nohup` and a silent `wall`, served by the real loopback sshd with a key; the fake
/// Vast cloud behind Prism, and this process's `GPURENT_VAST_*` settings.
pub struct VastMachine {
    pub sshd: Sshd,
    pub key: LoginKey,
    pub bin: PathBuf,
    pub host: FakeHost,
    pub prism: Prism,
    pub fake: FakeCloud,
}

pub fn vast_machine(
    account_key: &str,
    instance_key: &str,
    key_name: &str,
    util: u32,
    pids: &[u32],
) -> VastMachine {
    vast_machine_as(account_key, instance_key, key_name, util, pids, INSTANCE_ID)
}

/// [`vast_machine`] whose environment names instance `container_id` (another instance's id: the
/// address gpurent rented now answers as some other machine).
pub fn vast_machine_as(
    account_key: &str,
    instance_key: &str,
    key_name: &str,
    util: u32,
    pids: &[u32],
    container_id: &str,
) -> VastMachine {
    let mut host = FakeHost::new("ready_h100");
    host.vars.insert("CONTAINER_ID".into(), container_id.into());
    host.vars
        .insert("CONTAINER_API_KEY".into(), instance_key.into());
    let bin = host.bin();
    std::fs::remove_file(bin.join("curl")).expect("remove the fake curl");
    link_system_tools(&bin, &["mv", "nohup"]);
    write_exec(&bin.join("wall"), "#!/bin/sh\ncat > /dev/null\n");
    write_gpu_state(&host, RTX4090, util, pids);
    quiet_machine(&mut host);
    let sshd = host.serve().expect("serve the fake host over sshd");
    let k = UserKey::generate(key_name).expect("key");
    sshd.authorize(&k.public_line).expect("authorize");
    let key = login_key(&k, "k1");
    let (fake, prism) = cloud(Flavor::Vast, account_key, &sshd);
    fake.add_instance_key(INSTANCE_ID, instance_key);
    set_provider_env("VAST", account_key, &prism.url(), &sshd);
    VastMachine {
        sshd,
        key,
        bin,
        host,
        prism,
        fake,
    }
}
