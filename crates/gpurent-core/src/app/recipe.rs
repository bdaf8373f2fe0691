//! A recipe, end to end on a saved host (`recipes/`): the existing steps in order — Setup's probe
//! and GPU check, the app started (Run → Ollama, Run → Jupyter, or the recipe's own web app),
//! readiness asked through a gpurent tunnel to the host's 127.0.0.1, the guard set with the
//! recipe's defaults — then the Open URL. A step's own error stops the flow there: the error
//! keeps its code and says which step failed (`ErrorData::step`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::app::guard::{GuardRequest, GuardSetReport};
use crate::app::login::{connect_saved, LoginKey, SshEnv};
use crate::app::setup::SetupError;
use crate::app::App;
use crate::guard::GuardError;
use crate::infra::cancel::CancelToken;
use crate::infra::clock::Clock;
use crate::infra::error::CoreError;
use crate::infra::events::{Progress, ProgressSink};
use crate::infra::ipc::{Coded, ErrorData};
use crate::jupyter::JupyterError;
use crate::ollama::OllamaError;
use crate::providers::{ProviderError, ProviderKind, ProviderOffer};
use crate::recipes::asr::{self, AsrError, TranscribeOptions, TranscriptFile};
use crate::recipes::web::{self, WebError};
use crate::recipes::{self, Recipe, RecipeApp};
use crate::remote::error::RemoteError;
use crate::remote::forward::{forward_local, Forward};
use crate::setup::SetupOptions;

/// The flow's steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RecipeStep {
    /// Renting the machine (`--provider P --offer ID`): the offer read, its host CUDA against
    /// the recipe's images, the rent.
    Rent,
    Setup,
    Start,
    Ready,
    Guard,
    Open,
}

impl RecipeStep {
    pub fn as_str(self) -> &'static str {
        match self {
            RecipeStep::Rent => "rent",
            RecipeStep::Setup => "setup",
            RecipeStep::Start => "start",
            RecipeStep::Ready => "ready",
            RecipeStep::Guard => "guard",
            RecipeStep::Open => "open",
        }
    }
}

