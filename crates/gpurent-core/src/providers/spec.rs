//! Provider facts in one place: one static [`ProviderSpec`] per provider, declared at the top of
//! its module (`runpod::SPEC`, `vast::SPEC`, `lambda::SPEC`) and reached by
//! [`ProviderKind::spec`](super::ProviderKind::spec). Everything gpurent says or does that depends
//! on *which* provider — its name and environment variables, where its API is and how it is
//! authenticated, what its status words mean, what a stop does to the disk and the bill, how the
//! key reaches the machine, how calls are paced and retried, the disk gpurent creates, and the
//! calls a machine's own guard makes — reads this value instead of matching on the provider.
//!
//! What stays in a provider's module is how its API is spoken (request and answer shapes, error
//! bodies); what stays elsewhere by design is listed in ARCHITECTURE.md ("A new provider").

use super::{ProviderKind, RemoteState};
use crate::infra::currency::Currency;

/// How the API key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStyle {
    /// `Authorization: Bearer <key>` (RunPod, Vast, Lambda).
    Bearer,
    /// `Authorization: <key>` with no scheme word.
    Plain,
}

/// What a stop does to the machine's disk (and whether there is a stop at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopEffect {
    /// GPU billing stops and the disk gpurent created is wiped (RunPod's container disk is
    /// "ephemeral, wiped on restart").
    WipesDisk,
    /// GPU billing stops and the disk is kept (Vast).
    KeepsDisk,
    /// No stop: only terminate (Lambda).
    CannotStop,
}

impl StopEffect {
    /// The money word a stop confirmation shows (`MoneyNote.effect`).
    pub fn money_effect(self) -> &'static str {
        match self {
            StopEffect::WipesDisk => "gpu_billing_stops_disk_wiped",
            StopEffect::KeepsDisk | StopEffect::CannotStop => "gpu_billing_stops_disk_kept",
        }
    }
}

/// How the user's SSH key reaches a new machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAttach {
    /// Added to the account's key set before the create (RunPod, read-modify-write).
    AccountKeySet,
    /// Attached to the instance in a call of its own after the create (Vast).
    AfterCreate,
    /// Registered under a name and referenced by the launch (Lambda).
    NamedAtLaunch,
    /// The provider hands out a root password instead (AutoDL): gpurent installs the key with it
    /// once, over SSH, right after the machine runs, and never uses or keeps it again.
    RootPassword,
}

/// The meters of a provider machine's tariff ([`crate::billing::instance::tariff`]): what the
/// provider bills besides the compute rate gpurent recorded from the offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TariffShape {
    /// Compute only (Lambda, AutoDL).
    Compute,
    /// Compute, plus this disk meter of `data/billing-rules.csv` at its published rate for the
    /// row's disk (RunPod `container_disk`).
    ComputeAndDisk(&'static str),
    /// The offer's price already includes the storage of the disk (Vast `dph_total`): compute is
    /// the price less that storage, and storage bills on its own (while stopped too).
    PriceIncludesStorage,
}

/// One HTTP call a machine's own guard makes (`{id}` is replaced by the instance id; the path
/// is joined to the API base).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineCall {
    pub method: &'static str,
    pub path: &'static str,
    pub body: Option<&'static str>,
}

