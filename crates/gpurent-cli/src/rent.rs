//! `gpurent rent`: create a machine from an offer and wait until a key login is proven
//! (docs/providers.md). The ledger row is written before the create; a crash at any point is
//! recovered by the next `gpurent instances`.

use std::path::PathBuf;

use clap::Args;
use gpurent_core::app::login::{LoginKey, SshEnv};
use gpurent_core::app::providers::RentRequest;
use gpurent_core::app::App;
use gpurent_core::infra::cancel::CancelToken;
use gpurent_core::infra::events::{NoProgress, Progress};
use gpurent_core::infra::secret::Secret;
use gpurent_core::providers::ProviderError;

use crate::output::print_json;

#[derive(Debug, Args)]
pub struct RentArgs {
    /// runpod, vast or lambda.
    #[arg(long)]
    provider: String,
    /// Which account of the provider (from `gpurent provider list`; default: the first).
    #[arg(long, value_name = "NAME")]
    account: Option<String>,
    /// The offer id from `gpurent offers`.
    #[arg(long)]
    offer: String,
    /// The image (default: the provider's PyTorch image, data/provider-images.csv).
    #[arg(long)]
    image: Option<String>,
    /// Disk in GB (default 50).
    #[arg(long, value_name = "GB")]
    disk: Option<u32>,
    /// The gpurent key (from `gpurent key list`) to register and log in with.
    #[arg(long, value_name = "LABEL")]
    key: Option<String>,
    /// Or an unencrypted private key file (FILE.pub next to it has the public line).
    #[arg(long, short = 'i', value_name = "FILE", conflicts_with = "key")]
    identity: Option<PathBuf>,
    /// Return after the create, without waiting for the machine to be ready.
    #[arg(long)]
    no_wait: bool,
    /// Seconds to wait for a proven key login (default: RunPod/Vast 1200, Lambda 1800).
    #[arg(long, value_name = "SECONDS")]
    ready_timeout: Option<u64>,
    /// The most per hour you accept (USD, the whole machine): refused with `price_rose` when the
    /// offer, read again just before the create, costs more. Default: the price you confirm.
    #[arg(long, value_name = "USD")]
    max_price: Option<f64>,
    /// Rent without asking (required off a terminal: renting spends money).
    #[arg(long)]
    yes: bool,
    /// Print JSON: {"instance": InstanceView}.
    #[arg(long)]
    pub json: bool,
}

impl RentArgs {
    /// The rent a recipe asks for (`gpurent recipe run NAME --provider P --offer ID`): its image
    /// and disk, the same confirmation (`--yes`) and key choice as `gpurent rent`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn for_recipe(
        provider: &str,
        account: Option<String>,
        offer: &str,
        image: Option<String>,
        disk: u32,
        key: Option<String>,
        identity: Option<PathBuf>,
        max_price: Option<f64>,
        yes: bool,
        json: bool,
    ) -> RentArgs {
        RentArgs {
            provider: provider.to_string(),
            account,
            offer: offer.to_string(),
            image,
            disk: Some(disk),
            key,
            identity,
            no_wait: false,
            ready_timeout: None,
            max_price,
            yes,
            json,
        }
    }
}

/// Renting spends money: the price is stated and confirmed first (a terminal is asked; elsewhere
/// `--yes` is required and nothing is created without it). Returns the most per hour the rent
/// may cost: `--max-price`, else the price just confirmed.
pub(crate) fn confirm_price(
    app: &App,
    provider: gpurent_core::providers::ProviderKind,
    args: &RentArgs,
) -> Result<Option<f64>, ProviderError> {
    use std::io::{BufRead, IsTerminal, Write};
    if let Some(m) = args.max_price {
        if !(m.is_finite() && m > 0.0) {
            return Err(
                gpurent_core::CoreError::invalid("max_price", "must be a number > 0").into(),
            );
        }
    }
    if args.yes {
        return Ok(args.max_price);
    }
    // Priced at the disk the rent creates (Vast's price includes the disk's storage).
    let disk = args.disk.unwrap_or(provider.spec().default_disk_gb);
    let offer = app.offer_read_at(provider, args.account.as_deref(), &args.offer, disk)?;
    let price = offer.price_per_hour_usd;
    let sign = offer.currency.symbol();
    let words = format!(
        "{} x {} from {} at {sign}{price:.3}/h (about {sign}{:.2} a day) until you stop or release it{}",
        offer.gpu_count,
        offer.gpu,
        provider,
        price * 24.0,
        match &offer.price_source {
            // AutoDL quotes no price before the create.
            Some(src) => format!(
                "; {provider} quotes no price before the create: this is its documented rate ({src}); the machine's own rate is shown once it exists"
            ),
            None => String::new(),
        }
    );
    if !std::io::stdin().is_terminal() || args.json {
        eprintln!(
            "gpurent: rent {}: {words}. Run again with --yes to rent it.",
            args.offer
        );
        return Err(ProviderError::ConfirmationRequired {
            summary: serde_json::json!({
                "provider": provider,
                "offer_id": offer.offer_id,
                "gpu": offer.gpu,
                "gpu_count": offer.gpu_count,
                "price_per_hour_usd": price,
                "currency": offer.currency,
                "price_source": offer.price_source,
            })
            .to_string(),
        });
    }
    eprint!("Rent {words}? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    if !matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        return Err(gpurent_core::CoreError::Cancelled.into());
    }
    Ok(Some(args.max_price.map_or(price, |m| m.min(price))))
}

