//! Renting on the [`App`] facade: provider accounts, live offers, `rent` (intent row → key →
//! one create → wait → proven key login → saved host), the ledger joined with the reconciled
//! provider state, and stop / start / release confirmed against the provider's answer.
//!
//! Domain logic lives in [`crate::providers`]; this file only sequences it. The crash points of
//! `rent` ([`crate::providers::crash`]) are named here, where the steps are.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::login::{LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::events::{NoProgress, Progress, ProgressSink};
use crate::infra::ipc::Coded;
use crate::infra::secret::Secret;
use crate::providers::accounts::{self, Account};
use crate::providers::ledger::{
    self, AccountFailure, EventSource, ForeignInstance, InstanceEvent, Intent, LedgerInstance,
    LedgerState, ReconcileReport,
};
use crate::providers::{
    self, crash, images, ClientConfig, CreateRequest, OfferQuery, Provider, ProviderError,
    ProviderKind, ProviderOffer, ProviderTerms, RemoteInstance, RemoteState,
};
use crate::remote::error::RemoteError;
use crate::remote::hosts::HostSpec;

/// `provider test`: the account and what its one authenticated read said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct AccountCheck {
    pub account: Account,
    pub ok: bool,
    pub checked_ms: i64,
}

/// Live offers from the connected accounts, and the accounts that could not be asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct OffersView {
    pub offers: Vec<ProviderOffer>,
    pub failed_accounts: Vec<AccountFailure>,
}

/// What to rent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RentRequest {
    pub provider: ProviderKind,
    pub offer_id: String,
    /// The provider's default PyTorch image when `None` (`data/provider-images.csv`).
    pub image: Option<String>,
    /// Disk in GB (default 50).
    pub disk_gb: Option<u32>,
    /// Return after the create; readiness is not waited for.
    pub no_wait: bool,
    /// How long to wait for a proven key login (default: the provider's, 20–30 min).
    pub ready_timeout_s: Option<u64>,
    /// Which account of the provider (default: the first connected one).
    #[serde(default)]
    #[ts(optional)]
    pub account: Option<String>,
    /// The most per hour the user confirmed (the whole machine, USD): the offer is read again
    /// just before the create and the rent is refused with `price_rose` when it now costs more.
    #[serde(default)]
    #[ts(optional)]
    pub max_price_usd: Option<f64>,
}

/// A PyTorch image a provider can boot (a row of `data/provider-images.csv`, with its source).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ProviderImage {
    pub image: String,
    /// The image's CUDA build and PyTorch, where the source says (empty: not known).
    pub cuda: String,
    pub torch: String,
    /// The host CUDA the image needs (empty: unknown).
    pub host_cuda_min: String,
    /// What was verified about this row, and where it comes from.
    pub verified: String,
    pub source: String,
    /// The host's CUDA (from the offer) is older than the image needs.
    pub host_too_old: bool,
}

/// What renting an offer means, for the rent flow's choices and its money confirm step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RentOptions {
    pub terms: ProviderTerms,
    /// The provider's images, the default first.
    pub images: Vec<ProviderImage>,
    pub disk_gb: u32,
    /// The price per hour now (the offer's, whole machine).
    pub price_per_hour_usd: f64,
    /// What the disk still costs per month while the machine is stopped, when the offer lists
    /// a storage price (`None`: the provider lists none; it is not zero).
    pub stopped_storage_usd_per_month: Option<f64>,
}

/// A ledger row with its events and what the provider says now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct InstanceView {
    #[serde(flatten)]
    pub ledger: LedgerInstance,
    /// The provider's view at the last read (`None`: not read now, or gone).
    pub remote: Option<RemoteInstance>,
    /// Ready = a key login over SSH was proven (and the host saved as `host_label`).
    pub ready: bool,
    pub terms: ProviderTerms,
    pub events: Vec<InstanceEvent>,
    /// After gpurent's own stop or release: the machine's guard held the account's full API key
    /// (`~/.gpurent/guard/provider.key`) and it could not be taken off over SSH first — it may
    /// remain on the machine's disk (revoke that key at the provider and connect a new one).
    #[serde(default)]
    pub key_left: bool,
    /// Why it could not be taken off (an error code, e.g. `connect_failed`), with `key_left`.
    #[serde(default)]
    pub key_left_why: Option<String>,
}

/// `instances`: every ledger row, the provider instances gpurent did not start, and what the
/// reconcile did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct InstancesView {
    pub instances: Vec<InstanceView>,
    /// "Not started by gpurent — still billing" (when `billing`).
    pub foreign: Vec<ForeignInstance>,
    pub reconcile: ReconcileReport,
}

/// The money behind stop / start / release, stated before doing it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MoneyNote {
    pub action: String,
    /// `gpu_billing_stops_disk_kept` (Vast), `gpu_billing_stops_disk_wiped` (RunPod: the
    /// container disk is ephemeral, wiped on stop — its spec), `gpu_billing_resumes`,
    /// `everything_deleted`.
    pub effect: String,
    pub price_per_hour_usd: f64,
    pub disk_gb: u32,
    /// The disk's monthly cost while stopped, when the provider lists a storage price.
    pub stopped_storage_usd_per_month: Option<f64>,
}

/// A machine a connected account lists that gpurent did not start, as the reconciles saw it
/// (memory only): what it has cost since gpurent first saw it, counted between reads while it
/// billed at the price read.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignSeen {
    pub foreign: ForeignInstance,
    pub first_seen_ms: i64,
    pub seen_ms: i64,
    /// USD billed between the first read and `seen_ms` (while both reads said it billed).
    pub usd_until_seen: f64,
}

impl ForeignSeen {
    /// Its price per hour now (0 when it does not bill its GPU or the price is not reported).
    pub fn usd_per_hour(&self) -> f64 {
        if self.foreign.billing {
            self.foreign
                .instance
                .price_per_hour_usd
                .unwrap_or(0.0)
                .max(0.0)
        } else {
            0.0
        }
    }
}

/// The new reads of the accounts that answered replace their old ones; a machine seen before
/// keeps its first sight and adds what it billed since the last read; the accounts that could
/// not be read keep what was seen before.
pub(crate) fn merge_foreign(
    old: &[ForeignSeen],
    fresh: &[ForeignInstance],
    answered: &[String],
    now_ms: i64,
) -> Vec<ForeignSeen> {
    let mut out: Vec<ForeignSeen> = old
        .iter()
        .filter(|o| !answered.contains(&o.foreign.account))
        .cloned()
        .collect();
    for f in fresh {
        let before = old.iter().find(|o| {
            o.foreign.account == f.account
                && o.foreign.provider == f.provider
                && o.foreign.instance.id == f.instance.id
        });
        out.push(match before {
            Some(b) => ForeignSeen {
                foreign: f.clone(),
                first_seen_ms: b.first_seen_ms,
                seen_ms: now_ms,
                usd_until_seen: b.usd_until_seen
                    + if f.billing {
                        b.usd_per_hour() * (now_ms - b.seen_ms).max(0) as f64 / 3_600_000.0
                    } else {
                        0.0
                    },
            },
            None => ForeignSeen {
                foreign: f.clone(),
                first_seen_ms: now_ms,
                seen_ms: now_ms,
                usd_until_seen: 0.0,
            },
        });
    }
    out
}