/// A step's own error.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Jupyter(#[from] JupyterError),
    #[error(transparent)]
    Ollama(#[from] OllamaError),
    #[error(transparent)]
    Web(#[from] WebError),
    #[error(transparent)]
    Guard(#[from] GuardError),
    #[error(transparent)]
    Provider(Box<ProviderError>),
    /// The browser could not be opened at the app's URL.
    #[error(transparent)]
    Opener(#[from] crate::opener::OpenerError),
    /// The offer's host runs an older CUDA than every image of the recipe: not rented.
    #[error("the offer's host runs CUDA {host_cuda}; the recipe's images need CUDA {need} or newer on the host (not rented)")]
    OfferDriverTooOld { host_cuda: String, need: String },
    /// The host's driver is below every image of the recipe.
    #[error("the host's NVIDIA driver {driver} is older than the recipe needs ({need} or newer)")]
    DriverTooOld { driver: String, need: String },
    /// Setup's GPU check did not pass: the app would not run on the GPU.
    #[error("Setup's GPU check did not pass on this host: {issues}")]
    HostNotReady { issues: String },
    /// The recipe's app is not running on the host (for `transcribe`: start the recipe first).
    #[error("{app} is not running on {host}: start the recipe first (gpurent recipe run {app} --host {host})")]
    AppNotRunning { app: String, host: String },
    /// Transcribing through the Whisper recipe's app.
    #[error(transparent)]
    Asr(#[from] crate::recipes::asr::AsrError),
    /// The app did not give the ready answer through the tunnel in its first-boot time.
    #[error("{app} did not answer {path} with {want} through the tunnel within {after_s} s (last: {last})")]
    NotReady {
        app: String,
        path: String,
        want: u16,
        last: String,
        after_s: u64,
    },
}

impl Coded for RecipeError {
    fn code(&self) -> &'static str {
        match self {
            RecipeError::Core(e) => e.code(),
            RecipeError::Remote(e) => e.code(),
            RecipeError::Setup(e) => e.code(),
            RecipeError::Jupyter(e) => e.code(),
            RecipeError::Ollama(e) => e.code(),
            RecipeError::Web(e) => e.code(),
            RecipeError::Guard(e) => e.code(),
            RecipeError::Provider(e) => e.code(),
            RecipeError::Opener(e) => e.code(),
            RecipeError::OfferDriverTooOld { .. } => "recipe_offer_driver_too_old",
            RecipeError::DriverTooOld { .. } => "recipe_driver_too_old",
            RecipeError::HostNotReady { .. } => "recipe_host_not_ready",
            RecipeError::NotReady { .. } => "recipe_not_ready",
            RecipeError::AppNotRunning { .. } => "recipe_app_not_running",
            RecipeError::Asr(e) => e.code(),
        }
    }

    fn detail(&self) -> Option<String> {
        match self {
            RecipeError::Core(e) => e.detail(),
            RecipeError::Remote(e) => e.detail(),
            RecipeError::Setup(e) => e.detail(),
            RecipeError::Jupyter(e) => e.detail(),
            RecipeError::Ollama(e) => e.detail(),
            RecipeError::Web(e) => e.detail(),
            RecipeError::Guard(e) => e.detail(),
            RecipeError::Provider(e) => e.detail(),
            RecipeError::Opener(e) => e.detail(),
            _ => None,
        }
    }

    fn data(&self) -> Option<ErrorData> {
        match self {
            RecipeError::Core(e) => e.data(),
            RecipeError::Remote(e) => e.data(),
            RecipeError::Setup(e) => e.data(),
            RecipeError::Jupyter(e) => e.data(),
            RecipeError::Ollama(e) => e.data(),
            RecipeError::Web(e) => e.data(),
            RecipeError::Guard(e) => e.data(),
            RecipeError::Provider(e) => e.data(),
            _ => None,
        }
    }
}

/// The flow stopped at `step` with that step's error.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", step.as_str())]
pub struct RecipeFailure {
    pub step: RecipeStep,
    pub error: RecipeError,
}

impl From<ProviderError> for RecipeError {
    fn from(e: ProviderError) -> Self {
        RecipeError::Provider(Box::new(e))
    }
}

impl From<CoreError> for RecipeFailure {
    fn from(e: CoreError) -> Self {
        RecipeFailure {
            step: RecipeStep::Setup,
            error: e.into(),
        }
    }
}

impl Coded for RecipeFailure {
    fn code(&self) -> &'static str {
        self.error.code()
    }
    fn detail(&self) -> Option<String> {
        self.error.detail()
    }
    fn data(&self) -> Option<ErrorData> {
        let mut d = self.error.data().unwrap_or_default();
        d.step = Some(self.step.as_str().to_string());
        Some(d)
    }
}

fn at<E: Into<RecipeError>>(step: RecipeStep) -> impl FnOnce(E) -> RecipeFailure {
    move |e| RecipeFailure {
        step,
        error: e.into(),
    }
}

/// What a run did, once the app answered through the tunnel and the guard was set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecipeRunReport {
    pub recipe: String,
    pub host: String,
    /// The steps done, in order.
    pub steps: Vec<RecipeStep>,
    /// The host's driver (from Setup's probe) and the recipe images it can start (newest CUDA
    /// line first).
    pub driver: Option<String>,
    pub images: Vec<String>,
    /// The interpreter Setup's GPU check ran with (`None`: Ollama, no PyTorch needed).
    pub python: Option<String>,
    /// The app's port on the host's 127.0.0.1 and the tunnel's on this machine's.
    pub host_port: u16,
    pub local_port: u16,
    /// What the readiness URL answered through the tunnel, and after how long.
    pub ready_path: String,
    pub ready_status: u16,
    pub ready_after_ms: u64,
    /// The Open URL (Jupyter's carries its token: do not log it).
    pub url: String,
    pub guard: GuardSetReport,
    /// The release checklist's result folders: download these before release.
    pub results: Vec<String>,
    /// What the app still needs (models, tokens) and how it is fetched.
    pub next: Vec<String>,
    /// The same, in Chinese.
    pub next_zh_cn: Vec<String>,
}

/// How a run is asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecipeRunOptions {
    /// The app's port on the host (0: the recipe's).
    pub port: u16,
    /// The tunnel's local port (0: any free one).
    pub local_port: u16,
}

