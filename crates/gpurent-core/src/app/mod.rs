//! [`App`]: the facade both edges use. It owns the paths, the database, the clock and the registry
//! of running operations; each Tauri command and each CLI subcommand is one call on it.
//!
//! This file is the shared core (open, settings, the catalog, operations). Each step of the guided
//! flow adds its calls in a file of its own, as a further `impl App` block: [`estimate`] (Pick a
//! card), [`keys`], [`hosts`], [`setup`], [`transfer`] (Files); [`login`] is the one way into a
//! saved host that every step uses. Later steps (providers, billing, monitor) are added the same
//! way; domain modules (`crate::estimate`, `crate::remote`, …) never carry `impl App`.

pub mod billing;
mod ctx;
pub mod estimate;
pub mod explain;
pub mod guard;
pub mod hosts;
pub mod jupyter;
pub mod keys;
pub mod login;
pub mod monitor;
pub mod multigpu;
pub mod ollama;
pub mod providers;
pub mod recipe;
pub mod release;
pub mod second_guard;
pub mod setup;
#[cfg(test)]
pub(crate) mod test_support;
pub mod transfer;

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::catalog::{Card, CardFilter, Catalog, Source};
use crate::infra::cancel::{CancelRegistry, CancelToken};
use crate::infra::clock::Clock;
use crate::infra::error::CoreError;
use crate::infra::events::{Progress, ProgressSink};
use crate::infra::ipc::Coded;
use crate::infra::paths::Paths;
use crate::infra::settings::{Language, Settings};
use crate::infra::store::Store;
use crate::selfcheck::{self, SelfCheckReport};

/// A card with its sources resolved, for the detail panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CardDetail {
    pub card: Card,
    pub sources: Vec<Source>,
}

/// What the UI needs to render settings and pick its language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SettingsView {
    pub settings: Settings,
    /// The language to show now (the choice, or the OS locale's when the choice is "system").
    pub effective_language: Language,
    /// The currency amounts are entered in by default (the choice, or the language's).
    #[serde(default)]
    pub effective_currency: crate::billing::Currency,
    pub os_locale: Option<String>,
    pub version: String,
    pub data_dir: String,
    /// Set when the settings file was damaged at startup (it was kept aside; defaults are used).
    pub warning: Option<crate::infra::ipc::ErrorPayload>,
}

#[derive(Debug)]
pub struct App {
    paths: Paths,
    store: Mutex<Store>,
    ops: CancelRegistry,
    clock: Arc<dyn Clock>,
    os_locale: Option<String>,
    settings_warning: Mutex<Option<crate::infra::ipc::ErrorPayload>>,
    /// Where private keys live: the OS keychain (tests swap it with `App::with_keystore`).
    pub(crate) keystore: Box<dyn crate::keys::KeyStore>,
    /// Keys unlocked with their passphrase in this session (memory only; see `keys::session`).
    pub(crate) unlocked: crate::keys::session::Unlocked,
    /// Called where every operation ends (the desktop shell's "a long step finished").
    op_end: Mutex<crate::infra::opnotice::OpEndHook>,
    /// The machines connected accounts listed that gpurent did not start, as the last reconcile
    /// saw them (Billing counts them between its live reads; memory only).
    pub(crate) foreign_seen: Mutex<Vec<crate::providers::foreign::ForeignSeen>>,
}

impl std::fmt::Debug for dyn Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

