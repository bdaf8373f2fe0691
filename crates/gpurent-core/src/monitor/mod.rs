//! Watching a rented host while a job runs: GPU and host telemetry, and hints that turn the
//! counters into advice. `docs/monitor.md` has the design and the CLI's JSON.
//!
//! - [`telemetry`]: the one list of `nvidia-smi --query-gpu` fields and the one parser (by header
//!   name, surviving fields a driver lacks), `--query-compute-apps` rows. The idle guard reads the
//!   same fields through the same parser.

pub mod hints;
pub mod hoststats;
pub mod stream;
pub mod telemetry;
pub mod watch;
