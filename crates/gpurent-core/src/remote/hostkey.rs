//! Host keys: the key a server presents, its SHA256 fingerprint (as `ssh-keygen -l` prints it), the
//! user's own `known_hosts` verdict, and the pinning decision.
//!
//! Decision order ([`decide`]):
//! 1. The user's `known_hosts` lists a *different* key of the same type for this host → hard stop
//!    (`known_hosts_mismatch`). gpurent never edits that file; the message names the
//!    `ssh-keygen -R` command.
//! 2. gpurent has a pin: same fingerprint → go on; different → hard stop (`host_key_changed`)
//!    until the user re-pins explicitly.
//! 3. No pin: the fingerprint is among those the user confirmed (`trust`) → pin it; the user's
//!    `known_hosts` already matches it → pin it (the user verified it before); otherwise ask
//!    (`host_key_unknown`, carrying the fingerprint). [`unmatched_trust`] turns that into a refusal
//!    (`host_key_trust_mismatch`) when the user confirmed a fingerprint that no endpoint of the
//!    connection presented (with a jump host, one confirmation per endpoint is expected).

use std::path::Path;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::ipc::Role;
use crate::remote::error::RemoteError;

/// The key a server presented in the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedKey {
    /// e.g. `ssh-ed25519` (read from the key blob itself).
    pub key_type: String,
    /// The key blob, base64 (as in `known_hosts`).
    pub key_base64: String,
    /// `SHA256:` + unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    pub raw: Vec<u8>,
}

impl PresentedKey {
    /// Read the host key of a session after its handshake.
    pub fn from_session(session: &ssh2::Session) -> Result<Self, RemoteError> {
        let (raw, _) = session
            .host_key()
            .ok_or_else(|| RemoteError::ProtocolError {
                detail: "the server sent no host key".into(),
            })?;
        let hash = session
            .host_key_hash(ssh2::HashType::Sha256)
            .ok_or_else(|| RemoteError::ProtocolError {
                detail: "the host key could not be hashed".into(),
            })?;
        Ok(PresentedKey {
            key_type: blob_key_type(raw).unwrap_or_else(|| "unknown".into()),
            key_base64: STANDARD.encode(raw),
            fingerprint: format!("SHA256:{}", STANDARD_NO_PAD.encode(hash)),
            raw: raw.to_vec(),
        })
    }
}

/// The algorithm name at the start of an SSH public key blob (uint32 length + name).
pub fn blob_key_type(blob: &[u8]) -> Option<String> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    let name = blob.get(4..4 + len)?;
    String::from_utf8(name.to_vec()).ok()
}

/// Fingerprints compare without the `SHA256:` prefix and base64 padding; anything else must match
/// exactly (base64 is case-sensitive).
pub fn normalize_fingerprint(fp: &str) -> String {
    let t = fp.trim();
    let t = t.strip_prefix("SHA256:").unwrap_or(t);
    format!("SHA256:{}", t.trim_end_matches('='))
}

/// How OpenSSH names a host in `known_hosts`: bare `host` for port 22, `[host]:port` otherwise.
pub fn known_hosts_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// What the user's own `known_hosts` says about a presented key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KnownHostsVerdict {
    Match,
    Mismatch,
    NotFound,
}

