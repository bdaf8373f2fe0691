//! Each provider client against the stateful fake cloud (gpurent-testhost), through Prism's
//! validating proxy for that provider's spec: requests *and* the fake's answers are checked.
//! The lifecycle (offers → key → create → provisioning → running with an SSH endpoint → stop →
//! start → terminate → gone) and the faults (429 with and without Retry-After, 5xx, capacity,
//! zero balance, a create whose answer never comes, an unparseable listing).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gpurent_core::infra::secret::Secret;
use gpurent_core::providers::http::HttpOptions;
use gpurent_core::providers::{
    self, ClientConfig, CreateRequest, OfferQuery, Provider, ProviderError, ProviderKind,
    RemoteState,
};
use gpurent_testhost::fakecloud::{FakeCloud, Fault, Flavor, Route, SshTarget};
use gpurent_testhost::{prism_available, Prism};

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeCloudTestKeyXXXXXXXXXXXXXXXXXXXXXXXXXXX t@gpurent";

fn spec(kind: ProviderKind) -> PathBuf {
    let f = match kind {
        ProviderKind::Runpod => "runpod-rest-v2.openapi.json",
        ProviderKind::Vast => "vastai.openapi.yaml",
        ProviderKind::Lambda => "lambda-cloud-v1.6.0.openapi.json",
        ProviderKind::Autodl => "autodl-pro.openapi.yaml",
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/provider-specs")
        .join(f)
}

/// A client of the fake itself: its requests time out after 3 s (the hanging create's answer
/// comes after 6 s). Through Prism, [`proxied`].
fn client(kind: ProviderKind, url: &str, key: &str) -> Box<dyn Provider> {
    client_with(kind, url, key, Duration::from_secs(3))
}

/// A client through Prism: 30 s per request. None is meant to time out, and a create is never
/// resent: 3 s could be reached by a loaded machine running Prism.
fn proxied(kind: ProviderKind, url: &str, key: &str) -> Box<dyn Provider> {
    client_with(kind, url, key, Duration::from_secs(30))
}

fn client_with(kind: ProviderKind, url: &str, key: &str, timeout: Duration) -> Box<dyn Provider> {
    providers::client(
        kind,
        ClientConfig {
            base_url: url.to_string(),
            api_key: Secret::new(key),
            http: HttpOptions {
                connect_timeout: timeout,
                request_timeout: timeout,
                read_attempts: 4,
                backoff_base: Duration::from_millis(50),
                max_wait: Duration::from_secs(5),
                min_intervals: vec![],
                extra_headers: vec![],
            },
            ssh_user: Some("gputest".into()),
            ssh_port: Some(2222),
        },
    )
    .expect("client")
}

fn lifecycle(kind: ProviderKind, flavor: Flavor) {
    if !prism_available() {
        return;
    }
    let fake = FakeCloud::start(flavor, "k").expect("fake");
    fake.set_ssh(SshTarget {
        host: "127.0.0.1".into(),
        port: 2222,
        user: "gputest".into(),
    });
    // Provisioning until the test has read it so (then it ends at the next read): a 2 s
    // provisioning raced the first read on a loaded machine.
    fake.set_provisioning(Duration::from_secs(3600));
    let prism = Prism::proxy(&spec(kind), &fake.url()).expect("prism");
    let c = proxied(kind, &prism.url(), "k");

    c.check_account().expect("check");
    // Reads are retried through 429 (with and without Retry-After) and 5xx. Vast and Lambda
    // document neither on their offer endpoints (the proxy flags an undocumented status), so
    // this part talks to the fake directly.
    let direct = client(kind, &fake.url(), "k");
    fake.push_fault(
        Route::Offers,
        Fault::RateLimited {
            retry_after_s: Some(1),
        },
    );
    fake.push_fault(
        Route::Offers,
        Fault::RateLimited {
            retry_after_s: None,
        },
    );
    fake.push_fault(Route::Offers, Fault::ServerError(503));
    let t = Instant::now();
    direct
        .offers(&OfferQuery::default(), 5)
        .expect("offers after retries");
    assert!(
        t.elapsed() >= Duration::from_secs(1),
        "Retry-After honoured"
    );
    let offers = c.offers(&OfferQuery::default(), 5).expect("offers");
    let offer = offers
        .iter()
        .find(|o| o.offer_id == fake.offer_id())
        .unwrap_or_else(|| panic!("{offers:?}"));
    assert_eq!(offer.gpu_count, 1);
    assert!(
        c.offer(&offer.offer_id, 6).expect("offer by id").is_some(),
        "{kind}"
    );
    let reg = c.register_key(KEY, "laptop").expect("key");
    let req = CreateRequest {
        label: "gpurent-00aa11bb22cc".into(),
        offer_id: offer.offer_id.clone(),
        image: providers::images::default_image(kind).expect("image"),
        disk_gb: 40,
        public_key: KEY.into(),
        key_label: "laptop".into(),
    };
    // Create faults: each fails once, typed, and creates nothing.
    for (fault, want) in [
        (Fault::NoCapacity, "capacity"),
        (Fault::ZeroBalance, "balance"),
    ] {
        fake.push_fault(Route::Create, fault);
        let e = c.create(&req, &reg).expect_err("fault");
        let ok = match want {
            "capacity" => matches!(
                e,
                ProviderError::InsufficientCapacity { .. } | ProviderError::OfferGone { .. }
            ),
            _ => matches!(e, ProviderError::InsufficientBalance { .. }),
        };
        assert!(ok, "{kind}: {want}: {e:?}");
    }
    assert_eq!(fake.creates_total(), 0);
    let id = c.create(&req, &reg).expect("create");
    c.attach_key(&id, KEY).expect("attach");
    assert_eq!(fake.creates_total(), 1);
    assert!(
        fake.instances()[0].keys.iter().any(|k| k == KEY),
        "{kind}: the key reached the machine"
    );
    let first = c.get(&id).expect("get").expect("exists");
    assert_eq!(first.state, RemoteState::Provisioning, "{kind}");
    assert!(first.ssh.is_none(), "{kind}: no endpoint before running");
    fake.set_provisioning(Duration::ZERO);
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let r = c.get(&id).expect("get").expect("exists");
        if r.state == RemoteState::Running {
            break r;
        }
        assert!(Instant::now() < deadline, "{kind}: never running");
        std::thread::sleep(Duration::from_millis(200));
    };
    let ssh = running.ssh.expect("endpoint");
    assert_eq!((ssh.host.as_str(), ssh.port), ("127.0.0.1", 2222), "{kind}");
    let list = c.list().expect("list");
    assert_eq!(
        list.iter()
            .filter(|i| i.label.as_deref() == Some(req.label.as_str()))
            .count(),
        1,
        "{kind}: listed by label"
    );
    if kind.terms().can_stop {
        c.stop(&id).expect("stop");
        assert_eq!(
            c.get(&id).expect("get").expect("exists").state,
            RemoteState::Stopped,
            "{kind}"
        );
        c.start(&id).expect("start");
        assert_ne!(
            c.get(&id).expect("get").expect("exists").state,
            RemoteState::Stopped,
            "{kind}"
        );
    } else {
        assert!(matches!(
            c.stop(&id),
            Err(ProviderError::Unsupported { .. })
        ));
    }
    c.terminate(&id).expect("terminate");
    assert_eq!(c.get(&id).expect("get"), None, "{kind}: gone");
    // A create whose answer never comes is "outcome unknown", not an error to retry (direct:
    // the proxy would log the upstream's late close at an arbitrary moment).
    fake.push_fault(Route::Create, Fault::Hang(Duration::from_secs(6)));
    let e = direct.create(&req, &reg).expect_err("hang");
    assert!(
        matches!(e, ProviderError::CreateOutcomeUnknown { .. }),
        "{kind}: {e:?}"
    );
    let v = prism.violations();
    assert!(v.is_empty(), "{kind}: spec violations:\n{}", v.join("\n"));
    assert!(!prism.log().is_empty());
}

