//! Installing our public key on a host that gave us a password (AutoDL-style), proving a key
//! login works, and the optional hardening step (password logins off).
//!
//! - The key line is appended to `~/.ssh/authorized_keys` idempotently: the directory is made
//!   (0700), the file made or fixed (0600), an entry with the same key type and base64 (options
//!   and comment ignored) counts as present, and a missing final newline is repaired first.
//! - Hardening needs a [`KeyLoginVerified`], which only [`prove_key_login`] creates, from a
//!   connection that logged in by public key: password logins cannot be switched off unless a key
//!   login was verified in the same flow. It writes a drop-in `00-gpurent-no-password.conf` (first
//!   in sort order, so it wins: sshd keeps the first value it reads) when
//!   `/etc/ssh/sshd_config.d` exists and is writable (as root or by `sudo -n`), validates with
//!   `sshd -t` when it can, and reloads sshd. Container hosts get a warning: their sshd config is
//!   usually reset when the container restarts.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::cancel::CancelToken;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::exec;
use crate::remote::quote::{sh_c, shell_quote};

/// The default drop-in directory of OpenSSH's server config.
pub const SSHD_DROPIN_DIR: &str = "/etc/ssh/sshd_config.d";
/// The drop-in gpurent writes.
pub const DROPIN_NAME: &str = "00-gpurent-no-password.conf";

const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// Check an `authorized_keys` line we are about to install: one line, a known key type, base64.
/// Returns `"type base64"` (the part that identifies the key).
pub fn key_identity(line: &str) -> Result<String, RemoteError> {
    let bad = |why: &str| RemoteError::invalid("public_key", why);
    if line.contains(['\n', '\r', '\0']) {
        return Err(bad("must be a single line"));
    }
    let mut parts = line.split_whitespace();
    let ktype = parts.next().ok_or_else(|| bad("is empty"))?;
    if !KEY_TYPES.contains(&ktype) {
        return Err(bad("does not start with a supported key type"));
    }
    let b64 = parts.next().ok_or_else(|| bad("has no key data"))?;
    if b64.len() < 16
        || !b64
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
    {
        return Err(bad("key data is not base64"));
    }
    Ok(format!("{ktype} {b64}"))
}

/// Whether the key was added or already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InstallOutcome {
    Added,
    AlreadyPresent,
}

/// Append `public_line` to `~/.ssh/authorized_keys` on the host (idempotent).
pub fn install_public_key(
    conn: &Connection,
    public_line: &str,
    cancel: &CancelToken,
) -> Result<InstallOutcome, RemoteError> {
    let identity = key_identity(public_line)?;
    let script = format!(
        r#"set -e
umask 077
line={line}
kb={kb}
if [ -z "${{HOME:-}}" ]; then echo 'HOME is not set' >&2; exit 3; fi
d="$HOME/.ssh"; f="$d/authorized_keys"
mkdir -p "$d"
chmod 700 "$d"
[ -f "$f" ] || : > "$f"
chmod 600 "$f"
if awk -v k="$kb" '{{for (i = 1; i < NF; i++) if ($i " " $(i+1) == k) found = 1}} END {{exit found ? 0 : 1}}' "$f"; then
  echo gpurent:present
  exit 0
fi
if [ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ]; then printf '\n' >> "$f"; fi
printf '%s\n' "$line" >> "$f"
command -v restorecon >/dev/null 2>&1 && restorecon -R "$d" >/dev/null 2>&1 || true
echo gpurent:added
"#,
        line = shell_quote(public_line.trim())?,
        kb = shell_quote(&identity)?,
    );
    let out = exec(conn, &sh_c(&script)?, cancel)?;
    let text = out.stdout_text();
    if !out.success() {
        return Err(RemoteError::KeyInstallFailed {
            detail: format!("exit {:?}: {}", out.exit_status, out.stderr_text().trim()),
        });
    }
    if text.contains("gpurent:added") {
        Ok(InstallOutcome::Added)
    } else if text.contains("gpurent:present") {
        Ok(InstallOutcome::AlreadyPresent)
    } else {
        Err(RemoteError::KeyInstallFailed {
            detail: format!("unexpected output: {}", text.trim()),
        })
    }
}

/// Proof that a public-key login worked in this flow; only [`prove_key_login`] makes one.
#[derive(Debug)]
pub struct KeyLoginVerified {
    _private: (),
}

/// Run a trivial command on a connection that logged in by public key.
pub fn prove_key_login(
    conn: &Connection,
    cancel: &CancelToken,
) -> Result<KeyLoginVerified, RemoteError> {
    if conn.auth_method() != Some("publickey") {
        return Err(RemoteError::KeyLoginUnverified {
            detail: "this connection did not log in with a key".into(),
        });
    }
    let out = exec(conn, "echo gpurent-key-login-ok", cancel)?;
    if out.success() && out.stdout_text().trim() == "gpurent-key-login-ok" {
        Ok(KeyLoginVerified { _private: () })
    } else {
        Err(RemoteError::KeyLoginUnverified {
            detail: format!("test command gave exit {:?}", out.exit_status),
        })
    }
}

