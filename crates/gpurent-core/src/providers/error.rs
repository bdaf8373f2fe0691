//! [`ProviderError`]: what can go wrong talking to a provider, as outcomes the UI branches on.
//! Each provider module maps its own error shape (RunPod problem+json, Vast `{error, msg}` /
//! `{detail}`, Lambda `{error: {code, message}}`) onto these; codes are added, never renamed.

use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::keys::KeyError;
use crate::remote::error::RemoteError;

use super::ProviderKind;

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error(
        "{provider} rejected the API key; check it or create a new one in the provider's console"
    )]
    AuthRejected {
        provider: ProviderKind,
        detail: String,
    },
    #[error("this {provider} offer is no longer available; list offers again")]
    OfferGone {
        provider: ProviderKind,
        offer_id: String,
    },
    #[error("{provider} has no capacity for this machine right now; try another offer or region")]
    InsufficientCapacity {
        provider: ProviderKind,
        detail: String,
    },
    #[error("your {provider} account reached a quota; ask the provider to raise it")]
    QuotaExceeded {
        provider: ProviderKind,
        detail: String,
    },
    #[error("{provider} asks gpurent to slow down{}", .retry_after_s.map(|s| format!("; try again in {s} s")).unwrap_or_default())]
    RateLimited {
        provider: ProviderKind,
        retry_after_s: Option<u64>,
    },
    #[error("{provider} answers this account only after its real-name (实名) verification; verify it in the provider's console, then try again")]
    AccountNotVerified {
        provider: ProviderKind,
        detail: String,
    },
    #[error("your {provider} balance is too low for this; add credit in the provider's console")]
    InsufficientBalance {
        provider: ProviderKind,
        detail: String,
    },
    #[error("{provider} is having trouble (its API answered {status}); try again later")]
    ProviderOutage {
        provider: ProviderKind,
        status: u16,
        detail: String,
    },
    #[error("{provider} could not be reached")]
    Unreachable {
        provider: ProviderKind,
        detail: String,
    },
    #[error("{provider} refused the request ({status})")]
    RequestRejected {
        provider: ProviderKind,
        status: u16,
        detail: String,
    },
    #[error("the answer of {provider} could not be understood; nothing was assumed from it")]
    ListingUnparseable {
        provider: ProviderKind,
        detail: String,
    },
    #[error("{provider} has no instance '{id}'")]
    InstanceNotFound { provider: ProviderKind, id: String },
    #[error("{provider} cannot {action} an instance")]
    Unsupported {
        provider: ProviderKind,
        action: &'static str,
    },
    #[error("the create request to {provider} was sent but its answer was lost; gpurent will find the machine by its label before anything else is created")]
    CreateOutcomeUnknown {
        provider: ProviderKind,
        detail: String,
    },
    #[error("your earlier rent did make a machine: {id} ({provider_instance_id}) at {sign}{price_per_hour_usd}/h, and it bills; nothing new was created — use it, or release it: gpurent release {id} --yes", sign = .provider.spec().currency.symbol())]
    EarlierCreateFound {
        provider: ProviderKind,
        id: String,
        provider_instance_id: String,
        price_per_hour_usd: f64,
    },
    #[error("no {provider} account is connected; add one with its API key")]
    NotConnected { provider: ProviderKind },
    #[error("there is no connected account named '{0}'")]
    UnknownAccount(String),
    #[error("account '{account}' still has machines that may bill ({ids}); release them first (gpurent release ID --yes), then remove the account")]
    AccountHasMachines { account: String, ids: String },
    #[error("an account named '{0}' is already connected")]
    AccountExists(String),
    #[error("there is no instance '{0}' in the ledger")]
    UnknownInstance(String),
    #[error("instance {id} is {state}; it cannot be {action}")]
    WrongState {
        id: String,
        state: String,
        action: &'static str,
    },
    #[error("the machine did not become ready within {timeout_s} s; it still bills — release it or wait")]
    NotReady {
        id: String,
        timeout_s: u64,
        last_state: String,
    },
    #[error("the machine {id} reports '{state}' at {provider} and will not start; it still bills: gpurent release {id} --yes")]
    MachineFailed {
        provider: ProviderKind,
        id: String,
        state: String,
    },
    /// A rent that failed after the machine was made: the cause keeps its code; the machine
    /// still bills and is named (`ErrorData::still_billing`).
    #[error("{source} — the machine {id} still bills: gpurent release {id} --yes")]
    StillBilling {
        id: String,
        source: Box<ProviderError>,
    },
    #[error("{provider} now asks {sign}{price_per_hour_usd}/h, more than the {sign}{max_price_usd}/h you confirmed; nothing was created", sign = .provider.spec().currency.symbol())]
    PriceRose {
        provider: ProviderKind,
        price_per_hour_usd: f64,
        max_price_usd: f64,
    },
    #[error("{provider} answered, but the instance is still {state}")]
    NotConfirmed {
        provider: ProviderKind,
        state: String,
    },
    #[error("this asks for confirmation; pass --yes after reading what it costs")]
    ConfirmationRequired { summary: String },
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl From<rusqlite::Error> for ProviderError {
    fn from(e: rusqlite::Error) -> Self {
        ProviderError::Core(CoreError::Database(e))
    }
}

