//! Recipes: a goal in words, end to end. Each recipe is data (`data/recipes/NAME.json`, bundled
//! here): the job it sizes (a job kind of Pick a card, or an LLM tag), the image per CUDA line with
//! the minimum host driver, the ports and how each is reached (always a gpurent tunnel to the
//! host's 127.0.0.1), env vars, disk, the start command, the readiness check, what does not ship
//! and how it is fetched, the guard defaults and the release checklist's result folders.
//! `App::recipe_run` (app/recipe.rs) runs one on a saved host with the existing steps.

pub mod asr;
pub mod offers;
pub mod web;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::estimate::kinds::JobKind;
use crate::infra::error::CoreError;

/// The bundled recipe files, by name (the file name without `.json`).
const FILES: &[(&str, &str)] = &[
    (
        "ollama-chat",
        include_str!("../../data/recipes/ollama-chat.json"),
    ),
    ("comfyui", include_str!("../../data/recipes/comfyui.json")),
    (
        "jupyter-pytorch",
        include_str!("../../data/recipes/jupyter-pytorch.json"),
    ),
    ("whisper", include_str!("../../data/recipes/whisper.json")),
    (
        "lora-training",
        include_str!("../../data/recipes/lora-training.json"),
    ),
];

/// RecipeWords in the two languages the app speaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeWords {
    pub en: String,
    pub zh_cn: String,
}

/// What Pick a card sizes for this goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RecipeJob {
    /// A job kind of `job-figures.csv` with its model and setting (None: the model's first).
    Kind {
        kind: JobKind,
        model: String,
        setting: Option<String>,
    },
    /// An LLM by its Ollama tag (the LLM estimate and Ollama's memory check).
    Llm { model: String },
    /// No one job: any card the image supports (a notebook).
    Any,
}

/// How gpurent starts the app: the existing Run steps, or the recipe's own start command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RecipeApp {
    /// Run -> Ollama (`ollama::serve`, loopback only).
    Ollama,
    /// Run -> Jupyter (`jupyter::start`, loopback only, with gpurent's token).
    Jupyter,
    /// The recipe's `start` command, supervised by gpurent ([`web`]).
    Web,
}

/// One image of the recipe, for one CUDA line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeImage {
    /// The CUDA line the image is built for (`12.8`, `13.0`).
    pub cuda: String,
    pub image: String,
    /// The minimum host driver (Linux), dotted (`570.26`); a host below it cannot start it.
    pub min_driver: String,
    pub source: String,
}

