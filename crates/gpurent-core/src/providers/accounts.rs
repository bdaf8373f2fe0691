//! Connected provider accounts. The API key lives only in the OS keychain (through
//! [`KeyStore`], under `provider-<kind>-<name>`); SQLite keeps the name, the provider and when it
//! was added and last checked — never the key. `GPURENT_<X>_API_KEY` in the environment is used
//! instead of the keychain (scripts, CI) and is never written anywhere; with no stored account it
//! appears as an account named after the provider.

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{ProviderError, ProviderKind};
use crate::infra::secret::Secret;
use crate::keys::KeyStore;

/// Where an account's key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Keychain,
    Environment,
}

/// A connected account (never its key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Account {
    /// gpurent's name for it (`runpod` unless the user chose another).
    pub name: String,
    pub provider: ProviderKind,
    pub key_source: KeySource,
    /// What the provider calls the account (email), when its check said.
    pub account_label: Option<String>,
    pub added_ms: Option<i64>,
    pub checked_ms: Option<i64>,
}

/// The environment variable that carries a provider's key.
pub fn env_var(kind: ProviderKind) -> String {
    format!("GPURENT_{}_API_KEY", kind.env_stem())
}

/// The key from the environment, if set.
pub fn env_key(kind: ProviderKind) -> Option<Secret> {
    std::env::var(env_var(kind))
        .ok()
        .filter(|s| !s.trim().is_empty())
        .map(|s| Secret::new(s.trim().to_string()))
}

fn keychain_account(kind: ProviderKind, name: &str) -> String {
    format!("provider-{}-{}", kind.as_str(), name)
}

/// Account names: letters, digits, `-`, `_`, `.`; 1–40 characters.
pub fn check_name(name: &str) -> Result<(), ProviderError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Core(crate::CoreError::invalid(
            "name",
            "use 1-40 letters, digits, '-', '_' or '.'",
        )))
    }
}

