//! A pasted host's billing after its guard powered it off (docs/billing.md), from the machine's
//! own record only: a record from another boot than now proves it — `powered_off` at the record's
//! time, `running` at the machine's boot time; a record on this boot is a power-off under way
//! (kept, for when the host stops answering), or — when the host's no longer answering was taken
//! as its power-off — proof it did not go off (`running` at that same time: nothing was saved).
//! Host times are moved onto this computer's clock by the host's own `now`. Nothing happens for a
//! host without a rate. The guard's facade reads the record over SSH and hands it here.

use crate::billing::rates::{self, RateEventKind};
use crate::infra::error::CoreError;
use crate::infra::store::Store;

/// Two readings of one record, moved onto this clock at two contacts, are the same record when
/// this close.
const SAME_RECORD_MS: i64 = 5_000;

/// What the machine said of itself at one contact (the guard's fetch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen<'a> {
    /// The guard's power-off record: when (host clock, s) and on which boot.
    pub poweroff_at_s: Option<i64>,
    pub poweroff_boot_id: Option<&'a str>,
    /// The host's clock and boot now, and how long it has been up.
    pub host_now_s: Option<i64>,
    pub boot_id: Option<&'a str>,
    pub uptime_s: Option<i64>,
}

/// The `meta` key of a guard power-off record seen on the machine's current boot (the power-off
/// under way): if the host then no longer answers, it went off at this time.
fn pending_meta(label: &str) -> String {
    format!("guard_poweroff_pending:{label}")
}

/// Record what one contact's [`Seen`] proves about `label`'s billing (see the module).
pub fn record(store: &Store, label: &str, seen: &Seen, now: i64) -> Result<(), CoreError> {
    let (Some(at), Some(rec_boot), Some(host_now), Some(boot)) = (
        seen.poweroff_at_s,
        seen.poweroff_boot_id,
        seen.host_now_s,
        seen.boot_id,
    ) else {
        return Ok(());
    };
    let at_ms = now + (at - host_now) * 1000;
    let pending = pending_meta(label);
    if boot != rec_boot {
        rates::record_guard_event(
            store,
            label,
            RateEventKind::PoweredOff,
            at_ms,
            "the guard powered the machine off (its record; the machine has booted since)",
            now,
        )?;
        if let Some(up) = seen.uptime_s {
            let boot_ms = now - up * 1000;
            if boot_ms > at_ms {
                rates::record_guard_event(
                    store,
                    label,
                    RateEventKind::Running,
                    boot_ms,
                    "running again: the machine's boot time",
                    now,
                )?;
            }
        }
        store.meta_set(&pending, "")?;
        return Ok(());
    }
    // The same record, moved onto this clock at another contact: within a few seconds.
    let taken_as_off = rates::get(store, label)?.and_then(|r| {
        r.history
            .iter()
            .find(|e| {
                e.kind == RateEventKind::PoweredOff
                    && e.source == "guard"
                    && (e.at_ms - at_ms).abs() <= SAME_RECORD_MS
            })
            .map(|e| e.at_ms)
    });
    if let Some(at_ms) = taken_as_off {
        rates::record_guard_event(
            store,
            label,
            RateEventKind::Running,
            at_ms,
            "it answered again on the same boot: it did not power off",
            now,
        )?;
        store.meta_set(&pending, "")?;
    } else {
        store.meta_set(&pending, &at_ms.to_string())?;
    }
    Ok(())
}

/// The host no longer answers: when its guard's power-off record was seen under way on the last
/// contact, it went off then (`powered_off` at the record's time). `true` when recorded.
pub fn no_answer(store: &Store, label: &str, now: i64) -> Result<bool, CoreError> {
    let Some(at_ms) = store
        .meta_get(&pending_meta(label))?
        .and_then(|v| v.parse::<i64>().ok())
    else {
        return Ok(false);
    };
    rates::record_guard_event(
        store,
        label,
        RateEventKind::PoweredOff,
        at_ms,
        "the guard recorded a power-off and the machine no longer answers",
        now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::billing::{Currency, Increment, PastedRate};

    const HOUR: i64 = 3_600_000;
    const NOW: i64 = 1_764_000_000_000;
    /// The host's clock runs 100 s ahead of this computer's; its guard's record is 2 h old, from
    /// boot `boot-a`.
    const HOST_NOW_S: i64 = NOW / 1000 + 100;

    fn store_with_rate() -> Store {
        let s = Store::open_in_memory().expect("store");
        let rate = PastedRate {
            usd_per_hour: 2.0,
            rule: Increment::Second,
            storage_usd_per_day: None,
            currency: Currency::Usd,
            platform: None,
        };
        rates::set(&s, "box", &rate, NOW - 3 * HOUR, NOW).expect("rate");
        s
    }

    fn seen(boot: &str, uptime_s: i64) -> Seen<'_> {
        Seen {
            poweroff_at_s: Some(HOST_NOW_S - 2 * 3600),
            poweroff_boot_id: Some("boot-a"),
            host_now_s: Some(HOST_NOW_S),
            boot_id: Some(boot),
            uptime_s: Some(uptime_s),
        }
    }

    fn guard_events(s: &Store) -> Vec<(RateEventKind, i64)> {
        let r = rates::get(s, "box").expect("get").expect("rate");
        r.history
            .iter()
            .filter(|e| e.source == "guard")
            .map(|e| (e.kind, e.at_ms))
            .collect()
    }

    #[test]
    fn a_record_from_another_boot_is_proof_off_then_running_from_the_boot_once() {
        let s = store_with_rate();
        record(&s, "box", &seen("boot-b", 1800), NOW).expect("new boot");
        record(&s, "box", &seen("boot-b", 1800), NOW).expect("again: once");
        assert_eq!(
            guard_events(&s),
            [
                (RateEventKind::PoweredOff, NOW - 2 * HOUR),
                (RateEventKind::Running, NOW - HOUR / 2)
            ]
        );
        assert!(!no_answer(&s, "box", NOW).expect("nothing pending"));
    }

    #[test]
    fn a_record_on_this_boot_waits_for_no_answer_and_an_answer_on_it_undoes_it() {
        let s = store_with_rate();
        assert!(
            !no_answer(&s, "box", NOW).expect("no record"),
            "no evidence"
        );
        record(&s, "box", &seen("boot-a", 9000), NOW).expect("under way");
        assert!(guard_events(&s).is_empty(), "under way is not evidence");
        assert!(no_answer(&s, "box", NOW).expect("no answer"));
        assert_eq!(
            guard_events(&s),
            [(RateEventKind::PoweredOff, NOW - 2 * HOUR)]
        );
        // It answers again on the same boot (its record read 2 s later): it did not go off.
        record(&s, "box", &seen("boot-a", 9002), NOW + 2_000).expect("same boot again");
        assert_eq!(
            guard_events(&s),
            [
                (RateEventKind::PoweredOff, NOW - 2 * HOUR),
                (RateEventKind::Running, NOW - 2 * HOUR)
            ]
        );
    }

    #[test]
    fn a_host_without_a_rate_or_a_record_is_left_alone() {
        let s = Store::open_in_memory().expect("store");
        record(&s, "none", &seen("boot-b", 1800), NOW).expect("no rate");
        record(&s, "none", &Seen::default(), NOW).expect("no record");
        assert!(!no_answer(&s, "none", NOW).expect("nothing"));
    }
}
