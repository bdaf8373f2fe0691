//! AutoDL 容器实例 Pro through its developer API (`https://api.autodl.com/api/v1/dev/...`; the
//! contract `tests/provider-specs/autodl-pro.openapi.yaml` was written by gpurent from AutoDL's
//! docs pages — AutoDL publishes no OpenAPI file).
//!
//! - Auth: `Authorization: <developer token>` with no "Bearer" (控制台 → 设置 → 开发者Token). The
//!   API answers only accounts with 实名 (real-name) or enterprise verification.
//! - Every answer is `{code, msg, data, request_id}`: anything but `code == "Success"` is a
//!   failure, whatever the HTTP status (the docs list no failure codes).
//! - Offers: the Pro API has no price and no stock before the create. gpurent offers the GPU
//!   specs of `data/autodl-pro-specs.csv` that have a documented rate (1–4 GPUs, offer id
//!   `<gpu_spec_uuid>:<count>`), priced at that rate in CNY; the machine's own rate
//!   (`snapshot.payg_price`, read as 1/1000 yuan per hour — unverified) is read after the create.
//! - Create: `POST …/pro/create` (pay-as-you-go only) with the image's host-CUDA floor as
//!   `cuda_v_from` and the gpurent label as `instance_name`; no key can be passed.
//! - Key: AutoDL gives a root password (`snapshot.root_password`) instead; the rent installs the
//!   user's key with it once ([`Provider::login_password`]) and never keeps it.
//! - Reads: `GET …/status` and `GET …/snapshot` take `instance_uuid` as a query parameter (the
//!   page shows a GET body; see the contract's open question 1); the list is `POST …/pro/list`,
//!   paged. An instance is gone only when the account's own list does not show it.
//! - Stop is `power_off` (the disk is kept; AutoDL releases a machine powered off 15 days in a
//!   row); start is `power_on` with `payload: "gpu"` (no-GPU mode is not offered by the API);
//!   release needs the machine powered off first (the page says so), so terminate powers it off,
//!   waits for `shutdown`, then releases.
//! - Balance: `POST /api/v1/dev/wallet/balance`, `assets` in 1/1000 yuan.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{CallKind, Http, Req, Resp};
use super::spec::{AuthStyle, KeyAttach, MachineCall, StopEffect, TariffShape};
use super::{
    ClientConfig, CreateRequest, KeyRegistration, OfferQuery, Provider, ProviderError,
    ProviderKind, ProviderOffer, ProviderSpec, RemoteInstance, RemoteState, SshEndpoint,
};
use crate::infra::currency::Currency;
use crate::infra::error::CoreError;
use crate::infra::secret::Secret;

const KIND: ProviderKind = ProviderKind::Autodl;

/// The paths of the Pro API.
const CREATE: &str = "/api/v1/dev/instance/pro/create";
const SNAPSHOT: &str = "/api/v1/dev/instance/pro/snapshot";
const STATUS: &str = "/api/v1/dev/instance/pro/status";
const LIST: &str = "/api/v1/dev/instance/pro/list";
const POWER_ON: &str = "/api/v1/dev/instance/pro/power_on";
const POWER_OFF: &str = "/api/v1/dev/instance/pro/power_off";
const RELEASE: &str = "/api/v1/dev/instance/pro/release";
const BALANCE: &str = "/api/v1/dev/wallet/balance";

