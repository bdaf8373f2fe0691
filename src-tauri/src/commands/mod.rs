//! One file per domain. Each handler: state → one core call → map error.

pub mod billing;
pub mod catalog;
pub mod estimate;
pub mod explain;
pub mod files;
pub mod guard;
pub mod hosts;
pub mod keys;
pub mod monitor;
pub mod ops;
pub mod providers;
pub mod recipe;
pub mod release;
pub mod run;
pub mod settings;
pub mod setup;

use gpurent_core::app::login::SshEnv;

use crate::edge::{err, CmdResult};

/// The user's own `~/.ssh` files and ssh-agent (an edge concern: where this OS keeps them).
pub(crate) fn ssh_env() -> CmdResult<SshEnv> {
    SshEnv::detect().map_err(err)
}
