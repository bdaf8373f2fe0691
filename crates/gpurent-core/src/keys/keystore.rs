//! Where private keys (and later host passwords) live: a small [`KeyStore`] trait over the OS
//! keychain. The app always uses [`OsKeyStore`] (Secret Service on Linux, Keychain on macOS,
//! Credential Manager on Windows); [`MemoryKeyStore`] exists for tests only and is never selected
//! by the app itself.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::keys::KeyError;
use crate::secret::Secret;

/// The keychain "service" every gpurent item is filed under.
pub const KEYCHAIN_SERVICE: &str = "gpurent";

/// Get, set and delete one secret by account name. Implementations must never log values.
pub trait KeyStore: Send + Sync + std::fmt::Debug {
    /// The secret saved under `account`, or `None` when there is none.
    fn get(&self, account: &str) -> Result<Option<Secret>, KeyError>;
    /// Save (or replace) the secret under `account`.
    fn set(&self, account: &str, secret: &Secret) -> Result<(), KeyError>;
    /// Remove the secret under `account`; removing a missing one is not an error.
    fn delete(&self, account: &str) -> Result<(), KeyError>;
    /// A short name of the backend for messages and diagnostics.
    fn backend(&self) -> &'static str;
}

/// A shared store is a store (tests keep a handle to inspect what the app wrote).
impl<T: KeyStore + ?Sized> KeyStore for std::sync::Arc<T> {
    fn get(&self, account: &str) -> Result<Option<Secret>, KeyError> {
        (**self).get(account)
    }
    fn set(&self, account: &str, secret: &Secret) -> Result<(), KeyError> {
        (**self).set(account, secret)
    }
    fn delete(&self, account: &str) -> Result<(), KeyError> {
        (**self).delete(account)
    }
    fn backend(&self) -> &'static str {
        (**self).backend()
    }
}

/// The operating system's keychain through the `keyring` crate (v3).
#[derive(Debug, Clone)]
pub struct OsKeyStore {
    service: String,
}

impl OsKeyStore {
    /// Items filed under `service` (the app uses [`KEYCHAIN_SERVICE`]).
    pub fn new(service: impl Into<String>) -> Self {
        OsKeyStore {
            service: service.into(),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, KeyError> {
        keyring::Entry::new(&self.service, account).map_err(map_keyring)
    }
}

impl Default for OsKeyStore {
    fn default() -> Self {
        OsKeyStore::new(KEYCHAIN_SERVICE)
    }
}

/// Translate `keyring` errors into outcomes a user can act on. `NoEntry` is handled by callers.
fn map_keyring(e: keyring::Error) -> KeyError {
    match e {
        keyring::Error::NoStorageAccess(inner) => KeyError::KeychainLocked {
            detail: inner.to_string(),
        },
        keyring::Error::PlatformFailure(inner) => KeyError::KeychainUnavailable {
            detail: inner.to_string(),
        },
        // BadEncoding carries the stored bytes: never put them in a message.
        keyring::Error::BadEncoding(_) => KeyError::KeychainFailed {
            detail: "the keychain item is not valid text".into(),
        },
        other => KeyError::KeychainFailed {
            detail: other.to_string(),
        },
    }
}

impl KeyStore for OsKeyStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, KeyError> {
        match self.entry(account)?.get_password() {
            Ok(value) => Ok(Some(Secret::new(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_keyring(e)),
        }
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), KeyError> {
        self.entry(account)?
            .set_password(secret.expose())
            .map_err(map_keyring)
    }

    fn delete(&self, account: &str) -> Result<(), KeyError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(map_keyring(e)),
        }
    }

    fn backend(&self) -> &'static str {
        if cfg!(target_os = "macos") {
            "macos-keychain"
        } else if cfg!(target_os = "windows") {
            "windows-credential-manager"
        } else {
            "secret-service"
        }
    }
}

/// An in-memory store, **for tests only** (unit tests and integration-test fixtures). It forgets
/// everything when dropped. It can also be told to fail, to test the "keychain unavailable" paths.
#[derive(Debug, Default)]
pub struct MemoryKeyStore {
    items: Mutex<HashMap<String, String>>,
    unavailable: bool,
}

impl MemoryKeyStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store that answers every call with [`KeyError::KeychainUnavailable`].
    pub fn unavailable() -> Self {
        MemoryKeyStore {
            unavailable: true,
            ..Self::default()
        }
    }

    /// The account names currently stored (never the values).
    pub fn accounts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().keys().cloned().collect();
        v.sort();
        v
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check(&self) -> Result<(), KeyError> {
        if self.unavailable {
            Err(KeyError::KeychainUnavailable {
                detail: "test store set to unavailable".into(),
            })
        } else {
            Ok(())
        }
    }
}

impl KeyStore for MemoryKeyStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, KeyError> {
        self.check()?;
        Ok(self.lock().get(account).map(|v| Secret::new(v.as_str())))
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), KeyError> {
        self.check()?;
        self.lock()
            .insert(account.to_string(), secret.expose().to_string());
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<(), KeyError> {
        self.check()?;
        self.lock().remove(account);
        Ok(())
    }

    fn backend(&self) -> &'static str {
        "memory"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Coded;

    #[test]
    fn memory_store_round_trip_and_idempotent_delete() {
        let s = MemoryKeyStore::new();
        assert!(s.get("a").expect("get").is_none());
        s.set("a", &Secret::new("v1")).expect("set");
        s.set("a", &Secret::new("v2")).expect("replace");
        assert_eq!(s.get("a").expect("get").expect("some").expose(), "v2");
        assert_eq!(s.accounts(), vec!["a".to_string()]);
        s.delete("a").expect("delete");
        s.delete("a").expect("delete again");
        assert!(s.get("a").expect("get").is_none());
    }

    #[test]
    fn unavailable_store_reports_a_coded_error() {
        let s = MemoryKeyStore::unavailable();
        let e = s.set("a", &Secret::new("v")).expect_err("unavailable");
        assert_eq!(e.code(), "keychain_unavailable");
    }

    #[test]
    fn keyring_errors_map_to_actionable_codes_without_values() {
        let locked = map_keyring(keyring::Error::NoStorageAccess(Box::new(
            std::io::Error::other("locked"),
        )));
        assert_eq!(locked.code(), "keychain_locked");
        let bad = map_keyring(keyring::Error::BadEncoding(b"PRIVATE-BYTES".to_vec()));
        assert_eq!(bad.code(), "keychain_error");
        assert!(!format!("{bad} {bad:?}").contains("PRIVATE-BYTES"));
    }
}
