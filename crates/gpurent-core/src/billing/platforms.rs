//! The billing rules of the platforms a pasted host comes from (AutoDL, 恒源云, 矩池云, Featurize,
//! other), as data with a source per fact (`data/platform-rules.csv`). A fact gpurent could not
//! find stated is `unknown`: then the user's own rule applies and gpurent says so — it never
//! guesses a platform's rule.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::rules::{Increment, Verified};
use crate::infra::error::CoreError;

const PLATFORMS_CSV: &str = include_str!("../../data/platform-rules.csv");

/// The platform a pasted host was rented on (the user picks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    Autodl,
    /// 恒源云.
    Gpushare,
    /// 矩池云.
    Matpool,
    Featurize,
    Other,
}

impl Platform {
    pub const ALL: [Platform; 5] = [
        Platform::Autodl,
        Platform::Gpushare,
        Platform::Matpool,
        Platform::Featurize,
        Platform::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Autodl => "autodl",
            Platform::Gpushare => "gpushare",
            Platform::Matpool => "matpool",
            Platform::Featurize => "featurize",
            Platform::Other => "other",
        }
    }

    /// The name as typed: `autodl`, `gpushare` / `hengyuan` / `恒源云`, `matpool` / `矩池云`, …
    pub fn parse(s: &str) -> Option<Platform> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "autodl" => Platform::Autodl,
            "gpushare" | "hengyuan" | "恒源云" => Platform::Gpushare,
            "matpool" | "jc" | "矩池云" => Platform::Matpool,
            "featurize" => Platform::Featurize,
            "other" => Platform::Other,
            _ => return None,
        })
    }
}

/// Which fact a row states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PlatformFactKind {
    Increment,
    StorageWhileOff,
    ReleaseAfterDaysOff,
    /// What the platform's no-GPU mode costs per hour, in yuan (AutoDL 无卡模式: the machine
    /// powered on without its GPU, for setup and uploads).
    NoGpuMode,
}

/// One row of `data/platform-rules.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PlatformFact {
    pub platform: Platform,
    pub fact: PlatformFactKind,
    /// As written: `second`, `yes`, `15`, or `unknown`.
    pub value: String,
    pub verified: Verified,
    pub source: String,
    pub note: String,
}

/// What gpurent knows of one platform's billing (`None`: not known).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PlatformRules {
    pub platform: Platform,
    /// How a running span is rounded; `None`: the user's rule applies.
    pub increment: Option<Increment>,
    /// Whether the disk bills while the machine is powered off.
    pub storage_while_off: Option<bool>,
    /// Powered off this many days in a row, the platform releases the machine and wipes its data.
    pub release_after_days_off: Option<u32>,
    /// The no-GPU mode's price per hour in yuan (powered on without the GPU: setup, uploads,
    /// downloads at a fraction of the price), where the platform has one and it was found.
    pub no_gpu_cny_per_hour: Option<f64>,
    /// The rows it was read from (each with its source and whether it is verified).
    pub facts: Vec<PlatformFact>,
}

fn all_facts() -> Result<&'static [PlatformFact], CoreError> {
    static CELL: OnceLock<Result<Vec<PlatformFact>, String>> = OnceLock::new();
    CELL.get_or_init(|| {
        let rows = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .from_reader(PLATFORMS_CSV.as_bytes())
            .deserialize::<PlatformFact>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("platform-rules.csv: {e}"))?;
        for r in &rows {
            if parse_value(r).is_err() {
                return Err(format!(
                    "platform-rules.csv: {} {:?}: '{}'",
                    r.platform.as_str(),
                    r.fact,
                    r.value
                ));
            }
        }
        Ok(rows)
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(|e| CoreError::BundledData(e.clone()))
}

/// A row's value read as its fact: `Ok(None)` for `unknown`.
enum Value {
    Increment(Increment),
    Bool(bool),
    Days(u32),
    Price(f64),
}

fn parse_value(r: &PlatformFact) -> Result<Option<Value>, ()> {
    let v = r.value.trim();
    if v == "unknown" {
        return Ok(None);
    }
    Ok(Some(match r.fact {
        PlatformFactKind::Increment => Value::Increment(match v {
            "second" => Increment::Second,
            "minute" => Increment::Minute,
            "hour" => Increment::Hour,
            _ => return Err(()),
        }),
        PlatformFactKind::StorageWhileOff => Value::Bool(match v {
            "yes" => true,
            "no" => false,
            _ => return Err(()),
        }),
        PlatformFactKind::ReleaseAfterDaysOff => Value::Days(v.parse().map_err(|_| ())?),
        PlatformFactKind::NoGpuMode => match v.parse::<f64>() {
            Ok(p) if p.is_finite() && p >= 0.0 => Value::Price(p),
            _ => return Err(()),
        },
    }))
}

/// What gpurent knows of `platform`'s billing.
pub fn rules_for(platform: Platform) -> Result<PlatformRules, CoreError> {
    let facts: Vec<PlatformFact> = all_facts()?
        .iter()
        .filter(|r| r.platform == platform)
        .cloned()
        .collect();
    let mut out = PlatformRules {
        platform,
        increment: None,
        storage_while_off: None,
        release_after_days_off: None,
        no_gpu_cny_per_hour: None,
        facts: vec![],
    };
    for f in &facts {
        match parse_value(f) {
            Ok(Some(Value::Increment(i))) => out.increment = Some(i),
            Ok(Some(Value::Bool(b))) => out.storage_while_off = Some(b),
            Ok(Some(Value::Days(d))) => out.release_after_days_off = Some(d),
            Ok(Some(Value::Price(p))) => out.no_gpu_cny_per_hour = Some(p),
            _ => {}
        }
    }
    out.facts = facts;
    Ok(out)
}

