//! # gpurent-core
//!
//! Everything gpurent knows and does, with no GUI in its dependency tree. The desktop shell
//! (`src-tauri`) and the CLI (`gpurent-cli`) are thin edges over this crate.
//!
//! [`app`] is the facade each Tauri command and CLI subcommand calls once: `app/mod.rs` holds
//! the shared core (paths, store, clock, operations), and one file per step puts that step's
//! domain on it (`app/estimate.rs`, `keys.rs`, `hosts.rs`, `setup.rs`, `transfer.rs`, with
//! `login.rs` the one way into a saved host). Domain modules never carry `impl App`:
//!
//! - Pick a card: [`catalog`] (GPU specs with sources and confidence, advice), [`estimate`]
//!   (memory / speed / time / cost per job, fit verdicts, explanations; the job on the local GPU),
//!   [`localgpu`] (NVML; none found is a normal answer), [`prices`] (the user's own prices).
//! - Keys: [`keys`] (SSH keys whose private half lives only in the OS keychain).
//! - Hosts: [`hostparse`] (pasted console text into a host), [`remote`] (SSH: typed outcomes,
//!   pinned host keys, exec, key install, `~/.ssh/config`, the agent), [`opener`] (terminals and
//!   links opened without a shell).
//! - Setup: [`setup`] (the probe, its parser, diagnosis, fix plan and GPU check) over [`compat`]
//!   (driver / CUDA / PyTorch / architecture tables); [`explain`] (error text → cause and fix, on
//!   this host).
//! - Files: [`transfer`] (uploads/downloads with resume, SHA-256 verify, tar streams;
//!   `docs/transfer.md`).
//! - Renting: [`providers`] (RunPod, Vast.ai, Lambda behind one trait, the instance ledger and
//!   its reconcile; `docs/providers.md`; facade `app/providers.rs`).
//! - Monitor and run: [`monitor`], [`ollama`], [`jupyter`], [`multigpu`].
//! - Billing: [`billing`] (cost, rates, budgets), [`guard`] (the guard on the machine),
//!   [`second_guard`] (the app as a second guard), [`release`] (the release checklist).
//! - Settings: [`selfcheck`] (the app's health check).
//! - [`infra`]: the plumbing under every step (store, settings, paths, typed errors and the wire
//!   shape, progress and cancel, clock, secrets, logging, file permissions, processes, units).

pub mod app;
pub mod billing;
pub mod catalog;
pub mod compat;
pub mod estimate;
pub mod explain;
pub mod guard;
pub mod hostparse;
pub mod infra;
pub mod jupyter;
pub mod keys;
pub mod localgpu;
pub mod monitor;
pub mod multigpu;
pub mod ollama;
pub mod opener;
pub mod prices;
pub mod providers;
pub mod recipes;
pub mod release;
pub mod remote;
pub mod second_guard;
pub mod selfcheck;
pub mod setup;
pub mod transfer;

pub use infra::error::CoreError;
pub use infra::ipc::Coded;

/// The version of this build (the workspace version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
