//! Renting GPUs from cloud providers: one [`Provider`] trait, one module per provider.
//!
//! - [`runpod`] (REST v2, managed containers), [`vast`] (a marketplace with per-offer prices),
//!   [`lambda`] (plain VMs) and [`autodl`] (容器实例 Pro, amounts in CNY) implement [`Provider`]; each opens with its [`ProviderSpec`] (`SPEC`,
//!   see [`spec`]): the provider's facts in one place. A new provider joins by adding a module
//!   with its client and its `SPEC` and a [`ProviderKind`] variant (the other files it touches
//!   are in ARCHITECTURE.md, "A new provider").
//! - [`rent`]: the rent state machine on the injected clock.
//! - [`action`]: stop, start and release, confirmed against the provider's answer.
//! - [`reconcile`]: the ledger against each account's listing (when a machine is gone), and
//!   [`foreign`]: the machines gpurent did not start, as the reconciles saw them.
//! - [`http`]: the one HTTP layer (reqwest on rustls, timeouts on every call, reads retried with
//!   backoff, `Retry-After` / RunPod `RateLimit` honoured, per-endpoint minimum intervals); a
//!   create is never re-sent by it.
//! - [`error`]: [`ProviderError`], each provider's error shape mapped to stable codes.
//! - [`ledger`]: the instance ledger in SQLite (intent row before any create, every state change
//!   timestamped) and the reconcile of the ledger with each account's instance list.
//! - [`accounts`]: which accounts are connected; their API keys live only in the OS keychain (or
//!   the `GPURENT_*_API_KEY` environment) and are held in [`crate::infra::secret::Secret`].
//! - [`crash`]: the named crash points the crash-recovery test kills `gpurent rent` at.
//!
//! The `impl App` facade of this domain is in `app/providers.rs`; nothing here carries `impl App`.

pub mod accounts;
pub mod action;
pub mod autodl;
pub mod crash;
pub mod error;
pub mod fit;
pub mod foreign;
pub mod http;
pub mod images;
pub mod lambda;
pub mod ledger;
pub mod reconcile;
pub mod rent;
pub mod runpod;
pub mod spec;
pub mod vast;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::currency::Currency;
use crate::infra::secret::Secret;

pub use error::ProviderError;
pub use spec::ProviderSpec;

/// The providers gpurent can rent from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Runpod,
    Vast,
    Lambda,
    /// AutoDL 容器实例 Pro (its developer API; amounts in CNY).
    Autodl,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 4] = [
        ProviderKind::Runpod,
        ProviderKind::Vast,
        ProviderKind::Lambda,
        ProviderKind::Autodl,
    ];

    /// The provider's facts ([`spec`]): the one place a provider's name, API base, status
    /// words, stop semantics, key attach, pacing, retries and disk default are read from.
    pub fn spec(self) -> &'static ProviderSpec {
        match self {
            ProviderKind::Runpod => &runpod::SPEC,
            ProviderKind::Vast => &vast::SPEC,
            ProviderKind::Lambda => &lambda::SPEC,
            ProviderKind::Autodl => &autodl::SPEC,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.spec().id
    }

    pub fn parse(s: &str) -> Option<ProviderKind> {
        let s = s.trim().to_ascii_lowercase();
        ProviderKind::ALL.into_iter().find(|k| {
            let spec = k.spec();
            spec.id == s || spec.aliases.contains(&s.as_str())
        })
    }

    /// `RUNPOD`, `VAST`, `LAMBDA`: the middle of the `GPURENT_<X>_API_KEY` / `_API_URL` variables.
    pub fn env_stem(self) -> &'static str {
        self.spec().env_stem
    }

    /// The production API base URL (overridden by `GPURENT_<X>_API_URL`).
    pub fn default_base_url(self) -> &'static str {
        self.spec().api_base
    }

    /// What renting here means for money and lifecycle (shown in the confirm step), from the
    /// provider's [`ProviderSpec`].
    pub fn terms(self) -> ProviderTerms {
        let spec = self.spec();
        ProviderTerms {
            can_stop: spec.can_stop(),
            billing: spec.billing.into(),
            ready_timeout_s: spec.ready_timeout_s,
            currency: spec.currency,
            price_before_create: spec.price_before_create,
            release_after_days_off: spec.release_after_days_off,
        }
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lifecycle and billing facts of a provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderTerms {
    /// Whether an instance can be stopped (GPU billing ends, disk kept) and started again.
    pub can_stop: bool,
    /// `per_second` or `per_minute`.
    pub billing: String,
    /// How long a new machine may take to become ready (proven key login) before gpurent offers
    /// to terminate it (dstack uses 20 min for RunPod and 30 min for Lambda).
    pub ready_timeout_s: u64,
    /// What every amount of this provider is in (its offers' and machines' prices, its
    /// balance): CNY for AutoDL, USD for the others; never converted.
    #[serde(default)]
    pub currency: Currency,
    /// `false` where the provider gives no price before the create (AutoDL Pro): the offer's
    /// price is a documented rate (with its source), and the machine's own rate is read after
    /// the create.
    #[serde(default = "yes")]
    pub price_before_create: bool,
    /// The provider releases (and wipes) a machine left powered off this many days in a row
    /// (AutoDL: 15, unverified — `data/platform-rules.csv`).
    #[serde(default)]
    pub release_after_days_off: Option<u32>,
}

fn yes() -> bool {
    true
}

/// What the user asks for when listing offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct OfferQuery {
    /// A GPU name or part of one (`4090`, `H100`), matched case-insensitively.
    pub gpu: Option<String>,
    /// Exactly this many GPUs.
    pub count: Option<u32>,
    /// At least this much memory per GPU, in GiB.
    pub min_vram_gib: Option<f64>,
    /// At most this price per hour for the whole machine, in USD (an offer priced in another
    /// currency never passes it: amounts are not converted).
    pub max_price_per_hour_usd: Option<f64>,
    /// Vast: list asks on unverified (and deverified) machines too. Default (`None`/`false`):
    /// verified machines only; each offer's `tier` says which it is.
    #[serde(default)]
    #[ts(optional)]
    pub include_unverified: Option<bool>,
}

