//! A stateful fake cloud on loopback: the subset of the RunPod v2, Vast, Lambda and AutoDL
//! 容器实例 Pro APIs (the AutoDL flavour's harms are listed above its routes) that
//! gpurent's clients use, with answers shaped by the providers' specs (the tests put Prism's
//! validating proxy in front of it, so a drift from the spec fails them).
//!
//! - offers filtered and scoped like the real APIs: RunPod's one GPU type with `availability`,
//!   `dataCenters` and `cudaVersions` scoped by the query's `count` and `cloud` (secure: up to 8
//!   GPUs, CUDA 12.8/12.4; community, after `add_community_cloud`: up to 4, CUDA 12.4), a pod
//!   create's `gpu.minCudaVersion` honoured (refused as capacity when no host of its cloud meets
//!   it; `place_pods_on_oldest_host` lands pods on the oldest host it allows); Vast's three asks
//!   (1× and 2× verified, 1× unverified) and any `add_vast_ask` added, filtered by `id`,
//!   `gpu_name`, `num_gpus`, `gpu_ram`, `dph_total` and `verified`, sorted by `order`, cut at
//!   `limit`, with `inet_down_cost`/`inet_up_cost`, `dph_total` priced at the
//!   search's `allocated_storage` (default 8 GB) and a machine's at its disk; Lambda's one
//!   instance type; create → `provisioning` → `running` after
//!   [`FakeCloud::set_provisioning`] (time-based), with the SSH endpoint the test gives it (its
//!   real loopback sshd), stop, start, terminate, list (by label), key registration;
//! - faults: [`Fault`]s queued per route (capacity, 429 with and without `Retry-After`, 5xx, a
//!   hang longer than the client's timeout, zero balance) and a create delay (to kill the client
//!   between "request sent" and "answer read");
//! - counters the crash tests assert on: creates received per label.
//!
//! It checks the bearer key and answers 401 to any other; further accounts' keys
//! ([`FakeCloud::add_account`]) each see only the machines they created (another account's machine
//! is 404, its list does not show it), like the real providers.
//!
//! Faults that fail like the real thing ([`Fault`], queued per [`Route`], any route, any moment):
//! 5xx; 429 with or without `Retry-After` (also over 60 s); a hang past the client's timeout;
//! [`Fault::MadeThenFailed`], a create that made the machine and then answered 5xx; [`Fault::Lag`],
//! a list without the machines and a read answering 404 (right after a create).
//!
//! What the real clouds do that could hurt a user, and what this fake models of it:
//! - a gateway 5xx / timeout on a create after the backend made the machine (modelled: the
//!   machine bills while the client saw an error);
//! - read replicas that lag a create by seconds (modelled: `Lag`), so one 404 is not "gone";
//! - 429 with long `Retry-After` windows (RunPod `RateLimit`, Vast thresholds) on any route;
//! - another account's key answering 404 for your machine (modelled: `add_account`);
//! - RunPod stop wipes the container disk (only a network volume survives) — modelled: a pod's
//!   container disk holds the names a test put there (`put_container_file`), and a stop that
//!   took effect empties it (Vast's stop keeps its disk);
//! - a started machine at a new public IP / port (modelled: `set_ssh_on_start`);
//! - machines stuck provisioning (modelled: a long `set_provisioning`) or failed while starting
//!   (modelled: `fail_next_machines` — RunPod `ERROR`, Vast `offline`, Lambda `unhealthy`), which
//!   bill on until terminated; Vast `instances: null` for an unknown id; Vast's instance list paged
//!   (`limit` ≤ 25, `after_token`/`next_token`, `total_instances`) and a page cut short
//!   ([`Fault::CutList`]: `next_token: null` while `total_instances` counts more);
//! - Vast refusing calls that come too often per endpoint and account (its spec's 429 examples:
//!   "API requests too frequent endpoint threshold=1.0"), so a write sent once is lost — modelled
//!   when a test asks for it ([`FakeCloud::enforce_vast_thresholds`]): search, list and writes
//!   1 s apart, a read of one instance 2 s (the thresholds gpurent paces by, from the same
//!   examples; the live values and accounting are not published, so the fake refuses only a call
//!   that arrives sooner than half its threshold: it times arrivals, gpurent its sends, and a
//!   loaded test machine can delay one arrival by a tenth of a second; a call sent without
//!   waiting still arrives milliseconds after the last).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Which provider's API to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Runpod,
    Vast,
    Lambda,
    /// AutoDL 容器实例 Pro (`Authorization: <token>`, no "Bearer"; every answer an envelope).
    Autodl,
}

/// A failure to answer with, once, on the next request of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 429, with `Retry-After: N` or without.
    RateLimited { retry_after_s: Option<u64> },
    /// 500/503.
    ServerError(u16),
    /// Answer nothing for this long (longer than the client's timeout).
    Hang(Duration),
    /// The create finds no capacity.
    NoCapacity,
    /// The account has no money.
    ZeroBalance,
    /// A 200 whose body is not the documented shape (a listing that cannot be parsed).
    Garbage,
    /// Lag: a list that does not show the instances yet, a read that answers "not found" (what
    /// a provider's read replica does right after a create).
    Lag,
    /// The create makes the machine, then the answer is lost: a 5xx goes back (the real
    /// providers' gateways do this when the backend is slow). On [`Route::Action`]: the stop,
    /// start or terminate is done, then the answer is lost the same way.
    MadeThenFailed(u16),
    /// Vast's paged instance list: this page says `next_token: null` although its
    /// `total_instances` counts more (a cut listing; the client must not take it as complete).
    CutList,
    /// AutoDL: the create makes the machine, then answers HTTP 200 with a failure word that is
    /// not a refusal (`InternalError` / 服务繁忙, the word its 5xx answers carry). AutoDL
    /// documents no failure codes, so nothing says a failure word means "nothing was made";
    /// this is the case that costs money if a client reads it as a refusal (money review F9).
    MadeThenFailureWord,
}

/// Routes faults can be queued on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    Offers,
    Create,
    List,
    Get,
    Action,
    Keys,
}

/// Where the "machines" can be logged in to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub host: String,
    pub port: u16,
    pub user: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeState {
    Provisioning,
    Running,
    Stopped,
    Terminated,
    /// Failed while starting (RunPod `ERROR`, Vast `offline`, Lambda `unhealthy`): it does not
    /// come up by waiting, and the real providers bill it until it is terminated.
    Error,
}

/// One machine of the fake cloud.
#[derive(Debug, Clone)]
pub struct FakeInstance {
    pub id: String,
    pub label: String,
    pub state: FakeState,
    pub created: Instant,
    pub keys: Vec<String>,
    /// GPUs, as the create asked (RunPod `gpu.count`, the Vast ask's `num_gpus`; 1 elsewhere).
    pub gpu_count: u64,
    /// The disk the create asked for, in GB (RunPod `disk`, Vast `disk`; 50 when not said).
    pub disk_gb: u64,
    /// The API key (account) that created it: only that account sees it (another key gets
    /// "not found", and its list does not show it), like the real providers.
    pub owner: String,
    /// Ends its provisioning in [`FakeState::Error`] instead of running.
    pub fails: bool,
    /// RunPod: the CUDA version of the host the pod landed on (its `cudaVersion`; "12.8" unless
    /// [`FakeCloud::place_pods_on_oldest_host`]).
    pub host_cuda: String,
}

