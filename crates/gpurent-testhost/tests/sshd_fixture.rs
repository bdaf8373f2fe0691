//! The fixture itself, checked with OpenSSH's own client: login, PATH/HOME, host key swap.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use gpurent_testhost::{sshd_available, DelayProxy, Sshd, UserKey};

fn ssh(
    sshd: &Sshd,
    port: u16,
    key_file: &std::path::Path,
    kh: &std::path::Path,
    cmd: &str,
) -> std::process::Output {
    Command::new("ssh")
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", kh.display()))
        .arg("-i")
        .arg(key_file)
        .args(["-p", &port.to_string()])
        .arg(format!("{}@{}", sshd.user(), sshd.host()))
        .arg(cmd)
        .output()
        .expect("run ssh")
}

#[test]
fn openssh_client_logs_in_sees_fixture_env_and_notices_a_swapped_host_key() {
    if !sshd_available() {
        return;
    }
    let mut sshd = Sshd::start().expect("start sshd");
    let key = UserKey::generate("fixture-test").expect("key");
    sshd.authorize(&key.public_line).expect("authorize");
    let tmp = tempfile::tempdir().expect("tmp");
    let key_file = tmp.path().join("id");
    std::fs::write(&key_file, &key.private_pem).expect("write key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let kh = tmp.path().join("known_hosts");
    std::fs::write(&kh, format!("{}\n", sshd.known_hosts_line().expect("kh"))).expect("write kh");
    sshd.install_bin("fake-tool", "#!/bin/sh\necho fake-tool-ran\n")
        .expect("bin");

    let out = ssh(
        &sshd,
        sshd.port(),
        &key_file,
        &kh,
        "echo \"$HOME\"; fake-tool; id -un",
    );
    assert!(out.status.success(), "{out:?}\n{}", sshd.log());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            sshd.home().to_str().expect("utf8"),
            "fake-tool-ran",
            "gputest"
        ]
    );

    // Through the delay proxy the same login works.
    let proxy = DelayProxy::start(
        format!("127.0.0.1:{}", sshd.port()).parse().expect("addr"),
        std::time::Duration::from_millis(10),
    )
    .expect("proxy");
    let mut kh_text = std::fs::read_to_string(&kh).expect("kh");
    kh_text.push_str(
        &sshd
            .known_hosts_line()
            .expect("kh")
            .replace(&sshd.port().to_string(), &proxy.port().to_string()),
    );
    kh_text.push('\n');
    std::fs::write(&kh, kh_text).expect("kh");
    let out = ssh(&sshd, proxy.port(), &key_file, &kh, "echo via-proxy");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "via-proxy",
        "{out:?}"
    );

    let before = sshd.host_key_fingerprint().expect("fp");
    sshd.swap_host_key().expect("swap");
    assert_ne!(sshd.host_key_fingerprint().expect("fp"), before);
    let out = ssh(&sshd, sshd.port(), &key_file, &kh, "true");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("REMOTE HOST IDENTIFICATION HAS CHANGED"),
        "{out:?}"
    );
}
