//! Key material with the `ssh-key` crate: generate, import (checking the passphrase first) and
//! decrypt for use. Private keys only ever leave this module inside a [`Secret`].

use ssh_key::rand_core::OsRng;
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey};

use crate::infra::secret::Secret;
use crate::keys::{KeyAlgorithm, KeyError};

/// Largest key file gpurent reads (OpenSSH private keys are a few KiB at most).
pub const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// A key ready to be stored: what goes into the keychain plus the public metadata.
#[derive(Debug)]
pub struct KeyMaterial {
    /// OpenSSH PEM (LF line ends), encrypted with the passphrase when `has_passphrase`.
    pub stored: Secret,
    pub algorithm: String,
    pub bits: Option<u32>,
    pub fingerprint: String,
    pub public_key: String,
    pub comment: String,
    pub has_passphrase: bool,
}

fn nonempty(p: Option<&Secret>) -> Option<&Secret> {
    p.filter(|p| !p.expose().is_empty())
}

fn generation(e: ssh_key::Error) -> KeyError {
    KeyError::Generation {
        detail: e.to_string(),
    }
}

/// Generate a new key. `passphrase` (when non-empty) encrypts the stored copy.
pub fn generate(
    algorithm: KeyAlgorithm,
    comment: &str,
    passphrase: Option<&Secret>,
) -> Result<KeyMaterial, KeyError> {
    let alg = match algorithm {
        KeyAlgorithm::Ed25519 => Algorithm::Ed25519,
        // ssh-key's default RSA size is 4096 bits; rsa-sha2-512 is what the key signs with.
        KeyAlgorithm::Rsa4096 => Algorithm::Rsa {
            hash: Some(HashAlg::Sha512),
        },
    };
    let mut key = PrivateKey::random(&mut OsRng, alg).map_err(generation)?;
    key.set_comment(comment);
    finish(key, nonempty(passphrase))
}

/// Describe `key` (plaintext) and produce the stored form, encrypting it when a passphrase is given.
fn finish(key: PrivateKey, passphrase: Option<&Secret>) -> Result<KeyMaterial, KeyError> {
    let public = key.public_key();
    let bits = public
        .key_data()
        .rsa()
        .and_then(|r| r.n.as_positive_bytes())
        .map(|n| (n.len() * 8) as u32);
    let public_line = public.to_openssh().map_err(generation)?;
    let stored_key = match passphrase {
        Some(p) => key.encrypt(&mut OsRng, p.expose()).map_err(generation)?,
        None => key.clone(),
    };
    let pem = stored_key.to_openssh(LineEnding::LF).map_err(generation)?;
    Ok(KeyMaterial {
        stored: Secret::new(pem.as_str()),
        algorithm: key.algorithm().as_str().to_string(),
        bits,
        fingerprint: public.fingerprint(HashAlg::Sha256).to_string(),
        public_key: public_line,
        comment: key.comment().to_string(),
        has_passphrase: passphrase.is_some(),
    })
}

/// Recognise what the user picked and explain formats gpurent cannot read.
fn find_openssh_block(text: &str) -> Result<&str, KeyError> {
    const BEGIN: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";
    const END: &str = "-----END OPENSSH PRIVATE KEY-----";
    if let Some(start) = text.find(BEGIN) {
        let rest = &text[start..];
        return match rest.find(END) {
            Some(end) => Ok(&rest[..end + END.len()]),
            None => Err(unsupported("the key is cut off (no END line)")),
        };
    }
    let reason = if text.contains("PuTTY-User-Key-File") {
        "a PuTTY key; in PuTTYgen use Conversions → Export OpenSSH key (force new file format)"
    } else if text.contains("-----BEGIN RSA PRIVATE KEY-----")
        || text.contains("-----BEGIN EC PRIVATE KEY-----")
        || text.contains("-----BEGIN DSA PRIVATE KEY-----")
        || text.contains("-----BEGIN PRIVATE KEY-----")
        || text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    {
        "an older PEM key; convert a copy with `ssh-keygen -p -f COPY` (it rewrites that file in the OpenSSH format)"
    } else if ["ssh-", "ecdsa-", "sk-"]
        .iter()
        .any(|p| text.trim_start().starts_with(p))
    {
        "this is a public key; pick the private key file (the one without .pub)"
    } else {
        "not an OpenSSH private key"
    };
    Err(unsupported(reason))
}

fn unsupported(reason: impl Into<String>) -> KeyError {
    KeyError::UnsupportedKeyFormat {
        reason: reason.into(),
    }
}

/// Decrypt an encrypted key; a failed integrity check means the passphrase is wrong.
fn decrypt(key: &PrivateKey, passphrase: Option<&Secret>) -> Result<PrivateKey, KeyError> {
    let p = nonempty(passphrase).ok_or(KeyError::PassphraseRequired { label: None })?;
    key.decrypt(p.expose()).map_err(|e| match e {
        ssh_key::Error::Crypto => KeyError::WrongPassphrase,
        other => unsupported(format!("the key could not be decrypted ({other})")),
    })
}

