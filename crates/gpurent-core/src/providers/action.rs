//! Stop, start or release a rented machine, confirmed against the provider's answer: a closed row
//! whose machine still bills is reopened first; nothing is sent without the user's yes (the money
//! in words); the guard's full key leaves the machine before a stop or release and goes back when
//! the provider refused; the state is read back after the call and the ledger records what the
//! provider says — one gone read is not the provider's word (invariant 3), and a key that did not
//! make the row concludes nothing. [`Actor::act`] runs it over the ledger's store, the clock, the
//! facade's [`ActionHost`] and the guard's [`GuardKey`].

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::clock::Clock;
use crate::infra::store::Store;
use crate::providers::accounts;
use crate::providers::ledger::{self, EventSource, LedgerInstance, LedgerState};
use crate::providers::reconcile::ReconcileHost;
use crate::providers::{ProviderError, RemoteInstance, RemoteState};

/// What the user asks of a rented machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Stop,
    Start,
    /// Terminate: the machine and its disk are deleted.
    Release,
}

impl Action {
    /// The CLI's and the app's word for it (`stop`, `start`, `release`).
    pub fn parse(word: &str) -> Result<Action, ProviderError> {
        match word {
            "stop" => Ok(Action::Stop),
            "start" => Ok(Action::Start),
            "release" => Ok(Action::Release),
            _ => Err(ProviderError::Core(crate::CoreError::invalid(
                "action",
                "stop, start or release",
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Stop => "stop",
            Action::Start => "start",
            Action::Release => "release",
        }
    }

    /// Whether what the provider shows now (`None`: it no longer lists the machine) is this
    /// action done.
    pub fn took_effect(self, after: Option<&RemoteInstance>) -> bool {
        match self {
            Action::Stop => matches!(
                after.map(|r| r.state),
                Some(RemoteState::Stopped | RemoteState::Stopping)
            ),
            Action::Start => matches!(
                after.map(|r| r.state),
                Some(RemoteState::Running | RemoteState::Starting | RemoteState::Provisioning)
            ),
            Action::Release => after.is_none_or(|r| {
                matches!(r.state, RemoteState::Terminated | RemoteState::Terminating)
            }),
        }
    }
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

/// What an action asks of the facade, outside the providers' domain: what a reconcile asks (the
/// account's client, the same-key rule, the endpoint to follow), and the reopen of a closed row.
pub trait ActionHost: ReconcileHost {
    /// A closed row whose machine the provider (asked with the row's account) shows alive,
    /// reopened; `None` when it is gone.
    fn reopen_if_alive(
        &self,
        row: &LedgerInstance,
    ) -> Result<Option<LedgerInstance>, ProviderError>;
}

/// The account's full key a guard may hold on the machine (the guard's facade implements it).
pub trait GuardKey {
    /// Before a stop or release of the machine on saved host `label`: take the key off when its
    /// guard holds it. `Some(why)` when it could not be (it may remain on the disk); never an
    /// error — the stop or release goes on (money first).
    fn take_off(&self, label: &str) -> Option<String>;
    /// The provider refused the stop or release: put back what [`GuardKey::take_off`] took, so
    /// the guard can still act (nothing when nothing was taken).
    fn put_back(&self, account: &str);
}

/// What an action did: the ledger id, what the provider shows after it, and why the guard's key
/// may remain on the machine.
#[derive(Debug)]
pub struct Done {
    pub id: String,
    pub after: Option<RemoteInstance>,
    pub key_left: Option<String>,
}

/// One action's world: the ledger's store (locked per step, never across a provider call), the
/// injected clock, the facade's [`ActionHost`] and the guard's [`GuardKey`].
pub struct Actor<'a> {
    pub store: &'a Mutex<Store>,
    pub clock: &'a dyn Clock,
    pub host: &'a dyn ActionHost,
    pub key: &'a dyn GuardKey,
}

impl std::fmt::Debug for Actor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Actor").finish_non_exhaustive()
    }
}

impl Actor<'_> {
    fn db<T>(
        &self,
        f: impl FnOnce(&rusqlite::Connection) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        crate::infra::store::locked(self.store, |s| f(s.conn()))
    }