/// How a port is reached: only through a gpurent tunnel (an SSH local forward to the host's
/// 127.0.0.1). There is no other value: a public port cannot be written in a recipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum PortReach {
    Tunnel,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipePort {
    pub name: String,
    /// The app's usual port on the host (gpurent may pick a free one instead).
    pub port: u16,
    /// The address the app listens on: `127.0.0.1`.
    pub bind: String,
    pub reach: PortReach,
    /// What protects it (a token, or "none": reached only through the tunnel).
    pub auth: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeEnv {
    pub name: String,
    /// `{port}` is the host port.
    pub value: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeDisk {
    pub container_gb: u32,
    /// 0: no volume.
    pub volume_gb: u32,
    pub mount: String,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeReadiness {
    /// The URL path asked through the tunnel.
    pub path: String,
    /// The HTTP status that means ready.
    pub status: u16,
    /// The expected first boot, seconds (gpurent waits this long, then reports not answering).
    pub first_boot_s: u32,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeFetch {
    pub what: String,
    pub fetch: String,
    /// What and how, in Chinese (one sentence).
    pub zh_cn: String,
    /// The env var a token goes in on the host (never stored in a recipe).
    pub needs_token: Option<String>,
}

/// The guard gpurent proposes (the action is the host's preferred one: stop for a rented
/// machine, poweroff for a pasted host; see `App::guard_view`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeGuard {
    pub idle_minutes: u64,
    pub util_below: u32,
    pub deadline: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    pub goal: RecipeWords,
    pub job: RecipeJob,
    pub app: RecipeApp,
    pub images: Vec<RecipeImage>,
    pub ports: Vec<RecipePort>,
    pub env: Vec<RecipeEnv>,
    pub disk: RecipeDisk,
    /// The start command (`{port}` is the host port); for `ollama`/`jupyter` what gpurent's
    /// existing step runs, for `web` what it runs under its supervision.
    pub start: String,
    pub readiness: RecipeReadiness,
    pub not_shipped: Vec<RecipeFetch>,
    pub guard: RecipeGuard,
    /// Where the user's own input goes on the host (a LoRA's dataset), uploaded from the goal
    /// screen through Files' transfer; `None`: the app takes nothing from this machine (or, as
    /// Whisper, takes it through its own API).
    #[serde(default)]
    pub inputs: Option<RecipeInputs>,
    /// Folders the release checklist names (results to download before release).
    pub results: Vec<String>,
    pub sources: Vec<String>,
    /// Facts not confirmed (shown as "unverified"), in both languages.
    pub unverified: Vec<RecipeWords>,
}

/// The folder on the host a recipe's input is uploaded to, and what goes there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RecipeInputs {
    pub folder: String,
    pub what: RecipeWords,
}

impl Recipe {
    /// The first port (the one Open goes to).
    pub fn main_port(&self) -> Result<&RecipePort, CoreError> {
        self.ports
            .first()
            .ok_or_else(|| CoreError::invalid("recipe", format!("{} has no port", self.name)))
    }

    /// The start command for host port `port`.
    pub fn start_command(&self, port: u16) -> String {
        self.start.replace("{port}", &port.to_string())
    }

    /// The env vars for host port `port`.
    pub fn env_for(&self, port: u16) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|e| (e.name.clone(), e.value.replace("{port}", &port.to_string())))
            .collect()
    }

    /// The images a host with driver `driver` (dotted, as `nvidia-smi` prints it) can start,
    /// newest CUDA line first.
    pub fn images_for_driver(&self, driver: &str) -> Vec<&RecipeImage> {
        let mut v: Vec<&RecipeImage> = self
            .images
            .iter()
            .filter(|i| driver_at_least(driver, &i.min_driver))
            .collect();
        v.sort_by_key(|i| std::cmp::Reverse(version_key(&i.cuda)));
        v
    }

    /// The images a host whose driver runs CUDA `host_cuda` (what `nvidia-smi` prints as "CUDA
    /// Version", what providers list per offer) can start, newest CUDA line first: an image's
    /// CUDA line must not be newer than the host's (no 13.0 image on a 12.8 host).
    pub fn images_for_host_cuda(&self, host_cuda: &str) -> Vec<&RecipeImage> {
        let mut v: Vec<&RecipeImage> = self
            .images
            .iter()
            .filter(|i| driver_at_least(host_cuda, &i.cuda))
            .collect();
        v.sort_by_key(|i| std::cmp::Reverse(version_key(&i.cuda)));
        v
    }

    /// The lowest host driver any of its images accepts.
    pub fn min_driver(&self) -> Option<&str> {
        self.images
            .iter()
            .min_by(|a, b| version_key(&a.min_driver).cmp(&version_key(&b.min_driver)))
            .map(|i| i.min_driver.as_str())
    }
}

/// `570.124.06` → [570, 124, 6]; a part that is not a number counts as 0.
pub fn version_key(v: &str) -> Vec<u64> {
    v.trim()
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// `driver >= floor`, part by part (`570.26` < `570.124.06`: 26 < 124).
pub fn driver_at_least(driver: &str, floor: &str) -> bool {
    let (mut d, mut f) = (version_key(driver), version_key(floor));
    let n = d.len().max(f.len());
    d.resize(n, 0);
    f.resize(n, 0);
    d >= f
}

/// Every bundled recipe, in the order the goal picker shows them.
pub fn all() -> Result<Vec<Recipe>, CoreError> {
    FILES.iter().map(|(name, text)| parse(name, text)).collect()
}

/// One bundled recipe by name: `unknown_recipe` (invalid input) when there is none.
pub fn get(name: &str) -> Result<Recipe, CoreError> {
    let Some((n, text)) = FILES.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
        return Err(CoreError::invalid(
            "recipe",
            format!("no recipe {name:?} (recipes: {})", names.join(", ")),
        ));
    };
    parse(n, text)
}

