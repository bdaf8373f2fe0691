//! For `scripts/bench-transfer.sh` (never run in CI): start the loopback sshd fixture and a
//! delay proxy in front of it, write a client key file, print shell assignments
//! (`PORT=… PROXY_PORT=… KEY=… HOME_DIR=… FP=…`) and stay up until stdin closes.
//! Usage: `bench-host [ONE_WAY_DELAY_MS]` (default 25, i.e. 50 ms round trip).

use std::io::Read;
use std::time::Duration;

use gpurent_testhost::{DelayProxy, Sshd, UserKey};

fn main() -> std::io::Result<()> {
    let delay_ms: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(25);
    if let Some(why) = gpurent_testhost::sshd_missing_reason() {
        eprintln!("bench-host: {why}");
        std::process::exit(2);
    }
    let sshd = Sshd::start()?;
    let key = UserKey::generate("gpurent-bench")?;
    sshd.authorize(&key.public_line)?;
    let key_file = sshd.state_dir().join("client_key");
    std::fs::write(&key_file, &key.private_pem)?;
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )?;
    let upstream = format!("127.0.0.1:{}", sshd.port())
        .parse()
        .map_err(std::io::Error::other)?;
    let proxy = DelayProxy::start(upstream, Duration::from_millis(delay_ms))?;
    println!("PORT={}", sshd.port());
    println!("PROXY_PORT={}", proxy.port());
    println!("KEY={}", key_file.display());
    println!("HOME_DIR={}", sshd.home().display());
    println!("FP={}", sshd.host_key_fingerprint()?);
    println!("READY=1");
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(proxy);
    drop(sshd);
    Ok(())
}