/// A machine gpurent did not start, released by its provider id (`gpurent release PROVIDER_ID`,
/// the Release button beside "not started by gpurent — still billing").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ForeignRelease {
    pub provider: ProviderKind,
    pub account: String,
    pub provider_instance_id: String,
    pub label: Option<String>,
    /// The provider's price per hour before the release (its own number).
    pub price_per_hour_usd: Option<f64>,
    /// What the provider said before and after the terminate (`gone` when it no longer lists it).
    pub state_before: String,
    pub state_after: String,
}

const READY_NOTE: &str = "ssh_ready";
/// The event detail prefix of a create whose answer was unclear (the row stays open).
const UNCLEAR_NOTE: &str = "create_outcome_unknown";
/// The note that an unclear create was resolved for the next rent (told, or not listed).
const RESOLVED_NOTE: &str = "unclear_create_resolved";
/// How long after an unclear create the next rent on that account waits for the listing to
/// show the machine before it creates anything new (the row itself stays open for 30 min).
const UNCLEAR_RESOLVE_MS: i64 = 15_000;
/// The disk of a new machine when the user does not say.
pub const DEFAULT_DISK_GB: u32 = 50;
/// An intent row older than this with no instance of its label is closed as `create_failed`.
const INTENT_GRACE_MS: i64 = 10 * 60 * 1000;
const POLL: Duration = Duration::from_millis(1000);

