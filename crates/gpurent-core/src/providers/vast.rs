//! Vast.ai (`https://console.vast.ai/api/v0|v1/...`, spec `tests/provider-specs/vastai.openapi.yaml`).
//!
//! - Offers: `POST /api/v0/bundles` (on-demand, rentable, not rented), filtered and ordered by
//!   the server: `gpu_name` (the typed name's rows of `data/vast-gpu-names.csv`), `num_gpus`,
//!   `gpu_ram`, `dph_total`, `verified` (verified machines only unless the query asks for
//!   unverified ones too: then a second search with `verified: {eq: false}`), `order` cheapest
//!   first; the client's [`OfferQuery::matches`] still checks every ask. Each ask is an offer
//!   with its own price (`dph_total`, priced at the disk gpurent creates), host CUDA
//!   (`cuda_max_good`), storage price, traffic prices (`inet_down_cost`/`inet_up_cost`, $/GB)
//!   and verification. ProviderOffer id: the ask id.
//! - Create: `PUT /api/v0/asks/{id}` with the gpurent label as `label`, `runtype: ssh_direct`,
//!   `cancel_unavail: true`; the key is attached to the new instance with
//!   `POST /api/v0/instances/{id}/ssh` (Vast keys are per instance).
//! - Paths have no trailing slash (the spec's form; Vast's curl examples add one).
//! - Errors: `{success:false, error, msg}`; 429 has no `Retry-After` but a `detail` naming the
//!   endpoint's threshold (`threshold=2.0`), used as the wait.

use serde::Deserialize;
use serde_json::json;

use super::http::{CallKind, Http, Req, Resp};
use super::spec::{AuthStyle, KeyAttach, MachineCall, StopEffect, TariffShape};
use super::{
    ClientConfig, CreateRequest, KeyRegistration, OfferQuery, Provider, ProviderError,
    ProviderKind, ProviderOffer, ProviderSpec, RemoteInstance, RemoteState, SshEndpoint,
    TrafficCost,
};
use crate::infra::currency::Currency;

const KIND: ProviderKind = ProviderKind::Vast;