/// Everything gpurent knows about one provider that is not the shape of its API.
#[derive(Debug, Clone, Copy)]
pub struct ProviderSpec {
    pub kind: ProviderKind,
    /// The id in the CLI, the ledger, JSON and data files (`runpod`).
    pub id: &'static str,
    /// Further names `--provider` accepts.
    pub aliases: &'static [&'static str],
    /// The name in prose (`RunPod`).
    pub display: &'static str,
    /// The middle of `GPURENT_<X>_API_KEY` / `_API_URL` / `_SSH_USER` / `_SSH_PORT`.
    pub env_stem: &'static str,
    /// The production API base URL.
    pub api_base: &'static str,
    pub auth: AuthStyle,
    /// The provider's status words → gpurent's states (matched exactly; anything else is
    /// [`RemoteState::Unknown`]). Vast refines its `actual_status` word with `intended_status`.
    pub status_words: &'static [(&'static str, RemoteState)],
    pub stop: StopEffect,
    /// The disk the release checklist names as deleted (`container_disk`, `instance_disk`,
    /// `local_disk`).
    pub disk_kind: &'static str,
    /// Whether a stopped machine still bills the storage of the disk gpurent created.
    pub stopped_bills_storage: bool,
    pub key_attach: KeyAttach,
    /// The pauses before each retry of a key attach after the create that failed transiently
    /// (a blip there must not leave a machine nobody can log in to).
    pub attach_retry_ms: &'static [u64],
    /// Minimum milliseconds between two calls of the same endpoint group (pacing).
    pub min_intervals_ms: &'static [(&'static str, u64)],
    /// `per_second` or `per_minute`.
    pub billing: &'static str,
    /// How long a new machine may take to become ready (a proven key login).
    pub ready_timeout_s: u64,
    /// The disk gpurent creates when the user does not say (GB); the search prices offers with it
    /// where the provider's price depends on the disk (Vast `allocated_storage`).
    pub default_disk_gb: u32,
    /// The SSH login user / port when the provider's answer does not carry one.
    pub ssh_user: Option<&'static str>,
    pub ssh_port: Option<u16>,
    /// The variables the provider puts on its machines: the machine's own API key and its id
    /// (the guard's narrowest credential); `None` where it puts none.
    pub machine_env: Option<(&'static str, &'static str)>,
    /// The calls a machine's own guard makes to stop / release itself (`None`: no stop).
    pub guard_stop: Option<MachineCall>,
    pub guard_release: MachineCall,
    /// A 2xx answer to those calls counts as done only when its body (whitespace removed)
    /// contains this (AutoDL answers a refusal with HTTP 200 and a failure word: `"code":"Success"`
    /// is its only success); `None`: any 2xx that does not say `"success":false`.
    pub guard_ok: Option<&'static str>,
    /// The provider releases only a machine that is powered off (AutoDL: "在释放实例前请先关机实例"):
    /// the client powers it off first; a machine's own guard, which makes one call, cannot
    /// release it (its `--action release` is refused: `stop` it instead).
    pub release_needs_stop: bool,
    /// What every amount of this provider is in (offers, the ledger's rates, its own rates and
    /// its balance): never converted.
    pub currency: Currency,
    /// Whether the offer's price is the price the machine is rented at (`false`: the API gives
    /// no price before the create — AutoDL Pro; the offer shows a documented rate and the
    /// machine's own rate is read after the create).
    pub price_before_create: bool,
    pub tariff: TariffShape,
    /// Which field of the provider's answer its own rate per hour comes from.
    pub reported_rate_source: &'static str,
    /// Which field of which call the account balance comes from (`None`: no balance endpoint).
    pub balance_source: Option<&'static str>,
    /// The provider releases (and wipes) a machine left stopped this many days in a row
    /// (`data/platform-rules.csv`), where known.
    pub release_after_days_off: Option<u32>,
}

impl ProviderSpec {
    /// The state a status word means ([`RemoteState::Unknown`] for a word not in the table).
    pub fn state_of(&self, word: &str) -> RemoteState {
        self.status_words
            .iter()
            .find(|(w, _)| *w == word)
            .map_or(RemoteState::Unknown, |(_, s)| *s)
    }

    pub fn can_stop(&self) -> bool {
        self.stop != StopEffect::CannotStop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every provider's facts agree with each other: a provider that cannot stop has no guard
    /// stop; ids, aliases and environment stems are unique; every status table reaches running.
    #[test]
    fn every_spec_is_consistent() {
        let specs: Vec<&ProviderSpec> = ProviderKind::ALL.iter().map(|k| k.spec()).collect();
        let mut names = vec![];
        for s in &specs {
            assert_eq!(s.kind.spec().id, s.id);
            assert_eq!(s.can_stop(), s.guard_stop.is_some(), "{}", s.id);
            assert!(s
                .status_words
                .iter()
                .any(|(_, st)| *st == RemoteState::Running));
            assert!(s.api_base.starts_with("https://"), "{}", s.id);
            names.push(s.id);
            names.extend(s.aliases.iter().copied());
            assert_eq!(
                s.attach_retry_ms.is_empty(),
                s.key_attach != KeyAttach::AfterCreate
            );
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert_eq!(
            crate::providers::vast::SPEC.attach_retry_ms,
            [1000, 2000, 4000]
        );
        assert_eq!(
            crate::providers::runpod::SPEC.state_of("EXITED"),
            RemoteState::Stopped
        );
        assert_eq!(
            crate::providers::lambda::SPEC.state_of("unhealthy"),
            RemoteState::Error
        );
        assert_eq!(
            crate::providers::lambda::SPEC.state_of("anything"),
            RemoteState::Unknown
        );
    }
}
