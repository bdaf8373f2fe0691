//! The one HTTP layer of the provider clients: reqwest (blocking, rustls; no OpenSSL), a connect
//! and a whole-request timeout on every call, and the retry rules:
//!
//! - **reads** are retried with exponential backoff on rate limits, 5xx and lost connections,
//!   waiting what the provider asked for (`Retry-After`, RunPod's `RateLimit: "minute";r=0;t=12`,
//!   Vast's `threshold=N` in a 429 body) capped by [`HttpOptions::max_wait`];
//! - **a create is never re-sent**: a create whose answer is lost after the request left becomes
//!   [`ProviderError::CreateOutcomeUnknown`] (the ledger finds the machine by its label later);
//!   only a connection that was never made is reported as [`ProviderError::Unreachable`];
//! - **actions** (stop, start, terminate) are sent once; the caller reads the state again.
//! - **minimum intervals** per endpoint group (Vast's per-endpoint thresholds, Lambda's one
//!   launch per ~12 s) are kept between calls of one client.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

use super::{ProviderError, ProviderKind};
use crate::infra::secret::Secret;

/// Timeouts, retries and pacing of one client.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// How many times a read is tried in all (1 = no retry).
    pub read_attempts: u32,
    /// The first backoff; doubled after each failed try.
    pub backoff_base: Duration,
    /// The longest gpurent waits on a provider's request to slow down before giving up with
    /// `rate_limited` (the wait is then the caller's to decide).
    pub max_wait: Duration,
    /// Minimum time between two calls of the same endpoint group.
    pub min_intervals: Vec<(&'static str, Duration)>,
    /// Extra request headers (tests: Prism's `Prefer: code=429` to pick a spec example).
    pub extra_headers: Vec<(String, String)>,
}

impl HttpOptions {
    /// The defaults for a provider.
    pub fn for_provider(kind: ProviderKind) -> HttpOptions {
        // The provider's pacing ([`super::ProviderSpec::min_intervals_ms`]).
        let min_intervals = kind
            .spec()
            .min_intervals_ms
            .iter()
            .map(|(group, ms)| (*group, Duration::from_millis(*ms)))
            .collect();
        HttpOptions {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            read_attempts: 4,
            backoff_base: Duration::from_millis(500),
            max_wait: Duration::from_secs(60),
            min_intervals,
            extra_headers: vec![],
        }
    }
}

/// What kind of call this is: decides retries and what a lost answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Read,
    Create,
    Action,
}

/// One request.
#[derive(Debug)]
pub struct Req {
    pub method: reqwest::Method,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<serde_json::Value>,
    pub kind: CallKind,
    /// The endpoint group whose minimum interval applies.
    pub pace: Option<&'static str>,
}

impl Req {
    pub fn read(path: impl Into<String>) -> Req {
        Req {
            method: reqwest::Method::GET,
            path: path.into(),
            query: vec![],
            body: None,
            kind: CallKind::Read,
            pace: None,
        }
    }
    pub fn new(method: reqwest::Method, path: impl Into<String>, kind: CallKind) -> Req {
        Req {
            method,
            path: path.into(),
            query: vec![],
            body: None,
            kind,
            pace: None,
        }
    }
    pub fn json(mut self, body: serde_json::Value) -> Req {
        self.body = Some(body);
        self
    }
    pub fn query(mut self, k: &str, v: impl Into<String>) -> Req {
        self.query.push((k.to_string(), v.into()));
        self
    }
    pub fn pace(mut self, key: &'static str) -> Req {
        self.pace = Some(key);
        self
    }
}

/// An answer (any status).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Parse the body; a body that does not fit is `listing_unparseable`, never "nothing".
    pub fn parse<T: serde::de::DeserializeOwned>(
        &self,
        provider: ProviderKind,
        what: &str,
    ) -> Result<T, ProviderError> {
        serde_json::from_str(&self.body).map_err(|e| ProviderError::ListingUnparseable {
            provider,
            detail: format!(
                "{what}: {e} (status {}, {} bytes)",
                self.status,
                self.body.len()
            ),
        })
    }
}

/// Maps a non-2xx answer to an error (each provider has its own shape).
pub type ErrorMapper = fn(ProviderKind, &Resp) -> ProviderError;

