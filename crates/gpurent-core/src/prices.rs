//! The user's GPU prices. gpurent ships no prices it cannot source: the user enters what their
//! platform charges per card, and gpurent remembers it (SQLite `card_prices`) and uses it for
//! cost estimates and rankings.

use rusqlite::params;

use crate::app::App;
use crate::catalog::Catalog;
use crate::error::CoreError;
use crate::estimate::Offer;
use crate::store::Store;

/// Check an offer before saving: a catalog card, finite non-negative prices, a short currency.
pub fn validate(offer: &Offer) -> Result<(), CoreError> {
    Catalog::bundled()?.get(&offer.card_id)?;
    let price_ok = |v: f64| v.is_finite() && v >= 0.0;
    if !price_ok(offer.price_per_gpu_hour) {
        return Err(CoreError::invalid(
            "price_per_gpu_hour",
            "must be a price of 0 or more",
        ));
    }
    for (field, v) in [
        ("price_per_gpu_month", offer.price_per_gpu_month),
        ("spot_price_per_gpu_hour", offer.spot_price_per_gpu_hour),
    ] {
        if v.is_some_and(|v| !price_ok(v)) {
            return Err(CoreError::invalid(field, "must be a price of 0 or more"));
        }
    }
    let m = offer.billing.minimum_minutes;
    if !(m.is_finite() && m >= 0.0) {
        return Err(CoreError::invalid(
            "billing.minimum_minutes",
            "must be 0 or more minutes",
        ));
    }
    let c = offer.currency.trim();
    if c.is_empty() || c.chars().count() > 8 {
        return Err(CoreError::invalid(
            "currency",
            "must be a short code such as USD or CNY",
        ));
    }
    Ok(())
}

fn list(store: &Store) -> Result<Vec<Offer>, CoreError> {
    let mut stmt = store
        .conn()
        .prepare("SELECT card_id, offer_json FROM card_prices ORDER BY card_id")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (card_id, json) = row?;
        match serde_json::from_str::<Offer>(&json) {
            Ok(o) => out.push(o),
            // A row written by a future version: skip it rather than fail the whole list.
            Err(e) => tracing::warn!(card_id, "unreadable saved price: {e}"),
        }
    }
    Ok(out)
}

impl App {
    /// Saved prices, by card id.
    pub fn prices(&self) -> Result<Vec<Offer>, CoreError> {
        self.with_store(list)
    }

    /// Save (or replace) the price of one card; returns all saved prices.
    pub fn price_set(&self, offer: &Offer) -> Result<Vec<Offer>, CoreError> {
        validate(offer)?;
        let mut offer = offer.clone();
        offer.currency = offer.currency.trim().to_uppercase();
        let json = serde_json::to_string(&offer)
            .map_err(|e| CoreError::invalid("offer", e.to_string()))?;
        let now = self.now_ms();
        self.with_store(|s| {
            s.conn().execute(
                "INSERT INTO card_prices(card_id, offer_json, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(card_id) DO UPDATE SET offer_json = excluded.offer_json,
                                                    updated_ms = excluded.updated_ms",
                params![offer.card_id, json, now],
            )?;
            list(s)
        })
    }

    /// Forget the price of one card; returns all saved prices.
    pub fn price_delete(&self, card_id: &str) -> Result<Vec<Offer>, CoreError> {
        self.with_store(|s| {
            s.conn()
                .execute("DELETE FROM card_prices WHERE card_id = ?1", [card_id])?;
            list(s)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::FixedClock;
    use crate::estimate::{Billing, BillingRule};
    use crate::paths::Paths;

    fn offer(card: &str, price: f64) -> Offer {
        Offer {
            card_id: card.into(),
            price_per_gpu_hour: price,
            currency: " cny ".into(),
            billing: Billing {
                rule: BillingRule::PerStartedHour,
                minimum_minutes: 0.0,
            },
            ..Default::default()
        }
    }

    #[test]
    fn prices_are_remembered_across_restarts_replaced_and_deleted() {
        let tmp = tempfile::tempdir().expect("tmp");
        let open =
            || App::open(Paths::under(tmp.path()), Arc::new(FixedClock(7)), None).expect("open");
        let app = open();
        assert!(app.prices().expect("empty").is_empty());
        app.price_set(&offer("rtx-4090", 1.98)).expect("set");
        app.price_set(&offer("h100-sxm", 15.0)).expect("set");
        let all = app.price_set(&offer("rtx-4090", 2.2)).expect("replace");
        assert_eq!(all.len(), 2);
        drop(app);
        let app = open();
        let all = app.prices().expect("list");
        let p4090 = all.iter().find(|o| o.card_id == "rtx-4090").expect("4090");
        assert_eq!(p4090.price_per_gpu_hour, 2.2);
        assert_eq!(p4090.currency, "CNY");
        assert_eq!(p4090.billing.rule, BillingRule::PerStartedHour);
        let left = app.price_delete("h100-sxm").expect("delete");
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn bad_prices_are_refused_and_nothing_is_saved() {
        let tmp = tempfile::tempdir().expect("tmp");
        let app = App::open(Paths::under(tmp.path()), Arc::new(FixedClock(7)), None).expect("open");
        for (bad, code_field) in [
            (offer("rtx-4090", -1.0), "price_per_gpu_hour"),
            (offer("rtx-4090", f64::NAN), "price_per_gpu_hour"),
            (
                Offer {
                    currency: "".into(),
                    ..offer("rtx-4090", 1.0)
                },
                "currency",
            ),
        ] {
            match app.price_set(&bad) {
                Err(CoreError::InvalidInput { field, .. }) => assert_eq!(field, code_field),
                other => panic!("expected InvalidInput for {code_field}, got {other:?}"),
            }
        }
        assert!(matches!(
            app.price_set(&offer("rtx-9999", 1.0)),
            Err(CoreError::UnknownCard(_))
        ));
        assert!(app.prices().expect("list").is_empty());
    }
}
