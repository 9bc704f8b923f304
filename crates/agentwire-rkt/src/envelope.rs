//! The common headers every message starts with, in the guide's order.

use crate::codec::{header_value_fault, Message, MessageType};
use crate::errors::RktError;
use agentwire_core::{format_iso8601, ErrorKind, Millis};

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

/// A value the caller gave for a header (`field` as the caller named it: `to`, `user_agent`),
/// refused `invalid` when the decoder would refuse it (a control character but tab, CR and LF
/// included, or DEL): the peer would answer ERROR 400, or drop the HELLO.
pub(crate) fn check_header_value(field: &str, value: &str) -> Result<(), RktError> {
    match header_value_fault(value) {
        None => Ok(()),
        Some(c) => Err(RktError::local(
            ErrorKind::Invalid,
            format!(
                "{field} holds the control character U+{:04X}, which no header value may carry",
                u32::from(c)
            ),
        )),
    }
}

/// A HELLO's version range, refused `invalid` when it holds no version (`min_version` above
/// `max_version`): the peer could only refuse the handshake.
pub(crate) fn check_versions(min_version: u32, max_version: u32) -> Result<(), RktError> {
    if min_version > max_version {
        let m = format!("min_version {min_version} is above max_version {max_version}: no version to agree on");
        return Err(RktError::local(ErrorKind::Invalid, m));
    }
    Ok(())
}

/// `capabilities`, written as one comma-separated `Capabilities` header: each checked as
/// [`check_header_value`], and none may hold a comma (it would come back as two).
pub(crate) fn check_capabilities(capabilities: &[String]) -> Result<(), RktError> {
    for (i, c) in capabilities.iter().enumerate() {
        let field = format!("capabilities[{i}]");
        check_header_value(&field, c)?;
        if c.contains(',') {
            let m = format!("{field} holds a comma, which separates capabilities in the Capabilities header");
            return Err(RktError::local(ErrorKind::Invalid, m));
        }
    }
    Ok(())
}
