//! RunPod REST API v2 (`https://api.runpod.io/v2/...`, spec `tests/provider-specs/runpod-rest-v2.openapi.json`).
//!
//! - Offers: `GET /v2/catalog/gpus?include=AVAILABILITY&product=POD&count=N&cloud=C`, once per
//!   cloud (`SECURE`, `COMMUNITY`: availability and CUDA versions are scoped by both), one offer
//!   per GPU type available there; the price is the listed per-GPU rate times the count;
//!   `host_cuda` is the newest CUDA version with free capacity on that cloud.
//!   ProviderOffer id: `<cloud>:<count>:<gpu type id>`, e.g. `secure:1:NVIDIA GeForce RTX 4090`.
//! - Keys: the account key set is replaced whole by `PUT /v2/account/ssh-keys`, so gpurent reads
//!   it, adds the key if missing and writes the union back; the pod also gets the key as its
//!   `PUBLIC_KEY` environment variable (RunPod's images install it at start).
//! - Create: `POST /v2/pods` with the gpurent label as `name`, `22/tcp` exposed and `startSsh`,
//!   and `gpu.minCudaVersion` = the host CUDA the image needs ([`super::images::host_cuda_min`])
//!   so the pod never lands on a host whose driver is older than its image;
//!   readiness uses `ssh.direct` only (the proxy carries no SFTP).
//! - Errors: problem+json `{title, status, detail}`; 429 carries `Retry-After` (seconds) and
//!   `RateLimit` (`"minute";r=0;t=12`).

use serde::Deserialize;
use serde_json::json;

use super::http::{self, enc, CallKind, Http, Req, Resp};
use super::spec::{AuthStyle, KeyAttach, MachineCall, StopEffect, TariffShape};
use super::{
    key_core, ClientConfig, CreateRequest, KeyRegistration, OfferQuery, Provider, ProviderError,
    ProviderKind, ProviderOffer, ProviderSpec, RemoteInstance, RemoteState, SshEndpoint,
};
use crate::infra::currency::Currency;

const KIND: ProviderKind = ProviderKind::Runpod;