#[test]
fn runpod_lifecycle_and_faults_through_the_spec() {
    lifecycle(ProviderKind::Runpod, Flavor::Runpod);
}

#[test]
fn vast_lifecycle_and_faults_through_the_spec() {
    lifecycle(ProviderKind::Vast, Flavor::Vast);
}

#[test]
fn lambda_lifecycle_and_faults_through_the_spec() {
    lifecycle(ProviderKind::Lambda, Flavor::Lambda);
}

#[test]
fn an_unparseable_listing_is_an_error_never_no_instances() {
    for (kind, flavor) in [
        (ProviderKind::Runpod, Flavor::Runpod),
        (ProviderKind::Vast, Flavor::Vast),
        (ProviderKind::Lambda, Flavor::Lambda),
        (ProviderKind::Autodl, Flavor::Autodl),
    ] {
        let fake = FakeCloud::start(flavor, "k").expect("fake");
        let c = client(kind, &fake.url(), "k");
        fake.push_fault(Route::List, Fault::Garbage);
        match c.list() {
            Err(ProviderError::ListingUnparseable { .. }) => {}
            other => panic!("{kind}: {other:?}"),
        }
        let wrong = client(kind, &fake.url(), "wrong");
        assert!(
            matches!(wrong.list(), Err(ProviderError::AuthRejected { .. })),
            "{kind}"
        );
    }
}

