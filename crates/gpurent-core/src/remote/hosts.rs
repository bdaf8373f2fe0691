//! Saved hosts in SQLite (`hosts`, `host_keys`, `host_key_history`; migration 4) and the types
//! the UI and the CLI see.

use rusqlite::{params, OptionalExtension, Row};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::ipc::Role;
use crate::infra::store::Store;
use crate::remote::endpoint::Endpoint;
use crate::remote::error::RemoteError;
use crate::remote::hostkey::{PinSource, PresentedKey};

/// A jump host (`ssh -J user@host:port`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct JumpSpec {
    pub address: String,
    pub port: u16,
    pub user: String,
}

/// The fields of a pasted SSH command that gpurent keeps (from the paste parser).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HostSpec {
    pub address: String,
    pub port: u16,
    pub user: String,
    pub jump: Option<JumpSpec>,
    pub provider: Option<String>,
    pub notes: Option<String>,
}

/// A pinned host key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PinnedKey {
    pub role: Role,
    pub key_type: String,
    pub key_base64: String,
    pub fingerprint: String,
    pub pinned_ms: i64,
    pub source: PinSource,
}

/// The result of `host check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct HostCheck {
    pub checked_ms: i64,
    /// One SSH round trip (smallest of a few), when it could be measured.
    pub latency_ms: Option<f64>,
    /// The host presented its pinned key (a changed key is an error, never `false` here).
    pub host_key_ok: bool,
    pub host_key_fingerprint: String,
    /// Logging in with the host's key worked.
    pub key_login_ok: bool,
    /// Why the key login did not work (an error code such as `auth_rejected`).
    pub key_login_problem: Option<String>,
}

/// One re-pin: who accepted which new key when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RepinRecord {
    pub role: Role,
    pub changed_ms: i64,
    pub changed_by: String,
    pub old_fingerprint: String,
    pub new_fingerprint: String,
}

/// A saved host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Host {
    pub label: String,
    pub address: String,
    pub port: u16,
    pub user: String,
    pub jump: Option<JumpSpec>,
    pub key_label: Option<String>,
    pub provider: Option<String>,
    pub notes: Option<String>,
    pub created_ms: i64,
    pub last_used_ms: Option<i64>,
    /// The rented machine behind this host was released (its instance is terminated in the
    /// ledger) at this time: the host no longer exists and is not connected to. `None` for
    /// pasted hosts and machines that still exist.
    #[serde(default)]
    pub released_ms: Option<i64>,
    pub host_keys: Vec<PinnedKey>,
    pub last_check: Option<HostCheck>,
    pub repins: Vec<RepinRecord>,
}

impl Host {
    /// `HostReleased` when the rented machine behind this host was released.
    pub fn still_exists(&self) -> Result<(), RemoteError> {
        match self.released_ms {
            Some(released_ms) => Err(RemoteError::HostReleased {
                label: self.label.clone(),
                released_ms,
            }),
            None => Ok(()),
        }
    }

    pub fn target(&self) -> Endpoint {
        Endpoint::new(&self.address, self.port, &self.user)
    }
    pub fn jump_endpoint(&self) -> Option<Endpoint> {
        self.jump
            .as_ref()
            .map(|j| Endpoint::new(&j.address, j.port, &j.user))
    }
    pub fn pinned(&self, role: Role) -> Option<&PinnedKey> {
        self.host_keys.iter().find(|k| k.role == role)
    }
}

/// Labels: 1–48 characters of `a-z A-Z 0-9 . _ -`, starting with a letter or digit (they become
/// `Host gpurent-<label>` in ssh_config and part of a VS Code URI).
pub fn validate_label(label: &str) -> Result<(), RemoteError> {
    let ok = !label.is_empty()
        && label.len() <= 48
        && label
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(RemoteError::invalid(
            "label",
            "use 1-48 letters, digits, '.', '_' or '-', starting with a letter or digit",
        ))
    }
}

