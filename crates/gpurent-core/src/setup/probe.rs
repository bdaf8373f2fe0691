//! The probe script sent to a host in one exec (`sh -s` with the script on stdin, or
//! `sh -c "$SCRIPT"`). Its output is parsed by [`super::parse::parse`].

/// The POSIX `sh` probe (see the header of `probe.sh` for its output format).
pub const SCRIPT: &str = include_str!("probe.sh");
