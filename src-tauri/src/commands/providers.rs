//! Renting: provider accounts, live offers, rent with progress, the reconciled ledger and the
//! money actions. Each handler: state → one core call → map error (docs/providers.md).

use gpurent_core::app::providers::{
    AccountCheck, ForeignRelease, InstanceView, InstancesView, MoneyNote, OffersView, RentOptions,
    RentRequest,
};
use gpurent_core::infra::events::Progress;
use gpurent_core::infra::secret::Secret;
use gpurent_core::providers::accounts::Account;
use gpurent_core::providers::{OfferQuery, ProviderKind, ProviderOffer};
use tauri::ipc::Channel;
use tauri::State;

use crate::commands::ops::{blocking, sink};
use crate::commands::ssh_env;
use crate::edge::{err, CmdResult};
use crate::state::AppState;

#[tauri::command]
pub async fn provider_list(state: State<'_, AppState>) -> CmdResult<Vec<Account>> {
    state.app()?.provider_list().map_err(err)
}

#[tauri::command]
pub async fn provider_add(
    state: State<'_, AppState>,
    provider: ProviderKind,
    name: Option<String>,
    key: Secret,
) -> CmdResult<AccountCheck> {
    let app = state.shared()?;
    blocking(move || {
        app.provider_add(provider, name.as_deref(), key)
            .map_err(err)
    })
    .await
}

#[tauri::command]
pub async fn provider_test(state: State<'_, AppState>, name: String) -> CmdResult<AccountCheck> {
    let app = state.shared()?;
    blocking(move || app.provider_test(&name).map_err(err)).await
}

#[tauri::command]
pub async fn provider_remove(state: State<'_, AppState>, name: String) -> CmdResult<()> {
    // Deletes the account's key from the keychain: off the async runtime.
    let app = state.shared()?;
    blocking(move || app.provider_remove(&name).map_err(err)).await
}

#[tauri::command]
pub async fn offers_list(
    state: State<'_, AppState>,
    provider: Option<ProviderKind>,
    query: OfferQuery,
) -> CmdResult<OffersView> {
    let app = state.shared()?;
    blocking(move || app.offers(provider, &query).map_err(err)).await
}

#[tauri::command]
pub async fn instances_list(state: State<'_, AppState>) -> CmdResult<InstancesView> {
    let app = state.shared()?;
    blocking(move || app.instances().map_err(err)).await
}

#[tauri::command]
pub async fn instance_money(
    state: State<'_, AppState>,
    instance: String,
    action: String,
) -> CmdResult<MoneyNote> {
    state.app()?.instance_money(&instance, &action).map_err(err)
}

/// Stop, start or release; the UI calls it with `yes` after showing `instance_money`.
#[tauri::command]
pub async fn instance_action(
    state: State<'_, AppState>,
    instance: String,
    action: String,
    yes: bool,
) -> CmdResult<InstanceView> {
    let app = state.shared()?;
    blocking(move || app.instance_action(&instance, &action, yes).map_err(err)).await
}

/// Release a machine gpurent did not start, by its provider id on the named account; the UI
/// calls it with `yes` after the user confirmed (done only on the provider's answer).
#[tauri::command]
pub async fn foreign_release(
    state: State<'_, AppState>,
    provider_instance_id: String,
    account: String,
    yes: bool,
) -> CmdResult<ForeignRelease> {
    let app = state.shared()?;
    blocking(move || {
        app.foreign_release(&provider_instance_id, Some(&account), yes)
            .map_err(err)
    })
    .await
}

/// The rent flow's choices and money for an offer (images, terms, price now, stopped storage);
/// with a disk chosen, the offer is read again priced at that disk (a provider call).
#[tauri::command]
pub async fn rent_options(
    state: State<'_, AppState>,
    offer: ProviderOffer,
    disk_gb: Option<u32>,
) -> CmdResult<RentOptions> {
    let app = state.shared()?;
    blocking(move || app.rent_options_at(&offer, disk_gb).map_err(err)).await
}

#[tauri::command]
pub async fn rent(
    state: State<'_, AppState>,
    request: RentRequest,
    key_label: String,
    passphrase: Option<Secret>,
    on_progress: Channel<Progress>,
) -> CmdResult<InstanceView> {
    let (app, env) = (state.shared()?, ssh_env()?);
    blocking(move || {
        app.rent_op(
            &request,
            &key_label,
            passphrase.as_ref(),
            &env,
            &sink(on_progress),
        )
        .map_err(err)
    })
    .await
}

/// How often the running app reconciles the ledger with every account's instance list.
const RECONCILE_EVERY: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// Reconcile once at start and then every [`RECONCILE_EVERY`] while the app runs, on a plain
/// background thread (the core call blocks on HTTP). Nothing is emitted to the window: the
/// result is in the ledger, which the Rented list reads; a failure is logged by its code only.
pub fn spawn_reconcile(app: std::sync::Arc<gpurent_core::app::App>) {
    let spawned = std::thread::Builder::new()
        .name("gpurent-reconcile".into())
        .spawn(move || loop {
            match app.providers_reconcile() {
                Ok((report, _)) => tracing::info!(
                    adopted = report.adopted.len(),
                    updated = report.updated.len(),
                    closed = report.closed.len(),
                    foreign = report.foreign.len(),
                    failed = report.failed_accounts.len(),
                    "reconciled the instance ledger"
                ),
                Err(e) => {
                    use gpurent_core::infra::ipc::Coded;
                    tracing::warn!(code = e.code(), "reconcile failed");
                }
            }
            std::thread::sleep(RECONCILE_EVERY);
        });
    if let Err(e) = spawned {
        tracing::warn!("could not start the reconcile thread: {e}");
    }
}
