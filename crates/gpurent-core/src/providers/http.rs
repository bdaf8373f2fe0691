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
//! - **pacing is per account**: minimum intervals per endpoint group (Vast's per-endpoint
//!   thresholds, Lambda's one launch per ~12 s), RunPod's used-up `RateLimit` window and a 429's
//!   `Retry-After` (up to [`HttpOptions::max_wait`]) are kept in one [`Pacer`] per provider, API
//!   URL and key, shared by every client of this process made with that key (the app makes a
//!   client per call: a pacer per client paced nothing). A block is sat out for at most
//!   `max_wait`; then the call is sent and the provider's answer decides (a misread window must
//!   not silence an account: the header is read from the spec, not from a live account). Two
//!   processes (the app and a CLI run at once) pace apart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::header::HeaderMap;

use super::{ProviderError, ProviderKind};
use crate::infra::clock::{Clock, SystemClock};
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
pub struct Http {
    kind: ProviderKind,
    base: String,
    client: reqwest::blocking::Client,
    api_key: Secret,
    opts: HttpOptions,
    map_error: ErrorMapper,
    /// This account's pacing, shared with every other client of the same key.
    pacer: Arc<Pacer>,
    /// What every wait (pacing, a retry's backoff, a provider's block) is measured and slept on:
    /// the system's monotonic clock; a test's clock runs the waits instantly and records them.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("kind", &self.kind)
            .field("base", &self.base)
            .field("api_key", &self.api_key)
            .field("opts", &self.opts)
            .field("pacer", &self.pacer)
            .finish_non_exhaustive()
    }
}

/// The pacing of one provider account: when each endpoint group may be called next, and until
/// when the provider asked for no call at all.
#[derive(Debug, Default)]
pub struct Pacer {
    /// The earliest moment (on the clients' monotonic clock) of the next call per endpoint
    /// group (a slot is taken before the sleep, so two threads of one account never share one).
    next_slot: Mutex<HashMap<&'static str, Duration>>,
    /// Set by a used-up RunPod `RateLimit` window or a 429's `Retry-After`: no call before then.
    blocked_until: Mutex<Option<Duration>>,
}

impl Pacer {
    /// The pacer of an account: one per provider, API URL (without its trailing slash) and key
    /// in this process.
    pub fn for_account(kind: ProviderKind, base: &str, api_key: &Secret) -> Arc<Pacer> {
        static PACERS: OnceLock<Mutex<HashMap<String, Arc<Pacer>>>> = OnceLock::new();
        let id = format!(
            "{}|{}|{}",
            kind.as_str(),
            base,
            super::accounts::key_id(api_key)
        );
        let mut all = PACERS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        all.entry(id).or_default().clone()
    }

    /// How long to wait before a call of `group` (with minimum interval `min`), taking the slot;
    /// a block by the provider is sat out for at most `max_wait`.
    fn wait_for(
        &self,
        group: Option<(&'static str, Duration)>,
        max_wait: Duration,
        now: Duration,
    ) -> Duration {
        let blocked = *self.blocked_until.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = now;
        if let Some(until) = blocked.filter(|u| *u > now) {
            at = until.min(now + max_wait);
        }
        if let Some((key, min)) = group {
            let mut next = self.next_slot.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = next.get(key) {
                at = at.max(*slot);
            }
            next.insert(key, at + min);
        }
        at - now
    }

    /// No call of this account before `until` (a later block is kept).
    fn block_until(&self, until: Duration) {
        let mut b = self.blocked_until.lock().unwrap_or_else(|p| p.into_inner());
        if b.is_none_or(|cur| cur < until) {
            *b = Some(until);
        }
    }
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
        let base = base.trim_end_matches('/');
        Ok(Http {
            kind,
            base: base.to_string(),
            client,
            pacer: Pacer::for_account(kind, base, &api_key),
            api_key,
            opts,
            map_error,
            clock: Arc::new(SystemClock),
        })
    }

    /// The same client measuring and sleeping its waits on `clock` (tests: a clock that runs
    /// them instantly and records them).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Http {
        self.clock = clock;
        self
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
            self.clock.sleep(wait);
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

