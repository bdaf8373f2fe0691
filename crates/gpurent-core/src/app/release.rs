//! The release checklist on the facade (docs/release.md): what a release would delete and what
//! would be lost, read from the ledger, the billing rules, the transfer journal and one exec on
//! the machine; and saving the environment recipe locally (`Paths::recipes`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::App;
use crate::billing::instance as priced;
use crate::billing::{state_at, usd_per_hour_now, Currency, InstanceState};
use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::providers::ledger::{self, LedgerInstance};
use crate::providers::spec::StopEffect;
use crate::providers::{ProviderError, ProviderKind};
use crate::release::{self, EnvRecipe, FolderChange, FolderQuery};
use crate::remote::{exec, sh_c};
use crate::transfer::{Direction, TransferState};

/// A disk the release deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DiskDeleted {
    /// `container_disk` (RunPod), `instance_disk` (Vast), `local_disk` (Lambda's instance storage).
    pub kind: String,
    pub size_gb: Option<u32>,
}

/// What stopping instead of releasing would cost and keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StopInstead {
    /// Whether the provider can stop this machine at all (Lambda cannot).
    pub possible: bool,
    /// What it would cost while stopped, per hour and per month (720 h), from the billing rules.
    pub usd_per_hour: f64,
    pub usd_per_month: f64,
    /// Whether the disk survives a stop (RunPod's container disk does not: "ephemeral, wiped on
    /// restart", and gpurent creates no volume).
    pub keeps_disk: bool,
}

/// Why the machine itself could not be read (the rest of the checklist still holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChecklistProblem {
    pub code: String,
    pub message: String,
}

/// Everything to know before releasing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ReleaseChecklist {
    /// What was asked for (an instance id, a provider id or a saved host).
    pub target: String,
    /// The ledger id and provider when it is a rented machine.
    pub instance: Option<String>,
    pub provider: Option<ProviderKind>,
    /// The saved host the folders were read on.
    pub host: Option<String>,
    pub ledger_state: Option<String>,
    /// The folders the user chose, as given.
    pub folders: Vec<String>,
    /// Chosen folders with files newer than their last download (or never downloaded).
    pub changed: Vec<FolderChange>,
    /// Chosen folders with nothing new since their last download.
    pub unchanged: Vec<String>,
    /// Chosen folders that are not on the machine.
    pub missing: Vec<String>,
    /// Chosen folders gpurent could not look into (the machine could not be read, its answer
    /// ended early, or a find/temp file failed there): "could not check — download first".
    /// Never counted as unchanged.
    #[serde(default)]
    pub unchecked: Vec<String>,
    /// The disks the release deletes (provider machines).
    pub disks: Vec<DiskDeleted>,
    /// What the machine costs per hour now, in `currency`.
    pub usd_per_hour_now: f64,
    /// What `usd_per_hour_now` and `stop_instead` are in: the machine's billing currency (every
    /// ledger machine so far bills in USD).
    #[serde(default)]
    pub currency: Currency,
    pub stop_instead: Option<StopInstead>,
    /// The environment as a replayable script (`release_save_recipe` keeps it).
    pub recipe: Option<EnvRecipe>,
    /// The machine could not be read (folders and recipe are then empty).
    pub remote_error: Option<ChecklistProblem>,
    /// `no_host` (not ready: no saved host to read), `no_setup_probe` (the env Setup found is not
    /// known: `python3` was frozen), `runpod_stop_wipes_container_disk`, `lambda_cannot_stop`,
    /// `incomplete_read` (the exec's output ended early).
    pub notes: Vec<String>,
}

const HOURS_PER_MONTH: f64 = 720.0;

