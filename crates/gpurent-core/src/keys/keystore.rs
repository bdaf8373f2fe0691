//! Where private keys (and later host passwords) live: a small [`KeyStore`] trait over the OS
//! keychain. The app always uses [`OsKeyStore`] (Secret Service on Linux, Keychain on macOS,
//! Credential Manager on Windows); [`MemoryKeyStore`] exists for tests only and is never selected
//! by the app itself.
//!
//! **Size limits.** Windows' Credential Manager holds at most 2560 bytes per secret, which
//! `keyring` fills with UTF-16: 1280 code units. An ed25519 private key (~400 characters) fits,
//! an RSA-4096 one (~3.4 k characters) does not. [`Chunked`] therefore stores a value that is
//! too long as numbered entries (`<account>#1`, `<account>#2`, …) behind a small header under
//! the account itself; [`OsKeyStore`] uses it with the Windows limit on Windows (and no limit
//! elsewhere, where values are stored whole). [`MemoryKeyStore::with_limit`] enforces the same
//! limit so this is tested on every OS.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::infra::secret::Secret;
use crate::keys::KeyError;

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

/// The most UTF-16 code units one Windows Credential Manager entry holds
/// (`CRED_MAX_CREDENTIAL_BLOB_SIZE` = 2560 bytes; `keyring` stores passwords as UTF-16).
pub const WINDOWS_CREDENTIAL_UTF16_UNITS: usize = 2560 / 2;

/// The per-entry limit of the OS keychain on this OS, in UTF-16 code units (`None`: no limit
/// that a key or password can reach).
pub const fn os_entry_limit() -> Option<usize> {
    if cfg!(windows) {
        Some(WINDOWS_CREDENTIAL_UTF16_UNITS)
    } else {
        None
    }
}

/// The operating system's keychain through the `keyring` crate (v3), with values longer than
/// the OS allows per entry split by [`Chunked`].
#[derive(Debug, Clone)]
pub struct OsKeyStore {
    inner: Chunked<OsEntries>,
}

impl OsKeyStore {
    /// Items filed under `service` (the app uses [`KEYCHAIN_SERVICE`]).
    pub fn new(service: impl Into<String>) -> Self {
        OsKeyStore {
            inner: Chunked::new(
                OsEntries {
                    service: service.into(),
                },
                os_entry_limit(),
            ),
        }
    }
}

/// One keychain entry per account, as `keyring` stores it.
#[derive(Debug, Clone)]
struct OsEntries {
    service: String,
}

impl OsEntries {
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
        // TooLong names the limit, never the value; `Chunked` keeps values under it.
        keyring::Error::TooLong(what, limit) => KeyError::KeychainFailed {
            detail: format!("the keychain refused a {what} longer than {limit}"),
        },
        other => KeyError::KeychainFailed {
            detail: other.to_string(),
        },
    }
}

impl KeyStore for OsEntries {
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
        os_backend()
    }
}

impl KeyStore for OsKeyStore {
    fn get(&self, account: &str) -> Result<Option<Secret>, KeyError> {
        self.inner.get(account)
    }
    fn set(&self, account: &str, secret: &Secret) -> Result<(), KeyError> {
        self.inner.set(account, secret)
    }
    fn delete(&self, account: &str) -> Result<(), KeyError> {
        self.inner.delete(account)
    }
    fn backend(&self) -> &'static str {
        os_backend()
    }
}

fn os_backend() -> &'static str {
    if cfg!(target_os = "macos") {
        "macos-keychain"
    } else if cfg!(target_os = "windows") {
        "windows-credential-manager"
    } else {
        "secret-service"
    }
}

/// The header stored under the account itself when a value is split: a NUL (no typed password
/// or PEM key starts with one), a tag and the number of parts.
const CHUNK_HEADER: &str = "\u{0}gpurent-chunked-v1:";

