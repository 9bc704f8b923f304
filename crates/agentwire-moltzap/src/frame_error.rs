//! What can be wrong with an inbound message or one of its frames.

use crate::frame::Id;
use agentwire_core::text::clip;
use std::fmt;

/// Why a message, or one frame in it, could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameErrorKind {
    /// The message is larger than the limit (checked before parsing).
    TooLarge { size: usize, limit: usize },
    /// A binary message that is not UTF-8 (`valid_up_to` bytes are).
    InvalidUtf8 { valid_up_to: usize },
    /// Empty or whitespace only.
    Empty,
    /// Not JSON (or truncated JSON): serde_json's reason, with line and column.
    Syntax(String),
    /// A frame's arrays and objects nest deeper than the limit, the frame itself counted (a
    /// batch array is not a level): that frame is refused, the others in its message decode.
    TooDeep { limit: usize },
    /// More frames (batch elements plus concatenated values) in one message than the limit.
    TooManyFrames { limit: usize },
    /// A batch `[]` with no element.
    EmptyBatch,
    /// A frame (or batch element) that is not a JSON object.
    NotAnObject,
    /// The same key twice in one frame.
    DuplicateKey(String),
    /// A key the frame's type does not have (only with [`crate::DecodeOptions::reject_unknown_keys`]).
    UnknownKey(String),
    /// A required key is absent.
    MissingField(&'static str),
    /// A key whose value is not valid.
    BadField { field: &'static str, reason: String },
    /// A string id longer than the limit, in bytes.
    IdTooLong { len: usize, limit: usize },
    /// Keys of two frame kinds at once (`method` with `result`, `result` with `error`, ...).
    Ambiguous(&'static str),
}

/// A message or frame that could not be decoded: what is wrong, and the frame's id when it
/// could still be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameError {
    pub kind: FrameErrorKind,
    pub id: Option<Id>,
    /// The frame is shaped as a response (`result` or `error` present; released: `type:
    /// "response"`): only then does its id answer a request, which a client session fails
    /// instead of losing it. Any other frame's id is not the client's (servers send no request).
    pub response: bool,
}

impl FrameError {
    pub fn new(kind: FrameErrorKind) -> Self {
        FrameError {
            kind,
            id: None,
            response: false,
        }
    }

    pub(crate) fn bad(field: &'static str, reason: impl Into<String>) -> Self {
        FrameError::new(FrameErrorKind::BadField {
            field,
            reason: reason.into(),
        })
    }

    /// [`FrameError::bad`] with serde_json's reason, which may quote the peer's value whole: at
    /// most [`QUOTE_MAX`] bytes of it are kept.
    pub(crate) fn bad_serde(field: &'static str, e: &serde_json::Error) -> Self {
        FrameError::bad(field, quoted(e.to_string()))
    }

    /// Not JSON: serde_json's reason (bounded like [`FrameError::bad_serde`]'s).
    pub(crate) fn syntax(e: &serde_json::Error) -> Self {
        FrameError::new(FrameErrorKind::Syntax(quoted(e.to_string())))
    }

    pub(crate) fn with_id(mut self, id: Option<Id>) -> Self {
        if self.id.is_none() {
            self.id = id;
        }
        self
    }

    /// The key or part of the message at fault.
    pub fn field(&self) -> &str {
        match &self.kind {
            FrameErrorKind::TooLarge { .. }
            | FrameErrorKind::InvalidUtf8 { .. }
            | FrameErrorKind::Empty
            | FrameErrorKind::Syntax(_)
            | FrameErrorKind::TooManyFrames { .. } => "message",
            FrameErrorKind::TooDeep { .. }
            | FrameErrorKind::EmptyBatch
            | FrameErrorKind::NotAnObject
            | FrameErrorKind::Ambiguous(_) => "frame",
            FrameErrorKind::DuplicateKey(k) | FrameErrorKind::UnknownKey(k) => k,
            FrameErrorKind::MissingField(f) | FrameErrorKind::BadField { field: f, .. } => f,
            FrameErrorKind::IdTooLong { .. } => "id",
        }
    }

    /// True for errors that come from a configured bound rather than from bad syntax.
    pub fn is_limit(&self) -> bool {
        matches!(
            self.kind,
            FrameErrorKind::TooLarge { .. }
                | FrameErrorKind::TooDeep { .. }
                | FrameErrorKind::TooManyFrames { .. }
                | FrameErrorKind::IdTooLong { .. }
        )
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FrameErrorKind::TooLarge { size, limit } => {
                write!(f, "message of {size} bytes exceeds the limit of {limit} bytes")
            }
            FrameErrorKind::InvalidUtf8 { valid_up_to } => {
                write!(f, "message is not UTF-8 (valid up to byte {valid_up_to})")
            }
            FrameErrorKind::Empty => f.write_str("empty message"),
            FrameErrorKind::Syntax(e) => write!(f, "invalid JSON: {e}"),
            FrameErrorKind::TooDeep { limit } => write!(f, "JSON nests deeper than {limit} levels"),
            FrameErrorKind::TooManyFrames { limit } => write!(f, "more than {limit} frames in one message"),
            FrameErrorKind::EmptyBatch => f.write_str("empty batch"),
            FrameErrorKind::NotAnObject => f.write_str("frame is not a JSON object"),
            FrameErrorKind::DuplicateKey(k) => write!(f, "key `{k}` appears twice"),
            FrameErrorKind::UnknownKey(k) => write!(f, "unknown key `{k}`"),
            FrameErrorKind::MissingField(k) => write!(f, "required key `{k}` is missing"),
            FrameErrorKind::BadField { field, reason } => write!(f, "`{field}` {reason}"),
            FrameErrorKind::IdTooLong { len, limit } => {
                write!(f, "id of {len} bytes exceeds the limit of {limit} bytes")
            }
            FrameErrorKind::Ambiguous(what) => write!(f, "ambiguous frame: {what}"),
        }?;
        if let Some(id) = &self.id {
            write!(f, " (id {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for FrameError {}

use agentwire_core::text::QUOTE_MAX;

/// `text`, a message or a key from the peer, cut to at most [`QUOTE_MAX`] bytes (and `…`) for
/// an error to quote.
pub(crate) fn quoted(text: String) -> String {
    match clip(&text, QUOTE_MAX) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(cut) => cut,
    }
}
