//! Lambda Cloud API v1 (`https://cloud.lambdalabs.com/api/v1/...`, spec
//! `tests/provider-specs/lambda-cloud-v1.6.0.openapi.json`).
//!
//! - Offers: `GET /api/v1/instance-types`, one offer per instance type and region with capacity;
//!   offer id `<instance type>@<region>`, e.g. `gpu_1x_gh200@us-west-1`. Lambda VMs run the
//!   driver of their image (Lambda Stack), so no host CUDA is reported.
//! - Keys: a named account key referenced at launch (`ssh_key_names`); gpurent registers the
//!   user's key as `gpurent-<label>-<hash>` once and reuses it.
//! - Create: `POST /api/v1/instance-operations/launch` with the gpurent label as `name`;
//!   about one launch per 12 s is allowed (paced by the HTTP layer).
//! - No stop/start: an instance can only be terminated.
//! - Errors: `{error: {code, message, suggestion}}` with codes such as
//!   `instance-operations/launch/insufficient-capacity`, `global/quota-exceeded`.

use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::http::{enc, CallKind, Http, Req, Resp};
use super::spec::{AuthStyle, KeyAttach, MachineCall, StopEffect, TariffShape};
use super::{
    key_core, ClientConfig, CreateRequest, KeyRegistration, OfferQuery, Provider, ProviderError,
    ProviderKind, ProviderOffer, ProviderSpec, RemoteInstance, RemoteState, SshEndpoint,
};
use crate::infra::currency::Currency;

const KIND: ProviderKind = ProviderKind::Lambda;

