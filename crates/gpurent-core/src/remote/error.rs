//! Every way reaching a host can end, as a typed outcome the user can act on. Codes are stable
//! snake_case (the UI translates by code; `docs/remote.md` lists them with their next steps).

use std::fmt;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::infra::ipc::{ErrorData, Role};

/// Where in the connection the outcome happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Looking up the host name.
    Dns,
    /// Opening the TCP connection.
    Connect,
    /// The SSH handshake (banner, key exchange, host key).
    Handshake,
    /// Logging in.
    Auth,
    /// Running a command or opening a channel.
    Exec,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Dns => "looking up the host name",
            Stage::Connect => "connecting",
            Stage::Handshake => "the SSH handshake",
            Stage::Auth => "logging in",
            Stage::Exec => "running a command",
        })
    }
}

/// Outcomes of reaching and using a host.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("the host name '{host}' could not be found (check for typos, or your network's DNS)")]
    DnsFailed { host: String, detail: String },
    #[error("{addr} refused the connection: nothing listens on that port (wrong port, or the instance is not running)")]
    ConnectionRefused { addr: String },
    #[error("no response while {stage} after {after_ms} ms (the host may be down, blocked by a firewall, or too slow)")]
    TimedOut { stage: Stage, after_ms: u64 },
    #[error("there is no network route to {addr} (check your network or VPN)")]
    NoRoute { addr: String },
    #[error("the network failed while {stage}")]
    Network { stage: Stage, detail: String },
    #[error("the host closed the connection during {stage}")]
    ConnectionLost { stage: Stage, detail: String },
    #[error("the other side does not speak SSH as expected ({detail})")]
    ProtocolError { detail: String },
    #[error("first connection to {host}:{port}: confirm that its host key fingerprint is {fingerprint} before it is trusted")]
    HostKeyUnknown {
        role: Role,
        host: String,
        port: u16,
        key_type: String,
        fingerprint: String,
    },
    #[error("the host key of {host}:{port} CHANGED from {old_fingerprint} to {new_fingerprint}; gpurent stopped. Either the platform re-created the instance, or someone is in the middle. Re-pin only if you know the host was re-created")]
    HostKeyChanged {
        role: Role,
        host: String,
        port: u16,
        old_fingerprint: String,
        new_fingerprint: String,
    },
    #[error("your known_hosts file ({path}) lists a different key for {host}:{port} than the host sent ({fingerprint}); gpurent stopped. If the host was re-created, remove the old line with: ssh-keygen -R '{known_hosts_name}'")]
    KnownHostsMismatch {
        role: Role,
        host: String,
        port: u16,
        known_hosts_name: String,
        path: String,
        fingerprint: String,
    },
    #[error(
        "the host's key fingerprint is {actual}, not the {given} you gave; nothing was trusted"
    )]
    TrustMismatch {
        role: Role,
        given: String,
        actual: String,
    },
    #[error("the host rejected the login of '{user}' by {method} (accepted methods: {offered})")]
    AuthRejected {
        user: String,
        method: String,
        offered: String,
    },
    #[error(
        "the private key could not be used (wrong passphrase, or an unsupported or damaged key)"
    )]
    KeyUnusable { detail: String },
    #[error("the jump host could not reach {host}:{port} ({detail})")]
    JumpForwardFailed {
        host: String,
        port: u16,
        detail: String,
    },
    #[error("the host is reachable, but installing the key failed: {detail}")]
    KeyInstallFailed { detail: String },
    #[error("the key was installed, but logging in with it did not work; the password was kept")]
    KeyLoginUnverified { detail: String },
    #[error("password login cannot be disabled on this host: {reason}")]
    HardeningUnavailable { reason: String },
    #[error("the key could not be loaded into ssh-agent: {detail}")]
    AgentUnavailable { detail: String },
    #[error("no saved host is called '{0}'")]
    UnknownHost(String),
    /// The rented machine behind this saved host was released: it no longer exists.
    #[error("'{label}' was released: that machine and its disk no longer exist (forget it in Hosts, or rent another)")]
    HostReleased { label: String, released_ms: i64 },
    #[error("a host called '{0}' already exists")]
    HostExists(String),
    /// Stopping a job left some of its processes alive on the host (after TERM and KILL).
    #[error("job '{job}' could not be stopped: processes {pids:?} are still running on the host")]
    JobSurvived { job: String, pids: Vec<u32> },
    #[error("no key is chosen for host '{0}' (pass a key label)")]
    KeyUnavailable(String),
    /// A command printed more than gpurent collects from one command: reading stopped there.
    #[error("the host printed more than {limit_mib} MiB for one command; gpurent stopped reading it (a runaway command, or a host flooding its output)")]
    OutputTooLarge { limit_mib: u64 },
    #[error(transparent)]
    Key(#[from] crate::keys::KeyError),
    /// A terminal or link could not be opened (`launcher_not_found`, `launch_refused`, …).
    #[error(transparent)]
    Opener(#[from] crate::opener::OpenerError),
    /// The pasted text could not be read as an SSH login.
    #[error(transparent)]
    Paste(#[from] crate::hostparse::HostParseError),
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl RemoteError {
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        RemoteError::Core(CoreError::invalid(field, reason))
    }

    /// Map a libssh2 error at a stage to an outcome.
    pub fn from_ssh(stage: Stage, e: &ssh2::Error, timeout_ms: u64) -> Self {
        let detail = e.to_string();
        match e.code() {
            ssh2::ErrorCode::Session(code) => match code {
                // LIBSSH2_ERROR_TIMEOUT
                -9 => RemoteError::TimedOut {
                    stage,
                    after_ms: timeout_ms,
                },
                // SOCKET_DISCONNECT, SOCKET_SEND, SOCKET_RECV, BAD_SOCKET
                -13 | -7 | -43 | -45 => RemoteError::ConnectionLost { stage, detail },
                // FILE: libssh2 cannot tell a wrong passphrase from a damaged key
                -16 => RemoteError::KeyUnusable { detail },
                _ => RemoteError::ProtocolError { detail },
            },
            ssh2::ErrorCode::SFTP(_) => RemoteError::ProtocolError { detail },
        }
    }

    /// Map an I/O error at a stage (TCP connect or socket use) to an outcome.
    pub fn from_io(stage: Stage, addr: &str, e: &std::io::Error, timeout_ms: u64) -> Self {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::ConnectionRefused => RemoteError::ConnectionRefused { addr: addr.into() },
            K::TimedOut | K::WouldBlock => RemoteError::TimedOut {
                stage,
                after_ms: timeout_ms,
            },
            K::HostUnreachable | K::NetworkUnreachable | K::AddrNotAvailable => {
                RemoteError::NoRoute { addr: addr.into() }
            }
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                RemoteError::ConnectionLost {
                    stage,
                    detail: e.to_string(),
                }
            }
            _ => RemoteError::Network {
                stage,
                detail: format!("{addr}: {e}"),
            },
        }
    }
}

