//! The guard's outcomes, each with a stable code.

use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::remote::RemoteError;

use super::ActionKind;

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// Reading the ledger or the account's key for a provider action.
    #[error(transparent)]
    Provider(#[from] Box<crate::providers::ProviderError>),
    /// Stop/release through the provider is impossible for this host: a pasted host (no provider
    /// machine in the ledger), or the provider cannot do it (Lambda cannot stop). `poweroff` or a
    /// command of the user's is what the guard can do here.
    #[error("the guard cannot {action:?} this machine through a provider: {reason}; use --action poweroff or --action command")]
    ProviderActionUnavailable { action: ActionKind, reason: String },
    /// The machine has no credential narrower than the account's full key (or its instance key
    /// names another instance), and the user did not consent to the full key on the machine.
    #[error("the guard on this {provider} machine has no credential of its own: {reason}")]
    ProviderCredentialUnavailable {
        provider: crate::providers::ProviderKind,
        reason: String,
    },
    /// Neither curl nor a wget that can send PUT/DELETE (`--method`) is on the host: the guard
    /// cannot call the provider, so it is not installed with that action.
    #[error("the host has no curl{} to call the provider with; install curl or use --action poweroff", if *wget_without_method { " (its wget cannot send PUT/DELETE)" } else { " or wget" })]
    HttpToolMissing { wget_without_method: bool },
    /// `poweroff` can't be run by the guard on this host.
    #[error("the guard cannot power this machine off: {reason}")]
    PoweroffUnavailable { reason: String },
    /// Installing or starting the guard on the host failed.
    #[error("the guard could not be installed: {step} failed")]
    InstallFailed { step: String, output: String },
    /// No guard was installed on this host by gpurent.
    #[error("no guard is set on host '{0}'")]
    NotInstalled(String),
}

impl GuardError {
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        GuardError::Remote(RemoteError::invalid(field, reason))
    }
}

impl From<CoreError> for GuardError {
    fn from(e: CoreError) -> Self {
        GuardError::Remote(RemoteError::Core(e))
    }
}

impl From<rusqlite::Error> for GuardError {
    fn from(e: rusqlite::Error) -> Self {
        GuardError::from(CoreError::Database(e))
    }
}

impl Coded for GuardError {
    fn code(&self) -> &'static str {
        match self {
            GuardError::Remote(e) => e.code(),
            GuardError::Provider(e) => e.code(),
            GuardError::ProviderActionUnavailable { .. } => "guard_provider_action_unavailable",
            GuardError::ProviderCredentialUnavailable { .. } => {
                "guard_provider_credential_unavailable"
            }
            GuardError::HttpToolMissing { .. } => "guard_http_tool_missing",
            GuardError::PoweroffUnavailable { .. } => "guard_poweroff_unavailable",
            GuardError::InstallFailed { .. } => "guard_install_failed",
            GuardError::NotInstalled(_) => "guard_not_installed",
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            GuardError::Remote(e) => e.detail(),
            GuardError::Provider(e) => e.detail(),
            GuardError::InstallFailed { output, .. } => Some(output.clone()),
            GuardError::PoweroffUnavailable { reason } => Some(reason.clone()),
            GuardError::ProviderActionUnavailable { reason, .. } => Some(reason.clone()),
            GuardError::ProviderCredentialUnavailable { reason, .. } => Some(reason.clone()),
            _ => None,
        }
    }

    /// The wrapped SSH/key errors keep their facts (the key that needs its passphrase, a host
    /// key's fingerprint): without them the app could not ask for the passphrase and retry.
    fn data(&self) -> Option<crate::infra::ipc::ErrorData> {
        match self {
            GuardError::Remote(e) => e.data(),
            GuardError::Provider(e) => e.data(),
            _ => None,
        }
    }
}