/// A client's connection to one provider API.
#[derive(Debug)]
pub struct Http {
    kind: ProviderKind,
    base: String,
    client: reqwest::blocking::Client,
    api_key: Secret,
    opts: HttpOptions,
    map_error: ErrorMapper,
    last_call: Mutex<HashMap<&'static str, Instant>>,
    /// Set when a RunPod `RateLimit` header said a window is used up: no call before then.
    blocked_until: Mutex<Option<Instant>>,
}

impl Http {
    pub fn new(
        kind: ProviderKind,
        base: &str,
        api_key: Secret,
        opts: HttpOptions,
        map_error: ErrorMapper,
    ) -> Result<Http, ProviderError> {
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(opts.connect_timeout)
            .timeout(opts.request_timeout)
            .user_agent(concat!("gpurent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Unreachable {
                provider: kind,
                detail: format!("HTTP client: {e}"),
            })?;
        Ok(Http {
            kind,
            base: base.trim_end_matches('/').to_string(),
            client,
            api_key,
            opts,
            map_error,
            last_call: Mutex::new(HashMap::new()),
            blocked_until: Mutex::new(None),
        })
    }

    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// Send with the rules above; `Ok` only for a 2xx answer.
    pub fn send(&self, req: &Req) -> Result<Resp, ProviderError> {
        let attempts = if req.kind == CallKind::Read {
            self.opts.read_attempts.max(1)
        } else {
            1
        };
        let mut backoff = self.opts.backoff_base;
        let mut tried = 0;
        loop {
            tried += 1;
            self.pace(req.pace);
            let err = match self.once(req) {
                Ok(resp) if (200..300).contains(&resp.status) => {
                    self.note_rate_limit(&resp);
                    return Ok(resp);
                }
                Ok(resp) => {
                    self.note_rate_limit(&resp);
                    let e = (self.map_error)(self.kind, &resp);
                    // A create answered with anything but a clear refusal (a 5xx, a 408) may
                    // have made the machine: never "nothing was made".
                    if req.kind == CallKind::Create && !e.is_clear_refusal() {
                        return Err(ProviderError::CreateOutcomeUnknown {
                            provider: self.kind,
                            detail: format!(
                                "{} {}: {} answered {}",
                                req.method, req.path, self.kind, resp.status
                            ),
                        });
                    }
                    e
                }
                Err(e) => e,
            };
            if tried >= attempts || !err.is_transient() {
                return Err(err);
            }
            let wait = match &err {
                ProviderError::RateLimited {
                    retry_after_s: Some(s),
                    ..
                } => Duration::from_secs(*s),
                _ => backoff,
            };
            if wait > self.opts.max_wait {
                return Err(err);
            }
            tracing::info!(provider = %self.kind, path = %req.path, code = %crate::Coded::code(&err), wait_ms = wait.as_millis() as u64, "read retried");
            std::thread::sleep(wait);
            backoff = backoff.saturating_mul(2);
        }
    }

