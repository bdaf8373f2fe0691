//! Pure cost functions over a state timeline: what a machine has cost so far, what it costs per
//! hour right now, and what it will have cost by a chosen time if it stays as it is.
//!
//! A timeline is the instance ledger's `(at_ms, state)` rows in time order. Each time meter
//! ([`Charge`]) runs in some states ([`BillsIn`]); every continuous span in which it runs is rounded
//! up to the meter's [`Increment`] on its own — a stop/start on an hourly platform starts a new
//! paid hour, and "so far" for an open span is what stopping it now would cost (a pasted host
//! billed per started hour has cost a full hour one minute after it started). Transfer meters
//! multiply the bytes moved by a per-GB rate.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::money::Currency;
use super::platforms::Platform;
use super::rules::{self, BillsIn, Increment, InstanceState, RateUnit, Rule};
use crate::infra::error::CoreError;

const MS_PER_HOUR: f64 = 3_600_000.0;

/// One ledger row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct StateChange {
    pub at_ms: i64,
    pub state: InstanceState,
}

/// A time meter with its rate already in USD per hour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Charge {
    pub meter: String,
    pub bills_in: BillsIn,
    pub increment: Increment,
    pub usd_per_hour: f64,
}

/// A transfer meter: USD per GB (10^9 bytes) in one direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TransferCharge {
    pub meter: String,
    pub inbound: bool,
    pub usd_per_gb: f64,
}

/// Every meter of one machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct Tariff {
    pub time: Vec<Charge>,
    pub transfer: Vec<TransferCharge>,
}

/// Bytes moved so far (as the provider reports them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Traffic {
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// What one meter came to, in the machine's currency (the field `usd` is older than
/// currencies; in JSON `amount` says the same number under a neutral name).
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
#[ts(as = "CostLineJson")]
pub struct CostLine {
    pub meter: String,
    /// Billed time after rounding (transfer meters: 0).
    pub billed_ms: i64,
    /// In the machine's currency (see [`CostLine::amount`]).
    pub usd: f64,
}

impl CostLine {
    /// What the meter came to, in the machine's currency.
    pub fn amount(&self) -> f64 {
        self.usd
    }
}

/// [`CostLine`] as JSON and TypeScript: `amount` beside the older `usd`.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CostLineJson {
    meter: String,
    /// Billed time after rounding (transfer meters: 0).
    billed_ms: i64,
    /// What the meter came to, in the machine's `currency`.
    amount: f64,
    /// Deprecated: the same number as `amount` (in the machine's currency, despite the name).
    usd: f64,
}

impl From<CostLine> for CostLineJson {
    fn from(
        CostLine {
            meter,
            billed_ms,
            usd,
        }: CostLine,
    ) -> Self {
        CostLineJson {
            meter,
            billed_ms,
            amount: usd,
            usd,
        }
    }
}

/// Written as [`CostLineJson`] (the neutral names beside the older ones).
impl Serialize for CostLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CostLineJson::from(self.clone()).serialize(s)
    }
}

/// Cost of a machine up to a point in time, in the machine's currency (`total_usd` is older than
/// currencies; in JSON `total` says the same number under a neutral name).
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
#[ts(as = "CostBreakdownJson")]
pub struct CostBreakdown {
    pub until_ms: i64,
    /// In the machine's currency (see [`CostBreakdown::total`]).
    pub total_usd: f64,
    pub lines: Vec<CostLine>,
}

impl CostBreakdown {
    /// The total, in the machine's currency.
    pub fn total(&self) -> f64 {
        self.total_usd
    }
}

/// [`CostBreakdown`] as JSON and TypeScript: `total` beside the older `total_usd`.
#[derive(Debug, Clone, Serialize, TS)]
pub struct CostBreakdownJson {
    until_ms: i64,
    /// In the machine's `currency`.
    total: f64,
    /// Deprecated: the same number as `total` (in the machine's currency, despite the name).
    total_usd: f64,
    lines: Vec<CostLine>,
}

impl From<CostBreakdown> for CostBreakdownJson {
    fn from(
        CostBreakdown {
            until_ms,
            total_usd,
            lines,
        }: CostBreakdown,
    ) -> Self {
        CostBreakdownJson {
            until_ms,
            total: total_usd,
            total_usd,
            lines,
        }
    }
}

/// Written as [`CostBreakdownJson`] (the neutral names beside the older ones).
impl Serialize for CostBreakdown {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CostBreakdownJson::from(self.clone()).serialize(s)
    }
}

/// A rate for one meter of a provider rule: `rate` in the rule's unit (`None`: the provider's
/// published rate) times `quantity` (GB or GiB for storage; 1 for compute and transfer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RateInput {
    pub meter: String,
    pub rate: Option<f64>,
    pub quantity: f64,
}

