//! Spend over time: cumulative cost sampled over the machines' own timelines — the same cost
//! functions, not a second model.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::{cost_so_far, Currency, StateChange, Tariff, Traffic};

/// Cumulative cost at one moment, in the currency of the series it belongs to. In JSON `amount`
/// says the same number as the older `usd` ([`SpendPointJson`]).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, TS)]
#[ts(as = "SpendPointJson")]
pub struct SpendPoint {
    pub at_ms: i64,
    /// In [`SpendSeries::points`]: US dollars (the USD machines only). In a
    /// [`CurrencySpend`]: that series' currency.
    pub usd: f64,
}

impl SpendPoint {
    /// The cumulative cost, in the series' currency.
    pub fn amount(&self) -> f64 {
        self.usd
    }
}

/// [`SpendPoint`] as JSON and TypeScript: `amount` beside the older `usd`.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SpendPointJson {
    at_ms: i64,
    /// The cumulative cost, in the series' currency (`SpendSeries.points`: USD).
    amount: f64,
    /// Deprecated: the same number as `amount`.
    usd: f64,
}

impl From<SpendPoint> for SpendPointJson {
    fn from(SpendPoint { at_ms, usd }: SpendPoint) -> Self {
        SpendPointJson {
            at_ms,
            amount: usd,
            usd,
        }
    }
}

/// Written as [`SpendPointJson`] (the neutral names beside the older ones).
impl Serialize for SpendPoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SpendPointJson::from(*self).serialize(s)
    }
}

/// The cumulative spend of the machines billed in one currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CurrencySpend {
    pub currency: Currency,
    pub points: Vec<SpendPoint>,
}

/// Spend over time: what the machines had cost at each moment from `from_ms` to now, one curve
/// per currency (never added across currencies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SpendSeries {
    pub from_ms: i64,
    pub to_ms: i64,
    /// The USD machines' curve (what it always was: before currencies every machine was USD).
    pub points: Vec<SpendPoint>,
    /// One curve per currency that has machines, in currency order (CNY, USD); empty when there
    /// are no machines.
    #[serde(default)]
    pub by_currency: Vec<CurrencySpend>,
}

/// Sample cumulative cost over `[from_ms, to_ms]`: at each moment, what the machines had cost
/// "so far" then (with each meter's rounding), so the curve steps where an hourly rule charges.
pub fn spend_series(
    machines: &[(Currency, Vec<StateChange>, Tariff)],
    from_ms: i64,
    to_ms: i64,
    points: usize,
) -> SpendSeries {
    let points = points.max(2);
    let span = (to_ms - from_ms).max(0);
    let curve = |currency: Currency| -> Vec<SpendPoint> {
        (0..points)
            .map(|i| {
                let at = from_ms + span * i as i64 / (points as i64 - 1);
                let usd = machines
                    .iter()
                    .filter(|(c, _, _)| *c == currency)
                    .map(|(_, t, tariff)| cost_so_far(t, tariff, Traffic::default(), at).total_usd)
                    .fold(0.0, |a, b| a + b);
                SpendPoint { at_ms: at, usd }
            })
            .collect()
    };
    let by_currency = Currency::ALL
        .into_iter()
        .filter(|c| machines.iter().any(|(m, _, _)| m == c))
        .map(|currency| CurrencySpend {
            currency,
            points: curve(currency),
        })
        .collect();
    SpendSeries {
        from_ms,
        to_ms,
        points: curve(Currency::Usd),
        by_currency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::billing::{Increment, InstanceState, PastedRate};

    const HOUR: i64 = 3_600_000;

    /// The chart is cumulative cost over the machines' own timelines: per started hour it steps.
    #[test]
    fn spend_series_steps_with_the_rule() {
        let t = vec![StateChange {
            at_ms: 0,
            state: InstanceState::Running,
        }];
        let hourly = PastedRate {
            usd_per_hour: 2.0,
            rule: Increment::Hour,
            storage_usd_per_day: None,
            currency: Currency::Usd,
            platform: None,
        };
        let s = spend_series(
            &[(Currency::Usd, t.clone(), hourly.tariff())],
            0,
            2 * HOUR,
            5,
        );
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        // At 0 nothing has run; 30 min in, the first hour is owed; 1 h 30 min in, two.
        assert_eq!(usd, [0.0, 2.0, 2.0, 4.0, 4.0]);
        assert_eq!(s.points[4].at_ms, 2 * HOUR);
        let per_second = PastedRate {
            rule: Increment::Second,
            ..hourly
        };
        let s = spend_series(&[(Currency::Usd, t, per_second.tariff())], 0, 2 * HOUR, 3);
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        assert_eq!(usd, [0.0, 2.0, 4.0]);
    }

    /// Two currencies: one curve each, never added up; `points` stays the USD machines'.
    #[test]
    fn spend_series_is_one_curve_per_currency() {
        let t = vec![StateChange {
            at_ms: 0,
            state: InstanceState::Running,
        }];
        let rate = |per_hour, currency| PastedRate {
            usd_per_hour: per_hour,
            rule: Increment::Second,
            storage_usd_per_day: None,
            currency,
            platform: None,
        };
        let machines = [
            (Currency::Cny, t.clone(), rate(2.0, Currency::Cny).tariff()),
            (Currency::Usd, t, rate(0.5, Currency::Usd).tariff()),
        ];
        let s = spend_series(&machines, 0, 2 * HOUR, 3);
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        assert_eq!(usd, [0.0, 0.5, 1.0], "USD machines only");
        let curves: Vec<(Currency, Vec<f64>)> = s
            .by_currency
            .iter()
            .map(|c| (c.currency, c.points.iter().map(|p| p.usd).collect()))
            .collect();
        assert_eq!(
            curves,
            [
                (Currency::Cny, vec![0.0, 2.0, 4.0]),
                (Currency::Usd, vec![0.0, 0.5, 1.0])
            ]
        );
        assert!(spend_series(&[], 0, HOUR, 2).by_currency.is_empty());
    }
}
