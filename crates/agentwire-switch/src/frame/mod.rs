//! One inbound frame of the agent connection, typed.
//!
//! [`decode`] reads one WebSocket text message of the current generation; [`decode_sse`] reads
//! one SSE frame (`event:`, `data:`, optional `id:`) of the released generation (switch-core 0.19).
//! Both give the same [`Frame`].
//!
//! **Shape of a control frame on the WebSocket.** The spec shows only the domain-event envelope
//! `{"event", "data", "id"}` and says control frames are the same kind of frame without `id`, so
//! the canonical shape is `{"event": "gap", "data": {...}}`: the SSE `event:`/`data:` pair moved
//! into one JSON object, which is what the migration section implies ("the same query
//! parameters", "read `id` as a JSON number"). The flat `{"type": "ping", ...fields}` is also
//! accepted, because the one client frame (the pong) is flat and a server may mirror it. A
//! top-level `event` wins; otherwise a top-level `type` names a flat frame.
//!
//! **Domain or control.** A frame that carries an `id` (or whose name is a known domain kind) is
//! a domain event; an unknown name with an id is [`EventKind::Other`], passed through. An unknown
//! name without an id is [`Frame::Unknown`].
//!
//! Decoding is tolerant of unknown keys and never panics; limits on size and depth are checked
//! before parsing.

mod decode;
#[cfg(test)]
mod decode_serde;
mod encode;
mod error;
mod payload;
mod policy;

pub use decode::{decode, decode_sse, decode_sse_with, decode_with, event_id_hint, DecodeOptions, MAX_DEPTH};
pub(crate) use decode::{frame_name_hint, top_level_rest, top_level_str};
pub use encode::{encode, sse_parts, string_len};
pub use error::{FrameError, FrameErrorKind};
pub use payload::{Attachment, CommandPayload, MessagePayload, RoomJoinPayload, TaskPayload};
pub use policy::{
    beat_conflict_policy, close_code_policy, encode_pong, eviction_from_reason, refusal_is_transient, refusal_status,
    ClosePolicy, EvictionCode, EvictionPolicy,
};

use crate::json::{JsonError, Obj};
use agentwire_core::json::fields::WholeRange;
use agentwire_core::json::read::{Kind, Value};
use serde_json::value::RawValue;

/// One decoded frame.
#[derive(Debug, Clone)]
pub enum Frame {
    Event(DomainEvent),
    ConnectionState(ConnectionState),
    Gap(Gap),
    Evicted(Evicted),
    SubscriptionChanged(SubscriptionChanged),
    RoomReleased(RoomReleased),
    Ping,
    Refused(Refused),
    /// A control frame this client does not know: its name and its `data` (for the flat
    /// `{"type": ..}` shape, the whole object), raw.
    Unknown {
        name: String,
        raw: Box<RawValue>,
    },
}

/// The kind of a domain event (`data.type`, the SSE `event:` name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventKind {
    Message,
    Command,
    RoomJoin,
    TaskDelegate,
    TaskAccept,
    TaskUpdate,
    TaskFinalise,
    TaskCancel,
    /// A kind this client does not know, passed through.
    Other(String),
}

impl EventKind {
    pub fn parse(name: &str) -> Self {
        Self::known(name).unwrap_or_else(|| EventKind::Other(name.to_owned()))
    }

    /// The known kind of that name, if it is one.
    pub fn known(name: &str) -> Option<Self> {
        Some(match name {
            "message" => EventKind::Message,
            "command" => EventKind::Command,
            "room_join" => EventKind::RoomJoin,
            "task_delegate" => EventKind::TaskDelegate,
            "task_accept" => EventKind::TaskAccept,
            "task_update" => EventKind::TaskUpdate,
            "task_finalise" => EventKind::TaskFinalise,
            "task_cancel" => EventKind::TaskCancel,
            _ => return None,
        })
    }

    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Message => "message",
            EventKind::Command => "command",
            EventKind::RoomJoin => "room_join",
            EventKind::TaskDelegate => "task_delegate",
            EventKind::TaskAccept => "task_accept",
            EventKind::TaskUpdate => "task_update",
            EventKind::TaskFinalise => "task_finalise",
            EventKind::TaskCancel => "task_cancel",
            EventKind::Other(s) => s,
        }
    }

    pub fn is_task(&self) -> bool {
        matches!(
            self,
            EventKind::TaskDelegate
                | EventKind::TaskAccept
                | EventKind::TaskUpdate
                | EventKind::TaskFinalise
                | EventKind::TaskCancel
        )
    }
}

