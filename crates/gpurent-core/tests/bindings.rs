//! The UI's TypeScript types are generated from the Rust types (ts-rs) and committed under
//! `ui/bindings/`. This test fails when they drift. Regenerate with:
//!
//! ```sh
//! UPDATE_BINDINGS=1 cargo test -p gpurent-core --test bindings
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpurent_core::app::billing::{
    AccountBalance, Budget, BudgetStatus, CostOptions, CostReport, HostRate, MachineCost,
};
use gpurent_core::app::billing::{BillingView, BudgetRow};
use gpurent_core::app::guard::{
    DurationPreview, GuardRequest, GuardSetReport, GuardStatus, GuardView,
};
use gpurent_core::app::hosts::{HostAddOutcome, PasteAdd};
use gpurent_core::app::hosts::{HostAddRequest, KeyInstallReport, Opened, SshConfigResult};
use gpurent_core::app::ollama::OllamaInstallReport;
use gpurent_core::app::providers::{
    AccountCheck, ForeignRelease, InstanceView, InstancesView, MoneyNote, OffersView, RentOptions,
    RentRequest,
};
use gpurent_core::app::recipe::{
    RecipeOffersView, RecipeRunReport, RecipeStep, RecipeTarget, TranscribeReport,
};
use gpurent_core::app::release::{ReleaseChecklist, ReplayReport, SavedEnvRecipe};
use gpurent_core::app::second_guard::TickReport;
use gpurent_core::app::setup::{FixReport, HostReport, HostVerify};
use gpurent_core::app::{CardDetail, SettingsView};
use gpurent_core::billing::platforms::PlatformRules;
use gpurent_core::catalog::{Card, CardFilter};
use gpurent_core::estimate::kinds::{KindCatalog, KindEstimate, KindJob};
use gpurent_core::estimate::local::LocalFitReport;
use gpurent_core::estimate::{Estimate, Job, ModelSpec, QuantFormat};
use gpurent_core::explain::Explanation;
use gpurent_core::guard::Decision;
use gpurent_core::hostparse::ParsedHostSummary;
use gpurent_core::infra::events::Progress;
use gpurent_core::infra::ipc::ErrorPayload;
use gpurent_core::infra::settings::Settings;
use gpurent_core::keys::{KeyAlgorithm, KeyInfo};
use gpurent_core::localgpu::LocalGpuReport;
use gpurent_core::monitor::stream::TelemetryEvent;
use gpurent_core::monitor::watch::WatchSample;
use gpurent_core::multigpu::{LaunchReport, LaunchSpec, RankLine};
use gpurent_core::ollama::fit::ModelFit;
use gpurent_core::ollama::install::InstallProgress;
use gpurent_core::ollama::{Loaded, PullProgress, Served};
use gpurent_core::providers::accounts::Account;
use gpurent_core::providers::{OfferQuery, ProviderKind};
use gpurent_core::recipes::asr::{TranscribeOptions, TranscriptFile, TranscriptFormat};
use gpurent_core::recipes::{Recipe, RecipeInputs};
use gpurent_core::remote::{Host, HostCheck};
use gpurent_core::selfcheck::SelfCheckReport;
use gpurent_core::setup::{Report, SetupOptions, VerifyReport};
use gpurent_core::transfer::{
    RemoteListing, ScanReport, TransferOptions, TransferReport, TransferSummary,
};
use ts_rs::{Config, TypeVisitor, TS};

