//! The providers' billing rules as data (`data/billing-rules.csv`, each row with its source and
//! whether the source says it in words), and the rule a user picks for a pasted host.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::error::CoreError;

const RULES_CSV: &str = include_str!("../../data/billing-rules.csv");

/// What a meter's rate is quoted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RateUnit {
    UsdPerHour,
    UsdPerGbMonth,
    UsdPerGibMonth,
    /// Transfer: per GB moved (1 GB = 10^9 bytes).
    UsdPerGb,
}

/// In which instance states a meter runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BillsIn {
    Running,
    Stopped,
    /// Provisioning, running or stopped: everything between creation and termination.
    Exists,
    /// Bytes moved, not time.
    Transfer,
}

impl BillsIn {
    /// Whether a time meter runs while the instance is in `state`.
    pub fn bills(self, state: InstanceState) -> bool {
        use InstanceState::*;
        match self {
            BillsIn::Running => state == Running,
            BillsIn::Stopped => state == Stopped,
            BillsIn::Exists => matches!(state, Provisioning | Running | Stopped),
            BillsIn::Transfer => false,
        }
    }
}

/// What a continuous billed span is rounded up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Increment {
    Second,
    Minute,
    /// Each started hour is paid in full (the guides' 1 h 10 min billed as 2 h).
    Hour,
}

impl Increment {
    pub fn ms(self) -> i64 {
        match self {
            Increment::Second => 1_000,
            Increment::Minute => 60_000,
            Increment::Hour => 3_600_000,
        }
    }

    /// `span_ms` rounded up to a whole increment (0 stays 0).
    pub fn billed_ms(self, span_ms: i64) -> i64 {
        if span_ms <= 0 {
            return 0;
        }
        let m = self.ms();
        (span_ms + m - 1) / m * m
    }

    /// The pasted-host rule names used by the CLI and the database.
    pub fn rule_name(self) -> &'static str {
        match self {
            Increment::Second => "per-second",
            Increment::Minute => "per-minute",
            Increment::Hour => "per-hour-rounded-up",
        }
    }

    pub fn from_rule_name(s: &str) -> Option<Increment> {
        match s {
            "per-second" => Some(Increment::Second),
            "per-minute" => Some(Increment::Minute),
            "per-hour-rounded-up" | "per-hour" => Some(Increment::Hour),
            _ => None,
        }
    }
}

/// The states of an instance in the ledger (`instance_events.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InstanceState {
    /// Asked for, nothing exists at the provider yet.
    Intent,
    Provisioning,
    Running,
    Stopped,
    Terminated,
}

impl InstanceState {
    /// The ledger's state text (`providers::ledger::LedgerState::as_str`); `unknown` and other
    /// texts are `None` (the caller decides, never guessed).
    pub fn from_ledger(s: &str) -> Option<InstanceState> {
        Some(match s {
            "intent" => InstanceState::Intent,
            "provisioning" | "starting" | "booting" => InstanceState::Provisioning,
            "running" | "active" => InstanceState::Running,
            "stopped" | "exited" | "stopping" => InstanceState::Stopped,
            // create_failed (the ledger's): no machine was made, nothing bills.
            "terminated" | "destroyed" | "released" | "create_failed" => InstanceState::Terminated,
            _ => return None,
        })
    }
}

/// Whether a rule's source says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Verified {
    Docs,
    Unverified,
}

/// One row of `data/billing-rules.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Rule {
    pub provider: String,
    pub meter: String,
    pub rate_unit: RateUnit,
    pub bills_in: BillsIn,
    pub increment: Increment,
    pub hours_per_month: Option<f64>,
    /// The provider's one platform-wide rate in `rate_unit`, where it publishes one.
    pub published_rate: Option<f64>,
    pub verified: Verified,
    pub source: String,
    pub note: String,
}

/// Every rule, in file order.
pub fn all() -> Result<&'static [Rule], CoreError> {
    static CELL: OnceLock<Result<Vec<Rule>, String>> = OnceLock::new();
    CELL.get_or_init(|| {
        csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .from_reader(RULES_CSV.as_bytes())
            .deserialize::<Rule>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("billing-rules.csv: {e}"))
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(|e| CoreError::BundledData(e.clone()))
}

/// The rules of one provider (`runpod`, `vast`, `lambda`); empty for an unknown one.
pub fn for_provider(provider: &str) -> Result<Vec<&'static Rule>, CoreError> {
    Ok(all()?.iter().filter(|r| r.provider == provider).collect())
}