/// Vast's machine tiers that are listed only when [`OfferQuery::include_unverified`] asks.
pub const UNVERIFIED_TIERS: [&str; 2] = ["unverified", "deverified"];

impl OfferQuery {
    /// Whether an offer passes the query (providers filter on their side where they can; this is
    /// the one rule every offer goes through).
    pub fn matches(&self, o: &ProviderOffer) -> bool {
        if let Some(g) = &self.gpu {
            if !name_matches(&o.gpu, g) {
                return false;
            }
        }
        if let Some(n) = self.count {
            if o.gpu_count != n {
                return false;
            }
        }
        if let Some(v) = self.min_vram_gib {
            if o.vram_gib.is_none_or(|have| have + 1e-9 < v) {
                return false;
            }
        }
        if let Some(p) = self.max_price_per_hour_usd {
            if o.provider.spec().currency != Currency::Usd || o.price_per_hour_usd > p + 1e-9 {
                return false;
            }
        }
        if self.include_unverified != Some(true)
            && o.tier
                .as_deref()
                .is_some_and(|t| UNVERIFIED_TIERS.contains(&t))
        {
            return false;
        }
        true
    }
}

/// Whether a GPU name holds what the user typed, on token boundaries: `4090`, `rtx 4090` and
/// `RTX_4090` match `NVIDIA GeForce RTX 4090`; `A100` matches `NVIDIA A100-SXM4-80GB`; `A10`
/// does not match an A100 (a typed name ending in a digit must end where a token ends; one
/// ending in a letter may go on with digits: `sxm` matches `SXM5`).
pub fn name_matches(gpu: &str, typed: &str) -> bool {
    let hay = fit::tokens(gpu);
    let needle: String = fit::tokens(typed).concat();
    if needle.is_empty() {
        return true;
    }
    let ends_in_digit = needle.chars().last().is_some_and(|c| c.is_ascii_digit());
    (0..hay.len()).any(|i| {
        let mut run = String::new();
        for t in &hay[i..] {
            run.push_str(t);
            if run.len() >= needle.len() {
                return match run.strip_prefix(needle.as_str()) {
                    Some("") => true,
                    Some(rest) => !ends_in_digit && rest.chars().all(|c| c.is_ascii_digit()),
                    None => false,
                };
            }
        }
        false
    })
}

