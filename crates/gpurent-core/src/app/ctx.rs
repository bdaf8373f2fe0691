//! The handles the facade files resolve: the store (the ledger's connection, the store with a
//! remote error), a saved host, an account's client, the machines the last reconcile saw that
//! gpurent did not start. Shared like `mod.rs` and `login.rs`: every facade file may call these,
//! and they call no facade file.

use crate::app::App;
use crate::providers::accounts::{self, Account};
use crate::providers::foreign::ForeignSeen;
use crate::providers::{self, ClientConfig, Provider, ProviderError};
use crate::remote::error::RemoteError;
use crate::remote::hosts::{self, Host};

/// The ledger knows whether the machine behind a rented host still exists.
pub(super) fn mark_released(
    s: &crate::infra::store::Store,
    mut h: Host,
) -> Result<Host, RemoteError> {
    h.released_ms = crate::providers::ledger::released_at(s.conn(), &h.label)?;
    Ok(h)
}

impl App {
    pub(crate) fn with_db<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        self.with_store(|s| Ok(f(s.conn())))?
    }

    pub(crate) fn with_store_remote<T>(
        &self,
        f: impl FnOnce(&crate::infra::store::Store) -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        let mut out = None;
        self.with_store(|s| {
            out = Some(f(s));
            Ok(())
        })?;
        out.unwrap_or_else(|| Err(RemoteError::invalid("store", "not reached")))
    }

    /// One saved host (marked when its rented machine was released).
    pub fn host_get(&self, label: &str) -> Result<Host, RemoteError> {
        self.with_store_remote(|s| mark_released(s, hosts::require(s, label)?))
    }

    pub(crate) fn provider_client(
        &self,
        account: &Account,
    ) -> Result<Box<dyn Provider>, ProviderError> {
        let key = self.with_db(|c| accounts::api_key(c, self.keystore.as_ref(), account))?;
        providers::client(
            account.provider,
            ClientConfig::from_env(account.provider, key),
        )
    }

    /// The machines not started by gpurent as the last reconcile saw them.
    pub(crate) fn foreign_last_seen(&self) -> Vec<ForeignSeen> {
        self.foreign_seen
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }
}