std::thread_local! {
    /// The API key of the request this thread answers (each request has its own thread).
    static CALLER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn caller() -> String {
    CALLER.with(|c| c.borrow().clone())
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    instances: Vec<FakeInstance>,
    creates_by_label: HashMap<String, u32>,
    creates_total: u32,
    faults: HashMap<Route, VecDeque<Fault>>,
    account_keys: Vec<(String, String)>,
    requests: Vec<String>,
}

#[derive(Debug)]
struct Inner {
    flavor: Flavor,
    api_key: String,
    /// Further accounts' keys (`add_account`): each sees only its own machines.
    other_accounts: Mutex<Vec<String>>,
    ssh: Mutex<Option<SshTarget>>,
    /// The endpoint the next `start` of a stopped machine moves running machines to (real
    /// providers hand a started machine a new public IP or port).
    ssh_on_start: Mutex<Option<SshTarget>>,
    /// RunPod: whether the GPU type is also on the community cloud ([`FakeCloud::add_community_cloud`]).
    community: Mutex<bool>,
    provisioning: Mutex<Duration>,
    create_delay: Mutex<Duration>,
    /// What instances report as their price per hour instead of the offer's (RunPod `cost`,
    /// Vast `dph_total`): a provider whose own number differs from gpurent's.
    reported_price: Mutex<Option<f64>>,
    /// AutoDL: how many snapshot reads still answer `data: null` (details not ready yet).
    snapshot_null: Mutex<u32>,
    /// Vast `users/current` `balance`.
    balance: Mutex<f64>,
    /// RunPod: pods land on the oldest CUDA host of their cloud that their `gpu.minCudaVersion`
    /// allows ([`FakeCloud::place_pods_on_oldest_host`]).
    oldest_host: Mutex<bool>,
    /// Vast: asks added to the market after the three built-in ones ([`FakeCloud::add_vast_ask`]).
    vast_asks: Mutex<Vec<VastAsk>>,
    /// The next machines created end their provisioning in ERROR ([`FakeCloud::fail_next_machines`]).
    fail_next: Mutex<u32>,
    /// Per-instance keys (`key`, instance id): accepted only on that instance's own routes
    /// (`…/instances/{id}`, `/v2/pods/{id}…`), like Vast's `CONTAINER_API_KEY`.
    instance_keys: Mutex<Vec<(String, String)>>,
    /// What is on each machine's container disk (instance id → file names): RunPod's stop wipes it.
    container_disks: Mutex<HashMap<String, Vec<String>>>,
    /// `METHOD path` of every request made with a per-instance key.
    instance_key_requests: Mutex<Vec<String>>,
    /// AutoDL: the root password snapshots hand out, and how many snapshots were read.
    root_password: Mutex<String>,
    snapshots_read: Mutex<u32>,
    /// Vast: when each account last called each endpoint group, when thresholds are enforced
    /// ([`FakeCloud::enforce_vast_thresholds`]; `None`: off).
    vast_calls: Mutex<Option<HashMap<(String, &'static str), Instant>>>,
    state: Mutex<State>,
}

/// A running fake cloud; stops on drop.
pub struct FakeCloud {
    inner: Arc<Inner>,
    server: Arc<tiny_http::Server>,
    port: u16,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The GPU every fake offer has.
pub const FAKE_GPU: &str = "NVIDIA GeForce RTX 4090";

impl FakeCloud {
    /// Start on 127.0.0.1 and a free port; requests must carry `Authorization: Bearer api_key`.
    pub fn start(flavor: Flavor, api_key: &str) -> io::Result<FakeCloud> {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").map_err(io::Error::other)?);
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| io::Error::other("no port"))?;
        let inner = Arc::new(Inner {
            flavor,
            api_key: api_key.to_string(),
            other_accounts: Mutex::new(vec![]),
            ssh: Mutex::new(None),
            ssh_on_start: Mutex::new(None),
            community: Mutex::new(false),
            provisioning: Mutex::new(Duration::from_millis(300)),
            create_delay: Mutex::new(Duration::ZERO),
            reported_price: Mutex::new(None),
            snapshot_null: Mutex::new(0),
            balance: Mutex::new(10.0),
            oldest_host: Mutex::new(false),
            vast_asks: Mutex::new(vec![]),
            fail_next: Mutex::new(0),
            instance_keys: Mutex::new(vec![]),
            container_disks: Mutex::new(HashMap::new()),
            instance_key_requests: Mutex::new(vec![]),
            root_password: Mutex::new("fake-root-password".into()),
            snapshots_read: Mutex::new(0),
            vast_calls: Mutex::new(None),
            state: Mutex::new(State {
                next_id: 1000,
                ..Default::default()
            }),
        });
        let (srv, inn) = (server.clone(), inner.clone());
        let thread = std::thread::spawn(move || {
            for req in srv.incoming_requests() {
                let inn = inn.clone();
                std::thread::spawn(move || handle(&inn, req));
            }
        });
        Ok(FakeCloud {
            inner,
            server,
            port,
            thread: Some(thread),
        })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The SSH endpoint running machines report.
    pub fn set_ssh(&self, target: SshTarget) {
        *lock(&self.inner.ssh) = Some(target);
    }

    /// The next `start` of a stopped machine gives it this SSH endpoint (a new port or address,
    /// as RunPod and Vast do on start); until then machines keep reporting the current one.
    pub fn set_ssh_on_start(&self, target: SshTarget) {
        *lock(&self.inner.ssh_on_start) = Some(target);
    }

    /// RunPod: list the GPU type on the community cloud too (machines of up to 4 GPUs on CUDA
    /// 12.4 hosts, $0.31/h per GPU). Off by default: the secure cloud only.
    pub fn add_community_cloud(&self) {
        *lock(&self.inner.community) = true;
    }

    /// RunPod: a new pod lands on the oldest CUDA host of its cloud that its `gpu.minCudaVersion`
    /// allows (secure: 12.4 and 12.8 hosts; community: 12.4), as the real scheduler may: without
    /// a floor, an image built for CUDA 12.8 lands on a 12.4 host. Off by default (pods report
    /// 12.8). A floor no host of the cloud meets is refused either way with a 400 capacity error
    /// (the spec: "a version no machine reports yields a capacity error").
    pub fn place_pods_on_oldest_host(&self) {
        *lock(&self.inner.oldest_host) = true;
    }

    /// Vast: add an ask to the market, after the built-in ones (the search answers in market
    /// order unless asked to sort, like a search without `order`). A machine created from it
    /// bills like the built-in asks ($0.35 per GPU).
    pub fn add_vast_ask(&self, ask: VastAsk) {
        lock(&self.inner.vast_asks).push(ask);
    }

    /// How long a new machine stays provisioning.
    /// Vast: refuse calls that come too often per endpoint group and account with Vast's 429
    /// (see the module's list of harms).
    pub fn enforce_vast_thresholds(&self) {
        *lock(&self.inner.vast_calls) = Some(HashMap::new());
    }

    pub fn set_provisioning(&self, d: Duration) {
        *lock(&self.inner.provisioning) = d;
    }

    /// How long a create waits (after counting it) before answering.
    pub fn set_create_delay(&self, d: Duration) {
        *lock(&self.inner.create_delay) = d;
    }

    /// Make running instances report this price per hour (RunPod `cost`, Vast `dph_total`).
    pub fn set_reported_price(&self, usd_per_hour: Option<f64>) {
        *lock(&self.inner.reported_price) = usd_per_hour;
    }

    /// The next `n` machines created fail while starting: they end their provisioning in ERROR
    /// (and stay there, billing, until terminated — what the real providers do).
    pub fn fail_next_machines(&self, n: u32) {
        *lock(&self.inner.fail_next) = n;
    }

    /// The account balance Vast's `users/current` reports (default 10.0).
    pub fn set_balance(&self, usd: f64) {
        *lock(&self.inner.balance) = usd;
    }

    /// Put a file (by name) on machine `id`'s container disk: what a job wrote there.
    pub fn put_container_file(&self, id: &str, name: &str) {
        lock(&self.inner.container_disks)
            .entry(id.to_string())
            .or_default()
            .push(name.to_string());
    }

    /// The files on machine `id`'s container disk now (empty after a RunPod stop).
    pub fn container_files(&self, id: &str) -> Vec<String> {
        lock(&self.inner.container_disks)
            .get(id)
            .cloned()
            .unwrap_or_default()
    }

    /// Accept `key` for requests on instance `id`'s own routes only (a scoped, per-instance key).
    pub fn add_instance_key(&self, id: &str, key: &str) {
        lock(&self.inner.instance_keys).push((key.to_string(), id.to_string()));
    }

    /// Accept `key` as another account of this cloud: it sees (lists, reads, acts on) only the
    /// machines it created; another account's machine is "not found" to it.
    pub fn add_account(&self, key: &str) {
        lock(&self.inner.other_accounts).push(key.to_string());
    }

    /// `METHOD path` of every request that a per-instance key authorised.
    pub fn instance_key_requests(&self) -> Vec<String> {
        lock(&self.inner.instance_key_requests).clone()
    }

    /// Queue a fault for the next request of a route.
    pub fn push_fault(&self, route: Route, fault: Fault) {
        lock(&self.inner.state)
            .faults
            .entry(route)
            .or_default()
            .push_back(fault);
    }

    /// Drop every queued fault.
    pub fn clear_faults(&self) {
        lock(&self.inner.state).faults.clear();
    }

    /// Every create request received (whether or not its answer reached the client).
    pub fn creates_total(&self) -> u32 {
        lock(&self.inner.state).creates_total
    }

    /// Create requests per label.
    pub fn creates_by_label(&self) -> HashMap<String, u32> {
        lock(&self.inner.state).creates_by_label.clone()
    }

    pub fn instances(&self) -> Vec<FakeInstance> {
        let mut st = lock(&self.inner.state);
        advance(&self.inner, &mut st);
        st.instances.clone()
    }

    /// `METHOD path` of every request so far.
    pub fn requests(&self) -> Vec<String> {
        lock(&self.inner.state).requests.clone()
    }

    /// A machine the user started in the provider's console (not through gpurent): running
    /// at once, on the main account, named `label`; its id.
    pub fn add_console_machine(&self, label: &str) -> String {
        let mut st = lock(&self.inner.state);
        st.next_id += 1;
        let id = instance_id(self.inner.flavor, st.next_id);
        st.instances.push(FakeInstance {
            id: id.clone(),
            label: label.to_string(),
            state: FakeState::Running,
            created: Instant::now(),
            keys: vec![],
            gpu_count: 1,
            disk_gb: 50,
            owner: self.inner.api_key.clone(),
            fails: false,
            host_cuda: "12.8".into(),
        });
        id
    }

    /// The offer id of the one offer, in the client's form.
    pub fn offer_id(&self) -> String {
        match self.inner.flavor {
            Flavor::Runpod => format!("secure:1:{FAKE_GPU}"),
            Flavor::Vast => "4242".into(),
            Flavor::Lambda => "gpu_1x_rtx4090@us-east-1".into(),
            Flavor::Autodl => format!("{AUTODL_SPEC}:1"),
        }
    }

    /// AutoDL: the root password every machine's snapshot hands out (default
    /// `fake-root-password`; a test sets the loopback sshd's password here).
    pub fn set_root_password(&self, password: &str) {
        *lock(&self.inner.root_password) = password.to_string();
    }

    /// AutoDL: the next `n` snapshot reads answer `"data": null`. The contract allows it
    /// (`oneOf: null | Snapshot`), and a public AutoDL client notes that AutoDL sometimes cannot
    /// return an instance's details right after it was created (money review F12).
    pub fn autodl_snapshot_null(&self, n: u32) {
        *lock(&self.inner.snapshot_null) = n;
    }

    /// AutoDL: how many snapshots were read (each carries the root password).
    pub fn snapshots_read(&self) -> u32 {
        *lock(&self.inner.snapshots_read)
    }
}

/// A new machine's id in the provider's form.
fn instance_id(flavor: Flavor, n: u64) -> String {
    match flavor {
        Flavor::Runpod => format!("pod{n}"),
        Flavor::Vast => n.to_string(),
        Flavor::Lambda => format!("{n:032x}"),
        Flavor::Autodl => format!("pro-{n:012x}"),
    }
}

impl std::fmt::Debug for FakeCloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeCloud")
            .field("port", &self.port)
            .finish()
    }
}

impl Drop for FakeCloud {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn advance(inner: &Inner, st: &mut State) {
    let prov = *lock(&inner.provisioning);
    for i in st.instances.iter_mut() {
        if i.state == FakeState::Provisioning && i.created.elapsed() >= prov {
            i.state = if i.fails {
                FakeState::Error
            } else {
                FakeState::Running
            };
        }
    }
}

struct Answer {
    status: u16,
    body: Option<Value>,
    headers: Vec<(String, String)>,
    content_type: &'static str,
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        body: Some(body),
        headers: vec![],
        content_type: "application/json",
    }
}

fn status(status: u16, body: Value) -> Answer {
    Answer {
        status,
        body: Some(body),
        headers: vec![],
        content_type: "application/json",
    }
}

fn handle(inner: &Inner, mut req: tiny_http::Request) {
    let method = req.method().to_string();
    let url = req.url().to_string();
    let path = url.split('?').next().unwrap_or("").to_string();
    let query = url.split_once('?').map_or("", |(_, q)| q).to_string();
    let mut body = String::new();
    let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let auth = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .map(|h| h.value.as_str().to_string())
        .unwrap_or_default();
    lock(&inner.state).requests.push(format!("{method} {path}"));
    let scoped = lock(&inner.instance_keys).iter().any(|(k, id)| {
        auth == format!("Bearer {k}") && {
            let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
            segs.windows(2)
                .any(|w| matches!(w[0], "instances" | "pods") && w[1] == id)
        }
    });
    if scoped {
        lock(&inner.instance_key_requests).push(format!("{method} {path}"));
    }
    // AutoDL takes the token itself (a "Bearer " prefix is a wrong token there).
    let account = if inner.flavor == Flavor::Autodl {
        auth.clone()
    } else {
        auth.strip_prefix("Bearer ").unwrap_or("").to_string()
    };
    let known = account == inner.api_key || lock(&inner.other_accounts).contains(&account);
    CALLER.with(|c| {
        *c.borrow_mut() = if scoped {
            inner.api_key.clone()
        } else {
            account.clone()
        }
    });
    let answer = if !known && !scoped {
        unauthorized(inner.flavor)
    } else if let Some(a) = vast_too_soon(inner, &account, &method, &path) {
        Some(a)
    } else {
        match inner.flavor {
            Flavor::Runpod => runpod(inner, &method, &path, &query, &body),
            Flavor::Vast => vast(inner, &method, &path, &query, &body),
            Flavor::Lambda => lambda(inner, &method, &path, &body),
            Flavor::Autodl => autodl(inner, &method, &path, &query, &body),
        }
    };
    let Some(answer) = answer else {
        // A hang: never answer this request (the client times out).
        return;
    };
    let data = answer.body.map(|b| b.to_string()).unwrap_or_default();
    let mut resp = tiny_http::Response::from_string(data).with_status_code(answer.status);
    if answer.status != 204 {
        if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", answer.content_type) {
            resp = resp.with_header(h);
        }
    }
    for (k, v) in answer.headers {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp = resp.with_header(h);
        }
    }
    let _ = req.respond(resp);
}

