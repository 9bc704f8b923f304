//! Addresses: [`AgentAddress`], [`GroupAddress`], [`MessageAddressInput`] and the canonical
//! [`MessageAddress`] a send resolves its input to.
//!
//! - An agent name is the Registry's name rule (the one registration enforces,
//!   [`crate::register::valid_name`]): `^[a-z0-9][a-z0-9_-]{1,30}[a-z0-9]$`, 3 to 32 bytes.
//! - `AgentAddress` is exactly `agent:` + a name. Nothing else is accepted: no upper case, no
//!   whitespace, no other prefix.
//! - `GroupAddress` is complete and canonical: `group:` + the names of **every** member, this
//!   agent included, sorted (byte order, which for this alphabet is also UTF-16 order), joined by
//!   `,` with no spaces: `group:alice,bob,carol`. A group has 3 to 32 members, this agent
//!   included: the spec's `GroupMessage.members` has at least three entries, and two agents
//!   talk in their direct conversation (`agent:`).
//! - The group **input** form is `group:` + names joined by `,`, in any order, this agent's name
//!   optional; [`GroupAddress::canonical`] sorts it, adds this agent when omitted, refuses a
//!   name written twice, and checks the size.
//!
//! Failures: text that is not one of the forms is `invalid-address`; a well-formed address with
//! an impossible membership (a direct send to this agent itself, a name written twice, fewer than
//! 3 or more than 32 members) is `membership-invalid`. Whether each name is a known agent is the
//! Registry's answer (`unknown-agent`), not decided here.

use super::errors::SendError;
use std::fmt;

/// The fewest members of a group, this agent included.
pub const MIN_GROUP_MEMBERS: usize = 3;
/// The most members of a group, this agent included.
pub const MAX_GROUP_MEMBERS: usize = 32;

const NAME_RULE: &str =
    "an agent name is 3 to 32 characters of a-z, 0-9, '_' and '-', starting and ending with a letter or digit";

/// `agent:` + an agent name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentAddress(String);

impl AgentAddress {
    /// The exact `agent:<name>` form, else `invalid-address`.
    pub fn parse(s: &str) -> Result<AgentAddress, SendError> {
        let Some(name) = s.strip_prefix("agent:") else {
            return Err(SendError::invalid_address(s, "an address starts with agent: or group:"));
        };
        AgentAddress::from_name(name).ok_or_else(|| SendError::invalid_address(s, NAME_RULE))
    }

    /// The address of the agent called `name`, when it is a valid name.
    pub fn from_name(name: &str) -> Option<AgentAddress> {
        crate::register::valid_name(name).then(|| AgentAddress(format!("agent:{name}")))
    }

    /// The whole address, `agent:alice`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name, `alice`.
    pub fn name(&self) -> &str {
        &self.0["agent:".len()..]
    }
}

impl fmt::Display for AgentAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A complete group in its canonical spelling (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupAddress {
    /// Sorted by name, each once, 3 to 32 of them.
    members: Vec<AgentAddress>,
}

impl GroupAddress {
    /// The canonical group of `self_agent` and `inputs` (in any order, `self_agent` optional).
    /// A name given twice, or a group of fewer than 3 or more than 32, is `membership-invalid`.
    pub fn canonical(self_agent: &AgentAddress, inputs: &[AgentAddress]) -> Result<GroupAddress, SendError> {
        let mut members = inputs.to_vec();
        members.sort();
        let mut twice: Vec<&str> = members
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0].as_str())
            .collect();
        twice.dedup();
        if !twice.is_empty() {
            return Err(SendError::membership_invalid(format!(
                "{} named more than once in the group",
                twice.join(", ")
            )));
        }
        if let Err(at) = members.binary_search(self_agent) {
            members.insert(at, self_agent.clone());
        }
        if !(MIN_GROUP_MEMBERS..=MAX_GROUP_MEMBERS).contains(&members.len()) {
            return Err(SendError::membership_invalid(format!(
                "a group has {MIN_GROUP_MEMBERS} to {MAX_GROUP_MEMBERS} members including this agent, and {} has {}",
                spell(&members),
                members.len()
            )));
        }
        Ok(GroupAddress { members })
    }

    /// The canonical spelling only (sorted, each name once, 3 to 32 names), as records and
    /// results carry it; anything else is `invalid-address`.
    pub fn parse(s: &str) -> Result<GroupAddress, SendError> {
        let members = parse_group_names(s)?;
        let sorted = members.windows(2).all(|w| w[0] < w[1]);
        if !sorted || !(MIN_GROUP_MEMBERS..=MAX_GROUP_MEMBERS).contains(&members.len()) {
            return Err(SendError::invalid_address(
                s,
                "a canonical group lists 3 to 32 distinct names in sorted order",
            ));
        }
        Ok(GroupAddress { members })
    }

    /// Every member, this agent included, sorted.
    pub fn members(&self) -> &[AgentAddress] {
        &self.members
    }

    /// The members other than `agent`, sorted.
    pub fn others<'a>(&'a self, agent: &'a AgentAddress) -> impl Iterator<Item = &'a AgentAddress> + 'a {
        self.members.iter().filter(move |m| *m != agent)
    }

    pub fn contains(&self, agent: &AgentAddress) -> bool {
        self.members.binary_search(agent).is_ok()
    }
}

