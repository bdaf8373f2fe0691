//! Small version types: dotted versions of any length (drivers `570.124.06`, torch `2.8.0`,
//! Python `3.11.13`) and CUDA `major.minor`.

use std::cmp::Ordering;
use std::fmt;

/// A dotted numeric version. Missing parts compare as 0 (`580` == `580.0.0` < `580.65.06`).
/// Parsing stops at the first non-numeric part, so `2.8.0+cu128` reads as `2.8.0`.
#[derive(Debug, Clone)]
pub struct Ver(pub Vec<u32>);

impl Ver {
    pub fn parse(s: &str) -> Option<Ver> {
        let head = s
            .trim()
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .next()?;
        let parts: Vec<u32> = head
            .split('.')
            .take_while(|p| !p.is_empty())
            .map_while(|p| p.parse().ok())
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(Ver(parts))
        }
    }

    pub fn major(&self) -> u32 {
        self.0.first().copied().unwrap_or(0)
    }

    pub fn minor(&self) -> u32 {
        self.0.get(1).copied().unwrap_or(0)
    }

    /// `2.3` matches `2.3.1`; `2.3.0` matches only `2.3.0`.
    pub fn matches_prefix(&self, prefix: &Ver) -> bool {
        prefix
            .0
            .iter()
            .enumerate()
            .all(|(i, p)| self.0.get(i).copied().unwrap_or(0) == *p)
    }
}

impl PartialEq for Ver {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ver {}
impl PartialOrd for Ver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ver {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.0.len().max(other.0.len());
        (0..n)
            .map(|i| {
                let a = self.0.get(i).copied().unwrap_or(0);
                let b = other.0.get(i).copied().unwrap_or(0);
                a.cmp(&b)
            })
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    }
}

impl Ver {
    /// A driver version as NVIDIA writes it: the third part has two digits (`530.30.02`; the
    /// plain display drops the zero, which reads as another driver).
    pub fn driver_text(&self) -> String {
        self.0
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 2 {
                    format!("{p:02}")
                } else {
                    p.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(".")
    }
}

impl fmt::Display for Ver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

/// CUDA `major.minor` (a toolkit, a wheel's CUDA, or a driver's "CUDA Version").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVer {
    pub major: u32,
    pub minor: u32,
}

impl CudaVer {
    pub fn new(major: u32, minor: u32) -> Self {
        CudaVer { major, minor }
    }

    /// `12.8`, `12.8.93`, `13.0`.
    pub fn parse(s: &str) -> Option<CudaVer> {
        let v = Ver::parse(s)?;
        if v.0.len() < 2 {
            return None;
        }
        Some(CudaVer::new(v.major(), v.minor()))
    }

    /// `cu128` -> 12.8, `cu130` -> 13.0, `cu102` -> 10.2.
    pub fn from_variant(variant: &str) -> Option<CudaVer> {
        let digits = variant.strip_prefix("cu")?;
        if digits.len() < 3 || !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let (maj, min) = digits.split_at(digits.len() - 1);
        Some(CudaVer::new(maj.parse().ok()?, min.parse().ok()?))
    }

    /// `cuDriverGetVersion` encoding: 12080 -> 12.8, 11040 -> 11.4.
    pub fn from_driver_api(n: u32) -> CudaVer {
        CudaVer::new(n / 1000, (n % 1000) / 10)
    }

    pub fn variant(&self) -> String {
        format!("cu{}{}", self.major, self.minor)
    }
}

impl fmt::Display for CudaVer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Compute capability `(major, minor)` from `8.9`, `(8, 9)` or `sm_89`-style text.
pub fn parse_cc(s: &str) -> Option<(u32, u32)> {
    let s = s.trim().trim_start_matches('(').trim_end_matches(')');
    if let Some((a, b)) = s.split_once(',') {
        return Some((a.trim().parse().ok()?, b.trim().parse().ok()?));
    }
    crate::catalog::parse_cc(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically_with_missing_parts_as_zero() {
        let v = |s| Ver::parse(s).expect(s);
        assert!(v("570.124.06") > v("570.26"));
        assert!(v("580") < v("580.65.06"));
        assert_eq!(v("2.8.0+cu128"), v("2.8"));
        assert!(v("2.10.0") > v("2.9.1"));
        assert!(v("2.3.1").matches_prefix(&v("2.3")));
        assert!(!v("2.3.1").matches_prefix(&v("2.3.0")));
        assert_eq!(v("3.11.13 (main, Jun  4 2025)").to_string(), "3.11.13");
        assert!(Ver::parse("N/A").is_none());
    }

    #[test]
    fn cuda_versions_from_text_variants_and_the_driver_api() {
        assert_eq!(CudaVer::parse("12.8.93"), Some(CudaVer::new(12, 8)));
        assert_eq!(CudaVer::from_variant("cu128"), Some(CudaVer::new(12, 8)));
        assert_eq!(CudaVer::from_variant("cu102"), Some(CudaVer::new(10, 2)));
        assert_eq!(CudaVer::from_variant("cpu"), None);
        assert_eq!(CudaVer::from_driver_api(11040), CudaVer::new(11, 4));
        assert_eq!(CudaVer::new(13, 0).variant(), "cu130");
        assert_eq!(parse_cc("(9, 0)"), Some((9, 0)));
        assert_eq!(parse_cc("12.0"), Some((12, 0)));
    }
}
