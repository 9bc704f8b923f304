//! What every agentwire protocol engine shares.
//!
//! Engines are sans-IO: they never read a clock, a socket or a random source. The driver passes
//! time in as [`Millis`] (milliseconds since the Unix epoch), entropy in as an [`Entropy`], and
//! drains [`Outgoing`] frames, events and the next timer deadline after every input.

mod backoff;
pub mod base64url;
mod bucket;
mod clock;
pub mod decimal;
mod entropy;
mod error;
mod frame;
pub mod http;
pub mod json;
pub mod redact;
pub mod text;
mod time;
mod timers;
pub mod url;

pub use backoff::Backoff;
pub use bucket::TokenBucket;
pub use clock::Clock;
pub use entropy::{Entropy, SeededEntropy};
pub use error::{Error, ErrorKind, MAY_HAVE_RUN};
pub use frame::Outgoing;
pub use http::{HttpRequest, Method};
pub use time::{format_iso8601, millis_from_f64, parse_iso8601, Millis};
pub use timers::Timers;