/// Vast's endpoint group of a request and its threshold in seconds (`None`: not limited here).
fn vast_group(method: &str, path: &str) -> Option<(&'static str, f64)> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match (method, segs.as_slice()) {
        ("POST", ["api", "v0", "bundles"]) => Some(("search", 1.0)),
        ("GET", ["api", "v0", "instances"]) => Some(("list", 1.0)),
        ("GET", ["api", "v0", "instances", _]) => Some(("get", 2.0)),
        ("GET", _) => None,
        _ => Some(("write", 1.0)),
    }
}

/// A Vast 429 for a call that came too soon after the last of its group by the same account.
fn vast_too_soon(inner: &Inner, account: &str, method: &str, path: &str) -> Option<Answer> {
    if inner.flavor != Flavor::Vast {
        return None;
    }
    let mut calls = lock(&inner.vast_calls);
    let calls = calls.as_mut()?;
    let (group, threshold) = vast_group(method, path)?;
    let now = Instant::now();
    let key = (account.to_string(), group);
    if let Some(last) = calls.get(&key) {
        // Half the threshold: the fake times arrivals, the client its sends, so a loaded
        // machine that delays one request's arrival must not read as a client that did not
        // wait (a call sent without waiting arrives milliseconds after the last one).
        if now.duration_since(*last).as_secs_f64() < threshold * 0.5 {
            // A refused call does not move the window (the caller waits the threshold).
            return Some(status(
                429,
                json!({"detail": format!("API requests too frequent endpoint threshold={threshold:.1}")}),
            ));
        }
    }
    calls.insert(key, now);
    None
}

fn unauthorized(flavor: Flavor) -> Option<Answer> {
    Some(match flavor {
        Flavor::Runpod => problem(401, "Unauthorized", "invalid bearer token"),
        Flavor::Vast => status(
            401,
            json!({"success": false, "error": "auth_error", "msg": "Invalid user key"}),
        ),
        Flavor::Lambda => status(
            401,
            json!({"error": {"code": "global/invalid-api-key", "message": "API key was invalid, expired, or deleted.", "suggestion": "Check your API key or create a new one, then try again."}}),
        ),
        // AutoDL documents no failure statuses: a wrong token is a 200 with a failure word here.
        Flavor::Autodl => ok(autodl_failure("Unauthorized", "token无效")),
    })
}

fn problem(code: u16, title: &str, detail: &str) -> Answer {
    Answer {
        status: code,
        body: Some(json!({"title": title, "status": code, "detail": detail})),
        headers: vec![],
        content_type: "application/problem+json",
    }
}

/// Takes the next fault of a route when it is `want` (the faults a route answers itself: lag,
/// a create whose answer is lost).
fn take_if(inner: &Inner, route: Route, want: impl Fn(&Fault) -> bool) -> Option<Fault> {
    let mut st = lock(&inner.state);
    let q = st.faults.get_mut(&route)?;
    if q.front().is_some_and(&want) {
        q.pop_front()
    } else {
        None
    }
}

/// A create route: a queued `MadeThenFailed` makes the machine and answers a 5xx; other faults
/// answer as [`fault`]; else `made(id)` answers.
fn create_route(inner: &Inner, label: &str, made: impl FnOnce(&str) -> Answer) -> Option<Answer> {
    if let Some(Fault::MadeThenFailed(code)) = take_if(inner, Route::Create, |f| {
        matches!(f, Fault::MadeThenFailed(_))
    }) {
        create_instance(inner, label)?;
        return server_error(inner.flavor, code);
    }
    if take_if(inner, Route::Create, |f| *f == Fault::MadeThenFailureWord).is_some() {
        create_instance(inner, label)?;
        return Some(ok(autodl_failure("InternalError", "服务繁忙")));
    }
    if let Some(a) = fault(inner, Route::Create) {
        return a;
    }
    let id = create_instance(inner, label)?;
    Some(made(&id))
}

