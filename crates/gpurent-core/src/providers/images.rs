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

/// The host CUDA (driver capability, `major.minor`) an image needs, so a create can pin it
/// (RunPod `gpu.minCudaVersion`): the image's row of `data/provider-images.csv` when it has a
/// `host_cuda_min`, else the CUDA build its tag names — `cu1281` / `cu128` (RunPod's and
/// PyTorch's wheel tags: 12.8), `cuda12.8` (`pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime`), or
/// a tag that starts with the version on `nvidia/cuda` (`12.4.1-cudnn-runtime-ubuntu22.04`).
/// `None` when neither says (nothing is pinned then).
pub fn host_cuda_min(image: &str) -> Option<String> {
    let image = image.trim();
    if let Ok(rows) = all() {
        if let Some(r) = rows
            .iter()
            .find(|r| r.image == image && !r.host_cuda_min.trim().is_empty())
        {
            return Some(r.host_cuda_min.trim().to_string());
        }
    }
    // The tag: after the last `:` that follows the last `/` (a registry port is not a tag).
    let last = image.rsplit('/').next().unwrap_or(image);
    let (repo_tail, tag) = last.split_once(':')?;
    let tag = tag.split('@').next().unwrap_or(tag).to_ascii_lowercase();
    let cuda_repo = repo_tail.eq_ignore_ascii_case("cuda");
    if cuda_repo {
        let re = regex::Regex::new(r"^(\d{1,2})\.(\d{1,2})").ok()?;
        if let Some(c) = re.captures(&tag) {
            return Some(format!("{}.{}", &c[1], &c[2]));
        }
    }
    let re = regex::Regex::new(r"(?:^|[-_.])cuda(\d{1,2})\.(\d{1,2})").ok()?;
    if let Some(c) = re.captures(&tag) {
        return Some(format!("{}.{}", &c[1], &c[2]));
    }
    let re = regex::Regex::new(r"(?:^|[-_.])cu(\d{2,4})(?:$|[-_.])").ok()?;
    let d = re.captures(&tag)?.get(1)?.as_str().to_string();
    // cu92 = 9.2, cu118 = 11.8, cu1281 = 12.8(.1): the major is what is left of the minor.
    let (major, minor) = match d.len() {
        2 => (&d[..1], &d[1..2]),
        _ => (&d[..2], &d[2..3]),
    };
    Some(format!("{}.{}", major.trim_start_matches('0'), minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_images_host_cuda_comes_from_its_row_or_its_tag() {
        assert_eq!(
            host_cuda_min("runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404").as_deref(),
            Some("12.8")
        );
        assert_eq!(
            host_cuda_min("runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04").as_deref(),
            Some("12.4")
        );
        assert_eq!(
            host_cuda_min("pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime").as_deref(),
            Some("12.8")
        );
        assert_eq!(
            host_cuda_min("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04").as_deref(),
            Some("12.4")
        );
        assert_eq!(
            host_cuda_min("ghcr.io/x/train:0.1-cu118").as_deref(),
            Some("11.8")
        );
        assert_eq!(host_cuda_min("localhost:5000/img").as_deref(), None);
        assert_eq!(host_cuda_min("vastai/pytorch").as_deref(), None);
        assert_eq!(host_cuda_min("ubuntu:22.04").as_deref(), None);
        assert_eq!(host_cuda_min("lambda-stack").as_deref(), None);
    }

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