/// Ask `path` through the tunnel until it answers `want` or `wait` passes; between asks,
/// `still_up` may say the app died (its error ends the wait).
#[allow(clippy::too_many_arguments)]
fn wait_ready(
    local_port: u16,
    path: &str,
    headers: &[(&str, &str)],
    want: u16,
    wait: Duration,
    app: &str,
    still_up: &mut dyn FnMut() -> Result<(), RecipeError>,
    clock: &dyn Clock,
    cancel: &CancelToken,
) -> Result<(u16, u64), RecipeError> {
    let started = clock.monotonic();
    let elapsed = || clock.monotonic().saturating_sub(started);
    let mut last = None;
    loop {
        cancel.check().map_err(RemoteError::from)?;
        last = web::get_status(local_port, path, headers).or(last);
        if last == Some(want) {
            return Ok((want, elapsed().as_millis() as u64));
        }
        if elapsed() >= wait {
            return Err(RecipeError::NotReady {
                app: app.to_string(),
                path: path.to_string(),
                want,
                last: last.map_or("no answer".into(), |s| s.to_string()),
                after_s: wait.as_secs(),
            });
        }
        still_up()?;
        clock.sleep(Duration::from_millis(250));
    }
}

/// An offer checked against a recipe before renting: the image to boot (the newest CUDA line
/// the offer's host runs) and the disk (the recipe's container disk plus its volume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecipeOffer {
    pub offer: ProviderOffer,
    /// `None` when the offer does not list its host CUDA (a VM: its driver is the image's).
    pub image: Option<String>,
    pub disk_gb: u32,
}

impl App {
    /// Read `offer_id` again and check its host against the recipe's images before any money is
    /// spent: `recipe_offer_driver_too_old` when the host's CUDA is older than every image's.
    pub fn recipe_offer(
        &self,
        name: &str,
        provider: ProviderKind,
        account: Option<&str>,
        offer_id: &str,
    ) -> Result<RecipeOffer, RecipeFailure> {
        let r = RecipeStep::Rent;
        let recipe = recipes::get(name).map_err(at(r))?;
        let offer = self
            .offer_read(provider, account, offer_id)
            .map_err(at(r))?;
        let image = match &offer.host_cuda {
            Some(h) => {
                let fit = recipe.images_for_host_cuda(h);
                let Some(first) = fit.first() else {
                    let need = recipe
                        .images
                        .iter()
                        .map(|i| i.cuda.as_str())
                        .min_by_key(|c| recipes::version_key(c))
                        .unwrap_or("?")
                        .to_string();
                    return Err(at(r)(RecipeError::OfferDriverTooOld {
                        host_cuda: h.clone(),
                        need,
                    }));
                };
                Some(first.image.clone())
            }
            None => None,
        };
        let disk_gb = recipe.disk.container_gb + recipe.disk.volume_gb;
        Ok(RecipeOffer {
            offer,
            image,
            disk_gb,
        })
    }

    /// The bundled recipes.
    pub fn recipe_list(&self) -> Result<Vec<Recipe>, CoreError> {
        recipes::all()
    }

