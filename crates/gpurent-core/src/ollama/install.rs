//! Installing Ollama on a host where it is missing, the documented manual way (`install.sh` next
//! to this file cites ollama/ollama docs/linux.md): never the remote install script piped into a
//! shell. The archive for the host's CPU (`uname -m`: amd64 or arm64) is downloaded with the
//! host's `curl` (or `wget`) from [`DEFAULT_DOWNLOAD_BASE`] (overridable: [`DOWNLOAD_URL_ENV`]) and
//! extracted under `/usr/local` when the login user is root and may write there, else `~/.local`,
//! so `PREFIX/bin/ollama` finds its `PREFIX/lib/ollama`. gpurent calls that binary by its absolute
//! path ([`super::locate`]), so no PATH change is needed.
//!
//! The archive is checked against the release's `sha256sum.txt` before it is extracted, and a
//! download that starts on https never follows a redirect to plain http (`install.sh`).
//!
//! The download runs as a supervised job (`remote::job`): its bytes are reported about once a
//! second, and a cancel kills the whole job on the host (the half-downloaded archive is removed).
//! An Ollama already there is reported, not reinstalled. Success is claimed only once the server
//! started afterwards answers `/api/version` ([`crate::app`]'s `ollama_install`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{OllamaError, JOB_DIR};
use crate::infra::cancel::CancelToken;
use crate::remote::connect::Connection;
use crate::remote::job::{run_job, JobOutcome};
use crate::remote::quote::{sh_c, shell_quote};

/// Where Ollama's release archives are (`ollama-linux-amd64.tgz`, …), per docs/linux.md.
pub const DEFAULT_DOWNLOAD_BASE: &str = "https://ollama.com/download";

/// Environment variable (on this machine) that replaces [`DEFAULT_DOWNLOAD_BASE`]: a mirror, or
/// the tests' loopback server. The archive names under it stay the same.
pub const DOWNLOAD_URL_ENV: &str = "GPURENT_OLLAMA_DOWNLOAD_URL";

const SCRIPT: &str = include_str!("install.sh");
const MARK: &str = "@@ollama@@ ";

/// How to install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct InstallOptions {
    /// The URL the archives are under (no trailing `/`).
    pub download_base: String,
}

impl Default for InstallOptions {
    fn default() -> Self {
        InstallOptions {
            download_base: DEFAULT_DOWNLOAD_BASE.into(),
        }
    }
}

impl InstallOptions {
    /// The defaults, with the base URL from [`DOWNLOAD_URL_ENV`] when it is set.
    pub fn from_env() -> InstallOptions {
        let base = std::env::var(DOWNLOAD_URL_ENV)
            .ok()
            .map(|s| s.trim().trim_end_matches('/').to_string())
            .filter(|s| !s.is_empty());
        InstallOptions {
            download_base: base.unwrap_or_else(|| DEFAULT_DOWNLOAD_BASE.into()),
        }
    }
}

/// Where an install is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InstallStage {
    /// Looking for an installed Ollama, the CPU, a downloader, the prefix.
    Checking,
    /// Downloading the archive (`downloaded` of `total` bytes).
    Downloading,
    /// Extracting it under the prefix.
    Extracting,
    /// Starting `ollama serve` and waiting for `/api/version`.
    Starting,
}

/// One progress report of an install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct InstallProgress {
    pub stage: InstallStage,
    /// The archive's URL, once chosen.
    pub url: Option<String>,
    /// Bytes of the archive on the host so far.
    pub downloaded: Option<u64>,
    /// The archive's size when the server said it (`Content-Length`).
    pub total: Option<u64>,
}

/// What the install step found or did on the host (before the server is started).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Installed {
    /// The `ollama` binary, by absolute path.
    pub path: String,
    /// `true`: it was there already and nothing was installed.
    pub already: bool,
    /// `amd64` / `arm64` when gpurent installed it.
    pub arch: Option<String>,
    /// The prefix it was extracted under when gpurent installed it.
    pub prefix: Option<String>,
    /// The archive it came from when gpurent installed it.
    pub url: Option<String>,
}

