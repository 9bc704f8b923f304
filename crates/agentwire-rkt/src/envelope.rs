//! The common headers every message starts with, in the guide's order.

use crate::codec::{Message, MessageType};
use agentwire_core::{format_iso8601, Millis};

/// `Version`, `Message-ID`, `Reply-To` (replies), `Session-ID`, `Timestamp`, `TTL` (when given).
pub(crate) fn envelope(
    kind: MessageType,
    message_id: String,
    reply_to: Option<&str>,
    session_id: &str,
    now: Millis,
    ttl_s: Option<u32>,
) -> Message {
    let mut msg = Message::new(kind);
    msg.headers.set("Version", "1");
    msg.headers.set("Message-ID", message_id);
    if let Some(r) = reply_to {
        msg.headers.set("Reply-To", r);
    }
    msg.headers.set("Session-ID", session_id);
    msg.headers.set("Timestamp", format_iso8601(now));
    if let Some(ttl) = ttl_s {
        msg.headers.set("TTL", ttl.to_string());
    }
    msg
}

/// A JSON value as compact text (never contains a newline, so no blank line can split it).
pub(crate) fn compact(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}
