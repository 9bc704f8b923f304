//! Typed methods: the released method table in full, plus the current generation's
//! `agent/message/list`. Each builds its params with serde and goes through [`Session::call`];
//! the result comes as [`super::Event::Response`] (raw JSON).

use super::{Part, RequestId, Session};
use crate::errors::MoltZapError;
use crate::frame::Generation;
use agentwire_core::Millis;
use serde::Serialize;

/// Whether calling `method` twice is the same as calling it once, so that a request sent and
/// never answered may be made again ([`agentwire_core::Error::unanswered`]): the reads (and
/// `system/ping`). Anything else, a method this engine does not know included, may act twice. A
/// `messages/send` never is, whatever its `postId`: a server that implements that agentwire
/// extension answers a repeat with the original message, but the spec has no `postId` and a
/// server that ignores unknown keys posts twice, and the engine cannot know which it talks to.
pub(crate) fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "system/ping"
            | "agents/lookup"
            | "agents/lookupByName"
            | "agents/list"
            | "conversations/list"
            | "conversations/get"
            | "messages/list"
            | "agent/message/list"
            | "presence/subscribe"
    )
}

/// `dm` or `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversationKind {
    Dm,
    Group,
}

/// A conversation participant: `{"type":"agent","id"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Participant {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
}

impl Participant {
    pub fn agent(id: impl Into<String>) -> Participant {
        Participant {
            kind: "agent".to_string(),
            id: id.into(),
        }
    }
}

/// `conversations/create` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateConversation {
    #[serde(rename = "type")]
    pub kind: ConversationKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub participants: Vec<Participant>,
}

/// `conversations/list` `archived` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArchivedFilter {
    Exclude,
    Include,
    Only,
}

/// `conversations/list` params (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ListConversations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived: Option<ArchivedFilter>,
}

/// `messages/send` params: a `conversation_id`, or a `to`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// `agent:<name>` creates or reuses the DM with that agent. Current generation, agentwire
    /// extension: `group:<name>,<name>,...` resolves to the one fixed-member group conversation
    /// of exactly those agents (the sender added when omitted), created on first use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    pub parts: Vec<Part>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_id: Option<String>,
    /// Current generation, agentwire extension: the sender's id for this post (1..=128 printable
    /// ASCII), echoed on the `Message`. A server that implements the extension deduplicates it
    /// per sender: sending the same `postId` again answers the original message and stores
    /// nothing. One that does not ignores it, so a send that carries one is still not retryable
    /// when it went out and was not answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_id: Option<String>,
}

impl SendMessage {
    /// One text part to a conversation.
    pub fn text_to_conversation(conversation_id: impl Into<String>, text: impl Into<String>) -> SendMessage {
        SendMessage {
            conversation_id: Some(conversation_id.into()),
            parts: vec![Part::text(text)],
            ..SendMessage::default()
        }
    }

    /// One text part to `agent:<name>`.
    pub fn text_to_agent(name: &str, text: impl Into<String>) -> SendMessage {
        SendMessage {
            to: Some(format!("agent:{name}")),
            parts: vec![Part::text(text)],
            ..SendMessage::default()
        }
    }
}

/// `presence/update` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PresenceStatus {
    Online,
    Offline,
    Away,
}

/// `agent/message/list` params (current generation): the spec names only `limit`, which bounds
/// the window recovered after a reconnect; `conversation_id` narrows it when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageList {
    pub limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConversationId<'a> {
    conversation_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentIds<'a> {
    agent_ids: &'a [&'a str],
}

#[derive(Serialize)]
struct Names<'a> {
    names: &'a [&'a str],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Update<'a> {
    conversation_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Mute<'a> {
    conversation_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    until: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WithParticipant<'a> {
    conversation_id: &'a str,
    participant: &'a Participant,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListMessages<'a> {
    conversation_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<u32>,
}

#[derive(Serialize)]
struct Status {
    status: PresenceStatus,
}

type R = Result<RequestId, MoltZapError>;

impl Session {
    /// `system/ping {}` → `{ts}`.
    pub fn system_ping(&mut self, now: Millis) -> R {
        self.call_serialized(now, "system/ping", &Empty {})
    }

    /// `agents/lookup {agentIds}` → `{agents:[AgentCard]}`.
    pub fn agents_lookup(&mut self, now: Millis, agent_ids: &[&str]) -> R {
        self.call_serialized(now, "agents/lookup", &AgentIds { agent_ids })
    }

    /// `agents/lookupByName {names}` → `{agents:[AgentCard]}`.
    pub fn agents_lookup_by_name(&mut self, now: Millis, names: &[&str]) -> R {
        self.call_serialized(now, "agents/lookupByName", &Names { names })
    }

    /// `agents/list {}` → `{agents:{id:AgentCard}}`.
    pub fn agents_list(&mut self, now: Millis) -> R {
        self.call_serialized(now, "agents/list", &Empty {})
    }

    /// `conversations/create` → `{conversation}`.
    pub fn conversations_create(&mut self, now: Millis, params: &CreateConversation) -> R {
        self.call_serialized(now, "conversations/create", params)
    }

    /// `conversations/list` → `{conversations, cursor?}`.
    pub fn conversations_list(&mut self, now: Millis, params: &ListConversations) -> R {
        self.call_serialized(now, "conversations/list", params)
    }

    /// `conversations/get {conversationId}` → `{conversation, participants}`.
    pub fn conversations_get(&mut self, now: Millis, conversation_id: &str) -> R {
        self.call_serialized(now, "conversations/get", &ConversationId { conversation_id })
    }