/// Map `uname -m` to the archive's name part, as Ollama's own install script does.
pub fn archive_arch(uname_m: &str) -> Option<&'static str> {
    match uname_m.trim() {
        "x86_64" | "amd64" => Some("amd64"),
        "aarch64" | "arm64" => Some("arm64"),
        _ => None,
    }
}

/// Find Ollama on the host, or install it (see the module docs). Progress to `on_progress`.
pub fn install(
    conn: &Connection,
    opts: &InstallOptions,
    on_progress: &mut dyn FnMut(&InstallProgress),
    cancel: &CancelToken,
) -> Result<Installed, OllamaError> {
    let command = format!(
        "{} gpurent-ollama-install {}",
        sh_c(SCRIPT)?,
        shell_quote(&opts.download_base)?
    );
    let mut st = ScriptState::default();
    on_progress(&st.progress(InstallStage::Checking));
    let mut tail: Vec<String> = Vec::new();
    let outcome = run_job(
        conn,
        JOB_DIR,
        "ollama-install",
        &command,
        &mut |line| match line.strip_prefix(MARK) {
            Some(m) => {
                if let Some(stage) = st.push(m) {
                    on_progress(&st.progress(stage));
                }
            }
            None => {
                tail.push(line.to_string());
                if tail.len() > 5 {
                    tail.remove(0);
                }
            }
        },
        cancel,
    )?;
    if let JobOutcome::Busy(pid) = outcome {
        return Err(OllamaError::InstallFailed {
            detail: format!("another install is running on the host (process group {pid})"),
        });
    }
    if let Some((code, detail)) = st.error.take() {
        return Err(script_error(&code, &detail, &opts.download_base));
    }
    match (st.present.take(), st.installed.take(), outcome) {
        (Some(path), _, _) => Ok(Installed {
            path,
            already: true,
            arch: None,
            prefix: None,
            url: None,
        }),
        (None, Some(path), JobOutcome::Exited(Some(0))) => Ok(Installed {
            path,
            already: false,
            arch: st.arch,
            prefix: st.prefix,
            url: st.url,
        }),
        (_, _, JobOutcome::Exited(code)) => Err(OllamaError::InstallFailed {
            detail: format!(
                "the install ended with exit status {code:?}: {}",
                tail.join(" | ")
            ),
        }),
        (_, _, JobOutcome::Busy(_)) => unreachable!("handled above"),
    }
}

/// The script's `error CODE DETAIL` line as a typed error.
fn script_error(code: &str, detail: &str, base: &str) -> OllamaError {
    match code {
        "unsupported_arch" => OllamaError::UnsupportedArch {
            arch: detail.trim().to_string(),
        },
        "no_downloader" => OllamaError::NoDownloader,
        "no_space" => {
            let mut it = detail.split_whitespace();
            let kb = |s: Option<&str>| s.and_then(|v| v.parse::<u64>().ok());
            let need_kb = kb(it.next());
            let have_kb = kb(it.next());
            OllamaError::NoSpace {
                path: it.collect::<Vec<_>>().join(" "),
                need_bytes: need_kb.map(|k| k * 1024),
                have_bytes: have_kb.map(|k| k * 1024),
            }
        }
        "checksum_mismatch" => {
            let mut it = detail.split_whitespace();
            let mut next = || it.next().unwrap_or_default().to_string();
            OllamaError::ChecksumMismatch {
                archive: next(),
                expected: next(),
                actual: next(),
            }
        }
        "checksum_unavailable" => OllamaError::ChecksumUnavailable {
            detail: detail.trim().to_string(),
        },
        "insecure_redirect" => OllamaError::InsecureRedirect {
            base: base.to_string(),
            detail: detail.trim().to_string(),
        },
        "download_failed" => OllamaError::DownloadFailed {
            base: base.to_string(),
            detail: detail.trim().to_string(),
        },
        _ => OllamaError::InstallFailed {
            detail: detail.trim().to_string(),
        },
    }
}