/// Vast's facts (see [`super::spec`]).
pub const SPEC: ProviderSpec = ProviderSpec {
    kind: KIND,
    id: "vast",
    aliases: &["vastai", "vast.ai"],
    display: "Vast",
    env_stem: "VAST",
    api_base: "https://console.vast.ai",
    auth: AuthStyle::Bearer,
    // `actual_status` (vastai.openapi.yaml); `intended_status` refines it ([`state_of`]).
    status_words: &[
        ("running", RemoteState::Running),
        ("exited", RemoteState::Stopped),
        ("stopped", RemoteState::Stopped),
        ("loading", RemoteState::Provisioning),
        ("created", RemoteState::Provisioning),
        ("offline", RemoteState::Error),
    ],
    // A stopped instance keeps its disk and still pays for its storage.
    stop: StopEffect::KeepsDisk,
    disk_kind: "instance_disk",
    stopped_bills_storage: true,
    // The key is attached per instance after the create, retried after 1, 2 and 4 s.
    key_attach: KeyAttach::AfterCreate,
    attach_retry_ms: &[1000, 2000, 4000],
    // Vast publishes no Retry-After; its 429 bodies name per-endpoint thresholds ("API requests
    // too frequent endpoint threshold=1.0 / 2.0 / 4.5" in its spec's examples). gpurent keeps
    // these as minimum intervals between calls (not verified against the live API).
    min_intervals_ms: &[
        ("vast_search", 1000),
        ("vast_list", 1000),
        ("vast_get", 2000),
        ("vast_write", 1000),
    ],
    billing: "per_second",
    ready_timeout_s: 20 * 60,
    default_disk_gb: 50,
    ssh_user: Some("root"),
    ssh_port: None,
    machine_env: Some(("CONTAINER_API_KEY", "CONTAINER_ID")),
    guard_stop: Some(MachineCall {
        method: "PUT",
        path: "/api/v0/instances/{id}",
        body: Some(r#"{"state":"stopped"}"#),
    }),
    guard_release: MachineCall {
        method: "DELETE",
        path: "/api/v0/instances/{id}",
        body: None,
    },
    guard_ok: None,
    release_needs_stop: false,
    currency: Currency::Usd,
    price_before_create: true,
    tariff: TariffShape::PriceIncludesStorage,
    reported_rate_source: "vast instance dph_total (USD/h)",
    balance_source: Some("vast users/current credit|balance"),
    release_after_days_off: None,
};

#[derive(Debug)]
pub struct Vast {
    http: Http,
    ssh_user: String,
}

impl Vast {
    pub fn new(config: ClientConfig) -> Result<Vast, ProviderError> {
        Ok(Vast {
            http: Http::new(
                KIND,
                &config.base_url,
                config.api_key,
                config.http,
                map_error,
            )?,
            ssh_user: config
                .ssh_user
                .unwrap_or_else(|| SPEC.ssh_user.unwrap_or("root").into()),
        })
    }
}

#[derive(Debug, Deserialize)]
struct VastError {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    msg: Option<String>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    ask_id: Option<i64>,
}

/// `API requests too frequent endpoint threshold=4.5` → 5.
fn threshold_s(text: &str) -> Option<u64> {
    let i = text.find("threshold=")?;
    let num: String = text[i + 10..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    num.parse::<f64>().ok().map(|f| f.ceil().max(1.0) as u64)
}

/// Vast's error shapes to an outcome.
pub fn map_error(provider: ProviderKind, r: &Resp) -> ProviderError {
    let e: Option<VastError> = serde_json::from_str(&r.body).ok();
    let code = e.as_ref().and_then(|e| e.error.clone()).unwrap_or_default();
    let detail = e
        .as_ref()
        .and_then(|e| e.msg.clone().or(e.detail.clone()))
        .unwrap_or_else(|| r.body.chars().take(300).collect());
    let lower = format!("{code} {detail}").to_ascii_lowercase();
    match r.status {
        429 => ProviderError::RateLimited {
            provider,
            retry_after_s: super::http::retry_after_s(&r.headers).or_else(|| threshold_s(&detail)),
        },
        s if s >= 500 => ProviderError::ProviderOutage {
            provider,
            status: s,
            detail,
        },
        401 => ProviderError::AuthRejected { provider, detail },
        _ if lower.contains("invalid user key") || lower.contains("auth_error") => {
            ProviderError::AuthRejected { provider, detail }
        }
        _ if lower.contains("balance")
            || lower.contains("credit")
            || lower.contains("insufficient_funds") =>
        {
            ProviderError::InsufficientBalance { provider, detail }
        }
        404 | 410 if lower.contains("no_such_ask") || lower.contains("not available") => {
            ProviderError::OfferGone {
                provider,
                offer_id: e
                    .and_then(|e| e.ask_id)
                    .map(|i| i.to_string())
                    .unwrap_or_default(),
            }
        }
        s => ProviderError::RequestRejected {
            provider,
            status: s,
            detail,
        },
    }
}

#[derive(Debug, Deserialize)]
struct Bundles {
    offers: Vec<Ask>,
}

#[derive(Debug, Deserialize)]
struct Ask {
    id: i64,
    gpu_name: String,
    num_gpus: u32,
    dph_total: f64,
    #[serde(default)]
    gpu_ram: Option<f64>,
    #[serde(default)]
    geolocation: Option<String>,
    #[serde(default)]
    cuda_max_good: Option<f64>,
    #[serde(default)]
    storage_cost: Option<f64>,
    #[serde(default)]
    verification: Option<String>,
    #[serde(default)]
    is_bid: Option<bool>,
    /// "Download bandwidth cost ($/GB)" (the spec's search filter description).
    #[serde(default)]
    inet_down_cost: Option<f64>,
    /// "Upload bandwidth cost ($/GB)".
    #[serde(default)]
    inet_up_cost: Option<f64>,
}

/// At most this many asks per search (the server orders them cheapest first).
const SEARCH_LIMIT: u32 = 64;

const GPU_NAMES: &str = include_str!("../../data/vast-gpu-names.csv");

/// Vast's `gpu_name` values the typed name matches on token boundaries
/// ([`super::name_matches`]): `4090` → `RTX 4090`; `A100` → `A100 PCIE`, `A100 SXM4` (not
/// `A100X`, one token). Empty when none does (the name is then filtered on the client only).
pub fn gpu_names_for(typed: &str) -> Vec<String> {
    GPU_NAMES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != "gpu_name")
        .filter(|n| super::name_matches(n, typed))
        .map(String::from)
        .collect()
}

/// The search body: on-demand, rentable, not rented, verified or not (`verified`), priced at
/// `disk_gb` (`allocated_storage`: `dph_total` includes the disk's storage, and the search's
/// default is 8 GB), cheapest first, with the query's filters the server can apply.
fn search_body(query: &OfferQuery, verified: bool, disk_gb: u32) -> serde_json::Value {
    let mut body = json!({
        "limit": SEARCH_LIMIT,
        "type": "ondemand",
        "verified": { "eq": verified },
        "rentable": { "eq": true },
        "rented": { "eq": false },
        "allocated_storage": disk_gb,
        // The spec's schema wants exactly two `[field, direction]` pairs (its `minItems: 2` sits
        // on the outer list; the description and Vast's CLI say a list of pairs): price, then the
        // ask id as a stable tie-break — valid under both readings.
        "order": [["dph_total", "asc"], ["id", "asc"]],
    });
    if let Some(n) = query.count {
        body["num_gpus"] = json!({ "in": [n] });
    }
    if let Some(g) = query.gpu.as_deref().filter(|g| !g.trim().is_empty()) {
        let names = gpu_names_for(g);
        if !names.is_empty() {
            body["gpu_name"] = json!({ "in": names });
        }
    }
    if let Some(v) = query.min_vram_gib {
        // `gpu_ram` is MB per GPU; offers show it in GiB rounded to 0.1 (a 24564 MB RTX 4090 is
        // 24.0 GiB), so the server's floor is the lowest MB that rounds up to the typed GiB.
        body["gpu_ram"] = json!({ "gte": ((v - 0.05) * 1024.0).floor().max(0.0) });
    }
    if let Some(p) = query.max_price_per_hour_usd {
        body["dph_total"] = json!({ "lte": p });
    }
    body
}

#[derive(Debug, Deserialize)]
struct Created {
    #[serde(default)]
    success: Option<bool>,
    new_contract: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Success {
    #[serde(default)]
    success: Option<bool>,
    #[serde(default)]
    msg: Option<String>,
}

#[derive(Debug, Deserialize)]
struct One {
    instances: Option<VastInstance>,
}

#[derive(Debug, Deserialize)]
struct Page {
    instances: Vec<VastInstance>,
    #[serde(default)]
    next_token: Option<String>,
    /// How many instances the whole list holds (every page says it).
    #[serde(default)]
    total_instances: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct VastInstance {
    id: i64,
    #[serde(default)]
    actual_status: Option<String>,
    #[serde(default)]
    intended_status: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    gpu_name: Option<String>,
    #[serde(default)]
    num_gpus: Option<u32>,
    #[serde(default)]
    dph_total: Option<f64>,
    #[serde(default)]
    public_ipaddr: Option<String>,
    #[serde(default)]
    ssh_host: Option<String>,
    #[serde(default)]
    ssh_port: Option<u16>,
    /// `{"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "20000"}]}` (list) or a list of numbers
    /// (show) — read loosely.
    #[serde(default)]
    ports: Option<serde_json::Value>,
    #[serde(default)]
    cuda_max_good: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct User {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    id: Option<i64>,
    /// Prepaid credit (what `vastai show user` prints as credit); not in the spec's schema.
    #[serde(default)]
    credit: Option<f64>,
    /// "The current balance of the user" (the spec's `showUser` schema).
    #[serde(default)]
    balance: Option<f64>,
}

/// `actual_status` read through [`SPEC`] (none yet: provisioning), refined by where the
/// instance is headed (`intended_status`).
fn state_of(actual: Option<&str>, intended: Option<&str>) -> RemoteState {
    let now = actual.map_or(RemoteState::Provisioning, |w| SPEC.state_of(w));
    match (now, intended) {
        (RemoteState::Running, Some("stopped")) => RemoteState::Stopping,
        (RemoteState::Stopped, Some("running")) => RemoteState::Starting,
        (RemoteState::Provisioning, Some("stopped")) => RemoteState::Stopped,
        (s, _) => s,
    }
}

impl Vast {
    fn remote(&self, v: VastInstance) -> RemoteInstance {
        let direct_port = v
            .ports
            .as_ref()
            .and_then(|p| p.get("22/tcp"))
            .and_then(|m| m.get(0))
            .and_then(|m| m.get("HostPort"))
            .and_then(|p| {
                p.as_str()
                    .and_then(|s| s.parse::<u16>().ok())
                    .or(p.as_u64().map(|n| n as u16))
            });
        let ssh = match (
            direct_port,
            v.public_ipaddr.as_deref().filter(|s| !s.is_empty()),
        ) {
            (Some(port), Some(ip)) => Some((ip.to_string(), port)),
            _ => match (v.ssh_host.filter(|s| !s.is_empty()), v.ssh_port) {
                (Some(h), Some(p)) if p != 0 => Some((h, p)),
                _ => None,
            },
        };
        let state = state_of(v.actual_status.as_deref(), v.intended_status.as_deref());
        RemoteInstance {
            provider: KIND,
            id: v.id.to_string(),
            label: v.label,
            state,
            raw_status: format!(
                "{}/{}",
                v.actual_status.as_deref().unwrap_or("none"),
                v.intended_status.as_deref().unwrap_or("none")
            ),
            gpu: v.gpu_name,
            gpu_count: v.num_gpus,
            price_per_hour_usd: v.dph_total,
            ssh: ssh
                .filter(|_| state == RemoteState::Running)
                .map(|(host, port)| SshEndpoint {
                    host,
                    port,
                    user: self.ssh_user.clone(),
                }),
            host_cuda: v.cuda_max_good.map(|c| format!("{c:.1}")),
        }
    }

    fn instance_id(id: &str) -> Result<i64, ProviderError> {
        id.parse().map_err(|_| ProviderError::InstanceNotFound {
            provider: KIND,
            id: id.to_string(),
        })
    }

    /// Sends a write whose answer is `{success, msg}`; `success: false` is a rejection.
    fn write(&self, req: &Req, what: &str) -> Result<(), ProviderError> {
        let r = self.http.send(req)?;
        let s: Success = r.parse(KIND, what)?;
        if s.success == Some(false) {
            return Err(ProviderError::RequestRejected {
                provider: KIND,
                status: r.status,
                detail: s.msg.unwrap_or_default(),
            });
        }
        Ok(())
    }

    fn manage(&self, id: &str, state: &str) -> Result<(), ProviderError> {
        let n = Self::instance_id(id)?;
        self.write(
            &Req::new(
                reqwest::Method::PUT,
                format!("/api/v0/instances/{n}"),
                CallKind::Action,
            )
            .json(json!({ "state": state }))
            .pace("vast_write"),
            "manage instance",
        )
    }
}

impl Vast {
    /// `POST /api/v0/bundles` with a filter body, every ask as an offer. An ask without a
    /// `verification` word takes the tier the body asked for (`verified` / `unverified`).
    fn search(
        &self,
        body: serde_json::Value,
        now_ms: i64,
    ) -> Result<Vec<ProviderOffer>, ProviderError> {
        let asked_tier = match body["verified"]["eq"].as_bool() {
            Some(true) => Some("verified"),
            Some(false) => Some("unverified"),
            None => None,
        };
        let mut req = Req::new(reqwest::Method::POST, "/api/v0/bundles", CallKind::Read).json(body);
        req.pace = Some("vast_search");
        let r = self.http.send(&req)?;
        let b: Bundles = r.parse(KIND, "offers")?;
        Ok(b.offers
            .into_iter()
            .map(|a| ProviderOffer {
                provider: KIND,
                offer_id: a.id.to_string(),
                gpu: a.gpu_name,
                gpu_count: a.num_gpus,
                // `gpu_ram` is MB per GPU.
                vram_gib: a.gpu_ram.map(|mb| (mb / 1024.0 * 10.0).round() / 10.0),
                price_per_hour_usd: a.dph_total,
                region: a.geolocation,
                host_cuda: a.cuda_max_good.map(|c| format!("{c:.1}")),
                interruptible: a.is_bid.unwrap_or(false),
                tier: a.verification.or(asked_tier.map(String::from)),
                storage_usd_per_gb_month: a.storage_cost,
                fetched_ms: now_ms,
                runs_pytorch: None,
                best_torch: None,
                card_id: None,
                account: None,
                currency: SPEC.currency,
                price_source: None,
                traffic: Some(TrafficCost {
                    basis: "listed".into(),
                    download_usd_per_gb: a.inet_down_cost,
                    upload_usd_per_gb: a.inet_up_cost,
                    source: "Vast ask inet_down_cost / inet_up_cost ($/GB, vastai.openapi.yaml)"
                        .into(),
                }),
            })
            .collect())
    }
}

impl Provider for Vast {
    fn kind(&self) -> ProviderKind {
        KIND
    }

    fn check_account(&self) -> Result<Option<String>, ProviderError> {
        let r = self.http.send(&Req::read("/api/v0/users/current"))?;
        let u: User = r.parse(KIND, "user")?;
        Ok(u.email.or(u.id.map(|i| format!("user {i}"))))
    }

    fn balance(&self) -> Result<Option<f64>, ProviderError> {
        let r = self.http.send(&Req::read("/api/v0/users/current"))?;
        let u: User = r.parse(KIND, "user")?;
        Ok(u.credit.or(u.balance))
    }

    fn offer(&self, offer_id: &str, now_ms: i64) -> Result<Option<ProviderOffer>, ProviderError> {
        self.offer_at_disk(offer_id, SPEC.default_disk_gb, now_ms)
    }

    /// The ask read again, priced at the disk the create makes (`allocated_storage`: Vast's
    /// `dph_total` includes the disk's storage): a 200 GB rent is confirmed and capped at the
    /// 200 GB price, not the 50 GB one. A verified machine is asked first; an unverified one
    /// (the spec's `verified` defaults to `{eq: true}`) only when the first finds nothing.
    fn offer_at_disk(
        &self,
        offer_id: &str,
        disk_gb: u32,
        now_ms: i64,
    ) -> Result<Option<ProviderOffer>, ProviderError> {
        let Ok(ask) = offer_id.trim().parse::<i64>() else {
            return Ok(None);
        };
        for verified in [true, false] {
            let found = self
                .search(
                    json!({
                        "id": { "eq": ask },
                        "verified": { "eq": verified },
                        "rentable": { "eq": true },
                        "allocated_storage": disk_gb,
                    }),
                    now_ms,
                )?
                .into_iter()
                .find(|o| o.offer_id == offer_id);
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Filtered and ordered by the server ([`search_body`]), priced with the disk gpurent
    /// creates; unverified machines only when the query asks (a second search), each offer's
    /// `tier` saying which. Every ask still passes [`OfferQuery::matches`] (a GPU name with no
    /// row in `data/vast-gpu-names.csv` is filtered here only).
    fn offers(&self, query: &OfferQuery, now_ms: i64) -> Result<Vec<ProviderOffer>, ProviderError> {
        let disk = SPEC.default_disk_gb;
        let mut offers = self.search(search_body(query, true, disk), now_ms)?;
        if query.include_unverified == Some(true) {
            offers.extend(self.search(search_body(query, false, disk), now_ms)?);
        }
        offers.retain(|o| query.matches(o));
        offers.sort_by(|a, b| a.price_per_hour_usd.total_cmp(&b.price_per_hour_usd));
        Ok(offers)
    }

    fn register_key(
        &self,
        _public_key: &str,
        _key_label: &str,
    ) -> Result<KeyRegistration, ProviderError> {
        // Vast keys are attached per instance after the create (`attach_key`).
        Ok(KeyRegistration::Account)
    }

    fn create(&self, req: &CreateRequest, _key: &KeyRegistration) -> Result<String, ProviderError> {
        let ask: i64 = req
            .offer_id
            .trim()
            .parse()
            .map_err(|_| ProviderError::OfferGone {
                provider: KIND,
                offer_id: req.offer_id.clone(),
            })?;
        let body = json!({
            "image": req.image,
            "label": req.label,
            "disk": req.disk_gb,
            "runtype": "ssh_direct",
            "target_state": "running",
            "cancel_unavail": true,
        });
        let r = self.http.send(
            &Req::new(
                reqwest::Method::PUT,
                format!("/api/v0/asks/{ask}"),
                CallKind::Create,
            )
            .json(body)
            .pace("vast_write"),
        )?;
        let c: Created =
            r.parse(KIND, "create")
                .map_err(|e| ProviderError::CreateOutcomeUnknown {
                    provider: KIND,
                    detail: e.to_string(),
                })?;
        match (c.success, c.new_contract) {
            (Some(false), _) => Err(ProviderError::RequestRejected {
                provider: KIND,
                status: r.status,
                detail: r.body.chars().take(300).collect(),
            }),
            (_, Some(id)) => Ok(id.to_string()),
            (_, None) => Err(ProviderError::CreateOutcomeUnknown {
                provider: KIND,
                detail: "the answer had no new_contract".into(),
            }),
        }
    }

    fn attach_key(&self, id: &str, public_key: &str) -> Result<(), ProviderError> {
        let n = Self::instance_id(id)?;
        self.write(
            &Req::new(
                reqwest::Method::POST,
                format!("/api/v0/instances/{n}/ssh"),
                CallKind::Action,
            )
            .json(json!({ "ssh_key": public_key.trim() }))
            .pace("vast_write"),
            "attach ssh key",
        )
    }

    fn get(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError> {
        let n = Self::instance_id(id)?;
        match self
            .http
            .send(&Req::read(format!("/api/v0/instances/{n}")).pace("vast_get"))
        {
            Ok(r) => {
                let one: One = r.parse(KIND, "instance")?;
                Ok(one.instances.map(|v| self.remote(v)))
            }
            Err(ProviderError::RequestRejected { status: 404, .. }) => Ok(None),
            // The spec documents no 404 here; an unknown id is a 400 naming it.
            Err(ProviderError::RequestRejected {
                status: 400,
                detail,
                ..
            }) if detail.to_ascii_lowercase().contains("not found")
                || detail.to_ascii_lowercase().contains("no_such_instance") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Every page of the account's list. A list that ends before the `total_instances` its
    /// pages counted, or whose cursor repeats, is an error — never a complete list: a machine
    /// on a page never read would be neither shown nor confirmed (issue 19: partial listings).
    fn list(&self) -> Result<Vec<RemoteInstance>, ProviderError> {
        let mut out: Vec<RemoteInstance> = vec![];
        let mut token: Option<String> = None;
        let mut total: Option<u64> = None;
        let cut = |detail: String| ProviderError::ListingUnparseable {
            provider: KIND,
            detail,
        };
        // At most 40 pages of 25 (1000 instances): a longer chain is an error, not a cut list.
        for _ in 0..40 {
            let mut req = Req::read("/api/v1/instances")
                .query("limit", "25")
                .pace("vast_list");
            if let Some(t) = &token {
                req = req.query("after_token", t.clone());
            }
            let r = self.http.send(&req)?;
            let page: Page = r.parse(KIND, "instance list")?;
            if page.total_instances.is_some() {
                total = page.total_instances;
            }
            // A machine that moved between pages while they were read is counted once.
            for v in page.instances {
                let i = self.remote(v);
                if !out.iter().any(|o| o.id == i.id) {
                    out.push(i);
                }
            }
            match page.next_token.filter(|t| !t.is_empty()) {
                Some(t) if Some(&t) == token.as_ref() => {
                    return Err(cut(format!(
                        "the instance list's cursor repeated after {} instances",
                        out.len()
                    )));
                }
                Some(t) => token = Some(t),
                None => {
                    return match total {
                        Some(n) if (out.len() as u64) < n => Err(cut(format!(
                            "the instance list ended after {} of the {n} instances it counted",
                            out.len()
                        ))),
                        _ => Ok(out),
                    };
                }
            }
        }
        Err(cut("the instance list did not end after 40 pages".into()))
    }

    fn stop(&self, id: &str) -> Result<(), ProviderError> {
        self.manage(id, "stopped")
    }

    fn start(&self, id: &str) -> Result<(), ProviderError> {
        self.manage(id, "running")
    }

    fn terminate(&self, id: &str) -> Result<(), ProviderError> {
        let n = Self::instance_id(id)?;
        match self.http.send(
            &Req::new(
                reqwest::Method::DELETE,
                format!("/api/v0/instances/{n}"),
                CallKind::Action,
            )
            .pace("vast_write"),
        ) {
            Ok(_) | Err(ProviderError::RequestRejected { status: 404, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_gpu_names_become_vasts_names() {
        assert_eq!(gpu_names_for("4090"), ["RTX 4090"]);
        assert_eq!(gpu_names_for("rtx 4090"), ["RTX 4090"]);
        assert_eq!(gpu_names_for("A100"), ["A100 PCIE", "A100 SXM4"]);
        assert_eq!(gpu_names_for("H100 SXM"), ["H100 SXM"]);
        assert!(gpu_names_for("A10").iter().all(|n| n == "A10"));
        assert!(gpu_names_for("no such card").is_empty());
        let q = OfferQuery {
            gpu: Some("4090".into()),
            count: Some(2),
            min_vram_gib: Some(24.0),
            max_price_per_hour_usd: Some(1.5),
            include_unverified: None,
        };
        let b = search_body(&q, true, 50);
        assert_eq!(b["gpu_name"], json!({"in": ["RTX 4090"]}));
        assert_eq!(b["num_gpus"], json!({"in": [2]}));
        assert_eq!(b["dph_total"], json!({"lte": 1.5}));
        assert_eq!(b["verified"], json!({"eq": true}));
        // 24564 MB (an RTX 4090) is shown as 24.0 GiB, so it must pass a 24 GiB floor.
        assert!(b["gpu_ram"]["gte"].as_f64().expect("gte") <= 24564.0);
        assert_eq!(b["allocated_storage"], json!(50));
    }

    #[test]
    fn thresholds_become_waits() {
        assert_eq!(
            threshold_s("API requests too frequent endpoint threshold=4.5"),
            Some(5)
        );
        assert_eq!(
            threshold_s("API requests too frequent endpoint threshold=1.0"),
            Some(1)
        );
        assert_eq!(threshold_s("slow down"), None);
    }

    #[test]
    fn states_map() {
        assert_eq!(
            state_of(Some("running"), Some("running")),
            RemoteState::Running
        );
        assert_eq!(state_of(None, Some("running")), RemoteState::Provisioning);
        assert_eq!(
            state_of(Some("exited"), Some("stopped")),
            RemoteState::Stopped
        );
        assert_eq!(
            state_of(Some("running"), Some("stopped")),
            RemoteState::Stopping
        );
        assert_eq!(state_of(Some("weird"), None), RemoteState::Unknown);
    }
}
