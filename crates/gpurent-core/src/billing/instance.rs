//! A provider machine's cost inputs from the instance ledger: its timeline (the ledger's
//! timestamped state changes) and its tariff (the provider's rules in `data/billing-rules.csv`
//! with the rates the ledger row recorded from the offer), and how gpurent's numbers are set
//! beside what the provider itself reports (docs/billing.md "Provider machines").

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::cost::{RateInput, StateChange, Tariff};
use super::rules::InstanceState;
use crate::infra::error::CoreError;
use crate::providers::ledger::{InstanceEvent, LedgerInstance, LedgerState};
use crate::providers::spec::TariffShape;
use crate::providers::ProviderKind;

/// The ledger's events as a billing timeline. A ledger state the cost functions cannot map
/// (`unknown`: an answer was lost or a status not understood) is not a change: the state before it
/// continues (a machine that was running keeps being billed until a known state says otherwise).
/// A late answer after the row closed is kept with the closed state (a note) and changes
/// nothing; a later event in another state is a reopen (the provider showed the machine alive
/// after gpurent closed its row, `ledger::reopen`): it bills again from there, never $0
/// (money review F1: the timeline stopped at the first `terminated`, so a reopened, running
/// machine cost nothing in Billing, budgets and the second guard). Returns the timeline and
/// whether an `unknown` was passed over.
pub fn timeline(events: &[InstanceEvent]) -> (Vec<StateChange>, bool) {
    let mut out: Vec<StateChange> = Vec::new();
    let mut unknown = false;
    for e in events {
        let Some(state) = InstanceState::from_ledger(e.state.as_str()) else {
            unknown = true;
            continue;
        };
        if out.last().is_some_and(|c| c.state == state) {
            continue;
        }
        out.push(StateChange {
            at_ms: e.at_ms,
            state,
        });
    }
    (out, unknown)
}

/// The tariff of a ledger row: its provider's rules with the row's rates.
///
/// - RunPod: `compute` at the row's price per hour; `container_disk` (`disk_gb` is the pod's
///   container disk, `CreatePodRequest.disk` in the spec) at RunPod's published $0.10/GB-month,
///   paid only while running. gpurent creates no volume, so there is no volume meter.
/// - Vast: `storage` at the offer's `storage_cost` × `disk_gb` while the instance exists, stopped
///   included; `compute` at the base rate `dph_base` = the row's price (the offer's `dph_total`)
///   less that storage per hour (`storage_cost` × `disk_gb` / 720): `dph_total` already counts
///   the storage (the spec's own example: `dph_base` 1.0, `storage_cost` 0.149333, 10 GB,
///   `storage_total_cost` 0.00207407 = 0.149333 × 10 / 720, `dph_total` 1.00207407), so counting
///   both would bill the storage twice while running. With no storage price (note
///   `storage_price_unknown`) compute is `dph_total` and note `vast_dph_total_may_include_storage`
///   stands.
/// - Lambda: `compute` by the minute. Filesystems are not in the ledger (none is created by gpurent).
/// - AutoDL: `compute` at the row's rate in CNY (the documented rate: the Pro API quotes none
///   before the create; note `price_documented_not_quoted`).
///
/// Which of these a provider is comes from its `ProviderSpec::tariff`, not from its name.
pub fn tariff(row: &LedgerInstance) -> Result<(Tariff, Vec<String>), CoreError> {
    let mut notes = Vec::new();
    let compute = RateInput {
        meter: "compute".into(),
        rate: Some(row.price_per_hour_usd),
        quantity: 1.0,
    };
    let disk = f64::from(row.disk_gb);
    // What the provider bills besides compute is its fact (`ProviderSpec::tariff`).
    let inputs = match row.provider.spec().tariff {
        TariffShape::ComputeAndDisk(meter) => vec![
            compute,
            RateInput {
                meter: meter.into(),
                rate: None,
                quantity: disk,
            },
        ],
        TariffShape::PriceIncludesStorage => match row.storage_usd_per_gb_month {
            Some(p) => {
                // dph_base: dph_total less the storage it includes (720 h a month, as Vast's
                // storage_total_cost is computed).
                let base = (row.price_per_hour_usd - p * disk / VAST_HOURS_PER_MONTH).max(0.0);
                vec![
                    RateInput {
                        rate: Some(base),
                        ..compute
                    },
                    RateInput {
                        meter: "storage".into(),
                        rate: Some(p),
                        quantity: disk,
                    },
                ]
            }
            None => {
                notes.push(format!("{}_dph_total_may_include_storage", row.provider));
                notes.push("storage_price_unknown".to_string());
                vec![compute]
            }
        },
        TariffShape::Compute => vec![compute],
    };
    if !row.provider.spec().price_before_create {
        // AutoDL: the rate recorded at rent time is the documented one; the machine's own
        // (read after the create) is `reported`.
        notes.push("price_documented_not_quoted".to_string());
    }
    Ok((Tariff::from_rules(row.provider.as_str(), &inputs)?, notes))
}

