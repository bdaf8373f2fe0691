//! A real OpenSSH `sshd` per test, on 127.0.0.1 and a free port, in its own state dir.
//!
//! Traps handled here (found on Debian 12 / OpenSSH 9.2): `/run/sshd` must exist (the setup script
//! makes it); a `useradd` account is locked until it gets a password hash or `*` (setup script);
//! `StrictModes` rejects key files under `/tmp` (off here); the state dir must be traversable by
//! the login user (0755 here). sshd runs with `-D` (no fork), so kill + wait on the child stops it
//! without leaving a zombie.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{SSHD, TEST_USER};

/// What to configure beyond the defaults.
#[derive(Debug, Clone, Default)]
pub struct SshdOptions {
    /// Allow password logins (the user's password is [`crate::TEST_PASSWORD`]).
    pub password_auth: bool,
    /// Extra `sshd_config` lines, appended.
    pub extra_config: String,
    /// Log in as this user instead of [`TEST_USER`] (e.g. [`crate::FISH_USER`], whose login shell
    /// is not POSIX); it must exist ([`crate::sshd_available_as`]).
    pub login_user: Option<&'static str>,
}

/// A running sshd. Stopped (kill + wait) on drop; its state dir is removed then.
#[derive(Debug)]
pub struct Sshd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
    opts: SshdOptions,
}

fn run(cmd: &mut Command) -> io::Result<String> {
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn uid_gid(user: &str) -> io::Result<(u32, u32)> {
    let num = |flag: &str| -> io::Result<u32> {
        run(Command::new("id").args([flag, user]))?
            .trim()
            .parse()
            .map_err(io::Error::other)
    };
    Ok((num("-u")?, num("-g")?))
}

fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `ssh-keygen -lf FILE` → `SHA256:…` (the second field).
fn fingerprint_of(pub_file: &Path) -> io::Result<String> {
    let out = run(Command::new("ssh-keygen").arg("-lf").arg(pub_file))?;
    out.split_whitespace()
        .nth(1)
        .map(String::from)
        .ok_or_else(|| io::Error::other(format!("unexpected ssh-keygen -l output: {out}")))
}

fn keygen(path: &Path, comment: &str) -> io::Result<()> {
    let _ = fs::remove_file(path);
    let _ = fs::remove_file(path.with_extension("pub"));
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path))?;
    Ok(())
}

impl Sshd {
    /// Start an sshd with the default options (public key auth only).
    pub fn start() -> io::Result<Sshd> {
        Self::start_with(SshdOptions::default())
    }

