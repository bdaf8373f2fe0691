//! Money: billed hours under a platform's rule, storage and egress lines, hourly vs monthly vs spot,
//! and rent-vs-buy. gpurent ships no prices (none could be sourced); every price comes from the user.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Hours in an average month (8,766 h / 12), for monthly plans.
pub const HOURS_PER_MONTH: f64 = 730.5;

/// How a platform rounds the time it bills.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BillingRule {
    PerSecond,
    PerMinute,
    /// Every started hour is billed in full (1 h 10 min -> 2 h, as the user guides warn).
    PerStartedHour,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct Billing {
    pub rule: BillingRule,
    /// Minimum billed time per instance start, minutes (0 = none).
    pub minimum_minutes: f64,
}

impl Default for Billing {
    fn default() -> Self {
        Billing {
            rule: BillingRule::PerSecond,
            minimum_minutes: 0.0,
        }
    }
}

/// Billed hours for `hours` of use.
pub fn billed_hours(hours: f64, billing: &Billing) -> f64 {
    let h = hours.max(billing.minimum_minutes / 60.0).max(0.0);
    match billing.rule {
        BillingRule::PerSecond => (h * 3600.0).ceil() / 3600.0,
        BillingRule::PerMinute => (h * 60.0).ceil() / 60.0,
        BillingRule::PerStartedHour => h.ceil(),
    }
}

/// A price the user entered for a card (or a platform's offer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct Offer {
    pub card_id: String,
    /// Price of one GPU for one hour, in `currency`.
    pub price_per_gpu_hour: f64,
    /// Optional monthly price of one GPU.
    pub price_per_gpu_month: Option<f64>,
    /// Optional spot / preemptible price of one GPU-hour.
    pub spot_price_per_gpu_hour: Option<f64>,
    pub billing: Billing,
    /// ISO code or a label; money is never converted.
    pub currency: String,
    /// Free text: the platform's name.
    pub label: Option<String>,
}

impl Default for Offer {
    fn default() -> Self {
        Offer {
            card_id: String::new(),
            price_per_gpu_hour: 0.0,
            price_per_gpu_month: None,
            spot_price_per_gpu_hour: None,
            billing: Billing::default(),
            currency: "USD".into(),
            label: None,
        }
    }
}

/// Cost inputs beyond the GPU price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct CostSettings {
    pub offers: Vec<Offer>,
    /// Data disk kept during the job, GB, and its price per GB-month.
    pub storage_gb: f64,
    pub storage_price_per_gb_month: f64,
    /// Data downloaded out of the platform, GB, and its price per GB.
    pub egress_gb: f64,
    pub egress_price_per_gb: f64,
    /// Minutes between checkpoints (for spot instances). None = no checkpointing.
    pub checkpoint_interval_minutes: Option<f64>,
    /// Own-card comparison: price of one card, power draw in watts (None = the card's TDP),
    /// electricity price per kWh, share of the month the card would be busy (0–1).
    pub buy_price_per_gpu: Option<f64>,
    pub power_w: Option<f64>,
    pub electricity_price_per_kwh: Option<f64>,
    pub utilisation: f64,
}

impl Default for CostSettings {
    fn default() -> Self {
        CostSettings {
            offers: Vec::new(),
            storage_gb: 0.0,
            storage_price_per_gb_month: 0.0,
            egress_gb: 0.0,
            egress_price_per_gb: 0.0,
            checkpoint_interval_minutes: None,
            buy_price_per_gpu: None,
            power_w: None,
            electricity_price_per_kwh: None,
            utilisation: 0.5,
        }
    }
}

/// The bill for one job under one offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct JobCost {
    pub gpus: u32,
    pub job_hours: f64,
    pub billed_hours: f64,
    pub gpu_cost: f64,
    pub storage_cost: f64,
    pub egress_cost: f64,
    pub total_cost: f64,
    /// Same job on spot (without rework after interruptions).
    pub spot_total_cost: Option<f64>,
    /// Monthly plan cost for the months the job spans (whole months).
    pub monthly_total_cost: Option<f64>,
    /// Hours of use per month above which the monthly plan is cheaper than hourly.
    pub monthly_break_even_hours: Option<f64>,
    pub currency: String,
}

pub fn job_cost(hours: f64, gpus: u32, offer: &Offer, s: &CostSettings) -> JobCost {
    let n = f64::from(gpus.max(1));
    let billed = billed_hours(hours, &offer.billing);
    let gpu_cost = billed * offer.price_per_gpu_hour * n;
    let months = hours / HOURS_PER_MONTH;
    let storage_cost = s.storage_gb * s.storage_price_per_gb_month * months;
    let egress_cost = s.egress_gb * s.egress_price_per_gb;
    let extra = storage_cost + egress_cost;
    JobCost {
        gpus,
        job_hours: hours,
        billed_hours: billed,
        gpu_cost,
        storage_cost,
        egress_cost,
        total_cost: gpu_cost + extra,
        spot_total_cost: offer
            .spot_price_per_gpu_hour
            .map(|p| billed * p * n + extra),
        monthly_total_cost: offer
            .price_per_gpu_month
            .map(|m| months.ceil().max(1.0) * m * n + extra),
        monthly_break_even_hours: offer
            .price_per_gpu_month
            .filter(|_| offer.price_per_gpu_hour > 0.0)
            .map(|m| m / offer.price_per_gpu_hour),
        currency: offer.currency.clone(),
    }
}

