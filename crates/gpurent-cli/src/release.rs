//! `gpurent release INSTANCE [--folder PATH]... [--yes] [--json]`: terminate the machine; its disk
//! is deleted. On a terminal it first shows the release checklist (docs/release.md) — result
//! folders changed since they were last downloaded, the disks deleted, what stopping instead would
//! cost, the environment recipe — and asks; `--yes` skips the questions; `--json` prints the
//! checklist inside the result; `--checklist` only shows it.

use std::io::{BufRead, IsTerminal, Write};

use clap::Args;
use gpurent_core::app::login::SshEnv;
use gpurent_core::app::release::ReleaseChecklist;
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::providers::ProviderError;

use crate::output::print_json;

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The gpurent id (gpurent-…) or the provider's instance id — also of a machine gpurent did
    /// not start ("not started by gpurent — still billing"), released after a confirm.
    instance: String,
    /// The account whose machine it is (a provider id gpurent did not start, listed by several).
    #[arg(long)]
    account: Option<String>,
    /// A result folder on the machine to check against what was downloaded (repeatable).
    #[arg(long = "folder", value_name = "PATH")]
    folders: Vec<String>,
    /// Confirm (without it, a terminal is asked; elsewhere nothing is sent and the money is stated).
    #[arg(long)]
    yes: bool,
    /// Show the checklist only; release nothing.
    #[arg(long)]
    checklist: bool,
    /// Save the environment recipe without asking (with --yes or --checklist).
    #[arg(long)]
    save_recipe: bool,
    /// Print JSON: {"instance": InstanceView, "checklist": ReleaseChecklist|null, "recipe_path": …}
    /// (`--checklist`: {"checklist": …, "recipe_path": …}).
    #[arg(long)]
    pub json: bool,
}

fn ask(question: &str, default_yes: bool) -> bool {
    eprint!(
        "{question} {} ",
        if default_yes { "[Y/n]" } else { "[y/N]" }
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "" => default_yes,
        "y" | "yes" => true,
        _ => false,
    }
}

fn print_checklist(c: &ReleaseChecklist) {
    println!(
        "Before releasing {}{}:",
        c.instance.as_deref().unwrap_or(&c.target),
        c.provider.map(|p| format!(" ({p})")).unwrap_or_default()
    );
    if let Some(e) = &c.remote_error {
        println!(
            "  The machine could not be read ({}): folders and the environment were not checked.",
            e.code
        );
    }
    if c.folders.is_empty() && c.host.is_some() {
        println!("  No result folders were given (--folder PATH): nothing was compared with your downloads.");
    }
    for f in &c.changed {
        let what = if f.reason == "never_downloaded" {
            "never downloaded"
        } else {
            "changed since you last downloaded it"
        };
        println!(
            "  DOWNLOAD FIRST: {} — {} ({} file(s), e.g. {})",
            f.path,
            what,
            f.files_changed,
            f.sample.first().map(String::as_str).unwrap_or("-")
        );
    }
    for f in &c.unchanged {
        println!("  up to date: {f}");
    }
    for f in &c.missing {
        println!("  not on the machine: {f}");
    }
    for f in &c.unchecked {
        println!("  COULD NOT CHECK — download first: {f}");
    }
    if c.notes.iter().any(|n| n == "incomplete_read") {
        println!("  The machine's answer ended early (incomplete_read): what it did not reach was not checked.");
    }
    for d in &c.disks {
        println!(
            "  deleted: the {}{}",
            d.kind.replace('_', " "),
            d.size_gb.map(|g| format!(" ({g} GB)")).unwrap_or_default()
        );
    }
    let money = |v: f64, digits: usize| c.currency.format(v, digits);
    if let Some(s) = &c.stop_instead {
        if !s.possible {
            println!(
                "  this provider cannot stop the machine: release is the only way to stop paying"
            );
        } else if s.keeps_disk {
            println!(
                "  stopping instead keeps the disk for about {} a month ({}/h)",
                money(s.usd_per_month, 2),
                money(s.usd_per_hour, 4)
            );
        } else {
            println!("  stopping instead costs {} a month but does NOT keep the container disk (it is wiped on stop)", money(s.usd_per_month, 2));
        }
    }
    println!("  it costs {}/h now", money(c.usd_per_hour_now, 3));
    if let Some(r) = &c.recipe {
        println!(
            "  environment: {} pip package(s){}{}",
            r.pip_freeze.len(),
            r.torch_index
                .as_deref()
                .map(|i| format!(", PyTorch from {i}"))
                .unwrap_or_default(),
            if r.apt_packages.is_empty() {
                String::new()
            } else {
                format!(", apt: {}", r.apt_packages.join(" "))
            }
        );
    }
}