impl Tariff {
    /// The tariff of a provider machine from its rules and the rates of its meters. Meters with no
    /// input are left out (a pod without a volume pays no volume); an input for a meter the
    /// provider has no rule for, or without a rate where none is published, is an error.
    pub fn from_rules(provider: &str, inputs: &[RateInput]) -> Result<Tariff, CoreError> {
        let rules = rules::for_provider(provider)?;
        if rules.is_empty() {
            return Err(CoreError::invalid(
                "provider",
                format!("no billing rules for '{provider}'"),
            ));
        }
        let mut t = Tariff::default();
        for input in inputs {
            let rule: &Rule = rules
                .iter()
                .find(|r| r.meter == input.meter)
                .ok_or_else(|| {
                    CoreError::invalid(
                        "meter",
                        format!("{provider} has no meter '{}'", input.meter),
                    )
                })?;
            let rate = input.rate.or(rule.published_rate).ok_or_else(|| {
                CoreError::invalid(
                    "rate",
                    format!(
                        "{provider} {}: no rate given and none published",
                        rule.meter
                    ),
                )
            })?;
            if !(rate.is_finite() && rate >= 0.0 && input.quantity.is_finite()) {
                return Err(CoreError::invalid("rate", "must be a number ≥ 0"));
            }
            match rule.rate_unit {
                RateUnit::UsdPerGb => t.transfer.push(TransferCharge {
                    meter: rule.meter.clone(),
                    inbound: rule.meter.ends_with("_in"),
                    usd_per_gb: rate * input.quantity,
                }),
                unit => {
                    let per_hour = match unit {
                        RateUnit::UsdPerHour => rate * input.quantity,
                        _ => rate * input.quantity / rule.hours_per_month.unwrap_or(720.0),
                    };
                    t.time.push(Charge {
                        meter: rule.meter.clone(),
                        bills_in: rule.bills_in,
                        increment: rule.increment,
                        usd_per_hour: per_hour,
                    });
                }
            }
        }
        Ok(t)
    }
}

/// A pasted host's rate as the user entered it: compute billed by `rule` while it runs, storage
/// per day (prorated per second) for as long as it exists. The amounts are in `currency` (the
/// field names are older than currencies: `usd_per_hour` is the rate per hour in `currency`,
/// which is USD for every rate saved before currencies existed). In JSON `per_hour` and
/// `storage_per_day` say the same numbers under neutral names ([`PastedRateJson`]); reading
/// JSON takes the older names.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, TS)]
#[ts(as = "PastedRateJson")]
pub struct PastedRate {
    /// Per hour, in `currency`.
    pub usd_per_hour: f64,
    pub rule: Increment,
    /// Per day, in `currency`.
    pub storage_usd_per_day: Option<f64>,
    /// What the amounts are in (absent in JSON saved before currencies: USD).
    #[serde(default)]
    pub currency: Currency,
    /// The platform the host was rented on, when the user picked it: its billing rules
    /// ([`super::platforms`]) — the rounding it is known to use, release after N days off.
    #[serde(default)]
    pub platform: Option<Platform>,
}

/// [`PastedRate`] as JSON and TypeScript: `per_hour` and `storage_per_day` beside the older
/// `usd_…` names (kept, with the same numbers).
#[derive(Debug, Clone, Serialize, TS)]
pub struct PastedRateJson {
    /// The rate per hour, in `currency`.
    per_hour: f64,
    /// Deprecated: the same number as `per_hour` (in `currency`, despite the name).
    usd_per_hour: f64,
    rule: Increment,
    /// Storage per day, in `currency` (`null`: none).
    storage_per_day: Option<f64>,
    /// Deprecated: the same number as `storage_per_day` (in `currency`, despite the name).
    storage_usd_per_day: Option<f64>,
    currency: Currency,
    platform: Option<Platform>,
}

impl From<PastedRate> for PastedRateJson {
    fn from(
        PastedRate {
            usd_per_hour,
            rule,
            storage_usd_per_day,
            currency,
            platform,
        }: PastedRate,
    ) -> Self {
        PastedRateJson {
            per_hour: usd_per_hour,
            usd_per_hour,
            rule,
            storage_per_day: storage_usd_per_day,
            storage_usd_per_day,
            currency,
            platform,
        }
    }
}

/// Written as [`PastedRateJson`] (the neutral names beside the older ones).
impl Serialize for PastedRate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PastedRateJson::from(*self).serialize(s)
    }
}

impl PastedRate {
    /// The rate per hour, in [`PastedRate::currency`].
    pub fn per_hour(&self) -> f64 {
        self.usd_per_hour
    }

    /// Storage per day, in [`PastedRate::currency`].
    pub fn storage_per_day(&self) -> Option<f64> {
        self.storage_usd_per_day
    }

    pub fn validate(&self) -> Result<(), CoreError> {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        if !ok(self.usd_per_hour) {
            return Err(CoreError::invalid("usd_per_hour", "must be a number ≥ 0"));
        }
        if self.storage_usd_per_day.is_some_and(|x| !ok(x)) {
            return Err(CoreError::invalid(
                "storage_usd_per_day",
                "must be a number ≥ 0",
            ));
        }
        Ok(())
    }

