//! One file per domain. Each handler: state → one core call → map error.

pub mod catalog;
pub mod estimate;
pub mod files;
pub mod hosts;
pub mod keys;
pub mod ops;
pub mod settings;
pub mod setup;
