//! A wrapper for secret strings (passwords, private keys, API tokens). Its `Debug` and `Display`
//! never show the value, it implements no `Serialize` (so it can never be written out by serde),
//! and the memory is overwritten on drop. It does implement `Deserialize`, so an IPC argument
//! (a passphrase typed in the UI) lands directly in a `Secret`.

use std::fmt;

pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The only way to read the value; keep the borrow short.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // Overwrite in place; `String` has no safe zeroing API, so take its bytes.
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        for b in bytes.iter_mut() {
            // volatile-free best effort: black_box keeps the writes from being optimised out
            *std::hint::black_box(b) = 0;
        }
        drop(std::hint::black_box(bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{s}"), "<redacted>");
        assert_eq!(s.expose(), "hunter2");
        assert!(!format!("{s:?}{s}").contains("hunter2"));
    }

    #[test]
    fn deserializes_from_a_plain_string() {
        let s: Secret = serde_json::from_str("\"pass phrase\"").expect("json");
        assert_eq!(s.expose(), "pass phrase");
    }
}
