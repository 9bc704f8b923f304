//! Typed views of a domain event's payload, parsed on request (the payload stays raw).

use super::{DomainEvent, EventKind, FrameError};
use serde::Deserialize;
use serde_json::value::RawValue;

const P: &str = "payload.";
type Field<'a> = Option<&'a RawValue>;

pub(crate) fn path(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
}

/// A required field.
pub(crate) fn req<'a, T: Deserialize<'a>>(v: Option<&'a RawValue>, prefix: &str, name: &str) -> Result<T, FrameError> {
    match v {
        None => Err(FrameError::missing(&path(prefix, name))),
        Some(raw) => parse(raw, prefix, name),
    }
}

/// An optional field (absent or null → `None`).
pub(crate) fn opt<'a, T: Deserialize<'a>>(
    v: Option<&'a RawValue>,
    prefix: &str,
    name: &str,
) -> Result<Option<T>, FrameError> {
    v.map(|raw| parse(raw, prefix, name)).transpose()
}

fn parse<'a, T: Deserialize<'a>>(raw: &'a RawValue, prefix: &str, name: &str) -> Result<T, FrameError> {
    serde_json::from_str(raw.get()).map_err(|e| {
        let e = e.to_string();
        let e = e.split(" at line ").next().unwrap_or(&e).to_owned();
        FrameError::wrong(&path(prefix, name), format_args!("has the wrong type: {e}"))
    })
}

/// A `message` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessagePayload {
    /// Whether the message addresses this agent (notifiable).
    pub addressed: bool,
    pub sender: String,
    pub sender_name: Option<String>,
    pub message_id: Option<String>,
    pub body: String,
    /// Milliseconds since the epoch.
    pub timestamp: Option<u64>,
    pub thread_id: Option<String>,
    pub attachments: Vec<Attachment>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Attachment {
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub mimetype: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub mxc: Option<String>,
    #[serde(default)]
    pub msgtype: Option<String>,
}

/// A `command` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPayload {
    pub command: String,
    pub args: String,
    pub user_id: Option<String>,
    pub user_name: Option<String>,
    pub thread_id: Option<String>,
}

/// A `room_join` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomJoinPayload {
    pub member: String,
    pub member_name: Option<String>,
    pub timestamp: Option<u64>,
    pub listening: Option<bool>,
}

/// The fields every `task_*` payload shares; the rest (`summary`, `update`, `outcome`, ...)
/// stay in the raw payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskPayload {
    pub task_id: String,
    pub requester_agent_id: Option<String>,
    pub performer_agent_id: Option<String>,
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    addressed: Field<'a>,
    #[serde(borrow, default)]
    sender: Field<'a>,
    #[serde(borrow, default)]
    sender_name: Field<'a>,
    #[serde(borrow, default)]
    message_id: Field<'a>,
    #[serde(borrow, default)]
    body: Field<'a>,
    #[serde(borrow, default)]
    timestamp: Field<'a>,
    #[serde(borrow, default)]
    thread_id: Field<'a>,
    #[serde(borrow, default)]
    attachments: Field<'a>,
    #[serde(borrow, default)]
    command: Field<'a>,
    #[serde(borrow, default)]
    args: Field<'a>,
    #[serde(borrow, default)]
    user_id: Field<'a>,
    #[serde(borrow, default)]
    user_name: Field<'a>,
    #[serde(borrow, default)]
    member: Field<'a>,
    #[serde(borrow, default)]
    member_name: Field<'a>,
    #[serde(borrow, default)]
    listening: Field<'a>,
    #[serde(borrow, default)]
    task_id: Field<'a>,
    #[serde(borrow, default)]
    requester_agent_id: Field<'a>,
    #[serde(borrow, default)]
    performer_agent_id: Field<'a>,
}

impl DomainEvent {
    fn fields(&self, want: bool, kind: &str) -> Result<Fields<'_>, FrameError> {
        if !want {
            return Err(FrameError::mismatch(
                "data.type",
                format_args!("is `{}`, not `{kind}`", self.kind.as_str()),
            ));
        }
        if !self.payload.get().starts_with('{') {
            return Err(FrameError::wrong("payload", "must be a JSON object"));
        }
        serde_json::from_str(self.payload.get()).map_err(|e| FrameError::syntax(format!("payload: {e}")))
    }

    /// The payload of a `message` event.
    pub fn message(&self) -> Result<MessagePayload, FrameError> {
        let f = self.fields(self.kind == EventKind::Message, "message")?;
        Ok(MessagePayload {
            addressed: opt(f.addressed, P, "addressed")?.unwrap_or(false),
            sender: req(f.sender, P, "sender")?,
            sender_name: opt(f.sender_name, P, "sender_name")?,
            message_id: opt(f.message_id, P, "message_id")?,
            body: req(f.body, P, "body")?,
            timestamp: opt(f.timestamp, P, "timestamp")?,
            thread_id: opt(f.thread_id, P, "thread_id")?,
            attachments: opt(f.attachments, P, "attachments")?.unwrap_or_default(),
        })
    }

    /// The payload of a `command` event.
    pub fn command(&self) -> Result<CommandPayload, FrameError> {
        let f = self.fields(self.kind == EventKind::Command, "command")?;
        Ok(CommandPayload {
            command: req(f.command, P, "command")?,
            args: opt(f.args, P, "args")?.unwrap_or_default(),
            user_id: opt(f.user_id, P, "user_id")?,
            user_name: opt(f.user_name, P, "user_name")?,
            thread_id: opt(f.thread_id, P, "thread_id")?,
        })
    }

    /// The payload of a `room_join` event.
    pub fn room_join(&self) -> Result<RoomJoinPayload, FrameError> {
        let f = self.fields(self.kind == EventKind::RoomJoin, "room_join")?;
        Ok(RoomJoinPayload {
            member: req(f.member, P, "member")?,
            member_name: opt(f.member_name, P, "member_name")?,
            timestamp: opt(f.timestamp, P, "timestamp")?,
            listening: opt(f.listening, P, "listening")?,
        })
    }

    /// The shared fields of a `task_*` event.
    pub fn task(&self) -> Result<TaskPayload, FrameError> {
        let f = self.fields(self.kind.is_task(), "task_*")?;
        Ok(TaskPayload {
            task_id: req(f.task_id, P, "task_id")?,
            requester_agent_id: opt(f.requester_agent_id, P, "requester_agent_id")?,
            performer_agent_id: opt(f.performer_agent_id, P, "performer_agent_id")?,
        })
    }
}