/// A domain event: `id` (checked equal to `sequence`), the envelope fields, the payload raw.
#[derive(Debug, Clone)]
pub struct DomainEvent {
    pub kind: EventKind,
    pub room_id: String,
    pub bridge_id: Option<String>,
    pub channel_type: Option<String>,
    pub sequence: u64,
    pub payload: Box<RawValue>,
}

/// `connection_state`, always the first frame.
#[derive(Debug, Clone)]
pub struct ConnectionState {
    pub connection_id: String,
    pub agent_id: String,
    /// Absent in the released generation; keep it for `expected_generation`.
    pub generation: Option<ConnGeneration>,
    pub scope: String,
    pub filter: String,
    pub spawn_capable: bool,
    pub rooms: Vec<String>,
    pub cursor: u64,
    pub protocol: Option<u64>,
    pub heartbeat_interval_seconds: Option<f64>,
    /// `{version, contracts}`, raw; [`ConnectionState::server_info`] types it.
    pub server: Option<Box<RawValue>>,
    /// The echo of what the client declared, raw.
    pub client: Option<Box<RawValue>>,
}

/// The generation a server issued an attach. The spec does not give its JSON type, so a number
/// and a string are both kept as they came and sent back as `expected_generation` unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(untagged)]
pub enum ConnGeneration {
    Number(u64),
    Text(String),
}

impl ConnGeneration {
    /// Appends the generation as JSON (what its `Serialize` writes: a number or a string).
    pub fn push_json(&self, out: &mut String) {
        match self {
            ConnGeneration::Number(n) => agentwire_core::json::write::push_u64(out, *n),
            ConnGeneration::Text(t) => agentwire_core::json::push_string(out, t),
        }
    }

    /// A whole number from 0 to `u64::MAX`, or a string; `field` names it in the error.
    pub(crate) fn from_value(v: Value<'_, '_>, field: &str) -> Result<Self, FrameError> {
        match (v.as_str(), v.as_u64()) {
            (Some(s), _) if !v.lossy() => Ok(ConnGeneration::Text(s.into_owned())),
            (Some(_), _) => Err(decode::lossy(field, v)),
            (None, Some(n)) => Ok(ConnGeneration::Number(n)),
            (None, None) if v.kind() == Kind::Number => Err(FrameError::wrong(
                field,
                format_args!("{} or a string", WholeRange(u64::MAX)),
            )),
            (None, None) => Err(FrameError::wrong(
                field,
                "has the wrong type: expected a whole number ≥ 0 or a string",
            )),
        }
    }
}

impl std::fmt::Display for ConnGeneration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnGeneration::Number(n) => write!(f, "{n}"),
            ConnGeneration::Text(s) => f.write_str(s),
        }
    }
}

/// The typed view of `connection_state.server`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub version: Option<String>,
    /// Contract name (`agent-protocol`) → the range the server speaks and accepts.
    pub contracts: std::collections::BTreeMap<String, ContractRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractRange {
    pub speaks: u64,
    pub accepts: u64,
}

impl ServerInfo {
    /// `{"version"?: string, "contracts"?: {name: {"speaks", "accepts"}}}`, other keys ignored.
    fn from_json(v: Value<'_, '_>) -> Result<Self, JsonError> {
        let o = Obj::new(v, &["version", "contracts"])?;
        Ok(ServerInfo {
            version: o.opt_string("version")?,
            contracts: o.map("contracts", |c| {
                let c = Obj::new(c, &["speaks", "accepts"])?;
                Ok(ContractRange {
                    speaks: c.u64("speaks")?,
                    accepts: c.u64("accepts")?,
                })
            })?,
        })
    }
}

/// The shortest heartbeat interval a `connection_state` may set, in ms: a client pings (or
/// beats) no more often, whatever `heartbeat_interval_seconds` says.
pub const MIN_HEARTBEAT_INTERVAL_MS: u64 = 100;
/// The longest heartbeat interval a `connection_state` may set, in ms (10 minutes).
pub const MAX_HEARTBEAT_INTERVAL_MS: u64 = 600_000;