/// The disks and the stop-instead money of a ledger row (pure: the billing rules and the row).
pub fn disks_and_stop(
    row: &LedgerInstance,
) -> Result<(Vec<DiskDeleted>, StopInstead, Vec<String>), CoreError> {
    let mut notes = vec![];
    let (tariff, _) = priced::tariff(row)?;
    let stopped = crate::billing::usd_total(
        tariff
            .time
            .iter()
            .filter(|c| c.bills_in.bills(InstanceState::Stopped))
            .map(|c| c.usd_per_hour),
    );
    let size = (row.disk_gb > 0).then_some(row.disk_gb);
    // What a stop does is the provider's fact; the note codes keep their names
    // (`runpod_stop_wipes_container_disk`, `lambda_cannot_stop`).
    let spec = row.provider.spec();
    let kind = spec.disk_kind;
    let (possible, keeps) = match spec.stop {
        StopEffect::WipesDisk => {
            notes.push(format!("{}_stop_wipes_{}", spec.id, spec.disk_kind));
            (true, false)
        }
        StopEffect::KeepsDisk => (true, true),
        StopEffect::CannotStop => {
            notes.push(format!("{}_cannot_stop", spec.id));
            (false, false)
        }
    };
    Ok((
        vec![DiskDeleted {
            kind: kind.into(),
            size_gb: size,
        }],
        StopInstead {
            possible,
            usd_per_hour: if possible { stopped } else { 0.0 },
            usd_per_month: if possible {
                stopped * HOURS_PER_MONTH
            } else {
                0.0
            },
            keeps_disk: keeps,
        },
        notes,
    ))
}

