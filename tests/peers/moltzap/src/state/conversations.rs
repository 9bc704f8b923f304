//! The conversation methods: lookups, create, manage (members, names, archive), list and get.

use super::*;

impl State {
    pub(super) fn lookup(&self, p: Option<&RawValue>, by_name: bool) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct Ids {
            agent_ids: Vec<String>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Names {
            names: Vec<String>,
        }
        let ids: Vec<String> = if by_name {
            let n: Names = params(p)?;
            if !(1..=100).contains(&n.names.len()) {
                return Err(invalid());
            }
            n.names.iter().filter_map(|n| self.by_name.get(n).cloned()).collect()
        } else {
            let i: Ids = params(p)?;
            if !(1..=100).contains(&i.agent_ids.len()) || !i.agent_ids.iter().all(|i| is_uuid(i)) {
                return Err(invalid());
            }
            i.agent_ids
        };
        let agents: Vec<AgentCard<'_>> = ids
            .iter()
            .filter_map(|id| self.agents.get(id))
            .map(Agent::card)
            .collect();
        wrap("agents", &agents)
    }

    pub(super) fn create(&mut self, conn: u64, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct P {
            #[serde(rename = "type")]
            kind: String,
            #[serde(default)]
            name: Option<String>,
            participants: Vec<Ref>,
        }
        let p: P = params(p)?;
        if p.participants.iter().any(|r| r.kind != "agent" || !is_uuid(&r.id))
            || p.name.as_ref().is_some_and(|n| n.is_empty() || n.len() > 256)
        {
            return Err(invalid());
        }
        let mut others: Vec<String> = Vec::new();
        for r in p.participants {
            if r.id != me && !others.contains(&r.id) {
                others.push(r.id);
            }
        }
        if let Some(missing) = others.iter().find(|id| !self.agents.contains_key(*id)) {
            return Err(fail(-32002, format!("Agent '{missing}' not found")));
        }
        let kind = match p.kind.as_str() {
            "dm" if others.len() == 1 && p.name.is_none() => "dm",
            "group" if !others.is_empty() => "group",
            _ => return Err(invalid()),
        };
        if kind == "group" && others.len() + 1 > MAX_GROUP {
            return Err(fail(-32017, "Maximum participants exceeded"));
        }
        if kind == "dm" {
            if let Some(existing) = self.find_dm(me, &others[0]) {
                let c = &self.conversations[&existing];
                return wrap("conversation", &c.view());
            }
        }
        let id = self.new_conversation(kind, p.name, me, &others)?;
        let c = &self.conversations[&id];
        let raw = wrap("conversation", &c.view())?;
        let members: Vec<&str> = c.members.iter().map(|m| m.agent.as_str()).collect();
        self.fan_out(&members, conn, "conversations/created", &raw);
        Ok(raw)
    }

