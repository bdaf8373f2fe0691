//! `gpurent replay --list [--json]` and `gpurent replay NAME --host LABEL [--json] [-i FILE]`:
//! the environment recipes a release saved (`gpurent release … --save-recipe`), and one of them
//! replayed on another machine (its apt and pip packages installed into the Python Setup found
//! there). Output lines stream to stderr; `--json` prints a `ReplayReport` once it is done; exit 1
//! when the script failed (its last lines say why). docs/release.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use gpurent_core::app::login::SshEnv;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::{Progress, ProgressSink};
use gpurent_core::remote::RemoteError;

use crate::output::{fail, print_json};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The saved recipe's file name (`gpurent replay --list`).
    #[arg(required_unless_present = "list", conflicts_with = "list")]
    name: Option<String>,
    /// The saved host to replay it on.
    #[arg(long, required_unless_present = "list")]
    host: Option<String>,
    /// List the saved recipes instead.
    #[arg(long)]
    list: bool,
    #[arg(long)]
    json: bool,
    #[arg(long, short = 'i', value_name = "FILE")]
    identity: Option<PathBuf>,
}

/// The script's lines on stderr as they come.
struct Lines;
impl ProgressSink for Lines {
    fn emit(&self, event: Progress) {
        if let Progress::Log { line } = event {
            eprintln!("{}", gpurent_core::remote::clean_text(&line));
        }
    }
}

pub fn main(data_dir: Option<&Path>, a: &ReplayArgs) -> ExitCode {
    match run(data_dir, a) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => fail(&e, a.json),
    }
}

fn run(data_dir: Option<&Path>, a: &ReplayArgs) -> Result<bool, RemoteError> {
    let app = crate::open::open_app(data_dir)?;
    if a.list {
        let saved = app.env_recipes()?;
        if a.json {
            print_json(&serde_json::json!({ "recipes": saved }))?;
        } else if saved.is_empty() {
            println!("no environment recipe saved yet (gpurent release ID --save-recipe)");
        } else {
            for r in saved {
                println!("{}  (from {}, {} packages)", r.name, r.host, r.packages);
            }
        }
        return Ok(true);
    }
    let (Some(name), Some(host)) = (&a.name, &a.host) else {
        return Err(
            gpurent_core::CoreError::invalid("name", "give NAME --host LABEL, or --list").into(),
        );
    };
    let env = SshEnv::detect()?;
    let key = crate::open::host_key(&app, host, a.identity.as_deref())?;
    let cancel = CancelToken::new();
    let report =
        crate::interrupt::cancel_on_ctrl_c(crate::interrupt::Second::Exits, &cancel, || {
            app.env_recipe_replay_with_key(host, name, &env, &key, &Lines, &cancel)
        })?;
    if a.json {
        print_json(&report)?;
    } else if report.ok {
        println!(
            "{} replayed on {} (into {})",
            report.recipe, report.host, report.python
        );
    } else {
        println!(
            "{} FAILED on {} (exit {}): see the lines above",
            report.recipe,
            report.host,
            report.exit_status.map_or("?".into(), |s| s.to_string())
        );
    }
    Ok(report.ok)
}