fn server_error(flavor: Flavor, code: u16) -> Option<Answer> {
    Some(match flavor {
        Flavor::Runpod => problem(code, "Internal Server Error", "upstream failure"),
        Flavor::Vast => status(
            code,
            json!({"success": false, "error": "server_error", "msg": "internal error"}),
        ),
        Flavor::Lambda => status(
            code,
            json!({"error": {"code": "global/internal-error", "message": "internal error"}}),
        ),
        Flavor::Autodl => status(code, autodl_failure("InternalError", "服务繁忙")),
    })
}

/// The next queued fault of a route, turned into an answer (or `Some(None)`: hang).
fn fault(inner: &Inner, route: Route) -> Option<Option<Answer>> {
    let f = lock(&inner.state).faults.get_mut(&route)?.pop_front()?;
    Some(match f {
        Fault::Hang(d) => {
            std::thread::sleep(d);
            None
        }
        Fault::RateLimited { retry_after_s } => {
            let mut a = match inner.flavor {
                Flavor::Runpod => problem(429, "Too Many Requests", "rate limit exceeded for the minute window"),
                Flavor::Vast => status(429, json!({"detail": "API requests too frequent endpoint threshold=1.0"})),
                Flavor::Lambda => status(429, json!({"error": {"code": "global/too-many-requests", "message": "Too many requests."}})),
                Flavor::Autodl => status(429, autodl_failure("TooManyRequests", "请求过于频繁")),
            };
            if let Some(s) = retry_after_s {
                a.headers.push(("Retry-After".into(), s.to_string()));
            }
            Some(a)
        }
        Fault::ServerError(code) | Fault::MadeThenFailed(code) => server_error(inner.flavor, code),
        Fault::MadeThenFailureWord => server_error(inner.flavor, 500),
        // Lag on a route that does not answer it itself: the route's "not there" is its caller's.
        Fault::Lag => server_error(inner.flavor, 503),
        // A cut listing where no paged list answers it (only Vast's list does).
        Fault::CutList => server_error(inner.flavor, 503),
        Fault::NoCapacity => Some(match inner.flavor {
            Flavor::Runpod => problem(400, "Bad Request", "There are no longer any instances available with the requested specifications (capacity)."),
            Flavor::Vast => status(410, json!({"success": false, "error": "no_such_ask", "msg": "error 410/3907: no_such_ask Instance type 4242 is no longer available.", "ask_id": 4242})),
            Flavor::Lambda => status(400, json!({"error": {"code": "instance-operations/launch/insufficient-capacity", "message": "Not enough capacity to fulfill launch request."}})),
            // AutoDL answers a failure with HTTP 200 and a failure word (its docs list none:
            // these words are the fake's).
            Flavor::Autodl => ok(autodl_failure("BadRequest", "GPU库存不足")),
        }),
        Fault::Garbage => Some(ok(json!({"unexpected": "shape"}))),
        Fault::ZeroBalance => Some(match inner.flavor {
            Flavor::Runpod => problem(402, "Payment Required", "insufficient balance to deploy this pod"),
            Flavor::Vast => status(400, json!({"success": false, "error": "invalid_args", "msg": "error 400/3467: insufficient credit balance"})),
            Flavor::Lambda => status(403, json!({"error": {"code": "global/account-inactive", "message": "Your account is inactive.", "suggestion": "Add a payment method."}})),
            Flavor::Autodl => ok(autodl_failure("BadRequest", "余额不足")),
        }),
    })
}

fn create_instance(inner: &Inner, label: &str) -> Option<String> {
    let id = {
        let mut st = lock(&inner.state);
        st.creates_total += 1;
        *st.creates_by_label.entry(label.to_string()).or_default() += 1;
        st.next_id += 1;
        let id = instance_id(inner.flavor, st.next_id);
        st.instances.push(FakeInstance {
            id: id.clone(),
            label: label.to_string(),
            state: FakeState::Provisioning,
            created: Instant::now(),
            keys: vec![],
            gpu_count: 1,
            disk_gb: 50,
            owner: caller(),
            host_cuda: "12.8".into(),
            fails: {
                let mut n = lock(&inner.fail_next);
                let fails = *n > 0;
                *n = n.saturating_sub(1);
                fails
            },
        });
        id
    };
    let delay = *lock(&inner.create_delay);
    if !delay.is_zero() {
        std::thread::sleep(delay);
    }
    Some(id)
}

/// One `GET` of an instance, the same on every flavor: the fault hook, the clock, then `found` on
/// a copy of the instance, or `missing` when there is none.
fn get_one(
    inner: &Inner,
    id: &str,
    found: impl FnOnce(&Inner, &FakeInstance) -> Value,
    missing: impl FnOnce() -> Answer,
) -> Option<Answer> {
    if take_if(inner, Route::Get, |f| *f == Fault::Lag).is_some() {
        return Some(missing());
    }
    if let Some(a) = fault(inner, Route::Get) {
        return a;
    }
    let mut st = lock(&inner.state);
    advance(inner, &mut st);
    match find(&mut st, id) {
        Some(i) => {
            let i = i.clone();
            Some(ok(found(inner, &i)))
        }
        None => Some(missing()),
    }
}

/// One stop / start / terminate of an instance, the same on every flavor: the fault hook, the
/// clock, then `act` on the instance, or `missing` when there is none (or it is terminated).
fn act_on(
    inner: &Inner,
    id: &str,
    missing: impl FnOnce() -> Answer,
    act: impl FnOnce(&mut FakeInstance) -> Answer,
) -> Option<Answer> {
    // The action is done, then its answer is lost (a gateway 5xx after the backend acted).
    let lost = match take_if(inner, Route::Action, |f| {
        matches!(f, Fault::MadeThenFailed(_))
    }) {
        Some(Fault::MadeThenFailed(code)) => Some(code),
        _ => None,
    };
    if lost.is_none() {
        if let Some(a) = fault(inner, Route::Action) {
            return a;
        }
    }
    let mut st = lock(&inner.state);
    advance(inner, &mut st);
    let answer = match find(&mut st, id) {
        Some(i) => act(i),
        None => missing(),
    };
    drop(st);
    match lost {
        Some(code) => server_error(inner.flavor, code),
        None => Some(answer),
    }
}

/// Stop a running instance, or start a stopped one (it provisions again, so readiness is waited
/// for anew); `false` when its state does not allow the change.
fn stop_or_start(i: &mut FakeInstance, to: FakeState) -> bool {
    match (to, i.state) {
        (FakeState::Stopped, FakeState::Running) => i.state = FakeState::Stopped,
        (FakeState::Running, FakeState::Stopped) => {
            i.state = FakeState::Provisioning;
            i.created = Instant::now();
        }
        _ => return false,
    }
    true
}

/// After a start that took effect (`changed`): the endpoint set by
/// [`FakeCloud::set_ssh_on_start`] becomes the one running machines report.
fn started(inner: &Inner, changed: bool) -> bool {
    if changed {
        if let Some(t) = lock(&inner.ssh_on_start).take() {
            *lock(&inner.ssh) = Some(t);
        }
    }
    changed
}

/// `204 No Content`.
fn no_content() -> Answer {
    Answer {
        status: 204,
        body: None,
        headers: vec![],
        content_type: "application/json",
    }
}

/// One list of the live (not terminated) instances, the same on every flavor: the fault hook,
/// the clock, each instance as `render` draws it, the list as `wrap` wraps it.
fn list_live(
    inner: &Inner,
    render: impl Fn(&Inner, &FakeInstance) -> Value,
    wrap: impl FnOnce(Vec<Value>) -> Value,
) -> Option<Answer> {
    if take_if(inner, Route::List, |f| *f == Fault::Lag).is_some() {
        return Some(ok(wrap(vec![])));
    }
    if let Some(a) = fault(inner, Route::List) {
        return a;
    }
    let mut st = lock(&inner.state);
    advance(inner, &mut st);
    let me = caller();
    let list: Vec<Value> = st
        .instances
        .iter()
        .filter(|i| i.state != FakeState::Terminated && i.owner == me)
        .map(|i| render(inner, i))
        .collect();
    Some(ok(wrap(list)))
}

/// A live instance of the calling account (another account's machine is not found).
fn find<'a>(st: &'a mut State, id: &str) -> Option<&'a mut FakeInstance> {
    let me = caller();
    st.instances
        .iter_mut()
        .find(|i| i.id == id && i.state != FakeState::Terminated && i.owner == me)
}

// ---- RunPod v2 ----