/// Check `path` (OpenSSH format; hashed `|1|` entries too) for `host:port`. A missing file means
/// `NotFound`. Lines of other key types, `@cert-authority`/`@revoked` markers, comments and lines
/// libssh2 cannot parse are skipped, so only a key of the *same type* can give `Mismatch` (a host
/// listed with an RSA key that now presents ed25519 is "not found", as in OpenSSH).
pub fn check_known_hosts(
    session: &ssh2::Session,
    path: &Path,
    host: &str,
    port: u16,
    key: &PresentedKey,
) -> KnownHostsVerdict {
    let Ok(text) = std::fs::read_to_string(path) else {
        return KnownHostsVerdict::NotFound;
    };
    let Ok(mut kh) = session.known_hosts() else {
        return KnownHostsVerdict::NotFound;
    };
    let mut any = false;
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with('@') {
            continue;
        }
        let mut fields = l.split_whitespace();
        let (_names, ktype) = (fields.next(), fields.next());
        if ktype != Some(key.key_type.as_str()) {
            continue;
        }
        if kh.read_str(l, ssh2::KnownHostFileKind::OpenSSH).is_ok() {
            any = true;
        }
    }
    if !any {
        return KnownHostsVerdict::NotFound;
    }
    match kh.check_port(host, port, &key.raw) {
        ssh2::CheckResult::Match => KnownHostsVerdict::Match,
        ssh2::CheckResult::Mismatch => KnownHostsVerdict::Mismatch,
        _ => KnownHostsVerdict::NotFound,
    }
}

/// A pinned key as remembered (the part [`decide`] needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub fingerprint: String,
}

/// Why a key is trusted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PinSource {
    /// The user confirmed the fingerprint (prompt or `--trust`).
    User,
    /// The user's own `known_hosts` already listed this key.
    KnownHosts,
    /// An explicit re-pin after a change.
    Repin,
}

impl PinSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PinSource::User => "user",
            PinSource::KnownHosts => "known_hosts",
            PinSource::Repin => "repin",
        }
    }
}

/// The outcome of checking a presented key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Pinned before, same key.
    Pinned,
    /// Not pinned yet; pin it now for this reason.
    PinNow(PinSource),
}

/// Everything [`decide`] looks at for one endpoint.
#[derive(Debug)]
pub struct KeyCheck<'a> {
    pub role: Role,
    pub host: &'a str,
    pub port: u16,
    pub presented: &'a PresentedKey,
    pub pinned: Option<&'a Pin>,
    pub known_hosts: KnownHostsVerdict,
    pub known_hosts_path: &'a str,
    /// Fingerprints the user confirmed for this attempt.
    pub trust: &'a [String],
}

/// Apply the rules in the module docs.
pub fn decide(c: &KeyCheck<'_>) -> Result<Decision, RemoteError> {
    let actual = normalize_fingerprint(&c.presented.fingerprint);
    if c.known_hosts == KnownHostsVerdict::Mismatch {
        return Err(RemoteError::KnownHostsMismatch {
            role: c.role,
            host: c.host.into(),
            port: c.port,
            known_hosts_name: known_hosts_name(c.host, c.port),
            path: c.known_hosts_path.into(),
            fingerprint: actual,
        });
    }
    if let Some(pin) = c.pinned {
        let old = normalize_fingerprint(&pin.fingerprint);
        return if old == actual {
            Ok(Decision::Pinned)
        } else {
            Err(RemoteError::HostKeyChanged {
                role: c.role,
                host: c.host.into(),
                port: c.port,
                old_fingerprint: old,
                new_fingerprint: actual,
            })
        };
    }
    if c.trust.iter().any(|t| normalize_fingerprint(t) == actual) {
        return Ok(Decision::PinNow(PinSource::User));
    }
    if c.known_hosts == KnownHostsVerdict::Match {
        return Ok(Decision::PinNow(PinSource::KnownHosts));
    }
    Err(RemoteError::HostKeyUnknown {
        role: c.role,
        host: c.host.into(),
        port: c.port,
        key_type: c.presented.key_type.clone(),
        fingerprint: actual,
    })
}