/// AutoDL through its contract (gpurent's, written from its docs): the lifecycle with the root
/// password it hands out, and what the real one does that could hurt — a failure answered with
/// HTTP 200, a release refused while powered on, a paged list that keeps released machines, per
/// account visibility, lag, a create whose answer is lost.
#[test]
fn autodl_lifecycle_and_faults_through_the_contract() {
    if !prism_available() {
        return;
    }
    let fake = FakeCloud::start(Flavor::Autodl, "tok").expect("fake");
    fake.set_ssh(SshTarget {
        host: "127.0.0.1".into(),
        port: 2222,
        user: "root".into(),
    });
    fake.set_provisioning(Duration::from_secs(2));
    let prism = Prism::proxy(&spec(ProviderKind::Autodl), &fake.url()).expect("prism");
    let c = proxied(ProviderKind::Autodl, &prism.url(), "tok");
    let direct = client(ProviderKind::Autodl, &fake.url(), "tok");
    c.check_account().expect("check");
    // The token itself: "Bearer <token>" is another, unknown token at AutoDL.
    let bearer = client(ProviderKind::Autodl, &fake.url(), "Bearer tok");
    assert!(matches!(
        bearer.list(),
        Err(ProviderError::AuthRejected { .. })
    ));
    // Reads are retried through 429 and 5xx (direct: the contract documents neither).
    fake.push_fault(
        Route::List,
        Fault::RateLimited {
            retry_after_s: Some(1),
        },
    );
    fake.push_fault(Route::List, Fault::ServerError(503));
    direct.list().expect("list after retries");
    let offer = c
        .offer(&fake.offer_id(), 1)
        .expect("offer")
        .expect("documented");
    let req = CreateRequest {
        label: "gpurent-00aa11bb22cc".into(),
        offer_id: offer.offer_id.clone(),
        image: providers::images::default_image(ProviderKind::Autodl).expect("image"),
        disk_gb: 50,
        public_key: KEY.into(),
        key_label: "laptop".into(),
    };
    let reg = c.register_key(KEY, "laptop").expect("key");
    // Failures come back as HTTP 200 with a failure word: typed, nothing made.
    for fault in [Fault::NoCapacity, Fault::ZeroBalance] {
        fake.push_fault(Route::Create, fault.clone());
        let e = c.create(&req, &reg).expect_err("fault");
        assert!(
            matches!(
                e,
                ProviderError::InsufficientCapacity { .. }
                    | ProviderError::InsufficientBalance { .. }
            ),
            "{fault:?}: {e:?}"
        );
    }
    assert_eq!(fake.creates_total(), 0);
    let id = c.create(&req, &reg).expect("create");
    assert!(id.starts_with("pro-"), "{id}");
    // 50 GB asked: the 30 GB system disk plus 20 GB of expansion.
    assert_eq!(fake.instances()[0].disk_gb, 50);
    // Another account's token sees nothing of it: not listed, and "gone" to it.
    fake.add_account("other");
    let other = client(ProviderKind::Autodl, &fake.url(), "other");
    assert!(other.list().expect("other list").is_empty());
    assert_eq!(other.get(&id).expect("other get"), None);
    // Lag right after the create: a status read that does not know it yet is not "gone" while
    // the account's own list shows it.
    fake.push_fault(Route::Get, Fault::Lag);
    assert!(direct.get(&id).expect("lagging read").is_some());
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        let r = c.get(&id).expect("get").expect("exists");
        if r.state == RemoteState::Running {
            break r;
        }
        assert!(r.ssh.is_none(), "no endpoint before running");
        assert!(Instant::now() < deadline, "never running");
        std::thread::sleep(Duration::from_millis(200));
    };
    let ssh = running.ssh.expect("endpoint");
    // (The test client's SSH user override stands in for AutoDL's root.)
    assert_eq!(
        (ssh.host.as_str(), ssh.port, ssh.user.as_str()),
        ("127.0.0.1", 2222, "gputest")
    );
    // The machine's own rate (¥/h) is read after the create.
    assert_eq!(running.price_per_hour_usd, Some(1.97));
    let pw = c.login_password(&id).expect("pw").expect("given");
    assert_eq!(pw.expose(), "fake-root-password");
    // A paged list (page size 100 per call) finds every machine, and a released one is not
    // shown as alive.
    for n in 0..3 {
        fake.add_console_machine(&format!("console-{n}"));
    }
    assert_eq!(c.list().expect("list").len(), 4);
    c.stop(&id).expect("power_off");
    assert_eq!(
        c.get(&id).expect("get").expect("exists").state,
        RemoteState::Stopped
    );
    c.start(&id).expect("power_on");
    assert_ne!(
        c.get(&id).expect("get").expect("exists").state,
        RemoteState::Stopped
    );
    // Release powers the machine off first (AutoDL refuses a release of a machine that is on).
    c.terminate(&id).expect("terminate");
    assert_eq!(c.get(&id).expect("get"), None, "gone");
    assert_eq!(c.list().expect("list").len(), 3, "removed is not alive");
    assert!(fake
        .instances()
        .iter()
        .any(|i| i.id == id && i.state == gpurent_testhost::fakecloud::FakeState::Terminated));
    // A create whose answer is lost after the machine was made: outcome unknown, never resent.
    fake.push_fault(Route::Create, Fault::MadeThenFailed(502));
    let e = direct.create(&req, &reg).expect_err("lost");
    assert!(
        matches!(e, ProviderError::CreateOutcomeUnknown { .. }),
        "{e:?}"
    );
    fake.push_fault(Route::Create, Fault::Hang(Duration::from_secs(6)));
    let e = direct.create(&req, &reg).expect_err("hang");
    assert!(
        matches!(e, ProviderError::CreateOutcomeUnknown { .. }),
        "{e:?}"
    );
    let v = prism.violations();
    assert!(v.is_empty(), "spec violations:\n{}", v.join("\n"));
}
