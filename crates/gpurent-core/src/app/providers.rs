//! Renting on the [`App`] facade: provider accounts, live offers, `rent` (the account and key
//! resolved here, the state machine in [`crate::providers::rent`]), the ledger joined with the
//! reconciled provider state, and stop / start / release confirmed against the provider's answer.
//!
//! Domain logic lives in [`crate::providers`]; this file only sequences it and gives the rent
//! state machine what lies outside the providers' domain (the reconcile, saved hosts, the key
//! login) through [`RentHost`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::login::{LoginKey, SshEnv};
use crate::app::App;
use crate::infra::cancel::CancelToken;
use crate::infra::events::{NoProgress, ProgressSink};
use crate::infra::ipc::Coded;
use crate::infra::secret::Secret;
use crate::providers::accounts::{self, Account};
use crate::providers::action::{self, Action, ActionHost, Actor};
use crate::providers::ledger::{
    self, AccountFailure, EventSource, ForeignInstance, InstanceEvent, LedgerInstance, LedgerState,
    ReconcileReport,
};
use crate::providers::reconcile::{ReconcileHost, Reconciler};
use crate::providers::rent::{still_billing, RentHost, RentKey, Renter, READY_NOTE};
use crate::providers::{
    self, images, ClientConfig, OfferQuery, Provider, ProviderError, ProviderKind, ProviderOffer,
    ProviderTerms, RemoteInstance, RemoteState, TrafficCost,
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

pub use crate::providers::rent::{RentRequest, DEFAULT_DISK_GB};

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
    /// Where the price comes from when the provider quotes none before the create (AutoDL: the
    /// documented rate's page, verified or not, and the date read); `None`: the provider's quote.
    #[serde(default)]
    pub price_source: Option<String>,
    /// What traffic costs on top of the hourly price (the offer's; `None`: not known).
    #[serde(default)]
    pub traffic: Option<TrafficCost>,
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

pub use crate::providers::action::MoneyNote;

/// The cost report's live read ([`crate::billing::report::cost_report`]).
impl crate::billing::report::Reconcile for App {
    fn reconcile(&self) -> Result<(ReconcileReport, Vec<RemoteInstance>), ProviderError> {
        self.providers_reconcile()
    }
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

impl App {
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
        // Cheapest first within a currency (amounts in different currencies are not compared).
        offers.sort_by(|a, b| {
            a.currency
                .cmp(&b.currency)
                .reverse()
                .then(a.price_per_hour_usd.total_cmp(&b.price_per_hour_usd))
        });
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
        let disk_gb = disk_gb.unwrap_or(offer.provider.spec().default_disk_gb);
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
                .filter(|_| offer.provider.spec().stopped_bills_storage)
                .map(|p| p * f64::from(disk_gb)),
            price_source: offer.price_source.clone(),
            traffic: offer.traffic.clone(),
        })
    }

    /// [`App::rent_options`] for the money step: with a disk chosen, the offer is read again
    /// priced at that disk (Vast's price includes the disk's storage), by the account that
    /// listed it, so the price stated — and passed as the rent's most — is the created
    /// machine's; without one, the offer as listed.
    pub fn rent_options_at(
        &self,
        offer: &ProviderOffer,
        disk_gb: Option<u32>,
    ) -> Result<RentOptions, ProviderError> {
        let Some(disk) = disk_gb else {
            return self.rent_options(offer, None);
        };
        let read = self.offer_read_at(
            offer.provider,
            offer.account.as_deref(),
            &offer.offer_id,
            disk,
        )?;
        let priced = ProviderOffer {
            price_per_hour_usd: read.price_per_hour_usd,
            storage_usd_per_gb_month: read.storage_usd_per_gb_month,
            traffic: read.traffic.or_else(|| offer.traffic.clone()),
            ..offer.clone()
        };
        self.rent_options(&priced, Some(disk))
    }

    /// Rent: the account resolved (the named one, or the provider's first), its client and
    /// key identity, then the state machine of [`providers::rent::Renter`] on the injected clock;
    /// the machine becomes a saved host pinned to the host key it presented.
    pub fn rent(
        &self,
        req: &RentRequest,
        key: &LoginKey,
        env: &SshEnv,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<InstanceView, ProviderError> {
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
        let key_id = self.account_key_id(&account)?;
        let host = RentSteps {
            app: self,
            key,
            env,
            cancel,
        };
        let renter = Renter {
            store: &self.store,
            clock: self.clock.as_ref(),
            client: client.as_ref(),
            host: &host,
            progress,
            cancel,
        };
        let rented = renter.rent(
            req,
            &account,
            &key_id,
            RentKey {
                label: &key.label,
                public_line: &key.public_line,
            },
        )?;
        self.instance_view(&rented.id, rented.remote)
            .map_err(|e| still_billing(&rented.id, e))
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

    /// Reconcile every account with the ledger (the edges call this on every start, and the app
    /// periodically): [`Reconciler::all`].
    pub fn providers_reconcile(
        &self,
    ) -> Result<(ReconcileReport, Vec<RemoteInstance>), ProviderError> {
        Reconciler {
            store: &self.store,
            clock: self.clock.as_ref(),
            host: &ProviderSteps(self),
            foreign: &self.foreign_seen,
        }
        .all()
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
        Ok(action::money(&row, action))
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
    /// could not be (the stop or release happens anyway). The rules: [`crate::providers::action`].
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
        let act = Action::parse(action)?;
        let guard_key = crate::app::guard::GuardKeySteps::new(self, env, cancel);
        let done = Actor {
            store: &self.store,
            clock: self.clock.as_ref(),
            host: &ProviderSteps(self),
            key: &guard_key,
        }
        .act(row, act, yes)?;
        Ok(self
            .instance_view(&done.id, done.after)?
            .with_key_left(done.key_left))
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
        self.offer_read_at(provider, account, offer_id, provider.spec().default_disk_gb)
    }

    /// [`App::offer_read`] priced with the disk the rent will create (`disk_gb`): where the
    /// provider's price includes the disk (Vast), the price confirmed is the created machine's.
    pub fn offer_read_at(
        &self,
        provider: ProviderKind,
        account: Option<&str>,
        offer_id: &str,
        disk_gb: u32,
    ) -> Result<ProviderOffer, ProviderError> {
        let account = self.with_db(|c| match account {
            Some(name) => accounts::get(c, name),
            None => accounts::for_provider(c, provider),
        })?;
        let client = self.provider_client(&account)?;
        client
            .offer_at_disk(offer_id, disk_gb, self.now_ms())?
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

    /// A rented machine's saved host follows the SSH endpoint the provider reports for it while
    /// it runs (providers hand a started machine a new public IP or port). Only the address,
    /// port and user change, with a ledger event: the pinned host key stays, so a different key
    /// at the new address is still refused as `host_key_changed`, never re-pinned silently.
    fn follow_endpoint(
        &self,
        row: &LedgerInstance,
        remote: &RemoteInstance,
    ) -> Result<(), ProviderError> {
        let (Some(label), Some(ssh)) = (&row.host_label, &remote.ssh) else {
            return Ok(());
        };
        if remote.state != RemoteState::Running || row.state.is_terminal() {
            return Ok(());
        }
        let Ok(host) = self.host_get(label) else {
            return Ok(());
        };
        if host.address == ssh.host && host.port == ssh.port && host.user == ssh.user {
            return Ok(());
        }
        let now = self.now_ms();
        let mut moved = Ok(());
        self.with_store(|s| {
            moved = crate::remote::hosts::set_endpoint(s, label, &ssh.host, ssh.port, &ssh.user);
            Ok(())
        })?;
        moved?;
        // The `~/.ssh/config` block `host ssh-config` wrote follows too (only where one was
        // written); a failure to rewrite it is said in the event, never a failed reconcile.
        let config = match self.host_ssh_config_follow(label) {
            Ok(true) => "; ssh config entry rewritten".to_string(),
            Ok(false) => String::new(),
            Err(e) => format!(
                "; ssh config entry NOT rewritten ({}): run gpurent host ssh-config {label}",
                e.code()
            ),
        };
        self.with_db(|c| {
            ledger::note(
                c,
                &row.id,
                EventSource::Provider,
                &format!(
                    "ssh endpoint moved: {}@{}:{} → {}@{}:{} (host key pin kept{config})",
                    host.user, host.address, host.port, ssh.user, ssh.host, ssh.port
                ),
                now,
            )
        })
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

impl InstanceView {
    /// Why the guard's full key may remain on the machine after a stop or release.
    fn with_key_left(mut self, why: Option<String>) -> Self {
        self.key_left = why.is_some();
        self.key_left_why = why;
        self
    }
}

/// What a stop, start or release ([`Actor`]) and a reconcile ([`Reconciler`]) ask of the facade.
struct ProviderSteps<'a>(&'a App);

impl ActionHost for ProviderSteps<'_> {
    fn reopen_if_alive(
        &self,
        row: &LedgerInstance,
    ) -> Result<Option<LedgerInstance>, ProviderError> {
        self.0.reopen_if_alive(row)
    }
}

impl ReconcileHost for ProviderSteps<'_> {
    fn client(&self, account: &Account) -> Result<Box<dyn Provider>, ProviderError> {
        self.0.provider_client(account)
    }

    fn accounts(&self) -> Result<Vec<Account>, ProviderError> {
        self.0.with_db(accounts::list)
    }

    fn same_key(&self, row_id: &str, account: &Account) -> Result<bool, ProviderError> {
        self.0.same_key(row_id, account)
    }

    fn follow_endpoint(
        &self,
        row: &LedgerInstance,
        remote: &RemoteInstance,
    ) -> Result<(), ProviderError> {
        self.0.follow_endpoint(row, remote)
    }
}

/// What the rent state machine asks of the facade: the reconcile, the SSH port, the saved host
/// and the key login, with the rent's key and SSH environment.
struct RentSteps<'a> {
    app: &'a App,
    key: &'a LoginKey,
    env: &'a SshEnv,
    cancel: &'a CancelToken,
}

