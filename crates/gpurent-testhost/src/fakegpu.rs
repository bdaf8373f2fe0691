//! Fake GPU hosts for the wizard's tests: a scenario file (`<fakegpu>/scenarios/NAME.env`) plus the
//! fake `nvidia-smi`, `nvcc`, `python3` (real interpreter, fake `torch`), `pip`, ... of
//! `<fakegpu>/bin`, laid out under one temp dir (bin, fake root, home, pip state). The same host
//! can be run locally under `sh` ([`FakeHost::env`]) or served by a real loopback sshd
//! ([`FakeHost::serve`]), so the local suite, the SSH suite and the app's E2E journeys see the same
//! machine. The fake tools themselves live in `crates/gpurent-core/tests/fakegpu/`.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Sshd, TEST_USER};

/// System utilities the probe and the fake tools need besides the fakes.
const SYS_TOOLS: &[&str] = &[
    "sh", "dash", "bash", "mktemp", "rm", "mkdir", "timeout", "cat", "tail", "head", "date",
    "uname", "nproc", "getconf", "grep", "awk", "mawk", "gawk", "sed", "env", "cut", "sort", "tr",
    "dirname", "basename", "touch", "cp", "chmod", "sleep", "wc", "ls", "printf", "od", "setsid",
    "dd", "readlink", "stat",
];

/// The machine's real interpreter the fake `python3` wraps.
pub fn real_python() -> io::Result<PathBuf> {
    ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| io::Error::other("the fake GPU host needs a system python3"))
}

/// `KEY=VALUE` lines (quotes stripped), comments skipped.
pub fn load(path: &Path) -> io::Result<BTreeMap<String, String>> {
    Ok(std::fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        .collect())
}

/// A fake host: its bin dir, fake root, home and pip state, under one temp dir.
#[derive(Debug)]
pub struct FakeHost {
    pub dir: tempfile::TempDir,
    /// The scenario file.
    pub file: PathBuf,
    /// The scenario's variables (`EXPECT_*` lines are the tests' expectations, not environment).
    pub vars: BTreeMap<String, String>,
    fakegpu: PathBuf,
}

impl FakeHost {
    /// Lay out scenario `name` of the fake tools in `fakegpu`.
    pub fn new(fakegpu: &Path, name: &str) -> io::Result<FakeHost> {
        let file = fakegpu.join("scenarios").join(format!("{name}.env"));
        let vars = load(&file)?;
        let dir = tempfile::tempdir()?;
        let bin = dir.path().join("bin");
        for d in ["bin", "root", "home", "state"] {
            std::fs::create_dir_all(dir.path().join(d))?;
        }
        let mut absent: Vec<&str> = vars
            .get("FAKE_ABSENT")
            .map(|v| v.split_whitespace().collect())
            .unwrap_or_default();
        if !vars.contains_key("FAKE_CONDA_ROOT") {
            absent.push("conda");
        }
        for e in std::fs::read_dir(fakegpu.join("bin"))? {
            let p = e?.path();
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !absent.contains(&n.as_str()) {
                std::os::unix::fs::symlink(&p, bin.join(&n))?;
            }
        }
        for t in SYS_TOOLS {
            let target = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(t))
                .find(|p| p.exists());
            if let (Some(target), false) = (target, bin.join(t).exists()) {
                std::os::unix::fs::symlink(target, bin.join(t))?;
            }
        }
        let st = Command::new("/bin/sh")
            .arg(fakegpu.join("mkroot.sh"))
            .arg(&file)
            .arg(dir.path().join("root"))
            .env("FAKE_REAL_PYTHON", real_python()?)
            .status()?;
        if !st.success() {
            return Err(io::Error::other(format!("mkroot.sh failed for {name}")));
        }
        Ok(FakeHost {
            dir,
            file,
            vars,
            fakegpu: fakegpu.to_path_buf(),
        })
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// The environment a session on this host has (PATH is the fake bin dir only).
    pub fn env(&self) -> io::Result<Vec<(String, String)>> {
        let d = self.dir.path();
        let s = |p: &Path| p.display().to_string();
        let mut pairs = vec![
            ("PATH".to_string(), s(&self.bin())),
            ("HOME".into(), s(&d.join("home"))),
            ("GPURENT_PROBE_ROOT".into(), s(&d.join("root"))),
            ("FAKEGPU_DIR".into(), s(&self.fakegpu)),
            ("FAKEGPU_STATE".into(), s(&d.join("state"))),
            ("FAKEGPU_SCENARIO".into(), s(&self.file)),
            ("FAKE_REAL_PYTHON".into(), s(&real_python()?)),
        ];
        for (k, v) in &self.vars {
            if !k.starts_with("EXPECT_") {
                pairs.push((k.clone(), v.clone()));
            }
        }
        Ok(pairs)
    }

    /// Serve this host over a fresh loopback sshd: the login user may walk the host dir and owns
    /// its home and pip state, and a drop-in `SetEnv` (read before the fixture's own, so it wins)
    /// gives every session the host's environment.
    pub fn serve(&self) -> io::Result<Sshd> {
        self.serve_as(TEST_USER)
    }

    /// [`FakeHost::serve`] to the login user `user` (one of the fixture's users, e.g.
    /// [`crate::FISH_USER`]).
    pub fn serve_as(&self, user: &'static str) -> io::Result<Sshd> {
        let d = self.dir.path();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))?;
        let (uid, gid) = (id_of(user, "-u")?, id_of(user, "-g")?);
        for sub in ["home", "state"] {
            std::os::unix::fs::chown(d.join(sub), Some(uid), Some(gid))?;
        }
        let mut quoted = Vec::new();
        for (k, v) in self.env()? {
            if v.contains('"') {
                return Err(io::Error::other(format!("{k}: no quotes in SetEnv values")));
            }
            quoted.push(format!("\"{k}={v}\""));
        }
        let mut sshd = Sshd::start_with(crate::SshdOptions {
            login_user: (user != TEST_USER).then_some(user),
            ..Default::default()
        })?;
        std::fs::write(
            sshd.config_dropin_dir().join("fakegpu.conf"),
            format!("SetEnv {}\n", quoted.join(" ")),
        )?;
        sshd.restart()?;
        Ok(sshd)
    }
}

fn id_of(user: &str, flag: &str) -> io::Result<u32> {
    let out = Command::new("id").args([flag, user]).output()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| io::Error::other(format!("id {flag} {user}: not a number")))
}