/// Parse and check one recipe file.
pub fn parse(name: &str, text: &str) -> Result<Recipe, CoreError> {
    let r: Recipe = serde_json::from_str(text)
        .map_err(|e| CoreError::invalid("recipe", format!("{name}.json: {e}")))?;
    validate(&r).map_err(|e| CoreError::invalid("recipe", format!("{name}.json: {e}")))?;
    if r.name != name {
        return Err(CoreError::invalid(
            "recipe",
            format!("{name}.json names itself {:?}", r.name),
        ));
    }
    Ok(r)
}

/// The rules every recipe keeps: ports bound to 127.0.0.1 and reached through the tunnel (a
/// start command or env var that opens 0.0.0.0 is refused), every image with a CUDA line, a
/// driver floor and a source, a readiness path, sources present.
pub fn validate(r: &Recipe) -> Result<(), String> {
    if r.goal.en.trim().is_empty() || r.goal.zh_cn.trim().is_empty() {
        return Err("the goal needs words in en and zh-CN".into());
    }
    if r.ports.is_empty() {
        return Err("no port".into());
    }
    for p in &r.ports {
        if p.bind != "127.0.0.1" || p.reach != PortReach::Tunnel {
            return Err(format!("port {} is not tunnel-only on 127.0.0.1", p.name));
        }
        if p.auth.trim().is_empty() {
            return Err(format!("port {} does not say what protects it", p.name));
        }
    }
    let opens_public = |s: &str| s.contains("0.0.0.0") || s.contains("[::]") || s.contains("::/0");
    if opens_public(&r.start) || r.env.iter().any(|e| opens_public(&e.value)) {
        return Err("the start command or an env var listens on every address".into());
    }
    if r.app == RecipeApp::Web && !r.start.contains("127.0.0.1") {
        return Err("a web app's start command must bind 127.0.0.1".into());
    }
    if r.app == RecipeApp::Web && !r.start.contains("{port}") {
        return Err("a web app's start command must take {port}".into());
    }
    if r.images.is_empty() {
        return Err("no image".into());
    }
    for i in &r.images {
        if i.cuda.trim().is_empty() || i.image.trim().is_empty() || i.source.trim().is_empty() {
            return Err(format!("image {:?} lacks its CUDA line or source", i.image));
        }
        if version_key(&i.min_driver).first().copied().unwrap_or(0) < 300 {
            return Err(format!("image {:?} has no driver floor", i.image));
        }
    }
    if !r.readiness.path.starts_with('/') || r.readiness.first_boot_s == 0 {
        return Err("the readiness check needs a path and a first boot time".into());
    }
    if r.readiness.source.trim().is_empty() || r.sources.is_empty() {
        return Err("sources missing".into());
    }
    if r.guard.idle_minutes == 0 {
        return Err("the guard's idle minutes must be at least 1".into());
    }
    if r.unverified
        .iter()
        .any(|u| u.en.trim().is_empty() || u.zh_cn.trim().is_empty())
    {
        return Err("every unverified fact needs words in en and zh-CN".into());
    }
    if r.not_shipped.iter().any(|n| n.zh_cn.trim().is_empty()) {
        return Err("every thing not shipped needs its words in zh-CN".into());
    }
    if let Some(i) = &r.inputs {
        if !i.folder.starts_with('/')
            || i.what.en.trim().is_empty()
            || i.what.zh_cn.trim().is_empty()
        {
            return Err("the inputs need an absolute folder and words in en and zh-CN".into());
        }
    }
    Ok(())
}