pub(crate) fn login_key(app: &App, args: &RentArgs) -> Result<LoginKey, ProviderError> {
    if let Some(p) = &args.identity {
        let read = |p: &std::path::Path| {
            std::fs::read_to_string(p).map_err(|e| gpurent_core::CoreError::io(p, e))
        };
        let pem = Secret::new(read(p)?);
        let mut pub_path = p.clone().into_os_string();
        pub_path.push(".pub");
        let public_line = read(std::path::Path::new(&pub_path))?.trim().to_string();
        return Ok(LoginKey {
            label: "identity-file".into(),
            pem,
            public_line,
        });
    }
    let label = match &args.key {
        Some(l) => l.clone(),
        None => app
            .key_list()?
            .into_iter()
            .next()
            .map(|k| k.label)
            .ok_or_else(|| {
                gpurent_core::CoreError::invalid(
                    "key",
                    "no key yet: gpurent key new NAME, or pass --key / --identity",
                )
            })?,
    };
    Ok(app.host_login_key(&label, None)?)
}

pub fn run(app: &App, args: &RentArgs) -> Result<(), ProviderError> {
    let provider = crate::provider::kind(&args.provider)?;
    // A machine a crashed run left behind is adopted before anything new is created (and an
    // unclear earlier create is resolved by `App::rent` itself, which refuses to create while
    // it cannot ask the provider). What the reconcile could not do is said, not dropped.
    match app.providers_reconcile() {
        Ok((report, _)) => {
            for f in &report.failed_accounts {
                eprintln!(
                    "gpurent: warning: could not list the machines of account {} ({}): {}",
                    f.account, f.code, f.message
                );
            }
            for id in report.adopted.iter().chain(&report.reopened) {
                eprintln!("gpurent: {id} is at the provider and bills (see gpurent instances)");
            }
        }
        Err(e) => eprintln!(
            "gpurent: warning: the ledger could not be reconciled ({})",
            gpurent_core::Coded::code(&e)
        ),
    }
    let key = login_key(app, args)?;
    let env = SshEnv::detect()?;
    let max_price_usd = confirm_price(app, provider, args)?;
    let req = RentRequest {
        provider,
        offer_id: args.offer.clone(),
        image: args.image.clone(),
        disk_gb: args.disk,
        no_wait: args.no_wait,
        ready_timeout_s: args.ready_timeout,
        account: args.account.clone(),
        max_price_usd,
    };
    let json = args.json;
    let printer = move |p: Progress| {
        if !json {
            match p {
                Progress::Step { step, .. } => eprintln!("gpurent: {step}"),
                Progress::Log { line } => eprintln!("gpurent: {line}"),
                _ => {}
            }
        }
    };
    let sink: &dyn gpurent_core::infra::events::ProgressSink =
        if json { &NoProgress } else { &printer };
    let view = match app.rent(&req, &key, &env, sink, &CancelToken::new()) {
        Ok(v) => v,
        Err(e @ ProviderError::NotReady { .. }) => {
            if let ProviderError::NotReady { id, .. } = &e {
                eprintln!("gpurent: {id} still bills; release it with: gpurent release {id} --yes");
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    if args.json {
        print_json(&serde_json::json!({ "instance": view }))?;
    } else {
        println!(
            "{} {} ({}) {}x {} at {}{:.3}/h{}",
            view.ledger.id,
            view.ledger.state.as_str(),
            view.ledger.provider,
            view.ledger.gpu_count,
            view.ledger.gpu,
            view.terms.currency.symbol(),
            view.ledger.price_per_hour_usd,
            if view.ready {
                " — ready: gpurent host check ".to_string() + &view.ledger.id
            } else {
                String::new()
            }
        );
    }
    Ok(())
}