    /// Run recipe `name` on saved host `label` with `key`: Setup (probe, and the GPU check for an
    /// app that runs PyTorch), the app started on the host's 127.0.0.1, readiness through a
    /// tunnel, the guard set with the recipe's defaults. The tunnel is returned open (the caller
    /// holds it until the user is done); the steps go to `progress` as `Step` events.
    #[allow(clippy::too_many_arguments)]
    pub fn recipe_run_with_key(
        &self,
        name: &str,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        opts: &RecipeRunOptions,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<(Forward, RecipeRunReport), RecipeFailure> {
        let recipe = recipes::get(name).map_err(at(RecipeStep::Setup))?;
        let step = crate::infra::events::steps(progress, Some(5));
        let mut steps = Vec::new();

        // Setup: the probe (saved, as Setup saves it), the driver against the images, and the
        // GPU check where the app runs PyTorch.
        step(RecipeStep::Setup.as_str(), 0);
        let s = RecipeStep::Setup;
        let probe = self
            .setup_probe_with_key(
                label,
                env,
                key,
                &SetupOptions::default(),
                &crate::infra::events::NoProgress,
                cancel,
            )
            .map_err(at(s))?;
        let driver = probe.report.facts.driver.driver_version.clone();
        let images: Vec<String> = match &driver {
            Some(d) => {
                let fit = recipe.images_for_driver(d);
                if fit.is_empty() {
                    return Err(at(s)(RecipeError::DriverTooOld {
                        driver: d.clone(),
                        need: recipe.min_driver().unwrap_or("?").to_string(),
                    }));
                }
                fit.iter().map(|i| i.image.clone()).collect()
            }
            None => Vec::new(),
        };
        let python = if recipe.app == RecipeApp::Ollama {
            None
        } else {
            let v = self
                .setup_verify_with_key(label, env, key, &crate::infra::events::NoProgress, cancel)
                .map_err(at(s))?;
            if !v.verify.ok {
                let mut issues: Vec<String> = v.verify.errors.clone();
                for g in &v.verify.gpus {
                    issues.extend(g.suspicions.iter().map(|x| format!("{x:?}")));
                }
                return Err(at(s)(RecipeError::HostNotReady {
                    issues: issues.join("; "),
                }));
            }
            Some(v.python)
        };
        steps.push(s);

        // Start, then Ready through the tunnel.
        step(RecipeStep::Start.as_str(), 1);
        let port = if opts.port == 0 {
            recipe.main_port().map_err(at(RecipeStep::Start))?.port
        } else {
            opts.port
        };
        let first_boot = Duration::from_secs(u64::from(recipe.readiness.first_boot_s));
        let path = recipe.readiness.path.clone();
        let want = recipe.readiness.status;
        let host = self.host_get(label).map_err(at(RecipeStep::Start))?;
        let (fwd, host_port, token, ready) = match recipe.app {
            RecipeApp::Ollama => {
                let s = RecipeStep::Start;
                let served = self
                    .ollama_serve_report(label, env, Some(key), port, &[], cancel)
                    .map_err(at(s))?;
                if served.bound != "127.0.0.1" {
                    return Err(at(s)(WebError::NotPrivate {
                        app: recipe.name.clone(),
                        port,
                        bound: served.bound,
                    }));
                }
                steps.push(s);
                step(RecipeStep::Ready.as_str(), 2);
                let fwd = self
                    .ollama_tunnel(label, env, Some(key), opts.local_port, port, cancel)
                    .map_err(at(RecipeStep::Ready))?;
                let ready = wait_ready(
                    fwd.local_port,
                    &path,
                    &[],
                    want,
                    first_boot,
                    &recipe.name,
                    &mut || Ok(()),
                    self.clock.as_ref(),
                    cancel,
                )
                .map_err(at(RecipeStep::Ready))?;
                (fwd, port, None, ready)
            }
            RecipeApp::Jupyter => {
                let s = RecipeStep::Start;
                let py = python.clone().unwrap_or_else(|| "python3".into());
                let (fwd, running) = self
                    .jupyter_open(label, env, Some(key), &py, port, opts.local_port, cancel)
                    .map_err(at(s))?;
                steps.push(s);
                step(RecipeStep::Ready.as_str(), 2);
                let auth = format!("token {}", running.token.expose());
                let ready = wait_ready(
                    fwd.local_port,
                    &path,
                    &[("Authorization", auth.as_str())],
                    want,
                    first_boot,
                    &recipe.name,
                    &mut || Ok(()),
                    self.clock.as_ref(),
                    cancel,
                )
                .map_err(at(RecipeStep::Ready))?;
                (fwd, running.port, Some(running.token), ready)
            }
            RecipeApp::Web => {
                let s = RecipeStep::Start;
                let conn = connect_saved(&host, env, key, cancel).map_err(at(s))?;
                let host_port = web::start(&conn, &recipe, port, cancel).map_err(at(s))?;
                steps.push(s);
                step(RecipeStep::Ready.as_str(), 2);
                let r = RecipeStep::Ready;
                let fwd = forward_local(
                    connect_saved(&host, env, key, cancel).map_err(at(r))?,
                    opts.local_port,
                    host_port,
                )
                .map_err(at(r))?;
                let mut still_up = || -> Result<(), RecipeError> {
                    if web::alive(&conn, &recipe.name, cancel)? {
                        Ok(())
                    } else {
                        Err(WebError::Exited {
                            app: recipe.name.clone(),
                            log: web::log(&conn, &recipe.name, cancel),
                        }
                        .into())
                    }
                };
                let ready = wait_ready(
                    fwd.local_port,
                    &path,
                    &[],
                    want,
                    first_boot,
                    &recipe.name,
                    &mut still_up,
                    self.clock.as_ref(),
                    cancel,
                )
                .map_err(at(r))?;
                // Ready means private too: every listener on the port is loopback.
                let bound = web::bound(&conn, host_port, cancel).map_err(at(r))?;
                if bound.as_deref() != Some("127.0.0.1") {
                    let _ = web::stop(&conn, &recipe.name, cancel);
                    return Err(at(r)(WebError::NotPrivate {
                        app: recipe.name.clone(),
                        port: host_port,
                        bound: bound.unwrap_or_default(),
                    }));
                }
                (fwd, host_port, None, ready)
            }
        };
        steps.push(RecipeStep::Ready);

        // Guard: the recipe's defaults with the host's preferred action.
        step(RecipeStep::Guard.as_str(), 3);
        let g = RecipeStep::Guard;
        let view = self.guard_view(label).map_err(at(g))?;
        let req = GuardRequest {
            idle_minutes: recipe.guard.idle_minutes,
            util_below: recipe.guard.util_below,
            deadline: recipe.guard.deadline.clone(),
            action: view
                .actions
                .first()
                .copied()
                .unwrap_or(crate::guard::ActionKind::Poweroff),
            command: None,
            allow_full_key: false,
        };
        let spec = req.spec().map_err(at(g))?;
        let guard = self
            .guard_set_with_key(label, env, key, &spec, cancel)
            .map_err(at(g))?;
        steps.push(g);

        step(RecipeStep::Open.as_str(), 4);
        let local_port = fwd.local_port;
        let base = format!("http://127.0.0.1:{}/", fwd.local_port);
        let url = match &token {
            Some(t) => format!("{base}?token={}", t.expose()),
            None => base,
        };
        steps.push(RecipeStep::Open);
        let next = recipe
            .not_shipped
            .iter()
            .map(|n| format!("{}: {}", n.what, n.fetch))
            .collect();
        let next_zh_cn = recipe.not_shipped.iter().map(|n| n.zh_cn.clone()).collect();
        Ok((
            fwd,
            RecipeRunReport {
                recipe: recipe.name.clone(),
                host: label.to_string(),
                steps,
                driver,
                images,
                python,
                host_port,
                local_port,
                ready_path: path,
                ready_status: ready.0,
                ready_after_ms: ready.1,
                url,
                guard,
                results: recipe.results.clone(),
                next,
                next_zh_cn,
            },
        ))
    }

    /// Stop the app a recipe started on the host (Ollama, Jupyter or its own web app); `true`
    /// when one ran.
    pub fn recipe_stop_with_key(
        &self,
        name: &str,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        cancel: &CancelToken,
    ) -> Result<bool, RecipeError> {
        let recipe = recipes::get(name)?;
        Ok(match recipe.app {
            RecipeApp::Ollama => self.ollama_stop(label, env, Some(key), cancel)?,
            RecipeApp::Jupyter => self.jupyter_stop(label, env, Some(key), cancel)?,
            RecipeApp::Web => {
                let conn = connect_saved(&self.host_get(label)?, env, key, cancel)?;
                web::stop(&conn, &recipe.name, cancel)?
            }
        })
    }
}

/// Where the app runs a recipe: a saved host (a pasted one, or a machine rented earlier), or an
/// offer rented first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RecipeTarget {
    Host {
        label: String,
    },
    Rent {
        provider: ProviderKind,
        offer_id: String,
        /// The account that listed the offer (`None`: the provider's first).
        account: Option<String>,
        /// The Keys key the machine is rented with and logged into.
        key_label: String,
        /// The price per hour the user confirmed (the whole machine, USD): the offer is read
        /// again before the create and refused with `price_rose` when it now costs more.
        max_price_usd: f64,
    },
}