fn utc_stamp(ms: i64) -> String {
    let day = 86_400_000;
    let (y, m, d) = crate::billing::budget::civil_from_days(ms.div_euclid(day));
    let rem = ms.rem_euclid(day) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn norm(p: &str) -> &str {
    let t = p.trim();
    if t.len() > 1 {
        t.trim_end_matches('/')
    } else {
        t
    }
}

impl App {
    /// The last complete download of each folder: the newest `done` download of this host whose
    /// remote path is the folder or a folder above it. Its **start** is the reference, so files
    /// changed while it ran count as changed.
    fn last_downloads(
        &self,
        host: &str,
        folders: &[String],
    ) -> Result<Vec<FolderQuery>, CoreError> {
        let list = self.with_store(|s| {
            crate::transfer::journal::list(s, Some(host))
                .map_err(|e| CoreError::stored("transfer journal", e.to_string()))
        })?;
        Ok(folders
            .iter()
            .map(|f| {
                let want = norm(f);
                let downloaded_ms = list
                    .iter()
                    .filter(|t| {
                        t.direction == Direction::Download && t.state == TransferState::Done
                    })
                    .filter(|t| {
                        let r = norm(&t.remote_path);
                        want == r || want.starts_with(&format!("{}/", r.trim_end_matches('/')))
                    })
                    .map(|t| t.created_ms)
                    .max();
                FolderQuery {
                    path: f.clone(),
                    downloaded_ms,
                }
            })
            .collect())
    }

    /// The Pythons to freeze, best first: Setup's venv, the env its newest saved probe found,
    /// then `python3`.
    fn recipe_pythons(&self, host: &str) -> (Vec<String>, bool) {
        let mut out = vec![];
        let saved = self
            .setup_saved_report(host, &crate::setup::SetupOptions::default())
            .ok()
            .flatten();
        let found = saved.is_some();
        if let Some((report, _)) = saved {
            let py = &report.facts.python;
            if let Some(v) = &py.gpurent_venv {
                out.push(format!("{}/bin/python", v.trim_end_matches('/')));
            }
            if let Some(v) = &py.virtual_env {
                out.push(format!("{}/bin/python", v.trim_end_matches('/')));
            }
            if let Some(e) = &py.executable {
                out.push(e.clone());
            }
        }
        out.push("python3".into());
        out.dedup();
        (out, found)
    }

    /// The release checklist of a rented machine (ledger id or provider id) or a saved host:
    /// chosen `folders` changed since their last download (one exec on the machine), the disks
    /// the release deletes, the cost of stopping instead, and the environment recipe. A machine
    /// that cannot be reached still gets its disks and money (`remote_error` says why).
    pub fn release_checklist(
        &self,
        target: &str,
        folders: &[String],
        env: &SshEnv,
        key: Option<&LoginKey>,
        cancel: &CancelToken,
    ) -> Result<ReleaseChecklist, ProviderError> {
        // The money below is read from the ledger: bring it up to date with what each provider
        // says now (a machine started a moment ago is running, not still provisioning). An
        // account that cannot be read leaves its rows as they were; the release itself checks
        // again.
        let _ = self.providers_reconcile();
        let row = self.with_db(|c| ledger::find(c, target))?;
        let now = self.now_ms();
        let mut c = ReleaseChecklist {
            target: target.to_string(),
            instance: row.as_ref().map(|r| r.id.clone()),
            provider: row.as_ref().map(|r| r.provider),
            host: None,
            ledger_state: row.as_ref().map(|r| r.state.as_str().to_string()),
            folders: folders.to_vec(),
            changed: vec![],
            unchanged: vec![],
            missing: vec![],
            unchecked: vec![],
            disks: vec![],
            usd_per_hour_now: 0.0,
            currency: Currency::Usd,
            stop_instead: None,
            recipe: None,
            remote_error: None,
            notes: vec![],
        };
        match &row {
            Some(r) => {
                let (disks, stop, notes) = disks_and_stop(r)?;
                let (t, tariff, _) = self.instance_timeline(r)?;
                c.usd_per_hour_now = usd_per_hour_now(&t, &tariff, now);
                if state_at(&t, now) == Some(InstanceState::Terminated) {
                    return Err(ProviderError::WrongState {
                        id: r.id.clone(),
                        state: r.state.as_str().into(),
                        action: "release",
                    });
                }
                c.disks = disks;
                c.stop_instead = Some(stop);
                c.notes.extend(notes);
                c.host = r.host_label.clone();
                if c.host.is_none() {
                    c.notes.push("no_host".into());
                }
            }
            None => {
                if self.host_get(target).is_err() {
                    return Err(ProviderError::UnknownInstance(target.to_string()));
                }
                c.host = Some(target.to_string());
            }
        }
        let Some(host) = c.host.clone() else {
            return Ok(c);
        };
        let queries = self.last_downloads(&host, folders)?;
        let (pythons, probed) = self.recipe_pythons(&host);
        if !probed {
            c.notes.push("no_setup_probe".into());
        }
        let script = release::remote_script(&queries, now, &pythons)?;
        let read = (|| -> Result<String, crate::remote::RemoteError> {
            let h = self.host_get(&host)?;
            let loaded;
            let key = match key {
                Some(k) => k,
                None => {
                    loaded = self.host_key_for(&host, None)?;
                    &loaded
                }
            };
            let conn = connect_saved(&h, env, key, cancel)?;
            Ok(exec(&conn, &sh_c(&script)?, cancel)?.stdout_text())
        })();
        let text = match read {
            Ok(t) => t,
            Err(e) => {
                c.remote_error = Some(ChecklistProblem {
                    code: e.code().to_string(),
                    message: e.to_string(),
                });
                c.unchecked = queries.iter().map(|q| q.path.clone()).collect();
                return Ok(c);
            }
        };
        let seen = release::parse(&text);
        if !seen.complete {
            c.notes.push("incomplete_read".into());
        }
        for f in &seen.folders {
            let Some(q) = queries.get(f.index) else {
                continue;
            };
            match f.status.as_str() {
                "missing" => c.missing.push(q.path.clone()),
                "never" if f.count > 0 => c.changed.push(FolderChange {
                    path: q.path.clone(),
                    reason: "never_downloaded".into(),
                    last_downloaded_ms: None,
                    files_changed: f.count,
                    sample: f.sample.clone(),
                }),
                "since" if f.count > 0 => c.changed.push(FolderChange {
                    path: q.path.clone(),
                    reason: "changed_since_download".into(),
                    last_downloaded_ms: q.downloaded_ms,
                    files_changed: f.count,
                    sample: f.sample.clone(),
                }),
                "never" | "since" => c.unchanged.push(q.path.clone()),
                _ => c.unchecked.push(q.path.clone()),
            }
        }
        // A folder the answer never reached (it ended early) could not be checked either.
        for (i, q) in queries.iter().enumerate() {
            if !seen.folders.iter().any(|f| f.index == i) {
                c.unchecked.push(q.path.clone());
            }
        }
        if seen.complete {
            c.recipe = Some(release::recipe(&host, &seen.env, &utc_stamp(now))?);
        }
        Ok(c)
    }

    /// Save a recipe as `<data>/recipes/<host>-<ms>.sh` (mode 0700 on Unix); returns its path.
    pub fn release_save_recipe(&self, recipe: &EnvRecipe) -> Result<String, CoreError> {
        let dir = self.paths().recipes();
        let safe: String = recipe
            .host
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let stem = format!("{safe}-{}", self.now_ms());
        let path =
            crate::infra::paths::write_new_file(&dir, &stem, "sh", recipe.script.as_bytes())?
                .ok_or_else(|| CoreError::invalid("recipe", "no free file name under recipes/"))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| CoreError::io(&path, e))?;
        }
        Ok(path.display().to_string())
    }
}

