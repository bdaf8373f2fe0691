//! Cancellation: a cheap token that long work polls, and a registry that maps operation ids to
//! tokens so the UI can cancel by id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::infra::error::CoreError;

/// Shared flag; clone it into the worker. Cancelling is idempotent.
///
/// A *pause* is a cancel that asks the work to keep what it has done so far (a transfer keeps its
/// temporary file and its journal and can be resumed); work that cannot pause treats it as a
/// cancel.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    cancelled: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    /// Stop; an earlier pause becomes a cancel.
    pub fn cancel(&self) {
        self.paused.store(false, Ordering::SeqCst);
        self.cancelled.store(true, Ordering::SeqCst);
    }
    /// Stop, keeping the work done so far (see the type's docs).
    pub fn pause(&self) {
        self.paused.store(true, Ordering::SeqCst);
        self.cancelled.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
    /// Stopped by [`CancelToken::pause`] (and not also cancelled outright since).
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }
    /// `Err(Cancelled)` once cancelled: use with `?` at safe points in long work.
    pub fn check(&self) -> Result<(), CoreError> {
        if self.is_cancelled() {
            Err(CoreError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Running operations by id. Ids are unique per registry (`op-<n>`).
#[derive(Debug, Default)]
pub struct CancelRegistry {
    next: AtomicU64,
    ops: Mutex<HashMap<String, CancelToken>>,
}

/// Removes its operation from the registry when dropped (finished, failed or cancelled).
#[derive(Debug)]
pub struct OpGuard<'a> {
    registry: &'a CancelRegistry,
    pub id: String,
    pub token: CancelToken,
}

impl Drop for OpGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut ops) = self.registry.ops.lock() {
            ops.remove(&self.id);
        }
    }
}

impl CancelRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a new operation; keep the guard alive for as long as the work runs.
    pub fn begin(&self) -> OpGuard<'_> {
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let id = format!("op-{n}");
        let token = CancelToken::new();
        if let Ok(mut ops) = self.ops.lock() {
            ops.insert(id.clone(), token.clone());
        }
        OpGuard {
            registry: self,
            id,
            token,
        }
    }

    /// Cancel a running operation by id.
    pub fn cancel(&self, id: &str) -> Result<(), CoreError> {
        self.with(id, CancelToken::cancel)
    }

    /// Pause a running operation by id (work that cannot pause is cancelled).
    pub fn pause(&self, id: &str) -> Result<(), CoreError> {
        self.with(id, CancelToken::pause)
    }

    fn with(&self, id: &str, f: fn(&CancelToken)) -> Result<(), CoreError> {
        let ops = self
            .ops
            .lock()
            .map_err(|_| CoreError::UnknownOperation(id.to_string()))?;
        match ops.get(id) {
            Some(t) => {
                f(t);
                Ok(())
            }
            None => Err(CoreError::UnknownOperation(id.to_string())),
        }
    }

    /// Ids currently running.
    pub fn running(&self) -> Vec<String> {
        self.ops
            .lock()
            .map(|ops| ops.keys().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_by_id_reaches_the_worker_and_guard_unregisters() {
        let reg = CancelRegistry::new();
        let guard = reg.begin();
        let worker_token = guard.token.clone();
        assert!(worker_token.check().is_ok());
        reg.cancel(&guard.id).expect("cancel");
        assert!(matches!(worker_token.check(), Err(CoreError::Cancelled)));
        let id = guard.id.clone();
        drop(guard);
        assert!(reg.running().is_empty());
        assert!(matches!(
            reg.cancel(&id),
            Err(CoreError::UnknownOperation(_))
        ));
    }

    #[test]
    fn pause_is_a_cancel_that_says_so() {
        let reg = CancelRegistry::new();
        let (a, b) = (reg.begin(), reg.begin());
        reg.pause(&a.id).expect("pause");
        reg.cancel(&b.id).expect("cancel");
        assert!(a.token.is_cancelled() && a.token.is_paused());
        assert!(b.token.is_cancelled() && !b.token.is_paused());
        assert!(matches!(
            reg.pause("op-999"),
            Err(CoreError::UnknownOperation(_))
        ));
    }

    #[test]
    fn ids_are_unique() {
        let reg = CancelRegistry::new();
        let a = reg.begin();
        let b = reg.begin();
        assert_ne!(a.id, b.id);
        assert_eq!(reg.running().len(), 2);
    }
}