impl From<rusqlite::Error> for RemoteError {
    fn from(e: rusqlite::Error) -> Self {
        RemoteError::Core(CoreError::Database(e))
    }
}

impl Coded for RemoteError {
    fn code(&self) -> &'static str {
        match self {
            RemoteError::DnsFailed { .. } => "dns_failed",
            RemoteError::ConnectionRefused { .. } => "connection_refused",
            RemoteError::TimedOut { .. } => "timed_out",
            RemoteError::NoRoute { .. } => "no_route",
            RemoteError::Network { .. } => "network_error",
            RemoteError::ConnectionLost { .. } => "connection_lost",
            RemoteError::ProtocolError { .. } => "protocol_error",
            RemoteError::HostKeyUnknown { .. } => "host_key_unknown",
            RemoteError::HostKeyChanged { .. } => "host_key_changed",
            RemoteError::KnownHostsMismatch { .. } => "known_hosts_mismatch",
            RemoteError::TrustMismatch { .. } => "host_key_trust_mismatch",
            RemoteError::AuthRejected { .. } => "auth_rejected",
            RemoteError::KeyUnusable { .. } => "key_unusable",
            RemoteError::JumpForwardFailed { .. } => "jump_forward_failed",
            RemoteError::KeyInstallFailed { .. } => "key_install_failed",
            RemoteError::KeyLoginUnverified { .. } => "key_login_unverified",
            RemoteError::HardeningUnavailable { .. } => "hardening_unavailable",
            RemoteError::AgentUnavailable { .. } => "agent_unavailable",
            RemoteError::UnknownHost(_) => "unknown_host",
            RemoteError::HostReleased { .. } => "host_released",
            RemoteError::HostExists(_) => "host_exists",
            RemoteError::JobSurvived { .. } => "job_survived",
            RemoteError::KeyUnavailable(_) => "key_unavailable",
            RemoteError::OutputTooLarge { .. } => "output_too_large",
            RemoteError::Key(e) => e.code(),
            RemoteError::Opener(e) => e.code(),
            RemoteError::Paste(e) => e.code(),
            RemoteError::Core(e) => e.code(),
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            RemoteError::DnsFailed { detail, .. }
            | RemoteError::Network { detail, .. }
            | RemoteError::ConnectionLost { detail, .. }
            | RemoteError::ProtocolError { detail }
            | RemoteError::KeyUnusable { detail }
            | RemoteError::KeyInstallFailed { detail }
            | RemoteError::KeyLoginUnverified { detail }
            | RemoteError::AgentUnavailable { detail } => Some(detail.clone()),
            // The fingerprint the user must compare (the UI shows it in the prompt).
            RemoteError::HostKeyUnknown { fingerprint, .. }
            | RemoteError::KnownHostsMismatch { fingerprint, .. } => Some(fingerprint.clone()),
            RemoteError::HostKeyChanged {
                old_fingerprint,
                new_fingerprint,
                ..
            } => Some(format!("{old_fingerprint} -> {new_fingerprint}")),
            RemoteError::TrustMismatch { actual, .. } => Some(actual.clone()),
            RemoteError::TimedOut { stage, .. } => Some(format!("{stage:?}").to_lowercase()),
            RemoteError::JobSurvived { pids, .. } => Some(
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            RemoteError::Key(e) => e.detail(),
            RemoteError::Opener(e) => e.detail(),
            RemoteError::Paste(e) => e.detail(),
            RemoteError::Core(e) => e.detail(),
            _ => None,
        }
    }