/// Hours in Vast's storage month: its `storage_total_cost` (USD/h) is `storage_cost` (USD per
/// GB-month) × GB / 720 (the spec's example values).
const VAST_HOURS_PER_MONTH: f64 = 720.0;

/// Which field of the provider's answer its own rate per hour came from.
pub fn reported_source(kind: ProviderKind) -> &'static str {
    kind.spec().reported_rate_source
}

/// Whether two rates per hour disagree: by more than half a cent and more than 1 %.
pub fn rates_differ(ours: f64, theirs: f64) -> bool {
    let d = (ours - theirs).abs();
    d > 0.005 && d > 0.01 * ours.abs().max(theirs.abs())
}

/// Hours until `balance_usd` is spent at `usd_per_hour` (`None` when nothing bills; 0 when the
/// balance is already at or below zero).
pub fn runs_out_in_h(balance_usd: f64, usd_per_hour: f64) -> Option<f64> {
    if usd_per_hour.is_nan() || usd_per_hour <= 0.0 || !balance_usd.is_finite() {
        return None;
    }
    Some((balance_usd / usd_per_hour).max(0.0))
}

/// What the provider itself says a machine costs per hour, beside gpurent's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ProviderReported {
    /// The provider's rate per hour for the machine now, in the machine's currency
    /// (`MachineCost.currency`: yuan for AutoDL, despite the name).
    pub usd_per_hour: f64,
    /// gpurent's rate per hour while running, from the offer at rent time (Vast: `dph_total`,
    /// its storage included, as the provider reports it).
    pub gpurent_usd_per_hour: f64,
    /// `true` when the two disagree (more than $0.005 and 1 %); `null` when the machine is not
    /// running (RunPod reports 0.0 for a stopped pod, Vast its running price: not comparable).
    pub differs: Option<bool>,
    /// The field it came from.
    pub source: String,
}

