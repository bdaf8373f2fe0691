//! The setup wizard's core, independent of SSH: the one-round-trip probe script and its parser,
//! the diagnosis with stable codes, the fix planner, pip progress parsing, and the GPU verify
//! script. The SSH path is "run [`probe::SCRIPT`] on the host, feed its output to
//! [`crate::app::App::setup_from_probe`]": the same parser and diagnosis as offline.

pub mod cards;
pub mod checks;
pub mod diagnose;
pub mod distro;
pub mod error;
pub mod facts;
pub mod fix;
pub mod parse;
pub mod pip;
pub mod plan;
pub mod probe;
pub mod probe_store;
pub mod redact;
pub mod report;
pub mod verify;

pub use diagnose::diagnose;
pub use facts::*;
pub use report::*;
pub use verify::{VerifiedGpu, VerifyIssue, VerifyReport};
