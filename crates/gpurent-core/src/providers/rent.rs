//! The rent state machine: intent row → key → one create → wait for running → SSH port → proven
//! key login → saved host, and every failure path between (an unclear create keeps its row open,
//! a machine in ERROR fails fast, a failure after the create says the machine still bills).
//!
//! It runs on an injected [`Clock`] (ledger times from its wall clock; deadlines, polls and
//! retry pauses from its monotonic half and its `sleep`) and reaches outside the providers'
//! domain only through [`RentHost`] (the reconcile, the SSH port, the saved host and the key
//! login), so the facade (`app/providers.rs`) only resolves the account and the key and calls
//! [`Renter::rent`]. The crash points ([`crash`]) are named here, where the steps are.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::cancel::CancelToken;
use crate::infra::clock::Clock;
use crate::infra::events::{Progress, ProgressSink};
use crate::infra::ipc::Coded;
use crate::infra::secret::Secret;
use crate::infra::store::Store;
use crate::providers::accounts::Account;
use crate::providers::ledger::{self, EventSource, Intent, LedgerInstance, LedgerState};
use crate::providers::spec::KeyAttach;
use crate::providers::{
    crash, images, CreateRequest, Provider, ProviderError, ProviderKind, RemoteInstance,
    RemoteState,
};
use crate::remote::hosts::HostSpec;

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

/// The ledger note that a key login was proven (the row is ready).
pub const READY_NOTE: &str = "ssh_ready";
/// The event detail prefix of a create whose answer was unclear (the row stays open).
pub const UNCLEAR_NOTE: &str = "create_outcome_unknown";
/// The note that an unclear create was resolved for the next rent (told, or not listed).
pub const RESOLVED_NOTE: &str = "unclear_create_resolved";
/// How long after an unclear create the next rent on that account waits for the listing to
/// show the machine before it creates anything new (the row itself stays open for 30 min).
pub const UNCLEAR_RESOLVE_MS: i64 = 15_000;
/// The disk of a new machine when the user does not say (every provider's
/// [`ProviderSpec::default_disk_gb`](crate::providers::ProviderSpec) today).
pub const DEFAULT_DISK_GB: u32 = 50;
/// The pause between two reads while waiting.
const POLL: Duration = Duration::from_millis(1000);

/// What the rent needs from outside the providers' domain (the facade implements it).
pub trait RentHost {
    /// Reconcile `account`'s ledger rows with the provider's listing, asked with the account's
    /// own key (an error is no answer).
    fn reconcile(&self, account: &Account, client: &dyn Provider) -> Result<(), ProviderError>;
    /// Whether the SSH port answers a TCP connect now.
    fn ssh_reachable(&self, host: &str, port: u16) -> bool;
    /// Save the machine as the host labelled `id`, pinning the host key it presents on this
    /// first contact (done already: nothing to do).
    fn save_host(&self, id: &str, spec: HostSpec) -> Result<(), ProviderError>;
    /// One key login on the saved host `id`: `Ok(None)` proven, `Ok(Some(problem))` not (yet).
    fn key_login(&self, id: &str) -> Result<Option<String>, ProviderError>;
    /// Log in to the saved host `id` once with the password the provider gave, install the
    /// rent's key there and prove a key login ([`KeyAttach::RootPassword`], AutoDL). The
    /// password is used for this one login and never stored.
    fn install_key_with_password(&self, id: &str, password: &Secret) -> Result<(), ProviderError>;
}

/// The key the machine is rented with (its public half and gpurent's name for it).
#[derive(Debug, Clone, Copy)]
pub struct RentKey<'a> {
    pub label: &'a str,
    pub public_line: &'a str,
}

/// A rent that got as far as it was asked: the ledger id, and the provider's view when the
/// machine was waited for.
#[derive(Debug, Clone, PartialEq)]
pub struct Rented {
    pub id: String,
    pub remote: Option<RemoteInstance>,
}

/// One rent's world: the ledger's store (locked only per step, never across a wait), the
/// injected clock, the account's client, the facade's [`RentHost`], progress and cancel.
pub struct Renter<'a> {
    pub store: &'a Mutex<Store>,
    pub clock: &'a dyn Clock,
    pub client: &'a dyn Provider,
    pub host: &'a dyn RentHost,
    pub progress: &'a dyn ProgressSink,
    pub cancel: &'a CancelToken,
}

impl std::fmt::Debug for Renter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renter")
            .field("provider", &self.client.kind())
            .finish_non_exhaustive()
    }
}

