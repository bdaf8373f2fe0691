//! Folders as one tar stream over an exec channel instead of one request per file: up, `tar -x`
//! into a temporary folder on the host; down, `tar -c` read into a temporary folder here. Every
//! file is then hashed on both ends in one batch; on resume (or after a mismatch) only the files
//! whose hashes differ go again. The folder is renamed into place when all match.

//!
//! [`up`] sends a folder, [`down`] fetches one; both share the hash map of relative paths and the
//! wire buffer below.

pub mod down;
pub mod up;

use std::collections::HashMap;
use std::path::Path;

pub use down::download;
pub use up::upload;

pub(super) type Hashes = HashMap<Vec<u8>, String>;

/// Buffer between the tar stream and the channel, both ways.
pub(super) const WIRE_BUF: usize = 1 << 20;

/// A relative path as the `/`-joined bytes the host uses for the same file (the hash maps' key).
pub(super) fn rel_bytes(p: &Path) -> Vec<u8> {
    crate::transfer::portable::rel_bytes(p)
}