impl App {
    /// Create the directories, open and migrate the database.
    pub fn open(
        paths: Paths,
        clock: Arc<dyn Clock>,
        os_locale: Option<String>,
    ) -> Result<App, CoreError> {
        paths.ensure()?;
        let store = Store::open(&paths.database())?;
        let warning = match Settings::load(&paths.settings()) {
            (_, Some(e)) => {
                tracing::warn!(code = e.code(), "settings could not be read: {e}");
                Some(crate::infra::ipc::ErrorPayload::from_error(&e))
            }
            _ => None,
        };
        Ok(App {
            paths,
            store: Mutex::new(store),
            ops: CancelRegistry::new(),
            clock,
            os_locale,
            settings_warning: Mutex::new(warning),
            keystore: Box::new(crate::keys::OsKeyStore::default()),
            unlocked: Default::default(),
            op_end: Mutex::new(Default::default()),
            foreign_seen: Mutex::new(vec![]),
        })
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    // ---- catalog ----

    pub fn catalog_list(&self, filter: &CardFilter) -> Result<Vec<Card>, CoreError> {
        Catalog::bundled()?.list(filter)
    }

    pub fn catalog_card(&self, id: &str) -> Result<CardDetail, CoreError> {
        let cat = Catalog::bundled()?;
        let card = cat.get(id)?.clone();
        let sources = cat.sources_for(&card);
        Ok(CardDetail { card, sources })
    }

    // ---- settings ----

    pub fn settings_view(&self) -> SettingsView {
        let (settings, _) = Settings::load(&self.paths.settings());
        SettingsView {
            effective_language: settings.effective_language(self.os_locale.as_deref()),
            effective_currency: settings.effective_currency(self.os_locale.as_deref()),
            settings,
            os_locale: self.os_locale.clone(),
            version: crate::VERSION.to_string(),
            data_dir: self.paths.data.display().to_string(),
            warning: self.settings_warning.lock().ok().and_then(|w| w.clone()),
        }
    }

    /// The currency new amounts are entered in when none is named (settings).
    pub fn default_currency(&self) -> crate::billing::Currency {
        self.settings_view().effective_currency
    }

    pub fn settings_set(&self, settings: &Settings) -> Result<SettingsView, CoreError> {
        settings.save(&self.paths.settings())?;
        if let Ok(mut w) = self.settings_warning.lock() {
            *w = None;
        }
        Ok(self.settings_view())
    }

    // ---- long operations ----

    /// Run long work as a registered operation: emits `Started{op_id}` first and `Finished` last,
    /// records it (kind, start, end, outcome code) in the database, and hands the work a cancel
    /// token. Works with any domain error that can carry a core error. The work's own result is
    /// what is returned: when only the finish record cannot be written, that is logged.
    pub fn run_op<T, E>(
        &self,
        kind: &str,
        progress: &dyn ProgressSink,
        work: impl FnOnce(&CancelToken) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: Coded + From<CoreError>,
    {
        let guard = self.ops.begin();
        let started_ms = self.clock.now_unix_ms();
        self.with_store(|s| s.op_started(&guard.id, kind, started_ms))?;
        progress.emit(Progress::Started {
            op_id: guard.id.clone(),
        });
        let result = work(&guard.token);
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.code(),
        };
        let ended_ms = self.clock.now_unix_ms();
        if let Err(e) = self.with_store(|s| s.op_finished(&guard.id, outcome, ended_ms)) {
            tracing::warn!(
                op = %guard.id,
                kind,
                outcome,
                code = e.code(),
                "the operation's finish could not be recorded: {e}"
            );
        }
        let hook = self.op_end.lock().ok().and_then(|h| h.0.clone());
        if let Some(hook) = hook {
            let ended = crate::infra::opnotice::OpEnded {
                op_id: guard.id.clone(),
                kind: kind.to_string(),
                started_ms,
                ended_ms,
                outcome: outcome.to_string(),
                cancelled: guard.token.is_cancelled() || guard.token.is_paused(),
            };
            hook(&ended, self.settings_view().effective_language);
        }
        progress.emit(Progress::Finished);
        result
    }

    /// Register what to call where every operation ends (one hook; the desktop shell's "a long
    /// step finished" notification, decided by [`crate::infra::opnotice::long_op_notice`]).
    pub fn on_op_end(&self, hook: Arc<crate::infra::opnotice::OpEndFn>) {
        if let Ok(mut h) = self.op_end.lock() {
            h.0 = Some(hook);
        }
    }

    /// Cancel a running operation by the id its `Started` event carried.
    pub fn cancel_op(&self, op_id: &str) -> Result<(), CoreError> {
        self.ops.cancel(op_id)
    }

    /// Pause a running operation: a transfer stops and keeps what arrived so far (resume it with
    /// `transfer_resume`); work that cannot pause is cancelled.
    pub fn pause_op(&self, op_id: &str) -> Result<(), CoreError> {
        self.ops.pause(op_id)
    }

    /// The app's own health check.
    pub fn self_check(&self, progress: &dyn ProgressSink) -> Result<SelfCheckReport, CoreError> {
        self.run_op("self_check", progress, |token| {
            selfcheck::run(&self.paths, progress, token)
        })
    }

    /// The injected clock's time.
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_unix_ms()
    }

