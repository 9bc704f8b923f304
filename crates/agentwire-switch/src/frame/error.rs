//! What can be wrong with one inbound frame, naming the field at fault.

use agentwire_core::{Error, ErrorKind};
use std::fmt;

/// The class of a [`FrameError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameErrorKind {
    /// Not JSON, truncated JSON, a duplicate key, or not an object where one is required.
    Syntax,
    /// A required field is absent (or `null`).
    MissingField,
    /// A field whose value has the wrong JSON type or range (a string `id`, a negative sequence).
    WrongType,
    /// `id` differs from `data.sequence`, or `data.type` from the event name.
    IdMismatch,
    /// The message is larger than the limit (checked before parsing).
    TooLarge,
    /// Arrays and objects nest deeper than the limit (checked before parsing).
    TooDeep,
}

/// One frame that could not be decoded: the class, the field at fault (dotted path, such as
/// `data.sequence`), and a human-readable reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    pub kind: FrameErrorKind,
    pub field: Option<String>,
    pub message: String,
}

impl FrameError {
    pub fn new(kind: FrameErrorKind, field: Option<String>, message: impl Into<String>) -> Self {
        FrameError {
            kind,
            field,
            message: message.into(),
        }
    }

    pub(crate) fn syntax(message: impl Into<String>) -> Self {
        FrameError::new(FrameErrorKind::Syntax, None, message)
    }

    pub(crate) fn missing(field: &str) -> Self {
        FrameError::new(
            FrameErrorKind::MissingField,
            Some(field.to_owned()),
            format!("required field `{field}` is missing or null"),
        )
    }

    pub(crate) fn wrong(field: &str, reason: impl fmt::Display) -> Self {
        FrameError::new(
            FrameErrorKind::WrongType,
            Some(field.to_owned()),
            format!("`{field}` {reason}"),
        )
    }

    pub(crate) fn mismatch(field: &str, reason: impl fmt::Display) -> Self {
        FrameError::new(
            FrameErrorKind::IdMismatch,
            Some(field.to_owned()),
            format!("`{field}` {reason}"),
        )
    }

    /// True for errors from a configured bound rather than from the content.
    pub fn is_limit(&self) -> bool {
        matches!(self.kind, FrameErrorKind::TooLarge | FrameErrorKind::TooDeep)
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FrameError {}

impl From<FrameError> for Error {
    /// `Limit` for size and depth, `Decode` for everything else; never retryable (the same bytes
    /// fail again).
    fn from(e: FrameError) -> Self {
        let kind = if e.is_limit() {
            ErrorKind::Limit
        } else {
            ErrorKind::Decode
        };
        Error::new(kind, e.message).retryable(false)
    }
}