/// What the script's marked lines said so far.
#[derive(Debug, Default)]
struct ScriptState {
    present: Option<String>,
    installed: Option<String>,
    arch: Option<String>,
    prefix: Option<String>,
    url: Option<String>,
    total: Option<u64>,
    downloaded: Option<u64>,
    error: Option<(String, String)>,
}

impl ScriptState {
    /// Take one marked line (without the mark); the stage to report when it is progress.
    fn push(&mut self, m: &str) -> Option<InstallStage> {
        let (word, rest) = m.split_once(' ').unwrap_or((m, ""));
        let rest = rest.trim();
        match word {
            "present" => self.present = Some(rest.to_string()),
            "installed" => self.installed = Some(rest.to_string()),
            "arch" => self.arch = rest.split_whitespace().nth(1).map(str::to_string),
            "prefix" => self.prefix = Some(rest.to_string()),
            "url" => {
                self.url = Some(rest.to_string());
                return Some(InstallStage::Downloading);
            }
            "total" => self.total = rest.parse().ok(),
            "bytes" => {
                self.downloaded = rest.parse().ok();
                return Some(InstallStage::Downloading);
            }
            "extract" => return Some(InstallStage::Extracting),
            "error" => {
                let (code, detail) = rest.split_once(' ').unwrap_or((rest, ""));
                self.error = Some((code.to_string(), detail.to_string()));
            }
            _ => {}
        }
        None
    }

    fn progress(&self, stage: InstallStage) -> InstallProgress {
        InstallProgress {
            stage,
            url: self.url.clone(),
            downloaded: self.downloaded,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_follow_ollamas_archives() {
        assert_eq!(archive_arch("x86_64\n"), Some("amd64"));
        assert_eq!(archive_arch("aarch64"), Some("arm64"));
        assert_eq!(archive_arch("arm64"), Some("arm64"));
        assert_eq!(archive_arch("riscv64"), None);
        assert_eq!(archive_arch("armv7l"), None);
    }

    #[test]
    fn marked_lines_become_progress_and_errors() {
        let mut s = ScriptState::default();
        assert_eq!(s.push("arch x86_64 amd64"), None);
        assert_eq!(s.push("prefix /root/.local"), None);
        assert_eq!(
            s.push("url http://x/ollama-linux-amd64.tgz"),
            Some(InstallStage::Downloading)
        );
        assert_eq!(s.push("total 2048"), None);
        assert_eq!(s.push("bytes 1024"), Some(InstallStage::Downloading));
        let p = s.progress(InstallStage::Downloading);
        assert_eq!((p.downloaded, p.total), (Some(1024), Some(2048)));
        assert_eq!(
            s.push("extract /root/.local"),
            Some(InstallStage::Extracting)
        );
        assert_eq!(s.arch.as_deref(), Some("amd64"));
        s.push("error no_space 300 100 /root/.local");
        let (c, d) = s.error.clone().expect("error");
        match script_error(&c, &d, "http://x") {
            OllamaError::NoSpace {
                need_bytes,
                have_bytes,
                path,
            } => {
                assert_eq!(need_bytes, Some(300 * 1024));
                assert_eq!(have_bytes, Some(100 * 1024));
                assert_eq!(path, "/root/.local");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            script_error("unsupported_arch", "riscv64", ""),
            OllamaError::UnsupportedArch { arch } if arch == "riscv64"
        ));
        assert!(matches!(
            script_error("no_downloader", "x", ""),
            OllamaError::NoDownloader
        ));
    }

    /// The script is plain POSIX sh and refuses an unknown CPU before touching anything: run it
    /// locally with a `uname` that says riscv64.
    #[cfg(unix)]
    #[test]
    fn the_script_refuses_an_unsupported_cpu() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tmp");
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&bin).expect("bin");
        let uname = bin.join("uname");
        std::fs::write(&uname, "#!/bin/sh\necho riscv64\n").expect("uname");
        std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("install")
            .arg("http://127.0.0.1:9")
            .env("PATH", &bin)
            .env("HOME", tmp.path())
            .output()
            .expect("sh");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("@@ollama@@ error unsupported_arch riscv64"),
            "{text}"
        );
        assert_eq!(out.status.code(), Some(1));
    }
}
