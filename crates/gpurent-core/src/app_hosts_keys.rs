//! The hosts ↔ keys seam: turn a key label from the keychain into a [`LoginKey`], and a pasted
//! command read by [`crate::hostparse`] into a [`HostSpec`].

use crate::app::App;
use crate::app_hosts::LoginKey;
use crate::hostparse::ParsedHost;
use crate::remote::hosts::{HostSpec, JumpSpec};
use crate::remote::RemoteError;
use crate::secret::Secret;

impl HostSpec {
    /// The fields gpurent keeps from a parsed paste. A jump host without a user logs in as the
    /// target's user (rental consoles print `-J root@bastion` or nothing). The password is not
    /// part of a spec: it is used once (key install) and never stored.
    pub fn from_parsed(p: &ParsedHost, provider: Option<String>) -> HostSpec {
        HostSpec {
            address: p.host.clone(),
            port: p.port,
            user: p.user.clone(),
            jump: p.jump.as_ref().map(|j| JumpSpec {
                address: j.host.clone(),
                port: j.port,
                user: j.user.clone().unwrap_or_else(|| p.user.clone()),
            }),
            provider,
            notes: None,
        }
    }
}

impl App {
    /// Load a key from the keychain for logging in (`passphrase` for encrypted keys).
    pub fn host_login_key(
        &self,
        key_label: &str,
        passphrase: Option<&Secret>,
    ) -> Result<LoginKey, RemoteError> {
        let public_line = self.key_export_pub(key_label)?;
        let pem = self.load_private(key_label, passphrase)?;
        Ok(LoginKey {
            label: key_label.to_string(),
            pem,
            public_line,
        })
    }

    /// The key a saved host uses, loaded from the keychain.
    pub fn host_key_for(
        &self,
        host_label: &str,
        passphrase: Option<&Secret>,
    ) -> Result<LoginKey, RemoteError> {
        let host = self.host_get(host_label)?;
        let key = host
            .key_label
            .ok_or_else(|| RemoteError::KeyUnavailable(host_label.to_string()))?;
        self.host_login_key(&key, passphrase)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parsed_paste_becomes_a_spec_without_its_password() {
        let p = crate::hostparse::parse(
            "登录指令：ssh -p 38211 -J bastion.example.com root@region-3.example.com 密码：Ab12cd",
        )
        .expect("parse");
        let s = HostSpec::from_parsed(&p, Some("autodl".into()));
        assert_eq!(
            (s.address.as_str(), s.port, s.user.as_str()),
            ("region-3.example.com", 38211, "root")
        );
        let j = s.jump.as_ref().expect("jump");
        assert_eq!(
            (j.address.as_str(), j.port, j.user.as_str()),
            ("bastion.example.com", 22, "root")
        );
        assert!(p.password.is_some());
        assert!(!format!("{s:?}").contains("Ab12cd"));
    }
}
