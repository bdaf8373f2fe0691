//! The machines a connected account lists that gpurent did not start, as the reconciles saw them
//! (kept in memory by the facade between reads): what each has cost since gpurent first saw it.

use crate::providers::ledger::ForeignInstance;

/// A machine a connected account lists that gpurent did not start, as the reconciles saw it
/// (memory only): what it has cost since gpurent first saw it, counted between reads while it
/// billed at the price read.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignSeen {
    pub foreign: ForeignInstance,
    pub first_seen_ms: i64,
    pub seen_ms: i64,
    /// USD billed between the first read and `seen_ms` (while both reads said it billed).
    pub usd_until_seen: f64,
}

impl ForeignSeen {
    /// Its price per hour now (0 when it does not bill its GPU or the price is not reported).
    pub fn usd_per_hour(&self) -> f64 {
        if self.foreign.billing {
            self.foreign
                .instance
                .price_per_hour_usd
                .unwrap_or(0.0)
                .max(0.0)
        } else {
            0.0
        }
    }
}

/// The new reads of the accounts that answered replace their old ones; a machine seen before
/// keeps its first sight and adds what it billed since the last read; the accounts that could
/// not be read keep what was seen before.
pub fn merge(
    old: &[ForeignSeen],
    fresh: &[ForeignInstance],
    answered: &[String],
    now_ms: i64,
) -> Vec<ForeignSeen> {
    let mut out: Vec<ForeignSeen> = old
        .iter()
        .filter(|o| !answered.contains(&o.foreign.account))
        .cloned()
        .collect();
    for f in fresh {
        let before = old.iter().find(|o| {
            o.foreign.account == f.account
                && o.foreign.provider == f.provider
                && o.foreign.instance.id == f.instance.id
        });
        out.push(match before {
            Some(b) => ForeignSeen {
                foreign: f.clone(),
                first_seen_ms: b.first_seen_ms,
                seen_ms: now_ms,
                usd_until_seen: b.usd_until_seen
                    + if f.billing {
                        b.usd_per_hour() * (now_ms - b.seen_ms).max(0) as f64 / 3_600_000.0
                    } else {
                        0.0
                    },
            },
            None => ForeignSeen {
                foreign: f.clone(),
                first_seen_ms: now_ms,
                seen_ms: now_ms,
                usd_until_seen: 0.0,
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::{ProviderKind, RemoteInstance, RemoteState};

    fn listed(account: &str, id: &str, billing: bool, price: Option<f64>) -> ForeignInstance {
        ForeignInstance {
            provider: ProviderKind::Vast,
            account: account.into(),
            instance: RemoteInstance {
                provider: ProviderKind::Vast,
                id: id.into(),
                label: None,
                state: RemoteState::Running,
                raw_status: "running".into(),
                gpu: None,
                gpu_count: None,
                price_per_hour_usd: price,
                ssh: None,
                host_cuda: None,
            },
            billing,
        }
    }

    #[test]
    fn a_machine_seen_again_keeps_its_first_sight_and_adds_what_it_billed_since() {
        let first = merge(
            &[],
            &[listed("a", "1", true, Some(2.0))],
            &["a".into()],
            1_000,
        );
        assert_eq!(first[0].first_seen_ms, 1_000);
        assert_eq!(first[0].usd_until_seen, 0.0);
        let hour = 3_600_000;
        let again = merge(
            &first,
            &[listed("a", "1", true, Some(3.0))],
            &["a".into()],
            1_000 + hour,
        );
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].first_seen_ms, 1_000);
        assert_eq!(again[0].seen_ms, 1_000 + hour);
        // The hour since the last read is billed at the price that read saw.
        assert!((again[0].usd_until_seen - 2.0).abs() < 1e-9);
        assert_eq!(again[0].usd_per_hour(), 3.0);
    }

    #[test]
    fn an_account_that_did_not_answer_keeps_what_was_seen_and_one_that_did_replaces_it() {
        let old = merge(
            &[],
            &[
                listed("a", "1", true, Some(1.0)),
                listed("b", "2", false, Some(1.0)),
            ],
            &["a".into(), "b".into()],
            0,
        );
        // `a` answered and no longer lists its machine; `b` could not be read.
        let now = merge(&old, &[], &["a".into()], 10);
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].foreign.account, "b");
        // Not billing its GPU: no price per hour, nothing added.
        assert_eq!(now[0].usd_per_hour(), 0.0);
        assert_eq!(now[0].usd_until_seen, 0.0);
    }
}