fn spell(members: &[AgentAddress]) -> String {
    let names: Vec<&str> = members.iter().map(AgentAddress::name).collect();
    format!("group:{}", names.join(","))
}

impl fmt::Display for GroupAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&spell(&self.members))
    }
}

/// `group:a,b,…` as written: every name valid, none empty, in input order (duplicates kept for
/// [`GroupAddress::canonical`] to refuse).
fn parse_group_names(s: &str) -> Result<Vec<AgentAddress>, SendError> {
    let Some(list) = s.strip_prefix("group:") else {
        return Err(SendError::invalid_address(s, "an address starts with agent: or group:"));
    };
    let mut out = Vec::new();
    for name in list.split(',') {
        // Bounded: a list far past the largest group is not read to its end.
        if out.len() > 2 * MAX_GROUP_MEMBERS {
            break;
        }
        match AgentAddress::from_name(name) {
            Some(a) => out.push(a),
            None if name.is_empty() => {
                return Err(SendError::invalid_address(
                    s,
                    "a group lists agent names separated by single commas",
                ))
            }
            None => {
                return Err(SendError::invalid_address(
                    s,
                    &format!("{}: {NAME_RULE}", super::errors::quote(name)),
                ))
            }
        }
    }
    Ok(out)
}

/// An address as a send names it: an agent, or a group in the input form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MessageAddressInput {
    Agent(AgentAddress),
    /// The names as written (any order, this agent optional).
    Group(Vec<AgentAddress>),
}

impl MessageAddressInput {
    /// `agent:<name>` or `group:<name>,<name>,…`, else `invalid-address`. Group size and
    /// duplicates are checked by [`MessageAddressInput::canonical`].
    pub fn parse(s: &str) -> Result<MessageAddressInput, SendError> {
        if s.starts_with("group:") {
            let names = parse_group_names(s)?;
            if names.len() > MAX_GROUP_MEMBERS + 1 {
                return Err(SendError::membership_invalid(format!(
                    "a group has {MIN_GROUP_MEMBERS} to {MAX_GROUP_MEMBERS} members including this agent, and {s} names more"
                )));
            }
            Ok(MessageAddressInput::Group(names))
        } else {
            AgentAddress::parse(s).map(MessageAddressInput::Agent)
        }
    }

    /// The canonical address, as seen by `self_agent`: a direct send to itself and every group
    /// [`GroupAddress::canonical`] refuses are `membership-invalid`.
    pub fn canonical(&self, self_agent: &AgentAddress) -> Result<MessageAddress, SendError> {
        match self {
            MessageAddressInput::Agent(a) if a == self_agent => Err(SendError::membership_invalid(format!(
                "{a} is this agent's own address"
            ))),
            MessageAddressInput::Agent(a) => Ok(MessageAddress::Agent(a.clone())),
            MessageAddressInput::Group(names) => GroupAddress::canonical(self_agent, names).map(MessageAddress::Group),
        }
    }
}

impl fmt::Display for MessageAddressInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageAddressInput::Agent(a) => a.fmt(f),
            MessageAddressInput::Group(names) => {
                f.write_str("group:")?;
                for (i, n) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(n.name())?;
                }
                Ok(())
            }
        }
    }
}

impl From<AgentAddress> for MessageAddressInput {
    fn from(a: AgentAddress) -> Self {
        MessageAddressInput::Agent(a)
    }
}

impl From<GroupAddress> for MessageAddressInput {
    fn from(g: GroupAddress) -> Self {
        MessageAddressInput::Group(g.members)
    }
}

impl From<MessageAddress> for MessageAddressInput {
    fn from(a: MessageAddress) -> Self {
        match a {
            MessageAddress::Agent(a) => a.into(),
            MessageAddress::Group(g) => g.into(),
        }
    }
}

/// A resolved, canonical destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MessageAddress {
    Agent(AgentAddress),
    Group(GroupAddress),
}

