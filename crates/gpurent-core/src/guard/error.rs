//! The guard's outcomes, each with a stable code.

use crate::error::{Coded, CoreError};
use crate::remote::RemoteError;

use super::ActionKind;

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// Stop/release through the provider is not wired yet for this host (pasted hosts never have
    /// it): `poweroff` or a command of the user's is what the guard can do here.
    #[error("the guard cannot {action:?} this machine through its provider yet; use --action poweroff or --action command")]
    ProviderActionUnavailable { action: ActionKind },
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
            GuardError::ProviderActionUnavailable { .. } => "guard_provider_action_unavailable",
            GuardError::PoweroffUnavailable { .. } => "guard_poweroff_unavailable",
            GuardError::InstallFailed { .. } => "guard_install_failed",
            GuardError::NotInstalled(_) => "guard_not_installed",
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            GuardError::Remote(e) => e.detail(),
            GuardError::InstallFailed { output, .. } => Some(output.clone()),
            GuardError::PoweroffUnavailable { reason } => Some(reason.clone()),
            _ => None,
        }
    }
}