/// A rate's rule against its platform's: where the platform's rounding is known, the rate must
/// use it (cost follows the platform); where it is not, the user's rule stands.
pub fn check_rule(rules: &PlatformRules, rule: Increment) -> Result<(), CoreError> {
    match rules.increment {
        Some(i) if i != rule => Err(CoreError::invalid(
            "rule",
            format!(
                "{} bills {}: the rule must be {}",
                rules.platform.as_str(),
                i.rule_name(),
                i.rule_name()
            ),
        )),
        _ => Ok(()),
    }
}

/// When a host powered off since `stopped_ms` is released by its platform (`None`: not known).
pub fn release_at_ms(rules: &PlatformRules, stopped_ms: i64) -> Option<i64> {
    rules
        .release_after_days_off
        .map(|d| stopped_ms + i64::from(d) * 86_400_000)
}

/// Every platform's rules, in [`Platform::ALL`] order (for the rate form).
pub fn all() -> Result<Vec<PlatformRules>, CoreError> {
    Platform::ALL.into_iter().map(rules_for).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row cites a source; every unverified row says why; AutoDL's release after 15 days
    /// off is there (marked unverified: seen in the console text, not in its docs); what was not
    /// found stays unknown instead of a guess.
    #[test]
    fn the_bundled_platform_rules_load_with_a_source_per_fact() {
        let facts = all_facts().expect("facts");
        assert!(!facts.is_empty());
        for f in facts {
            assert!(f.source.starts_with("https://"), "{f:?}");
            if f.verified == Verified::Unverified {
                assert!(!f.note.is_empty(), "{f:?}");
            }
        }
        let autodl = rules_for(Platform::Autodl).expect("autodl");
        assert_eq!(autodl.release_after_days_off, Some(15));
        assert_eq!(autodl.increment, None, "not found: not guessed");
        // The no-GPU mode's price, second hand (unverified), with the page it cites.
        assert_eq!(autodl.no_gpu_cny_per_hour, Some(0.1));
        let no_gpu = autodl
            .facts
            .iter()
            .find(|f| f.fact == PlatformFactKind::NoGpuMode)
            .expect("row");
        assert_eq!(no_gpu.verified, Verified::Unverified);
        assert!(no_gpu.note.contains("power_on"), "{no_gpu:?}");
        let other = rules_for(Platform::Other).expect("other");
        assert_eq!(
            (other.increment, other.storage_while_off, other.facts.len()),
            (None, None, 0)
        );
        assert_eq!(all().expect("all").len(), Platform::ALL.len());
        for p in Platform::ALL {
            assert_eq!(Platform::parse(p.as_str()), Some(p));
        }
        assert_eq!(Platform::parse("恒源云"), Some(Platform::Gpushare));
        assert_eq!(Platform::parse("aws"), None);
    }

    /// Where the platform's rounding is known the rate must use it; where not, any rule stands.
    #[test]
    fn a_known_rounding_is_the_rule_and_release_counts_from_the_stop() {
        let hourly = PlatformRules {
            platform: Platform::Other,
            increment: Some(Increment::Hour),
            storage_while_off: None,
            release_after_days_off: Some(15),
            no_gpu_cny_per_hour: None,
            facts: vec![],
        };
        assert!(check_rule(&hourly, Increment::Hour).is_ok());
        let e = check_rule(&hourly, Increment::Second).expect_err("contradicts");
        assert_eq!(crate::infra::ipc::Coded::code(&e), "invalid_input");
        let unknown = PlatformRules {
            increment: None,
            ..hourly.clone()
        };
        assert!(check_rule(&unknown, Increment::Second).is_ok());
        assert_eq!(release_at_ms(&hourly, 1_000), Some(1_000 + 15 * 86_400_000));
        assert_eq!(
            release_at_ms(&rules_for(Platform::Gpushare).expect("g"), 0),
            None
        );
    }

    #[test]
    fn values_are_read_by_their_fact() {
        let row = |fact, value: &str| PlatformFact {
            platform: Platform::Other,
            fact,
            value: value.into(),
            verified: Verified::Docs,
            source: "https://example.com".into(),
            note: String::new(),
        };
        assert!(matches!(
            parse_value(&row(PlatformFactKind::Increment, "hour")),
            Ok(Some(Value::Increment(Increment::Hour)))
        ));
        assert!(matches!(
            parse_value(&row(PlatformFactKind::ReleaseAfterDaysOff, "7")),
            Ok(Some(Value::Days(7)))
        ));
        assert!(matches!(
            parse_value(&row(PlatformFactKind::StorageWhileOff, "unknown")),
            Ok(None)
        ));
        assert!(parse_value(&row(PlatformFactKind::Increment, "fortnight")).is_err());
        assert!(parse_value(&row(PlatformFactKind::StorageWhileOff, "15")).is_err());
    }
}