/// AutoDL's facts (see [`super::spec`]).
pub const SPEC: ProviderSpec = ProviderSpec {
    kind: KIND,
    id: "autodl",
    aliases: &["autodl-pro", "autodl_pro"],
    display: "AutoDL",
    env_stem: "AUTODL",
    api_base: "https://api.autodl.com",
    auth: AuthStyle::Plain,
    // The page shows only "running"; the other words are a third-party client's (the
    // contract's open question 3): unverified.
    status_words: &[
        ("creating", RemoteState::Provisioning),
        ("sys_volume_creating", RemoteState::Provisioning),
        ("starting", RemoteState::Starting),
        ("running", RemoteState::Running),
        ("shutting_down", RemoteState::Stopping),
        ("shutdown", RemoteState::Stopped),
        ("power_off", RemoteState::Stopped),
        ("removing", RemoteState::Terminating),
        ("removed", RemoteState::Terminated),
    ],
    // power_off keeps the data (the console: a machine powered off 15 days in a row is released
    // and its data wiped — `release_after_days_off`).
    stop: StopEffect::KeepsDisk,
    disk_kind: "system_disk",
    // Whether an expanded disk bills while powered off was NOT FOUND (platform-rules.csv
    // `storage_while_off` unknown): no storage charge is assumed or shown as zero.
    stopped_bills_storage: false,
    key_attach: KeyAttach::RootPassword,
    attach_retry_ms: &[],
    // No limits are documented.
    min_intervals_ms: &[],
    // The rounding of a pay-as-you-go span was NOT FOUND (platform-rules.csv `increment`).
    billing: "unknown",
    ready_timeout_s: 20 * 60,
    // The system disk every Pro instance has (the snapshot example's `system_init_disk_size`,
    // 32212254720 bytes = 30 GiB); more is `expand_system_disk_by_gb` (0–500).
    default_disk_gb: 30,
    ssh_user: Some("root"),
    ssh_port: None,
    // AutoDL puts no API key on its machines: a machine's own guard cannot call the API.
    machine_env: None,
    guard_stop: Some(MachineCall {
        method: "POST",
        path: POWER_OFF,
        body: Some(r#"{"instance_uuid":"{id}"}"#),
    }),
    guard_release: MachineCall {
        method: "POST",
        path: RELEASE,
        body: Some(r#"{"instance_uuid":"{id}"}"#),
    },
    guard_ok: Some(r#""code":"Success""#),
    release_needs_stop: true,
    currency: Currency::Cny,
    price_before_create: false,
    tariff: TariffShape::Compute,
    reported_rate_source: "autodl snapshot payg_price / 1000 (CNY/h; the unit is unverified)",
    balance_source: Some("autodl wallet/balance assets / 1000 (CNY)"),
    release_after_days_off: Some(15),
};

/// The included system disk (GB); a larger disk is asked as an expansion.
const SYSTEM_DISK_GB: u32 = 30;
/// `req_gpu_amount` 1–4 (the contract).
const MAX_GPUS: u32 = 4;
/// The host-CUDA floor sent when the image's is not known (the page's example value).
const DEFAULT_CUDA_V_FROM: u32 = 113;

const SPECS_CSV: &str = include_str!("../../data/autodl-pro-specs.csv");

/// One row of `data/autodl-pro-specs.csv`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ProSpec {
    pub spec_id: String,
    pub gpu: String,
    pub vram_gib: Option<f64>,
    /// The documented pay-as-you-go rate per GPU and hour, in CNY (`None`: none found).
    pub cny_per_gpu_hour: Option<f64>,
    pub verified: String,
    pub source: String,
    pub read_on: String,
    pub note: String,
}

/// Every GPU spec of the data file.
pub fn pro_specs() -> Result<Vec<ProSpec>, CoreError> {
    csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .from_reader(SPECS_CSV.as_bytes())
        .deserialize()
        .collect::<Result<Vec<ProSpec>, _>>()
        .map_err(|e| CoreError::BundledData(format!("autodl-pro-specs.csv: {e}")))
}

/// Where an offer's rate comes from: `"<source> (<verified>, read <date>)"`.
pub fn rate_source(spec_id: &str) -> Option<String> {
    pro_specs().ok()?.into_iter().find_map(|s| {
        (s.spec_id == spec_id && s.cny_per_gpu_hour.is_some())
            .then(|| format!("{} ({}, read {})", s.source, s.verified, s.read_on))
    })
}

#[derive(Debug)]
pub struct Autodl {
    http: Http,
    ssh_user: String,
    ssh_port: Option<u16>,
}

impl Autodl {
    pub fn new(config: ClientConfig) -> Result<Autodl, ProviderError> {
        Ok(Autodl {
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
            ssh_port: config.ssh_port,
        })
    }
}

/// `{code, msg, data, request_id}`.
#[derive(Debug, Deserialize)]
struct Envelope {
    code: String,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    data: Value,
}

/// A failure word of the envelope (`code` other than "Success") to an outcome. The docs list no
/// failure codes; the words matched here come from third-party reports (the real-name refusal
/// `BadRequest` / `无当前资源访问权限`) and the console's wording, and anything else is a
/// refusal with its text.
fn envelope_error(status: u16, code: &str, msg: &str) -> ProviderError {
    let detail = format!("{code}: {msg}");
    let lower = code.to_ascii_lowercase();
    if msg.contains("实名") || msg.contains("无当前资源访问权限") || msg.contains("认证")
    {
        ProviderError::AccountNotVerified {
            provider: KIND,
            detail,
        }
    } else if lower.contains("auth") || lower.contains("token") || msg.contains("Token") {
        ProviderError::AuthRejected {
            provider: KIND,
            detail,
        }
    } else if msg.contains("余额") || lower.contains("balance") {
        ProviderError::InsufficientBalance {
            provider: KIND,
            detail,
        }
    } else if msg.contains("库存") || msg.contains("资源不足") || lower.contains("stock") {
        ProviderError::InsufficientCapacity {
            provider: KIND,
            detail,
        }
    } else {
        // The API's own word that it did not do it (an HTTP 200 carrying a failure is a refusal
        // all the same: 400 here).
        ProviderError::RequestRejected {
            provider: KIND,
            status: if (400..500).contains(&status) {
                status
            } else {
                400
            },
            detail,
        }
    }
}

/// A non-2xx answer to an outcome (429 and 5xx first; then the envelope's word).
pub fn map_error(provider: ProviderKind, r: &Resp) -> ProviderError {
    let env: Option<Envelope> = serde_json::from_str(&r.body).ok();
    let detail = env
        .as_ref()
        .map(|e| format!("{}: {}", e.code, e.msg))
        .unwrap_or_else(|| r.body.chars().take(300).collect());
    match r.status {
        429 => ProviderError::RateLimited {
            provider,
            retry_after_s: super::http::retry_after_s(&r.headers),
        },
        s if s >= 500 => ProviderError::ProviderOutage {
            provider,
            status: s,
            detail,
        },
        401 | 403 if env.as_ref().is_none_or(|e| !e.msg.contains("实名")) => {
            ProviderError::AuthRejected { provider, detail }
        }
        s => match env {
            Some(e) => envelope_error(s, &e.code, &e.msg),
            None => ProviderError::RequestRejected {
                provider,
                status: s,
                detail,
            },
        },
    }
}

/// One `list` item.
#[derive(Debug, Deserialize)]
struct ProInstance {
    uuid: String,
    status: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    req_gpu_amount: Option<u32>,
    #[serde(default)]
    gpu_spec_uuid: Option<String>,
}

#[derive(Debug, Deserialize)]
struct InstancePage {
    list: Vec<ProInstance>,
    #[serde(default)]
    max_page: Option<u32>,
}

/// The parts of a `snapshot` gpurent reads (the password is read on its own, into a
/// [`Secret`]: [`Provider::login_password`]).
#[derive(Debug, Deserialize)]
struct Snapshot {
    #[serde(default)]
    payg_price: Option<f64>,
    #[serde(default)]
    snapshot_gpu_alias_name: Option<String>,
    #[serde(default)]
    proxy_host: Option<String>,
    #[serde(default)]
    ssh_port: Option<u16>,
}

#[derive(Debug, Deserialize)]
struct Wallet {
    assets: i64,
}

/// `<gpu_spec_uuid>:<count>`.
fn parse_offer_id(id: &str) -> Option<(&str, u32)> {
    let (spec, n) = id.trim().rsplit_once(':')?;
    let n: u32 = n.parse().ok()?;
    (!spec.is_empty() && (1..=MAX_GPUS).contains(&n)).then_some((spec, n))
}

/// The host-CUDA floor of an image as AutoDL's `cuda_v_from` (`12.4` → 124), from the image's
/// row in `data/provider-images.csv`; the page's example value where the image is not listed.
fn cuda_v_from(image: &str) -> u32 {
    super::images::all()
        .ok()
        .and_then(|rows| {
            rows.into_iter()
                .find(|r| r.provider == SPEC.id && r.image == image)
        })
        .and_then(|r| {
            let (maj, min) = r.host_cuda_min.split_once('.')?;
            Some(maj.parse::<u32>().ok()? * 10 + min.parse::<u32>().ok()?)
        })
        .unwrap_or(DEFAULT_CUDA_V_FROM)
}

impl Autodl {
    /// Send, then read the envelope: `Ok(data)` only for `code == "Success"`.
    fn call(&self, req: &Req, what: &str) -> Result<Value, ProviderError> {
        let r = self.http.send(req)?;
        let env: Envelope = r.parse(KIND, what)?;
        if env.code == "Success" {
            Ok(env.data)
        } else {
            Err(envelope_error(r.status, &env.code, &env.msg))
        }
    }

    fn parse<T: DeserializeOwned>(data: Value, what: &str) -> Result<T, ProviderError> {
        serde_json::from_value(data).map_err(|e| ProviderError::ListingUnparseable {
            provider: KIND,
            detail: format!("{what}: {e}"),
        })
    }

    fn read_by_id(path: &str, id: &str) -> Req {
        Req::read(path).query("instance_uuid", id)
    }

    fn post(path: &str, kind: CallKind, body: Value) -> Req {
        Req::new(reqwest::Method::POST, path, kind).json(body)
    }

    fn snapshot(&self, id: &str) -> Result<Option<Snapshot>, ProviderError> {
        let d = self.call(&Self::read_by_id(SNAPSHOT, id), "snapshot")?;
        if d.is_null() {
            return Ok(None);
        }
        Self::parse(d, "snapshot").map(Some)
    }

    fn status_word(&self, id: &str) -> Result<String, ProviderError> {
        let d = self.call(&Self::read_by_id(STATUS, id), "status")?;
        Self::parse(d, "status")
    }

    /// The account's own list's entry for `id` (a live machine: not `removed`), without its
    /// snapshot.
    fn listed(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError> {
        Ok(self.list_bare()?.into_iter().find(|i| i.id == id))
    }

    fn remote(&self, i: ProInstance) -> RemoteInstance {
        let names = pro_specs().unwrap_or_default();
        let gpu = i.gpu_spec_uuid.as_ref().map(|s| {
            names
                .iter()
                .find(|p| &p.spec_id == s)
                .map_or_else(|| s.clone(), |p| p.gpu.clone())
        });
        RemoteInstance {
            provider: KIND,
            label: i.name.filter(|n| !n.is_empty()),
            state: SPEC.state_of(&i.status),
            raw_status: i.status,
            gpu,
            gpu_count: i.req_gpu_amount,
            // The list carries no price: the rate is in the snapshot (read by `get`).
            price_per_hour_usd: None,
            ssh: None,
            host_cuda: None,
            id: i.uuid,
        }
    }

    /// Every page of the account's list (released machines left out), without snapshots.
    fn list_bare(&self) -> Result<Vec<RemoteInstance>, ProviderError> {
        let mut out = vec![];
        let mut page = 1u32;
        loop {
            let d = self.call(
                &Self::post(
                    LIST,
                    CallKind::Read,
                    json!({ "page_index": page, "page_size": 100 }),
                ),
                "instance list",
            )?;
            // `data: null` is not "no machines": only a page with a list is.
            let p: InstancePage = Self::parse(d, "instance list")?;
            let last = p.max_page.unwrap_or(1);
            // A machine that moved between pages while they were read is counted once.
            for i in p.list {
                if SPEC.state_of(&i.status) != RemoteState::Terminated
                    && !out.iter().any(|o: &RemoteInstance| o.id == i.uuid)
                {
                    out.push(self.remote(i));
                }
            }
            if page >= last || page >= 100 {
                break;
            }
            page += 1;
        }
        Ok(out)
    }

    /// A running machine's rate, GPU name and SSH endpoint, from its snapshot (the list carries
    /// none of them).
    /// `data: null` (the contract allows it; AutoDL sometimes has no details right after a
    /// create) is "no rate or endpoint yet", never a failed listing (money review F12: one such
    /// answer failed the account's whole list and ended a rent before its key was installed).
    fn fill_from_snapshot(&self, r: &mut RemoteInstance) -> Result<(), ProviderError> {
        let Some(s) = self.snapshot(&r.id)? else {
            return Ok(());
        };
        r.price_per_hour_usd = s.payg_price.map(|p| p / 1000.0);
        if let Some(g) = s.snapshot_gpu_alias_name.filter(|g| !g.is_empty()) {
            r.gpu = Some(g);
        }
        r.ssh = match (s.proxy_host.filter(|h| !h.is_empty()), s.ssh_port) {
            (Some(host), Some(port)) if port > 0 => Some(SshEndpoint {
                host,
                port: self.ssh_port.unwrap_or(port),
                user: self.ssh_user.clone(),
            }),
            _ => None,
        };
        Ok(())
    }

    /// Power off (where it is not off already) and wait until the status says `shutdown`.
    fn power_off_and_wait(&self, id: &str) -> Result<(), ProviderError> {
        let state = SPEC.state_of(&self.status_word(id)?);
        if state == RemoteState::Stopped {
            return Ok(());
        }
        if state != RemoteState::Stopping {
            self.call(
                &Self::post(POWER_OFF, CallKind::Action, json!({ "instance_uuid": id })),
                "power_off",
            )?;
        }
        let start = std::time::Instant::now();
        loop {
            let word = self.status_word(id)?;
            if SPEC.state_of(&word) == RemoteState::Stopped {
                return Ok(());
            }
            // Bounded by the client's longest wait on the provider.
            if start.elapsed() >= self.http.max_wait() {
                return Err(ProviderError::NotConfirmed {
                    provider: KIND,
                    state: format!("{word} (release needs the machine powered off first)"),
                });
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Provider for Autodl {
    fn kind(&self) -> ProviderKind {
        KIND
    }

    fn check_account(&self) -> Result<Option<String>, ProviderError> {
        self.balance()?;
        Ok(None)
    }

    fn offers(&self, query: &OfferQuery, now_ms: i64) -> Result<Vec<ProviderOffer>, ProviderError> {
        let mut out = vec![];
        for s in pro_specs()? {
            // No documented rate: not offered (an unknown price is never confirmed).
            let Some(rate) = s.cny_per_gpu_hour else {
                continue;
            };
            for n in 1..=MAX_GPUS {
                let o = ProviderOffer {
                    provider: KIND,
                    offer_id: format!("{}:{n}", s.spec_id),
                    gpu: s.gpu.clone(),
                    gpu_count: n,
                    vram_gib: s.vram_gib,
                    price_per_hour_usd: rate * f64::from(n),
                    region: None,
                    host_cuda: None,
                    interruptible: false,
                    tier: Some("pro".into()),
                    storage_usd_per_gb_month: None,
                    fetched_ms: now_ms,
                    runs_pytorch: None,
                    best_torch: None,
                    card_id: None,
                    account: None,
                    currency: SPEC.currency,
                    price_source: Some(format!(
                        "{} ({}, read {})",
                        s.source, s.verified, s.read_on
                    )),
                    traffic: None,
                };
                if query.matches(&o) {
                    out.push(o);
                }
            }
        }
        Ok(out)
    }

    fn offer(&self, offer_id: &str, now_ms: i64) -> Result<Option<ProviderOffer>, ProviderError> {
        Ok(self
            .offers(&OfferQuery::default(), now_ms)?
            .into_iter()
            .find(|o| o.offer_id == offer_id.trim()))
    }

    fn register_key(
        &self,
        _public_key: &str,
        _key_label: &str,
    ) -> Result<KeyRegistration, ProviderError> {
        // No key API: the key is installed with the machine's root password once it runs.
        Ok(KeyRegistration::Account)
    }

    fn create(&self, req: &CreateRequest, _key: &KeyRegistration) -> Result<String, ProviderError> {
        let (spec, n) = parse_offer_id(&req.offer_id).ok_or_else(|| ProviderError::OfferGone {
            provider: KIND,
            offer_id: req.offer_id.clone(),
        })?;
        let body = json!({
            "req_gpu_amount": n,
            "expand_system_disk_by_gb": req.disk_gb.saturating_sub(SYSTEM_DISK_GB).min(500),
            "gpu_spec_uuid": spec,
            "image_uuid": req.image,
            "cuda_v_from": cuda_v_from(&req.image),
            "instance_name": req.label,
        });
        let r = self
            .http
            .send(&Self::post(CREATE, CallKind::Create, body))?;
        // A 2xx whose body cannot be read may have made the machine.
        let unclear = |detail: String| ProviderError::CreateOutcomeUnknown {
            provider: KIND,
            detail,
        };
        let env: Envelope = r
            .parse(KIND, "create")
            .map_err(|e| unclear(e.to_string()))?;
        if env.code != "Success" {
            // Only the words that say the create was refused (real name, token, balance,
            // stock, an unknown GPU spec) mean nothing was made. AutoDL documents no failure
            // codes, so any other word (`InternalError` / 服务繁忙) may come after the machine
            // was made: unclear, found by its name later, never "nothing was made" (money
            // review F9: the row was closed create_failed and the next rent made a second one).
            let e = envelope_error(r.status, &env.code, &env.msg);
            let refused = matches!(
                e,
                ProviderError::AccountNotVerified { .. }
                    | ProviderError::AuthRejected { .. }
                    | ProviderError::InsufficientBalance { .. }
                    | ProviderError::InsufficientCapacity { .. }
            ) || env.msg.contains("规格不存在");
            return Err(if refused {
                e
            } else {
                unclear(format!("create answered {}: {}", env.code, env.msg))
            });
        }
        env.data
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from)
            .ok_or_else(|| unclear("the create answer named no instance".into()))
    }

    fn get(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError> {
        let word = match self.status_word(id) {
            Ok(w) => w,
            // An unknown id has no documented answer: only the account's own list decides that
            // it is gone (not listed → gone; listed → the list's word, a status read that lags).
            Err(ProviderError::RequestRejected { .. }) => return self.listed(id),
            Err(e) => return Err(e),
        };
        let state = SPEC.state_of(&word);
        if state == RemoteState::Terminated {
            return Ok(None);
        }
        let listed = self.listed(id)?;
        let mut r = match listed {
            Some(r) => r,
            // A status without a listing entry: the list lags the create (the reader decides).
            None => RemoteInstance {
                provider: KIND,
                id: id.to_string(),
                label: None,
                state,
                raw_status: word.clone(),
                gpu: None,
                gpu_count: None,
                price_per_hour_usd: None,
                ssh: None,
                host_cuda: None,
            },
        };
        r.state = state;
        r.raw_status = word;
        if state == RemoteState::Running {
            self.fill_from_snapshot(&mut r)?;
        }
        Ok(Some(r))
    }

    fn list(&self) -> Result<Vec<RemoteInstance>, ProviderError> {
        let mut out = self.list_bare()?;
        // A running machine bills at the rate only its snapshot says: read it, so every machine
        // of the account is shown with what it costs (one read per running machine).
        for r in out.iter_mut().filter(|r| r.state == RemoteState::Running) {
            self.fill_from_snapshot(r)?;
        }
        Ok(out)
    }

    fn stop(&self, id: &str) -> Result<(), ProviderError> {
        self.call(
            &Self::post(POWER_OFF, CallKind::Action, json!({ "instance_uuid": id })),
            "power_off",
        )?;
        Ok(())
    }

    fn start(&self, id: &str) -> Result<(), ProviderError> {
        // With its GPU: the API offers no no-GPU mode (无卡模式 "暂不支持API").
        self.call(
            &Self::post(
                POWER_ON,
                CallKind::Action,
                json!({ "instance_uuid": id, "payload": "gpu" }),
            ),
            "power_on",
        )?;
        Ok(())
    }

    fn terminate(&self, id: &str) -> Result<(), ProviderError> {
        match self.power_off_and_wait(id) {
            Ok(()) => {}
            Err(e @ ProviderError::RequestRejected { .. }) => {
                // Not listed by the account's own list: released already.
                return match self.listed(id)? {
                    None => Ok(()),
                    Some(_) => Err(e),
                };
            }
            Err(e) => return Err(e),
        }
        self.call(
            &Self::post(RELEASE, CallKind::Action, json!({ "instance_uuid": id })),
            "release",
        )?;
        Ok(())
    }

    fn balance(&self) -> Result<Option<f64>, ProviderError> {
        let d = self.call(
            &Req::new(reqwest::Method::POST, BALANCE, CallKind::Read),
            "wallet",
        )?;
        let w: Wallet = Self::parse(d, "wallet")?;
        // 1/1000 yuan ("除以1000等于元").
        Ok(Some(w.assets as f64 / 1000.0))
    }

    fn login_password(&self, id: &str) -> Result<Option<Secret>, ProviderError> {
        let d = self.call(&Self::read_by_id(SNAPSHOT, id), "snapshot")?;
        Ok(d.get("root_password")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(Secret::new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_ids_cuda_floors_and_specs_read() {
        assert_eq!(parse_offer_id("pro6000-p:2"), Some(("pro6000-p", 2)));
        assert_eq!(parse_offer_id("pro6000-p:5"), None);
        assert_eq!(parse_offer_id(":1"), None);
        assert_eq!(cuda_v_from("base-image-90df20b82987"), 124);
        assert_eq!(cuda_v_from("base-image-l2t43iu6uk"), 118);
        assert_eq!(cuda_v_from("image-mine"), DEFAULT_CUDA_V_FROM);
        let specs = pro_specs().expect("csv");
        assert!(specs.iter().any(|s| s.spec_id == "h800"));
        // Every rate in the file cites its page and date.
        for s in specs.iter().filter(|s| s.cny_per_gpu_hour.is_some()) {
            assert!(
                s.source.starts_with("https://") && !s.read_on.is_empty(),
                "{s:?}"
            );
        }
        assert!(rate_source("pro6000-p").is_some_and(|s| s.contains("unverified")));
        assert_eq!(rate_source("h800"), None);
    }

    #[test]
    fn failure_words_map_to_outcomes() {
        let e = envelope_error(200, "BadRequest", "无当前资源访问权限");
        assert!(
            matches!(e, ProviderError::AccountNotVerified { .. }),
            "{e:?}"
        );
        assert!(e.is_clear_refusal());
        let e = envelope_error(200, "BadRequest", "余额不足");
        assert!(matches!(e, ProviderError::InsufficientBalance { .. }));
        let e = envelope_error(200, "BadRequest", "something else");
        assert!(matches!(
            e,
            ProviderError::RequestRejected { status: 400, .. }
        ));
        assert!(e.is_clear_refusal());
    }
}
