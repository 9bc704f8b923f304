//! The message methods: send (to an agent, a conversation or a fixed group) and list.

use super::*;

impl State {
    pub(super) fn send_message(&mut self, conn: u64, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            #[serde(default)]
            conversation_id: Option<String>,
            #[serde(default)]
            to: Option<String>,
            parts: Vec<Box<RawValue>>,
            #[serde(default)]
            reply_to_id: Option<String>,
            #[serde(default)]
            post_id: Option<String>,
        }
        let p: P = params(p)?;
        let current = self.generation == Generation::Current;
        let parts = p
            .parts
            .iter()
            .map(|raw| parse_part(raw, self.generation))
            .collect::<Result<Vec<Part>, Fail>>()?;
        if !(1..=MAX_PARTS).contains(&parts.len())
            || !parts.iter().all(Part::valid)
            || p.reply_to_id.as_deref().is_some_and(|r| !is_uuid(r))
            || p.post_id.as_deref().is_some_and(|id| !current || !valid_post_id(id))
        {
            return Err(invalid());
        }
        // The same postId from the same sender: the original answer, nothing stored or sent.
        if let Some(post_id) = &p.post_id {
            if let Some(original) = self.posts.get(me).and_then(|s| s.answers.get(post_id)) {
                return Ok(original.clone());
            }
        }
        let conv_id = match (p.conversation_id, p.to) {
            (Some(id), None) => {
                let c = self.conversation_of(me, &id)?;
                if c.archived_at.is_some() {
                    return Err(fail(-32022, "Conversation is archived"));
                }
                c.id.clone()
            }
            (None, Some(to)) => self.resolve_to(me, &to)?,
            _ => return Err(invalid()),
        };
        let message = Message {
            id: uuid(),
            conversation_id: conv_id.clone(),
            sender_id: me.to_string(),
            reply_to_id: p.reply_to_id,
            parts,
            created_at: now_iso(),
            post_id: p.post_id,
        };
        let seq = self.next_seq();
        let preview = message
            .parts
            .iter()
            .find_map(|p| match p {
                Part::Text { text } => Some(text.chars().take(200).collect::<String>()),
                _ => None,
            })
            .unwrap_or_default();
        let raw = wrap("message", &message)?;
        let message_post_id = message.post_id.clone();
        let Some(c) = self.conversations.get_mut(&conv_id) else {
            return Err(not_participant());
        };
        c.last = Some((preview, message.created_at.clone()));
        c.total += 1;
        c.touched = seq;
        c.messages.push_back((seq, message));
        if c.messages.len() > MAX_MESSAGES_PER_CONVERSATION {
            c.messages.pop_front();
        }
        let members: Vec<String> = c.members.iter().map(|m| m.agent.clone()).collect();
        let members: Vec<&str> = members.iter().map(String::as_str).collect();
        self.fan_out(&members, conn, "messages/received", &raw);
        if let Some(post_id) = message_post_id {
            self.posts
                .entry(me.to_string())
                .or_default()
                .remember(post_id, raw.clone());
        }
        Ok(raw)
    }

    /// A `to`: `agent:<name>` (the DM with that agent, created on first use) or, in the current
    /// generation, `group:<name>,<name>,...` (agentwire extension, see [`State::fixed_group`]).
    pub(super) fn resolve_to(&mut self, me: &str, to: &str) -> Result<String, Fail> {
        if self.generation == Generation::Current {
            if let Some(names) = to.strip_prefix("group:") {
                return self.fixed_group(me, names);
            }
        }
        let Some(name) = to.strip_prefix("agent:") else {
            return Err(fail(-32602, "Invalid 'to' format — use agent:<name>"));
        };
        let other = self
            .by_name
            .get(name)
            .cloned()
            .ok_or_else(|| fail(-32002, format!("Agent '{name}' not found")))?;
        if other == me {
            return Err(invalid());
        }
        match self.find_dm(me, &other) {
            Some(id) => Ok(id),
            None => self.new_conversation("dm", None, me, &[other]),
        }
    }

    /// `group:<names>`: the one fixed-member group of exactly these agents and the sender (added
    /// when omitted), created on first use. An unknown name is -32002 (the first in input
    /// order); a name twice, or fewer than 3 or more than 32 members, is -32602.
    pub(super) fn fixed_group(&mut self, me: &str, names: &str) -> Result<String, Fail> {
        let mut ids: Vec<String> = Vec::new();
        for name in names.split(',') {
            match self.by_name.get(name) {
                Some(id) => ids.push(id.clone()),
                None => return Err(fail(-32002, format!("Agent '{name}' not found"))),
            }
        }
        let mut members: BTreeSet<String> = BTreeSet::new();
        for id in &ids {
            if !members.insert(id.clone()) {
                return Err(invalid());
            }
        }
        members.insert(me.to_string());
        if !GROUP_TO_MEMBERS.contains(&members.len()) {
            return Err(invalid());
        }
        let key: Vec<String> = members.into_iter().collect();
        if let Some(id) = self.groups.get(&key) {
            if self.conversations.contains_key(id) {
                return Ok(id.clone());
            }
        }
        let others: Vec<String> = ids.into_iter().filter(|id| id != me).collect();
        let id = self.new_conversation("group", None, me, &others)?;
        if let Some(c) = self.conversations.get_mut(&id) {
            c.fixed = true;
        }
        self.groups.insert(key, id.clone());
        Ok(id)
    }

    /// `messages/list` (conversation required) or `agent/message/list` (conversation optional:
    /// without it, the newest messages over all the agent's conversations).
    pub(super) fn list_messages(&self, me: &str, p: Option<&RawValue>, any_conversation: bool) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            #[serde(default)]
            conversation_id: Option<String>,
            #[serde(default)]
            limit: Option<i64>,
        }
        let p: P = params(p)?;
        let limit = p.limit.unwrap_or(50);
        if !(1..=100).contains(&limit) {
            return Err(invalid());
        }
        let limit = limit as usize;
        let mut all: Vec<&(u64, Message)> = match p.conversation_id {
            Some(id) => self.conversation_of(me, &id)?.messages.iter().collect(),
            None if any_conversation => self
                .conversations
                .values()
                .filter(|c| c.has(me))
                .flat_map(|c| c.messages.iter())
                .collect(),
            None => return Err(invalid()),
        };
        all.sort_by_key(|m| m.0);
        let has_more = all.len() > limit;
        let window: Vec<&Message> = all[all.len().saturating_sub(limit)..].iter().map(|m| &m.1).collect();
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct R<'a> {
            messages: Vec<&'a Message>,
            has_more: bool,
        }
        ok(&R {
            messages: window,
            has_more,
        })
    }
}
