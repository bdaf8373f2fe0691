//! The keys the user unlocked in this app session: a key protected by a passphrase is asked for
//! once (the desktop prompts on `passphrase_required`, then calls `key_unlock`), and its
//! decrypted PEM is kept here, in memory only, as a [`Secret`] — never written anywhere, wiped
//! (zeroed) on `key_lock`, when the key is deleted, and when the [`crate::app::App`] is dropped.
//!
//! Entries are keyed by the key's keychain account (unique per saved key), so a deleted key
//! re-created under the same label never finds the old one's entry.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::infra::secret::Secret;

#[derive(Default)]
pub struct Unlocked(Mutex<HashMap<String, Secret>>);

impl std::fmt::Debug for Unlocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Unlocked({} keys)", self.len())
    }
}

impl Unlocked {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Secret>> {
        // The map stays consistent even if a holder panicked (each call is one insert/remove).
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of the decrypted PEM for `account`, if it was unlocked.
    pub fn get(&self, account: &str) -> Option<Secret> {
        self.map()
            .get(account)
            .map(|s| Secret::new(s.expose().to_string()))
    }

    pub fn put(&self, account: &str, pem: Secret) {
        self.map().insert(account.to_string(), pem);
    }

    /// Forget one key; whether it was unlocked.
    pub fn forget(&self, account: &str) -> bool {
        self.map().remove(account).is_some()
    }

    /// Forget every key; how many were unlocked.
    pub fn clear(&self) -> usize {
        let mut m = self.map();
        let n = m.len();
        m.clear();
        n
    }

    pub fn contains(&self, account: &str) -> bool {
        self.map().contains_key(account)
    }

    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_copies_and_forgets() {
        let u = Unlocked::default();
        u.put("a", Secret::new("PEM-A"));
        u.put("b", Secret::new("PEM-B"));
        assert_eq!(
            u.get("a").map(|s| s.expose().to_string()).as_deref(),
            Some("PEM-A")
        );
        assert!(!format!("{u:?}").contains("PEM"));
        assert!(u.forget("a"));
        assert!(u.get("a").is_none());
        assert_eq!(u.clear(), 1);
        assert!(u.is_empty());
    }
}