fn stored(conn: &Connection) -> Result<Vec<Account>, ProviderError> {
    let mut st = conn.prepare(
        "SELECT name, provider, account_label, added_ms, checked_ms FROM provider_accounts ORDER BY provider, name",
    )?;
    let rows = st
        .query_map([], |r| {
            let p: String = r.get(1)?;
            Ok((r.get::<_, String>(0)?, p, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<Result<Vec<(String, String, Option<String>, i64, Option<i64>)>, _>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(name, p, label, added, checked)| {
            let provider = ProviderKind::parse(&p)?;
            Some(Account {
                key_source: if env_key(provider).is_some() {
                    KeySource::Environment
                } else {
                    KeySource::Keychain
                },
                name,
                provider,
                account_label: label,
                added_ms: Some(added),
                checked_ms: checked,
            })
        })
        .collect())
}

/// Every account: the stored ones, plus one per provider whose key is in the environment and
/// that has no stored account.
pub fn list(conn: &Connection) -> Result<Vec<Account>, ProviderError> {
    let mut out = stored(conn)?;
    for kind in ProviderKind::ALL {
        if env_key(kind).is_some() && !out.iter().any(|a| a.provider == kind) {
            out.push(Account {
                name: kind.as_str().to_string(),
                provider: kind,
                key_source: KeySource::Environment,
                account_label: None,
                added_ms: None,
                checked_ms: None,
            });
        }
    }
    out.sort_by(|a, b| (a.provider, &a.name).cmp(&(b.provider, &b.name)));
    Ok(out)
}

/// The account called `name`.
pub fn get(conn: &Connection, name: &str) -> Result<Account, ProviderError> {
    list(conn)?
        .into_iter()
        .find(|a| a.name == name)
        .ok_or_else(|| ProviderError::UnknownAccount(name.to_string()))
}

/// The one account of a provider (the first by name when there are several).
pub fn for_provider(conn: &Connection, kind: ProviderKind) -> Result<Account, ProviderError> {
    list(conn)?
        .into_iter()
        .find(|a| a.provider == kind)
        .ok_or(ProviderError::NotConnected { provider: kind })
}

/// Save a key in the keychain and the account row (the key never touches SQLite).
pub fn add(
    conn: &Connection,
    keystore: &dyn KeyStore,
    kind: ProviderKind,
    name: &str,
    key: &Secret,
    now_ms: i64,
) -> Result<Account, ProviderError> {
    check_name(name)?;
    let exists: Option<String> = conn
        .query_row(
            "SELECT name FROM provider_accounts WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?;
    if exists.is_some() {
        return Err(ProviderError::AccountExists(name.to_string()));
    }
    keystore.set(&keychain_account(kind, name), key)?;
    conn.execute(
        "INSERT INTO provider_accounts (name, provider, keychain_account, added_ms) VALUES (?1, ?2, ?3, ?4)",
        params![name, kind.as_str(), keychain_account(kind, name), now_ms],
    )?;
    get(conn, name)
}

/// Note a successful check (and what the provider calls the account).
pub fn checked(
    conn: &Connection,
    name: &str,
    label: Option<&str>,
    now_ms: i64,
) -> Result<(), ProviderError> {
    conn.execute(
        "UPDATE provider_accounts SET checked_ms = ?2, account_label = COALESCE(?3, account_label) WHERE name = ?1",
        params![name, now_ms, label],
    )?;
    Ok(())
}

/// Remove the key from the keychain and the row. The ledger keeps its rows (history).
pub fn remove(conn: &Connection, keystore: &dyn KeyStore, name: &str) -> Result<(), ProviderError> {
    let row: Option<(String, String)> = conn
        .query_row(
            "SELECT provider, keychain_account FROM provider_accounts WHERE name = ?1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((_, keychain)) = row else {
        return Err(ProviderError::UnknownAccount(name.to_string()));
    };
    keystore.delete(&keychain)?;
    conn.execute("DELETE FROM provider_accounts WHERE name = ?1", [name])?;
    Ok(())
}

/// The API key of an account: the environment's when set, else the keychain's.
pub fn api_key(
    conn: &Connection,
    keystore: &dyn KeyStore,
    account: &Account,
) -> Result<Secret, ProviderError> {
    if let Some(k) = env_key(account.provider) {
        return Ok(k);
    }
    let keychain: Option<String> = conn
        .query_row(
            "SELECT keychain_account FROM provider_accounts WHERE name = ?1",
            [&account.name],
            |r| r.get(0),
        )
        .optional()?;
    let keychain = keychain.ok_or_else(|| ProviderError::UnknownAccount(account.name.clone()))?;
    keystore.get(&keychain)?.ok_or(ProviderError::Key(
        crate::keys::KeyError::MissingFromKeychain {
            label: account.name.clone(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::store::Store;
    use crate::keys::MemoryKeyStore;

    #[test]
    fn keys_go_to_the_keychain_never_the_database() {
        let s = Store::open_in_memory().expect("db");
        let ks = MemoryKeyStore::default();
        let a = add(
            s.conn(),
            &ks,
            ProviderKind::Vast,
            "vast",
            &Secret::new("vk-SECRET-123"),
            5,
        )
        .expect("add");
        assert_eq!(a.provider, ProviderKind::Vast);
        assert!(matches!(
            add(
                s.conn(),
                &ks,
                ProviderKind::Vast,
                "vast",
                &Secret::new("x"),
                6
            ),
            Err(ProviderError::AccountExists(_))
        ));
        // Nothing in any table holds the key.
        let dump: String = s
            .conn()
            .query_row("SELECT group_concat(name || provider || keychain_account || added_ms) FROM provider_accounts", [], |r| r.get(0))
            .expect("dump");
        assert!(!dump.contains("SECRET"), "{dump}");
        if env_key(ProviderKind::Vast).is_none() {
            assert_eq!(
                api_key(s.conn(), &ks, &a).expect("key").expose(),
                "vk-SECRET-123"
            );
        }
        remove(s.conn(), &ks, "vast").expect("remove");
        assert!(ks.get("provider-vast-vast").expect("get").is_none());
        assert!(matches!(
            remove(s.conn(), &ks, "vast"),
            Err(ProviderError::UnknownAccount(_))
        ));
        assert!(check_name("bad name").is_err());
    }
}