/// An environment recipe saved by a release (`<data>/recipes/HOST-MS.sh`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SavedEnvRecipe {
    /// The file's name (what replay takes).
    pub name: String,
    pub path: String,
    /// The machine it was saved from, and when (from the file's name).
    pub host: String,
    #[ts(type = "number | null")]
    pub saved_ms: Option<i64>,
    /// How many packages it installs (pip lines and apt packages, as written).
    pub packages: u32,
}

/// What replaying a recipe on a machine did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ReplayReport {
    pub host: String,
    pub recipe: String,
    /// The Python it installed into (Setup's, else `python3`).
    pub python: String,
    pub exit_status: Option<i32>,
    pub ok: bool,
    /// The last lines it printed (all of them went to progress as `Log`).
    pub tail: Vec<String>,
}

impl App {
    /// The environment recipes saved so far, newest first.
    pub fn env_recipes(&self) -> Result<Vec<SavedEnvRecipe>, CoreError> {
        let dir = self.paths().recipes();
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(CoreError::io(&dir, e)),
        };
        for e in entries {
            let e = e.map_err(|x| CoreError::io(&dir, x))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".sh") else {
                continue;
            };
            let (host, saved_ms) = match stem.rsplit_once('-') {
                Some((h, ms)) if ms.parse::<i64>().is_ok() => (h.to_string(), ms.parse().ok()),
                _ => (stem.to_string(), None),
            };
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            out.push(SavedEnvRecipe {
                path: e.path().display().to_string(),
                name,
                host,
                saved_ms,
                packages: count_packages(&text),
            });
        }
        out.sort_by(|a, b| b.saved_ms.cmp(&a.saved_ms).then(a.name.cmp(&b.name)));
        Ok(out)
    }

    /// Replay saved recipe `name` (a file of [`App::env_recipes`]) on host `label`: the script is
    /// sent on stdin to `PY=PYTHON sh -s` (the Python Setup found there, else `python3`), its
    /// output streamed as `Log` lines; the report says whether it finished (exit 0).
    #[allow(clippy::too_many_arguments)]
    pub fn env_recipe_replay_with_key(
        &self,
        label: &str,
        name: &str,
        env: &SshEnv,
        key: &LoginKey,
        progress: &dyn crate::infra::events::ProgressSink,
        cancel: &CancelToken,
    ) -> Result<ReplayReport, crate::remote::RemoteError> {
        use crate::infra::events::Progress;
        use crate::remote::exec::{exec_with, ExecOptions};
        if name.contains('/')
            || name.contains('\\')
            || !name.ends_with(".sh")
            || name.starts_with('.')
        {
            return Err(CoreError::invalid(
                "recipe",
                "a saved recipe's file name (gpurent recipe replay --list)",
            )
            .into());
        }
        let path = self.paths().recipes().join(name);
        let script = std::fs::read(&path).map_err(|e| CoreError::io(&path, e))?;
        crate::release::check_replayable(&String::from_utf8_lossy(&script))?;
        let host = self.host_get(label)?;
        let (pythons, _) = self.recipe_pythons(label);
        let python = pythons.first().cloned().unwrap_or_else(|| "python3".into());
        let conn = connect_saved(&host, env, key, cancel)?;
        let command = format!("PY={} sh -s", crate::remote::shell_quote(&python)?);
        let mut pending = String::new();
        let mut tail: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        let mut on_output = |_: crate::remote::exec::OutStream, data: &[u8]| {
            pending.push_str(&String::from_utf8_lossy(data));
            while let Some(i) = pending.find(['\n', '\r']) {
                let line: String = pending.drain(..=i).collect();
                let line = line.trim_end().to_string();
                if line.is_empty() {
                    continue;
                }
                progress.emit(Progress::Log { line: line.clone() });
                tail.push_back(line);
                if tail.len() > 20 {
                    tail.pop_front();
                }
            }
        };
        let info = exec_with(
            &conn,
            &command,
            &ExecOptions {
                stdin: Some(&script),
                timeout: None,
            },
            &mut on_output,
            cancel,
        )?;
        if !pending.trim().is_empty() {
            let line = pending.trim_end().to_string();
            progress.emit(Progress::Log { line: line.clone() });
            tail.push_back(line);
        }
        Ok(ReplayReport {
            host: label.to_string(),
            recipe: name.to_string(),
            python,
            exit_status: info.exit_status,
            ok: info.exit_status == Some(0),
            tail: tail.into_iter().collect(),
        })
    }

    /// The desktop's replay, as the registered operation `env_replay` (cancel with its op id).
    pub fn env_recipe_replay_op(
        &self,
        label: &str,
        name: &str,
        env: &SshEnv,
        progress: &dyn crate::infra::events::ProgressSink,
    ) -> Result<ReplayReport, crate::remote::RemoteError> {
        self.run_op("env_replay", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.env_recipe_replay_with_key(label, name, env, &key, progress, cancel)
        })
    }
}

