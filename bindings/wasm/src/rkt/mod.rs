//! RKT: the driver behind the package's `RktClient`, and the sans-IO session.

mod client;
mod options;
mod session;

pub use client::RktDriver;
pub use session::RktSession;