/// A store that splits values longer than `limit` UTF-16 code units into numbered entries
/// `<account>#1..=N` (each within the limit, cut at character boundaries) and keeps
/// `CHUNK_HEADER + N` under `<account>`. Parts are written before the header, so a header
/// always points at complete parts; a shorter value written later removes the old parts.
#[derive(Debug, Clone)]
pub struct Chunked<S> {
    inner: S,
    limit: Option<usize>,
}

impl<S: KeyStore> Chunked<S> {
    /// `limit`: UTF-16 code units per entry of `inner`; `None` stores every value whole.
    pub fn new(inner: S, limit: Option<usize>) -> Self {
        Chunked { inner, limit }
    }

    fn part(account: &str, i: usize) -> String {
        format!("{account}#{i}")
    }

    /// The number of parts `account` is split into (0 when stored whole or missing).
    fn parts_of(&self, account: &str) -> Result<usize, KeyError> {
        Ok(self
            .inner
            .get(account)?
            .and_then(|v| parse_header(v.expose()))
            .unwrap_or(0))
    }
}

fn parse_header(v: &str) -> Option<usize> {
    v.strip_prefix(CHUNK_HEADER)?.parse().ok()
}

/// Cut `text` into pieces of at most `limit` UTF-16 code units, never inside a character.
fn split_utf16(text: &str, limit: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut units) = (0, 0);
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > limit {
            out.push(&text[start..i]);
            (start, units) = (i, 0);
        }
        units += c.len_utf16();
    }
    out.push(&text[start..]);
    out
}

impl<S: KeyStore> KeyStore for Chunked<S> {
    fn get(&self, account: &str) -> Result<Option<Secret>, KeyError> {
        let Some(head) = self.inner.get(account)? else {
            return Ok(None);
        };
        let Some(n) = parse_header(head.expose()) else {
            return Ok(Some(head));
        };
        let mut whole = String::new();
        for i in 1..=n {
            match self.inner.get(&Self::part(account, i))? {
                Some(p) => whole.push_str(p.expose()),
                None => {
                    drop(Secret::new(whole));
                    return Err(KeyError::KeychainFailed {
                        detail: format!("part {i} of {n} of a split keychain item is missing"),
                    });
                }
            }
        }
        Ok(Some(Secret::new(whole)))
    }

