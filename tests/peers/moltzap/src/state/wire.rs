//! What the methods store and how it is shown on the wire: message parts, messages, agents,
//! conversations and their views.

use super::*;

/// A message part. `data` is agentwire's extension (current generation only): it is never
/// deserialized through this enum but by [`parse_part`], which keeps the value's text as received.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(super) enum Part {
    Text {
        text: String,
    },
    Image {
        url: String,
        #[serde(rename = "altText", default, skip_serializing_if = "Option::is_none")]
        alt_text: Option<String>,
    },
    File {
        url: String,
        name: String,
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    #[serde(skip_deserializing)]
    Data {
        value: Box<RawValue>,
    },
}

/// One part of `messages/send`: a `data` part in the current generation (any JSON value, kept as
/// received), else one of the spec's. Anything else is -32602.
pub(super) fn parse_part(raw: &RawValue, generation: Generation) -> Result<Part, Fail> {
    #[derive(Deserialize)]
    struct Tag {
        #[serde(rename = "type", default)]
        kind: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Data {
        #[serde(rename = "type")]
        _kind: String,
        value: Box<RawValue>,
    }
    let tag: Tag = serde_json::from_str(raw.get()).map_err(|_| invalid())?;
    if generation == Generation::Current && tag.kind.as_deref() == Some("data") {
        let d: Data = serde_json::from_str(raw.get()).map_err(|_| invalid())?;
        return Ok(Part::Data { value: d.value });
    }
    serde_json::from_str(raw.get()).map_err(|_| invalid())
}

/// A `postId`: 1..=128 printable ASCII characters.
pub(super) fn valid_post_id(id: &str) -> bool {
    (1..=MAX_POST_ID).contains(&id.len()) && id.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

impl Part {
    pub(super) fn valid(&self) -> bool {
        match self {
            Part::Text { text } => (1..=MAX_TEXT).contains(&text.encode_utf16().count()),
            Part::Image { url, .. } => !url.is_empty(),
            Part::File { url, name, .. } => !url.is_empty() && !name.is_empty(),
            Part::Data { value } => value.get().len() <= MAX_DATA_BYTES,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Message {
    pub(super) id: String,
    pub(super) conversation_id: String,
    pub(super) sender_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reply_to_id: Option<String>,
    pub(super) parts: Vec<Part>,
    pub(super) created_at: String,
    /// The sender's `postId` (agentwire extension, current generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) post_id: Option<String>,
}

pub(super) struct Agent {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) description: Option<String>,
    pub(super) presence: &'static str,
}

#[derive(Serialize)]
pub(super) struct AgentCard<'a> {
    pub(super) id: &'a str,
    pub(super) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<&'a str>,
    pub(super) status: &'static str,
}

impl Agent {
    pub(super) fn card(&self) -> AgentCard<'_> {
        AgentCard {
            id: &self.id,
            name: &self.name,
            description: self.description.as_deref(),
            status: "active",
        }
    }
}

pub(super) struct Member {
    pub(super) agent: String,
    pub(super) role: &'static str,
    pub(super) joined_at: String,
}

pub(super) struct Conversation {
    pub(super) id: String,
    pub(super) kind: &'static str,
    pub(super) name: Option<String>,
    pub(super) created_by: String,
    pub(super) created_at: String,
    pub(super) updated_at: String,
    pub(super) members: Vec<Member>,
    /// (global sequence, message), oldest first.
    pub(super) messages: VecDeque<(u64, Message)>,
    /// Messages ever sent (the released server's `unreadCount` counts them all: it has no read marks).
    pub(super) total: u64,
    pub(super) last: Option<(String, String)>,
    /// Sequence of the last activity, for ordering lists.
    pub(super) touched: u64,
    /// Set by `conversations/archive` (for every participant).
    pub(super) archived_at: Option<String>,
    /// Agents that muted the conversation.
    pub(super) muted: HashSet<String>,
    /// The fixed-member group of a `group:` send (agentwire extension): its members never change.
    pub(super) fixed: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ConversationView<'a> {
    pub(super) id: &'a str,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<&'a str>,
    pub(super) created_by: &'a str,
    pub(super) created_at: &'a str,
    pub(super) updated_at: &'a str,
}

#[derive(Serialize)]
pub(super) struct ParticipantRef<'a> {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Summary<'a> {
    pub(super) id: &'a str,
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) last_message_preview: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) last_message_timestamp: Option<&'a str>,
    pub(super) unread_count: u64,
    pub(super) participants: Vec<ParticipantRef<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ParticipantView<'a> {
    pub(super) conversation_id: &'a str,
    pub(super) participant: ParticipantRef<'a>,
    pub(super) role: &'static str,
    pub(super) joined_at: &'a str,
    pub(super) agent_name: &'a str,
}

impl Conversation {
    pub(super) fn has(&self, agent: &str) -> bool {
        self.members.iter().any(|m| m.agent == agent)
    }

    pub(super) fn view(&self) -> ConversationView<'_> {
        ConversationView {
            id: &self.id,
            kind: self.kind,
            name: self.name.as_deref(),
            created_by: &self.created_by,
            created_at: &self.created_at,
            updated_at: &self.updated_at,
        }
    }

    pub(super) fn summary(&self) -> Summary<'_> {
        Summary {
            id: &self.id,
            kind: self.kind,
            name: self.name.as_deref(),
            last_message_preview: self.last.as_ref().map(|l| l.0.as_str()),
            last_message_timestamp: self.last.as_ref().map(|l| l.1.as_str()),
            unread_count: self.total,
            participants: self
                .members
                .iter()
                .map(|m| ParticipantRef {
                    kind: "agent",
                    id: &m.agent,
                })
                .collect(),
        }
    }
}