/// One thing that can be rented now, at a price (the estimator's priced card is
/// [`crate::estimate::Offer`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ProviderOffer {
    pub provider: ProviderKind,
    /// What `rent --offer` takes: RunPod `<cloud>:<count>:<gpu type id>`, Vast the ask id,
    /// Lambda `<instance type>@<region>`.
    pub offer_id: String,
    /// The GPU as the provider names it.
    pub gpu: String,
    pub gpu_count: u32,
    /// Memory per GPU in GiB, when the provider says.
    pub vram_gib: Option<f64>,
    /// The price of the whole machine (all its GPUs) per hour, as listed, in the provider's
    /// currency (`ProviderTerms.currency`: USD, CNY for AutoDL — the name is older than
    /// currencies). AutoDL lists no price before the create: this is its documented rate.
    pub price_per_hour_usd: f64,
    pub region: Option<String>,
    /// The host's CUDA version (driver capability) where the provider reports one; container
    /// hosts cannot upgrade their driver, so this bounds the PyTorch the machine can run.
    pub host_cuda: Option<String>,
    /// Spot / bid / interruptible.
    pub interruptible: bool,
    /// RunPod `secure`/`community`, Vast `verified`/`unverified`, Lambda `datacenter`.
    pub tier: Option<String>,
    /// What the disk costs per GB and month (also while stopped), where listed.
    pub storage_usd_per_gb_month: Option<f64>,
    /// When gpurent fetched this offer (ms since the epoch, from the injected clock).
    pub fetched_ms: i64,
    /// Whether a published PyTorch wheel has kernels for this GPU and needs no newer CUDA than
    /// the host's (`None`: unknown — a VM, or no host CUDA / GPU match). See [`fit`].
    pub runs_pytorch: Option<bool>,
    /// The newest such wheel, e.g. `2.8.0+cu128`.
    pub best_torch: Option<String>,
    /// The catalog card this GPU is (`rtx-4090`), so a screen can join the offer to the
    /// estimate's ranking; `None` when the name matches no card.
    #[serde(default)]
    pub card_id: Option<String>,
    /// The connected account this offer was listed for (set by the app; renting it uses that
    /// account). `None` from a bare client.
    #[serde(default)]
    pub account: Option<String>,
    /// What `price_per_hour_usd` is in (the provider's currency; never converted). Absent in
    /// JSON written before currencies: USD.
    #[serde(default)]
    pub currency: Currency,
    /// Where the price comes from when it is not the provider's quote (AutoDL: no price before
    /// the create — the documented rate's page, whether it was verified, and the date it was
    /// read); `None`: the provider's own listing.
    #[serde(default)]
    pub price_source: Option<String>,
    /// What network traffic costs on this machine, on top of the hourly price: Vast lists a
    /// price per GB each way with every ask; where a provider lists none, the app fills in
    /// `not_listed` with its source (`data/provider-traffic.csv`). `None` from a bare client
    /// whose provider lists nothing.
    #[serde(default)]
    pub traffic: Option<TrafficCost>,
}

/// The price of network traffic, per GB, USD (issue 19: bandwidth is billed apart from the
/// hourly price where a provider charges for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TrafficCost {
    /// `listed`: the provider's listing gave the prices below (Vast's `inet_down_cost` /
    /// `inet_up_cost` of the ask). `not_listed`: the provider's API lists no traffic price —
    /// not the same as free; `source` says what is known.
    pub basis: String,
    /// Traffic into the machine (downloads to it), USD per GB.
    pub download_usd_per_gb: Option<f64>,
    /// Traffic out of the machine (uploads from it), USD per GB.
    pub upload_usd_per_gb: Option<f64>,
    /// Where this comes from (the field names, or the data row's source and what was verified).
    pub source: String,
}

/// The provider's view of an instance's state, mapped from each provider's status words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RemoteState {
    Provisioning,
    Starting,
    Running,
    Stopping,
    Stopped,
    Terminating,
    Terminated,
    Error,
    Unknown,
}

impl RemoteState {
    /// Whether the instance may still cost money for its GPU.
    pub fn bills_gpu(self) -> bool {
        matches!(
            self,
            RemoteState::Provisioning
                | RemoteState::Starting
                | RemoteState::Running
                | RemoteState::Stopping
                | RemoteState::Error
                | RemoteState::Unknown
        )
    }
}

/// Where to log in over SSH (the direct TCP endpoint, never a shell-only proxy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SshEndpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
}

/// An instance as the provider reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RemoteInstance {
    pub provider: ProviderKind,
    pub id: String,
    /// The name/label field (gpurent writes `gpurent-<id>` there).
    pub label: Option<String>,
    pub state: RemoteState,
    /// The provider's own status word(s), for the detail line.
    pub raw_status: String,
    pub gpu: Option<String>,
    pub gpu_count: Option<u32>,
    pub price_per_hour_usd: Option<f64>,
    pub ssh: Option<SshEndpoint>,
    pub host_cuda: Option<String>,
}