    /// Start an sshd; returns once its log says "Server listening".
    pub fn start_with(opts: SshdOptions) -> io::Result<Sshd> {
        let dir = tempfile::Builder::new().prefix("gpurent-sshd-").tempdir()?;
        let root = dir.path();
        fs::set_permissions(root, fs::Permissions::from_mode(0o755))?;
        let (uid, gid) = uid_gid(opts.login_user.unwrap_or(TEST_USER))?;
        for sub in ["bin", "home", "sshd_config.d"] {
            let p = root.join(sub);
            fs::create_dir(&p)?;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755))?;
            if sub != "bin" {
                std::os::unix::fs::chown(&p, Some(uid), Some(gid))?;
            }
        }
        fs::write(root.join("authorized_keys"), "")?;
        fs::set_permissions(
            root.join("authorized_keys"),
            fs::Permissions::from_mode(0o644),
        )?;
        keygen(&root.join("host_ed25519"), "gpurent-testhost")?;
        let mut sshd = Sshd {
            child: None,
            dir,
            port: 0,
            opts,
        };
        sshd.write_config()?;
        // A port picked by binding :0 can be taken by a parallel test before sshd binds it: retry.
        let mut last = None;
        for _ in 0..5 {
            sshd.port = free_port()?;
            match sshd.spawn() {
                Ok(()) => return Ok(sshd),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("sshd did not start")))
    }

    fn write_config(&self) -> io::Result<()> {
        let d = self.dir.path().display();
        let pw = if self.opts.password_auth { "yes" } else { "no" };
        let user = self.user();
        let config = format!(
            "Include {d}/sshd_config.d/*.conf\n\
             ListenAddress 127.0.0.1\n\
             HostKey {d}/host_ed25519\n\
             PidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys {d}/home/.ssh/authorized_keys\n\
             AllowUsers {user}\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication {pw}\n\
             KbdInteractiveAuthentication no\n\
             UsePAM no\n\
             StrictModes no\n\
             PrintMotd no\n\
             Subsystem sftp internal-sftp\n\
             SetEnv PATH={d}/bin:/usr/local/bin:/usr/bin:/bin HOME={d}/home FAKEGPU_BIN={d}/bin\n\
             LogLevel VERBOSE\n\
             {}\n",
            self.opts.extra_config
        );
        fs::write(self.dir.path().join("sshd_config"), config)
    }

    fn spawn(&mut self) -> io::Result<()> {
        let root = self.dir.path().to_path_buf();
        let log_path = root.join("sshd.log");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let start_len = log.metadata()?.len() as usize;
        let mut child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(root.join("sshd_config"))
            .arg("-p")
            .arg(self.port.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let ready = format!("Server listening on 127.0.0.1 port {}.", self.port);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let text = fs::read_to_string(&log_path).unwrap_or_default();
            let new = text.get(start_len..).unwrap_or("");
            if new.contains(&ready) {
                self.child = Some(child);
                return Ok(());
            }
            if let Some(status) = child.try_wait()? {
                return Err(io::Error::other(format!(
                    "sshd exited ({status}) before listening:\n{new}"
                )));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::other(format!(
                    "sshd did not report listening within 15 s:\n{new}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Restart on the same port (after a config or host key change).
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.write_config()?;
        let mut last = None;
        // The old listening socket is closed by the kill; retry briefly in case the port lingers.
        for _ in 0..20 {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last.unwrap_or_else(|| io::Error::other("sshd did not restart")))
    }

    /// Replace the host key and restart: what a platform does when it re-creates an instance.
    pub fn swap_host_key(&mut self) -> io::Result<()> {
        keygen(&self.dir.path().join("host_ed25519"), "gpurent-testhost-2")?;
        self.restart()
    }

    /// Kill sshd without restarting (the host went away). Established sessions die with it only
    /// if they are served by children; use [`crate::DelayProxy::cut`] to cut live connections.
    pub fn kill(&mut self) {
        self.stop();
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Always `127.0.0.1`.
    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    /// The login user ([`TEST_USER`] unless [`SshdOptions::login_user`] says otherwise).
    pub fn user(&self) -> &'static str {
        self.opts.login_user.unwrap_or(TEST_USER)
    }

    /// The state dir (config, host key, log, `bin/`, `home/`).
    pub fn state_dir(&self) -> &Path {
        self.dir.path()
    }

    /// `$HOME` of sessions on this sshd (a private dir owned by the login user).
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// First on sessions' `PATH`.
    pub fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// A directory `Include`d at the top of this sshd's config (`*.conf`), writable by the user.
    pub fn config_dropin_dir(&self) -> PathBuf {
        self.dir.path().join("sshd_config.d")
    }

    /// Put an executable script into `bin/` (fake tools).
    pub fn install_bin(&self, name: &str, script: &str) -> io::Result<PathBuf> {
        let p = self.bin_dir().join(name);
        fs::write(&p, script)?;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755))?;
        Ok(p)
    }

    /// Let this public key line log in (the fixture's own authorized_keys, not `~/.ssh`).
    pub fn authorize(&self, public_line: &str) -> io::Result<()> {
        let p = self.dir.path().join("authorized_keys");
        let mut text = fs::read_to_string(&p)?;
        text.push_str(public_line.trim_end());
        text.push('\n');
        fs::write(p, text)
    }

    /// `SHA256:…` of the current host key.
    pub fn host_key_fingerprint(&self) -> io::Result<String> {
        fingerprint_of(&self.dir.path().join("host_ed25519.pub"))
    }

    /// A known_hosts line for this host as OpenSSH writes it (`[127.0.0.1]:PORT type base64`).
    pub fn known_hosts_line(&self) -> io::Result<String> {
        let pubkey = fs::read_to_string(self.dir.path().join("host_ed25519.pub"))?;
        let mut parts = pubkey.split_whitespace();
        let (t, b) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        Ok(format!("[127.0.0.1]:{} {t} {b}", self.port))
    }

    /// sshd's log so far (for assertions and failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A fresh ed25519 client key pair made by `ssh-keygen` (files deleted right away).
#[derive(Debug, Clone)]
pub struct UserKey {
    /// OpenSSH private key PEM (unencrypted). Tests wrap it in the product's `Secret`.
    pub private_pem: String,
    /// The `authorized_keys` line (`ssh-ed25519 AAAA… comment`).
    pub public_line: String,
    /// `SHA256:…`
    pub fingerprint: String,
}

impl UserKey {
    pub fn generate(comment: &str) -> io::Result<UserKey> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("id_ed25519");
        keygen(&path, comment)?;
        Ok(UserKey {
            private_pem: fs::read_to_string(&path)?,
            public_line: fs::read_to_string(path.with_extension("pub"))?
                .trim()
                .to_string(),
            fingerprint: fingerprint_of(&path.with_extension("pub"))?,
        })
    }
}