/// The first confirmed fingerprint that none of the `presented` ones matches.
pub fn unmatched_trust<'a>(trust: &'a [String], presented: &[String]) -> Option<&'a String> {
    trust.iter().find(|t| {
        !presented
            .iter()
            .any(|p| normalize_fingerprint(p) == normalize_fingerprint(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Coded;

    fn key(fp: &str) -> PresentedKey {
        PresentedKey {
            key_type: "ssh-ed25519".into(),
            key_base64: "AAAA".into(),
            fingerprint: fp.into(),
            raw: vec![],
        }
    }

    fn check<'a>(
        k: &'a PresentedKey,
        pinned: Option<&'a Pin>,
        kh: KnownHostsVerdict,
        trust: &'a [String],
    ) -> Result<Decision, RemoteError> {
        decide(&KeyCheck {
            role: Role::Target,
            host: "h",
            port: 2222,
            presented: k,
            pinned,
            known_hosts: kh,
            known_hosts_path: "/kh",
            trust,
        })
    }

    #[test]
    fn first_use_asks_with_the_fingerprint_and_pins_only_a_match() {
        let k = key("SHA256:abc");
        match check(&k, None, KnownHostsVerdict::NotFound, &[]) {
            Err(RemoteError::HostKeyUnknown { fingerprint, .. }) => {
                assert_eq!(fingerprint, "SHA256:abc")
            }
            other => panic!("{other:?}"),
        }
        let ok = ["abc=".to_string()];
        assert_eq!(
            check(&k, None, KnownHostsVerdict::NotFound, &ok).expect("pin"),
            Decision::PinNow(PinSource::User)
        );
        let wrong = ["SHA256:xyz".to_string()];
        let e = check(&k, None, KnownHostsVerdict::NotFound, &wrong).expect_err("ask");
        assert_eq!(e.code(), "host_key_unknown");
        let seen = ["SHA256:jump".to_string(), "SHA256:abc".to_string()];
        assert_eq!(unmatched_trust(&wrong, &seen), Some(&wrong[0]));
        assert_eq!(unmatched_trust(&["SHA256:jump=".to_string()], &seen), None);
        assert_eq!(
            check(&k, None, KnownHostsVerdict::Match, &[]).expect("kh"),
            Decision::PinNow(PinSource::KnownHosts)
        );
    }

    #[test]
    fn a_changed_key_is_a_hard_stop_even_with_trust() {
        let k = key("SHA256:new");
        let pin = Pin {
            fingerprint: "SHA256:old".into(),
        };
        let trust = ["SHA256:new".to_string()];
        match check(&k, Some(&pin), KnownHostsVerdict::NotFound, &trust) {
            Err(RemoteError::HostKeyChanged {
                old_fingerprint,
                new_fingerprint,
                ..
            }) => assert_eq!(
                (old_fingerprint.as_str(), new_fingerprint.as_str()),
                ("SHA256:old", "SHA256:new")
            ),
            other => panic!("{other:?}"),
        }
        let same = Pin {
            fingerprint: "SHA256:new".into(),
        };
        assert_eq!(
            check(&k, Some(&same), KnownHostsVerdict::NotFound, &[]).expect("ok"),
            Decision::Pinned
        );
    }

    #[test]
    fn known_hosts_mismatch_wins_and_names_the_fix() {
        let k = key("SHA256:abc");
        let pin = Pin {
            fingerprint: "SHA256:abc".into(),
        };
        let e = check(&k, Some(&pin), KnownHostsVerdict::Mismatch, &[]).expect_err("stop");
        assert_eq!(e.code(), "known_hosts_mismatch");
        assert!(e.to_string().contains("ssh-keygen -R '[h]:2222'"), "{e}");
    }

    #[test]
    fn names_and_blob_types() {
        assert_eq!(known_hosts_name("example.com", 22), "example.com");
        assert_eq!(known_hosts_name("1.2.3.4", 38211), "[1.2.3.4]:38211");
        let mut blob = vec![0, 0, 0, 11];
        blob.extend_from_slice(b"ssh-ed25519");
        blob.extend_from_slice(&[0, 0, 0, 32]);
        assert_eq!(blob_key_type(&blob).as_deref(), Some("ssh-ed25519"));
        assert_eq!(blob_key_type(&[0, 0, 0, 99, 1]), None);
        assert_eq!(normalize_fingerprint(" SHA256:ab== "), "SHA256:ab");
    }
}
