//! RKT: the driver behind the package's `RktClient`, and the sans-IO session.

mod client;
mod codec;
mod options;
mod session;

pub use client::RktDriver;
pub use codec::rkt_decode;
pub use session::RktSession;