impl fmt::Display for MessageAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageAddress::Agent(a) => a.fmt(f),
            MessageAddress::Group(g) => g.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::errors::SendErrorReason;
    use super::*;
    use proptest::prelude::*;

    fn agent(name: &str) -> AgentAddress {
        AgentAddress::from_name(name).unwrap()
    }

    fn names(n: usize) -> Vec<AgentAddress> {
        (0..n).map(|i| agent(&format!("member-{i:02}"))).collect()
    }

    fn reason(r: Result<impl fmt::Debug, SendError>) -> SendErrorReason {
        r.unwrap_err().reason
    }

    #[test]
    fn agent_address_is_the_exact_form() {
        assert_eq!(AgentAddress::parse("agent:alice").unwrap().name(), "alice");
        for bad in [
            "alice",
            "agent:",
            "agent:Al",
            "agent:ALICE",
            "Agent:alice",
            " agent:alice",
            "agent:alice ",
            "agent:-alice",
            "agent:alice_",
            "agent:ab",
            "agent:a.b.c",
            "agent:agent:alice",
            "agent:alice,bob",
        ] {
            assert_eq!(
                reason(AgentAddress::parse(bad)),
                SendErrorReason::InvalidAddress,
                "{bad}"
            );
        }
        assert!(AgentAddress::parse(&format!("agent:{}", "a".repeat(32))).is_ok());
        assert!(AgentAddress::parse(&format!("agent:{}", "a".repeat(33))).is_err());
    }

    /// Acceptance: "Address order, self insertion, duplicates, unknown names, and 2/3/32/33 member
    /// boundaries are tested" (unknown names are the Registry's answer: the endpoint's tests).
    #[test]
    fn address_order_self_insertion_duplicates_and_member_boundaries() {
        let me = agent("alice");
        let input = MessageAddressInput::parse("group:carol,bob").unwrap();
        let g = input.canonical(&me).unwrap();
        assert_eq!(g.to_string(), "group:alice,bob,carol", "sorted, self added");
        let same = MessageAddressInput::parse("group:bob,alice,carol")
            .unwrap()
            .canonical(&me)
            .unwrap();
        assert_eq!(same, g, "order and an explicit self do not matter");
        assert_eq!(
            GroupAddress::parse("group:alice,bob,carol").unwrap().to_string(),
            g.to_string()
        );

        let dup = MessageAddressInput::parse("group:bob,carol,bob")
            .unwrap()
            .canonical(&me);
        assert_eq!(
            dup.unwrap_err().to_string(),
            "send failed: agent:bob named more than once in the group"
        );
        let self_twice = MessageAddressInput::parse("group:alice,bob,alice")
            .unwrap()
            .canonical(&me);
        assert_eq!(reason(self_twice), SendErrorReason::MembershipInvalid);

        // 2 members (self + one other) is a direct conversation, not a group.
        let two = GroupAddress::canonical(&me, &[agent("bob")]);
        assert_eq!(
            two.unwrap_err().to_string(),
            "send failed: a group has 3 to 32 members including this agent, and group:alice,bob has 2"
        );
        assert_eq!(
            reason(GroupAddress::canonical(&me, &[me.clone(), agent("bob")])),
            SendErrorReason::MembershipInvalid
        );
        // 3 members: the smallest group.
        assert_eq!(GroupAddress::canonical(&me, &names(2)).unwrap().members().len(), 3);
        // 32 members, self included: the largest.
        assert_eq!(GroupAddress::canonical(&me, &names(31)).unwrap().members().len(), 32);
        let mut with_self = names(31);
        with_self.insert(7, me.clone());
        assert_eq!(GroupAddress::canonical(&me, &with_self).unwrap().members().len(), 32);
        // 33: one too many.
        assert_eq!(
            reason(GroupAddress::canonical(&me, &names(32))),
            SendErrorReason::MembershipInvalid
        );
        let mut with_self = names(32);
        with_self.push(me.clone());
        assert_eq!(
            reason(GroupAddress::canonical(&me, &with_self)),
            SendErrorReason::MembershipInvalid
        );
        // The same through the text form.
        let text = |n: usize| {
            let list: Vec<String> = names(n).iter().map(|a| a.name().to_owned()).collect();
            format!("group:{}", list.join(","))
        };
        assert!(MessageAddressInput::parse(&text(31)).unwrap().canonical(&me).is_ok());
        assert_eq!(
            reason(MessageAddressInput::parse(&text(32)).unwrap().canonical(&me)),
            SendErrorReason::MembershipInvalid
        );
        assert_eq!(
            reason(MessageAddressInput::parse(&text(100))),
            SendErrorReason::MembershipInvalid
        );
    }

    /// 33 names (32 members, this agent among them, and one written twice) are read, so the
    /// canonical group names the duplicate; 34 are refused as they are read. Past 64 names the
    /// list is not read on: a bad 65th name is seen, a bad 66th is not.
    #[test]
    fn a_group_input_is_read_to_33_names_and_its_list_to_65() {
        let me = agent("alice");
        let text = |list: &[AgentAddress], tail: &str| {
            let list: Vec<&str> = list.iter().map(AgentAddress::name).collect();
            format!("group:{}{tail}", list.join(","))
        };
        let mut dup = names(31);
        dup.push(me.clone());
        dup.push(agent("member-00"));
        let input = MessageAddressInput::parse(&text(&dup, "")).unwrap();
        assert_eq!(
            input.canonical(&me).unwrap_err().to_string(),
            "send failed: agent:member-00 named more than once in the group"
        );
        let e = MessageAddressInput::parse(&text(&names(34), "")).unwrap_err();
        assert_eq!(e.reason, SendErrorReason::MembershipInvalid);
        assert!(e.to_string().ends_with("names more"), "{e}");

        assert_eq!(
            reason(MessageAddressInput::parse(&text(&names(64), ",Bad"))),
            SendErrorReason::InvalidAddress
        );
        assert_eq!(
            reason(MessageAddressInput::parse(&text(&names(65), ",Bad"))),
            SendErrorReason::MembershipInvalid
        );
    }

    #[test]
    fn direct_send_to_self_is_refused() {
        let me = agent("alice");
        let e = MessageAddressInput::parse("agent:alice")
            .unwrap()
            .canonical(&me)
            .unwrap_err();
        assert_eq!(e.reason, SendErrorReason::MembershipInvalid);
        assert_eq!(e.to_string(), "send failed: agent:alice is this agent's own address");
        assert_eq!(
            MessageAddressInput::parse("agent:bob").unwrap().canonical(&me).unwrap(),
            MessageAddress::Agent(agent("bob"))
        );
    }

    #[test]
    fn malformed_addresses_are_invalid_address() {
        for bad in [
            "",
            "group:",
            "group:bob,,carol",
            "group:bob, carol",
            "group:bob,carol,",
            "group:,bob",
            "group:agent:bob,carol",
            "group:Bob,carol",
            "room:x",
            "agent:alice\n",
        ] {
            assert_eq!(
                reason(MessageAddressInput::parse(bad)),
                SendErrorReason::InvalidAddress,
                "{bad:?}"
            );
        }
        // An empty name is a stray comma, not a bad name.
        assert_eq!(
            MessageAddressInput::parse("group:bob,,carol").unwrap_err().to_string(),
            "send failed: \"group:bob,,carol\" is not an address: a group lists agent names separated by single commas"
        );
        assert_eq!(
            MessageAddressInput::parse("group:bob,Carol").unwrap_err().to_string(),
            "send failed: \"group:bob,Carol\" is not an address: \"Carol\": an agent name is 3 to 32 characters of a-z, 0-9, '_' and '-', starting and ending with a letter or digit"
        );
        // Quoted as JSON strings (review finding "Error messages"), not with `{:?}` escapes.
        assert_eq!(
            MessageAddressInput::parse("group:bob,da\tna").unwrap_err().to_string(),
            "send failed: \"group:bob,da\\tna\" is not an address: \"da\\tna\": an agent name is 3 to 32 characters of a-z, 0-9, '_' and '-', starting and ending with a letter or digit"
        );
        assert!(MessageAddressInput::parse("agent:da\u{1}na")
            .unwrap_err()
            .to_string()
            .starts_with(r#"send failed: "agent:da\u0001na" is not an"#));
        for not_canonical in ["group:bob,alice,carol", "group:alice,alice,bob", "group:alice,bob"] {
            assert_eq!(
                reason(GroupAddress::parse(not_canonical)),
                SendErrorReason::InvalidAddress
            );
        }
    }

    proptest! {
        #[test]
        fn parsers_take_any_text(s in any::<String>()) {
            let me = agent("alice");
            if let Ok(input) = MessageAddressInput::parse(&s) {
                if let Ok(canonical) = input.canonical(&me) {
                    // The canonical spelling parses back to itself.
                    let text = canonical.to_string();
                    let back = MessageAddressInput::parse(&text).unwrap().canonical(&me).unwrap();
                    prop_assert_eq!(back.to_string(), text);
                }
            }
            let _ = (AgentAddress::parse(&s), GroupAddress::parse(&s));
        }

        #[test]
        fn any_order_gives_one_spelling(mut ns in prop::collection::btree_set("[a-z][a-z0-9]{2,6}", 2..31), seed in any::<u64>()) {
            let me = agent("zzz-me");
            ns.remove("zzz-me");
            prop_assume!(ns.len() >= 2);
            let list: Vec<AgentAddress> = ns.iter().map(|n| agent(n)).collect();
            let mut shuffled = list.clone();
            let k = (seed as usize) % shuffled.len();
            shuffled.rotate_left(k);
            shuffled.reverse();
            let a = GroupAddress::canonical(&me, &list).unwrap();
            prop_assert_eq!(&GroupAddress::canonical(&me, &shuffled).unwrap(), &a);
            prop_assert_eq!(GroupAddress::parse(&a.to_string()).unwrap(), a);
        }
    }
}
