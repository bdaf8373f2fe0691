//! Shared setup for the SSH tests: an App in a temp dir, an SshEnv whose files live there too,
//! short timeouts, and a key the fixture sshd accepts.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use gpurent_core::app::hosts::HostAddRequest;
use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::clock::{Clock, FixedClock};
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::remote::{ConnectOptions, Host, HostSpec, RemoteError};
use gpurent_testhost::{Sshd, UserKey};

pub struct World {
    pub tmp: tempfile::TempDir,
    pub app: App,
    pub env: SshEnv,
}

pub fn opts() -> ConnectOptions {
    ConnectOptions {
        dns_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(5),
        handshake_timeout: Duration::from_secs(10),
        io_timeout: Duration::from_secs(30),
    }
}

pub fn world() -> World {
    world_with(Arc::new(FixedClock(1_000)))
}

/// A [`world`] whose App reads `clock`.
pub fn world_with(clock: Arc<dyn Clock>) -> World {
    let tmp = tempfile::tempdir().expect("tmp");
    let app = App::open(Paths::under(tmp.path().join("gpurent")), clock, None).expect("app");
    let mut env = SshEnv::under_home(&tmp.path().join("home"), None);
    env.connect = opts();
    World { tmp, app, env }
}

pub fn login_key(k: &UserKey, label: &str) -> LoginKey {
    LoginKey {
        label: label.into(),
        pem: Secret::new(k.private_pem.clone()),
        public_line: k.public_line.clone(),
    }
}

pub fn spec(sshd: &Sshd) -> HostSpec {
    spec_port(sshd, sshd.port())
}

pub fn spec_port(sshd: &Sshd, port: u16) -> HostSpec {
    HostSpec {
        address: sshd.host().into(),
        port,
        user: sshd.user().into(),
        jump: None,
        provider: Some("loopback".into()),
        notes: None,
    }
}

/// Add a host the way the UI does: first attempt → fingerprint prompt → retry with it.
pub fn add_confirmed(w: &World, label: &str, spec: HostSpec, key: Option<&LoginKey>) -> Host {
    let mut req = HostAddRequest {
        spec,
        label: Some(label.into()),
        key_label: key.map(|k| k.label.clone()),
        trust: vec![],
    };
    let cancel = CancelToken::new();
    loop {
        match w.app.host_add(&req, &w.env, key, &cancel) {
            Ok(h) => return h,
            Err(RemoteError::HostKeyUnknown { fingerprint, .. }) if req.trust.len() < 2 => {
                req.trust.push(fingerprint)
            }
            Err(e) => panic!("host_add: {e:?}"),
        }
    }
}
