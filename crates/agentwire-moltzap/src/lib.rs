//! MoltZap, sans-IO. This crate holds the client [`Session`] (handshake of both generations and
//! `auto`, request correlation, typed methods, typed events) over the frame layer: decoding every WebSocket text message a
//! MoltZap server sends into [`Frame`]s, encoding the frames a client (or a test peer) sends, and
//! the typed errors. It speaks both generations ([`Generation`]): the current one (standard
//! JSON-RPC 2.0, protocol `2026.811.0`) and the released one (protocol `2026.425.3`, with the
//! `type` field, string ids and `event` frames). The rules are in `docs/protocols/moltzap.md`.
//!
//! Payloads (`params`, `result`, `data`, error `data`) stay raw JSON text
//! ([`serde_json::value::RawValue`]): the user parses them, lazily, when needed.
//!
//! ```
//! use agentwire_moltzap::{decode_message, encode_request, Frame, Generation, Id};
//!
//! let wire = encode_request(Generation::Released, &Id::from("c1"), "system/ping", Some(&agentwire_moltzap::raw("{}")?))?;
//! assert_eq!(wire, r#"{"jsonrpc":"2.0","type":"request","id":"c1","method":"system/ping","params":{}}"#);
//!
//! let frames = decode_message(Generation::Released, r#"{"jsonrpc":"2.0","type":"response","id":"c1","result":{"ts":"2026-12-02T12:36:49.731Z"}}"#);
//! match &frames[0] {
//!     Ok(Frame::Response(r)) => {
//!         assert_eq!(r.id, Some(Id::from("c1")));
//!         assert_eq!(r.result().unwrap().get(), r#"{"ts":"2026-12-02T12:36:49.731Z"}"#);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// Frame errors carry what could be read of the frame; they are returned by value on purpose.
#![allow(clippy::result_large_err)]

mod decode;
mod encode;
pub mod errors;
mod fields;
mod frame;
mod frame_error;
pub mod harness;
pub mod register;
pub mod session;

pub use decode::{decode_bytes, decode_bytes_with, decode_message, decode_message_with, DecodeOptions};
pub use encode::{encode_frame, encode_notification, encode_request, encode_response, EncodeError};
pub use errors::{codes, MoltZapError};
pub use frame::{raw, Frame, Generation, Id, Notification, Outcome, Request, Response, RpcError};
pub use frame_error::{FrameError, FrameErrorKind};
pub use session::{Credentials, Event, GenerationChoice, HelloOk, RequestId, Session, SessionConfig, SessionState};

/// What a driver of its own transport takes from `agentwire-core` (the session's `now`, its
/// frames, its errors, the harness endpoint's entropy, registration's HTTP request), so that it
/// needs no dependency of its own on that crate, nor to match its version. The RKT and Switch
/// crates re-export the same.
pub use agentwire_core::{Clock, Entropy, Error, ErrorKind, HttpRequest, Method, Millis, Outgoing, SeededEntropy};

/// The protocol version of the current generation.
pub const CURRENT_PROTOCOL: &str = "2026.811.0";
/// The protocol version released servers report.
pub const RELEASED_PROTOCOL: &str = "2026.425.3";
