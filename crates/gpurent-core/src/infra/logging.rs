//! Logs go to a daily-rotated file in the logs dir (7 files kept). Never log secrets: the
//! [`crate::infra::secret::Secret`] type redacts itself, and nothing else should carry one.

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{Builder, Rotation};
use tracing_subscriber::EnvFilter;

use crate::infra::error::CoreError;
use crate::infra::paths::Paths;

/// Install the global file logger. Keep the returned guard alive for the life of the process (it
/// flushes on drop). `GPURENT_LOG` sets the filter (default `info`). Calling twice is harmless.
pub fn init_file_logging(paths: &Paths, file_prefix: &str) -> Result<WorkerGuard, CoreError> {
    std::fs::create_dir_all(&paths.logs).map_err(|e| CoreError::io(&paths.logs, e))?;
    let appender = Builder::new()
        .rotation(Rotation::DAILY)
        .filename_prefix(file_prefix)
        .filename_suffix("log")
        .max_log_files(7)
        .build(&paths.logs)
        .map_err(|e| CoreError::io(&paths.logs, std::io::Error::other(e)))?;
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = EnvFilter::try_from_env("GPURENT_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init();
    Ok(guard)
}
