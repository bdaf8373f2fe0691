//! The app as a second guard: while the desktop app is open, every 30 s it re-checks the guards'
//! deadlines in this computer's clock, the budgets and the account balances, tells the user
//! (each notice once, across restarts) and carries out what the user chose in advance ("stop at
//! 100 %") or what a guard on the machine missed (its deadline action).
//!
//! - [`rules`]: the pure decision of one tick from plain readings, the time passed in.
//! - [`notice`]: the notices, their keys and their words.
//! - [`sent`]: the notices already sent (`notices_sent`).
//!
//! The tick's effects (reading the providers and the guards, stopping, remembering) are the
//! facade's: `App::second_guard_tick` in `app/second_guard.rs`.

pub mod notice;
pub mod rules;
pub mod sent;

pub use notice::*;
pub use rules::*;
