//! Units shared by every step, so no step imports another for a constant.

/// 2^30 bytes.
pub const GIB: f64 = 1_073_741_824.0;