/// Read an OpenSSH private key (text of a key file). An encrypted key needs its passphrase, which
/// is checked here; it is then stored re-encrypted with the same passphrase.
pub fn import(text: &str, passphrase: Option<&Secret>) -> Result<KeyMaterial, KeyError> {
    let block = find_openssh_block(text)?;
    let key = PrivateKey::from_openssh(block)
        .map_err(|e| unsupported(format!("the key could not be read ({e})")))?;
    if matches!(
        key.algorithm(),
        Algorithm::SkEd25519 | Algorithm::SkEcdsaSha2NistP256
    ) {
        return Err(unsupported(
            "a security-key (FIDO) key needs its hardware token and cannot be kept in the keychain",
        ));
    }
    if key.is_encrypted() {
        let plain = decrypt(&key, passphrase)?;
        finish(plain, passphrase)
    } else {
        finish(key, None)
    }
}

/// The plaintext OpenSSH PEM of a stored key, decrypting with `passphrase` if it has one.
pub fn plaintext(stored: &Secret, passphrase: Option<&Secret>) -> Result<Secret, KeyError> {
    let key = PrivateKey::from_openssh(stored.expose())
        .map_err(|e| unsupported(format!("the keychain copy could not be read ({e})")))?;
    if !key.is_encrypted() {
        return Ok(Secret::new(stored.expose()));
    }
    let plain = decrypt(&key, passphrase)?;
    let pem = plain.to_openssh(LineEnding::LF).map_err(generation)?;
    Ok(Secret::new(pem.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Coded;

    fn body(pem: &str) -> String {
        pem.lines().filter(|l| !l.starts_with("-----")).collect()
    }

    #[test]
    fn ed25519_generate_describe_and_round_trip() {
        let m = generate(KeyAlgorithm::Ed25519, "gpurent-test", None).expect("gen");
        assert_eq!(m.algorithm, "ssh-ed25519");
        assert_eq!(m.bits, None);
        assert!(m.fingerprint.starts_with("SHA256:"), "{}", m.fingerprint);
        assert!(m.public_key.starts_with("ssh-ed25519 AAAA"));
        assert!(m.public_key.ends_with(" gpurent-test"));
        assert!(!m.has_passphrase);
        assert!(m
            .stored
            .expose()
            .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
        // Importing what we store gives the same key back.
        let again = import(m.stored.expose(), None).expect("import");
        assert_eq!(again.fingerprint, m.fingerprint);
        assert_eq!(
            plaintext(&m.stored, None).expect("plain").expose(),
            m.stored.expose()
        );
    }

    #[test]
    fn passphrase_protects_the_stored_copy_and_is_checked() {
        let pass = Secret::new("correct horse");
        let m = generate(KeyAlgorithm::Ed25519, "c", Some(&pass)).expect("gen");
        assert!(m.has_passphrase);
        let stored_key = PrivateKey::from_openssh(m.stored.expose()).expect("parse");
        assert!(stored_key.is_encrypted());
        let wrong = plaintext(&m.stored, Some(&Secret::new("nope"))).expect_err("wrong");
        assert_eq!(wrong.code(), "wrong_passphrase");
        let missing = plaintext(&m.stored, None).expect_err("missing");
        assert_eq!(missing.code(), "passphrase_required");
        let empty = plaintext(&m.stored, Some(&Secret::new(""))).expect_err("empty");
        assert_eq!(empty.code(), "passphrase_required");
        let plain = plaintext(&m.stored, Some(&pass)).expect("plain");
        let k = PrivateKey::from_openssh(plain.expose()).expect("parse plain");
        assert!(!k.is_encrypted());
        assert_eq!(k.fingerprint(HashAlg::Sha256).to_string(), m.fingerprint);
        // Import of the encrypted file: needs and checks the passphrase; stays encrypted.
        assert_eq!(
            import(m.stored.expose(), None).expect_err("no pass").code(),
            "passphrase_required"
        );
        assert_eq!(
            import(m.stored.expose(), Some(&Secret::new("bad")))
                .expect_err("bad")
                .code(),
            "wrong_passphrase"
        );
        let imp = import(m.stored.expose(), Some(&pass)).expect("import");
        assert!(imp.has_passphrase);
        assert_eq!(imp.fingerprint, m.fingerprint);
        assert_ne!(body(imp.stored.expose()), body(plain.expose()));
    }

    #[test]
    fn rsa_4096_is_generated_at_4096_bits() {
        let m = generate(KeyAlgorithm::Rsa4096, "r", None).expect("gen");
        assert_eq!(m.algorithm, "ssh-rsa");
        assert_eq!(m.bits, Some(4096));
        assert!(m.public_key.starts_with("ssh-rsa AAAA"));
    }

    #[test]
    fn unsupported_files_are_explained() {
        let m = generate(KeyAlgorithm::Ed25519, "c", None).expect("gen");
        let cases = [
            (m.public_key.clone(), "public key"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n".into(),
                "older PEM",
            ),
            ("PuTTY-User-Key-File-3: ssh-ed25519\n".into(), "PuTTY"),
            ("hello".into(), "not an OpenSSH"),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n".into(),
                "cut off",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----"
                    .into(),
                "could not be read",
            ),
        ];
        for (text, want) in cases {
            match import(&text, None) {
                Err(KeyError::UnsupportedKeyFormat { reason }) => {
                    assert!(reason.contains(want), "{want}: {reason}")
                }
                other => panic!("{want}: {other:?}"),
            }
        }
        // Surrounding text (e.g. a pasted file with a header) is tolerated.
        let padded = format!("# my key\n{}\ntrailing\n", m.stored.expose());
        assert_eq!(
            import(&padded, None).expect("padded").fingerprint,
            m.fingerprint
        );
    }
}
