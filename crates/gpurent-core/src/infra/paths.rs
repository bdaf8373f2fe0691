//! The one place that decides where gpurent keeps files.
//!
//! Everything lives under four directories (config, data, logs, cache). By default they follow the
//! platform's conventions (XDG on Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on
//! Windows). Setting `GPURENT_HOME` (or the CLI's `--data-dir`) puts all four under one directory,
//! for tests and portable installs.

use std::path::{Path, PathBuf};

use crate::infra::error::CoreError;

/// Environment variable that redirects every gpurent directory under one root.
pub const HOME_ENV: &str = "GPURENT_HOME";

/// Where gpurent reads and writes. Cheap to clone; create once and pass around.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub config: PathBuf,
    pub data: PathBuf,
    pub logs: PathBuf,
    pub cache: PathBuf,
}

impl Paths {
    /// All four directories under one root: `<root>/config`, `<root>/data`, ...
    pub fn under(root: impl AsRef<Path>) -> Self {
        let root = root.as_ref();
        Paths {
            config: root.join("config"),
            data: root.join("data"),
            logs: root.join("logs"),
            cache: root.join("cache"),
        }
    }

    /// Resolve from an explicit override, then `GPURENT_HOME`, then the platform defaults.
    pub fn resolve(override_root: Option<&Path>) -> Result<Self, CoreError> {
        if let Some(root) = override_root {
            return Ok(Self::under(root));
        }
        match std::env::var_os(HOME_ENV) {
            Some(v) if !v.is_empty() => Ok(Self::under(PathBuf::from(v))),
            _ => Self::platform(),
        }
    }

    fn platform() -> Result<Self, CoreError> {
        let dirs = directories::ProjectDirs::from("app", "gpurent", "gpurent")
            .ok_or(CoreError::NoHomeDirectory)?;
        Ok(Paths {
            config: dirs.config_dir().to_path_buf(),
            data: dirs.data_dir().to_path_buf(),
            logs: dirs.data_local_dir().join("logs"),
            cache: dirs.cache_dir().to_path_buf(),
        })
    }

    /// Create all directories (idempotent).
    pub fn ensure(&self) -> Result<(), CoreError> {
        for dir in [&self.config, &self.data, &self.logs, &self.cache] {
            std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
        }
        Ok(())
    }

    /// The SQLite database file.
    pub fn database(&self) -> PathBuf {
        self.data.join("gpurent.sqlite3")
    }

    /// The user's settings file.
    /// Saved environment recipes (`gpurent release`: `<data>/recipes/<host>-<ms>.sh`).
    pub fn recipes(&self) -> PathBuf {
        self.data.join("recipes")
    }

    pub fn settings(&self) -> PathBuf {
        self.config.join("settings.json")
    }
}

/// Write `bytes` to a new file `<dir>/<stem>.<ext>`, or `<stem>.<n>.<ext>` when that name is
/// taken (never over an existing file); `None` when no free name was found in 1000 tries.
pub fn write_new_file(
    dir: &Path,
    stem: &str,
    ext: &str,
    bytes: &[u8],
) -> Result<Option<PathBuf>, CoreError> {
    use std::io::Write;
    std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
    for n in 0u32..1000 {
        let name = match n {
            0 => format!("{stem}.{ext}"),
            n => format!("{stem}.{n}.{ext}"),
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(bytes).map_err(|e| CoreError::io(&path, e))?;
                return Ok(Some(path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(CoreError::io(&path, e)),
        }
    }
    Ok(None)
}

/// A path the user typed, with a leading `~` (alone, or followed by `/` or, on Windows, `\\`)
/// replaced by their home folder — the shell does this in a terminal, nothing does it for a text
/// field. `~user/…` and a `~` anywhere else are left as typed.
pub fn expand_user(typed: &Path) -> PathBuf {
    let home = directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf());
    expand_user_with(typed, home.as_deref())
}

/// [`expand_user`] with the home folder given (`None`: nothing is expanded).
pub fn expand_user_with(typed: &Path, home: Option<&Path>) -> PathBuf {
    let Some(home) = home else {
        return typed.to_path_buf();
    };
    let Some(text) = typed.to_str() else {
        return typed.to_path_buf();
    };
    let rest = match text.strip_prefix('~') {
        Some("") => return home.to_path_buf(),
        Some(r) if r.starts_with('/') || (cfg!(windows) && r.starts_with('\\')) => r,
        _ => return typed.to_path_buf(),
    };
    home.join(rest.trim_start_matches(['/', '\\']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_is_the_home_folder() {
        let home = Path::new("/home/ana");
        let x = |p: &str| expand_user_with(Path::new(p), Some(home));
        assert_eq!(x("~/.ssh/id_ed25519"), home.join(".ssh/id_ed25519"));
        assert_eq!(x("~"), home.to_path_buf());
        assert_eq!(x("~/"), home.to_path_buf());
        assert_eq!(x("/etc/hosts"), PathBuf::from("/etc/hosts"));
        assert_eq!(x("~bob/key"), PathBuf::from("~bob/key"));
        assert_eq!(x("data/~/x"), PathBuf::from("data/~/x"));
        assert_eq!(
            expand_user_with(Path::new("~/k"), None),
            PathBuf::from("~/k")
        );
    }

    #[test]
    fn explicit_root_puts_everything_under_it() {
        let p = Paths::resolve(Some(Path::new("/x/y"))).expect("resolve");
        assert_eq!(p.config, PathBuf::from("/x/y/config"));
        assert_eq!(p.data, PathBuf::from("/x/y/data"));
        assert_eq!(p.logs, PathBuf::from("/x/y/logs"));
        assert_eq!(p.cache, PathBuf::from("/x/y/cache"));
        assert_eq!(p.database(), PathBuf::from("/x/y/data/gpurent.sqlite3"));
        assert_eq!(p.settings(), PathBuf::from("/x/y/config/settings.json"));
    }

    #[test]
    fn ensure_creates_the_directories() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let p = Paths::under(tmp.path().join("home"));
        p.ensure().expect("ensure");
        for d in [&p.config, &p.data, &p.logs, &p.cache] {
            assert!(d.is_dir(), "{} missing", d.display());
        }
        p.ensure().expect("second ensure is a no-op");
    }
}
