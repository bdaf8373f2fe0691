//! The reconcile: the ledger's rows against what each connected account lists. When is a machine
//! gone? A listing can lag a create, and one "gone" read is not the provider's word: a row the
//! listing misses is read directly with the account's own key and closed only when a second read
//! later agrees ([`ledger::gone_read`]); a row without a provider id (an intent, an unclear
//! create) only when its label stays unlisted for its grace period; a row made with another key
//! is never closed on what this key does not see. A started machine's saved host follows its new
//! endpoint, and the machines gpurent did not start are remembered ([`foreign::merge`]).

use std::sync::Mutex;

use crate::infra::clock::Clock;
use crate::infra::ipc::Coded;
use crate::infra::store::Store;
use crate::providers::accounts::Account;
use crate::providers::foreign::{self, ForeignSeen};
use crate::providers::ledger::{
    self, AccountFailure, EventSource, LedgerInstance, LedgerState, ReconcileReport,
};
use crate::providers::{Provider, ProviderError, RemoteInstance};

/// An intent row older than this with no instance of its label is closed as `create_failed`.
pub const INTENT_GRACE_MS: i64 = 10 * 60 * 1000;

/// What a reconcile asks of the facade, outside the ledger.
pub trait ReconcileHost {
    /// The account's client, with the key it holds.
    fn client(&self, account: &Account) -> Result<Box<dyn Provider>, ProviderError>;
    /// The connected accounts.
    fn accounts(&self) -> Result<Vec<Account>, ProviderError>;
    /// Whether a row may be closed on what `account`'s key does not see.
    fn same_key(&self, row_id: &str, account: &Account) -> Result<bool, ProviderError>;
    /// A running machine's saved host follows the SSH endpoint the provider reports.
    fn follow_endpoint(
        &self,
        row: &LedgerInstance,
        remote: &RemoteInstance,
    ) -> Result<(), ProviderError>;
}

/// One reconcile's world: the ledger's store (locked per step, never across a provider call),
/// the injected clock, the facade's [`ReconcileHost`], and the machines gpurent did not start as
/// the reconciles saw them (memory only).
pub struct Reconciler<'a> {
    pub store: &'a Mutex<Store>,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn ReconcileHost,
    pub foreign: &'a Mutex<Vec<ForeignSeen>>,
}

impl std::fmt::Debug for Reconciler<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconciler").finish_non_exhaustive()
    }
}

impl Reconciler<'_> {
    fn db<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        crate::infra::store::locked(self.store, |s| f(s.conn()))
    }

    /// Reconcile one account's ledger rows with its provider's listing, asked with `client` (the
    /// account's own key); returns the listing.
    pub fn account(
        &self,
        account: &Account,
        client: &dyn Provider,
        report: &mut ReconcileReport,
    ) -> Result<Vec<RemoteInstance>, ProviderError> {
        let list = client.list()?;
        let now = self.clock.now_unix_ms();
        let missing =
            self.db(|c| ledger::reconcile(c, account.provider, &account.name, &list, now, report))?;
        for m in missing {
            // Made with another key (the account's key was changed, or it is another provider
            // account): what this key does not see says nothing about the machine.
            if !self.host.same_key(&m.ledger_id, account)? {
                continue;
            }
            let closed = match &m.provider_instance_id {
                // A listing can lag a create, and one "gone" read is not the provider's word:
                // a direct read with this account's key, confirmed by a second one later.
                Some(pid) => match client.get(pid)? {
                    Some(r) => {
                        self.db(|c| {
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
                    None => self.db(|c| {
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
                    self.db(|c| {
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
    pub fn all(&self) -> Result<(ReconcileReport, Vec<RemoteInstance>), ProviderError> {
        let mut report = ReconcileReport::default();
        let mut seen = vec![];
        let mut answered = vec![];
        for a in self.host.accounts()? {
            let r = self
                .host
                .client(&a)
                .and_then(|c| self.account(&a, c.as_ref(), &mut report));
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
        // A machine started again may be at a new address or port: its saved host follows.
        let rows = self.db(ledger::list)?;
        for r in &seen {
            if let Some(row) = rows.iter().find(|l| {
                l.provider == r.provider && l.provider_instance_id.as_deref() == Some(&r.id)
            }) {
                self.host.follow_endpoint(row, r)?;
            }
        }
        let now = self.clock.now_unix_ms();
        if let Ok(mut f) = self.foreign.lock() {
            let accounts: Vec<String> = self.host.accounts()?.into_iter().map(|a| a.name).collect();
            let mut merged = foreign::merge(&f, &report.foreign, &answered, now);
            // An account removed since is no longer asked: what it listed is not shown.
            merged.retain(|m| accounts.contains(&m.foreign.account));
            *f = merged;
        }
        Ok((report, seen))
    }
}
