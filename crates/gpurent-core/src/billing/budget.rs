//! Budgets: a limit per day or per month, for one machine or in total, and where the spending
//! stands against it (80 % warns, 100 % is over). Periods are UTC calendar days and months.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The window a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "BudgetPeriod")]
pub enum Period {
    Day,
    Month,
}

impl Period {
    pub fn parse(s: &str) -> Option<Period> {
        match s {
            "day" => Some(Period::Day),
            "month" => Some(Period::Month),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }

    /// The start (UTC) of the period that holds `now_ms`.
    pub fn start_ms(self, now_ms: i64) -> i64 {
        const DAY: i64 = 86_400_000;
        let day_start = now_ms.div_euclid(DAY) * DAY;
        match self {
            Period::Day => day_start,
            Period::Month => {
                let (y, m, _) = civil_from_days(now_ms.div_euclid(DAY));
                days_from_civil(y, m, 1) * DAY
            }
        }
    }
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Where spending stands against a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "BudgetLevel")]
pub enum Level {
    Ok,
    /// 80 % or more.
    Warn,
    /// 100 % or more.
    Over,
}

pub fn level(spent_usd: f64, budget_usd: f64) -> Level {
    if budget_usd <= 0.0 || spent_usd >= budget_usd {
        Level::Over
    } else if spent_usd >= 0.8 * budget_usd {
        Level::Warn
    } else {
        Level::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_starts_in_utc() {
        // 2026-12-01T10:06:37Z
        let now = 1_796_119_597_000;
        assert_eq!(Period::Day.start_ms(now), 1_796_083_200_000); // 2026-12-01T00:00Z
        assert_eq!(Period::Month.start_ms(now), 1_796_083_200_000); // the 1st
                                                                    // 2024-02-29T23:59:59Z: leap day, month from 2024-02-01.
        let leap = 1_709_251_199_000;
        assert_eq!(Period::Day.start_ms(leap), 1_709_164_800_000);
        assert_eq!(Period::Month.start_ms(leap), 1_706_745_600_000);
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn levels() {
        assert_eq!(level(7.9, 10.0), Level::Ok);
        assert_eq!(level(8.0, 10.0), Level::Warn);
        assert_eq!(level(10.0, 10.0), Level::Over);
        assert_eq!(level(0.0, 0.0), Level::Over);
    }
}