/// What to create.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// The gpurent label (`gpurent-<random>`), written into the provider's name/label field.
    pub label: String,
    pub offer_id: String,
    pub image: String,
    pub disk_gb: u32,
    /// The user's public key (`authorized_keys` line) and gpurent's name for it.
    pub public_key: String,
    pub key_label: String,
}

/// How a provider's SSH key was made known to it before a create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRegistration {
    /// Nothing to pass to the create (the key is on the account, or is attached after it).
    Account,
    /// Lambda: the name of the account key to reference in the launch.
    Named(String),
}

/// Where a client talks to and with which key.
#[derive(Debug)]
pub struct ClientConfig {
    pub base_url: String,
    pub api_key: Secret,
    pub http: http::HttpOptions,
    /// The SSH login user when the provider does not report one (Vast `root`, Lambda `ubuntu`);
    /// `GPURENT_<X>_SSH_USER` overrides it (mirrors, tests against a loopback sshd).
    pub ssh_user: Option<String>,
    /// The SSH port when the provider does not report one (Lambda: 22); `GPURENT_<X>_SSH_PORT`
    /// overrides it (tests against a loopback sshd).
    pub ssh_port: Option<u16>,
}

/// The API base URL: `GPURENT_<X>_API_URL`, else the production one (no trailing slash).
/// An override over plain `http://` is taken only for a loopback host (tests, a local proxy):
/// the API key travels with every request, and plain http to another host would expose it. Any
/// other plain-http override is ignored (with a warning) and the production URL is used.
pub fn base_url(kind: ProviderKind) -> String {
    let var = format!("GPURENT_{}_API_URL", kind.env_stem());
    let over = std::env::var(&var).ok().filter(|s| !s.trim().is_empty());
    let url = match over {
        Some(u) if url_safe_for_key(&u) => u,
        Some(_) => {
            tracing::warn!(variable = %var, "ignored: plain http is allowed only to a loopback host");
            kind.default_base_url().to_string()
        }
        None => kind.default_base_url().to_string(),
    };
    url.trim().trim_end_matches('/').to_string()
}

/// `https://…`, or `http://` to `127.0.0.1`, `localhost` or `[::1]` only — the host as the HTTP
/// client itself parses it (a user part such as `http://127.0.0.1:80@evil.example/` sends the
/// request, and the key, to `evil.example`).
pub fn url_safe_for_key(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    match u.scheme() {
        "https" => true,
        "http" => {
            u.username().is_empty()
                && u.password().is_none()
                // The parser lower-cases names and writes IP addresses in their one form.
                && matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
        }
        _ => false,
    }
}

impl ClientConfig {
    /// The base URL from `GPURENT_<X>_API_URL` (or the production one) and the given key.
    pub fn from_env(kind: ProviderKind, api_key: Secret) -> ClientConfig {
        let base_url = base_url(kind);
        let ssh_user = std::env::var(format!("GPURENT_{}_SSH_USER", kind.env_stem()))
            .ok()
            .filter(|s| !s.trim().is_empty());
        let ssh_port = std::env::var(format!("GPURENT_{}_SSH_PORT", kind.env_stem()))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let mut http = http::HttpOptions::for_provider(kind);
        // GPURENT_HTTP_TIMEOUT_S: the whole-request timeout (slow links; tests use a short one).
        if let Some(s) = std::env::var("GPURENT_HTTP_TIMEOUT_S")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|s| *s > 0)
        {
            http.request_timeout = std::time::Duration::from_secs(s);
            http.connect_timeout = http.connect_timeout.min(http.request_timeout);
        }
        // GPURENT_HTTP_PACE_SCALE (0–1): shorter minimum intervals (tests: pacing still acts,
        // in a fraction of the time). Never longer than the provider's own.
        if let Some(f) = std::env::var("GPURENT_HTTP_PACE_SCALE")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|f| (0.0..=1.0).contains(f))
        {
            for (_, d) in &mut http.min_intervals {
                *d = d.mul_f64(f);
            }
        }
        ClientConfig {
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            http,
            ssh_user,
            ssh_port,
        }
    }
}