/// The live offers a recipe can run on (`recipes::offers`), and the accounts that could not be
/// read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RecipeOffersView {
    pub offers: crate::recipes::offers::RecipeOffers,
    pub failed_accounts: Vec<crate::providers::ledger::AccountFailure>,
}

impl App {
    /// The connected accounts' live offers for recipe `name`: those whose host runs one of its
    /// images (with that image), ranked by the card's verdict for the recipe's job.
    pub fn recipe_offers(&self, name: &str) -> Result<RecipeOffersView, RecipeError> {
        let recipe = recipes::get(name)?;
        let view = self.offers(None, &crate::providers::OfferQuery::default())?;
        let verdicts = match &recipe.job {
            recipes::RecipeJob::Kind {
                kind,
                model,
                setting,
            } => {
                let job = crate::estimate::kinds::KindJob {
                    kind: *kind,
                    model: model.clone(),
                    setting: setting.clone(),
                    ..Default::default()
                };
                self.kind_estimate(&job)?
                    .fits
                    .into_iter()
                    .map(|f| (f.card_id, f.verdict))
                    .collect()
            }
            _ => std::collections::HashMap::new(),
        };
        Ok(RecipeOffersView {
            offers: recipes::offers::rank(&recipe, view.offers, &verdicts),
            failed_accounts: view.failed_accounts,
        })
    }