    pub(crate) fn with_store<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, CoreError>,
    ) -> Result<T, CoreError> {
        crate::infra::store::locked(&self.store, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::clock::FixedClock;
    use crate::infra::settings::{LanguagePref, ThemePref};

    fn app(root: &std::path::Path, locale: Option<&str>) -> App {
        App::open(
            Paths::under(root),
            Arc::new(FixedClock(42)),
            locale.map(String::from),
        )
        .expect("open")
    }

    #[test]
    fn settings_follow_os_until_chosen_and_are_remembered() {
        let tmp = tempfile::tempdir().expect("tmp");
        let a = app(tmp.path(), Some("zh-CN"));
        assert_eq!(a.settings_view().effective_language, Language::ZhCn);
        assert_eq!(a.default_currency(), crate::billing::Currency::Cny);
        a.settings_set(&Settings {
            language: LanguagePref::En,
            theme: ThemePref::Dark,
            currency: None,
        })
        .expect("set");
        drop(a);
        let b = app(tmp.path(), Some("zh-CN"));
        let v = b.settings_view();
        assert_eq!(v.effective_language, Language::En);
        assert_eq!(v.effective_currency, crate::billing::Currency::Usd);
        assert_eq!(v.settings.theme, ThemePref::Dark);
        assert!(v.warning.is_none());
    }

    #[test]
    fn damaged_settings_surface_as_a_warning_not_a_failure() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = Paths::under(tmp.path());
        paths.ensure().expect("ensure");
        std::fs::write(paths.settings(), "garbage").expect("write");
        let a = app(tmp.path(), None);
        let v = a.settings_view();
        assert_eq!(
            v.warning.map(|w| w.code).as_deref(),
            Some("settings_damaged")
        );
        assert_eq!(v.settings, Settings::default());
    }

    #[test]
    fn ops_are_logged_with_passed_in_time_and_cancellable() {
        let tmp = tempfile::tempdir().expect("tmp");
        let a = app(tmp.path(), None);
        let events = Mutex::new(Vec::new());
        let sink = |e: Progress| events.lock().expect("lock").push(e);
        let r: Result<(), CoreError> = a.run_op("test", &sink, |token| {
            let id = match &events.lock().expect("lock")[0] {
                Progress::Started { op_id } => op_id.clone(),
                other => panic!("first event {other:?}"),
            };
            a.cancel_op(&id).expect("cancel");
            token.check()
        });
        assert!(matches!(r, Err(CoreError::Cancelled)));
        assert_eq!(
            events.lock().expect("lock").last(),
            Some(&Progress::Finished)
        );
        let (started, outcome): (i64, String) = a
            .with_store(|s| {
                Ok(s.conn()
                    .query_row("SELECT started_ms, outcome FROM operations", [], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?)
            })
            .expect("row");
        assert_eq!((started, outcome.as_str()), (42, "cancelled"));
        assert!(matches!(
            a.cancel_op("op-999"),
            Err(CoreError::UnknownOperation(_))
        ));
    }

    /// Where every operation ends, the registered hook hears of it: kind, times, outcome, and
    /// whether the user cancelled it.
    #[test]
    fn op_end_hook_hears_every_end() {
        let tmp = tempfile::tempdir().expect("tmp");
        let a = app(tmp.path(), Some("zh-CN"));
        let heard: Arc<Mutex<Vec<(crate::infra::opnotice::OpEnded, Language)>>> = Arc::default();
        let h = Arc::clone(&heard);
        a.on_op_end(Arc::new(move |e, lang| {
            h.lock().expect("lock").push((e.clone(), lang))
        }));
        let sink = |_: Progress| {};
        let r: Result<u32, CoreError> = a.run_op("transfer_get", &sink, |_| Ok(1));
        assert_eq!(r.expect("ok"), 1);
        let r: Result<(), CoreError> = a.run_op("setup_fix", &sink, |token| {
            let id = a.ops.running().into_iter().next().expect("running op");
            a.cancel_op(&id).expect("cancel");
            token.check()
        });
        assert!(r.is_err());
        let heard = heard.lock().expect("lock");
        let got: Vec<(&str, &str, bool, i64, Language)> = heard
            .iter()
            .map(|(e, l)| {
                (
                    e.kind.as_str(),
                    e.outcome.as_str(),
                    e.cancelled,
                    e.ended_ms - e.started_ms,
                    *l,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("transfer_get", "ok", false, 0, Language::ZhCn),
                ("setup_fix", "cancelled", true, 0, Language::ZhCn)
            ]
        );
    }

    #[test]
    fn a_failed_finish_record_does_not_replace_the_operations_result() {
        let tmp = tempfile::tempdir().expect("tmp");
        let a = app(tmp.path(), None);
        let events = Mutex::new(Vec::new());
        let sink = |e: Progress| events.lock().expect("lock").push(e);
        // The work succeeds, but the database can no longer record the finish.
        let r: Result<u32, CoreError> = a.run_op("test", &sink, |_| {
            a.with_store(|s| Ok(s.conn().execute_batch("DROP TABLE operations")?))?;
            Ok(7)
        });
        assert_eq!(r.expect("the work's own result"), 7);
        assert_eq!(
            events.lock().expect("lock").last(),
            Some(&Progress::Finished)
        );
        // A failing operation keeps its own error too.
        let tmp = tempfile::tempdir().expect("tmp");
        let b = app(tmp.path(), None);
        let r: Result<u32, CoreError> = b.run_op("test", &sink, |_| {
            b.with_store(|s| Ok(s.conn().execute_batch("DROP TABLE operations")?))?;
            Err(CoreError::Cancelled)
        });
        assert!(matches!(r, Err(CoreError::Cancelled)), "{r:?}");
    }

    #[test]
    fn card_detail_resolves_sources() {
        let tmp = tempfile::tempdir().expect("tmp");
        let a = app(tmp.path(), None);
        let d = a.catalog_card("h100-sxm").expect("detail");
        assert_eq!(
            d.sources.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            vec!["S2", "S19"]
        );
        assert!(matches!(
            a.catalog_card("nope"),
            Err(CoreError::UnknownCard(_))
        ));
    }
}