/// Every type that crosses the IPC edge (their dependencies are exported with them), handed to
/// `each` (a macro name: `export_each` or `visit_each`).
macro_rules! ipc_types {
    ($each:ident, $arg:expr) => {
        $each!(
            $arg,
            ErrorPayload,
            Progress,
            Card,
            CardFilter,
            CardDetail,
            Settings,
            SettingsView,
            SelfCheckReport,
            Job,
            Estimate,
            ModelSpec,
            QuantFormat,
            LocalGpuReport,
            Host,
            HostCheck,
            HostAddRequest,
            KeyInstallReport,
            SshConfigResult,
            Opened,
            LocalFitReport,
            PasteAdd,
            HostReport,
            FixReport,
            HostVerify,
            HostAddOutcome,
            KeyInfo,
            KeyAlgorithm,
            ParsedHostSummary,
            Report,
            SetupOptions,
            VerifyReport,
            TransferOptions,
            TransferReport,
            TransferSummary,
            ScanReport,
            RemoteListing,
            ProviderKind,
            Account,
            AccountCheck,
            OfferQuery,
            OffersView,
            RentRequest,
            RentOptions,
            InstanceView,
            InstancesView,
            MoneyNote,
            ForeignRelease,
            WatchSample,
            TelemetryEvent,
            PullProgress,
            Loaded,
            InstallProgress,
            OllamaInstallReport,
            Served,
            ModelFit,
            LaunchSpec,
            RankLine,
            LaunchReport,
            Explanation,
            CostReport,
            MachineCost,
            AccountBalance,
            CostOptions,
            HostRate,
            Budget,
            BudgetStatus,
            ReleaseChecklist,
            BillingView,
            PlatformRules,
            BudgetRow,
            TickReport,
            GuardRequest,
            GuardSetReport,
            GuardStatus,
            GuardView,
            DurationPreview,
            Decision,
            KindJob,
            KindEstimate,
            KindCatalog,
            Recipe,
            RecipeInputs,
            RecipeRunReport,
            RecipeStep,
            RecipeTarget,
            RecipeOffersView,
            TranscribeReport,
            TranscriptFile,
            TranscribeOptions,
            TranscriptFormat,
            SavedEnvRecipe,
            ReplayReport,
        )
    };
}

macro_rules! export_each {
    ($cfg:expr, $($t:ty),* $(,)?) => { $( <$t as TS>::export_all($cfg).expect(stringify!($t)); )* };
}

macro_rules! visit_each {
    ($v:expr, $($t:ty),* $(,)?) => { $( $v.visit::<$t>(); )* };
}

fn export_all(dir: &Path) {
    let cfg = Config::new().with_out_dir(dir).with_large_int("number");
    ipc_types!(export_each, &cfg);
}

/// Every Rust type behind each exported file: two Rust types that share a TypeScript name would
/// write the same file, the last one silently winning.
#[derive(Default)]
struct Files(BTreeMap<PathBuf, std::collections::BTreeSet<&'static str>>);

impl TypeVisitor for Files {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        let Some(path) = T::output_path() else {
            T::visit_dependencies(self);
            T::visit_generics(self);
            return;
        };
        let rust = std::any::type_name::<T::WithoutGenerics>();
        if self.0.entry(path).or_default().insert(rust) {
            T::visit_dependencies(self);
            T::visit_generics(self);
        }
    }
}

#[test]
fn no_two_rust_types_share_a_typescript_name() {
    let mut files = Files::default();
    ipc_types!(visit_each, files);
    assert!(files.0.len() > 50, "the visitor saw the exported types");
    let clashes: Vec<_> = files.0.iter().filter(|(_, r)| r.len() > 1).collect();
    assert!(
        clashes.is_empty(),
        "these TypeScript files each have more than one Rust type (rename one, or give it \
         #[ts(rename = ...)]): {clashes:#?}"
    );
}

fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("read bindings dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "ts") {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            out.insert(name, std::fs::read_to_string(&path).expect("read"));
        }
    }
    out
}

fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/bindings")
}

#[test]
fn committed_bindings_match_rust_types() {
    let fresh = tempfile::tempdir().expect("tmp");
    export_all(fresh.path());
    let generated = read_dir(fresh.path());
    let committed_path = committed_dir();
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        std::fs::create_dir_all(&committed_path).expect("mkdir");
        for old in read_dir(&committed_path).keys() {
            std::fs::remove_file(committed_path.join(old)).expect("remove stale binding");
        }
        for (name, text) in &generated {
            std::fs::write(committed_path.join(name), text).expect("write");
        }
    }
    let committed = read_dir(&committed_path);
    let names = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&committed),
        names(&generated),
        "ui/bindings has a different set of files; run UPDATE_BINDINGS=1 cargo test -p gpurent-core --test bindings"
    );
    for (name, text) in &generated {
        assert_eq!(
            &committed[name], text,
            "ui/bindings/{name} is out of date; run UPDATE_BINDINGS=1 cargo test -p gpurent-core --test bindings"
        );
    }
}
