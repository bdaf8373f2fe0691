//! Opening the core [`App`] the one way every subcommand does (paths from `--data-dir` or the
//! environment, the system clock, the OS locale).

use std::process::ExitCode;
use std::sync::Arc;

use std::path::Path;

use gpurent_core::app::login::LoginKey;
use gpurent_core::app::App;
use gpurent_core::infra::clock::SystemClock;
use gpurent_core::infra::paths::Paths;
use gpurent_core::infra::secret::Secret;
use gpurent_core::CoreError;

/// Open the app (the data folder and database) for one subcommand.
pub fn open_app(data_dir: Option<&std::path::Path>) -> Result<App, CoreError> {
    let paths = Paths::resolve(data_dir)?;
    App::open(
        paths,
        Arc::new(SystemClock),
        gpurent_core::infra::settings::os_locale(),
    )
}

/// Open the app and run one provider/instance subcommand with the error edge.
pub fn provider_cmd(
    data_dir: Option<&std::path::Path>,
    json: bool,
    f: impl FnOnce(&App) -> Result<(), gpurent_core::providers::ProviderError>,
) -> ExitCode {
    match open_app(data_dir)
        .map_err(gpurent_core::providers::ProviderError::from)
        .and_then(|app| f(&app))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => crate::output::fail(&e, json),
    }
}

/// The key an SSH subcommand logs in to `host` with: `--identity FILE` when given, else the
/// host's own key from the keychain (no passphrase asked here: a locked key is its error).
pub fn host_key(
    app: &App,
    host: &str,
    identity: Option<&Path>,
) -> Result<LoginKey, gpurent_core::remote::RemoteError> {
    match identity_file(identity)? {
        Some(k) => Ok(k),
        None => app.host_key_for(host, None),
    }
}

/// The `--identity FILE` of the SSH subcommands: a private key read from a file instead of the
/// host's own key from the keychain (not for `rent`, which also reads the `.pub`).
pub fn identity_file(path: Option<&Path>) -> Result<Option<LoginKey>, CoreError> {
    let Some(p) = path else { return Ok(None) };
    let pem = std::fs::read_to_string(p)
        .map_err(|e| CoreError::invalid("identity", format!("{}: {e}", p.display())))?;
    Ok(Some(LoginKey {
        label: "identity-file".into(),
        pem: Secret::new(pem),
        public_line: String::new(),
    }))
}