    /// Wait for this account's turn (see [`Pacer`]).
    fn pace(&self, key: Option<&'static str>) {
        let group = key.and_then(|k| self.min_interval(k).map(|d| (k, d)));
        let wait = self
            .pacer
            .wait_for(group, self.opts.max_wait, self.clock.monotonic());
        if !wait.is_zero() {
            self.clock.sleep(wait);
        }
    }

    /// A used-up RunPod window holds every call of this account until it resets (each for at
    /// most `max_wait`); so does a 429's `Retry-After` up to `max_wait` (a longer one ends this
    /// call `rate_limited` and holds nothing: the user decides when to ask again).
    fn note_rate_limit(&self, resp: &Resp) {
        let window = resp.header("RateLimit").and_then(ratelimit_exhausted_s);
        let retry = (resp.status == 429)
            .then(|| retry_after_s(&resp.headers))
            .flatten()
            .filter(|s| Duration::from_secs(*s) <= self.opts.max_wait);
        if let Some(s) = window.max(retry) {
            self.pacer
                .block_until(self.clock.monotonic() + Duration::from_secs(s));
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

    /// A loopback HTTP server that answers each request with the next of `answers` (head lines
    /// without the blank line; an empty JSON body) and counts the requests it saw.
    fn server(answers: Vec<&'static str>) -> (String, Arc<Mutex<usize>>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(0));
        let log = seen.clone();
        std::thread::spawn(move || {
            for (answer, conn) in answers.into_iter().zip(listener.incoming()) {
                let Ok(mut conn) = conn else { return };
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                let mut line = String::new();
                while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                *log.lock().expect("log") += 1;
                let _ = write!(
                    conn,
                    "{answer}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
                );
            }
        });
        (base, seen)
    }

    /// A monotonic clock that only moves when a client sleeps on it, and records each sleep:
    /// the pacing is asserted on the client's own decisions, never on wall-clock arrivals (a
    /// loaded machine delays a send after the pacer's sleep, not the decision).
    #[derive(Default)]
    struct SleepLog {
        now: Mutex<Duration>,
        slept: Mutex<Vec<Duration>>,
    }

    impl SleepLog {
        fn take(&self) -> Vec<Duration> {
            std::mem::take(&mut *self.slept.lock().expect("slept"))
        }
    }

    impl Clock for SleepLog {
        fn now_unix_ms(&self) -> i64 {
            0
        }
        fn monotonic(&self) -> Duration {
            *self.now.lock().expect("now")
        }
        fn sleep(&self, d: Duration) {
            *self.now.lock().expect("now") += d;
            self.slept.lock().expect("slept").push(d);
        }
    }

    fn client(base: &str, key: &str, min: &[(&'static str, u64)]) -> Http {
        let mut opts = HttpOptions::for_provider(ProviderKind::Vast);
        opts.min_intervals = min
            .iter()
            .map(|(k, ms)| (*k, Duration::from_millis(*ms)))
            .collect();
        opts.read_attempts = 1;
        opts.max_wait = Duration::from_secs(5);
        Http::new(
            ProviderKind::Vast,
            base,
            Secret::new(key.to_string()),
            opts,
            super::super::vast::map_error,
        )
        .expect("client")
    }

    #[test]
    fn one_pacer_per_account_in_the_process() {
        let a = client("http://127.0.0.1:9", "key-a", &[]);
        let a2 = client("http://127.0.0.1:9/", "key-a", &[]);
        let b = client("http://127.0.0.1:9", "key-b", &[]);
        let other_url = client("http://127.0.0.1:10", "key-a", &[]);
        assert!(Arc::ptr_eq(&a.pacer, &a2.pacer), "same key, same pacer");
        assert!(!Arc::ptr_eq(&a.pacer, &b.pacer), "another key paces apart");
        assert!(!Arc::ptr_eq(&a.pacer, &other_url.pacer));
    }

    #[test]
    fn slots_follow_the_group_interval_and_the_block() {
        let p = Pacer::default();
        let t0 = Duration::from_secs(1000);
        let s = Duration::from_secs;
        let g = Some(("g", Duration::from_millis(1000)));
        let max = s(60);
        assert_eq!(p.wait_for(g, max, t0), Duration::ZERO);
        // Two more calls at once take the next two slots.
        assert_eq!(p.wait_for(g, max, t0), s(1));
        assert_eq!(p.wait_for(g, max, t0), s(2));
        // Another group and an ungrouped call do not wait.
        assert_eq!(
            p.wait_for(Some(("h", Duration::from_millis(1000))), max, t0),
            Duration::ZERO
        );
        assert_eq!(p.wait_for(None, max, t0), Duration::ZERO);
        // A block holds every call; a shorter one does not shorten it.
        p.block_until(t0 + s(10));
        p.block_until(t0 + s(3));
        assert_eq!(p.wait_for(None, max, t0), s(10));
        assert_eq!(
            p.wait_for(g, max, t0),
            s(10),
            "the group's 3 s slot is inside the block"
        );
        assert_eq!(p.wait_for(g, max, t0), s(11), "and the next after it");
        // A block past max_wait is sat out for max_wait only: then the provider decides.
        p.block_until(t0 + s(100));
        assert_eq!(p.wait_for(None, max, t0), s(60));
        assert_eq!(p.wait_for(None, max, t0 + s(100)), Duration::ZERO);
    }

    #[test]
    fn two_clients_of_one_key_keep_the_interval_between_them() {
        let ok = "HTTP/1.1 200 OK";
        let (base, seen) = server(vec![ok, ok, ok]);
        let clock = Arc::new(SleepLog::default());
        // The app makes a client per call: the second call, on a new client, still waits.
        let first = client(&base, "pace-key-1", &[("grp", 700)]).with_clock(clock.clone());
        first.send(&Req::read("/x").pace("grp")).expect("first");
        assert_eq!(
            clock.take(),
            Vec::<Duration>::new(),
            "the first call does not wait"
        );
        drop(first);
        let second = client(&base, "pace-key-1", &[("grp", 700)]).with_clock(clock.clone());
        second.send(&Req::read("/x").pace("grp")).expect("second");
        assert_eq!(
            clock.take(),
            vec![Duration::from_millis(700)],
            "the second client waits out the first one's interval"
        );
        // Another account is not held by this one.
        let other = client(&base, "pace-key-2", &[("grp", 700)]).with_clock(clock.clone());
        other.send(&Req::read("/x").pace("grp")).expect("other");
        assert_eq!(clock.take(), Vec::<Duration>::new(), "another key waited");
        assert_eq!(*seen.lock().expect("seen"), 3, "every call was sent");
    }

    #[test]
    fn a_provider_asking_to_wait_holds_every_client_of_the_account() {
        let (base, seen) = server(vec![
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1",
            "HTTP/1.1 200 OK\r\nRateLimit: \"minute\";r=0;t=30",
            "HTTP/1.1 200 OK",
        ]);
        let clock = Arc::new(SleepLog::default());
        let a = client(&base, "pace-key-3", &[]).with_clock(clock.clone());
        let err = a.send(&Req::read("/x")).expect_err("429, one attempt");
        assert_eq!(crate::Coded::code(&err), "rate_limited");
        assert_eq!(
            clock.take(),
            Vec::<Duration>::new(),
            "one attempt: no retry was waited for"
        );
        // A new client of the same key waits the second out before it asks.
        let b = client(&base, "pace-key-3", &[]).with_clock(clock.clone());
        b.send(&Req::read("/x")).expect("after the wait");
        assert_eq!(clock.take(), vec![Duration::from_secs(1)]);
        // That answer said the minute window is used up (30 s, past this client's 5 s
        // max_wait): a new client sits out 5 s, then asks (the provider's answer decides).
        let c = client(&base, "pace-key-3", &[]).with_clock(clock.clone());
        c.send(&Req::read("/x")).expect("third");
        assert_eq!(clock.take(), vec![Duration::from_secs(5)]);
        assert_eq!(*seen.lock().expect("seen"), 3);
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
