//! Which NVIDIA driver branch an upgrade installs. The minimum branch for a CUDA release is often a
//! short-lived one (CUDA 12.6 -> R560, a New Feature Branch with no Ubuntu `-server` package), so
//! the upgrade aims at the lowest *supported* long-term or production branch at or above it, from
//! `data/driver-branches.csv` (NVIDIA's branch page, R615 edition; each row cites its source).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::version::CudaVer;
use crate::infra::error::CoreError;

const DRIVER_BRANCHES_CSV: &str = include_str!("../../data/driver-branches.csv");

/// NVIDIA's kind of driver branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BranchLifecycle {
    /// NVIDIA's "LTSB": supported for years.
    LongTermSupport,
    /// A "Production Branch".
    Production,
    /// A "New Feature Branch": short-lived.
    NewFeature,
    /// The branch's type is not in the data.
    Unknown,
}

/// One branch of `driver-branches.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct DriverBranch {
    /// `R580`.
    pub branch: String,
    pub lifecycle: BranchLifecycle,
    /// The "CUDA Version" the branch reports.
    pub native_cuda: CudaVer,
    /// End of life as `YYYY-MM`, `ended`, or `None` when not captured.
    pub supported_until: Option<String>,
    pub verified: bool,
    pub notes: String,
    pub source: String,
}

impl DriverBranch {
    /// The branch number (`580`).
    pub fn number(&self) -> Option<u32> {
        self.branch.strip_prefix('R')?.parse().ok()
    }

    /// Still supported on `as_of` (`YYYY-MM-DD`): its end of life is a later month.
    pub fn supported_on(&self, as_of: &str) -> bool {
        let Some(until) = self.supported_until.as_deref() else {
            return false;
        };
        let month = |s: &str| {
            let (y, m) = s.get(..7)?.split_once('-')?;
            Some((y.parse::<u32>().ok()?, m.parse::<u32>().ok()?))
        };
        matches!((month(until), month(as_of)), (Some(u), Some(a)) if u > a)
    }
}

/// The branch a driver upgrade installs and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchChoice {
    pub branch: String,
    /// The lowest branch that runs the needed CUDA (NVIDIA's minimum), when the data names it.
    pub minimum_branch: Option<String>,
    pub lifecycle: BranchLifecycle,
    pub supported_until: Option<String>,
    pub source: String,
}

#[derive(Deserialize)]
struct Row {
    branch: String,
    lifecycle: BranchLifecycle,
    native_cuda: String,
    supported_until: String,
    verified: String,
    notes: String,
    source: String,
}

fn parse(text: &str) -> Result<Vec<DriverBranch>, CoreError> {
    let bad = |w: String| CoreError::BundledData(format!("driver-branches.csv: {w}"));
    let mut out = Vec::new();
    let mut rd = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    for row in rd.deserialize::<Row>() {
        let r = row.map_err(|e| bad(e.to_string()))?;
        let native_cuda = CudaVer::parse(&r.native_cuda)
            .ok_or_else(|| bad(format!("bad native_cuda {:?}", r.native_cuda)))?;
        let b = DriverBranch {
            branch: r.branch,
            lifecycle: r.lifecycle,
            native_cuda,
            supported_until: Some(r.supported_until).filter(|s| !s.is_empty()),
            verified: r.verified == "yes",
            notes: r.notes,
            source: r.source,
        };
        if b.number().is_none() {
            return Err(bad(format!("bad branch {:?}", b.branch)));
        }
        out.push(b);
    }
    if out.is_empty() {
        return Err(bad("no rows".into()));
    }
    Ok(out)
}

/// The bundled branch table (parsed once).
pub fn driver_branches() -> Result<&'static [DriverBranch], CoreError> {
    static CELL: OnceLock<Result<Vec<DriverBranch>, String>> = OnceLock::new();
    CELL.get_or_init(|| parse(DRIVER_BRANCHES_CSV).map_err(|e| e.to_string()))
        .as_ref()
        .map(|v| v.as_slice())
        .map_err(|e| CoreError::BundledData(e.clone()))
}

