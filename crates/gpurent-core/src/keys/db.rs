//! The `keys` table (migration 3): public metadata of each key and the keychain account that holds
//! its private half. Nothing secret is ever written here.

use rusqlite::{params, OptionalExtension, Row};

use crate::infra::store::Store;
use crate::keys::{KeyError, KeyInfo, KeyOrigin};

/// A row: what the UI sees plus where the private key is filed in the keychain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub info: KeyInfo,
    pub keychain_account: String,
}

const COLUMNS: &str = "label, algorithm, bits, fingerprint, public_key, comment, has_passphrase, \
                       origin, keychain_account, created_ms";

fn from_row(r: &Row<'_>) -> rusqlite::Result<KeyRow> {
    let origin: String = r.get(7)?;
    Ok(KeyRow {
        info: KeyInfo {
            label: r.get(0)?,
            algorithm: r.get(1)?,
            bits: r.get(2)?,
            fingerprint: r.get(3)?,
            public_key: r.get(4)?,
            comment: r.get(5)?,
            has_passphrase: r.get(6)?,
            origin: if origin == "generated" {
                KeyOrigin::Generated
            } else {
                KeyOrigin::Imported
            },
            created_ms: r.get(9)?,
        },
        keychain_account: r.get(8)?,
    })
}

pub fn list(store: &Store) -> Result<Vec<KeyRow>, KeyError> {
    let mut stmt = store.conn().prepare(&format!(
        "SELECT {COLUMNS} FROM keys ORDER BY created_ms, label"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

pub fn get(store: &Store, label: &str) -> Result<Option<KeyRow>, KeyError> {
    Ok(store
        .conn()
        .query_row(
            &format!("SELECT {COLUMNS} FROM keys WHERE label = ?1"),
            [label],
            from_row,
        )
        .optional()?)
}

pub fn by_fingerprint(store: &Store, fingerprint: &str) -> Result<Option<KeyRow>, KeyError> {
    Ok(store
        .conn()
        .query_row(
            &format!("SELECT {COLUMNS} FROM keys WHERE fingerprint = ?1"),
            [fingerprint],
            from_row,
        )
        .optional()?)
}

pub fn insert(store: &Store, row: &KeyRow) -> Result<(), KeyError> {
    let i = &row.info;
    store.conn().execute(
        &format!("INSERT INTO keys({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
        params![
            i.label,
            i.algorithm,
            i.bits,
            i.fingerprint,
            i.public_key,
            i.comment,
            i.has_passphrase,
            i.origin.as_str(),
            row.keychain_account,
            i.created_ms
        ],
    )?;
    Ok(())
}

pub fn delete(store: &Store, label: &str) -> Result<bool, KeyError> {
    Ok(store
        .conn()
        .execute("DELETE FROM keys WHERE label = ?1", [label])?
        > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, fp: &str, account: &str) -> KeyRow {
        KeyRow {
            info: KeyInfo {
                label: label.into(),
                algorithm: "ssh-ed25519".into(),
                bits: None,
                fingerprint: fp.into(),
                public_key: "ssh-ed25519 AAAA c".into(),
                comment: "c".into(),
                has_passphrase: true,
                origin: KeyOrigin::Imported,
                created_ms: 5,
            },
            keychain_account: account.into(),
        }
    }

    #[test]
    fn rows_round_trip_and_uniqueness_holds() {
        let s = Store::open_in_memory().expect("db");
        let a = row("a", "SHA256:x", "acct-a");
        insert(&s, &a).expect("insert");
        assert_eq!(get(&s, "a").expect("get"), Some(a.clone()));
        assert_eq!(by_fingerprint(&s, "SHA256:x").expect("fp"), Some(a.clone()));
        assert_eq!(list(&s).expect("list"), vec![a]);
        // Same fingerprint under another label is refused by the schema too.
        assert!(insert(&s, &row("b", "SHA256:x", "acct-b")).is_err());
        assert!(delete(&s, "a").expect("delete"));
        assert!(!delete(&s, "a").expect("delete again"));
        assert!(list(&s).expect("list").is_empty());
    }
}