/// RunPod's facts (see [`super::spec`]).
pub const SPEC: ProviderSpec = ProviderSpec {
    kind: KIND,
    id: "runpod",
    aliases: &[],
    display: "RunPod",
    env_stem: "RUNPOD",
    api_base: "https://api.runpod.io",
    auth: AuthStyle::Bearer,
    // `Pod.desiredStatus` (runpod-rest-v2.openapi.json).
    status_words: &[
        ("PROVISIONING", RemoteState::Provisioning),
        ("STARTING", RemoteState::Starting),
        ("RUNNING", RemoteState::Running),
        ("EXITED", RemoteState::Stopped),
        ("ERROR", RemoteState::Error),
        ("TERMINATED", RemoteState::Terminated),
    ],
    // The pod's `disk` is its container disk, "ephemeral, wiped on restart"; gpurent creates no
    // volume, so a stopped pod keeps (and pays for) no storage of gpurent's making.
    stop: StopEffect::WipesDisk,
    disk_kind: "container_disk",
    stopped_bills_storage: false,
    key_attach: KeyAttach::AccountKeySet,
    attach_retry_ms: &[],
    min_intervals_ms: &[],
    // Billed per second; dstack waits 20 min for a RunPod pod.
    billing: "per_second",
    ready_timeout_s: 20 * 60,
    default_disk_gb: 50,
    ssh_user: None,
    ssh_port: None,
    machine_env: Some(("RUNPOD_API_KEY", "RUNPOD_POD_ID")),
    guard_stop: Some(MachineCall {
        method: "POST",
        path: "/v2/pods/{id}/action",
        body: Some(r#"{"action":"stop"}"#),
    }),
    guard_release: MachineCall {
        method: "DELETE",
        path: "/v2/pods/{id}",
        body: None,
    },
    guard_ok: None,
    release_needs_stop: false,
    currency: Currency::Usd,
    price_before_create: true,
    tariff: TariffShape::ComputeAndDisk("container_disk"),
    reported_rate_source: "runpod Pod.cost (USD/h, 0.0 when EXITED)",
    balance_source: None,
    release_after_days_off: None,
};

#[derive(Debug)]
pub struct RunPod {
    http: Http,
}

impl RunPod {
    pub fn new(config: ClientConfig) -> Result<RunPod, ProviderError> {
        Ok(RunPod {
            http: Http::new(
                KIND,
                &config.base_url,
                config.api_key,
                config.http,
                map_error,
            )?,
        })
    }
}

#[derive(Debug, Deserialize)]
struct Problem {
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

/// RunPod's problem+json to an outcome.
pub fn map_error(provider: ProviderKind, r: &Resp) -> ProviderError {
    let p: Option<Problem> = serde_json::from_str(&r.body).ok();
    let detail = p
        .as_ref()
        .and_then(|p| p.detail.clone().or(p.title.clone()))
        .unwrap_or_else(|| r.body.chars().take(300).collect());
    let lower = detail.to_ascii_lowercase();
    match r.status {
        401 | 403 => ProviderError::AuthRejected { provider, detail },
        402 => ProviderError::InsufficientBalance { provider, detail },
        429 => ProviderError::RateLimited {
            provider,
            retry_after_s: http::retry_after_s(&r.headers)
                .or_else(|| r.header("RateLimit").and_then(http::ratelimit_exhausted_s)),
        },
        s if s >= 500 => ProviderError::ProviderOutage {
            provider,
            status: s,
            detail,
        },
        _ if lower.contains("balance")
            || lower.contains("insufficient funds")
            || lower.contains("credit") =>
        {
            ProviderError::InsufficientBalance { provider, detail }
        }
        _ if lower.contains("quota") || lower.contains("limit reached") => {
            ProviderError::QuotaExceeded { provider, detail }
        }
        400 if lower.contains("capacity")
            || lower.contains("could not be placed")
            || lower.contains("no longer any instances")
            || lower.contains("not available") =>
        {
            ProviderError::InsufficientCapacity { provider, detail }
        }
        s => ProviderError::RequestRejected {
            provider,
            status: s,
            detail,
        },
    }
}

// ---- wire types (only what gpurent reads; unknown fields are ignored) ----

#[derive(Debug, Deserialize)]
struct GpuTypes {
    gpus: Vec<GpuType>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GpuType {
    id: String,
    memory: Option<f64>,
    secure: bool,
    community: bool,
    price: CloudPrice,
    max_count: CloudCount,
    #[serde(default)]
    availability: Option<String>,
    #[serde(default)]
    data_centers: Vec<DataCenterAvailability>,
    #[serde(default)]
    cuda_versions: Vec<CudaAvailability>,
}

#[derive(Debug, Deserialize)]
struct CloudPrice {
    secure: Option<f64>,
    community: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct CloudCount {
    secure: Option<u32>,
    community: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct DataCenterAvailability {
    id: String,
    availability: String,
}

#[derive(Debug, Deserialize)]
struct CudaAvailability {
    version: String,
    available: bool,
}

#[derive(Debug, Deserialize)]
struct SshKeys {
    keys: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Pods {
    pods: Vec<Pod>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pod {
    id: String,
    #[serde(default)]
    name: Option<String>,
    status: String,
    #[serde(default)]
    gpu: Option<PodGpu>,
    #[serde(default)]
    cost: Option<f64>,
    #[serde(default)]
    cuda_version: Option<String>,
    #[serde(default)]
    ssh: Option<PodSsh>,
}

#[derive(Debug, Deserialize)]
struct PodGpu {
    id: String,
    #[serde(default)]
    count: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct PodSsh {
    #[serde(default)]
    direct: Option<PodSshEndpoint>,
}

#[derive(Debug, Deserialize)]
struct PodSshEndpoint {
    host: String,
    port: u16,
    username: String,
}

fn state_of(status: &str) -> RemoteState {
    SPEC.state_of(status)
}

impl Pod {
    fn into_remote(self) -> RemoteInstance {
        RemoteInstance {
            provider: KIND,
            state: state_of(&self.status),
            raw_status: self.status,
            label: self.name,
            gpu_count: self.gpu.as_ref().map(|g| g.count.unwrap_or(1)),
            gpu: self.gpu.map(|g| g.id),
            price_per_hour_usd: self.cost,
            ssh: self.ssh.and_then(|s| s.direct).map(|d| SshEndpoint {
                host: d.host,
                port: d.port,
                user: d.username,
            }),
            host_cuda: self.cuda_version,
            id: self.id,
        }
    }
}

/// `secure:1:NVIDIA GeForce RTX 4090` → (cloud, count, gpu type id).
pub fn parse_offer_id(offer_id: &str) -> Option<(&'static str, u32, &str)> {
    let mut it = offer_id.splitn(3, ':');
    let cloud = match it.next()?.to_ascii_lowercase().as_str() {
        "secure" => "SECURE",
        "community" => "COMMUNITY",
        _ => return None,
    };
    let count: u32 = it.next()?.parse().ok().filter(|n| *n >= 1)?;
    let gpu = it.next().filter(|g| !g.trim().is_empty())?;
    Some((cloud, count, gpu))
}

fn version_key(v: &str) -> (u32, u32) {
    let mut it = v.split('.');
    let major = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (major, minor)
}

impl RunPod {
    /// The catalog's offers on one cloud (`secure` or `community`) for `count` GPUs. The
    /// catalog's `availability`, `dataCenters` and `cudaVersions` are scoped by the query's
    /// `count` and `cloud` (the spec: "Upstream default when omitted: SECURE"), so each cloud is
    /// asked on its own: a community offer never carries the secure cloud's capacity or host
    /// CUDA.
    fn offers_in(
        &self,
        cloud: &str,
        count: u32,
        query: &OfferQuery,
        now_ms: i64,
    ) -> Result<Vec<ProviderOffer>, ProviderError> {
        let r = self.http.send(
            &Req::read("/v2/catalog/gpus")
                .query("include", "AVAILABILITY")
                .query("product", "POD")
                .query("count", count.to_string())
                .query("cloud", cloud.to_ascii_uppercase()),
        )?;
        let types: GpuTypes = r.parse(KIND, "GPU catalog")?;
        let mut out = vec![];
        for g in types.gpus {
            if g.availability.as_deref() == Some("NONE") {
                continue;
            }
            let (listed, price, max) = if cloud == "community" {
                (g.community, g.price.community, g.max_count.community)
            } else {
                (g.secure, g.price.secure, g.max_count.secure)
            };
            let Some(price) = price.filter(|p| *p > 0.0) else {
                continue;
            };
            if !listed || max.is_some_and(|m| m < count) {
                continue;
            }
            let host_cuda = g
                .cuda_versions
                .iter()
                .filter(|c| c.available)
                .max_by_key(|c| version_key(&c.version))
                .map(|c| c.version.clone());
            let region = g
                .data_centers
                .iter()
                .find(|d| d.availability != "NONE")
                .map(|d| d.id.clone());
            let offer = ProviderOffer {
                provider: KIND,
                offer_id: format!("{cloud}:{count}:{}", g.id),
                gpu: g.id.clone(),
                gpu_count: count,
                vram_gib: g.memory,
                price_per_hour_usd: price * f64::from(count),
                region,
                host_cuda,
                interruptible: false,
                tier: Some(cloud.to_string()),
                storage_usd_per_gb_month: None,
                fetched_ms: now_ms,
                runs_pytorch: None,
                best_torch: None,
                card_id: None,
                account: None,
                currency: SPEC.currency,
                price_source: None,
                traffic: None,
            };
            if query.matches(&offer) {
                out.push(offer);
            }
        }
        Ok(out)
    }
}

impl Provider for RunPod {
    fn kind(&self) -> ProviderKind {
        KIND
    }

    fn check_account(&self) -> Result<Option<String>, ProviderError> {
        let r = self.http.send(&Req::read("/v2/account/ssh-keys"))?;
        let _: SshKeys = r.parse(KIND, "ssh keys")?;
        Ok(None)
    }

    fn offers(&self, query: &OfferQuery, now_ms: i64) -> Result<Vec<ProviderOffer>, ProviderError> {
        let count = query.count.unwrap_or(1).max(1);
        let mut out = self.offers_in("secure", count, query, now_ms)?;
        out.extend(self.offers_in("community", count, query, now_ms)?);
        Ok(out)
    }

    /// The offer id names its GPU count (`secure:2:…`): the catalog is read again for that
    /// count, or a multi-GPU offer could never be found again.
    fn offer(&self, offer_id: &str, now_ms: i64) -> Result<Option<ProviderOffer>, ProviderError> {
        let Some((cloud, count, _)) = parse_offer_id(offer_id) else {
            return Ok(None);
        };
        let q = OfferQuery {
            count: Some(count),
            ..OfferQuery::default()
        };
        Ok(self
            .offers_in(&cloud.to_ascii_lowercase(), count, &q, now_ms)?
            .into_iter()
            .find(|o| o.offer_id == offer_id))
    }

    fn register_key(
        &self,
        public_key: &str,
        _key_label: &str,
    ) -> Result<KeyRegistration, ProviderError> {
        let r = self.http.send(&Req::read("/v2/account/ssh-keys"))?;
        let current: SshKeys = r.parse(KIND, "ssh keys")?;
        let want = key_core(public_key);
        if current.keys.iter().any(|k| key_core(k) == want) {
            return Ok(KeyRegistration::Account);
        }
        // The set is replaced whole: write back everything that was there plus ours.
        let mut keys = current.keys;
        keys.push(public_key.trim().to_string());
        let r = self.http.send(
            &Req::new(
                reqwest::Method::PUT,
                "/v2/account/ssh-keys",
                CallKind::Action,
            )
            .json(json!({ "keys": keys })),
        )?;
        let after: SshKeys = r.parse(KIND, "ssh keys")?;
        if !after.keys.iter().any(|k| key_core(k) == want) {
            return Err(ProviderError::NotConfirmed {
                provider: KIND,
                state: "key not in the account key set".into(),
            });
        }
        Ok(KeyRegistration::Account)
    }

    fn create(&self, req: &CreateRequest, _key: &KeyRegistration) -> Result<String, ProviderError> {
        let (cloud, count, gpu) =
            parse_offer_id(&req.offer_id).ok_or_else(|| ProviderError::OfferGone {
                provider: KIND,
                offer_id: req.offer_id.clone(),
            })?;
        // The host's driver must run the image's CUDA build: a container host cannot upgrade
        // it, and without a floor the pod can land on an older host (issue 19). The spec's
        // `CreateGpuConfig.minCudaVersion` ("lowest acceptable CUDA version for the host
        // machine, as major.minor"); no host that new → a 400 capacity error, nothing made.
        let mut gpu_req = json!({ "id": gpu, "count": count });
        if let Some(min) = super::images::host_cuda_min(&req.image) {
            gpu_req["minCudaVersion"] = json!(min);
        }
        let body = json!({
            "name": req.label,
            "image": req.image,
            "gpu": gpu_req,
            "cloud": cloud,
            "disk": req.disk_gb,
            "ports": ["22/tcp"],
            "startSsh": true,
            "env": { "PUBLIC_KEY": req.public_key.trim() },
        });
        let r = self
            .http
            .send(&Req::new(reqwest::Method::POST, "/v2/pods", CallKind::Create).json(body))?;
        let pod: Pod =
            r.parse(KIND, "created pod")
                .map_err(|e| ProviderError::CreateOutcomeUnknown {
                    provider: KIND,
                    detail: e.to_string(),
                })?;
        Ok(pod.id)
    }

    fn get(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError> {
        match self.http.send(&Req::read(format!("/v2/pods/{}", enc(id)))) {
            Ok(r) => Ok(Some(r.parse::<Pod>(KIND, "pod")?.into_remote())),
            Err(ProviderError::RequestRejected { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list(&self) -> Result<Vec<RemoteInstance>, ProviderError> {
        let r = self.http.send(&Req::read("/v2/pods"))?;
        let pods: Pods = r.parse(KIND, "pod list")?;
        Ok(pods.pods.into_iter().map(Pod::into_remote).collect())
    }

    fn stop(&self, id: &str) -> Result<(), ProviderError> {
        self.action(id, "stop")
    }

    fn start(&self, id: &str) -> Result<(), ProviderError> {
        self.action(id, "start")
    }

    fn terminate(&self, id: &str) -> Result<(), ProviderError> {
        match self.http.send(&Req::new(
            reqwest::Method::DELETE,
            format!("/v2/pods/{}", enc(id)),
            CallKind::Action,
        )) {
            Ok(_) | Err(ProviderError::RequestRejected { status: 404, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl RunPod {
    fn action(&self, id: &str, action: &str) -> Result<(), ProviderError> {
        self.http
            .send(
                &Req::new(
                    reqwest::Method::POST,
                    format!("/v2/pods/{}/action", enc(id)),
                    CallKind::Action,
                )
                .json(json!({ "action": action })),
            )
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_ids_round_trip() {
        assert_eq!(
            parse_offer_id("secure:2:NVIDIA GeForce RTX 4090"),
            Some(("SECURE", 2, "NVIDIA GeForce RTX 4090"))
        );
        assert_eq!(
            parse_offer_id("community:1:A:B"),
            Some(("COMMUNITY", 1, "A:B"))
        );
        assert_eq!(parse_offer_id("spot:1:X"), None);
        assert_eq!(parse_offer_id("secure:0:X"), None);
        assert_eq!(parse_offer_id("secure:1:"), None);
    }

    #[test]
    fn keys_compare_without_comment() {
        assert_eq!(
            key_core("ssh-ed25519 AAAA me@x"),
            key_core("ssh-ed25519 AAAA other")
        );
    }
}