/// The branch to install for CUDA `needs`, whose minimum branch is `minimum` (`R560`): the lowest
/// verified long-term or production branch that is still supported on `as_of`, reports at least
/// `needs` and is at or above the minimum. When none is, the minimum branch itself (its lifecycle
/// from the data, `unknown` when it is not listed) so the note can say it is not a supported one.
pub fn recommend(
    branches: &[DriverBranch],
    needs: CudaVer,
    minimum: Option<&str>,
    as_of: &str,
) -> BranchChoice {
    let min_num = minimum
        .and_then(|m| m.strip_prefix('R'))
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(0);
    let good = branches
        .iter()
        .filter(|b| {
            b.verified
                && matches!(
                    b.lifecycle,
                    BranchLifecycle::LongTermSupport | BranchLifecycle::Production
                )
                && b.supported_on(as_of)
                && b.native_cuda >= needs
                && b.number().is_some_and(|n| n >= min_num)
        })
        .min_by_key(|b| b.number());
    if let Some(b) = good {
        return BranchChoice {
            branch: b.branch.clone(),
            minimum_branch: minimum.map(String::from),
            lifecycle: b.lifecycle,
            supported_until: b.supported_until.clone(),
            source: b.source.clone(),
        };
    }
    let listed = minimum.and_then(|m| branches.iter().find(|b| b.branch == m));
    BranchChoice {
        branch: minimum.unwrap_or("R580").to_string(),
        minimum_branch: minimum.map(String::from),
        lifecycle: listed.map_or(BranchLifecycle::Unknown, |b| b.lifecycle),
        supported_until: listed.and_then(|b| b.supported_until.clone()),
        source: listed.map_or_else(
            || "data/driver-branches.csv (branch not listed)".to_string(),
            |b| b.source.clone(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(needs: (u32, u32), min: &str) -> BranchChoice {
        recommend(
            driver_branches().expect("bundled"),
            CudaVer::new(needs.0, needs.1),
            Some(min),
            "2026-11-30",
        )
    }

    #[test]
    fn an_upgrade_aims_at_a_supported_long_term_or_production_branch() {
        // CUDA 12.6's minimum is R560 (short-lived): R580, long-term until 2028-06.
        let c = pick((12, 6), "R560");
        assert_eq!(
            (c.branch.as_str(), c.lifecycle, c.supported_until.as_deref()),
            ("R580", BranchLifecycle::LongTermSupport, Some("2028-06"))
        );
        assert_eq!(c.minimum_branch.as_deref(), Some("R560"));
        // 12.2 would be R535, whose support ended in June 2026: R580 too.
        assert_eq!(pick((12, 2), "R535").branch, "R580");
        // 13.1 (R590, type unknown) and 13.2: the R595 production branch.
        let c = pick((13, 1), "R590");
        assert_eq!(
            (c.branch.as_str(), c.lifecycle),
            ("R595", BranchLifecycle::Production)
        );
        assert_eq!(pick((13, 2), "R595").branch, "R595");
        // 13.3 needs R610, a New Feature Branch, and nothing supported is above it: the minimum,
        // marked as such.
        let c = pick((13, 3), "R610");
        assert_eq!(
            (c.branch.as_str(), c.lifecycle),
            ("R610", BranchLifecycle::NewFeature)
        );
        let c = pick((13, 4), "R615");
        assert_eq!(
            (c.branch.as_str(), c.lifecycle),
            ("R615", BranchLifecycle::Unknown)
        );
        assert!(c.source.contains("docs.nvidia.com"));
    }

    #[test]
    fn the_table_is_the_snapshots() {
        let b = driver_branches().expect("bundled");
        let row = |n: &str| b.iter().find(|x| x.branch == n).expect(n);
        assert_eq!(row("R580").native_cuda, CudaVer::new(13, 0));
        assert!(row("R580").supported_on("2026-11-30"));
        assert!(!row("R535").supported_on("2026-11-30"));
        assert!(row("R535").supported_on("2026-05-01"));
        assert!(!row("R470").supported_on("2026-11-30"), "ended");
        assert!(!row("R615").verified);
        assert_eq!(row("R610").lifecycle, BranchLifecycle::NewFeature);
    }
}