/// Lambda's facts (see [`super::spec`]).
pub const SPEC: ProviderSpec = ProviderSpec {
    kind: KIND,
    id: "lambda",
    aliases: &["lambdalabs", "lambda-cloud"],
    display: "Lambda",
    env_stem: "LAMBDA",
    api_base: "https://cloud.lambdalabs.com",
    auth: AuthStyle::Bearer,
    // `Instance.status` (lambda-cloud-v1.6.0.openapi.json).
    status_words: &[
        ("booting", RemoteState::Provisioning),
        ("active", RemoteState::Running),
        ("unhealthy", RemoteState::Error),
        ("terminating", RemoteState::Terminating),
        ("terminated", RemoteState::Terminated),
    ],
    // Instances cannot be stopped, only terminated.
    stop: StopEffect::CannotStop,
    disk_kind: "local_disk",
    stopped_bills_storage: false,
    key_attach: KeyAttach::NamedAtLaunch,
    attach_retry_ms: &[],
    // About one launch per 12 s is allowed.
    min_intervals_ms: &[("lambda_launch", 12_000)],
    // Billed by the minute; dstack waits 30 min for a Lambda instance.
    billing: "per_minute",
    ready_timeout_s: 30 * 60,
    // Lambda's disk comes with the instance type (not chosen; the ledger keeps the request's).
    default_disk_gb: 50,
    ssh_user: Some("ubuntu"),
    ssh_port: Some(22),
    machine_env: None,
    guard_stop: None,
    guard_release: MachineCall {
        method: "POST",
        path: "/api/v1/instance-operations/terminate",
        body: Some(r#"{"instance_ids":["{id}"]}"#),
    },
    guard_ok: None,
    release_needs_stop: false,
    currency: Currency::Usd,
    price_before_create: true,
    tariff: TariffShape::Compute,
    reported_rate_source: "lambda instance_type.price_cents_per_hour / 100",
    balance_source: None,
    release_after_days_off: None,
};

#[derive(Debug)]
pub struct Lambda {
    http: Http,
    ssh_user: String,
    ssh_port: u16,
}

impl Lambda {
    pub fn new(config: ClientConfig) -> Result<Lambda, ProviderError> {
        Ok(Lambda {
            http: Http::new(
                KIND,
                &config.base_url,
                config.api_key,
                config.http,
                map_error,
            )?,
            ssh_user: config
                .ssh_user
                .unwrap_or_else(|| SPEC.ssh_user.unwrap_or("ubuntu").into()),
            ssh_port: config.ssh_port.or(SPEC.ssh_port).unwrap_or(22),
        })
    }
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ApiError,
}

#[derive(Debug, Deserialize)]
struct ApiError {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// Lambda's `{error: {code, message}}` to an outcome.
pub fn map_error(provider: ProviderKind, r: &Resp) -> ProviderError {
    let e: Option<ErrorBody> = serde_json::from_str(&r.body).ok();
    let (code, message) = e
        .map(|e| (e.error.code, e.error.message))
        .unwrap_or_else(|| (String::new(), r.body.chars().take(300).collect()));
    let detail = if code.is_empty() {
        message
    } else {
        format!("{code}: {message}")
    };
    match (r.status, code.as_str()) {
        (429, _) => ProviderError::RateLimited {
            provider,
            retry_after_s: super::http::retry_after_s(&r.headers),
        },
        (s, _) if s >= 500 => ProviderError::ProviderOutage {
            provider,
            status: s,
            detail,
        },
        (401, _) | (_, "global/invalid-api-key") => {
            ProviderError::AuthRejected { provider, detail }
        }
        (_, c) if c.ends_with("insufficient-capacity") => {
            ProviderError::InsufficientCapacity { provider, detail }
        }
        (_, "global/quota-exceeded") => ProviderError::QuotaExceeded { provider, detail },
        (_, "global/account-inactive") | (_, "global/invalid-billing-address") => {
            ProviderError::InsufficientBalance { provider, detail }
        }
        (403, _) => ProviderError::AuthRejected { provider, detail },
        (_, c) if c.ends_with("launch-resource-not-found") || c.ends_with("resource-not-found") => {
            ProviderError::OfferGone {
                provider,
                offer_id: String::new(),
            }
        }
        (s, _) => ProviderError::RequestRejected {
            provider,
            status: s,
            detail,
        },
    }
}

#[derive(Debug, Deserialize)]
struct Data<T> {
    data: T,
}

#[derive(Debug, Deserialize)]
struct TypeItem {
    instance_type: InstanceType,
    regions_with_capacity_available: Vec<Region>,
}

#[derive(Debug, Deserialize)]
struct InstanceType {
    name: String,
    gpu_description: String,
    price_cents_per_hour: i64,
    specs: Specs,
}

#[derive(Debug, Deserialize)]
struct Specs {
    gpus: u32,
}

#[derive(Debug, Deserialize)]
struct Region {
    name: String,
}

#[derive(Debug, Deserialize)]
struct SshKey {
    name: String,
    public_key: String,
}

#[derive(Debug, Deserialize)]
struct Launched {
    instance_ids: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Terminated {
    terminated_instances: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct LambdaInstance {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ip: Option<String>,
    status: String,
    #[serde(default)]
    instance_type: Option<InstanceType>,
}

fn state_of(status: &str) -> RemoteState {
    SPEC.state_of(status)
}

/// `gpurent-<label>-<8 hex of the key>`, at most 64 characters.
fn key_name(label: &str, public_key: &str) -> String {
    let h = Sha256::digest(key_core(public_key).as_bytes());
    let hex: String = h.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let label: String = label
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(40)
        .collect();
    format!("gpurent-{label}-{hex}")
}

impl Lambda {
    fn remote(&self, i: LambdaInstance) -> RemoteInstance {
        let state = state_of(&i.status);
        RemoteInstance {
            provider: KIND,
            label: i.name,
            raw_status: i.status,
            gpu_count: i.instance_type.as_ref().map(|t| t.specs.gpus),
            price_per_hour_usd: i
                .instance_type
                .as_ref()
                .map(|t| t.price_cents_per_hour as f64 / 100.0),
            gpu: i.instance_type.map(|t| t.gpu_description),
            ssh: i
                .ip
                .filter(|ip| !ip.is_empty() && state == RemoteState::Running)
                .map(|host| SshEndpoint {
                    host,
                    port: self.ssh_port,
                    user: self.ssh_user.clone(),
                }),
            host_cuda: None,
            state,
            id: i.id,
        }
    }
}

impl Provider for Lambda {
    fn kind(&self) -> ProviderKind {
        KIND
    }

    fn check_account(&self) -> Result<Option<String>, ProviderError> {
        let r = self.http.send(&Req::read("/api/v1/ssh-keys"))?;
        let _: Data<Vec<SshKey>> = r.parse(KIND, "ssh keys")?;
        Ok(None)
    }

    fn offers(&self, query: &OfferQuery, now_ms: i64) -> Result<Vec<ProviderOffer>, ProviderError> {
        let r = self.http.send(&Req::read("/api/v1/instance-types"))?;
        let types: Data<std::collections::BTreeMap<String, TypeItem>> =
            r.parse(KIND, "instance types")?;
        let mut out = vec![];
        for item in types.data.into_values() {
            let t = &item.instance_type;
            for region in &item.regions_with_capacity_available {
                let o = ProviderOffer {
                    provider: KIND,
                    offer_id: format!("{}@{}", t.name, region.name),
                    gpu: t.gpu_description.clone(),
                    gpu_count: t.specs.gpus,
                    vram_gib: super::vram_from_description(&t.gpu_description),
                    price_per_hour_usd: t.price_cents_per_hour as f64 / 100.0,
                    region: Some(region.name.clone()),
                    host_cuda: None,
                    interruptible: false,
                    tier: None,
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
                if o.gpu_count > 0 && query.matches(&o) {
                    out.push(o);
                }
            }
        }
        Ok(out)
    }

    fn register_key(
        &self,
        public_key: &str,
        key_label: &str,
    ) -> Result<KeyRegistration, ProviderError> {
        let r = self.http.send(&Req::read("/api/v1/ssh-keys"))?;
        let keys: Data<Vec<SshKey>> = r.parse(KIND, "ssh keys")?;
        let want = key_core(public_key);
        if let Some(k) = keys.data.iter().find(|k| key_core(&k.public_key) == want) {
            return Ok(KeyRegistration::Named(k.name.clone()));
        }
        let name = key_name(key_label, public_key);
        let r = self.http.send(
            &Req::new(reqwest::Method::POST, "/api/v1/ssh-keys", CallKind::Action)
                .json(json!({ "name": name, "public_key": public_key.trim() })),
        )?;
        let added: Data<SshKey> = r.parse(KIND, "added ssh key")?;
        Ok(KeyRegistration::Named(added.data.name))
    }

    fn create(&self, req: &CreateRequest, key: &KeyRegistration) -> Result<String, ProviderError> {
        let (itype, region) =
            req.offer_id
                .split_once('@')
                .ok_or_else(|| ProviderError::OfferGone {
                    provider: KIND,
                    offer_id: req.offer_id.clone(),
                })?;
        let KeyRegistration::Named(key_name) = key else {
            return Err(ProviderError::RequestRejected {
                provider: KIND,
                status: 0,
                detail: "Lambda needs a named SSH key at launch".into(),
            });
        };
        let mut body = json!({
            "region_name": region,
            "instance_type_name": itype,
            "ssh_key_names": [key_name],
            "name": req.label,
        });
        let image = req.image.trim();
        if !image.is_empty() && image != super::images::LAMBDA_DEFAULT {
            body["image"] = json!({ "family": image });
        }
        let r = self.http.send(
            &Req::new(
                reqwest::Method::POST,
                "/api/v1/instance-operations/launch",
                CallKind::Create,
            )
            .json(body)
            .pace("lambda_launch"),
        )?;
        let l: Data<Launched> =
            r.parse(KIND, "launch")
                .map_err(|e| ProviderError::CreateOutcomeUnknown {
                    provider: KIND,
                    detail: e.to_string(),
                })?;
        l.data
            .instance_ids
            .into_iter()
            .next()
            .ok_or_else(|| ProviderError::CreateOutcomeUnknown {
                provider: KIND,
                detail: "the launch answer listed no instance id".into(),
            })
    }

    fn get(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError> {
        match self
            .http
            .send(&Req::read(format!("/api/v1/instances/{}", enc(id))))
        {
            Ok(r) => {
                let d: Data<LambdaInstance> = r.parse(KIND, "instance")?;
                Ok(Some(self.remote(d.data)))
            }
            Err(ProviderError::RequestRejected { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list(&self) -> Result<Vec<RemoteInstance>, ProviderError> {
        let r = self.http.send(&Req::read("/api/v1/instances"))?;
        let d: Data<Vec<LambdaInstance>> = r.parse(KIND, "instance list")?;
        Ok(d.data.into_iter().map(|i| self.remote(i)).collect())
    }

    fn stop(&self, _id: &str) -> Result<(), ProviderError> {
        Err(ProviderError::Unsupported {
            provider: KIND,
            action: "stop",
        })
    }

    fn start(&self, _id: &str) -> Result<(), ProviderError> {
        Err(ProviderError::Unsupported {
            provider: KIND,
            action: "start",
        })
    }

    fn terminate(&self, id: &str) -> Result<(), ProviderError> {
        let r = self.http.send(
            &Req::new(
                reqwest::Method::POST,
                "/api/v1/instance-operations/terminate",
                CallKind::Action,
            )
            .json(json!({ "instance_ids": [id] })),
        );
        match r {
            Ok(r) => {
                let t: Data<Terminated> = r.parse(KIND, "terminate")?;
                let listed = t
                    .data
                    .terminated_instances
                    .iter()
                    .any(|i| i.get("id").and_then(|v| v.as_str()) == Some(id));
                if listed {
                    Ok(())
                } else {
                    Err(ProviderError::NotConfirmed {
                        provider: KIND,
                        state: "not in terminated_instances".into(),
                    })
                }
            }
            Err(ProviderError::RequestRejected { status: 404, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_are_short_and_stable() {
        let k =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICN+lJwsONkwrdsSnQsu1ydUkIuIg5oOC+Eslvmtt60T me";
        let a = key_name("laptop", k);
        assert!(a.starts_with("gpurent-laptop-") && a.len() <= 64, "{a}");
        assert_eq!(a, key_name("laptop", &k.replace(" me", " other")));
        assert!(key_name(&"x".repeat(100), k).len() <= 64);
    }
}