/// The provider's rate beside gpurent's compute rate, compared only while it runs.
pub fn reported(
    kind: ProviderKind,
    theirs: f64,
    ours_compute: f64,
    state: LedgerState,
) -> ProviderReported {
    ProviderReported {
        usd_per_hour: theirs,
        gpurent_usd_per_hour: ours_compute,
        differs: (state == LedgerState::Running).then(|| rates_differ(ours_compute, theirs)),
        source: reported_source(kind).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::billing::{cost_so_far, usd_per_hour_now, Traffic};
    use crate::providers::ledger::EventSource;

    const MIN: i64 = 60_000;
    const HOUR: i64 = 3_600_000;

    fn ev(at_ms: i64, state: LedgerState) -> InstanceEvent {
        InstanceEvent {
            instance_id: "gpurent-000000000001".into(),
            at_ms,
            state,
            source: EventSource::Gpurent,
            detail: None,
        }
    }

    fn row(
        provider: ProviderKind,
        price: f64,
        disk_gb: u32,
        storage: Option<f64>,
    ) -> LedgerInstance {
        LedgerInstance {
            id: "gpurent-000000000001".into(),
            provider,
            account: provider.as_str().into(),
            provider_instance_id: Some("1".into()),
            offer_id: "o".into(),
            gpu: "RTX 4090".into(),
            gpu_count: 1,
            price_per_hour_usd: price,
            disk_gb,
            storage_usd_per_gb_month: storage,
            image: "i".into(),
            host_label: None,
            state: LedgerState::Running,
            created_ms: 0,
            updated_ms: 0,
            closed_ms: None,
        }
    }

    fn line(b: &crate::billing::CostBreakdown, meter: &str) -> f64 {
        b.lines
            .iter()
            .find(|l| l.meter == meter)
            .map(|l| l.usd)
            .unwrap_or(f64::NAN)
    }

    /// Table: one row per provider — the ledger events (with a stop/start cycle, an `unknown`
    /// answer and a same-state note) → so far and per hour now.
    #[test]
    fn ledger_rows_cost_by_their_providers_rules() {
        use LedgerState::*;
        struct Case {
            name: &'static str,
            row: LedgerInstance,
            events: Vec<InstanceEvent>,
            now: i64,
            compute: f64,
            storage_meter: Option<(&'static str, f64)>,
            per_hour_now: f64,
        }
        let cases = [
            Case {
                // RunPod $0.44/h per second; 50 GB container disk at $0.10/GB-month while running.
                // Runs 1 h, stopped 1 h, runs 30 min more: 1.5 h of compute and of disk.
                name: "runpod stop/start",
                row: row(ProviderKind::Runpod, 0.44, 50, None),
                events: vec![
                    ev(0, Intent),
                    ev(1_000, Provisioning),
                    ev(MIN, Running),
                    ev(MIN + 10, Running), // a note (ssh_ready): not a change
                    ev(MIN + HOUR, Stopped),
                    ev(MIN + 2 * HOUR, Running),
                ],
                now: MIN + 2 * HOUR + HOUR / 2,
                compute: 0.44 * 1.5,
                storage_meter: Some(("container_disk", 50.0 * 0.10 / 720.0 * 1.5)),
                per_hour_now: 0.44 + 50.0 * 0.10 / 720.0,
            },
            Case {
                // Vast $0.30/h dph_total, which includes 100 GB at $0.15/GB-month (from
                // provisioning on, stopped included): compute is the rest. Provisioning 10 min,
                // running 2 h, stopped 3 h.
                name: "vast stopped pays storage",
                row: row(ProviderKind::Vast, 0.30, 100, Some(0.15)),
                events: vec![
                    ev(0, Intent),
                    ev(0, Provisioning),
                    ev(10 * MIN, Running),
                    ev(10 * MIN + 2 * HOUR, Stopped),
                ],
                now: 10 * MIN + 5 * HOUR,
                compute: (0.30 - 100.0 * 0.15 / 720.0) * 2.0,
                storage_meter: Some(("storage", 100.0 * 0.15 / 720.0 * (5.0 + 10.0 / 60.0))),
                per_hour_now: 100.0 * 0.15 / 720.0,
            },
            Case {
                // Lambda $1.49/h by the minute: 61 min 1 s of running is 62 minutes; an unknown
                // answer in between does not stop the meter; terminated ends it, and a late
                // answer after the close (kept with the closed state) changes nothing.
                name: "lambda per minute until terminate",
                row: row(ProviderKind::Lambda, 1.49, 0, None),
                events: vec![
                    ev(0, Intent),
                    ev(0, Running),
                    ev(30 * MIN, Unknown),
                    ev(61 * MIN + 1_000, Terminated),
                    ev(70 * MIN, Terminated), // after close: a note
                ],
                now: 2 * HOUR,
                compute: 1.49 * 62.0 / 60.0,
                storage_meter: None,
                per_hour_now: 0.0,
            },
            Case {
                // Money review F1: the row was closed wrongly (two "not found" while the
                // provider lagged) and reopened at 70 min when the machine showed again: it
                // bills from the reopen on (50 more minutes by 2 h), and per hour now.
                name: "a reopened machine bills again",
                row: row(ProviderKind::Lambda, 1.49, 0, None),
                events: vec![
                    ev(0, Intent),
                    ev(0, Running),
                    ev(61 * MIN + 1_000, Terminated),
                    ev(70 * MIN, Running), // reopened: the provider lists it alive
                ],
                now: 2 * HOUR,
                compute: 1.49 * (62.0 + 50.0) / 60.0,
                storage_meter: None,
                per_hour_now: 1.49,
            },
        ];
        for c in cases {
            let (t, _) = timeline(&c.events);
            let (tariff, _) = tariff(&c.row).expect(c.name);
            let so_far = cost_so_far(&t, &tariff, Traffic::default(), c.now);
            assert!(
                (line(&so_far, "compute") - c.compute).abs() < 1e-9,
                "{}: compute {so_far:?}",
                c.name
            );
            if let Some((m, usd)) = c.storage_meter {
                assert!(
                    (line(&so_far, m) - usd).abs() < 1e-9,
                    "{}: {m} {so_far:?}",
                    c.name
                );
            }
            let now = usd_per_hour_now(&t, &tariff, c.now);
            assert!((now - c.per_hour_now).abs() < 1e-9, "{}: now {now}", c.name);
        }
    }

    /// Vast's `dph_total` includes the storage: while running it bills `dph_total` an hour, not
    /// `dph_total` + storage (the spec's example offer: base 1.0, 10 GB at 0.149333/GB-month).
    #[test]
    fn vast_storage_is_not_counted_twice_while_running() {
        let total = 1.0020740740740741;
        let r = row(ProviderKind::Vast, total, 10, Some(0.14933333333333335));
        let (tariff, notes) = tariff(&r).expect("vast");
        assert!(notes.is_empty(), "{notes:?}");
        let t = timeline(&[ev(0, LedgerState::Running)]).0;
        let now = usd_per_hour_now(&t, &tariff, HOUR);
        assert!((now - total).abs() < 1e-9, "running bills dph_total: {now}");
        let so_far = cost_so_far(&t, &tariff, Traffic::default(), HOUR);
        assert!(
            (line(&so_far, "compute") - 1.0).abs() < 1e-9,
            "compute is dph_base"
        );
    }

    #[test]
    fn unknown_is_passed_over_and_said() {
        let (t, unknown) = timeline(&[
            ev(0, LedgerState::Running),
            ev(5, LedgerState::Unknown),
            ev(9, LedgerState::Stopped),
        ]);
        assert!(unknown);
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].state, InstanceState::Stopped);
    }

    #[test]
    fn vast_notes_and_comparisons() {
        let (_, notes) = tariff(&row(ProviderKind::Vast, 0.3, 10, None)).expect("vast");
        assert!(notes.contains(&"storage_price_unknown".to_string()));
        assert!(!rates_differ(0.44, 0.44));
        assert!(!rates_differ(0.44, 0.443), "under half a cent");
        assert!(rates_differ(0.44, 0.50));
        assert!(!rates_differ(100.0, 100.5), "under 1 %");
        let r = reported(ProviderKind::Runpod, 0.0, 0.44, LedgerState::Stopped);
        assert_eq!(r.differs, None, "a stopped pod reports 0.0: not compared");
        let r = reported(ProviderKind::Runpod, 0.50, 0.44, LedgerState::Running);
        assert_eq!(r.differs, Some(true));
        assert_eq!(runs_out_in_h(10.0, 2.0), Some(5.0));
        assert_eq!(runs_out_in_h(10.0, 0.0), None);
        assert_eq!(runs_out_in_h(-1.0, 2.0), Some(0.0));
    }
}