/// A machine gpurent did not start: what it is and costs, the user's yes (a terminal is asked;
/// elsewhere `--yes`), then the terminate, done only when the provider no longer shows it.
fn release_foreign(app: &App, args: &ReleaseArgs, tty: bool) -> Result<(), ProviderError> {
    let mut yes = args.yes;
    if !yes {
        let (acc, r) = app.foreign_find(&args.instance, args.account.as_deref())?;
        let what = format!(
            "{} ({} account {}{}) was not started by gpurent and is {}{}",
            r.id,
            acc.provider,
            acc.name,
            r.label
                .as_deref()
                .map(|l| format!(", named {l}"))
                .unwrap_or_default(),
            r.raw_status,
            r.price_per_hour_usd
                .map(|p| format!(" at ${p:.3}/h"))
                .unwrap_or_default()
        );
        if tty {
            eprintln!("{what}.");
            yes = ask(
                &format!("Release {}? This deletes the machine and its disk.", r.id),
                false,
            );
            if !yes {
                println!("Not released.");
                return Ok(());
            }
        } else if !args.json {
            eprintln!("gpurent: release {}: {what}; release deletes the machine and its disk. Run again with --yes to do it.", args.instance);
        }
    }
    let done = app.foreign_release(&args.instance, args.account.as_deref(), yes)?;
    if args.json {
        print_json(&serde_json::json!({ "instance": null, "foreign": done }))?;
    } else {
        println!(
            "{} released ({} says: {})",
            done.provider_instance_id, done.provider, done.state_after
        );
    }
    Ok(())
}

pub fn run(app: &App, args: &ReleaseArgs) -> Result<(), ProviderError> {
    let _ = app.providers_reconcile();
    let tty = std::io::stdin().is_terminal() && !args.json;
    if !app.instance_known(&args.instance)? {
        // `gpurent-…` is the shape of gpurent's own ids (no provider's): one missing from the
        // ledger is a typo or another machine's database, not a provider's machine to look up.
        if args.instance.starts_with("gpurent-") && args.account.is_none() {
            return Err(ProviderError::UnknownInstance(args.instance.clone()));
        }
        return release_foreign(app, args, tty);
    }
    let want_checklist = args.checklist || args.json || (tty && !args.yes);
    let checklist = if want_checklist {
        let env = SshEnv::detect()?;
        Some(app.release_checklist(
            &args.instance,
            &args.folders,
            &env,
            None,
            &CancelToken::new(),
        )?)
    } else {
        None
    };
    let mut recipe_path = None;
    let save = |c: &ReleaseChecklist| -> Result<Option<String>, ProviderError> {
        match &c.recipe {
            Some(r) => Ok(Some(app.release_save_recipe(r)?)),
            None => Ok(None),
        }
    };
    if let Some(c) = &checklist {
        if !args.json {
            print_checklist(c);
        }
        let wanted = args.save_recipe
            || (tty && c.recipe.is_some() && ask("Save the environment recipe?", true));
        if wanted {
            recipe_path = save(c)?;
        }
        if let (Some(p), false) = (&recipe_path, args.json) {
            println!("Recipe saved: {p}");
        }
    }
    if args.checklist {
        if args.json {
            print_json(&serde_json::json!({ "checklist": checklist, "recipe_path": recipe_path }))?;
        }
        return Ok(());
    }
    let mut yes = args.yes;
    if !yes && tty {
        yes = ask(
            &format!(
                "Release {}? This deletes the machine and its disk.",
                args.instance
            ),
            false,
        );
        if !yes {
            println!("Not released.");
            return Ok(());
        }
    }
    if !yes {
        // No terminal and no --yes: nothing is sent; the money is stated.
        return crate::instance_action::run_action(
            app,
            "release",
            &args.instance,
            false,
            args.json,
        );
    }
    let view = app.instance_action(&args.instance, "release", true)?;
    crate::instance_action::key_left_warning(app, "release", &view);
    if args.json {
        print_json(&serde_json::json!({
            "instance": view,
            "checklist": checklist,
            "recipe_path": recipe_path,
        }))?;
    } else {
        println!("{} is {}", view.ledger.id, view.ledger.state.as_str());
    }
    Ok(())
}