/// One cloud provider's API. Every call has a timeout; reads are retried with backoff by the
/// HTTP layer; [`Provider::create`] is sent at most once per call (a lost answer is
/// [`ProviderError::CreateOutcomeUnknown`], resolved by reconciling on the label).
pub trait Provider: Send + Sync + std::fmt::Debug {
    fn kind(&self) -> ProviderKind;
    /// One authenticated read; returns what the account is called (email, id) when known.
    fn check_account(&self) -> Result<Option<String>, ProviderError>;
    /// What can be rented now.
    fn offers(&self, query: &OfferQuery, now_ms: i64) -> Result<Vec<ProviderOffer>, ProviderError>;
    /// One offer by id, read again now (`None`: it is gone). Providers whose listing is paged or
    /// depends on the query override this.
    fn offer(&self, offer_id: &str, now_ms: i64) -> Result<Option<ProviderOffer>, ProviderError> {
        Ok(self
            .offers(
                &OfferQuery {
                    include_unverified: Some(true),
                    ..OfferQuery::default()
                },
                now_ms,
            )?
            .into_iter()
            .find(|o| o.offer_id == offer_id))
    }
    /// One offer read again, priced with the disk the create will make (`disk_gb`): where the
    /// price depends on the disk (Vast's `dph_total` includes its storage), the price the user
    /// confirms and is rented at is this one. Default: [`Provider::offer`] (the price does not
    /// depend on the disk).
    fn offer_at_disk(
        &self,
        offer_id: &str,
        _disk_gb: u32,
        now_ms: i64,
    ) -> Result<Option<ProviderOffer>, ProviderError> {
        self.offer(offer_id, now_ms)
    }
    /// Make the user's key usable for the next create (RunPod: add it to the account key set,
    /// read-modify-write; Lambda: register it under a name; Vast: nothing yet).
    fn register_key(
        &self,
        public_key: &str,
        key_label: &str,
    ) -> Result<KeyRegistration, ProviderError>;
    /// Create the instance; returns the provider's id. Sent once, never retried.
    fn create(&self, req: &CreateRequest, key: &KeyRegistration) -> Result<String, ProviderError>;
    /// After the create: attach the key to the instance where that is how it works (Vast).
    fn attach_key(&self, _id: &str, _public_key: &str) -> Result<(), ProviderError> {
        Ok(())
    }
    /// The instance, or `None` when the provider says it does not exist (gone).
    fn get(&self, id: &str) -> Result<Option<RemoteInstance>, ProviderError>;
    /// Every instance of the account. A listing that cannot be parsed is an error, never empty.
    fn list(&self) -> Result<Vec<RemoteInstance>, ProviderError>;
    fn stop(&self, id: &str) -> Result<(), ProviderError>;
    fn start(&self, id: &str) -> Result<(), ProviderError>;
    fn terminate(&self, id: &str) -> Result<(), ProviderError>;
    /// The account's prepaid balance in the provider's currency where it has an endpoint for
    /// it (Vast `GET /api/v0/users/current`, USD; AutoDL `wallet/balance`, CNY); `None` where it
    /// has none (RunPod REST v2, Lambda).
    fn balance(&self) -> Result<Option<f64>, ProviderError> {
        Ok(None)
    }
    /// The password the provider gave for logging in to a running machine
    /// ([`spec::KeyAttach::RootPassword`], AutoDL): used once to install the user's key, never
    /// stored. `None` where the provider gives none (or not yet).
    fn login_password(&self, _id: &str) -> Result<Option<Secret>, ProviderError> {
        Ok(None)
    }
}

/// The client for a provider.
pub fn client(
    kind: ProviderKind,
    config: ClientConfig,
) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(match kind {
        ProviderKind::Runpod => Box::new(runpod::RunPod::new(config)?),
        ProviderKind::Vast => Box::new(vast::Vast::new(config)?),
        ProviderKind::Lambda => Box::new(lambda::Lambda::new(config)?),
        ProviderKind::Autodl => Box::new(autodl::Autodl::new(config)?),
    })
}

/// Parse the `(NN GB)` out of a GPU description such as `H100 (80 GB SXM5)`.
pub(crate) fn vram_from_description(s: &str) -> Option<f64> {
    let re = regex::Regex::new(r"(\d+(?:\.\d+)?)\s*GB").ok()?;
    re.captures(s)?.get(1)?.as_str().parse().ok()
}