/// Expected work lost per spot interruption: half a checkpoint interval on average, or the whole
/// job so far when there are no checkpoints. Hours.
pub fn spot_loss_per_interruption_hours(job_hours: f64, checkpoint_minutes: Option<f64>) -> f64 {
    match checkpoint_minutes {
        Some(m) if m > 0.0 => (m / 60.0 / 2.0).min(job_hours),
        _ => job_hours,
    }
}

/// Rent or buy: when does owning a card pay off?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RentVsBuy {
    pub buy_price: f64,
    pub power_w: f64,
    pub electricity_per_hour: f64,
    pub rent_per_hour: f64,
    /// Hours of use after which buying is cheaper (None: electricity alone costs more than renting).
    pub break_even_hours: Option<f64>,
    /// The same at the given utilisation, in months.
    pub break_even_months: Option<f64>,
    pub utilisation: f64,
}

/// Break-even of buying one card versus renting it by the hour. Ignores resale value, the host
/// machine and cooling — the explanation says so.
pub fn rent_vs_buy(
    buy_price: f64,
    power_w: f64,
    electricity_price_per_kwh: f64,
    rent_per_hour: f64,
    utilisation: f64,
) -> RentVsBuy {
    let electricity_per_hour = power_w / 1000.0 * electricity_price_per_kwh;
    let margin = rent_per_hour - electricity_per_hour;
    let hours = (margin > 0.0).then(|| buy_price / margin);
    let u = utilisation.clamp(0.0, 1.0);
    RentVsBuy {
        buy_price,
        power_w,
        electricity_per_hour,
        rent_per_hour,
        break_even_hours: hours,
        break_even_months: hours.filter(|_| u > 0.0).map(|h| h / (HOURS_PER_MONTH * u)),
        utilisation: u,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn started_hours_round_up_like_the_guides_warn() {
        let b = Billing {
            rule: BillingRule::PerStartedHour,
            minimum_minutes: 0.0,
        };
        assert_eq!(billed_hours(70.0 / 60.0, &b), 2.0);
        let m = Billing {
            rule: BillingRule::PerMinute,
            minimum_minutes: 10.0,
        };
        assert!((billed_hours(61.5 / 3600.0, &m) - 10.0 / 60.0).abs() < 1e-12);
        assert!((billed_hours(10.25 / 60.0, &m) - 11.0 / 60.0).abs() < 1e-12);
    }

    #[test]
    fn job_cost_adds_storage_and_egress() {
        let offer = Offer {
            card_id: "rtx-4090".into(),
            price_per_gpu_hour: 2.0,
            price_per_gpu_month: Some(900.0),
            spot_price_per_gpu_hour: Some(0.7),
            ..Default::default()
        };
        let s = CostSettings {
            storage_gb: 100.0,
            storage_price_per_gb_month: 0.1,
            egress_gb: 50.0,
            egress_price_per_gb: 0.05,
            ..Default::default()
        };
        let c = job_cost(HOURS_PER_MONTH, 2, &offer, &s);
        assert!((c.gpu_cost - HOURS_PER_MONTH * 4.0).abs() < 1e-6);
        assert!((c.storage_cost - 10.0).abs() < 1e-9);
        assert!((c.egress_cost - 2.5).abs() < 1e-9);
        assert_eq!(c.monthly_total_cost, Some(1800.0 + 12.5));
        assert_eq!(c.monthly_break_even_hours, Some(450.0));
        assert!(c.spot_total_cost.expect("spot") < c.total_cost);
    }

    #[test]
    fn buying_pays_off_after_price_over_margin() {
        // 15,000 for a card, 450 W at 0.6 per kWh = 0.27 per hour; renting at 2.27 per hour.
        let r = rent_vs_buy(15_000.0, 450.0, 0.6, 2.27, 0.5);
        assert!((r.break_even_hours.expect("pays off") - 7_500.0).abs() < 1e-6);
        assert!((r.break_even_months.expect("months") - 7_500.0 / 365.25).abs() < 1e-6);
        assert_eq!(
            rent_vs_buy(1.0, 1000.0, 1.0, 0.5, 0.5).break_even_hours,
            None
        );
    }

    #[test]
    fn spot_without_checkpoints_loses_everything() {
        assert_eq!(spot_loss_per_interruption_hours(10.0, None), 10.0);
        assert_eq!(spot_loss_per_interruption_hours(10.0, Some(30.0)), 0.25);
    }
}