/// Packages a recipe script installs: requirement lines between its heredoc markers, torch
/// packages on its `pip install … --index-url` line, apt packages on its `apt-get install` line.
fn count_packages(script: &str) -> u32 {
    let mut n = 0;
    let mut in_reqs = false;
    for l in script.lines() {
        if l.starts_with("\"$PY\" -m pip install -r /dev/stdin") {
            in_reqs = true;
        } else if l == "GPURENT_REQUIREMENTS" {
            in_reqs = false;
        } else if in_reqs {
            n += 1;
        } else if let Some(rest) = l.strip_prefix("\"$PY\" -m pip install ") {
            n += rest
                .split(" --index-url")
                .next()
                .unwrap_or("")
                .split_whitespace()
                .count() as u32;
        } else if let Some(rest) = l.trim().split("apt-get install -y ").nth(1) {
            n += rest.split_whitespace().count() as u32;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ledger::LedgerState;

    fn row(p: ProviderKind, disk: u32, storage: Option<f64>) -> LedgerInstance {
        LedgerInstance {
            id: "gpurent-000000000001".into(),
            provider: p,
            account: p.as_str().into(),
            provider_instance_id: Some("1".into()),
            offer_id: "o".into(),
            gpu: "g".into(),
            gpu_count: 1,
            price_per_hour_usd: 0.5,
            disk_gb: disk,
            storage_usd_per_gb_month: storage,
            image: "i".into(),
            host_label: None,
            state: LedgerState::Running,
            created_ms: 0,
            updated_ms: 0,
            closed_ms: None,
        }
    }

    #[test]
    fn disks_and_the_money_of_stopping_instead() {
        // Vast: 100 GB at $0.15/GB-month keeps billing while stopped: $15 a month, disk kept.
        let (d, s, _) = disks_and_stop(&row(ProviderKind::Vast, 100, Some(0.15))).expect("vast");
        assert_eq!(d[0].kind, "instance_disk");
        assert_eq!(d[0].size_gb, Some(100));
        assert!(s.possible && s.keeps_disk);
        assert!((s.usd_per_month - 15.0).abs() < 1e-9, "{s:?}");
        // RunPod: the container disk bills only while running and is wiped on stop.
        let (d, s, n) = disks_and_stop(&row(ProviderKind::Runpod, 50, None)).expect("runpod");
        assert_eq!(d[0].kind, "container_disk");
        assert!(s.possible && !s.keeps_disk);
        assert_eq!(s.usd_per_month, 0.0);
        // +0.0, not the -0.0 an empty f64 sum gives (printed "-0" in JSON and the UI).
        assert!(s.usd_per_month.is_sign_positive() && s.usd_per_hour.is_sign_positive());
        assert!(n.contains(&"runpod_stop_wipes_container_disk".to_string()));
        // Lambda cannot stop.
        let (_, s, n) = disks_and_stop(&row(ProviderKind::Lambda, 0, None)).expect("lambda");
        assert!(!s.possible);
        assert!(n.contains(&"lambda_cannot_stop".to_string()));
        assert_eq!(utc_stamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_stamp(1_796_119_200_000), "2026-12-01T10:00:00Z");
    }
}