    /// The desktop's run, as the registered operation `recipe_run`: the offer checked and rented
    /// first when asked (with the Keys key; the price confirmed), then
    /// [`App::recipe_run_with_key`]. The host's label goes to `on_host` as soon as it is known
    /// (a rented machine bills from then on, whatever fails later), the report to `on_ready` once
    /// the app answered; the tunnel lives until the operation is cancelled. A failure is the
    /// step's own error.
    pub fn recipe_run_op(
        &self,
        name: &str,
        target: &RecipeTarget,
        env: &SshEnv,
        on_host: &mut dyn FnMut(&str),
        on_ready: &mut dyn FnMut(&RecipeRunReport),
        progress: &dyn ProgressSink,
    ) -> Result<(), RecipeFailure> {
        recipes::get(name).map_err(at(RecipeStep::Setup))?;
        self.run_op("recipe_run", progress, |cancel| {
            let (label, key) = match target {
                RecipeTarget::Host { label } => (
                    label.clone(),
                    self.host_key_for(label, None)
                        .map_err(at(RecipeStep::Setup))?,
                ),
                RecipeTarget::Rent {
                    provider,
                    offer_id,
                    account,
                    key_label,
                    max_price_usd,
                } => {
                    let r = RecipeStep::Rent;
                    crate::infra::events::steps(progress, None)(r.as_str(), 0);
                    let checked =
                        self.recipe_offer(name, *provider, account.as_deref(), offer_id)?;
                    // A locked key is asked for before anything is created.
                    let key = self.host_login_key(key_label, None).map_err(at(r))?;
                    let req = crate::app::providers::RentRequest {
                        provider: *provider,
                        offer_id: offer_id.clone(),
                        image: checked.image,
                        disk_gb: Some(checked.disk_gb),
                        no_wait: false,
                        ready_timeout_s: None,
                        account: account.clone(),
                        max_price_usd: Some(*max_price_usd),
                    };
                    let view = self
                        .rent(&req, &key, env, progress, cancel)
                        .map_err(at(r))?;
                    (view.ledger.host_label.unwrap_or(view.ledger.id), key)
                }
            };
            on_host(&label);
            let opts = RecipeRunOptions::default();
            let (fwd, report) =
                self.recipe_run_with_key(name, &label, env, &key, &opts, progress, cancel)?;
            on_ready(&report);
            fwd.wait(cancel).map_err(at(RecipeStep::Open))
        })
    }