impl ProviderError {
    /// Whether a read may be tried again after this (rate limits, outages, lost connections).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::ProviderOutage { .. }
                | ProviderError::Unreachable { .. }
        )
    }
}

impl ProviderError {
    /// Whether a non-2xx answer to a create says clearly that nothing was made (a refusal:
    /// the key, the offer, capacity, quota, money, a rate limit, a malformed request). Anything
    /// else — a 5xx, a 408, an answer gpurent cannot read — may have made a machine.
    pub fn is_clear_refusal(&self) -> bool {
        match self {
            ProviderError::AuthRejected { .. }
            | ProviderError::OfferGone { .. }
            | ProviderError::InsufficientCapacity { .. }
            | ProviderError::QuotaExceeded { .. }
            | ProviderError::RateLimited { .. }
            | ProviderError::AccountNotVerified { .. }
            | ProviderError::InsufficientBalance { .. } => true,
            ProviderError::RequestRejected { status, .. } => {
                (400..500).contains(status) && *status != 408
            }
            _ => false,
        }
    }
}

impl Coded for ProviderError {
    fn code(&self) -> &'static str {
        match self {
            ProviderError::AuthRejected { .. } => "auth_rejected",
            ProviderError::OfferGone { .. } => "offer_gone",
            ProviderError::InsufficientCapacity { .. } => "insufficient_capacity",
            ProviderError::QuotaExceeded { .. } => "quota_exceeded",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::InsufficientBalance { .. } => "insufficient_balance",
            ProviderError::AccountNotVerified { .. } => "account_not_verified",
            ProviderError::ProviderOutage { .. } => "provider_outage",
            ProviderError::Unreachable { .. } => "provider_unreachable",
            ProviderError::RequestRejected { .. } => "request_rejected",
            ProviderError::ListingUnparseable { .. } => "listing_unparseable",
            ProviderError::InstanceNotFound { .. } => "instance_not_found",
            ProviderError::Unsupported { .. } => "action_unsupported",
            ProviderError::CreateOutcomeUnknown { .. } => "create_outcome_unknown",
            ProviderError::EarlierCreateFound { .. } => "earlier_create_found",
            ProviderError::NotConnected { .. } => "provider_not_connected",
            ProviderError::UnknownAccount(_) => "unknown_account",
            ProviderError::AccountExists(_) => "account_exists",
            ProviderError::AccountHasMachines { .. } => "account_has_machines",
            ProviderError::UnknownInstance(_) => "unknown_instance",
            ProviderError::WrongState { .. } => "wrong_state",
            ProviderError::NotReady { .. } => "not_ready",
            ProviderError::NotConfirmed { .. } => "not_confirmed",
            ProviderError::MachineFailed { .. } => "machine_failed",
            ProviderError::PriceRose { .. } => "price_rose",
            ProviderError::StillBilling { source, .. } => source.code(),
            ProviderError::ConfirmationRequired { .. } => "confirmation_required",
            ProviderError::Key(e) => e.code(),
            ProviderError::Remote(e) => e.code(),
            ProviderError::Core(e) => e.code(),
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            ProviderError::AuthRejected { detail, .. }
            | ProviderError::InsufficientCapacity { detail, .. }
            | ProviderError::QuotaExceeded { detail, .. }
            | ProviderError::InsufficientBalance { detail, .. }
            | ProviderError::AccountNotVerified { detail, .. }
            | ProviderError::ProviderOutage { detail, .. }
            | ProviderError::Unreachable { detail, .. }
            | ProviderError::RequestRejected { detail, .. }
            | ProviderError::ListingUnparseable { detail, .. }
            | ProviderError::CreateOutcomeUnknown { detail, .. } => Some(detail.clone()),
            ProviderError::RateLimited { retry_after_s, .. } => {
                retry_after_s.map(|s| format!("retry_after_s={s}"))
            }
            ProviderError::NotReady { last_state, .. } => Some(format!("last state: {last_state}")),
            ProviderError::EarlierCreateFound {
                provider,
                id,
                provider_instance_id,
                price_per_hour_usd,
            } => Some(
                serde_json::json!({
                    "id": id,
                    "provider_instance_id": provider_instance_id,
                    "price_per_hour_usd": price_per_hour_usd,
                    "currency": provider.spec().currency.code(),
                })
                .to_string(),
            ),
            ProviderError::ConfirmationRequired { summary } => Some(summary.clone()),
            ProviderError::MachineFailed { state, .. } => Some(state.clone()),
            ProviderError::PriceRose {
                provider,
                price_per_hour_usd,
                max_price_usd,
            } => {
                let sign = provider.spec().currency.symbol();
                Some(format!(
                    "{sign}{price_per_hour_usd}/h > {sign}{max_price_usd}/h"
                ))
            }
            ProviderError::StillBilling { source, .. } => source.detail(),
            ProviderError::AccountHasMachines { ids, .. } => Some(ids.clone()),
            ProviderError::Key(e) => e.detail(),
            ProviderError::Remote(e) => e.detail(),
            ProviderError::Core(e) => e.detail(),
            _ => None,
        }
    }

    /// The wrapped key / SSH errors keep their facts (the key that needs its passphrase, a host
    /// key's fingerprint): without them the app could not ask for the passphrase during `rent`.
    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            ProviderError::Key(e) => e.data(),
            ProviderError::Remote(e) => e.data(),
            ProviderError::Core(e) => e.data(),
            ProviderError::StillBilling { id, source } => {
                let mut d = source.data().unwrap_or_default();
                d.still_billing = Some(id.clone());
                Some(d)
            }
            ProviderError::MachineFailed { id, .. } | ProviderError::NotReady { id, .. } => {
                Some(crate::infra::ipc::ErrorData {
                    still_billing: Some(id.clone()),
                    ..Default::default()
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_key_during_rent_names_the_key_for_the_prompt() {
        let e = ProviderError::Remote(RemoteError::Key(KeyError::PassphraseRequired {
            label: Some("laptop".into()),
        }));
        assert_eq!(e.code(), "passphrase_required");
        let data = e.data().expect("the key is named");
        assert_eq!(data.key_label.as_deref(), Some("laptop"));
        assert!(ProviderError::UnknownAccount("x".into()).data().is_none());
    }

    /// A price in a money error is in the provider's currency: ¥ for AutoDL, $ for the others
    /// (before: always "$", so a yuan price read as dollars).
    #[test]
    fn money_errors_say_the_providers_currency() {
        let e = ProviderError::PriceRose {
            provider: ProviderKind::Autodl,
            price_per_hour_usd: 2.5,
            max_price_usd: 1.97,
        };
        assert!(
            e.to_string().contains("¥2.5/h, more than the ¥1.97/h"),
            "{e}"
        );
        assert_eq!(e.detail().as_deref(), Some("¥2.5/h > ¥1.97/h"));
        let e = ProviderError::EarlierCreateFound {
            provider: ProviderKind::Runpod,
            id: "gpurent-1".into(),
            provider_instance_id: "pod1".into(),
            price_per_hour_usd: 0.44,
        };
        assert!(e.to_string().contains("at $0.44/h"), "{e}");
        assert!(e
            .detail()
            .unwrap_or_default()
            .contains("\"currency\":\"USD\""));
    }
}