/// A label from an address when the user gave none: `region-3.example.com:38211` → `region-3-38211`.
pub fn default_label(spec: &HostSpec) -> String {
    let first = spec.address.split('.').next().unwrap_or("host");
    let mut base: String = first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if spec.address.parse::<std::net::IpAddr>().is_ok() {
        base = spec.address.replace(['.', ':'], "-");
    }
    let base = base.trim_matches('-');
    let base = if base.is_empty() { "host" } else { base };
    let label = if spec.port == 22 {
        base.to_string()
    } else {
        format!("{base}-{}", spec.port)
    };
    label.chars().take(48).collect()
}

fn role_str(r: Role) -> &'static str {
    r.as_str()
}

fn parse_role(s: &str) -> Role {
    if s == "jump" {
        Role::Jump
    } else {
        Role::Target
    }
}

fn parse_source(s: &str) -> PinSource {
    match s {
        "known_hosts" => PinSource::KnownHosts,
        "repin" => PinSource::Repin,
        _ => PinSource::User,
    }
}

const HOST_COLS: &str = "label, address, port, user, jump_address, jump_port, jump_user, key_label,
     provider, notes, created_ms, last_used_ms, last_check_json";

fn host_from_row(r: &Row<'_>) -> rusqlite::Result<Host> {
    let jump = match (
        r.get::<_, Option<String>>(4)?,
        r.get::<_, Option<u16>>(5)?,
        r.get::<_, Option<String>>(6)?,
    ) {
        (Some(address), Some(port), Some(user)) => Some(JumpSpec {
            address,
            port,
            user,
        }),
        _ => None,
    };
    let check: Option<String> = r.get(12)?;
    Ok(Host {
        label: r.get(0)?,
        address: r.get(1)?,
        port: r.get(2)?,
        user: r.get(3)?,
        jump,
        key_label: r.get(7)?,
        provider: r.get(8)?,
        notes: r.get(9)?,
        created_ms: r.get(10)?,
        last_used_ms: r.get(11)?,
        released_ms: None,
        host_keys: Vec::new(),
        last_check: check.and_then(|j| serde_json::from_str(&j).ok()),
        repins: Vec::new(),
    })
}