    /// The conversation management methods; each answers `{}`.
    pub(super) fn manage(&mut self, conn: u64, me: &str, method: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            conversation_id: String,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            until: Option<String>,
            #[serde(default)]
            participant: Option<Ref>,
        }
        let p: P = params(p)?;
        let allowed = match method {
            "conversations/update" => p.until.is_none() && p.participant.is_none(),
            "conversations/mute" => p.name.is_none() && p.participant.is_none(),
            "conversations/addParticipant" | "conversations/removeParticipant" => {
                p.name.is_none()
                    && p.until.is_none()
                    && p.participant
                        .as_ref()
                        .is_some_and(|r| r.kind == "agent" && is_uuid(&r.id))
            }
            _ => p.name.is_none() && p.until.is_none() && p.participant.is_none(),
        };
        if !allowed {
            return Err(invalid());
        }
        let id = self.conversation_of(me, &p.conversation_id)?.id.clone();
        let now = now_iso();
        let members_before: Vec<String> = self.conversations[&id]
            .members
            .iter()
            .map(|m| m.agent.clone())
            .collect();
        let (event, payload) = {
            let c = self.conversations.get_mut(&id).ok_or_else(not_participant)?;
            let membership = matches!(
                method,
                "conversations/leave" | "conversations/addParticipant" | "conversations/removeParticipant"
            );
            if c.fixed && membership {
                return Err(invalid());
            }
            match method {
                "conversations/update" => {
                    match p.name {
                        Some(n) if c.kind == "group" && !n.is_empty() && n.len() <= 256 => c.name = Some(n),
                        Some(_) => return Err(invalid()),
                        None => {}
                    }
                    c.updated_at = now.clone();
                    (Some("conversations/updated"), wrap("conversation", &c.view())?)
                }
                "conversations/mute" => {
                    c.muted.insert(me.to_string());
                    (None, ok(&serde_json::json!({}))?)
                }
                "conversations/unmute" => {
                    c.muted.remove(me);
                    (None, ok(&serde_json::json!({}))?)
                }
                "conversations/leave" => {
                    c.members.retain(|m| m.agent != me);
                    (None, ok(&serde_json::json!({}))?)
                }
                "conversations/archive" => {
                    c.archived_at = Some(now.clone());
                    #[derive(Serialize)]
                    #[serde(rename_all = "camelCase")]
                    struct Archived<'a> {
                        conversation_id: &'a str,
                        archived_at: &'a str,
                        by: &'a str,
                    }
                    let raw = ok(&Archived {
                        conversation_id: &id,
                        archived_at: &now,
                        by: me,
                    })?;
                    (Some("conversations/archived"), raw)
                }
                "conversations/unarchive" => {
                    c.archived_at = None;
                    #[derive(Serialize)]
                    #[serde(rename_all = "camelCase")]
                    struct Unarchived<'a> {
                        conversation_id: &'a str,
                        by: &'a str,
                    }
                    let raw = ok(&Unarchived {
                        conversation_id: &id,
                        by: me,
                    })?;
                    (Some("conversations/unarchived"), raw)
                }
                _ => {
                    let target = p.participant.map(|r| r.id).unwrap_or_default();
                    if c.kind != "group" {
                        return Err(invalid());
                    }
                    if method == "conversations/addParticipant" {
                        if !self.agents.contains_key(&target) {
                            return Err(fail(-32002, format!("Agent '{target}' not found")));
                        }
                        if c.members.len() >= MAX_GROUP {
                            return Err(fail(-32017, "Maximum participants exceeded"));
                        }
                        if !c.has(&target) {
                            c.members.push(Member {
                                agent: target,
                                role: "member",
                                joined_at: now.clone(),
                            });
                        }
                    } else {
                        c.members.retain(|m| m.agent != target);
                    }
                    c.updated_at = now.clone();
                    (Some("conversations/updated"), wrap("conversation", &c.view())?)
                }
            }
        };
        if let Some(event) = event {
            let mut members: Vec<&str> = members_before.iter().map(String::as_str).collect();
            let now_members: Vec<String> = self.conversations[&id]
                .members
                .iter()
                .map(|m| m.agent.clone())
                .collect();
            for m in &now_members {
                if !members.contains(&m.as_str()) {
                    members.push(m);
                }
            }
            self.fan_out(&members, conn, event, &payload);
        }
        ok(&serde_json::json!({}))
    }

    pub(super) fn find_dm(&self, a: &str, b: &str) -> Option<String> {
        self.conversations
            .values()
            .find(|c| c.kind == "dm" && c.has(a) && c.has(b))
            .map(|c| c.id.clone())
    }

    pub(super) fn new_conversation(
        &mut self,
        kind: &'static str,
        name: Option<String>,
        me: &str,
        others: &[String],
    ) -> Result<String, Fail> {
        if self.conversations.len() >= MAX_CONVERSATIONS {
            return Err(fail(-32603, "Internal error"));
        }
        let (id, now, touched) = (uuid(), now_iso(), self.next_seq());
        let member = |agent: &str, role| Member {
            agent: agent.to_string(),
            role,
            joined_at: now.clone(),
        };
        let mut members = vec![member(me, "owner")];
        members.extend(others.iter().map(|o| member(o, "member")));
        self.conversations.insert(
            id.clone(),
            Conversation {
                id: id.clone(),
                kind,
                name,
                created_by: me.to_string(),
                created_at: now.clone(),
                updated_at: now.clone(),
                members,
                messages: VecDeque::new(),
                total: 0,
                last: None,
                touched,
                archived_at: None,
                muted: HashSet::new(),
                fixed: false,
            },
        );
        Ok(id)
    }

    pub(super) fn conversation_of(&self, me: &str, id: &str) -> Result<&Conversation, Fail> {
        if !is_uuid(id) {
            return Err(invalid());
        }
        self.conversations
            .get(id)
            .filter(|c| c.has(me))
            .ok_or_else(not_participant)
    }

    pub(super) fn list_conversations(&self, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct P {
            #[serde(default)]
            limit: Option<usize>,
            #[serde(default)]
            cursor: Option<String>,
            #[serde(default)]
            archived: Option<String>,
        }
        let p: P = params(p)?;
        let limit = p.limit.unwrap_or(50);
        if !(1..=100).contains(&limit)
            || p.archived
                .as_deref()
                .is_some_and(|a| !["exclude", "include", "only"].contains(&a))
        {
            return Err(invalid());
        }
        // A page holds at most `max_conversations_page`: the cursor names the rest.
        let limit = limit.min(self.max_conversations_page);
        let start = match &p.cursor {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| invalid())?,
        };
        let archived = p.archived.as_deref().unwrap_or("exclude");
        let mut convs: Vec<&Conversation> = self
            .conversations
            .values()
            .filter(|c| c.has(me))
            .filter(|c| match archived {
                "exclude" => c.archived_at.is_none(),
                "only" => c.archived_at.is_some(),
                _ => true,
            })
            .collect();
        convs.sort_by_key(|c| std::cmp::Reverse(c.touched));
        let page: Vec<Summary<'_>> = convs.iter().skip(start).take(limit).map(|c| c.summary()).collect();
        #[derive(Serialize)]
        struct R<'a> {
            conversations: Vec<Summary<'a>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            cursor: Option<String>,
        }
        // Any cursor a client sends: no overflow past the last page.
        let end = start.saturating_add(limit);
        let cursor = (end < convs.len()).then(|| end.to_string());
        ok(&R {
            conversations: page,
            cursor,
        })
    }

    pub(super) fn get_conversation(&self, me: &str, p: Option<&RawValue>) -> Answer {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct P {
            conversation_id: String,
        }
        let p: P = params(p)?;
        let c = self.conversation_of(me, &p.conversation_id)?;
        let participants: Vec<ParticipantView<'_>> = c
            .members
            .iter()
            .map(|m| ParticipantView {
                conversation_id: &c.id,
                participant: ParticipantRef {
                    kind: "agent",
                    id: &m.agent,
                },
                role: m.role,
                joined_at: &m.joined_at,
                agent_name: self.agents.get(&m.agent).map_or("", |a| a.name.as_str()),
            })
            .collect();
        #[derive(Serialize)]
        struct R<'a> {
            conversation: ConversationView<'a>,
            participants: Vec<ParticipantView<'a>>,
        }
        ok(&R {
            conversation: c.view(),
            participants,
        })
    }
}