    fn set(&self, account: &str, secret: &Secret) -> Result<(), KeyError> {
        let old = self.parts_of(account)?;
        let value = secret.expose();
        let fits = self.limit.is_none_or(|l| value.encode_utf16().count() <= l);
        let new = if fits {
            self.inner.set(account, secret)?;
            0
        } else {
            // A header is ~25 units; any real limit is far above that.
            let limit = self.limit.unwrap_or(usize::MAX).max(CHUNK_HEADER.len() + 8);
            let parts = split_utf16(value, limit);
            for (i, p) in parts.iter().enumerate() {
                self.inner
                    .set(&Self::part(account, i + 1), &Secret::new(*p))?;
            }
            let header = Secret::new(format!("{CHUNK_HEADER}{}", parts.len()));
            self.inner.set(account, &header)?;
            parts.len()
        };
        for i in new + 1..=old {
            self.inner.delete(&Self::part(account, i))?;
        }
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<(), KeyError> {
        let n = self.parts_of(account)?;
        self.inner.delete(account)?;
        for i in 1..=n {
            self.inner.delete(&Self::part(account, i))?;
        }
        Ok(())
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}

/// An in-memory store, **for tests only** (unit tests and integration-test fixtures). It forgets
/// everything when dropped. It can also be told to fail, to test the "keychain unavailable" paths.
#[derive(Debug, Default)]
pub struct MemoryKeyStore {
    items: Mutex<HashMap<String, String>>,
    unavailable: bool,
    /// Refuse values longer than this many UTF-16 code units, like Windows' Credential Manager.
    limit: Option<usize>,
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

    /// A store that refuses values longer than `units` UTF-16 code units, as Windows' Credential
    /// Manager does (`keyring`'s `TooLong`, mapped the same way).
    pub fn with_limit(units: usize) -> Self {
        MemoryKeyStore {
            limit: Some(units),
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
        if let Some(l) = self.limit {
            if secret.expose().encode_utf16().count() > l {
                return Err(map_keyring(keyring::Error::TooLong(
                    "password".into(),
                    l as u32,
                )));
            }
        }
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

    /// An RSA-4096 private key in OpenSSH format: ~3.4 k characters, over the Windows limit.
    /// (Generated the way the app does; a stand-in would do for the store, this shows the size.)
    fn rsa4096_pem() -> String {
        let m = crate::keys::material::generate(crate::keys::KeyAlgorithm::Rsa4096, "r", None)
            .expect("rsa-4096");
        m.stored.expose().to_string()
    }

    #[test]
    fn keys_over_the_windows_credential_limit_are_split_and_reassembled() {
        let raw = std::sync::Arc::new(MemoryKeyStore::with_limit(WINDOWS_CREDENTIAL_UTF16_UNITS));
        let pem = rsa4096_pem();
        assert!(
            pem.len() > WINDOWS_CREDENTIAL_UTF16_UNITS,
            "{} chars",
            pem.len()
        );
        // Stored whole, the Credential Manager (and this store) refuse it.
        let e = raw
            .set("k", &Secret::new(pem.as_str()))
            .expect_err("too long");
        assert_eq!(e.code(), "keychain_error");
        assert!(!format!("{e:?}").contains("PRIVATE KEY"));

        let store = Chunked::new(raw.clone(), Some(WINDOWS_CREDENTIAL_UTF16_UNITS));
        store.set("k", &Secret::new(pem.as_str())).expect("split");
        assert_eq!(raw.accounts(), vec!["k", "k#1", "k#2", "k#3"]);
        assert_eq!(store.get("k").expect("get").expect("some").expose(), pem);

        // Replaced by a short value: stored whole, the old parts are gone.
        store.set("k", &Secret::new("short")).expect("short");
        assert_eq!(raw.accounts(), vec!["k"]);
        assert_eq!(
            store.get("k").expect("get").expect("some").expose(),
            "short"
        );

        store
            .set("k", &Secret::new(pem.as_str()))
            .expect("split again");
        store.delete("k").expect("delete");
        assert!(raw.accounts().is_empty());
        assert!(store.get("k").expect("get").is_none());
    }

    #[test]
    fn splits_count_utf16_units_and_never_cut_a_character() {
        let raw = std::sync::Arc::new(MemoryKeyStore::with_limit(40));
        let store = Chunked::new(raw.clone(), Some(40));
        // 'é' is 1 unit (2 UTF-8 bytes), '数' 1 unit (3 bytes), '🔑' 2 units (4 bytes).
        let text: String = "é数🔑-".repeat(30);
        store.set("p", &Secret::new(text.as_str())).expect("set");
        assert_eq!(store.get("p").expect("get").expect("some").expose(), text);
        for a in raw.accounts() {
            let v = raw.get(&a).expect("get").expect("some");
            assert!(v.expose().encode_utf16().count() <= 40, "{a}");
        }
        assert_eq!(split_utf16("ab🔑", 3), vec!["ab", "🔑"]);
        assert_eq!(split_utf16("", 3), vec![""]);
    }

    #[test]
    fn a_missing_part_is_an_error_not_a_truncated_key() {
        let raw = std::sync::Arc::new(MemoryKeyStore::new());
        let store = Chunked::new(raw.clone(), Some(40));
        store.set("k", &Secret::new("x".repeat(100))).expect("set");
        raw.delete("k#2").expect("drop a part");
        let e = store.get("k").expect_err("incomplete");
        assert_eq!(e.code(), "keychain_error");
        // Without a limit the value is stored whole.
        let whole = Chunked::new(MemoryKeyStore::new(), None);
        whole.set("k", &Secret::new("x".repeat(5000))).expect("set");
        assert_eq!(
            whole.get("k").expect("get").expect("some").expose().len(),
            5000
        );
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
