//! [`App`] methods for SSH keys (private halves only in the keychain, see [`crate::keys`]) and for
//! reading pasted SSH commands ([`crate::hostparse`]).

use std::io::Read;
use std::path::Path;

use ssh_key::rand_core::{OsRng, RngCore};

use crate::app::App;
use crate::infra::secret::Secret;
use crate::keys::db::{self, KeyRow};
use crate::keys::material::{self, KeyMaterial, MAX_KEY_FILE_BYTES};
use crate::keys::{validate_label, KeyAlgorithm, KeyError, KeyInfo, KeyOrigin, KeyStore};

/// A fresh keychain account name: the label for people browsing their keychain, plus a random part
/// so two gpurent data dirs (a test run, a portable install) never overwrite each other's items.
/// Create `path` (never replacing a file) readable by its owner only, and write `text`.
fn write_private_file(path: &Path, text: &str) -> Result<(), KeyError> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let io = |e: std::io::Error| KeyError::Core(crate::CoreError::io(path, e));
    let mut f = opts.open(path).map_err(io)?;
    // Windows has no mode bits: the ACL is cut down to the user before the key is written
    // (Windows' OpenSSH refuses key files others can read). On Unix the mode above did it.
    #[cfg(not(unix))]
    crate::infra::fsperm::owner_only(path, crate::infra::fsperm::Kind::File).map_err(|e| {
        let _ = std::fs::remove_file(path);
        io(e)
    })?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)
}

fn new_account(label: &str) -> String {
    format!(
        "ssh-key/{label}/{:016x}{:016x}",
        OsRng.next_u64(),
        OsRng.next_u64()
    )
}

impl App {
    /// Use another key store (tests; the app itself always uses the OS keychain).
    pub fn with_keystore(mut self, keystore: Box<dyn KeyStore>) -> App {
        self.keystore = keystore;
        self
    }

    /// The key store, for other domains that keep secrets (e.g. a host's password until the key
    /// is installed). Account names must not start with `ssh-key/`.
    pub fn keystore(&self) -> &dyn KeyStore {
        self.keystore.as_ref()
    }

    /// All keys, oldest first.
    pub fn key_list(&self) -> Result<Vec<KeyInfo>, KeyError> {
        self.with_keys(|s| Ok(db::list(s)?.into_iter().map(|r| r.info).collect()))
    }

    /// One key's metadata.
    pub fn key_get(&self, label: &str) -> Result<KeyInfo, KeyError> {
        Ok(self.row(label)?.info)
    }

    /// Generate a key; its private half goes only into the keychain (encrypted with `passphrase`
    /// when one is given and non-empty).
    pub fn key_new(
        &self,
        label: &str,
        algorithm: KeyAlgorithm,
        passphrase: Option<&Secret>,
    ) -> Result<KeyInfo, KeyError> {
        validate_label(label)?;
        self.ensure_free(label)?;
        let m = material::generate(algorithm, &format!("gpurent-{label}"), passphrase)?;
        self.save(label, m, KeyOrigin::Generated)
    }

    /// Import an existing OpenSSH private key file (a leading `~` is the home folder). The file
    /// is only read, never changed. An
    /// encrypted key needs its passphrase, which is checked first (wrong → `WrongPassphrase`);
    /// the keychain copy stays encrypted with it.
    pub fn key_import(
        &self,
        label: &str,
        path: &Path,
        passphrase: Option<&Secret>,
    ) -> Result<KeyInfo, KeyError> {
        validate_label(label)?;
        self.ensure_free(label)?;
        let text = read_key_file(&crate::infra::paths::expand_user(path))?;
        let m = material::import(text.expose(), passphrase)?;
        if let Some(existing) = self.with_keys(|s| db::by_fingerprint(s, &m.fingerprint))? {
            return Err(KeyError::AlreadyImported {
                label: existing.info.label,
            });
        }
        self.save(label, m, KeyOrigin::Imported)
    }

    /// The exact `authorized_keys` line of a key.
    pub fn key_export_pub(&self, label: &str) -> Result<String, KeyError> {
        Ok(self.row(label)?.info.public_key)
    }

    /// Delete a key from the keychain and from gpurent; returns the keys left. If the keychain
    /// cannot be reached, nothing is deleted.
    pub fn key_delete(&self, label: &str) -> Result<Vec<KeyInfo>, KeyError> {
        let row = self.row(label)?;
        self.keystore.delete(&row.keychain_account)?;
        self.unlocked.forget(&row.keychain_account);
        self.with_keys(|s| db::delete(s, label))?;
        tracing::info!(label, fingerprint = %row.info.fingerprint, "key deleted");
        self.key_list()
    }

    /// The plaintext OpenSSH PEM of a key, for the SSH layer (libssh2 reads it from memory).
    /// Keys with a passphrase need it here, unless [`App::key_unlock`] unlocked the key in this
    /// session (`PassphraseRequired { label }` / `WrongPassphrase` otherwise).
    pub fn load_private(
        &self,
        label: &str,
        passphrase: Option<&Secret>,
    ) -> Result<Secret, KeyError> {
        let row = self.row(label)?;
        let given = passphrase.filter(|p| !p.expose().is_empty());
        if given.is_none() {
            if let Some(pem) = self.unlocked.get(&row.keychain_account) {
                return Ok(pem);
            }
        }
        let stored = self.stored(&row)?;
        material::plaintext(&stored, given).map_err(|e| match e {
            KeyError::PassphraseRequired { .. } => KeyError::PassphraseRequired {
                label: Some(label.to_string()),
            },
            other => other,
        })
    }

