//! HTTP/1.1 as the engines and drivers need it, sans-IO: the requests an engine describes
//! ([`HttpRequest`]), and the decoders a driver reads an answer with ([`parse_head`], [`HeadReader`],
//! [`Dechunker`]), so every driver that speaks HTTP over its own socket frames answers the same way;
//! and [`local`]: origins, and which `Host` and `Origin` a server for this machine only answers.

mod chunked;
pub mod local;
mod request;
mod response;

pub use chunked::{Dechunker, MAX_CHUNK_LINE};
pub use request::{HttpRequest, Method};
pub use response::{parse_head, Framing, Head, HeadReader};

/// The most of a refused open's answer body (a WebSocket upgrade's or an event stream's) that
/// counts, in bytes: every driver reads at most this much and hands it on, and the Switch engine
/// reads no further (`Connection::handle_open_failed`), so a refusal means the same on every
/// surface. Enough for a `409 taken_over` naming hundreds of rooms (one of 300 is 6.7 KB). A
/// JavaScript driver counts UTF-16 units, each of which is at least one byte of UTF-8: it reads
/// at least this many bytes. An error message quotes less ([`crate::text::QUOTE_MAX`]).
pub const REFUSAL_BODY_MAX: usize = 64 << 10;
/// How long a driver reads a refused open's body, in milliseconds, before it hands the engine
/// what came: a refusal whose body trickles or never ends is its status after this long, not
/// after the open's whole timeout.
pub const REFUSAL_BODY_WAIT_MS: u64 = 2_000;