    /// Open a recipe's URL in the browser: only a gpurent tunnel's `http://127.0.0.1:PORT/`
    /// address. A URL with a token (Jupyter's) is opened through a private redirect file, so the
    /// token is on no local command line.
    pub fn recipe_open(&self, url: &str) -> Result<(), RecipeError> {
        use crate::opener::{open_uri_command, spawn_first};
        let port = loopback_port(url).ok_or_else(|| {
            CoreError::invalid(
                "url",
                "only a gpurent tunnel's http://127.0.0.1:PORT/ address is opened",
            )
        })?;
        let uri = if url.contains("token=") {
            let p = crate::jupyter::redirect_file(url, port)
                .map_err(|e| CoreError::io(&std::env::temp_dir(), e))?;
            format!("file://{}", p.display())
        } else {
            url.to_string()
        };
        spawn_first(&[open_uri_command(crate::infra::process::Os::current(), &uri)])?;
        Ok(())
    }

    /// [`App::recipe_stop_with_key`] with the host's own key (the desktop's call).
    pub fn recipe_stop(&self, name: &str, label: &str, env: &SshEnv) -> Result<bool, RecipeError> {
        let key = self.host_key_for(label, None)?;
        self.recipe_stop_with_key(name, label, env, &key, &CancelToken::new())
    }
}

/// What `transcribe` did: one row per audio file, in the order given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TranscribeReport {
    pub host: String,
    pub files: Vec<TranscriptFile>,
    pub transcribed: u32,
    pub failed: u32,
}

