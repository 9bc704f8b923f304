//! Server-Sent Events: the parser of the released generation's event stream (switch-core 0.19
//! answers `GET /agents/{id}/events` with `text/event-stream`) and the encoder the test peer uses.
//!
//! [`SseParser`] implements the WHATWG HTML "event stream interpretation" over chunks split
//! anywhere (inside a line, a CRLF, a UTF-8 sequence or the BOM): lines end with CRLF, LF or a
//! lone CR; a leading BOM is skipped; `event`, `data`, `id` and `retry` fields; comments; dispatch
//! on a blank line; invalid UTF-8 decoded lossily. It holds a bounded amount of memory: a line
//! longer than [`SseLimits::max_line_bytes`] or an event whose data grows past
//! [`SseLimits::max_event_bytes`] gives one [`SseErrorKind::TooLarge`] error, and the rest of that
//! event (up to the next blank line) is skipped without being buffered.
//!
//! Decisions the WHATWG text leaves to an implementation:
//! - [`SseEvent::id`] is the `id:` of that event only (`Some("")` for an empty `id:` line), while
//!   [`SseParser::last_event_id`] is the persisted buffer (`None` while it is empty, which is
//!   when no `Last-Event-ID` header is sent).
//! - Fields seen before a limit error keep their effect (`id` sets the last-event-ID, `retry`
//!   the reconnection time); the skipped rest of the event is not interpreted at all.
//! - `retry:` with only digits but too large for a `u64` saturates to `u64::MAX`.
//! - An event that a blank line does not end is never dispatched (the end of the body does not
//!   dispatch it; [`SseParser::reset`] drops it).

mod parser;

pub use parser::SseParser;

use crate::frame::{FrameError, FrameErrorKind};
use std::fmt;

/// Bounds on what one event may make the parser hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseLimits {
    /// Largest `data` of one event (the `data:` values joined with `'\n'`), in bytes.
    pub max_event_bytes: usize,
    /// Longest line, without its terminator, in bytes.
    pub max_line_bytes: usize,
}

/// Room a line has past an event's largest `data` in [`SseLimits::for_message`]: for the field
/// name, its `:` and a space (`data: ` is 6 bytes).
pub const LINE_OVERHEAD: usize = 64;

impl SseLimits {
    /// The bounds for frames of at most `max_message_bytes`: that much `data` per event, and
    /// per line with [`LINE_OVERHEAD`] more, so that a frame the decoder takes is never dropped
    /// by the parser for being on one `data:` line.
    pub fn for_message(max_message_bytes: usize) -> Self {
        SseLimits {
            max_event_bytes: max_message_bytes,
            max_line_bytes: max_message_bytes.saturating_add(LINE_OVERHEAD),
        }
    }
}

impl Default for SseLimits {
    /// For the decoder's default frame bound (1 MiB): 1 MiB per event, 1 MiB + 64 per line.
    fn default() -> Self {
        SseLimits::for_message(crate::frame::DecodeOptions::default().max_message_bytes)
    }
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or "message" when the event had none (WHATWG default).
    pub event: String,
    /// The `data:` lines joined with '\n' (WHATWG: the final trailing '\n' removed).
    pub data: String,
    /// The value of an `id:` line in this event, if it had one (not the persisted last-event-id:
    /// the Switch decoder needs to know whether this frame carried an id).
    pub id: Option<String>,
}

/// The class of an [`SseError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SseErrorKind {
    /// A line or an event's data over the limit: the rest of that event is skipped.
    TooLarge,
}

/// What went wrong with one event of the stream; the stream itself goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseError {
    pub kind: SseErrorKind,
    pub message: String,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SseError {}

impl From<SseError> for FrameError {
    /// `TooLarge` on the field `data`, with the same message.
    fn from(e: SseError) -> Self {
        FrameError::new(FrameErrorKind::TooLarge, Some("data".into()), e.message)
    }
}

/// Encodes one event the way switch-core does: optional `id: N\n`, then `event: NAME\n`, then one
/// `data: LINE\n` per line of `data` (split on '\n'), then a blank line. Used by the test peer.
/// Round-trips through [`SseParser`] when `event` is not empty (an empty name parses as
/// "message"), `event` and `id` have no CR or LF, `data` has no CR and `id` no NUL.
pub fn encode_event(event: &str, data: &str, id: Option<&str>) -> String {
    let mut out = String::with_capacity(event.len() + data.len() + id.map_or(0, str::len) + 24);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    out.push_str("event: ");
    out.push_str(event);
    out.push('\n');
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// A comment, one `: LINE` per line of `text` (`:` alone for an empty line), then a blank line:
/// `encode_comment("keepalive")` is `": keepalive\n\n"`, the keepalive switch-core sends every
/// 15 s when idle (the spec names the comment `: keepalive`; the captures, which use LF only and
/// end every frame with a blank line, give the rest, but hold no keepalive themselves).
pub fn encode_comment(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for line in text.split('\n') {
        out.push(':');
        if !line.is_empty() {
            out.push(' ');
            out.push_str(line);
        }
        out.push('\n');
    }
    out.push('\n');
    out
}