    pub fn tariff(&self) -> Tariff {
        let mut time = vec![Charge {
            meter: "compute".into(),
            bills_in: BillsIn::Running,
            increment: self.rule,
            usd_per_hour: self.usd_per_hour,
        }];
        if let Some(day) = self.storage_usd_per_day {
            time.push(Charge {
                meter: "storage".into(),
                bills_in: BillsIn::Exists,
                increment: Increment::Second,
                usd_per_hour: day / 24.0,
            });
        }
        Tariff {
            time,
            transfer: vec![],
        }
    }
}

/// The sum of dollar amounts, starting at +0.0: `Iterator::sum` of no f64 is -0.0, which prints
/// as "-0" in JSON and the UI.
pub fn usd_total<I: IntoIterator<Item = f64>>(amounts: I) -> f64 {
    amounts.into_iter().fold(0.0, |a, b| a + b)
}

/// The state at `at_ms` (the last change at or before it); `None` before the first.
pub fn state_at(timeline: &[StateChange], at_ms: i64) -> Option<InstanceState> {
    timeline
        .iter()
        .take_while(|c| c.at_ms <= at_ms)
        .last()
        .map(|c| c.state)
}

/// Continuous spans `[start, end)` in which `bills_in` runs, from the changes known at `now_ms`,
/// with the state at `now_ms` assumed to last until `until_ms`.
fn spans(
    timeline: &[StateChange],
    bills_in: BillsIn,
    now_ms: i64,
    until_ms: i64,
) -> Vec<(i64, i64)> {
    let known = timeline.iter().filter(|c| c.at_ms <= now_ms);
    let mut out = Vec::new();
    let mut open: Option<i64> = None;
    for c in known {
        if bills_in.bills(c.state) {
            open.get_or_insert(c.at_ms);
        } else if let Some(s) = open.take() {
            out.push((s, c.at_ms));
        }
    }
    if let Some(s) = open {
        out.push((s, until_ms.max(s)));
    }
    out
}

/// What the machine has cost by `until_ms`, from the changes known at `now_ms` (the state at
/// `now_ms` continues). `until_ms == now_ms` is "so far"; a later `until_ms` is the projection.
pub fn cost_until(
    timeline: &[StateChange],
    tariff: &Tariff,
    traffic: Traffic,
    now_ms: i64,
    until_ms: i64,
) -> CostBreakdown {
    let until_ms = until_ms.max(now_ms);
    let mut lines = Vec::new();
    for ch in &tariff.time {
        let billed: i64 = spans(timeline, ch.bills_in, now_ms, until_ms)
            .into_iter()
            .map(|(s, e)| ch.increment.billed_ms(e - s))
            .sum();
        lines.push(CostLine {
            meter: ch.meter.clone(),
            billed_ms: billed,
            usd: ch.usd_per_hour * billed as f64 / MS_PER_HOUR,
        });
    }
    for tc in &tariff.transfer {
        let bytes = if tc.inbound {
            traffic.bytes_in
        } else {
            traffic.bytes_out
        };
        lines.push(CostLine {
            meter: tc.meter.clone(),
            billed_ms: 0,
            usd: tc.usd_per_gb * bytes as f64 / 1e9,
        });
    }
    CostBreakdown {
        until_ms,
        total_usd: usd_total(lines.iter().map(|l| l.usd)),
        lines,
    }
}

/// What the machine has cost so far.
pub fn cost_so_far(
    timeline: &[StateChange],
    tariff: &Tariff,
    traffic: Traffic,
    now_ms: i64,
) -> CostBreakdown {
    cost_until(timeline, tariff, traffic, now_ms, now_ms)
}

/// USD per hour the machine costs in its state at `now_ms` (0 before it exists and once it is
/// terminated).
pub fn usd_per_hour_now(timeline: &[StateChange], tariff: &Tariff, now_ms: i64) -> f64 {
    match state_at(timeline, now_ms) {
        Some(s) => usd_total(
            tariff
                .time
                .iter()
                .filter(|c| c.bills_in.bills(s))
                .map(|c| c.usd_per_hour),
        ),
        None => 0.0,
    }
}

/// What was spent between `from_ms` and `to_ms`: what was owed at `to_ms` less what was owed at
/// `from_ms` (each "so far" with its own rounding), so consecutive windows add up to the total.
pub fn spent_between(timeline: &[StateChange], tariff: &Tariff, from_ms: i64, to_ms: i64) -> f64 {
    if to_ms <= from_ms {
        return 0.0;
    }
    let at = |t: i64| cost_so_far(timeline, tariff, Traffic::default(), t).total_usd;
    (at(to_ms) - at(from_ms)).max(0.0)
}
