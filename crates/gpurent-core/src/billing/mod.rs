//! What machines cost: the providers' billing rules as data with sources ([`rules`], from
//! `data/billing-rules.csv`) and pure cost functions over a state timeline ([`cost`]): cost so far,
//! cost per hour now, and the projection to a chosen time, stop/start cycles included. The instance
//! ledger's `(at_ms, state)` rows plug straight in; a pasted host's timeline is the user's own
//! (see `docs/billing.md`). [`report`] builds the cost report over every machine; [`poweroff`]
//! moves a pasted host's billing on its guard's power-off record.

pub mod budget;
pub mod cost;
pub mod instance;
pub mod money;
pub mod platforms;
pub mod poweroff;
pub mod rates;
pub mod report;
pub mod rules;
pub mod spend;

pub use cost::{
    cost_so_far, cost_until, spent_between, state_at, usd_per_hour_now, usd_total, Charge,
    CostBreakdown, CostLine, PastedRate, RateInput, StateChange, Tariff, Traffic, TransferCharge,
};
pub use money::{Currency, Money};
pub use platforms::Platform;
pub use rules::{BillsIn, Increment, InstanceState, RateUnit, Rule, Verified};

#[cfg(test)]
mod tests;