fn runpod_pod(inner: &Inner, i: &FakeInstance) -> Value {
    let running = i.state == FakeState::Running;
    let ssh = lock(&inner.ssh).clone();
    let direct = match (&ssh, running) {
        (Some(s), true) => {
            json!({"host": s.host, "port": s.port, "username": s.user, "command": format!("ssh {}@{} -p {}", s.user, s.host, s.port)})
        }
        _ => Value::Null,
    };
    json!({
        "id": i.id,
        "name": i.label,
        "image": "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404",
        "args": "",
        "disk": 50,
        "ports": ["22/tcp"],
        "env": {},
        "registry": null,
        "status": match i.state {
            FakeState::Provisioning => "PROVISIONING",
            FakeState::Running => "RUNNING",
            FakeState::Stopped => "EXITED",
            FakeState::Terminated => "TERMINATED",
            FakeState::Error => "ERROR",
        },
        "actions": match i.state {
            FakeState::Running => json!(["stop", "restart", "terminate"]),
            FakeState::Stopped => json!(["start", "terminate"]),
            _ => json!(["terminate"]),
        },
        "mounts": {},
        "gpu": {"id": FAKE_GPU, "count": i.gpu_count},
        "cloud": "SECURE",
        "dataCenterId": "US-KS-2",
        "cudaVersion": i.host_cuda,
        "ssh": {"proxy": null, "direct": direct},
        "template": null,
        "cost": if running { lock(&inner.reported_price).unwrap_or(0.44) } else { 0.0 },
        "locked": false,
        "globalNetworking": {"enabled": false},
        "runtime": if running { json!({"uptime": 1}) } else { Value::Null },
        "createdAt": "2026-12-01T00:00:00Z",
        "startedAt": if running { json!("2026-12-01T00:00:10Z") } else { Value::Null },
    })
}

/// One query parameter's value (no percent-decoding beyond `+`/`%20`: the fake's values are
/// plain words and numbers).
fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The fake's one GPU type as `GET /v2/catalog/gpus?include=AVAILABILITY` answers it: like the
/// real API, `availability`, `dataCenters` and `cudaVersions` are scoped by `count` (default 1)
/// and `cloud` (default SECURE). The secure cloud has machines of up to 8 GPUs on CUDA 12.8 and
/// 12.4 hosts; the community cloud (when [`FakeCloud::add_community_cloud`] put the type there)
/// has machines of up to 4 on CUDA 12.4 hosts only. A count no machine of that cloud has, or a
/// cloud the type is not on, is `NONE`, with no data centers and no CUDA versions.
fn runpod_catalog_gpu(query: &str, on_community: bool) -> Value {
    let count: u64 = query_param(query, "count")
        .and_then(|c| c.parse().ok())
        .unwrap_or(1);
    let community =
        query_param(query, "cloud").is_some_and(|c| c.eq_ignore_ascii_case("COMMUNITY"));
    let (max, cudas, level) = if community {
        (4, vec!["12.4"], "LOW")
    } else {
        (8, vec!["12.8", "12.4"], "HIGH")
    };
    let mut g = json!({
        "id": FAKE_GPU, "name": "RTX 4090", "pool": "ADA_24", "manufacturer": "NVIDIA",
        "memory": 24, "secure": true, "community": on_community,
        "price": {"secure": 0.44, "community": 0.31},
        "maxCount": {"secure": 8, "community": 4},
    });
    if count > max || (community && !on_community) {
        g["availability"] = json!("NONE");
    } else {
        g["availability"] = json!(level);
        g["dataCenters"] = json!([{"id": "US-KS-2", "name": "US Kansas 2", "availability": level}]);
        g["cudaVersions"] = json!(cudas
            .iter()
            .map(|v| json!({"version": v, "available": true}))
            .collect::<Vec<_>>());
    }
    g
}

/// `major.minor` → a number pair compared numerically (12.11 is above 12.2, as the spec says).
fn cuda_key(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|p| p.trim().parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Where a pod create lands: the CUDA of a host of its cloud that meets its
/// `gpu.minCudaVersion` — the oldest such with [`FakeCloud::place_pods_on_oldest_host`], else
/// "12.8" as before — or the 400 capacity answer when no host of that cloud meets the floor.
fn runpod_place(inner: &Inner, body: &Value) -> Result<String, Answer> {
    let community = body["cloud"]
        .as_str()
        .is_some_and(|c| c.eq_ignore_ascii_case("COMMUNITY"));
    let hosts: Vec<&str> = if community {
        vec!["12.4"]
    } else {
        vec!["12.4", "12.8"]
    };
    let floor = body["gpu"]["minCudaVersion"].as_str();
    let allowed: Vec<&str> = hosts
        .into_iter()
        .filter(|h| floor.is_none_or(|f| cuda_key(h) >= cuda_key(f)))
        .collect();
    let Some(oldest) = allowed.first() else {
        return Err(problem(
            400,
            "Bad Request",
            &format!(
                "This pod could not be placed: no machine with CUDA >= {} has capacity for this GPU type (capacity).",
                floor.unwrap_or("")
            ),
        ));
    };
    Ok(if *lock(&inner.oldest_host) {
        oldest.to_string()
    } else {
        "12.8".to_string()
    })
}

fn runpod(inner: &Inner, method: &str, path: &str, query: &str, body: &Value) -> Option<Answer> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["v2", "catalog", "gpus"]) => {
            if let Some(a) = fault(inner, Route::Offers) {
                return a;
            }
            let on_community = *lock(&inner.community);
            Some(ok(
                json!({"gpus": [runpod_catalog_gpu(query, on_community)]}),
            ))
        }
        ("GET", ["v2", "account", "ssh-keys"]) => {
            if let Some(a) = fault(inner, Route::Keys) {
                return a;
            }
            let st = lock(&inner.state);
            Some(ok(
                json!({"keys": st.account_keys.iter().map(|(_, k)| k.clone()).collect::<Vec<_>>()}),
            ))
        }
        ("PUT", ["v2", "account", "ssh-keys"]) => {
            let keys: Vec<String> = body["keys"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let mut st = lock(&inner.state);
            st.account_keys = keys.iter().map(|k| (String::new(), k.clone())).collect();
            Some(ok(json!({"keys": keys})))
        }
        ("POST", ["v2", "pods"]) => {
            let label = body["name"].as_str().unwrap_or("").to_string();
            let host_cuda = match runpod_place(inner, body) {
                Ok(h) => h,
                Err(a) => return Some(a),
            };
            create_route(inner, &label, |id| {
                let mut st = lock(&inner.state);
                let Some(i) = find(&mut st, id) else {
                    return problem(500, "Internal Server Error", "pod vanished");
                };
                if let Some(k) = body["env"]["PUBLIC_KEY"].as_str() {
                    i.keys.push(k.to_string());
                }
                i.gpu_count = body["gpu"]["count"].as_u64().unwrap_or(1);
                i.disk_gb = body["disk"].as_u64().unwrap_or(50);
                i.host_cuda = host_cuda;
                let i = i.clone();
                drop(st);
                let mut a = ok(runpod_pod(inner, &i));
                a.status = 201;
                a
            })
        }
        ("GET", ["v2", "pods"]) => list_live(inner, runpod_pod, |pods| json!({ "pods": pods })),
        ("GET", ["v2", "pods", id]) => get_one(inner, id, runpod_pod, || {
            problem(404, "Not Found", "pod not found")
        }),
        ("POST", ["v2", "pods", id, "action"]) => {
            let answer = act_on(
                inner,
                id,
                || problem(404, "Not Found", "pod not found"),
                |i| {
                    let changed = match body["action"].as_str() {
                        Some("stop") => stop_or_start(i, FakeState::Stopped),
                        Some("start") => started(inner, stop_or_start(i, FakeState::Running)),
                        Some("terminate") => {
                            i.state = FakeState::Terminated;
                            return no_content();
                        }
                        _ => false,
                    };
                    if changed {
                        ok(runpod_pod(inner, i))
                    } else {
                        problem(409, "Conflict", "action not valid in this state")
                    }
                },
            );
            // A stop that took effect wipes the container disk ("ephemeral, wiped on restart").
            let stopped = body["action"].as_str() == Some("stop")
                && lock(&inner.state)
                    .instances
                    .iter()
                    .any(|i| i.id == *id && i.state == FakeState::Stopped);
            if stopped {
                lock(&inner.container_disks).remove(*id);
            }
            answer
        }
        ("DELETE", ["v2", "pods", id]) => act_on(
            inner,
            id,
            || problem(404, "Not Found", "pod not found"),
            |i| {
                i.state = FakeState::Terminated;
                no_content()
            },
        ),
        _ => Some(problem(404, "Not Found", "no such route in the fake cloud")),
    }
}

// ---- Vast ----

fn vast_fields(inner: &Inner, i: &FakeInstance) -> Value {
    let ssh = lock(&inner.ssh).clone();
    let running = i.state == FakeState::Running;
    let (actual, intended) = match i.state {
        FakeState::Provisioning => (Value::Null, "running"),
        FakeState::Running => (json!("running"), "running"),
        FakeState::Stopped => (json!("exited"), "stopped"),
        FakeState::Terminated => (json!("exited"), "stopped"),
        FakeState::Error => (json!("offline"), "running"),
    };
    let (host, port) = match (&ssh, running) {
        (Some(s), true) => (s.host.clone(), s.port),
        _ => (String::new(), 0),
    };
    json!({
        "id": i.id.parse::<i64>().unwrap_or(0),
        "actual_status": actual,
        "intended_status": intended,
        "cur_state": if running { "running" } else { "stopped" },
        "next_state": intended,
        "label": i.label,
        "gpu_name": "RTX 4090",
        "num_gpus": i.gpu_count,
        "dph_total": lock(&inner.reported_price)
            .unwrap_or_else(|| vast_dph_total(i.gpu_count, i.disk_gb as f64)),
        "public_ipaddr": host,
        "ssh_host": host,
        "ssh_port": port,
        "cuda_max_good": 12.8,
    })
}

