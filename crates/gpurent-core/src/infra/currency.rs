//! The currencies gpurent knows. A unit every step may name (settings hold the default one,
//! billing sums per currency), so it lives under the steps; [`crate::billing`] re-exports it.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// An ISO 4217 currency gpurent knows (`"CNY"`, `"USD"` in JSON).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize, TS,
)]
pub enum Currency {
    /// Chinese yuan (renminbi), ¥.
    #[serde(rename = "CNY")]
    Cny,
    /// US dollar, $. Everything saved before currencies existed is USD.
    #[default]
    #[serde(rename = "USD")]
    Usd,
}

impl Currency {
    pub const ALL: [Currency; 2] = [Currency::Cny, Currency::Usd];

    /// The ISO 4217 code.
    pub fn code(self) -> &'static str {
        match self {
            Currency::Cny => "CNY",
            Currency::Usd => "USD",
        }
    }

    /// The sign written before an amount.
    pub fn symbol(self) -> &'static str {
        match self {
            Currency::Cny => "¥",
            Currency::Usd => "$",
        }
    }

    /// An ISO code (any case) or a common name: `CNY`, `RMB`, `yuan`, `元`, `USD`, `dollar`.
    pub fn parse(s: &str) -> Option<Currency> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cny" | "rmb" | "yuan" | "元" | "¥" | "￥" => Some(Currency::Cny),
            "usd" | "dollar" | "dollars" | "$" | "us$" => Some(Currency::Usd),
            _ => None,
        }
    }

    /// The default for a UI language / OS locale: Chinese → CNY, anything else → USD.
    pub fn for_locale(locale: Option<&str>) -> Currency {
        match locale {
            Some(l) if l.to_ascii_lowercase().starts_with("zh") => Currency::Cny,
            _ => Currency::Usd,
        }
    }

    /// `¥2.50` / `$0.400`: the symbol and the amount with `decimals` digits.
    pub fn format(self, amount: f64, decimals: usize) -> String {
        let sign = if amount < 0.0 { "-" } else { "" };
        format!("{sign}{}{:.*}", self.symbol(), decimals, amount.abs())
    }
}

impl std::fmt::Display for Currency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}
