//! Progress for a whole put/get: cumulative bytes and files across its transfers and streams
//! (threads add concurrently), emitted as `Progress::Bytes` / `Progress::Units` at most every
//! 100 ms. Emitted byte counts never go backwards, even when a resume re-sends a chunk.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::infra::events::{Progress, ProgressSink};

pub struct Meter<'a> {
    sink: &'a dyn ProgressSink,
    total_bytes: Mutex<Option<u64>>,
    files_total: AtomicU64,
    done: AtomicU64,
    files_done: AtomicU64,
    /// Bytes written to or read from the wire (resends included).
    wire: AtomicU64,
    last: Mutex<(Instant, u64)>,
}

impl std::fmt::Debug for Meter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meter")
            .field("done", &self.done.load(Ordering::Relaxed))
            .finish()
    }
}

const EVERY: Duration = Duration::from_millis(100);

impl<'a> Meter<'a> {
    pub fn new(sink: &'a dyn ProgressSink) -> Self {
        Meter {
            sink,
            total_bytes: Mutex::new(Some(0)),
            files_total: AtomicU64::new(0),
            done: AtomicU64::new(0),
            files_done: AtomicU64::new(0),
            wire: AtomicU64::new(0),
            last: Mutex::new((Instant::now() - EVERY, 0)),
        }
    }

    /// Add an item's size to the total (`None`: the total becomes unknown).
    pub fn add_total(&self, bytes: Option<u64>, files: u64) {
        if let Ok(mut t) = self.total_bytes.lock() {
            *t = match (*t, bytes) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        self.files_total.fetch_add(files, Ordering::SeqCst);
    }

    /// Bytes that reached the other side (or were verified there on resume).
    pub fn add(&self, bytes: u64) {
        self.done.fetch_add(bytes, Ordering::SeqCst);
        self.emit(false);
    }

    /// Bytes counted before that turned out not to be there (a resume re-sends them).
    pub fn rewind(&self, bytes: u64) {
        let _ = self
            .done
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |d| {
                Some(d.saturating_sub(bytes))
            });
    }

    pub fn wire(&self, bytes: u64) {
        self.wire.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn wire_bytes(&self) -> u64 {
        self.wire.load(Ordering::Relaxed)
    }

    pub fn file_done(&self) {
        self.files_done.fetch_add(1, Ordering::SeqCst);
        self.emit(false);
    }

    /// A line for the log pane (a resume, a warning).
    pub fn log(&self, line: String) {
        self.sink.emit(Progress::Log { line });
    }

    /// Emit now if 100 ms passed (or always with `force`).
    pub fn emit(&self, force: bool) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if !force && last.0.elapsed() < EVERY {
            return;
        }
        let done = self.done.load(Ordering::SeqCst).max(last.1);
        *last = (Instant::now(), done);
        let total = self.total_bytes.lock().ok().and_then(|t| *t);
        drop(last);
        self.sink.emit(Progress::Bytes {
            done_bytes: done,
            total_bytes: total,
        });
        self.sink.emit(Progress::Units {
            done_units: self.files_done.load(Ordering::SeqCst),
            total_units: Some(self.files_total.load(Ordering::SeqCst)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_cumulative_and_never_go_back() {
        let seen = Mutex::new(Vec::new());
        let sink = |e: Progress| seen.lock().expect("lock").push(e);
        let m = Meter::new(&sink);
        m.add_total(Some(100), 2);
        m.add(60);
        m.rewind(20);
        m.add(10);
        m.file_done();
        m.emit(true);
        let last_bytes = seen
            .lock()
            .expect("lock")
            .iter()
            .rev()
            .find_map(|e| match e {
                Progress::Bytes {
                    done_bytes,
                    total_bytes,
                } => Some((*done_bytes, *total_bytes)),
                _ => None,
            });
        assert_eq!(last_bytes, Some((60, Some(100))));
        m.add_total(None, 0);
        m.emit(true);
        assert!(seen.lock().expect("lock").contains(&Progress::Units {
            done_units: 1,
            total_units: Some(2)
        }));
    }
}