impl ConnectionState {
    /// `heartbeat_interval_seconds` in ms, clamped to [`MIN_HEARTBEAT_INTERVAL_MS`] ..=
    /// [`MAX_HEARTBEAT_INTERVAL_MS`]; `None` when absent, not finite or not above 0 (the interval
    /// in use stays).
    pub fn heartbeat_interval_ms(&self) -> Option<u64> {
        let secs = self.heartbeat_interval_seconds.filter(|s| s.is_finite() && *s > 0.0)?;
        Some(((secs * 1000.0) as u64).clamp(MIN_HEARTBEAT_INTERVAL_MS, MAX_HEARTBEAT_INTERVAL_MS))
    }

    /// `server` as `{version, contracts}`; `None` when absent.
    pub fn server_info(&self) -> Option<Result<ServerInfo, FrameError>> {
        self.server.as_ref().map(|raw| {
            crate::json::parse(raw.get())
                .and_then(|tape| ServerInfo::from_json(tape.root()))
                .map_err(|e| FrameError::wrong("server", format_args!("is not valid: {e}")))
        })
    }
}

/// `gap`: the server can't replay every event since the cursor. Take `resumed_at` as the cursor.
#[derive(Debug, Clone)]
pub struct Gap {
    pub from_sequence: u64,
    pub resumed_at: u64,
    /// Newer generations only; its type is not given by the spec, so it is kept raw.
    pub resumed_position: Option<Box<RawValue>>,
    pub rooms: Option<Vec<String>>,
    pub all_rooms: Option<bool>,
    pub reason: String,
}

/// `evicted`: the connection is gone. `code` is as sent: absent on switch-core 0.19, whose
/// frames carry free text only; [`Evicted::effective_code`] reads the code from that text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evicted {
    pub code: Option<EvictionCode>,
    pub reason: String,
    /// The room the eviction concerns, when the server names one (newer servers send it,
    /// often `null`).
    pub room_id: Option<String>,
}

