//! # gpurent-core
//!
//! Everything gpurent knows and does, with no GUI in its dependency tree. The desktop shell
//! (`src-tauri`) and the CLI (`gpurent-cli`) are thin edges over this crate.
//!
//! - [`app`]: the facade each Tauri command and CLI subcommand calls once.
//! - [`paths`]: the one module that decides where files live (`GPURENT_HOME` redirects it).
//! - [`catalog`]: GPU specs with sources and confidence, filters and plain-language advice.
//! - [`estimate`]: memory / speed / time / cost estimates per job, fit verdicts per card, explanations.
//! - [`localgpu`]: the local NVIDIA GPUs via NVML (none found is a normal answer, not an error).
//! - [`compat`]: driver / CUDA / PyTorch / GPU-architecture compatibility data.
//! - [`wizard`]: the setup wizard's probe, parser, diagnosis, fix plan and verify (SSH-independent).
//!   [`app_doctor`] runs it over SSH (probe, fix with progress and cancel, verify).
//! - [`store`]: SQLite with append-only migrations.
//! - [`prices`]: the user's own GPU prices, remembered (gpurent ships none it cannot source).
//! - [`remote`]: SSH to rented hosts (typed outcomes, pinned host keys, exec, key install,
//!   `~/.ssh/config`); [`app_hosts`] puts it on the facade.
//! - [`keys`]: SSH keys whose private half lives only in the OS keychain ([`app_keys`] on the
//!   facade); [`hostparse`]: pasted console text (`ssh -p … user@host`, 密码：…) into a host.
//! - [`transfer`]: uploads/downloads with resume, SHA-256 verify, tar streams for many files
//!   ([`app_transfer`] on the facade; `docs/transfer.md`).
//! - [`settings`]: language and theme preferences, written atomically.
//! - [`error`]: typed errors with stable codes; [`ipc`]: the `{code, message, detail?}` wire shape.
//! - [`events`] and [`cancel`]: progress events and cancellation for long work.
//! - [`selfcheck`]: the app's own health check, the first long operation on that plumbing.
//! - [`clock`], [`secret`], [`logging`]: time passed in, redacted secrets, rotating file logs.

pub mod app;
pub mod app_doctor;
pub mod app_estimate;
pub mod app_hosts;
pub mod app_hosts_flow;
pub mod app_hosts_keys;
pub mod app_keys;
pub mod app_local;
pub mod app_setup;
pub mod app_transfer;
pub mod app_wizard;
pub mod cancel;
pub mod catalog;
pub mod clock;
pub mod compat;
pub mod error;
pub mod estimate;
pub mod events;
pub mod hostparse;
pub mod ipc;
pub mod keys;
pub mod launch;
pub mod localgpu;
pub mod logging;
pub mod paths;
pub mod prices;
pub mod remote;
pub mod secret;
pub mod selfcheck;
pub mod settings;
pub mod store;
pub mod transfer;
pub mod wizard;

pub use error::{Coded, CoreError};

/// The version of this build (the workspace version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