impl RentHost for RentSteps<'_> {
    fn reconcile(&self, account: &Account, client: &dyn Provider) -> Result<(), ProviderError> {
        Reconciler {
            store: &self.app.store,
            clock: self.app.clock.as_ref(),
            host: &ProviderSteps(self.app),
            foreign: &self.app.foreign_seen,
        }
        .account(account, client, &mut ReconcileReport::default())
        .map(|_| ())
    }

    fn ssh_reachable(&self, host: &str, port: u16) -> bool {
        std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .ok()
            .and_then(|mut a| a.next())
            .is_some_and(|a| {
                std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(5)).is_ok()
            })
    }

    fn save_host(&self, id: &str, spec: HostSpec) -> Result<(), ProviderError> {
        self.app
            .save_rented_host(id, spec, self.key, self.env, self.cancel)
    }

    fn install_key_with_password(&self, id: &str, password: &Secret) -> Result<(), ProviderError> {
        let req = crate::app::hosts::KeyInstall {
            password,
            key: self.key,
            // A container's sshd config is reset on restart: password logins are left as the
            // provider set them.
            disable_password_login: false,
        };
        self.app
            .host_install_key(id, &req, self.env, &NoProgress, self.cancel)?;
        Ok(())
    }

    fn key_login(&self, id: &str) -> Result<Option<String>, ProviderError> {
        let check =
            self.app
                .host_check_with_key(id, self.env, self.key, &NoProgress, self.cancel)?;
        Ok(if check.key_login_ok {
            None
        } else {
            Some(
                check
                    .key_login_problem
                    .unwrap_or_else(|| "key login refused".to_string()),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::infra::clock::FixedClock;
    use crate::infra::paths::Paths;
    use crate::providers::ledger::Intent;

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