/// The key's type and base64 (the comment does not make it another key): what the clients
/// compare an account's keys by.
pub(crate) fn key_core(line: &str) -> String {
    line.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A test offer; `fit` tests build theirs from it too.
    pub(crate) fn offer(gpu: &str, count: u32, vram: Option<f64>, price: f64) -> ProviderOffer {
        ProviderOffer {
            provider: ProviderKind::Vast,
            offer_id: "1".into(),
            gpu: gpu.into(),
            gpu_count: count,
            vram_gib: vram,
            price_per_hour_usd: price,
            region: None,
            host_cuda: None,
            interruptible: false,
            tier: None,
            storage_usd_per_gb_month: None,
            fetched_ms: 0,
            runs_pytorch: None,
            best_torch: None,
            card_id: None,
            account: None,
            currency: Currency::Usd,
            price_source: None,
            traffic: None,
        }
    }

    #[test]
    fn offer_query_matches_loosely_on_names_and_strictly_on_numbers() {
        let o = offer("NVIDIA GeForce RTX 4090", 2, Some(24.0), 0.88);
        let q = |f: fn(&mut OfferQuery)| {
            let mut q = OfferQuery::default();
            f(&mut q);
            q.matches(&o)
        };
        assert!(q(|q| q.gpu = Some("rtx 4090".into())));
        assert!(q(|q| q.gpu = Some("RTX_4090".into())));
        assert!(!q(|q| q.gpu = Some("5090".into())));
        assert!(q(|q| q.gpu = Some("4090".into())));
        // `A10` is not an A100; `A100` and `sxm` match the A100 SXM4.
        let a100 = offer("NVIDIA A100-SXM4-80GB", 2, Some(80.0), 3.0);
        assert!(!name_matches(&a100.gpu, "A10"));
        assert!(name_matches(&a100.gpu, "a100"));
        assert!(name_matches(&a100.gpu, "A100 SXM"));
        assert!(name_matches("NVIDIA A10", "A10"));
        assert!(!name_matches("NVIDIA GeForce RTX 4090", "rtx 40"));
        assert!(q(|q| q.count = Some(2)));
        assert!(!q(|q| q.count = Some(1)));
        assert!(q(|q| q.min_vram_gib = Some(24.0)));
        assert!(!q(|q| q.min_vram_gib = Some(48.0)));
        assert!(q(|q| q.max_price_per_hour_usd = Some(0.88)));
        assert!(!q(|q| q.max_price_per_hour_usd = Some(0.5)));
        let unverified = ProviderOffer {
            tier: Some("unverified".into()),
            ..o.clone()
        };
        assert!(!OfferQuery::default().matches(&unverified));
        assert!(OfferQuery {
            include_unverified: Some(true),
            ..OfferQuery::default()
        }
        .matches(&unverified));
        let unknown_vram = offer("X", 1, None, 1.0);
        let q = OfferQuery {
            min_vram_gib: Some(1.0),
            ..Default::default()
        };
        assert!(
            !q.matches(&unknown_vram),
            "unknown VRAM never passes a VRAM floor"
        );
    }

    #[test]
    fn an_api_url_over_plain_http_must_be_loopback() {
        assert!(url_safe_for_key("https://api.runpod.io"));
        assert!(url_safe_for_key("http://127.0.0.1:4010"));
        assert!(url_safe_for_key("http://localhost:8080/v2"));
        assert!(url_safe_for_key("http://[::1]:9000"));
        assert!(!url_safe_for_key("http://mirror.example.com"));
        assert!(!url_safe_for_key("http://127.0.0.1.evil.example:80"));
        assert!(!url_safe_for_key("http://10.0.0.5:4010"));
        assert!(!url_safe_for_key("ftp://127.0.0.1"));
        // A user part before the host: the request goes to evil.example, not to loopback.
        assert!(!url_safe_for_key("http://127.0.0.1:80@evil.example/"));
        assert!(!url_safe_for_key("http://localhost@evil.example:4010"));
        assert!(!url_safe_for_key("http://[::1]@evil.example"));
        // What the HTTP client itself parses as loopback stays allowed.
        assert!(url_safe_for_key("HTTP://LOCALHOST:4010/"));
        assert!(url_safe_for_key("http://127.0.0.1"));
        assert!(!url_safe_for_key("http://"));
    }

    #[test]
    fn kinds_round_trip_and_vram_parses() {
        for k in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ProviderKind::parse("nope"), None);
        assert_eq!(vram_from_description("H100 (80 GB SXM5)"), Some(80.0));
        assert_eq!(vram_from_description("GH200 (96 GB)"), Some(96.0));
        assert_eq!(vram_from_description("A10"), None);
    }
}