    fn data(&self) -> Option<ErrorData> {
        let hop = |role: &Role, host: &str, port: u16| ErrorData {
            role: Some(*role),
            host: Some(host.to_string()),
            port: Some(port),
            ..ErrorData::default()
        };
        match self {
            RemoteError::HostKeyUnknown {
                role,
                host,
                port,
                key_type,
                fingerprint,
            } => Some(ErrorData {
                key_type: Some(key_type.clone()),
                fingerprint: Some(fingerprint.clone()),
                ..hop(role, host, *port)
            }),
            RemoteError::HostKeyChanged {
                role,
                host,
                port,
                old_fingerprint,
                new_fingerprint,
            } => Some(ErrorData {
                fingerprint: Some(new_fingerprint.clone()),
                expected_fingerprint: Some(old_fingerprint.clone()),
                ..hop(role, host, *port)
            }),
            RemoteError::KnownHostsMismatch {
                role,
                host,
                port,
                fingerprint,
                ..
            } => Some(ErrorData {
                fingerprint: Some(fingerprint.clone()),
                ..hop(role, host, *port)
            }),
            RemoteError::TrustMismatch {
                role,
                given,
                actual,
            } => Some(ErrorData {
                role: Some(*role),
                fingerprint: Some(actual.clone()),
                expected_fingerprint: Some(given.clone()),
                ..ErrorData::default()
            }),
            RemoteError::Key(e) => e.data(),
            RemoteError::Core(e) => e.data(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn io_errors_map_to_actionable_outcomes() {
        let m = |k: io::ErrorKind| RemoteError::from_io(Stage::Connect, "h:22", &k.into(), 5000);
        assert_eq!(
            m(io::ErrorKind::ConnectionRefused).code(),
            "connection_refused"
        );
        assert_eq!(m(io::ErrorKind::TimedOut).code(), "timed_out");
        assert_eq!(m(io::ErrorKind::HostUnreachable).code(), "no_route");
        assert_eq!(m(io::ErrorKind::NetworkUnreachable).code(), "no_route");
        assert_eq!(m(io::ErrorKind::ConnectionReset).code(), "connection_lost");
        assert_eq!(m(io::ErrorKind::PermissionDenied).code(), "network_error");
    }

    #[test]
    fn host_key_facts_are_fields_of_the_payload_with_their_hop() {
        let changed = RemoteError::HostKeyChanged {
            role: Role::Jump,
            host: "bastion.example.com".into(),
            port: 2222,
            old_fingerprint: "SHA256:old".into(),
            new_fingerprint: "SHA256:new".into(),
        };
        let json = serde_json::to_value(crate::infra::ipc::ErrorPayload::from_error(&changed))
            .expect("json");
        assert_eq!(
            json["data"],
            serde_json::json!({
                "role": "jump",
                "host": "bastion.example.com",
                "port": 2222,
                "fingerprint": "SHA256:new",
                "expected_fingerprint": "SHA256:old",
            })
        );
        let locked = RemoteError::Key(crate::keys::KeyError::PassphraseRequired {
            label: Some("laptop".into()),
        });
        let json = serde_json::to_value(crate::infra::ipc::ErrorPayload::from_error(&locked))
            .expect("json");
        assert_eq!(json["code"], "passphrase_required");
        assert_eq!(json["data"], serde_json::json!({"key_label": "laptop"}));
        let plain = RemoteError::UnknownHost("x".into());
        let json = serde_json::to_value(crate::infra::ipc::ErrorPayload::from_error(&plain))
            .expect("json");
        assert!(
            json.get("data").is_none(),
            "no data field when there are no facts"
        );
    }

    #[test]
    fn codes_are_snake_case_and_core_codes_pass_through() {
        let all = [
            RemoteError::HostKeyChanged {
                role: Role::Target,
                host: "h".into(),
                port: 22,
                old_fingerprint: "SHA256:a".into(),
                new_fingerprint: "SHA256:b".into(),
            },
            RemoteError::UnknownHost("x".into()),
            RemoteError::Core(CoreError::Cancelled),
        ];
        for e in &all {
            assert!(e.code().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
        assert_eq!(all[0].detail().as_deref(), Some("SHA256:a -> SHA256:b"));
        assert_eq!(all[2].code(), "cancelled");
    }
}