impl App {
    pub(crate) fn with_db<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        self.with_store(|s| Ok(f(s.conn())))?
    }

    /// The identity of the key an account uses now ([`accounts::key_id`]).
    fn account_key_id(&self, account: &Account) -> Result<String, ProviderError> {
        let key = self.with_db(|c| accounts::api_key(c, self.keystore.as_ref(), account))?;
        Ok(accounts::key_id(&key))
    }

    /// Whether a row may be closed on what `account`'s key does not see: only when the row was
    /// made with that same key (a row from before rows were bound counts as the same).
    fn same_key(&self, row_id: &str, account: &Account) -> Result<bool, ProviderError> {
        let bound = self.with_db(|c| ledger::bound_key(c, row_id))?;
        Ok(match bound {
            None => true,
            Some(b) => b == self.account_key_id(account)?,
        })
    }

    pub(crate) fn provider_client(
        &self,
        account: &Account,
    ) -> Result<Box<dyn Provider>, ProviderError> {
        let key = self.with_db(|c| accounts::api_key(c, self.keystore.as_ref(), account))?;
        providers::client(
            account.provider,
            ClientConfig::from_env(account.provider, key),
        )
    }

    // ---- accounts ----

    /// Connect an account: one authenticated read with the key first; only a key the provider
    /// accepted is saved (in the keychain).
    pub fn provider_add(
        &self,
        kind: ProviderKind,
        name: Option<&str>,
        key: Secret,
    ) -> Result<AccountCheck, ProviderError> {
        let name = name.unwrap_or(kind.as_str()).to_string();
        accounts::check_name(&name)?;
        let client = providers::client(
            kind,
            ClientConfig::from_env(kind, Secret::new(key.expose())),
        )?;
        let label = client.check_account()?;
        let now = self.now_ms();
        let account = self.with_db(|c| {
            accounts::add(c, self.keystore.as_ref(), kind, &name, &key, now)?;
            accounts::checked(c, &name, label.as_deref(), now)?;
            accounts::get(c, &name)
        })?;
        Ok(AccountCheck {
            account,
            ok: true,
            checked_ms: now,
        })
    }

    pub fn provider_list(&self) -> Result<Vec<Account>, ProviderError> {
        self.with_db(accounts::list)
    }

    /// One authenticated read.
    pub fn provider_test(&self, name: &str) -> Result<AccountCheck, ProviderError> {
        let account = self.with_db(|c| accounts::get(c, name))?;
        let label = self.provider_client(&account)?.check_account()?;
        let now = self.now_ms();
        let account = self.with_db(|c| {
            accounts::checked(c, name, label.as_deref(), now)?;
            accounts::get(c, name)
        })?;
        Ok(AccountCheck {
            account,
            ok: true,
            checked_ms: now,
        })
    }

    /// Remove an account — refused while its ledger has open rows (machines that may bill):
    /// without the key, gpurent could neither see nor release them.
    pub fn provider_remove(&self, name: &str) -> Result<(), ProviderError> {
        self.with_db(|c| {
            let account = accounts::get(c, name)?;
            let open = ledger::open_rows(c, account.provider, name)?;
            if !open.is_empty() {
                return Err(ProviderError::AccountHasMachines {
                    account: name.to_string(),
                    ids: open
                        .iter()
                        .map(|r| match &r.provider_instance_id {
                            Some(p) => format!("{} ({p})", r.id),
                            None => r.id.clone(),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            accounts::remove(c, self.keystore.as_ref(), name)
        })
    }

    // ---- offers ----

    /// Live offers from every connected account (or one provider's), filtered by `query`.
    /// An account that cannot be asked is listed in `failed_accounts`, never silently skipped.
    pub fn offers(
        &self,
        provider: Option<ProviderKind>,
        query: &OfferQuery,
    ) -> Result<OffersView, ProviderError> {
        self.offers_from(provider, None, query)
    }

    /// [`App::offers`], from one named account only when `account` is given.
    pub fn offers_from(
        &self,
        provider: Option<ProviderKind>,
        account: Option<&str>,
        query: &OfferQuery,
    ) -> Result<OffersView, ProviderError> {
        if let Some(name) = account {
            self.with_db(|c| accounts::get(c, name))?;
        }
        let accounts: Vec<Account> = self
            .provider_list()?
            .into_iter()
            .filter(|a| provider.is_none_or(|p| a.provider == p))
            .filter(|a| account.is_none_or(|n| a.name == n))
            .collect();
        if accounts.is_empty() {
            if let Some(p) = provider {
                return Err(ProviderError::NotConnected { provider: p });
            }
        }
        let mut offers = vec![];
        let mut failed = vec![];
        let now = self.now_ms();
        for a in &accounts {
            match self.provider_client(a).and_then(|c| c.offers(query, now)) {
                Ok(o) => offers.extend(o.into_iter().map(|o| ProviderOffer {
                    account: Some(a.name.clone()),
                    ..o
                })),
                Err(e) => failed.push(AccountFailure {
                    account: a.name.clone(),
                    code: e.code().to_string(),
                    message: e.to_string(),
                }),
            }
        }
        let catalog = crate::catalog::Catalog::bundled()?;
        let compat = crate::compat::Compat::bundled()?;
        for o in offers.iter_mut() {
            providers::fit::annotate(o, catalog, compat);
        }
        offers.sort_by(|a, b| a.price_per_hour_usd.total_cmp(&b.price_per_hour_usd));
        Ok(OffersView {
            offers,
            failed_accounts: failed,
        })
    }

    // ---- rent ----

    /// The choices and the money of renting `offer` with a `disk_gb` disk (default 50): the
    /// provider's terms (billing unit, whether it can stop), its images (the default first,
    /// each marked when the offer's host CUDA is older than it needs), the price now, and what
    /// a stopped machine still costs per month.
    pub fn rent_options(
        &self,
        offer: &ProviderOffer,
        disk_gb: Option<u32>,
    ) -> Result<RentOptions, ProviderError> {
        let disk_gb = disk_gb.unwrap_or(DEFAULT_DISK_GB);
        let host = offer
            .host_cuda
            .as_deref()
            .and_then(crate::compat::version::CudaVer::parse);
        let images = images::all()?
            .into_iter()
            .filter(|r| r.provider == offer.provider.as_str())
            .map(|r| {
                let need = crate::compat::version::CudaVer::parse(&r.host_cuda_min);
                ProviderImage {
                    host_too_old: matches!((host, need), (Some(h), Some(n)) if h < n),
                    image: r.image,
                    cuda: r.cuda,
                    torch: r.torch,
                    host_cuda_min: r.host_cuda_min,
                    verified: r.verified,
                    source: r.source,
                }
            })
            .collect();
        Ok(RentOptions {
            terms: offer.provider.terms(),
            images,
            disk_gb,
            price_per_hour_usd: offer.price_per_hour_usd,
            stopped_storage_usd_per_month: offer
                .storage_usd_per_gb_month
                .map(|p| p * f64::from(disk_gb)),
        })
    }

    /// Rent: intent row, key registration, one create, then (unless `no_wait`) wait for the
    /// provider's running state, the SSH port, and a proven key login; the machine becomes a
    /// saved host pinned to the host key it presented (shown as its fingerprint).
    pub fn rent(
        &self,
        req: &RentRequest,
        key: &LoginKey,
        env: &SshEnv,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<InstanceView, ProviderError> {
        let step = crate::infra::events::steps(progress, Some(6));
        let account = self.with_db(|c| match &req.account {
            Some(name) => {
                let a = accounts::get(c, name)?;
                if a.provider != req.provider {
                    return Err(ProviderError::UnknownAccount(name.clone()));
                }
                Ok(a)
            }
            None => accounts::for_provider(c, req.provider),
        })?;
        let client = self.provider_client(&account)?;
        // One rent, one machine: an earlier create of this account whose answer was unclear is
        // resolved before anything new is created.
        self.resolve_unclear_creates(&account, client.as_ref())?;
        step("offer", 0);
        let offer = client.offer(&req.offer_id, self.now_ms())?.ok_or_else(|| {
            ProviderError::OfferGone {
                provider: req.provider,
                offer_id: req.offer_id.clone(),
            }
        })?;
        // The price the user confirmed is the most they are rented at (a Vast ask can rise).
        if let Some(max) = req.max_price_usd {
            if offer.price_per_hour_usd > max + 1e-9 {
                return Err(ProviderError::PriceRose {
                    provider: req.provider,
                    price_per_hour_usd: offer.price_per_hour_usd,
                    max_price_usd: max,
                });
            }
        }
        let image = match &req.image {
            Some(i) => i.clone(),
            None => images::default_image(req.provider)?,
        };
        let disk_gb = req.disk_gb.unwrap_or(DEFAULT_DISK_GB);
        let now = self.now_ms();
        let key_id = self.account_key_id(&account)?;
        let id = self.with_db(|c| {
            let id = ledger::insert_intent(
                c,
                &Intent {
                    provider: req.provider,
                    account: account.name.clone(),
                    offer_id: offer.offer_id.clone(),
                    gpu: offer.gpu.clone(),
                    gpu_count: offer.gpu_count,
                    price_per_hour_usd: offer.price_per_hour_usd,
                    disk_gb,
                    storage_usd_per_gb_month: offer.storage_usd_per_gb_month,
                    image: image.clone(),
                },
                now,
            )?;
            // The row is bound to the key it is made with: another key's "not found" never
            // closes it.
            ledger::note(
                c,
                &id,
                EventSource::Gpurent,
                &format!("{}{key_id}", ledger::KEY_NOTE),
                now,
            )?;
            Ok(id)
        })?;
        crash::point("after_intent");
        step("key", 1);
        let registration = match client.register_key(&key.public_line, &key.label) {
            Ok(r) => r,
            Err(e) => {
                self.close_failed(&id, &e)?;
                return Err(e);
            }
        };
        crash::point("after_key_registered");
        step("create", 2);
        crash::point("before_create");
        let create = CreateRequest {
            label: id.clone(),
            offer_id: offer.offer_id.clone(),
            image,
            disk_gb,
            public_key: key.public_line.clone(),
            key_label: key.label.clone(),
        };
        let pid = match client.create(&create, &registration) {
            Ok(pid) => pid,
            Err(e) if !e.is_clear_refusal() => {
                // The machine may exist (a lost answer, a 5xx, a 408): never create again; the
                // row stays open and the machine is looked for by its label.
                let e = match e {
                    e @ ProviderError::CreateOutcomeUnknown { .. } => e,
                    other => ProviderError::CreateOutcomeUnknown {
                        provider: req.provider,
                        detail: other.to_string(),
                    },
                };
                self.with_db(|c| {
                    ledger::record(
                        c,
                        &id,
                        LedgerState::Unknown,
                        EventSource::Gpurent,
                        Some(&format!("{UNCLEAR_NOTE}: {e}")),
                        self.now_ms(),
                    )
                })?;
                let _ = self.reconcile_account(
                    &account,
                    client.as_ref(),
                    &mut ReconcileReport::default(),
                );
                return Err(e);
            }
            Err(e) => {
                self.close_failed(&id, &e)?;
                return Err(e);
            }
        };
        crash::point("after_create_answer");
        self.with_db(|c| {
            ledger::set_provider_id(
                c,
                &id,
                &pid,
                LedgerState::Provisioning,
                EventSource::Gpurent,
                "created",
                self.now_ms(),
            )
        })?;
        crash::point("after_provider_id_recorded");
        self.rent_after_create(
            req,
            &id,
            &pid,
            client.as_ref(),
            key,
            env,
            progress,
            cancel,
            &step,
        )
        .map_err(|e| still_billing(&id, e))
    }

    /// The rent after the provider made the machine: the key attached (Vast: retried with
    /// backoff), the wait for it to run (a machine in ERROR fails fast), the SSH port, the proven
    /// key login, the saved host. Every failure here leaves a machine that bills: the caller names
    /// it ([`still_billing`]).
    #[allow(clippy::too_many_arguments)]
    fn rent_after_create(
        &self,
        req: &RentRequest,
        id: &str,
        pid: &str,
        client: &dyn Provider,
        key: &LoginKey,
        env: &SshEnv,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
        step: &dyn Fn(&str, u32),
    ) -> Result<InstanceView, ProviderError> {
        let (id, pid) = (id.to_string(), pid.to_string());
        attach_key_retried(client, &pid, &key.public_line)?;
        crash::point("after_key_attached");
        if req.no_wait {
            return self.instance_view(&id, None);
        }
        let timeout = Duration::from_secs(
            req.ready_timeout_s
                .unwrap_or(req.provider.terms().ready_timeout_s),
        );
        let deadline = Instant::now() + timeout;
        step("wait_running", 3);
        let mut first = true;
        let mut last_status: Option<String> = None;
        let remote = loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::Core(crate::CoreError::Cancelled));
            }
            let read = client.get(&pid);
            if first {
                crash::point("during_wait");
                first = false;
            }
            // A transient error (5xx, 429, timeout, DNS) says nothing about the machine, and one
            // "gone" read is not the provider's word yet (a read can lag a create): keep polling
            // until the deadline; only a confirmed gone read closes the row.
            let waiting = match read {
                Ok(Some(r)) => Ok(r),
                Ok(None) => {
                    let closed = self.with_db(|c| {
                        ledger::gone_read(
                            c,
                            &id,
                            LedgerState::Terminated,
                            EventSource::Provider,
                            "gone while starting",
                            ledger::CREATE_LAG_MS,
                            self.now_ms(),
                        )
                    })?;
                    if closed {
                        return Err(ProviderError::InstanceNotFound {
                            provider: req.provider,
                            id: pid,
                        });
                    }
                    Err("not listed yet".to_string())
                }
                Err(e) if e.is_transient() => Err(format!(
                    "{} ({})",
                    last_status.clone().unwrap_or_default(),
                    e.code()
                )),
                Err(e) => return Err(e),
            };
            let r = match waiting {
                Ok(r) => r,
                Err(last) => {
                    if Instant::now() > deadline {
                        return Err(self.not_ready(&id, timeout, last.trim()));
                    }
                    std::thread::sleep(POLL);
                    continue;
                }
            };
            self.with_db(|c| ledger::seen(c, &id, self.now_ms()))?;
            self.with_db(|c| {
                ledger::record(
                    c,
                    &id,
                    LedgerState::from_remote(r.state),
                    EventSource::Provider,
                    Some(&r.raw_status),
                    self.now_ms(),
                )
            })?;
            if last_status.as_deref() != Some(r.raw_status.as_str()) {
                // The provider's own status words, as they change (the screen shows them).
                progress.emit(Progress::Log {
                    line: format!("{}: {}", req.provider, r.raw_status),
                });
                last_status = Some(r.raw_status.clone());
            }
            if matches!(r.state, RemoteState::Terminated) {
                return Err(ProviderError::NotConfirmed {
                    provider: req.provider,
                    state: r.raw_status,
                });
            }
            // A machine in ERROR does not come up by waiting, and it bills: fail fast.
            if r.state == RemoteState::Error {
                let _ = self.with_db(|c| {
                    ledger::note(
                        c,
                        &id,
                        EventSource::Provider,
                        &format!("failed while starting: {}", r.raw_status),
                        self.now_ms(),
                    )
                });
                return Err(ProviderError::MachineFailed {
                    provider: req.provider,
                    id: id.clone(),
                    state: r.raw_status,
                });
            }
            if r.state == RemoteState::Running && r.ssh.is_some() {
                break r;
            }
            if Instant::now() > deadline {
                return Err(self.not_ready(&id, timeout, &r.raw_status));
            }
            std::thread::sleep(POLL);
        };
        crash::point("after_running");
        progress.emit(Progress::Log {
            line: format!("{} is running at the provider", id),
        });
        let ssh = remote
            .ssh
            .clone()
            .ok_or_else(|| self.not_ready(&id, timeout, "no ssh endpoint"))?;
        step("wait_ssh", 4);
        loop {
            let addr = format!("{}:{}", ssh.host, ssh.port);
            let reachable = std::net::ToSocketAddrs::to_socket_addrs(&addr)
                .ok()
                .and_then(|mut a| a.next())
                .is_some_and(|a| {
                    std::net::TcpStream::connect_timeout(&a, Duration::from_secs(5)).is_ok()
                });
            if reachable {
                break;
            }
            if Instant::now() > deadline || cancel.is_cancelled() {
                return Err(self.not_ready(&id, timeout, "ssh port not reachable"));
            }
            std::thread::sleep(POLL);
        }
        crash::point("after_ssh_reachable");
        step("login", 5);
        let spec = HostSpec {
            address: ssh.host.clone(),
            port: ssh.port,
            user: ssh.user.clone(),
            jump: None,
            provider: Some(req.provider.as_str().to_string()),
            notes: Some(format!("rented by gpurent as {id} ({pid})")),
        };
        self.save_rented_host(&id, spec, key, env, cancel)?;
        crash::point("after_host_saved");
        loop {
            let check = self.host_check_with_key(&id, env, key, &NoProgress, cancel)?;
            if check.key_login_ok {
                break;
            }
            if Instant::now() > deadline || cancel.is_cancelled() {
                return Err(self.not_ready(
                    &id,
                    timeout,
                    check
                        .key_login_problem
                        .as_deref()
                        .unwrap_or("key login refused"),
                ));
            }
            std::thread::sleep(POLL);
        }
        crash::point("after_login_proven");
        let now = self.now_ms();
        self.with_db(|c| {
            ledger::set_host_label(c, &id, &id, now)?;
            ledger::note(c, &id, EventSource::Gpurent, READY_NOTE, now)
        })?;
        crash::point("after_ready_recorded");
        self.instance_view(&id, Some(remote))
    }

    /// `rent` as a registered operation with a key from Keys (the desktop's call): the key is
    /// loaded from the keychain, progress and cancel go through the op runner.
    pub fn rent_op(
        &self,
        req: &RentRequest,
        key_label: &str,
        passphrase: Option<&Secret>,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<InstanceView, ProviderError> {
        self.run_op("rent", progress, |cancel| {
            let key = self.host_login_key(key_label, passphrase)?;
            self.rent(req, &key, env, progress, cancel)
        })
    }

    /// Before a new create on `account`: every open row of it whose create answer was unclear
    /// is looked for in the provider's listing (by its label). Found → the user is told
    /// (`earlier_create_found`, its id and price) and nothing new is created; not found yet and
    /// younger than [`UNCLEAR_RESOLVE_MS`] → `create_outcome_unknown` (try again shortly);
    /// otherwise the rent goes ahead (the row stays open until the reconcile closes it).
    fn resolve_unclear_creates(
        &self,
        account: &Account,
        client: &dyn Provider,
    ) -> Result<(), ProviderError> {
        let pending = |c: &rusqlite::Connection| -> Result<Vec<LedgerInstance>, ProviderError> {
            let mut out = vec![];
            for r in ledger::open_rows(c, account.provider, &account.name)? {
                let ev = ledger::events(c, &r.id)?;
                let unclear = ev.iter().any(|e| {
                    e.detail
                        .as_deref()
                        .is_some_and(|d| d.starts_with(UNCLEAR_NOTE))
                });
                let resolved = ev
                    .iter()
                    .any(|e| e.detail.as_deref() == Some(RESOLVED_NOTE));
                if unclear && !resolved {
                    out.push(r);
                }
            }
            Ok(out)
        };
        if self.with_db(pending)?.is_empty() {
            return Ok(());
        }
        // Asked with this account's own key; an error here is no answer: refuse to create.
        self.reconcile_account(account, client, &mut ReconcileReport::default())?;
        let now = self.now_ms();
        for r in self.with_db(pending)? {
            if let Some(pid) = &r.provider_instance_id {
                self.with_db(|c| ledger::note(c, &r.id, EventSource::Gpurent, RESOLVED_NOTE, now))?;
                return Err(ProviderError::EarlierCreateFound {
                    id: r.id.clone(),
                    provider_instance_id: pid.clone(),
                    price_per_hour_usd: r.price_per_hour_usd,
                });
            }
            if now - r.updated_ms < UNCLEAR_RESOLVE_MS {
                return Err(ProviderError::CreateOutcomeUnknown {
                    provider: account.provider,
                    detail: format!(
                        "an earlier create ({}) is not resolved yet: gpurent is looking for it by its label; try again in {} s",
                        r.id,
                        (UNCLEAR_RESOLVE_MS - (now - r.updated_ms)) / 1000 + 1
                    ),
                });
            }
            self.with_db(|c| ledger::note(c, &r.id, EventSource::Gpurent, RESOLVED_NOTE, now))?;
        }
        Ok(())
    }

    /// Save the new machine as a host, pinning the host key it presents on this first contact
    /// (a machine gpurent just created, at the address the provider's authenticated API gave).
    fn save_rented_host(
        &self,
        id: &str,
        spec: HostSpec,
        key: &LoginKey,
        env: &SshEnv,
        cancel: &CancelToken,
    ) -> Result<(), ProviderError> {
        if self.host_get(id).is_ok() {
            return Ok(());
        }
        let mut req = crate::app::hosts::HostAddRequest {
            spec,
            label: Some(id.to_string()),
            key_label: if key.label == "identity-file" {
                None
            } else {
                Some(key.label.clone())
            },
            trust: vec![],
        };
        match self.host_add(&req, env, Some(key), cancel) {
            Ok(_) => Ok(()),
            Err(RemoteError::HostKeyUnknown { fingerprint, .. }) => {
                req.trust = vec![fingerprint];
                self.host_add(&req, env, Some(key), cancel)?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn not_ready(&self, id: &str, timeout: Duration, last: &str) -> ProviderError {
        let _ = self.with_db(|c| {
            ledger::note(
                c,
                id,
                EventSource::Gpurent,
                &format!("not ready after {} s: {last}", timeout.as_secs()),
                self.now_ms(),
            )
        });
        ProviderError::NotReady {
            id: id.to_string(),
            timeout_s: timeout.as_secs(),
            last_state: last.to_string(),
        }
    }

    fn close_failed(&self, id: &str, e: &ProviderError) -> Result<(), ProviderError> {
        self.with_db(|c| {
            ledger::record(
                c,
                id,
                LedgerState::CreateFailed,
                EventSource::Gpurent,
                Some(e.code()),
                self.now_ms(),
            )
        })?;
        Ok(())
    }

    // ---- ledger and reconcile ----

    fn instance_view(
        &self,
        id: &str,
        remote: Option<RemoteInstance>,
    ) -> Result<InstanceView, ProviderError> {
        self.with_db(|c| {
            let row = ledger::get(c, id)?
                .ok_or_else(|| ProviderError::UnknownInstance(id.to_string()))?;
            let events = ledger::events(c, id)?;
            let ready = row.host_label.is_some()
                && events
                    .iter()
                    .any(|e| e.detail.as_deref() == Some(READY_NOTE));
            Ok(InstanceView {
                terms: row.provider.terms(),
                ledger: row,
                remote,
                ready,
                events,
                key_left: false,
                key_left_why: None,
            })
        })
    }

    fn reconcile_account(
        &self,
        account: &Account,
        client: &dyn Provider,
        report: &mut ReconcileReport,
    ) -> Result<Vec<RemoteInstance>, ProviderError> {
        let list = client.list()?;
        let now = self.now_ms();
        let missing = self.with_db(|c| {
            ledger::reconcile(c, account.provider, &account.name, &list, now, report)
        })?;
        for m in missing {
            // Made with another key (the account's key was changed, or it is another provider
            // account): what this key does not see says nothing about the machine.
            if !self.same_key(&m.ledger_id, account)? {
                continue;
            }
            let closed = match &m.provider_instance_id {
                // A listing can lag a create, and one "gone" read is not the provider's word:
                // a direct read with this account's key, confirmed by a second one later.
                Some(pid) => match client.get(pid)? {
                    Some(r) => {
                        self.with_db(|c| {
                            ledger::seen(c, &m.ledger_id, now)?;
                            ledger::record(
                                c,
                                &m.ledger_id,
                                LedgerState::from_remote(r.state),
                                EventSource::Reconcile,
                                Some(&r.raw_status),
                                now,
                            )
                        })?;
                        false
                    }
                    None => self.with_db(|c| {
                        ledger::gone_read(
                            c,
                            &m.ledger_id,
                            LedgerState::Terminated,
                            EventSource::Reconcile,
                            "gone from the provider",
                            ledger::CREATE_LAG_MS,
                            now,
                        )
                    })?,
                },
                // No provider id: an intent row whose create may never have been sent, or an
                // unclear create (`unknown`) that may have made a machine. Closed as
                // `create_failed` only when its label stays unlisted across reads spanning the
                // grace period (10 min for an intent, 30 min for an unclear create).
                None => {
                    let lag = if m.state == LedgerState::Intent {
                        INTENT_GRACE_MS
                    } else {
                        ledger::UNCLEAR_CREATE_MS
                    };
                    self.with_db(|c| {
                        ledger::gone_read(
                            c,
                            &m.ledger_id,
                            LedgerState::CreateFailed,
                            EventSource::Reconcile,
                            "no instance with this label appeared",
                            lag,
                            now,
                        )
                    })?
                }
            };
            if closed {
                report.closed.push(m.ledger_id.clone());
            }
        }
        Ok(list)
    }

    /// Reconcile every account with the ledger (the edges call this on every start, and the app
    /// periodically). An account whose list cannot be read is reported and left untouched.
    pub fn providers_reconcile(
        &self,
    ) -> Result<(ReconcileReport, Vec<RemoteInstance>), ProviderError> {
        let mut report = ReconcileReport::default();
        let mut seen = vec![];
        let mut answered = vec![];
        for a in self.provider_list()? {
            let r = self
                .provider_client(&a)
                .and_then(|c| self.reconcile_account(&a, c.as_ref(), &mut report));
            match r {
                Ok(list) => {
                    answered.push(a.name.clone());
                    seen.extend(list)
                }
                Err(e) => report.failed_accounts.push(AccountFailure {
                    account: a.name.clone(),
                    code: e.code().to_string(),
                    message: e.to_string(),
                }),
            }
        }
        let now = self.now_ms();
        if let Ok(mut f) = self.foreign_seen.lock() {
            let accounts: Vec<String> = self.provider_list()?.into_iter().map(|a| a.name).collect();
            let mut merged = merge_foreign(&f, &report.foreign, &answered, now);
            // An account removed since is no longer asked: what it listed is not shown.
            merged.retain(|m| accounts.contains(&m.foreign.account));
            *f = merged;
        }
        Ok((report, seen))
    }

    /// The machines not started by gpurent as the last reconcile saw them.
    pub(crate) fn foreign_last_seen(&self) -> Vec<ForeignSeen> {
        self.foreign_seen
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }

    /// `instances`: reconcile, then every ledger row with what the provider says now.
    pub fn instances(&self) -> Result<InstancesView, ProviderError> {
        let (report, seen) = self.providers_reconcile()?;
        let rows = self.with_db(ledger::list)?;
        let mut out = vec![];
        for r in rows {
            let remote = r.provider_instance_id.as_ref().and_then(|pid| {
                seen.iter()
                    .find(|s| s.provider == r.provider && &s.id == pid)
                    .cloned()
            });
            out.push(self.instance_view(&r.id, remote)?);
        }
        Ok(InstancesView {
            instances: out,
            foreign: report.foreign.clone(),
            reconcile: report,
        })
    }

    /// What an action costs or saves, for the confirm step.
    pub fn instance_money(&self, key: &str, action: &str) -> Result<MoneyNote, ProviderError> {
        let row = self
            .with_db(|c| ledger::find(c, key))?
            .ok_or_else(|| ProviderError::UnknownInstance(key.to_string()))?;
        Ok(money(&row, action))
    }

    /// Stop (`stop`), start (`start`) or terminate (`release`) an instance. Without `yes` this
    /// returns `confirmation_required` with the money in words. The ledger is updated from the
    /// provider's answer: the state is read back and must show the change. With the user's own
    /// SSH files ([`SshEnv::detect`]) for taking a guard's full key off first
    /// ([`App::instance_action_with`]).
    pub fn instance_action(
        &self,
        key: &str,
        action: &str,
        yes: bool,
    ) -> Result<InstanceView, ProviderError> {
        let env = SshEnv::detect().ok();
        self.instance_action_with(key, action, yes, env.as_ref(), &CancelToken::new())
    }

    /// [`App::instance_action`]; before a stop or release, the account's full key a guard holds
    /// on the machine is taken off over SSH (`env`), and the answer's `key_left` says when it
    /// could not be (the stop or release happens anyway).
    pub fn instance_action_with(
        &self,
        key: &str,
        action: &str,
        yes: bool,
        env: Option<&SshEnv>,
        cancel: &CancelToken,
    ) -> Result<InstanceView, ProviderError> {
        let row = self
            .with_db(|c| ledger::find(c, key))?
            .ok_or_else(|| ProviderError::UnknownInstance(key.to_string()))?;
        let act: &'static str = match action {
            "stop" => "stop",
            "start" => "start",
            "release" => "release",
            _ => {
                return Err(ProviderError::Core(crate::CoreError::invalid(
                    "action",
                    "stop, start or release",
                )))
            }
        };
        let row = if row.state.is_terminal() {
            // A closed row must not hide a machine that bills: ask the provider (with the row's
            // own account) and reopen the row when it shows the machine alive.
            self.reopen_if_alive(&row)?
                .ok_or_else(|| ProviderError::WrongState {
                    id: row.id.clone(),
                    state: row.state.as_str().into(),
                    action: act,
                })?
        } else {
            row
        };
        let Some(pid) = row.provider_instance_id.clone() else {
            return Err(ProviderError::WrongState {
                id: row.id,
                state: row.state.as_str().into(),
                action: act,
            });
        };
        if !yes {
            let m = money(&row, act);
            return Err(ProviderError::ConfirmationRequired {
                summary: serde_json::to_string(&m).unwrap_or_default(),
            });
        }
        let account = self.with_db(|c| accounts::get(c, &row.account))?;
        let client = self.provider_client(&account)?;
        // A guard's full key leaves the machine before it stops (its disk stays readable).
        let key_off = match (act, row.host_label.as_deref()) {
            ("stop" | "release", Some(label)) => self.guard_key_off(label, env, cancel),
            _ => None,
        };
        let now = self.now_ms();
        let sent = match act {
            "stop" => client.stop(&pid),
            "start" => client.start(&pid),
            _ => client.terminate(&pid),
        };
        let key_left = key_off.as_ref().and_then(|k| k.left.clone());
        if let Err(e) = sent {
            if let Some(k) = key_off {
                self.guard_key_back(k, &row.account, cancel);
            }
            return Err(e);
        }
        // Read back: the ledger records what the provider says, not what was hoped.
        let after = client.get(&pid)?;
        if after.is_none() && !self.same_key(&row.id, &account)? {
            // This key cannot see a machine another key made: nothing is concluded.
            return Err(ProviderError::NotConfirmed {
                provider: row.provider,
                state:
                    "not visible with the account's current key (the row was made with another key)"
                        .into(),
            });
        }
        match &after {
            // The provider accepted the terminate and then no longer has the machine: its word,
            // twice, with this row's own key.
            None if act == "release" => {
                self.with_db(|c| {
                    ledger::record(
                        c,
                        &row.id,
                        LedgerState::Terminated,
                        EventSource::Provider,
                        Some("after release: gone"),
                        now,
                    )
                })?;
            }
            // One gone read after a stop or start is not the provider's word yet.
            None => {
                self.with_db(|c| {
                    ledger::gone_read(
                        c,
                        &row.id,
                        LedgerState::Terminated,
                        EventSource::Provider,
                        &format!("gone after {act}"),
                        ledger::CREATE_LAG_MS,
                        now,
                    )
                })?;
            }
            Some(r) => {
                self.with_db(|c| {
                    ledger::seen(c, &row.id, now)?;
                    ledger::record(
                        c,
                        &row.id,
                        LedgerState::from_remote(r.state),
                        EventSource::Provider,
                        Some(&format!("after {act}: {}", r.raw_status)),
                        now,
                    )
                })?;
            }
        }
        let raw = after
            .as_ref()
            .map_or_else(|| "gone".to_string(), |r| r.raw_status.clone());
        let confirmed = match act {
            "stop" => matches!(
                after.as_ref().map(|r| r.state),
                Some(RemoteState::Stopped | RemoteState::Stopping)
            ),
            "start" => matches!(
                after.as_ref().map(|r| r.state),
                Some(RemoteState::Running | RemoteState::Starting | RemoteState::Provisioning)
            ),
            _ => after.as_ref().is_none_or(|r| {
                matches!(r.state, RemoteState::Terminated | RemoteState::Terminating)
            }),
        };
        if !confirmed {
            return Err(ProviderError::NotConfirmed {
                provider: row.provider,
                state: raw,
            });
        }
        let mut view = self.instance_view(&row.id, after)?;
        view.key_left = key_left.is_some();
        view.key_left_why = key_left;
        Ok(view)
    }
}

impl App {
    /// One offer read again now (the CLI's confirm states its price); `offer_gone` when it is not
    /// offered any more.
    pub fn offer_read(
        &self,
        provider: ProviderKind,
        account: Option<&str>,
        offer_id: &str,
    ) -> Result<ProviderOffer, ProviderError> {
        let account = self.with_db(|c| match account {
            Some(name) => accounts::get(c, name),
            None => accounts::for_provider(c, provider),
        })?;
        let client = self.provider_client(&account)?;
        client
            .offer(offer_id, self.now_ms())?
            .ok_or_else(|| ProviderError::OfferGone {
                provider,
                offer_id: offer_id.to_string(),
            })
    }

    /// Whether a ledger row answers to `key` (its gpurent id or its provider id).
    pub fn instance_known(&self, key: &str) -> Result<bool, ProviderError> {
        Ok(self.with_db(|c| ledger::find(c, key))?.is_some())
    }

    /// A machine gpurent did not start, by its provider id, on the connected account that
    /// lists it alive (`account`: only that one). A ledger id or a provider id the ledger knows
    /// is not foreign (`instance_action` releases those). An account that could not be read
    /// makes "not found" unsure: its error is returned instead.
    pub fn foreign_find(
        &self,
        provider_instance_id: &str,
        account: Option<&str>,
    ) -> Result<(Account, RemoteInstance), ProviderError> {
        if self
            .with_db(|c| ledger::find(c, provider_instance_id))?
            .is_some()
        {
            return Err(ProviderError::Core(crate::CoreError::invalid(
                "instance",
                format!(
                    "{provider_instance_id} was started by gpurent: release it by its gpurent id"
                ),
            )));
        }
        let mut found: Vec<(Account, RemoteInstance)> = vec![];
        let mut failed: Option<ProviderError> = None;
        for a in self.provider_list()? {
            if account.is_some_and(|n| n != a.name) {
                continue;
            }
            match self
                .provider_client(&a)
                .and_then(|c| c.get(provider_instance_id))
            {
                Ok(Some(r)) if r.state != RemoteState::Terminated => found.push((a, r)),
                Ok(_) => {}
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        match (found.len(), failed) {
            (1, _) => Ok(found.remove(0)),
            (0, Some(e)) => Err(e),
            (0, None) => Err(ProviderError::UnknownInstance(
                provider_instance_id.to_string(),
            )),
            _ => Err(ProviderError::Core(crate::CoreError::invalid(
                "account",
                format!(
                    "{provider_instance_id} is listed by several accounts ({}): name one",
                    found
                        .iter()
                        .map(|(a, _)| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))),
        }
    }

    /// Release (terminate) a machine gpurent did not start. Without `yes` nothing is sent:
    /// `confirmation_required` carries what it is and costs. Done only when the provider, read
    /// back with the same key, no longer shows it alive (`not_confirmed` otherwise).
    pub fn foreign_release(
        &self,
        provider_instance_id: &str,
        account: Option<&str>,
        yes: bool,
    ) -> Result<ForeignRelease, ProviderError> {
        let (acc, r) = self.foreign_find(provider_instance_id, account)?;
        let mut out = ForeignRelease {
            provider: acc.provider,
            account: acc.name.clone(),
            provider_instance_id: r.id.clone(),
            label: r.label.clone(),
            price_per_hour_usd: r.price_per_hour_usd,
            state_before: r.raw_status.clone(),
            state_after: r.raw_status.clone(),
        };
        if !yes {
            return Err(ProviderError::ConfirmationRequired {
                summary: serde_json::to_string(&out).unwrap_or_default(),
            });
        }
        let client = self.provider_client(&acc)?;
        client.terminate(&r.id)?;
        let after = client.get(&r.id)?;
        out.state_after = after
            .as_ref()
            .map_or_else(|| "gone".to_string(), |a| a.raw_status.clone());
        let gone = after
            .as_ref()
            .is_none_or(|a| matches!(a.state, RemoteState::Terminated | RemoteState::Terminating));
        if !gone {
            return Err(ProviderError::NotConfirmed {
                provider: acc.provider,
                state: out.state_after,
            });
        }
        if let Ok(mut f) = self.foreign_seen.lock() {
            f.retain(|s| !(s.foreign.account == acc.name && s.foreign.instance.id == r.id));
        }
        Ok(out)
    }

    /// A closed row whose machine the provider (asked with the row's account) shows alive is
    /// reopened with an event; `None` when it is gone, or the row has no provider id.
    fn reopen_if_alive(
        &self,
        row: &LedgerInstance,
    ) -> Result<Option<LedgerInstance>, ProviderError> {
        let Some(pid) = &row.provider_instance_id else {
            return Ok(None);
        };
        let account = self.with_db(|c| accounts::get(c, &row.account))?;
        let Some(r) = self.provider_client(&account)?.get(pid)? else {
            return Ok(None);
        };
        if matches!(r.state, RemoteState::Terminated | RemoteState::Terminating) {
            return Ok(None);
        }
        let now = self.now_ms();
        self.with_db(|c| {
            ledger::reopen(
                c,
                &row.id,
                LedgerState::from_remote(r.state),
                EventSource::Provider,
                &format!("the provider shows it as {}", r.raw_status),
                now,
            )?;
            ledger::get(c, &row.id)
        })
    }
}

/// A rent that failed after the machine was made says that it still bills and how to release
/// it — unless the provider itself said it is gone, or the error already says so.
fn still_billing(id: &str, e: ProviderError) -> ProviderError {
    match e {
        e @ (ProviderError::InstanceNotFound { .. }
        | ProviderError::NotConfirmed { .. }
        | ProviderError::NotReady { .. }
        | ProviderError::MachineFailed { .. }
        | ProviderError::StillBilling { .. }) => e,
        e => ProviderError::StillBilling {
            id: id.to_string(),
            source: Box::new(e),
        },
    }
}

/// How often, and after what pauses, a key attach after the create is tried (Vast sends the key
/// in a call of its own; a blip there must not leave a machine nobody can log in to).
const ATTACH_BACKOFF_MS: [u64; 3] = [1000, 2000, 4000];

fn attach_key_retried(
    client: &dyn Provider,
    pid: &str,
    public_key: &str,
) -> Result<(), ProviderError> {
    let mut tries = ATTACH_BACKOFF_MS.iter();
    loop {
        match client.attach_key(pid, public_key) {
            Ok(()) => return Ok(()),
            Err(e) if e.is_transient() => match tries.next() {
                Some(ms) => std::thread::sleep(Duration::from_millis(*ms)),
                None => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
}

fn money(row: &LedgerInstance, action: &str) -> MoneyNote {
    let storage = row
        .storage_usd_per_gb_month
        .map(|p| p * f64::from(row.disk_gb));
    MoneyNote {
        action: action.to_string(),
        effect: match action {
            // RunPod's `disk` is the container disk, "ephemeral, wiped on restart" (its spec):
            // a stopped pod loses what is on it.
            "stop" if row.provider == ProviderKind::Runpod => "gpu_billing_stops_disk_wiped",
            "stop" => "gpu_billing_stops_disk_kept",
            "start" => "gpu_billing_resumes",
            _ => "everything_deleted",
        }
        .into(),
        price_per_hour_usd: row.price_per_hour_usd,
        disk_gb: row.disk_gb,
        stopped_storage_usd_per_month: storage,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::infra::clock::FixedClock;
    use crate::infra::paths::Paths;

    fn offer(
        provider: ProviderKind,
        host_cuda: Option<&str>,
        storage: Option<f64>,
    ) -> ProviderOffer {
        ProviderOffer {
            provider,
            host_cuda: host_cuda.map(String::from),
            storage_usd_per_gb_month: storage,
            ..crate::providers::tests::offer("NVIDIA GeForce RTX 4090", 1, Some(24.0), 0.44)
        }
    }

    #[test]
    fn rent_options_state_the_money_and_mark_images_the_host_cannot_run() {
        let dir = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(dir.path()), Arc::new(FixedClock(1)), None).expect("app");

        // RunPod: per second, can stop, no storage price listed (None, never zero); its default
        // image needs host CUDA 12.8, so a 12.4 host is marked.
        let o = app
            .rent_options(&offer(ProviderKind::Runpod, Some("12.4"), None), None)
            .expect("options");
        assert_eq!(o.disk_gb, DEFAULT_DISK_GB);
        assert_eq!(o.price_per_hour_usd, 0.44);
        assert_eq!(o.stopped_storage_usd_per_month, None);
        assert!(o.terms.can_stop);
        assert_eq!(o.terms.billing, "per_second");
        assert!(o.images[0].image.starts_with("runpod/pytorch:"), "{o:?}");
        assert!(o.images[0].host_too_old, "{o:?}");
        let ok = app
            .rent_options(&offer(ProviderKind::Runpod, Some("12.8"), None), None)
            .expect("options");
        assert!(!ok.images[0].host_too_old);

        // Vast lists a storage price: the stopped disk's month is price × GB.
        let v = app
            .rent_options(
                &offer(ProviderKind::Vast, Some("12.8"), Some(0.15)),
                Some(40),
            )
            .expect("options");
        assert_eq!(v.disk_gb, 40);
        let month = v.stopped_storage_usd_per_month.expect("listed");
        assert!((month - 6.0).abs() < 1e-9, "{month}");

        // Lambda cannot stop and bills by the minute.
        let l = app
            .rent_options(&offer(ProviderKind::Lambda, None, None), None)
            .expect("options");
        assert!(!l.terms.can_stop);
        assert_eq!(l.terms.billing, "per_minute");
        assert!(l.images.iter().all(|i| !i.host_too_old));
    }

    /// Defect: RunPod's stop was stated as "the disk is kept" while its container disk is
    /// wiped on stop (the spec: "ephemeral, wiped on restart").
    #[test]
    fn stop_says_what_it_does_to_the_disk() {
        let dir = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(dir.path()), Arc::new(FixedClock(1)), None).expect("app");
        let row = |provider: ProviderKind| {
            app.with_db(|c| {
                ledger::insert_intent(
                    c,
                    &Intent {
                        provider,
                        account: provider.as_str().into(),
                        offer_id: "o".into(),
                        gpu: "g".into(),
                        gpu_count: 1,
                        price_per_hour_usd: 0.44,
                        disk_gb: 50,
                        storage_usd_per_gb_month: None,
                        image: "i".into(),
                    },
                    1,
                )
            })
            .expect("row")
        };
        let (rp, va) = (row(ProviderKind::Runpod), row(ProviderKind::Vast));
        assert_eq!(
            app.instance_money(&rp, "stop").expect("m").effect,
            "gpu_billing_stops_disk_wiped"
        );
        assert_eq!(
            app.instance_money(&va, "stop").expect("m").effect,
            "gpu_billing_stops_disk_kept"
        );
    }
}