/// The fake's Vast asks: `(id, num_gpus, verification)` — one RTX 4090 (verified), two (verified),
/// one (unverified).
const VAST_ASKS: [(i64, u64, &str); 3] = [
    (4242, 1, "verified"),
    (4243, 2, "verified"),
    (4244, 1, "unverified"),
];

/// Vast's `dph_total` of an ask or instance: compute per GPU plus the disk's storage at
/// $0.15/GB-month over 720 h. The one-GPU ask costs exactly $0.35/h with the 50 GB disk gpurent
/// creates; the search prices the `allocated_storage` it is asked for (the spec's default: 8 GB),
/// as the real search does.
fn vast_dph_total(gpus: u64, disk_gb: f64) -> f64 {
    0.35 * gpus as f64 + 0.15 * (disk_gb - 50.0) / 720.0
}

/// Whether a search filter admits `v`; an absent filter does. The spec's operators: `eq`,
/// `neq`, `in`, `notin`, and on numbers `gt`, `gte`, `lt`, `lte` (all given must hold).
fn vast_filter_admits(filter: &Value, v: &Value) -> bool {
    let Some(ops) = filter.as_object() else {
        return true;
    };
    let num = |x: &Value| x.as_f64();
    ops.iter().all(|(op, want)| match op.as_str() {
        "eq" => want == v,
        "neq" => want != v,
        "in" => want.as_array().is_some_and(|l| l.contains(v)),
        "notin" => want.as_array().is_none_or(|l| !l.contains(v)),
        "gt" => matches!((num(v), num(want)), (Some(a), Some(b)) if a > b),
        "gte" => matches!((num(v), num(want)), (Some(a), Some(b)) if a >= b),
        "lt" => matches!((num(v), num(want)), (Some(a), Some(b)) if a < b),
        "lte" => matches!((num(v), num(want)), (Some(a), Some(b)) if a <= b),
        _ => true,
    })
}

/// A Vast ask of the fake's market beyond its three RTX 4090s ([`FakeCloud::add_vast_ask`]).
#[derive(Debug, Clone, PartialEq)]
pub struct VastAsk {
    pub id: i64,
    /// As Vast names it (`RTX 3090`, `H100 SXM`).
    pub gpu_name: String,
    pub num_gpus: u64,
    /// MB per GPU.
    pub gpu_ram_mb: u64,
    /// Compute per GPU per hour; `dph_total` adds the disk's storage like the built-in asks.
    pub usd_per_gpu_hour: f64,
    /// `verified`, `unverified` or `deverified`.
    pub verification: String,
}

/// One ask as `POST /api/v0/bundles` answers it, priced with `disk` GB. Every ask lists its
/// traffic prices per GB (`inet_down_cost` / `inet_up_cost`, as the spec's example does).
fn vast_ask_json(a: &VastAsk, disk: f64) -> Value {
    json!({
        "id": a.id, "ask_contract_id": a.id, "gpu_name": a.gpu_name, "num_gpus": a.num_gpus,
        "dph_total": a.usd_per_gpu_hour * a.num_gpus as f64 + 0.15 * (disk - 50.0) / 720.0,
        "gpu_ram": a.gpu_ram_mb,
        "geolocation": "Norway, NO", "cuda_max_good": 12.8, "storage_cost": 0.15,
        "inet_down_cost": 0.004, "inet_up_cost": 0.008,
        "verification": a.verification, "is_bid": false, "rentable": true, "rented": false
    })
}

/// Every ask of the fake's market: the three built-in RTX 4090s, then the added ones, in that
/// (unsorted) order.
fn vast_asks(inner: &Inner) -> Vec<VastAsk> {
    let mut asks: Vec<VastAsk> = VAST_ASKS
        .iter()
        .map(|(id, gpus, verification)| VastAsk {
            id: *id,
            gpu_name: "RTX 4090".into(),
            num_gpus: *gpus,
            gpu_ram_mb: 24564,
            usd_per_gpu_hour: 0.35,
            verification: verification.to_string(),
        })
        .collect();
    asks.extend(lock(&inner.vast_asks).iter().cloned());
    asks
}

/// `POST /api/v0/bundles`: the asks that pass the body's filters (`id`, `gpu_name`, `num_gpus`,
/// `gpu_ram`, `dph_total`, `verified` / `verification`), priced at its `allocated_storage`
/// (default 8 GB), sorted by its `order` (`[[field, "asc"|"desc"], …]`; none: the market's own
/// unsorted order) and cut at its `limit`. Like the spec's default, `verified` is not applied
/// when absent (the fake's old clients relied on that).
fn vast_search(inner: &Inner, body: &Value) -> Value {
    let disk = body["allocated_storage"].as_f64().unwrap_or(8.0);
    let mut offers: Vec<Value> = vast_asks(inner)
        .iter()
        .map(|a| vast_ask_json(a, disk))
        .filter(|o| {
            [
                "id",
                "gpu_name",
                "num_gpus",
                "gpu_ram",
                "dph_total",
                "verification",
            ]
            .iter()
            .all(|f| vast_filter_admits(&body[*f], &o[*f]))
                && vast_filter_admits(
                    &body["verified"],
                    &json!(o["verification"].as_str() == Some("verified")),
                )
        })
        .collect();
    if let Some(order) = body["order"].as_array() {
        let keys: Vec<(String, bool)> = order
            .iter()
            .filter_map(|p| {
                let p = p.as_array()?;
                Some((
                    p.first()?.as_str()?.to_string(),
                    p.get(1).and_then(Value::as_str) == Some("desc"),
                ))
            })
            .collect();
        offers.sort_by(|a, b| {
            keys.iter()
                .map(|(k, desc)| {
                    let (x, y) = (a[k].as_f64().unwrap_or(0.0), b[k].as_f64().unwrap_or(0.0));
                    if *desc {
                        y.total_cmp(&x)
                    } else {
                        x.total_cmp(&y)
                    }
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    if let Some(n) = body["limit"].as_u64() {
        offers.truncate(n as usize);
    }
    json!({ "offers": offers })
}

fn vast_error(code: u16, error: &str, msg: &str) -> Answer {
    status(code, json!({"success": false, "error": error, "msg": msg}))
}

fn vast(inner: &Inner, method: &str, path: &str, query: &str, body: &Value) -> Option<Answer> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["api", "v0", "users", "current"]) => Some(ok(
            json!({"id": 7, "email": "fake@example.com", "balance": *lock(&inner.balance)}),
        )),
        ("POST", ["api", "v0", "bundles"]) => {
            if let Some(a) = fault(inner, Route::Offers) {
                return a;
            }
            Some(ok(vast_search(inner, body)))
        }
        ("PUT", ["api", "v0", "asks", ask]) => {
            let Some(gpus) = vast_asks(inner)
                .iter()
                .find(|a| a.id.to_string() == *ask)
                .map(|a| a.num_gpus)
            else {
                return Some(vast_error(
                    404,
                    "invalid_args",
                    &format!(
                        "error 404/3603: no_such_ask Instance type by id {ask} is not available."
                    ),
                ));
            };
            let label = body["label"].as_str().unwrap_or("").to_string();
            create_route(inner, &label, |id| {
                let mut st = lock(&inner.state);
                if let Some(i) = find(&mut st, id) {
                    i.gpu_count = gpus;
                    i.disk_gb = body["disk"].as_u64().unwrap_or(50);
                }
                drop(st);
                ok(json!({"success": true, "new_contract": id.parse::<i64>().unwrap_or(0)}))
            })
        }
        ("POST", ["api", "v0", "instances", id, "ssh"]) => {
            let mut st = lock(&inner.state);
            match find(&mut st, id) {
                Some(i) => {
                    i.keys
                        .push(body["ssh_key"].as_str().unwrap_or("").to_string());
                    Some(ok(json!({"success": true, "msg": "ssh key attached"})))
                }
                None => Some(vast_error(404, "no_such_instance", "Instance not found")),
            }
        }
        ("GET", ["api", "v1", "instances"]) => {
            // Keyset pagination as the spec has it: `limit` per page (default 25, at most 25,
            // ≤ 0 → 5), ordered by id, `after_token` the previous page's `next_token`.
            let limit = match query_param(query, "limit").and_then(|l| l.parse::<i64>().ok()) {
                None => 25,
                Some(l) if l <= 0 => 5,
                Some(l) => l.min(25),
            } as usize;
            let after: Option<u64> = match query_param(query, "after_token") {
                None => None,
                Some(t) => match t.strip_prefix("after-").and_then(|n| n.parse().ok()) {
                    Some(n) => Some(n),
                    None => {
                        return Some(vast_error(400, "invalid_args", "invalid after_token"));
                    }
                },
            };
            let cut = take_if(inner, Route::List, |f| *f == Fault::CutList).is_some();
            list_live(
                inner,
                |inner, i| {
                    let mut v = vast_fields(inner, i);
                    let port = v["ssh_port"].as_u64().unwrap_or(0);
                    v["ports"] = if port > 0 {
                        json!({"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": port.to_string()}]})
                    } else {
                        Value::Null
                    };
                    v
                },
                |mut list| {
                    list.sort_by_key(|v| v["id"].as_u64().unwrap_or(0));
                    let total = list.len();
                    let rest: Vec<Value> = list
                        .into_iter()
                        .filter(|v| after.is_none_or(|a| v["id"].as_u64().unwrap_or(0) > a))
                        .collect();
                    let more = rest.len() > limit;
                    let page: Vec<Value> = rest.into_iter().take(limit).collect();
                    let next = match page.last() {
                        Some(last) if more && !cut => {
                            json!(format!("after-{}", last["id"].as_u64().unwrap_or(0)))
                        }
                        _ => Value::Null,
                    };
                    json!({"success": true, "instances_found": page.len(), "total_instances": total, "next_token": next, "instances": page})
                },
            )
        }
        ("GET", ["api", "v0", "instances", id]) => get_one(
            inner,
            id,
            |inner, i| json!({"instances": vast_fields(inner, i)}),
            || vast_error(400, "no_such_instance", "error 400: Instance not found"),
        ),
        ("PUT", ["api", "v0", "instances", id]) => act_on(
            inner,
            id,
            || vast_error(404, "no_such_instance", "Instance not found"),
            |i| {
                let changed = match body["state"].as_str() {
                    Some("stopped") => stop_or_start(i, FakeState::Stopped),
                    Some("running") => started(inner, stop_or_start(i, FakeState::Running)),
                    _ => false,
                };
                if changed {
                    ok(json!({"success": true}))
                } else {
                    vast_error(400, "invalid_args", "state change not possible now")
                }
            },
        ),
        ("DELETE", ["api", "v0", "instances", id]) => act_on(
            inner,
            id,
            || vast_error(404, "no_such_instance", "Instance not found"),
            |i| {
                i.state = FakeState::Terminated;
                ok(json!({"success": true, "msg": "destroying instance"}))
            },
        ),
        _ => Some(vast_error(
            404,
            "not_found",
            "no such route in the fake cloud",
        )),
    }
}