fn fill(store: &Store, mut h: Host) -> Result<Host, RemoteError> {
    let mut st = store.conn().prepare(
        "SELECT role, key_type, key_base64, fingerprint, pinned_ms, source FROM host_keys
         WHERE host_label = ?1 ORDER BY role DESC",
    )?;
    h.host_keys = st
        .query_map([&h.label], |r| {
            Ok(PinnedKey {
                role: parse_role(&r.get::<_, String>(0)?),
                key_type: r.get(1)?,
                key_base64: r.get(2)?,
                fingerprint: r.get(3)?,
                pinned_ms: r.get(4)?,
                source: parse_source(&r.get::<_, String>(5)?),
            })
        })?
        .collect::<Result<_, _>>()?;
    let mut st = store.conn().prepare(
        "SELECT role, changed_ms, changed_by, old_fingerprint, new_fingerprint
         FROM host_key_history WHERE host_label = ?1 ORDER BY id",
    )?;
    h.repins = st
        .query_map([&h.label], |r| {
            Ok(RepinRecord {
                role: parse_role(&r.get::<_, String>(0)?),
                changed_ms: r.get(1)?,
                changed_by: r.get(2)?,
                old_fingerprint: r.get(3)?,
                new_fingerprint: r.get(4)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(h)
}

pub fn get(store: &Store, label: &str) -> Result<Option<Host>, RemoteError> {
    let row = store
        .conn()
        .query_row(
            &format!("SELECT {HOST_COLS} FROM hosts WHERE label = ?1"),
            [label],
            host_from_row,
        )
        .optional()?;
    row.map(|h| fill(store, h)).transpose()
}

pub fn require(store: &Store, label: &str) -> Result<Host, RemoteError> {
    get(store, label)?.ok_or_else(|| RemoteError::UnknownHost(label.into()))
}

pub fn list(store: &Store) -> Result<Vec<Host>, RemoteError> {
    let mut st = store
        .conn()
        .prepare(&format!("SELECT {HOST_COLS} FROM hosts ORDER BY label"))?;
    let rows = st
        .query_map([], host_from_row)?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter().map(|h| fill(store, h)).collect()
}

pub fn insert(
    store: &Store,
    label: &str,
    spec: &HostSpec,
    key_label: Option<&str>,
    now_ms: i64,
) -> Result<(), RemoteError> {
    if get(store, label)?.is_some() {
        return Err(RemoteError::HostExists(label.into()));
    }
    let j = spec.jump.as_ref();
    store.conn().execute(
        "INSERT INTO hosts(label, address, port, user, jump_address, jump_port, jump_user,
                           key_label, provider, notes, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            label,
            spec.address,
            spec.port,
            spec.user,
            j.map(|j| &j.address),
            j.map(|j| j.port),
            j.map(|j| &j.user),
            key_label,
            spec.provider,
            spec.notes,
            now_ms
        ],
    )?;
    Ok(())
}

pub fn pin(
    store: &Store,
    label: &str,
    role: Role,
    key: &PresentedKey,
    source: PinSource,
    now_ms: i64,
) -> Result<(), RemoteError> {
    store.conn().execute(
        "INSERT INTO host_keys(host_label, role, key_type, key_base64, fingerprint, pinned_ms, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(host_label, role) DO UPDATE SET key_type = excluded.key_type,
            key_base64 = excluded.key_base64, fingerprint = excluded.fingerprint,
            pinned_ms = excluded.pinned_ms, source = excluded.source",
        params![
            label,
            role_str(role),
            key.key_type,
            key.key_base64,
            key.fingerprint,
            now_ms,
            source.as_str()
        ],
    )?;
    Ok(())
}

pub fn record_repin(
    store: &Store,
    label: &str,
    role: Role,
    by: &str,
    old: &str,
    new: &str,
    now_ms: i64,
) -> Result<(), RemoteError> {
    store.conn().execute(
        "INSERT INTO host_key_history(host_label, role, changed_ms, changed_by, old_fingerprint,
                                      new_fingerprint) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![label, role_str(role), now_ms, by, old, new],
    )?;
    Ok(())
}

pub fn record_check(store: &Store, label: &str, check: &HostCheck) -> Result<(), RemoteError> {
    let json =
        serde_json::to_string(check).map_err(|e| RemoteError::invalid("check", e.to_string()))?;
    store.conn().execute(
        "UPDATE hosts SET last_check_json = ?2, last_used_ms = ?3 WHERE label = ?1",
        params![label, json, check.checked_ms],
    )?;
    Ok(())
}

/// The saved key this host logs in with from now on.
pub fn set_key_label(store: &Store, label: &str, key_label: &str) -> Result<(), RemoteError> {
    store.conn().execute(
        "UPDATE hosts SET key_label = ?2 WHERE label = ?1",
        params![label, key_label],
    )?;
    Ok(())
}

/// Move a saved host to a new address / port / login user (a rented machine the provider
/// started again elsewhere). Its pinned host keys stay: they belong to the host (the label),
/// not to the address, so a different key at the new address is still `host_key_changed`.
pub fn set_endpoint(
    store: &Store,
    label: &str,
    address: &str,
    port: u16,
    user: &str,
) -> Result<(), RemoteError> {
    store.conn().execute(
        "UPDATE hosts SET address = ?2, port = ?3, user = ?4 WHERE label = ?1",
        params![label, address, port, user],
    )?;
    Ok(())
}

pub fn touch(store: &Store, label: &str, now_ms: i64) -> Result<(), RemoteError> {
    store.conn().execute(
        "UPDATE hosts SET last_used_ms = ?2 WHERE label = ?1",
        params![label, now_ms],
    )?;
    Ok(())
}

pub fn delete(store: &Store, label: &str) -> Result<bool, RemoteError> {
    Ok(store
        .conn()
        .execute("DELETE FROM hosts WHERE label = ?1", [label])?
        > 0)
}

/// Pinned keys of all hosts as OpenSSH `known_hosts` lines (for `UserKnownHostsFile`).
pub fn known_hosts_lines(hosts: &[Host]) -> String {
    let mut out =
        String::from("# Host keys pinned by gpurent (rewritten on every ssh-config write)\n");
    for h in hosts {
        for k in &h.host_keys {
            let (addr, port) = match (k.role, &h.jump) {
                (Role::Jump, Some(j)) => (j.address.as_str(), j.port),
                (Role::Jump, None) => continue,
                (Role::Target, _) => (h.address.as_str(), h.port),
            };
            out.push_str(&format!(
                "{} {} {}\n",
                crate::remote::hostkey::known_hosts_name(addr, port),
                k.key_type,
                k.key_base64
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(addr: &str, port: u16) -> HostSpec {
        HostSpec {
            address: addr.into(),
            port,
            user: "root".into(),
            jump: Some(JumpSpec {
                address: "bastion".into(),
                port: 22,
                user: "ops".into(),
            }),
            provider: Some("autodl".into()),
            notes: None,
        }
    }

    #[test]
    fn hosts_round_trip_with_pins_history_and_cascade() {
        let s = Store::open_in_memory().expect("db");
        insert(
            &s,
            "a100",
            &spec("region-3.example.com", 38211),
            Some("k1"),
            5,
        )
        .expect("insert");
        assert!(matches!(
            insert(&s, "a100", &spec("x", 22), None, 6),
            Err(RemoteError::HostExists(_))
        ));
        let key = PresentedKey {
            key_type: "ssh-ed25519".into(),
            key_base64: "AAAAC3Nz".into(),
            fingerprint: "SHA256:one".into(),
            raw: vec![],
        };
        pin(&s, "a100", Role::Target, &key, PinSource::User, 7).expect("pin");
        pin(&s, "a100", Role::Jump, &key, PinSource::KnownHosts, 7).expect("pin jump");
        record_repin(
            &s,
            "a100",
            Role::Target,
            "alice",
            "SHA256:zero",
            "SHA256:one",
            8,
        )
        .expect("history");
        let h = require(&s, "a100").expect("get");
        assert_eq!(h.jump.as_ref().map(|j| j.user.as_str()), Some("ops"));
        assert_eq!(h.pinned(Role::Target).map(|k| k.pinned_ms), Some(7));
        assert_eq!(
            h.pinned(Role::Jump).map(|k| k.source),
            Some(PinSource::KnownHosts)
        );
        assert_eq!(h.repins[0].changed_by, "alice");
        let lines = known_hosts_lines(&[h]);
        assert!(lines.contains("[region-3.example.com]:38211 ssh-ed25519 AAAAC3Nz\n"));
        assert!(lines.contains("\nbastion ssh-ed25519 AAAAC3Nz\n"));
        assert!(delete(&s, "a100").expect("delete"));
        let left: i64 = s
            .conn()
            .query_row("SELECT COUNT(*) FROM host_keys", [], |r| r.get(0))
            .expect("count");
        assert_eq!(left, 0);
        assert!(matches!(
            require(&s, "a100"),
            Err(RemoteError::UnknownHost(_))
        ));
    }

    #[test]
    fn labels() {
        assert_eq!(
            default_label(&spec("region-3.example.com", 38211)),
            "region-3-38211"
        );
        assert_eq!(default_label(&spec("10.0.0.7", 22)), "10-0-0-7");
        assert!(validate_label("a100_box-2.x").is_ok());
        for bad in ["", "-x", "a b", "a/b", "数据", &"x".repeat(49)] {
            assert!(validate_label(bad).is_err(), "{bad}");
        }
    }
}
