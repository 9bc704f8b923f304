//! MoltZap: the driver behind the package's `MoltZapClient`, and the sans-IO session.

mod client;
mod options;
mod session;

pub use client::MoltZapDriver;
pub use session::MoltZapSession;