    /// `conversations/update {conversationId, name?}` → `{}`.
    pub fn conversations_update(&mut self, now: Millis, conversation_id: &str, name: Option<&str>) -> R {
        self.call_serialized(now, "conversations/update", &Update { conversation_id, name })
    }

    /// `conversations/mute {conversationId, until?}` → `{}`.
    pub fn conversations_mute(&mut self, now: Millis, conversation_id: &str, until: Option<&str>) -> R {
        self.call_serialized(now, "conversations/mute", &Mute { conversation_id, until })
    }

    /// `conversations/unmute {conversationId}` → `{}`.
    pub fn conversations_unmute(&mut self, now: Millis, conversation_id: &str) -> R {
        self.call_serialized(now, "conversations/unmute", &ConversationId { conversation_id })
    }

    /// `conversations/leave {conversationId}` → `{}`.
    pub fn conversations_leave(&mut self, now: Millis, conversation_id: &str) -> R {
        self.call_serialized(now, "conversations/leave", &ConversationId { conversation_id })
    }

    /// `conversations/archive {conversationId}` → `{}`.
    pub fn conversations_archive(&mut self, now: Millis, conversation_id: &str) -> R {
        self.call_serialized(now, "conversations/archive", &ConversationId { conversation_id })
    }

    /// `conversations/unarchive {conversationId}` → `{}`.
    pub fn conversations_unarchive(&mut self, now: Millis, conversation_id: &str) -> R {
        self.call_serialized(now, "conversations/unarchive", &ConversationId { conversation_id })
    }

    /// `conversations/addParticipant {conversationId, participant}` → `{}`.
    pub fn conversations_add_participant(
        &mut self,
        now: Millis,
        conversation_id: &str,
        participant: &Participant,
    ) -> R {
        self.with_participant(now, "conversations/addParticipant", conversation_id, participant)
    }

    /// `conversations/removeParticipant {conversationId, participant}` → `{}`.
    pub fn conversations_remove_participant(
        &mut self,
        now: Millis,
        conversation_id: &str,
        participant: &Participant,
    ) -> R {
        self.with_participant(now, "conversations/removeParticipant", conversation_id, participant)
    }

    fn with_participant(&mut self, now: Millis, method: &str, conversation_id: &str, participant: &Participant) -> R {
        let p = WithParticipant {
            conversation_id,
            participant,
        };
        self.call_serialized(now, method, &p)
    }

    /// `messages/send` → `{message}` (decode with [`super::Message::from_wrapped`]).
    pub fn messages_send(&mut self, now: Millis, params: &SendMessage) -> R {
        self.call_serialized(now, "messages/send", params)
    }

    /// `messages/list {conversationId, limit?}` → `{messages, hasMore}`.
    pub fn messages_list(&mut self, now: Millis, conversation_id: &str, limit: Option<u32>) -> R {
        self.call_serialized(now, "messages/list", &ListMessages { conversation_id, limit })
    }

    /// `presence/update {status}` → `{}`.
    pub fn presence_update(&mut self, now: Millis, status: PresenceStatus) -> R {
        self.call_serialized(now, "presence/update", &Status { status })
    }

    /// `presence/subscribe {agentIds}` → `{statuses:[{agentId,status}]}`.
    pub fn presence_subscribe(&mut self, now: Millis, agent_ids: &[&str]) -> R {
        self.call_serialized(now, "presence/subscribe", &AgentIds { agent_ids })
    }

    /// `agent/message/list` (current generation): a bounded window of recent messages, e.g.
    /// after a reconnect.
    pub fn agent_message_list(&mut self, now: Millis, params: &AgentMessageList) -> R {
        self.call_serialized(now, "agent/message/list", params)
    }

    /// Recent messages: one conversation's (`messages/list`), or the window across all of them:
    /// `agent/message/list` in the current generation, the conversations with their last
    /// messages (`conversations/list`) in the released one, which has no such method.
    pub fn recent_messages(&mut self, now: Millis, conversation_id: Option<&str>, limit: u32) -> R {
        match conversation_id {
            Some(c) => self.messages_list(now, c, Some(limit)),
            None if self.generation() == Generation::Current => {
                let p = AgentMessageList {
                    limit,
                    ..Default::default()
                };
                self.agent_message_list(now, &p)
            }
            None => {
                let p = ListConversations {
                    limit: Some(limit),
                    ..Default::default()
                };
                self.conversations_list(now, &p)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn send_message_extension_fields() {
        let plain = SendMessage::text_to_agent("bob", "hi");
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            json!({"to": "agent:bob", "parts": [{"type": "text", "text": "hi"}]})
        );
        assert_eq!(
            serde_json::to_value(SendMessage::text_to_conversation("c1", "hi")).unwrap(),
            json!({"conversationId": "c1", "parts": [{"type": "text", "text": "hi"}]})
        );
        let ext = SendMessage {
            to: Some("group:alice,bob,carol".into()),
            parts: vec![Part::text("q"), Part::data(json!({"op": "multicast"}))],
            post_id: Some("post-1".into()),
            ..SendMessage::default()
        };
        assert_eq!(
            serde_json::to_string(&ext).unwrap(),
            r#"{"to":"group:alice,bob,carol","parts":[{"type":"text","text":"q"},{"type":"data","value":{"op":"multicast"}}],"postId":"post-1"}"#
        );
    }
}