    /// Unlock a key for this app session: the passphrase is checked (`WrongPassphrase`) and the
    /// decrypted key is held in memory only, so every later step (add host, check, Setup,
    /// transfers, terminal) uses it without asking again. A key without a passphrase needs no
    /// unlocking (nothing is held). Returns the key.
    pub fn key_unlock(&self, label: &str, passphrase: &Secret) -> Result<KeyInfo, KeyError> {
        let row = self.row(label)?;
        if row.info.has_passphrase {
            let stored = self.stored(&row)?;
            let pem =
                material::plaintext(&stored, Some(passphrase).filter(|p| !p.expose().is_empty()))
                    .map_err(|e| match e {
                    KeyError::PassphraseRequired { .. } => KeyError::PassphraseRequired {
                        label: Some(label.to_string()),
                    },
                    other => other,
                })?;
            self.unlocked.put(&row.keychain_account, pem);
            tracing::info!(label, "key unlocked for this session");
        }
        Ok(row.info)
    }

    /// Forget unlocked keys (`None`: all of them); how many were forgotten. The next use of a
    /// protected key asks for its passphrase again.
    pub fn key_lock(&self, label: Option<&str>) -> Result<usize, KeyError> {
        match label {
            Some(l) => Ok(usize::from(
                self.unlocked.forget(&self.row(l)?.keychain_account),
            )),
            None => Ok(self.unlocked.clear()),
        }
    }

    /// Whether a key can be used now without asking for a passphrase.
    pub fn key_ready(&self, label: &str) -> Result<bool, KeyError> {
        let row = self.row(label)?;
        Ok(!row.info.has_passphrase || self.unlocked.contains(&row.keychain_account))
    }

    fn stored(&self, row: &KeyRow) -> Result<Secret, KeyError> {
        self.keystore
            .get(&row.keychain_account)?
            .ok_or_else(|| KeyError::MissingFromKeychain {
                label: row.info.label.clone(),
            })
    }

    /// Read what a rental console printed (an `ssh`/`scp` command, `ssh://` URL, or labelled
    /// fields, in Chinese or English) into host, port, user, jump host and password.
    /// The explicit, warned escape hatch for machines without an ssh-agent: write the private key
    /// exactly as the keychain holds it (still encrypted when it has a passphrase) to a NEW file
    /// with mode 0600. Refused unless the caller passes `acknowledged_risk` (the UI and CLI ask
    /// first), and never over an existing file. Returns the path written.
    pub fn key_export_private(
        &self,
        label: &str,
        path: &Path,
        acknowledged_risk: bool,
    ) -> Result<std::path::PathBuf, KeyError> {
        if !acknowledged_risk {
            return Err(KeyError::InvalidInput {
                field: "acknowledged_risk".into(),
                reason: "a private key on disk can be copied by anything that reads your files; confirm you want it".into(),
            });
        }
        let row = self.row(label)?;
        let stored = self.keystore.get(&row.keychain_account)?.ok_or_else(|| {
            KeyError::MissingFromKeychain {
                label: label.to_string(),
            }
        })?;
        let path = crate::infra::paths::expand_user(path);
        write_private_file(&path, stored.expose())?;
        tracing::warn!(
            label,
            "private key exported to a file at the user's request"
        );
        Ok(path)
    }

    fn with_keys<T>(
        &self,
        f: impl FnOnce(&crate::infra::store::Store) -> Result<T, KeyError>,
    ) -> Result<T, KeyError> {
        self.with_store(|s| Ok(f(s)))?
    }

    fn row(&self, label: &str) -> Result<KeyRow, KeyError> {
        self.with_keys(|s| db::get(s, label))?
            .ok_or_else(|| KeyError::UnknownKey {
                label: label.to_string(),
            })
    }

    fn ensure_free(&self, label: &str) -> Result<(), KeyError> {
        match self.with_keys(|s| db::get(s, label))? {
            Some(_) => Err(KeyError::KeyExists {
                label: label.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Keychain first, then the row; a failed insert takes the keychain item back out.
    fn save(&self, label: &str, m: KeyMaterial, origin: KeyOrigin) -> Result<KeyInfo, KeyError> {
        let account = new_account(label);
        self.keystore.set(&account, &m.stored)?;
        let row = KeyRow {
            info: KeyInfo {
                label: label.to_string(),
                algorithm: m.algorithm,
                bits: m.bits,
                fingerprint: m.fingerprint,
                public_key: m.public_key,
                comment: m.comment,
                has_passphrase: m.has_passphrase,
                origin,
                created_ms: self.now_ms(),
            },
            keychain_account: account,
        };
        if let Err(e) = self.with_keys(|s| db::insert(s, &row)) {
            if let Err(cleanup) = self.keystore.delete(&row.keychain_account) {
                tracing::warn!(
                    code = crate::Coded::code(&cleanup),
                    "keychain cleanup failed"
                );
            }
            return Err(e);
        }
        tracing::info!(label, fingerprint = %row.info.fingerprint, origin = origin.as_str(), "key saved");
        Ok(row.info)
    }
}

/// Read a key file (bounded) straight into a [`Secret`].
fn read_key_file(path: &Path) -> Result<Secret, KeyError> {
    let unreadable = |source| KeyError::KeyFileUnreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(KeyError::UnsupportedKeyFormat {
            reason: "the file is too large to be a private key".into(),
        });
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Secret::new(text)),
        Err(e) => {
            let mut raw = e.into_bytes();
            raw.fill(0);
            Err(KeyError::UnsupportedKeyFormat {
                reason: "not a text key file (binary keys such as .ppk v1 or DER are not read)"
                    .into(),
            })
        }
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
