//! The user's GPU prices. gpurent ships no prices it cannot source: the user enters what their
//! platform charges per card, and gpurent remembers it (SQLite `card_prices`) and uses it for
//! cost estimates and rankings.

use rusqlite::params;

use crate::catalog::Catalog;
use crate::estimate::Offer;
use crate::infra::error::CoreError;
use crate::infra::store::Store;

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

/// Saved prices, by card id.
pub fn list(store: &Store) -> Result<Vec<Offer>, CoreError> {
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

/// Save (or replace) the price of one card (validated, currency upper-cased); returns all saved
/// prices.
pub fn save(store: &Store, offer: &Offer, now_ms: i64) -> Result<Vec<Offer>, CoreError> {
    validate(offer)?;
    let mut offer = offer.clone();
    offer.currency = offer.currency.trim().to_uppercase();
    let json =
        serde_json::to_string(&offer).map_err(|e| CoreError::invalid("offer", e.to_string()))?;
    store.conn().execute(
        "INSERT INTO card_prices(card_id, offer_json, updated_ms) VALUES (?1, ?2, ?3)
         ON CONFLICT(card_id) DO UPDATE SET offer_json = excluded.offer_json,
                                            updated_ms = excluded.updated_ms",
        params![offer.card_id, json, now_ms],
    )?;
    list(store)
}

/// Forget the price of one card; returns all saved prices.
pub fn delete(store: &Store, card_id: &str) -> Result<Vec<Offer>, CoreError> {
    store
        .conn()
        .execute("DELETE FROM card_prices WHERE card_id = ?1", [card_id])?;
    list(store)
}
