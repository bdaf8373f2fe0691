//! What a running transfer needs: a way to connect, the journal (the App's store) and the clock,
//! the meter, the cancel token. Shared by the engine and the per-kind movers without either
//! importing the other.

use crate::infra::cancel::CancelToken;
use crate::infra::store::Store;
use crate::remote::{Connection, RemoteError};
use crate::transfer::meter::Meter;
use crate::transfer::TransferError;

/// Opens a fresh, logged-in connection to the transfer's host.
pub type Connector<'a> = dyn Fn(&CancelToken) -> Result<Connection, RemoteError> + Sync + 'a;

/// Where the journal lives (the App's store) and the injected clock.
pub trait Journal: Sync {
    fn with_journal(
        &self,
        f: &mut dyn FnMut(&Store) -> Result<(), TransferError>,
    ) -> Result<(), TransferError>;
    fn journal_now_ms(&self) -> i64;
    /// Which journal this is (its database file): transfer ids are unique only within one.
    fn journal_key(&self) -> String;
}

/// Everything a running transfer needs.
pub struct Ctx<'a> {
    pub connect: &'a Connector<'a>,
    pub journal: &'a dyn Journal,
    pub meter: &'a Meter<'a>,
    pub cancel: &'a CancelToken,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").finish()
    }
}

/// Run `f` on a journal's store and return its value (the typed face of
/// [`Journal::with_journal`], whose callback is object-safe and returns nothing).
pub fn on_journal<T>(
    journal: &dyn Journal,
    f: impl FnOnce(&Store) -> Result<T, TransferError>,
) -> Result<T, TransferError> {
    let mut f = Some(f);
    let mut out = None;
    journal.with_journal(&mut |s| {
        if let Some(f) = f.take() {
            out = Some(f(s)?);
        }
        Ok(())
    })?;
    out.ok_or_else(|| TransferError::invalid("journal", "not reached"))
}

impl Ctx<'_> {
    /// Run `f` on the journal's store.
    pub fn j<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, TransferError>,
    ) -> Result<T, TransferError> {
        on_journal(self.journal, f)
    }

    pub fn now(&self) -> i64 {
        self.journal.journal_now_ms()
    }

    pub fn log(&self, line: impl Into<String>) {
        self.meter.log(line.into());
    }
}