    fn once(&self, req: &Req) -> Result<Resp, ProviderError> {
        let url = format!("{}{}", self.base, req.path);
        let mut b = self
            .client
            .request(req.method.clone(), &url)
            .header("Accept", "application/json, application/problem+json");
        b = match self.kind.spec().auth {
            super::spec::AuthStyle::Bearer => b.bearer_auth(self.api_key.expose()),
            super::spec::AuthStyle::Plain => {
                let mut v = reqwest::header::HeaderValue::from_str(self.api_key.expose()).map_err(
                    |_| ProviderError::AuthRejected {
                        provider: self.kind,
                        detail: "the API key holds characters a header cannot carry".into(),
                    },
                )?;
                v.set_sensitive(true);
                b.header(reqwest::header::AUTHORIZATION, v)
            }
        };
        for (k, v) in &self.opts.extra_headers {
            b = b.header(k.as_str(), v.as_str());
        }
        if !req.query.is_empty() {
            b = b.query(&req.query);
        }
        if let Some(body) = &req.body {
            b = b.json(body);
        }
        let resp = b.send().map_err(|e| self.transport(req, e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.text().map_err(|e| self.transport(req, e))?;
        Ok(Resp {
            status,
            headers,
            body,
        })
    }

    /// A transport failure. A connection that was never made means the request was not sent;
    /// anything later may have reached the provider.
    fn transport(&self, req: &Req, e: reqwest::Error) -> ProviderError {
        // Never put the URL's query or headers in the detail; the error text has no secrets
        // (the key travels in a header).
        let connect = e.is_connect();
        let detail = format!("{} {}: {}", req.method, req.path, e.without_url());
        if connect || req.kind == CallKind::Read {
            return ProviderError::Unreachable {
                provider: self.kind,
                detail,
            };
        }
        match req.kind {
            CallKind::Create => ProviderError::CreateOutcomeUnknown {
                provider: self.kind,
                detail,
            },
            _ => ProviderError::Unreachable {
                provider: self.kind,
                detail: format!("{detail} (the answer was lost; the state is read again)"),
            },
        }
    }

    fn pace(&self, key: Option<&'static str>) {
        let blocked = *self.blocked_until.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(until) = blocked {
            let now = Instant::now();
            if until > now {
                std::thread::sleep((until - now).min(self.opts.max_wait));
            }
        }
        let Some(key) = key else { return };
        let Some(min) = self
            .opts
            .min_intervals
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, d)| *d)
        else {
            return;
        };
        let mut last = self.last_call.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(prev) = last.get(key) {
            let since = prev.elapsed();
            if since < min {
                std::thread::sleep(min - since);
            }
        }
        last.insert(key, Instant::now());
    }

    fn note_rate_limit(&self, resp: &Resp) {
        if let Some(s) = resp.header("RateLimit").and_then(ratelimit_exhausted_s) {
            let until = Instant::now() + Duration::from_secs(s);
            *self.blocked_until.lock().unwrap_or_else(|p| p.into_inner()) = Some(until);
        }
    }

    /// The longest this client waits on the provider (a rate limit; AutoDL's power-off before
    /// a release).
    pub fn max_wait(&self) -> Duration {
        self.opts.max_wait
    }

    /// The minimum interval of an endpoint group (Vast 429s without `Retry-After`).
    pub fn min_interval(&self, key: &str) -> Option<Duration> {
        self.opts
            .min_intervals
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, d)| *d)
    }
}

/// Percent-encode a path segment (ids are opaque strings).
pub(crate) fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `Retry-After` as seconds (an integer; an HTTP date is not used by these providers and is
/// ignored).
pub fn retry_after_s(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("Retry-After")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s.ceil() as u64)
}

/// RunPod's `RateLimit` structured list (`"minute";r=0;t=12, "hour";r=2800;t=1812`): the
/// seconds until the longest-blocked window with no requests left resets, if any.
pub fn ratelimit_exhausted_s(value: &str) -> Option<u64> {
    let mut worst: Option<u64> = None;
    for member in value.split(',') {
        let mut r: Option<i64> = None;
        let mut t: Option<u64> = None;
        for param in member.split(';').skip(1) {
            let (k, v) = param.trim().split_once('=')?;
            match k.trim() {
                "r" => r = v.trim().parse().ok(),
                "t" => t = v.trim().parse().ok(),
                _ => {}
            }
        }
        if let (Some(r), Some(t)) = (r, t) {
            if r <= 0 {
                worst = Some(worst.map_or(t, |w| w.max(t)));
            }
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runpod_ratelimit_header_parses() {
        assert_eq!(
            ratelimit_exhausted_s(
                r#""minute";r=0;t=12, "hour";r=2800;t=1812, "day";r=49500;t=45012"#
            ),
            Some(12)
        );
        assert_eq!(
            ratelimit_exhausted_s(r#""minute";r=5;t=12, "hour";r=0;t=1812"#),
            Some(1812)
        );
        assert_eq!(ratelimit_exhausted_s(r#""minute";r=5;t=12"#), None);
        assert_eq!(ratelimit_exhausted_s("garbage"), None);
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after_s(&h), None);
        h.insert("Retry-After", "7".parse().expect("hv"));
        assert_eq!(retry_after_s(&h), Some(7));
        h.insert(
            "Retry-After",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().expect("hv"),
        );
        assert_eq!(retry_after_s(&h), None);
    }
}
