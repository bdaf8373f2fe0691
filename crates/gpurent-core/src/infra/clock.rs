//! Time is passed into logic, never read inside it: production code uses [`SystemClock`], tests a
//! [`FixedClock`].

use std::time::{Duration, Instant};

/// Wall-clock time (milliseconds since the Unix epoch) for what is recorded, and monotonic time
/// plus sleeping for what waits (deadlines and polls: a stepped test clock or an NTP jump must
/// neither end nor stretch a wait). The wait half defaults to the process's own monotonic clock
/// and a thread sleep; a test clock may override both to run a long wait instantly.
pub trait Clock: Send + Sync {
    fn now_unix_ms(&self) -> i64;

    /// Monotonic time since an arbitrary start (only differences mean anything).
    fn monotonic(&self) -> Duration {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed()
    }

    /// Pause the calling thread (between polls, before a retry).
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that always says the same time (tests).
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub i64);

impl Clock for FixedClock {
    fn now_unix_ms(&self) -> i64 {
        self.0
    }
}
