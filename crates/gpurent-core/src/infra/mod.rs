//! Plumbing under every step: nothing here knows a product step (no renting, no SSH, no GPUs), and
//! every step may use it. The folder exists so the crate root lists the product's steps.
//!
//! - [`store`] — SQLite with append-only migrations; [`settings`] — language/theme in an atomic
//!   JSON file; [`paths`] — the one module that decides where files live (`GPURENT_HOME`).
//! - [`error`] — [`CoreError`](error::CoreError), the foundation's typed outcomes; [`ipc`] — the
//!   [`Coded`](ipc::Coded) trait and the `{code, message, detail?, data?}` wire shape it fills.
//! - [`events`] and [`cancel`] — progress and cancellation of long work; [`opnotice`] — whether an
//!   operation that just ended deserves an OS notification.
//! - [`clock`] (time passed in), [`secret`] (the redacting wrapper), [`logging`], [`fsperm`]
//!   ("only you can read this file" on every OS), [`process`] (helper processes without a console
//!   window), [`units`] (GIB), [`currency`] (CNY/USD, never converted).

pub mod cancel;
pub mod clock;
pub mod currency;
pub mod error;
pub mod events;
pub mod fsperm;
pub mod ipc;
pub mod logging;
pub mod opnotice;
pub mod paths;
pub mod process;
pub mod secret;
pub mod settings;
pub mod store;
pub mod units;
