//! HTTP/1.1 as the engines and drivers need it, sans-IO: the requests an engine describes
//! ([`HttpRequest`]), and the decoders a driver reads an answer with ([`parse_head`],
//! [`Dechunker`]), so every driver that speaks HTTP over its own socket frames answers the same way.

mod chunked;
mod request;
mod response;

pub use chunked::{Dechunker, MAX_CHUNK_LINE};
pub use request::{HttpRequest, Method};
pub use response::{parse_head, Framing, Head};
