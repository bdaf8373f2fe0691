//! Spend over time: cumulative cost sampled over the machines' own timelines — the same cost
//! functions, not a second model.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::{cost_so_far, StateChange, Tariff, Traffic};

/// Cumulative cost of every machine at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct SpendPoint {
    pub at_ms: i64,
    pub usd: f64,
}

/// Spend over time: what all machines together had cost at each moment from `from_ms` to now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SpendSeries {
    pub from_ms: i64,
    pub to_ms: i64,
    pub points: Vec<SpendPoint>,
}

/// Sample cumulative cost over `[from_ms, to_ms]`: at each moment, what the machines had cost
/// "so far" then (with each meter's rounding), so the curve steps where an hourly rule charges.
pub fn spend_series(
    machines: &[(Vec<StateChange>, Tariff)],
    from_ms: i64,
    to_ms: i64,
    points: usize,
) -> SpendSeries {
    let points = points.max(2);
    let span = (to_ms - from_ms).max(0);
    let pts = (0..points)
        .map(|i| {
            let at = from_ms + span * i as i64 / (points as i64 - 1);
            let usd = machines
                .iter()
                .map(|(t, tariff)| cost_so_far(t, tariff, Traffic::default(), at).total_usd)
                .sum();
            SpendPoint { at_ms: at, usd }
        })
        .collect();
    SpendSeries {
        from_ms,
        to_ms,
        points: pts,
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
        };
        let s = spend_series(&[(t.clone(), hourly.tariff())], 0, 2 * HOUR, 5);
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        // At 0 nothing has run; 30 min in, the first hour is owed; 1 h 30 min in, two.
        assert_eq!(usd, [0.0, 2.0, 2.0, 4.0, 4.0]);
        assert_eq!(s.points[4].at_ms, 2 * HOUR);
        let per_second = PastedRate {
            rule: Increment::Second,
            ..hourly
        };
        let s = spend_series(&[(t, per_second.tariff())], 0, 2 * HOUR, 3);
        let usd: Vec<f64> = s.points.iter().map(|p| p.usd).collect();
        assert_eq!(usd, [0.0, 2.0, 4.0]);
    }
}