// ---- Lambda ----

const LAMBDA_TYPE: &str = "gpu_1x_rtx4090";

fn lambda_type() -> Value {
    json!({
        "name": LAMBDA_TYPE, "description": "1x RTX 4090 (24 GB)", "gpu_description": "RTX 4090 (24 GB)",
        "price_cents_per_hour": 50,
        "specs": {"vcpus": 16, "memory_gib": 64, "storage_gib": 512, "gpus": 1}
    })
}

fn lambda_instance(inner: &Inner, i: &FakeInstance) -> Value {
    let ssh = lock(&inner.ssh).clone();
    let avail = |b: bool| json!({"available": b});
    let mut v = json!({
        "id": i.id,
        "name": i.label,
        "status": match i.state {
            FakeState::Provisioning => "booting",
            FakeState::Running => "active",
            FakeState::Stopped | FakeState::Error => "unhealthy",
            FakeState::Terminated => "terminated",
        },
        "ssh_key_names": ["gpurent-key"],
        "file_system_names": [],
        "region": {"name": "us-east-1", "description": "Virginia, USA"},
        "instance_type": lambda_type(),
        "actions": {
            "migrate": avail(false), "rebuild": avail(false), "restart": avail(true),
            "cold_reboot": avail(false), "terminate": avail(true)
        },
    });
    if let (Some(s), FakeState::Running) = (ssh, i.state) {
        v["ip"] = json!(s.host);
    }
    v
}

fn lambda_error(code: u16, ecode: &str, message: &str) -> Answer {
    status(code, json!({"error": {"code": ecode, "message": message}}))
}

fn lambda(inner: &Inner, method: &str, path: &str, body: &Value) -> Option<Answer> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["api", "v1", "ssh-keys"]) => {
            let st = lock(&inner.state);
            let keys: Vec<Value> = st
                .account_keys
                .iter()
                .enumerate()
                .map(|(n, (name, k))| json!({"id": format!("key{n}"), "name": name, "public_key": k}))
                .collect();
            Some(ok(json!({ "data": keys })))
        }
        ("POST", ["api", "v1", "ssh-keys"]) => {
            let name = body["name"].as_str().unwrap_or("").to_string();
            let key = body["public_key"].as_str().unwrap_or("").to_string();
            let mut st = lock(&inner.state);
            if st.account_keys.iter().any(|(n, _)| *n == name) {
                return Some(lambda_error(
                    400,
                    "global/duplicate",
                    "A key with this name exists.",
                ));
            }
            st.account_keys.push((name.clone(), key.clone()));
            let n = st.account_keys.len();
            Some(ok(
                json!({"data": {"id": format!("key{n}"), "name": name, "public_key": key}}),
            ))
        }
        ("GET", ["api", "v1", "instance-types"]) => {
            if let Some(a) = fault(inner, Route::Offers) {
                return a;
            }
            Some(ok(json!({"data": {LAMBDA_TYPE: {
                "instance_type": lambda_type(),
                "regions_with_capacity_available": [{"name": "us-east-1", "description": "Virginia, USA"}]
            }}})))
        }
        ("POST", ["api", "v1", "instance-operations", "launch"]) => {
            if body["instance_type_name"].as_str() != Some(LAMBDA_TYPE) {
                return Some(lambda_error(
                    404,
                    "global/object-does-not-exist",
                    "Instance type not found.",
                ));
            }
            let label = body["name"].as_str().unwrap_or("").to_string();
            let names: Vec<String> = body["ssh_key_names"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            create_route(inner, &label, |id| {
                let mut st = lock(&inner.state);
                let keys: Vec<String> = st
                    .account_keys
                    .iter()
                    .filter(|(n, _)| names.contains(n))
                    .map(|(_, k)| k.clone())
                    .collect();
                if let Some(i) = find(&mut st, id) {
                    i.keys = keys;
                }
                ok(json!({"data": {"instance_ids": [id]}}))
            })
        }
        ("GET", ["api", "v1", "instances"]) => {
            list_live(inner, lambda_instance, |list| json!({ "data": list }))
        }
        ("GET", ["api", "v1", "instances", id]) => get_one(
            inner,
            id,
            |inner, i| json!({"data": lambda_instance(inner, i)}),
            || {
                lambda_error(
                    404,
                    "global/object-does-not-exist",
                    "Specified instance does not exist.",
                )
            },
        ),
        ("POST", ["api", "v1", "instance-operations", "terminate"]) => {
            if let Some(a) = fault(inner, Route::Action) {
                return a;
            }
            let ids: Vec<String> = body["instance_ids"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let mut st = lock(&inner.state);
            let mut done = vec![];
            for id in ids {
                if let Some(i) = find(&mut st, &id) {
                    i.state = FakeState::Terminated;
                    done.push(i.clone());
                }
            }
            if done.is_empty() {
                return Some(lambda_error(
                    404,
                    "global/object-does-not-exist",
                    "Specified instance does not exist.",
                ));
            }
            let out: Vec<Value> = done.iter().map(|i| lambda_instance(inner, i)).collect();
            Some(ok(json!({"data": {"terminated_instances": out}})))
        }
        _ => Some(lambda_error(
            404,
            "global/object-does-not-exist",
            "no such route in the fake cloud",
        )),
    }
}

// ---- AutoDL 容器实例 Pro ----
//
// What the real AutoDL does that could hurt a user, and what this flavour does of it:
// - every failure may come back as HTTP 200 with a failure word in `code` (the docs list no
//   failure codes): capacity, balance and a release refused all answer 200 here, so a client
//   that trusts the HTTP status thinks it worked;
// - no price and no stock before the create: the machine's rate appears only in its snapshot
//   (`payg_price`, 1/1000 yuan per hour here);
// - the snapshot hands out the root password (every read): a client that logs or stores it
//   leaks a login to a billing machine (`snapshots_read` counts the reads);
// - release of a machine that is not powered off is refused ("请先关机"), so a client that
//   releases without powering off first leaves it billing;
// - the list is paged (`page_size` honoured, `max_page` said): a client reading page 1 only
//   misses machines;
// - released machines stay in the list as `removed`: a client that counts every listed machine
//   as alive shows money that is not spent;
// - an unknown id (or another account's) has no documented answer: here a 200 failure word;
// - power on with `payload` other than "gpu" is refused (no-GPU mode is not in the API);
// - a machine left powered off is released by AutoDL after 15 days (not modelled: no days pass).