impl Renter<'_> {
    fn db<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        crate::infra::store::locked(self.store, |s| f(s.conn()))
    }

    fn now_ms(&self) -> i64 {
        self.clock.now_unix_ms()
    }

    /// Rent on `account` (whose key's identity is `key_id`): the unclear creates of the account
    /// resolved first, the offer read again (and refused above `max_price_usd`), the intent row,
    /// the key registration, one create, then (unless `no_wait`) the wait for the provider's
    /// running state, the SSH port and a proven key login; the machine becomes a saved host.
    /// A failure after the create names the machine that still bills ([`still_billing`]).
    pub fn rent(
        &self,
        req: &RentRequest,
        account: &Account,
        key_id: &str,
        key: RentKey<'_>,
    ) -> Result<Rented, ProviderError> {
        let step = crate::infra::events::steps(self.progress, Some(6));
        // One rent, one machine: an earlier create of this account whose answer was unclear is
        // resolved before anything new is created.
        self.resolve_unclear_creates(account)?;
        step("offer", 0);
        let disk_gb = req.disk_gb.unwrap_or(req.provider.spec().default_disk_gb);
        // Priced at the disk the create makes (Vast's price includes the disk's storage): the
        // price checked against the confirmed one is the price of the machine created.
        let offer = self
            .client
            .offer_at_disk(&req.offer_id, disk_gb, self.now_ms())?
            .ok_or_else(|| ProviderError::OfferGone {
                provider: req.provider,
                offer_id: req.offer_id.clone(),
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
        let now = self.now_ms();
        let id = self.db(|c| {
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
        let registration = match self.client.register_key(key.public_line, key.label) {
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
            public_key: key.public_line.to_string(),
            key_label: key.label.to_string(),
        };
        let pid = match self.client.create(&create, &registration) {
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
                self.db(|c| {
                    ledger::record(
                        c,
                        &id,
                        LedgerState::Unknown,
                        EventSource::Gpurent,
                        Some(&format!("{UNCLEAR_NOTE}: {e}")),
                        self.now_ms(),
                    )
                })?;
                let _ = self.host.reconcile(account, self.client);
                return Err(e);
            }
            Err(e) => {
                self.close_failed(&id, &e)?;
                return Err(e);
            }
        };
        crash::point("after_create_answer");
        self.db(|c| {
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
        self.after_create(req, &id, &pid, key, &step)
            .map_err(|e| still_billing(&id, e))
    }

    /// The rent after the provider made the machine: the key attached (Vast: retried with
    /// backoff), the wait for it to run (a machine in ERROR fails fast), the SSH port, the proven
    /// key login, the saved host. Every failure here leaves a machine that bills: the caller names
    /// it ([`still_billing`]).
    fn after_create(
        &self,
        req: &RentRequest,
        id: &str,
        pid: &str,
        key: RentKey<'_>,
        step: &dyn Fn(&str, u32),
    ) -> Result<Rented, ProviderError> {
        let (id, pid) = (id.to_string(), pid.to_string());
        // Where the provider takes the key per instance after the create (Vast), send it now.
        if req.provider.spec().key_attach == KeyAttach::AfterCreate {
            attach_key_retried(self.client, self.clock, &pid, key.public_line)?;
        }
        crash::point("after_key_attached");
        if req.no_wait {
            return Ok(Rented { id, remote: None });
        }
        let timeout = Duration::from_secs(
            req.ready_timeout_s
                .unwrap_or(req.provider.terms().ready_timeout_s),
        );
        let deadline = self.clock.monotonic() + timeout;
        let past_deadline = || self.clock.monotonic() > deadline;
        step("wait_running", 3);
        let mut first = true;
        let mut last_status: Option<String> = None;
        let remote = loop {
            if self.cancel.is_cancelled() {
                return Err(ProviderError::Core(crate::CoreError::Cancelled));
            }
            let read = self.client.get(&pid);
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
                    let closed = self.db(|c| {
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
                    if past_deadline() {
                        return Err(self.not_ready(&id, timeout, last.trim()));
                    }
                    self.clock.sleep(POLL);
                    continue;
                }
            };
            self.db(|c| ledger::seen(c, &id, self.now_ms()))?;
            self.db(|c| {
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
                self.progress.emit(Progress::Log {
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
                let _ = self.db(|c| {
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
            if past_deadline() {
                return Err(self.not_ready(&id, timeout, &r.raw_status));
            }
            self.clock.sleep(POLL);
        };
        crash::point("after_running");
        self.progress.emit(Progress::Log {
            line: format!("{} is running at the provider", id),
        });
        let ssh = remote
            .ssh
            .clone()
            .ok_or_else(|| self.not_ready(&id, timeout, "no ssh endpoint"))?;
        step("wait_ssh", 4);
        while !self.host.ssh_reachable(&ssh.host, ssh.port) {
            if past_deadline() || self.cancel.is_cancelled() {
                return Err(self.not_ready(&id, timeout, "ssh port not reachable"));
            }
            self.clock.sleep(POLL);
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
        self.host.save_host(&id, spec)?;
        crash::point("after_host_saved");
        if req.provider.spec().key_attach == KeyAttach::RootPassword {
            self.install_with_password(&id, &pid, timeout, &past_deadline)?;
        }
        while let Some(problem) = self.host.key_login(&id)? {
            if past_deadline() || self.cancel.is_cancelled() {
                return Err(self.not_ready(&id, timeout, &problem));
            }
            self.clock.sleep(POLL);
        }
        crash::point("after_login_proven");
        let now = self.now_ms();
        self.db(|c| {
            ledger::set_host_label(c, &id, &id, now)?;
            ledger::note(c, &id, EventSource::Gpurent, READY_NOTE, now)
        })?;
        crash::point("after_ready_recorded");
        Ok(Rented {
            id,
            remote: Some(remote),
        })
    }

    /// AutoDL: the key goes on with the root password the provider gives, once. The password is
    /// read from the provider's authenticated answer into a [`Secret`], used for one login and
    /// dropped (wiped); a key already there (a second run of this step) logs in without it.
    fn install_with_password(
        &self,
        id: &str,
        pid: &str,
        timeout: Duration,
        past_deadline: &dyn Fn() -> bool,
    ) -> Result<(), ProviderError> {
        if self.host.key_login(id)?.is_none() {
            return Ok(());
        }
        loop {
            let tried = match self.client.login_password(pid) {
                Ok(Some(pw)) => self
                    .host
                    .install_key_with_password(id, &pw)
                    .map_err(|e| e.to_string()),
                Ok(None) => Err("no root password yet".to_string()),
                Err(e) if e.is_transient() => Err(e.code().to_string()),
                Err(e) => return Err(e),
            };
            match tried {
                Ok(()) => {
                    let _ = self.db(|c| {
                        ledger::note(
                            c,
                            id,
                            EventSource::Gpurent,
                            "key_installed_with_password",
                            self.now_ms(),
                        )
                    });
                    return Ok(());
                }
                Err(problem) => {
                    if past_deadline() || self.cancel.is_cancelled() {
                        return Err(self.not_ready(id, timeout, &problem));
                    }
                    self.clock.sleep(POLL);
                }
            }
        }
    }

    /// Before a new create on `account`: every open row of it whose create answer was unclear
    /// is looked for in the provider's listing (by its label). Found → the user is told
    /// (`earlier_create_found`, its id and price) and nothing new is created; not found yet and
    /// younger than [`UNCLEAR_RESOLVE_MS`] → `create_outcome_unknown` (try again shortly);
    /// otherwise the rent goes ahead (the row stays open until the reconcile closes it).
    fn resolve_unclear_creates(&self, account: &Account) -> Result<(), ProviderError> {
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
        if self.db(pending)?.is_empty() {
            return Ok(());
        }
        // Asked with this account's own key; an error here is no answer: refuse to create.
        self.host.reconcile(account, self.client)?;
        let now = self.now_ms();
        for r in self.db(pending)? {
            if let Some(pid) = &r.provider_instance_id {
                self.db(|c| ledger::note(c, &r.id, EventSource::Gpurent, RESOLVED_NOTE, now))?;
                return Err(ProviderError::EarlierCreateFound {
                    provider: r.provider,
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
            self.db(|c| ledger::note(c, &r.id, EventSource::Gpurent, RESOLVED_NOTE, now))?;
        }
        Ok(())
    }

    fn not_ready(&self, id: &str, timeout: Duration, last: &str) -> ProviderError {
        let _ = self.db(|c| {
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
        self.db(|c| {
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
}

/// A rent that failed after the machine was made says that it still bills and how to release
/// it — unless the provider itself said it is gone, or the error already says so.
pub fn still_billing(id: &str, e: ProviderError) -> ProviderError {
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

/// A key attach after the create, retried after the pauses of the provider's
/// [`ProviderSpec::attach_retry_ms`](crate::providers::ProviderSpec) when it fails transiently
/// (Vast sends the key in a call of its own; a blip there must not leave a machine nobody can
/// log in to).
fn attach_key_retried(
    client: &dyn Provider,
    clock: &dyn Clock,
    pid: &str,
    public_key: &str,
) -> Result<(), ProviderError> {
    let mut tries = client.kind().spec().attach_retry_ms.iter();
    loop {
        match client.attach_key(pid, public_key) {
            Ok(()) => return Ok(()),
            Err(e) if e.is_transient() => match tries.next() {
                Some(ms) => clock.sleep(Duration::from_millis(*ms)),
                None => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

    use super::*;
    use crate::infra::events::NoProgress;
    use crate::providers::accounts::KeySource;
    use crate::providers::{KeyRegistration, OfferQuery, ProviderOffer, SshEndpoint};

    /// A clock whose waits take no real time: `sleep` moves both halves and is recorded.
    #[derive(Debug, Default)]
    struct VirtualClock {
        ms: AtomicI64,
        slept: Mutex<Vec<u64>>,
    }

    impl Clock for VirtualClock {
        fn now_unix_ms(&self) -> i64 {
            1_800_000_000_000 + self.ms.load(Ordering::SeqCst)
        }
        fn monotonic(&self) -> Duration {
            Duration::from_millis(self.ms.load(Ordering::SeqCst) as u64)
        }
        fn sleep(&self, d: Duration) {
            self.ms.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
            if let Ok(mut s) = self.slept.lock() {
                s.push(d.as_millis() as u64);
            }
        }
    }

    /// One offer, one machine: `get` answers from a script (the last answer repeats), and the
    /// key attach fails transiently `attach_failures` times.
    #[derive(Debug)]
    struct Scripted {
        reads: Mutex<VecDeque<RemoteState>>,
        attach_failures: AtomicU32,
        creates: AtomicU32,
    }

    impl Scripted {
        fn new(reads: Vec<RemoteState>, attach_failures: u32) -> Scripted {
            Scripted {
                reads: Mutex::new(reads.into()),
                attach_failures: AtomicU32::new(attach_failures),
                creates: AtomicU32::new(0),
            }
        }
    }

    impl Provider for Scripted {
        fn kind(&self) -> ProviderKind {
            ProviderKind::Vast
        }
        fn check_account(&self) -> Result<Option<String>, ProviderError> {
            Ok(None)
        }
        fn offers(&self, _: &OfferQuery, _: i64) -> Result<Vec<ProviderOffer>, ProviderError> {
            Ok(vec![crate::providers::tests::offer(
                "RTX 4090",
                1,
                Some(24.0),
                0.4,
            )])
        }
        fn register_key(&self, _: &str, _: &str) -> Result<KeyRegistration, ProviderError> {
            Ok(KeyRegistration::Account)
        }
        fn create(&self, _: &CreateRequest, _: &KeyRegistration) -> Result<String, ProviderError> {
            self.creates.fetch_add(1, Ordering::SeqCst);
            Ok("m1".into())
        }
        fn attach_key(&self, _: &str, _: &str) -> Result<(), ProviderError> {
            let left = self.attach_failures.load(Ordering::SeqCst);
            if left == 0 {
                return Ok(());
            }
            self.attach_failures.store(left - 1, Ordering::SeqCst);
            Err(ProviderError::ProviderOutage {
                provider: ProviderKind::Vast,
                status: 502,
                detail: "bad gateway".into(),
            })
        }
        fn get(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError> {
            let mut reads = self.reads.lock().unwrap_or_else(|p| p.into_inner());
            let state = if reads.len() > 1 {
                reads.pop_front()
            } else {
                reads.front().copied()
            }
            .unwrap_or(RemoteState::Unknown);
            Ok(Some(RemoteInstance {
                provider: ProviderKind::Vast,
                id: id.into(),
                label: None,
                state,
                raw_status: format!("{state:?}"),
                gpu: None,
                gpu_count: Some(1),
                price_per_hour_usd: Some(0.4),
                ssh: (state == RemoteState::Running).then(|| SshEndpoint {
                    host: "127.0.0.1".into(),
                    port: 2222,
                    user: "root".into(),
                }),
                host_cuda: None,
            }))
        }
        fn list(&self) -> Result<Vec<RemoteInstance>, ProviderError> {
            Ok(vec![])
        }
        fn stop(&self, _: &str) -> Result<(), ProviderError> {
            Ok(())
        }
        fn start(&self, _: &str) -> Result<(), ProviderError> {
            Ok(())
        }
        fn terminate(&self, _: &str) -> Result<(), ProviderError> {
            Ok(())
        }
    }

    /// SSH always answers and the key login is proven on the first try.
    struct OpenHost;

    impl RentHost for OpenHost {
        fn reconcile(&self, _: &Account, _: &dyn Provider) -> Result<(), ProviderError> {
            Ok(())
        }
        fn ssh_reachable(&self, _: &str, _: u16) -> bool {
            true
        }
        fn save_host(&self, _: &str, _: HostSpec) -> Result<(), ProviderError> {
            Ok(())
        }
        fn key_login(&self, _: &str) -> Result<Option<String>, ProviderError> {
            Ok(None)
        }
        fn install_key_with_password(&self, _: &str, _: &Secret) -> Result<(), ProviderError> {
            Ok(())
        }
    }

    fn rent(
        client: &Scripted,
        clock: &VirtualClock,
        timeout_s: u64,
    ) -> (Mutex<Store>, Result<Rented, ProviderError>) {
        let store = Mutex::new(Store::open_in_memory().expect("store"));
        let account = Account {
            name: "vast".into(),
            provider: ProviderKind::Vast,
            key_source: KeySource::Keychain,
            account_label: None,
            added_ms: None,
            checked_ms: None,
        };
        let req = RentRequest {
            provider: ProviderKind::Vast,
            offer_id: "1".into(),
            image: None,
            disk_gb: None,
            no_wait: false,
            ready_timeout_s: Some(timeout_s),
            account: None,
            max_price_usd: None,
        };
        let cancel = CancelToken::new();
        let out = Renter {
            store: &store,
            clock,
            client,
            host: &OpenHost,
            progress: &NoProgress,
            cancel: &cancel,
        }
        .rent(
            &req,
            &account,
            "kid",
            RentKey {
                label: "k",
                public_line: "ssh-ed25519 AAAA k",
            },
        );
        (store, out)
    }

    /// The waits run on the injected clock: ten minutes of "starting" pass without real time,
    /// the row's times are the clock's, and the machine ends ready.
    #[test]
    fn a_slow_start_is_waited_for_on_the_injected_clock() {
        let mut reads = vec![RemoteState::Provisioning; 600];
        reads.push(RemoteState::Running);
        let client = Scripted::new(reads, 0);
        let clock = VirtualClock::default();
        let real = std::time::Instant::now();
        let (store, out) = rent(&client, &clock, 20 * 60);
        let rented = out.expect("ready");
        assert!(real.elapsed() < Duration::from_secs(20), "no real waiting");
        assert_eq!(clock.monotonic(), Duration::from_secs(600));
        let guard = store.lock().expect("store");
        let row = ledger::get(guard.conn(), &rented.id)
            .expect("read")
            .expect("row");
        assert_eq!(row.state, LedgerState::Running);
        assert_eq!(row.updated_ms, clock.now_unix_ms());
        let events = ledger::events(guard.conn(), &rented.id).expect("events");
        assert!(events
            .iter()
            .any(|e| e.detail.as_deref() == Some(READY_NOTE)));
        assert_eq!(client.creates.load(Ordering::SeqCst), 1);
    }

    /// The deadline is the injected clock's: a machine that never runs is `not_ready` once the
    /// ready timeout has passed on it, and the row stays open (the machine may bill).
    #[test]
    fn the_ready_deadline_is_kept_on_the_injected_clock() {
        let client = Scripted::new(vec![RemoteState::Starting], 0);
        let clock = VirtualClock::default();
        let (store, out) = rent(&client, &clock, 1200);
        let e = out.expect_err("never ran");
        assert_eq!(e.code(), "not_ready", "{e:?}");
        let waited = clock.monotonic();
        assert!(
            waited > Duration::from_secs(1200) && waited <= Duration::from_secs(1202),
            "{waited:?}"
        );
        let guard = store.lock().expect("store");
        let rows = ledger::list(guard.conn()).expect("rows");
        assert!(!rows[0].state.is_terminal(), "{rows:?}");
    }

    /// Vast's key attach is retried after 1, 2 and 4 s on the clock; a fourth failure names the
    /// machine that still bills.
    #[test]
    fn the_key_attach_is_retried_on_the_clock_then_names_the_billing_machine() {
        let client = Scripted::new(vec![RemoteState::Running], 3);
        let clock = VirtualClock::default();
        rent(&client, &clock, 60)
            .1
            .expect("attached on the 4th try");
        assert_eq!(clock.slept.lock().expect("slept")[..3], [1000, 2000, 4000]);

        let client = Scripted::new(vec![RemoteState::Running], 4);
        let clock = VirtualClock::default();
        let e = rent(&client, &clock, 60).1.expect_err("attach failed");
        assert!(
            matches!(&e, ProviderError::StillBilling { .. }),
            "the error names the machine: {e:?}"
        );
        assert_eq!(client.creates.load(Ordering::SeqCst), 1);
    }
}