impl Evicted {
    /// The code, or the one the reason text maps to when the frame has none.
    pub fn effective_code(&self) -> EvictionCode {
        self.code.clone().unwrap_or_else(|| eviction_from_reason(&self.reason))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionChanged {
    pub rooms: Vec<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomReleased {
    pub room_id: String,
    pub session_id: Option<String>,
}

/// `refused`: the open was refused; the socket closes with 4000 + `status`.
#[derive(Debug, Clone)]
pub struct Refused {
    pub status: u16,
    /// A string or an object (a protocol mismatch), raw.
    pub detail: Box<RawValue>,
}

impl Refused {
    /// The detail as text: the string itself, an object's `message`, or the raw JSON.
    pub fn detail_text(&self) -> String {
        detail_text(self.detail.get())
    }
}

/// The text of a `detail` (raw JSON): the string itself, an object's `message` (a string, given
/// once), or the raw JSON.
pub(crate) fn detail_text(raw: &str) -> String {
    let text = || {
        let tape = crate::json::parse(raw).ok()?;
        let v = tape.root();
        if let Some(s) = v.as_str() {
            return Some(s.into_owned());
        }
        let message = crate::json::Obj::new(v, &["message"]).ok()?.value("message")?;
        message.as_str().map(std::borrow::Cow::into_owned)
    };
    text().unwrap_or_else(|| raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn state(server: &str) -> ConnectionState {
        ConnectionState {
            connection_id: "c".into(),
            agent_id: "a".into(),
            generation: None,
            scope: "all".into(),
            filter: "all".into(),
            spawn_capable: false,
            rooms: vec![],
            cursor: 0,
            protocol: None,
            heartbeat_interval_seconds: None,
            server: Some(raw(server)),
            client: None,
        }
    }

    #[test]
    fn generations_are_whole_numbers_or_strings() {
        let g = |t: &str| {
            let tape = agentwire_core::json::read::parse_lenient(t, 8).unwrap();
            ConnGeneration::from_value(tape.root(), "data.generation")
        };
        assert_eq!(g("7"), Ok(ConnGeneration::Number(7)));
        assert_eq!(g("18446744073709551615"), Ok(ConnGeneration::Number(u64::MAX)));
        assert_eq!(g(r#""g-7""#), Ok(ConnGeneration::Text("g-7".into())));
        assert_eq!(g(r#""g\u002d7""#), Ok(ConnGeneration::Text("g-7".into())));
        assert_eq!(g(r#""7""#), Ok(ConnGeneration::Text("7".into())), "a string stays text");
        // A number out of range (or not written as a whole number in digits) is told the range.
        let range = "`data.generation` must be a whole number from 0 to 18446744073709551615 or a string";
        for (t, message) in [
            ("-1", range),
            ("7.0", range),
            ("1e3", range),
            ("-0", range),
            ("18446744073709551616", range),
            ("true", "`data.generation` has the wrong type"),
            ("[7]", "`data.generation` has the wrong type"),
            (r#"{"n":7}"#, "`data.generation` has the wrong type"),
        ] {
            let e = g(t).unwrap_err();
            assert_eq!(
                (e.kind, e.field.as_deref()),
                (FrameErrorKind::WrongType, Some("data.generation")),
                "{t}"
            );
            assert!(e.message.starts_with(message), "{t}: {e}");
        }
    }

    #[test]
    fn server_info_with_every_field_with_none_and_wrong() {
        let s = state(r#"{"version":"0.20.0","contracts":{"agent-protocol":{"speaks":6,"accepts":1,"x":0}},"x":[]}"#);
        assert_eq!(
            s.server_info(),
            Some(Ok(ServerInfo {
                version: Some("0.20.0".into()),
                contracts: [("agent-protocol".to_owned(), ContractRange { speaks: 6, accepts: 1 })].into(),
            }))
        );
        assert_eq!(
            state(r#"{"version":null}"#).server_info(),
            Some(Ok(ServerInfo {
                version: None,
                contracts: Default::default(),
            }))
        );
        for (server, text) in [
            (r#"{"version":6}"#, "`version` must be a string, not a number"),
            (r#"{"contracts":null}"#, "`contracts` must be an object, not null"),
            (
                r#"{"contracts":{"agent-protocol":{"speaks":6}}}"#,
                "in `contracts`: missing field `accepts`",
            ),
            (
                r#"{"contracts":{"agent-protocol":{"speaks":"6","accepts":1}}}"#,
                "`speaks` must be a whole number ≥ 0, not a string",
            ),
            (
                r#"{"contracts":{"agent-protocol":{"speaks":18446744073709551616,"accepts":1}}}"#,
                "`speaks` must be a whole number from 0 to 18446744073709551615",
            ),
            (
                r#"{"contracts":{"agent-protocol":{"speaks":6,"accepts":-1}}}"#,
                "`accepts` must be a whole number from 0 to 18446744073709551615",
            ),
            (r#"{"version":"a","version":"b"}"#, "field `version` given twice"),
            (r#"["0.20.0"]"#, "expected an object, got an array"),
        ] {
            let e = state(server).server_info().unwrap().unwrap_err();
            assert_eq!(
                (e.kind, e.field.as_deref()),
                (FrameErrorKind::WrongType, Some("server"))
            );
            assert!(e.message.starts_with("`server` is not valid: "), "{e}");
            assert!(e.message.contains(text), "{e} lacks {text}");
        }
        let mut s = state("{}");
        s.server = None;
        assert_eq!(s.server_info(), None);
    }

    #[test]
    fn task_kinds_are_the_five_task_events() {
        for name in [
            "task_delegate",
            "task_accept",
            "task_update",
            "task_finalise",
            "task_cancel",
        ] {
            assert!(EventKind::parse(name).is_task(), "{name}");
        }
        for name in ["message", "command", "room_join", "task_other"] {
            assert!(!EventKind::parse(name).is_task(), "{name}");
        }
    }

    #[test]
    fn detail_texts() {
        assert_eq!(detail_text(r#""caf\u00e9""#), "café");
        assert_eq!(detail_text(r#"{"message":"m","contract":"c"}"#), "m");
        for kept in [
            r#"{"message":7}"#,
            r#"{"message":null}"#,
            r#"{"message":"a","message":"b"}"#,
            r#"["m"]"#,
            "7",
        ] {
            assert_eq!(detail_text(kept), kept);
        }
    }
}