    /// `act` on the ledger row `row` (see the module). Without `yes`: `confirmation_required`
    /// with the money in words ([`money`]).
    pub fn act(&self, row: LedgerInstance, act: Action, yes: bool) -> Result<Done, ProviderError> {
        let row = if row.state.is_terminal() {
            // A closed row must not hide a machine that bills: ask the provider (with the row's
            // own account) and reopen the row when it shows the machine alive.
            self.host
                .reopen_if_alive(&row)?
                .ok_or_else(|| ProviderError::WrongState {
                    id: row.id.clone(),
                    state: row.state.as_str().into(),
                    action: act.as_str(),
                })?
        } else {
            row
        };
        let Some(pid) = row.provider_instance_id.clone() else {
            return Err(ProviderError::WrongState {
                id: row.id,
                state: row.state.as_str().into(),
                action: act.as_str(),
            });
        };
        if !yes {
            let m = money(&row, act.as_str());
            return Err(ProviderError::ConfirmationRequired {
                summary: serde_json::to_string(&m).unwrap_or_default(),
            });
        }
        let account = self.db(|c| accounts::get(c, &row.account))?;
        let client = self.host.client(&account)?;
        // A guard's full key leaves the machine before it stops (its disk stays readable).
        let key_left = match (act, row.host_label.as_deref()) {
            (Action::Stop | Action::Release, Some(label)) => self.key.take_off(label),
            _ => None,
        };
        let now = self.clock.now_unix_ms();
        let sent = match act {
            Action::Stop => client.stop(&pid),
            Action::Start => client.start(&pid),
            Action::Release => client.terminate(&pid),
        };
        // Read back: the ledger records what the provider says, not what was hoped.
        let after = match sent {
            Ok(()) => client.get(&pid)?,
            Err(e) => {
                // An answer that is not a clear refusal (a 5xx, a timeout) may have been lost
                // after the provider acted: read back, and go on when it shows the action done.
                let read = if e.is_clear_refusal() {
                    None
                } else {
                    client.get(&pid).ok()
                };
                match read {
                    Some(Some(r)) if act.took_effect(Some(&r)) => Some(r),
                    // Not there after a release whose answer was lost: one read is not the
                    // provider's word (invariant 3) — noted with this row's own key, and a
                    // second read some seconds later (the reconcile, a retried release) closes
                    // the row.
                    Some(None)
                        if act == Action::Release && self.host.same_key(&row.id, &account)? =>
                    {
                        self.db(|c| {
                            ledger::gone_read(
                                c,
                                &row.id,
                                LedgerState::Terminated,
                                EventSource::Provider,
                                "gone after a release whose answer was lost",
                                ledger::CREATE_LAG_MS,
                                now,
                            )
                        })?;
                        return Err(e);
                    }
                    _ => {
                        self.key.put_back(&row.account);
                        return Err(e);
                    }
                }
            }
        };
        if after.is_none() && !self.host.same_key(&row.id, &account)? {
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
            None if act == Action::Release => {
                self.db(|c| {
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
                self.db(|c| {
                    ledger::gone_read(
                        c,
                        &row.id,
                        LedgerState::Terminated,
                        EventSource::Provider,
                        &format!("gone after {}", act.as_str()),
                        ledger::CREATE_LAG_MS,
                        now,
                    )
                })?;
            }
            Some(r) => {
                self.db(|c| {
                    ledger::seen(c, &row.id, now)?;
                    ledger::record(
                        c,
                        &row.id,
                        LedgerState::from_remote(r.state),
                        EventSource::Provider,
                        Some(&format!("after {}: {}", act.as_str(), r.raw_status)),
                        now,
                    )
                })?;
            }
        }
        if let Some(r) = after.as_ref().filter(|_| act == Action::Start) {
            self.host.follow_endpoint(&row, r)?;
        }
        let raw = after
            .as_ref()
            .map_or_else(|| "gone".to_string(), |r| r.raw_status.clone());
        if !act.took_effect(after.as_ref()) {
            return Err(ProviderError::NotConfirmed {
                provider: row.provider,
                state: raw,
            });
        }
        Ok(Done {
            id: row.id,
            after,
            key_left,
        })
    }
}

/// What an action (`stop`, `start`, `release`) costs or saves, for the confirm step.
pub fn money(row: &LedgerInstance, action: &str) -> MoneyNote {
    let storage = row
        .storage_usd_per_gb_month
        .filter(|_| row.provider.spec().stopped_bills_storage)
        .map(|p| p * f64::from(row.disk_gb));
    MoneyNote {
        action: action.to_string(),
        effect: match action {
            // What a stop does to the disk is the provider's fact (RunPod's container disk is
            // "ephemeral, wiped on restart": a stopped pod loses what is on it).
            "stop" => row.provider.spec().stop.money_effect(),
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
    use super::*;
    use crate::providers::ProviderKind;

    fn listed(state: RemoteState) -> RemoteInstance {
        RemoteInstance {
            provider: ProviderKind::Vast,
            id: "1".into(),
            label: None,
            state,
            raw_status: String::new(),
            gpu: None,
            gpu_count: None,
            price_per_hour_usd: None,
            ssh: None,
            host_cuda: None,
        }
    }

    #[test]
    fn the_words_are_the_clis_and_nothing_else_is_an_action() {
        for a in [Action::Stop, Action::Start, Action::Release] {
            assert_eq!(Action::parse(a.as_str()).expect("word"), a);
        }
        let e = Action::parse("pause").expect_err("not an action");
        assert!(e.to_string().contains("stop, start or release"), "{e}");
    }

    #[test]
    fn an_action_took_effect_only_when_the_provider_shows_it() {
        use RemoteState::*;
        let done = |a: Action, s: Option<RemoteState>| a.took_effect(s.map(listed).as_ref());
        assert!(done(Action::Stop, Some(Stopping)) && done(Action::Stop, Some(Stopped)));
        assert!(!done(Action::Stop, Some(Running)) && !done(Action::Stop, None));
        assert!(done(Action::Start, Some(Provisioning)) && done(Action::Start, Some(Running)));
        assert!(!done(Action::Start, Some(Stopped)) && !done(Action::Start, None));
        // Gone is a release done; a machine still running is not.
        assert!(done(Action::Release, None) && done(Action::Release, Some(Terminating)));
        assert!(!done(Action::Release, Some(Running)));
    }
}
