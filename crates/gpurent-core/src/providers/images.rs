//! Default PyTorch images per provider, from `data/provider-images.csv` (each row cites its
//! source and says what was verified).

use super::ProviderKind;
use crate::infra::error::CoreError;

/// Lambda's default: send no image field (the VM boots Lambda Stack).
pub const LAMBDA_DEFAULT: &str = "lambda-stack";

const CSV: &str = include_str!("../../data/provider-images.csv");

/// One row of the data file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ImageRow {
    pub provider: String,
    pub image: String,
    pub cuda: String,
    pub torch: String,
    pub host_cuda_min: String,
    pub verified: String,
    pub source: String,
}

/// Every row.
pub fn all() -> Result<Vec<ImageRow>, CoreError> {
    let mut r = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(CSV.as_bytes());
    r.deserialize()
        .collect::<Result<Vec<ImageRow>, _>>()
        .map_err(|e| CoreError::BundledData(format!("provider-images.csv: {e}")))
}

/// The default image of a provider.
pub fn default_image(kind: ProviderKind) -> Result<String, CoreError> {
    all()?
        .into_iter()
        .find(|r| r.provider == kind.as_str())
        .map(|r| r.image)
        .ok_or_else(|| CoreError::BundledData(format!("no default image for {kind}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_has_a_cited_default() {
        for k in ProviderKind::ALL {
            let img = default_image(k).expect("row");
            assert!(!img.is_empty());
        }
        for r in all().expect("rows") {
            assert!(!r.source.is_empty() && !r.verified.is_empty(), "{r:?}");
        }
        assert_eq!(
            default_image(ProviderKind::Lambda).expect("row"),
            LAMBDA_DEFAULT
        );
    }
}