/// What the hardening step did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HardeningReport {
    /// The drop-in file written.
    pub dropin_path: String,
    /// sshd was reloaded (otherwise the change applies at its next start).
    pub reloaded: bool,
    /// The host looks like a container: its sshd config is usually reset on restart.
    pub container_warning: bool,
}

/// Switch password logins off (see the module docs). `dropin_dir` is [`SSHD_DROPIN_DIR`] on
/// real hosts.
pub fn disable_password_login(
    conn: &Connection,
    _proof: &KeyLoginVerified,
    dropin_dir: &str,
    cancel: &CancelToken,
) -> Result<HardeningReport, RemoteError> {
    let script = format!(
        r#"d={d}
f="$d/{name}"
if [ -f /.dockerenv ] || [ -f /run/.containerenv ] || grep -qaE 'docker|kubepods|containerd|lxc|libpod' /proc/1/cgroup 2>/dev/null; then
  echo gpurent:container=yes
fi
if [ ! -d "$d" ]; then echo gpurent:result=no-dropin-dir; exit 0; fi
SUDO=
if [ -w "$d" ]; then :
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO='sudo -n'
else echo gpurent:result=not-permitted; exit 0; fi
printf '%s\n' '# Written by gpurent after a verified key login: key logins only.' 'PasswordAuthentication no' 'KbdInteractiveAuthentication no' | $SUDO tee "$f" >/dev/null || {{ echo gpurent:result=write-failed; exit 0; }}
$SUDO chmod 644 "$f" 2>/dev/null || true
if [ "$(id -u)" = 0 ] || [ -n "$SUDO" ]; then
  for s in /usr/sbin/sshd /usr/bin/sshd /sbin/sshd; do
    if [ -x "$s" ]; then
      if ! $SUDO "$s" -t >/dev/null 2>&1; then $SUDO rm -f "$f"; echo gpurent:result=invalid-config; exit 0; fi
      break
    fi
  done
fi
echo gpurent:result=written
if command -v systemctl >/dev/null 2>&1 && {{ $SUDO systemctl reload ssh 2>/dev/null || $SUDO systemctl reload sshd 2>/dev/null; }}; then
  echo gpurent:reloaded=yes
elif [ -r /run/sshd.pid ] && $SUDO kill -HUP "$(cat /run/sshd.pid)" 2>/dev/null; then
  echo gpurent:reloaded=yes
elif [ -r /var/run/sshd.pid ] && $SUDO kill -HUP "$(cat /var/run/sshd.pid)" 2>/dev/null; then
  echo gpurent:reloaded=yes
fi
"#,
        d = shell_quote(dropin_dir)?,
        name = DROPIN_NAME,
    );
    let out = exec(conn, &sh_c(&script)?, cancel)?;
    let text = out.stdout_text();
    let result = text
        .lines()
        .find_map(|l| l.strip_prefix("gpurent:result="))
        .unwrap_or("");
    let reason = match result {
        "written" => None,
        "no-dropin-dir" => Some(format!(
            "{dropin_dir} does not exist (older OpenSSH); edit /etc/ssh/sshd_config by hand"
        )),
        "not-permitted" => Some(format!(
            "no permission to write {dropin_dir} (log in as root or allow sudo)"
        )),
        "invalid-config" => Some("sshd -t rejected the change; it was removed".into()),
        "write-failed" => Some(format!("writing into {dropin_dir} failed")),
        _ => Some(format!(
            "unexpected answer (exit {:?}): {}",
            out.exit_status,
            out.stderr_text().trim()
        )),
    };
    if let Some(reason) = reason {
        return Err(RemoteError::HardeningUnavailable { reason });
    }
    Ok(HardeningReport {
        dropin_path: format!("{}/{DROPIN_NAME}", dropin_dir.trim_end_matches('/')),
        reloaded: text.contains("gpurent:reloaded=yes"),
        container_warning: text.contains("gpurent:container=yes"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lines_are_checked_before_they_reach_a_shell() {
        let good = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBase64Base64Base64 me@laptop 数据";
        assert_eq!(
            key_identity(good).expect("ok"),
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBase64Base64Base64"
        );
        for bad in [
            "",
            "ssh-ed25519",
            "ssh-ed25519 AAAA\nssh-rsa BBBB",
            "rm -rf / AAAAAAAAAAAAAAAAAAAA",
            "ssh-ed25519 $(reboot)AAAAAAAAAAAAAAAAAA",
            "command=\"x\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBase64",
        ] {
            assert!(key_identity(bad).is_err(), "{bad:?}");
        }
    }
}