impl App {
    /// Transcribe local audio files with the Whisper recipe's app running on `label`: a tunnel to
    /// the app's port on the host's 127.0.0.1, readiness asked through it, then each file sent in
    /// turn (`recipes::asr`); a file the service refuses (not audio) or cannot be read is its own
    /// row's error and the others go on; a service that stops answering, or a cancel, ends the
    /// run (the transcripts written so far stay). Progress: `Units` (files done of all) and
    /// `Bytes` (audio sent of all).
    #[allow(clippy::too_many_arguments)]
    pub fn recipe_transcribe_with_key(
        &self,
        label: &str,
        env: &SshEnv,
        key: &LoginKey,
        files: &[PathBuf],
        opts: &TranscribeOptions,
        progress: &dyn ProgressSink,
        cancel: &CancelToken,
    ) -> Result<TranscribeReport, RecipeError> {
        let recipe = recipes::get("whisper")?;
        if files.is_empty() {
            return Err(CoreError::invalid("files", "no audio file given").into());
        }
        let out_dir = opts.out_dir.as_deref().map(Path::new);
        if let Some(d) = out_dir {
            if !d.is_dir() {
                return Err(CoreError::invalid(
                    "out_dir",
                    format!("{} is not a folder", d.display()),
                )
                .into());
            }
        }
        let host = self.host_get(label)?;
        let conn = connect_saved(&host, env, key, cancel)?;
        let port = web::running_port(&conn, &recipe.name, cancel)?.ok_or_else(|| {
            RecipeError::AppNotRunning {
                app: recipe.name.clone(),
                host: label.to_string(),
            }
        })?;
        let fwd = forward_local(connect_saved(&host, env, key, cancel)?, 0, port)?;
        let ready = web::get_status(fwd.local_port, &recipe.readiness.path, &[]);
        if ready != Some(recipe.readiness.status) {
            let _ = fwd.stop();
            return Err(RecipeError::NotReady {
                app: recipe.name.clone(),
                path: recipe.readiness.path.clone(),
                want: recipe.readiness.status,
                last: ready.map_or("no answer".into(), |s| s.to_string()),
                after_s: 0,
            });
        }
        let sizes: Vec<u64> = files
            .iter()
            .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
            .collect();
        let total_bytes: u64 = sizes.iter().sum();
        let total = files.len() as u64;
        let mut rows = Vec::new();
        let mut before = 0u64;
        let result = (|| {
            for (i, f) in files.iter().enumerate() {
                progress.emit(Progress::Units {
                    done_units: i as u64,
                    total_units: Some(total),
                });
                let out = asr::transcript_path(f, out_dir, opts.format);
                let started = Instant::now();
                let mut sent = |done: u64, _: u64| {
                    progress.emit(Progress::Bytes {
                        done_bytes: before + done,
                        total_bytes: Some(total_bytes),
                    })
                };
                let r = asr::transcribe_one(fwd.local_port, f, &out, opts, &mut sent, cancel);
                before += sizes[i];
                let mut row = TranscriptFile {
                    file: f.display().to_string(),
                    transcript: None,
                    audio_bytes: sizes[i],
                    transcript_bytes: 0,
                    took_ms: started.elapsed().as_millis() as u64,
                    error_code: None,
                    error: None,
                };
                match r {
                    Ok((_, got)) => {
                        row.transcript = Some(out.display().to_string());
                        row.transcript_bytes = got;
                    }
                    Err(e @ (AsrError::Refused { .. } | AsrError::Local { .. })) => {
                        row.error_code = Some(e.code().to_string());
                        row.error = Some(e.to_string());
                    }
                    Err(e) => return Err(RecipeError::from(e)),
                }
                rows.push(row);
            }
            progress.emit(Progress::Units {
                done_units: total,
                total_units: Some(total),
            });
            Ok(())
        })();
        let _ = fwd.stop();
        result?;
        let failed = rows.iter().filter(|r| r.error_code.is_some()).count() as u32;
        Ok(TranscribeReport {
            host: label.to_string(),
            transcribed: rows.len() as u32 - failed,
            failed,
            files: rows,
        })
    }

    /// The desktop's transcription, as the registered operation `recipe_transcribe` (cancel
    /// with its op id): [`App::recipe_transcribe_with_key`] with the host's own key.
    pub fn recipe_transcribe_op(
        &self,
        label: &str,
        files: &[PathBuf],
        opts: &TranscribeOptions,
        env: &SshEnv,
        progress: &dyn ProgressSink,
    ) -> Result<TranscribeReport, RecipeError> {
        self.run_op("recipe_transcribe", progress, |cancel| {
            let key = self.host_key_for(label, None)?;
            self.recipe_transcribe_with_key(label, env, &key, files, opts, progress, cancel)
        })
    }
}

/// The port of `http://127.0.0.1:PORT/…` (nothing else: no other host, scheme or userinfo).
fn loopback_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://127.0.0.1:")?;
    let end = rest.find('/')?;
    let port: u16 = rest[..end].parse().ok()?;
    (port != 0).then_some(port)
}

#[cfg(test)]
mod tests {
    use super::loopback_port;

    #[test]
    fn only_a_tunnels_loopback_url_is_opened() {
        assert_eq!(loopback_port("http://127.0.0.1:8188/"), Some(8188));
        assert_eq!(
            loopback_port("http://127.0.0.1:8888/?token=abc"),
            Some(8888)
        );
        for bad in [
            "http://127.0.0.1:8188",
            "http://127.0.0.1:0/",
            "http://127.0.0.1:99999/",
            "http://127.0.0.1:80@evil.example/",
            "http://127.0.0.1.evil.example:80/",
            "https://127.0.0.1:8188/",
            "file:///etc/passwd",
            "http://localhost:8188/",
        ] {
            assert_eq!(loopback_port(bad), None, "{bad}");
        }
    }
}
