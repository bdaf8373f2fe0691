//! Money carries its currency. gpurent never converts: a total is a total *per currency*, a
//! budget counts only the machines billed in its currency, and where machines in two currencies
//! exist the reports give one line per currency (docs/billing.md "Currencies").
//!
//! Provider machines (RunPod, Vast, Lambda) bill in US dollars; a pasted host bills in whatever
//! currency the user set its rate in (yuan on the Chinese platforms).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use crate::infra::currency::Currency;

/// An amount in one currency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS)]
pub struct Money {
    pub amount: f64,
    pub currency: Currency,
}

impl Money {
    pub fn new(amount: f64, currency: Currency) -> Money {
        Money { amount, currency }
    }
}

impl std::fmt::Display for Money {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.currency.format(self.amount, 2))
    }
}

/// An amount in the currency a price names by its code (a card price's `currency` is an ISO code
/// or the user's own label): the sign where gpurent knows the code (`¥12.50`, `$0.40`), else the
/// code before the number (`EUR 12.50`) — as the UI's `money()` formatter writes it.
pub fn format_code(amount: f64, code: &str, decimals: usize) -> String {
    let code = code.trim();
    match Currency::ALL
        .into_iter()
        .find(|c| c.code().eq_ignore_ascii_case(code))
    {
        Some(c) => c.format(amount, decimals),
        None => {
            let sign = if amount < 0.0 { "-" } else { "" };
            format!("{sign}{code} {:.*}", decimals, amount.abs())
        }
    }
}

/// Amounts added up per currency (never across): one entry per currency present, in
/// [`Currency`] order (CNY, USD), each starting at +0.0.
pub fn sum_by_currency<I: IntoIterator<Item = Money>>(amounts: I) -> Vec<Money> {
    let mut out: Vec<Money> = Vec::new();
    for m in amounts {
        match out.iter_mut().find(|x| x.currency == m.currency) {
            Some(x) => x.amount += m.amount,
            None => out.push(Money::new(0.0 + m.amount, m.currency)),
        }
    }
    out.sort_by_key(|m| m.currency);
    out
}

/// The amount of `currency` in a per-currency list (0 when absent).
pub fn amount_in(list: &[Money], currency: Currency) -> f64 {
    list.iter()
        .filter(|m| m.currency == currency)
        .map(|m| m.amount)
        .fold(0.0, |a, b| a + b)
}

/// A rate as the user types it: `2.5`, `¥2.5/h`, `￥2.5/小时`, `$0.4/h`, `2.5 CNY`, `2.5元/小时`.
/// Returns the amount and the currency the text names (`None`: it names none — the caller's
/// default applies). `None` overall when it is not a rate.
pub fn parse_rate(text: &str) -> Option<(f64, Option<Currency>)> {
    let mut s = text.trim();
    let mut currency = None;
    for (prefix, c) in [
        ("¥", Currency::Cny),
        ("￥", Currency::Cny),
        ("US$", Currency::Usd),
        ("$", Currency::Usd),
    ] {
        if let Some(rest) = s.strip_prefix(prefix) {
            currency = Some(c);
            s = rest.trim_start();
            break;
        }
    }
    for suffix in ["/小时", "/h", "/hr", "/hour", "每小时"] {
        if let Some(rest) = s.strip_suffix(suffix) {
            s = rest.trim_end();
            break;
        }
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    if !unit.is_empty() {
        let named = Currency::parse(unit)?;
        if currency.is_some_and(|c| c != named) {
            return None;
        }
        currency = Some(named);
    }
    let amount: f64 = num.parse().ok()?;
    amount.is_finite().then_some((amount, currency))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_codes_on_the_wire_and_usd_by_default() {
        assert_eq!(
            serde_json::to_string(&Currency::Cny).expect("json"),
            "\"CNY\""
        );
        assert_eq!(
            serde_json::from_str::<Currency>("\"USD\"").expect("json"),
            Currency::Usd
        );
        assert_eq!(Currency::default(), Currency::Usd);
        assert_eq!(Currency::for_locale(Some("zh-CN")), Currency::Cny);
        assert_eq!(Currency::for_locale(Some("zh_TW.UTF-8")), Currency::Cny);
        assert_eq!(Currency::for_locale(Some("en-US")), Currency::Usd);
        assert_eq!(Currency::for_locale(None), Currency::Usd);
        assert_eq!(Currency::Cny.format(2.5, 2), "¥2.50");
        assert_eq!(Currency::Usd.format(-0.4, 3), "-$0.400");
    }

    #[test]
    fn a_price_reads_with_its_sign_or_its_code() {
        assert_eq!(format_code(12.5, "CNY", 2), "¥12.50");
        assert_eq!(format_code(0.4, " usd ", 3), "$0.400");
        assert_eq!(format_code(-3.0, "EUR", 2), "-EUR 3.00");
    }

    #[test]
    fn rates_as_typed() {
        assert_eq!(parse_rate("2.5"), Some((2.5, None)));
        assert_eq!(parse_rate("¥2.5/h"), Some((2.5, Some(Currency::Cny))));
        assert_eq!(parse_rate("￥1.98/小时"), Some((1.98, Some(Currency::Cny))));
        assert_eq!(parse_rate("$0.4/h"), Some((0.4, Some(Currency::Usd))));
        assert_eq!(parse_rate("2.5 CNY"), Some((2.5, Some(Currency::Cny))));
        assert_eq!(parse_rate("2.5元/小时"), Some((2.5, Some(Currency::Cny))));
        assert_eq!(parse_rate("0.4 usd/hr"), Some((0.4, Some(Currency::Usd))));
        assert_eq!(parse_rate("$2.5 CNY"), None, "two currencies");
        assert_eq!(parse_rate("2.5 EUR"), None);
        assert_eq!(parse_rate("abc"), None);
        assert_eq!(parse_rate(""), None);
    }

    #[test]
    fn totals_are_per_currency_never_mixed() {
        let t = sum_by_currency([
            Money::new(1.0, Currency::Usd),
            Money::new(10.0, Currency::Cny),
            Money::new(2.0, Currency::Usd),
        ]);
        assert_eq!(
            t,
            [
                Money::new(10.0, Currency::Cny),
                Money::new(3.0, Currency::Usd)
            ]
        );
        assert_eq!(amount_in(&t, Currency::Usd), 3.0);
        assert!(sum_by_currency([]).is_empty());
        assert_eq!(amount_in(&[], Currency::Cny).to_string(), "0");
    }
}