/// The fake's one AutoDL GPU spec, and what a machine of it bills (1/1000 yuan per GPU-hour,
/// as `snapshot.payg_price` reports it): ¥1.97/h, the documented example.
pub const AUTODL_SPEC: &str = "pro6000-p";
const AUTODL_MILLI_YUAN_PER_GPU_HOUR: u64 = 1970;

fn autodl_failure(code: &str, msg: &str) -> Value {
    json!({"code": code, "msg": msg, "data": null, "request_id": "fake"})
}

fn autodl_ok(data: Value) -> Answer {
    ok(json!({"code": "Success", "msg": "", "data": data, "request_id": "fake"}))
}

fn autodl_status_word(s: FakeState) -> &'static str {
    match s {
        FakeState::Provisioning => "starting",
        FakeState::Running => "running",
        FakeState::Stopped => "shutdown",
        FakeState::Terminated => "removed",
        // No failure word is documented: one gpurent does not know (it bills until released).
        FakeState::Error => "failed",
    }
}

fn autodl_item(i: &FakeInstance) -> Value {
    json!({
        "created_at": "2026-12-02T10:00:00+08:00",
        "uuid": i.id,
        "machine_id": "4d67438b4f",
        "machine_alias": "",
        "region_sign": "westDC3",
        "region_name": "西北B区",
        "status": autodl_status_word(i.state),
        "sub_status": "",
        "status_at": "2026-12-02T10:00:05+08:00",
        "start_mode": "gpu",
        "charge_type": "payg",
        "req_gpu_amount": i.gpu_count,
        "expired_at": {"Time": "0001-01-01T00:00:00Z", "Valid": false},
        "started_at": {"Time": "2026-12-02T10:00:05+08:00", "Valid": i.state == FakeState::Running},
        "stopped_at": {"Time": "0001-01-01T00:00:00Z", "Valid": i.state == FakeState::Stopped},
        "name": i.label,
        "timed_shutdown_at": {"Time": "0001-01-01T00:00:00Z", "Valid": false},
        "gpu_spec_uuid": AUTODL_SPEC,
    })
}

fn autodl_snapshot(inner: &Inner, i: &FakeInstance) -> Value {
    *lock(&inner.snapshots_read) += 1;
    let ssh = lock(&inner.ssh).clone();
    let price = lock(&inner.reported_price)
        .map(|p| (p * 1000.0).round() as u64)
        .unwrap_or(AUTODL_MILLI_YUAN_PER_GPU_HOUR * i.gpu_count);
    let mut v = json!({
        "region_sign": "westDC3",
        "payg_price": price,
        "origin_pay_price": price * 3 / 2,
        "snapshot_gpu_alias_name": "NVIDIA RTX PRO 6000",
        "chip_corp": "nvidia",
        "cpu_arch": "x86",
        "expand_system_disk_size": 0,
        "system_init_disk_size": 32212254720u64,
        "root_password": lock(&inner.root_password).clone(),
        "jupyter_token": "fake-jupyter-token",
        "jupyter_domain": "a1-fake.westDC3.autodl.com:8443",
        "service_6006_domain": "u1-fake.westDC3.autodl.com:8443",
        "service_6006_port_protocol": "http",
        "service_6008_domain": "uu1-fake.westDC3.autodl.com:8443",
        "service_6008_port_protocol": "http",
    });
    // The SSH endpoint once it runs (the proxy host and port of AutoDL's SSH gateway).
    if let (Some(s), FakeState::Running) = (ssh, i.state) {
        v["ssh_command"] = json!(format!("ssh -p {} {}@{}", s.port, s.user, s.host));
        v["proxy_host"] = json!(s.host);
        v["ssh_port"] = json!(s.port);
    }
    v
}

fn autodl_missing() -> Answer {
    ok(autodl_failure("BadRequest", "实例不存在"))
}

fn autodl(inner: &Inner, method: &str, path: &str, query: &str, body: &Value) -> Option<Answer> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let by_id = || {
        query_param(query, "instance_uuid")
            .map(String::from)
            .or_else(|| body["instance_uuid"].as_str().map(String::from))
            .unwrap_or_default()
    };
    match (method, parts.as_slice()) {
        ("POST", ["api", "v1", "dev", "wallet", "balance"]) => {
            let assets = (*lock(&inner.balance) * 1000.0).round() as i64;
            Some(autodl_ok(
                json!({"assets": assets, "accumulate": 0, "voucher_balance": 0}),
            ))
        }
        ("POST", ["api", "v1", "dev", "instance", "pro", "create"]) => {
            if body["gpu_spec_uuid"].as_str() != Some(AUTODL_SPEC) {
                return Some(ok(autodl_failure("BadRequest", "GPU规格不存在")));
            }
            let label = body["instance_name"].as_str().unwrap_or("").to_string();
            let gpus = body["req_gpu_amount"].as_u64().unwrap_or(1);
            let disk = 30 + body["expand_system_disk_by_gb"].as_u64().unwrap_or(0);
            create_route(inner, &label, |id| {
                let mut st = lock(&inner.state);
                if let Some(i) = find(&mut st, id) {
                    i.gpu_count = gpus;
                    i.disk_gb = disk;
                }
                drop(st);
                autodl_ok(json!(id))
            })
        }
        ("GET", ["api", "v1", "dev", "instance", "pro", "status"]) => {
            let id = by_id();
            get_one(
                inner,
                &id,
                |_, i| json!({"code": "Success", "msg": "", "data": autodl_status_word(i.state), "request_id": "fake"}),
                autodl_missing,
            )
        }
        ("GET", ["api", "v1", "dev", "instance", "pro", "snapshot"]) => {
            let id = by_id();
            get_one(
                inner,
                &id,
                |inner, i| {
                    let mut null = lock(&inner.snapshot_null);
                    let data = if *null > 0 {
                        *null -= 1;
                        Value::Null
                    } else {
                        drop(null);
                        autodl_snapshot(inner, i)
                    };
                    json!({"code": "Success", "msg": "", "data": data, "request_id": "fake"})
                },
                autodl_missing,
            )
        }
        ("POST", ["api", "v1", "dev", "instance", "pro", "list"]) => {
            let page = body["page_index"].as_u64().unwrap_or(1).max(1);
            let size = body["page_size"].as_u64().unwrap_or(10).max(1);
            let lag = take_if(inner, Route::List, |f| *f == Fault::Lag).is_some();
            if !lag {
                if let Some(a) = fault(inner, Route::List) {
                    return a;
                }
            }
            let mut st = lock(&inner.state);
            advance(inner, &mut st);
            let me = caller();
            // Released machines stay listed as `removed`; a lagging replica shows nothing new.
            let all: Vec<Value> = st
                .instances
                .iter()
                .filter(|i| i.owner == me && !lag)
                .map(autodl_item)
                .collect();
            let total = all.len() as u64;
            let max_page = total.div_ceil(size).max(1);
            let list: Vec<Value> = all
                .into_iter()
                .skip(((page - 1) * size) as usize)
                .take(size as usize)
                .collect();
            Some(autodl_ok(json!({
                "list": list, "page_index": page, "page_size": size,
                "offset": (page - 1) * size, "max_page": max_page,
                "result_total": total, "page": page,
            })))
        }
        ("POST", ["api", "v1", "dev", "instance", "pro", "power_on"]) => {
            if body["payload"].as_str() != Some("gpu") {
                return Some(ok(autodl_failure(
                    "BadRequest",
                    "暂不支持API以无卡模式开机",
                )));
            }
            let id = by_id();
            act_on(inner, &id, autodl_missing, |i| {
                if started(inner, stop_or_start(i, FakeState::Running)) {
                    autodl_ok(Value::Null)
                } else {
                    ok(autodl_failure("BadRequest", "实例当前状态不允许开机"))
                }
            })
        }
        ("POST", ["api", "v1", "dev", "instance", "pro", "power_off"]) => {
            let id = by_id();
            act_on(inner, &id, autodl_missing, |i| {
                // Powering off a machine that is off already is no failure.
                if i.state == FakeState::Stopped || stop_or_start(i, FakeState::Stopped) {
                    autodl_ok(Value::Null)
                } else if i.state == FakeState::Provisioning || i.state == FakeState::Error {
                    i.state = FakeState::Stopped;
                    autodl_ok(Value::Null)
                } else {
                    ok(autodl_failure("BadRequest", "实例当前状态不允许关机"))
                }
            })
        }
        ("POST", ["api", "v1", "dev", "instance", "pro", "release"]) => {
            let id = by_id();
            act_on(inner, &id, autodl_missing, |i| {
                if i.state == FakeState::Stopped {
                    i.state = FakeState::Terminated;
                    autodl_ok(Value::Null)
                } else {
                    // "在释放实例前请先关机实例，否则可能无法释放": refused, with HTTP 200.
                    ok(autodl_failure("BadRequest", "请先关机实例再释放"))
                }
            })
        }
        _ => Some(status(
            404,
            autodl_failure("NotFound", "no such route in the fake cloud"),
        )),
    }
}
