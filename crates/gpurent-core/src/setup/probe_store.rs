//! The raw probes kept per host under the data directory (`probes/<label>-<ms>.txt`, never
//! overwritten): what the setup wizard diagnoses again without SSH.

use std::path::{Path, PathBuf};

use crate::infra::error::CoreError;

/// The probe script's output has `@@gpurent@@` section markers.
pub fn is_probe_output(raw: &str) -> bool {
    raw.contains("@@gpurent@@ ")
}

/// `<label>-<ms>.txt`, or `<label>-<ms>.<n>.txt` when that name is taken (same millisecond).
fn probe_file_order(label: &str, name: &str) -> Option<(i64, u32)> {
    let rest = name
        .strip_prefix(label)?
        .strip_prefix('-')?
        .strip_suffix(".txt")?;
    let (ms, n) = match rest.split_once('.') {
        Some((ms, n)) => (ms, n.parse().ok()?),
        None => (rest, 0),
    };
    if ms.is_empty() || !ms.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((ms.parse().ok()?, n))
}

/// Keep a raw probe: `<dir>/<label>-<ms>.txt` (`.<n>.txt` when that name is taken).
pub fn save(dir: &Path, label: &str, raw: &str, ms: i64) -> Result<PathBuf, CoreError> {
    crate::infra::paths::write_new_file(dir, &format!("{label}-{ms}"), "txt", raw.as_bytes())?
        .ok_or_else(|| {
            CoreError::invalid(
                "probe",
                "no free file name under probes/ for this host: remove old probes there and check again",
            )
        })
}

/// The host's newest kept probe, if any.
pub fn latest(dir: &Path, label: &str) -> Result<Option<PathBuf>, CoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CoreError::io(dir, e)),
    };
    Ok(entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            probe_file_order(label, &name).map(|o| (o, e.path()))
        })
        .max_by_key(|(o, _)| *o)
        .map(|(_, p)| p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_file_names_belong_to_their_label_only() {
        assert_eq!(probe_file_order("box", "box-1700.txt"), Some((1700, 0)));
        assert_eq!(probe_file_order("box", "box-1700.2.txt"), Some((1700, 2)));
        assert_eq!(
            probe_file_order("box", "box-1-1700.txt"),
            None,
            "label box-1"
        );
        assert_eq!(probe_file_order("box", "box-.txt"), None);
        assert_eq!(probe_file_order("box-1", "box-1-1700.txt"), Some((1700, 0)));
    }
}
