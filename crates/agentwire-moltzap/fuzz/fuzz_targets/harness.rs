//! Fuzzes the harness values that peers and users write (`agentwire_moltzap::harness`), which
//! the `endpoint` target reaches only through its fixed vocabulary: the JSON reader (strict and
//! lenient), canonical JSON, a record's content and its classification, the collective part,
//! the requested schema and the answer content, `parseMessageText`, and the addresses and ids.
//! Nothing may panic; every value read survives its own writing (canonical text parses back to
//! the same value and is a fixed point; a part, schema or answer read from its `to_json` is the
//! same); the lenient parse takes whatever the strict one takes, with no issue; an address or
//! id that parses gives back a text that parses to it again.
//!
//! Messages (`common/messages.rs`): `Message::parse` and `Message::from_wrapped` take exactly
//! what their derived `Deserialize` takes, and read the same message; an endpoint reads its
//! records from the text as a `messages/received` push or as the answer to its recovery's
//! `agent/message/list`, exactly when the text holds them, and drops none in silence.
//!
//! Input: a mode byte (low 2 bits: JSON, message text, addresses and ids, messages; the rest
//! picks the conversation and the clock for `classify`, or for messages where the text goes),
//! then UTF-8 text.
#![no_main]

#[path = "../common/messages.rs"]
mod messages;

use agentwire_moltzap::harness::json::parse_lenient;
use agentwire_moltzap::harness::{
    classify, parse_message_text, to_canonical, AgentAddress, AnswerContent, CollectiveId, CollectivePart, Content,
    Conversation, GroupAddress, JsonPath, JsonValue, MessageAddressInput, Nonce, PostId, RecordHash, RequestedSchema,
};
use libfuzzer_sys::fuzz_target;

fn json(mode: u8, text: &str) {
    let strict = JsonValue::parse(text);
    let lenient = parse_lenient(text);
    if let Ok(v) = &strict {
        let (l, issues) = lenient.as_ref().expect("the lenient parse takes a strict text");
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(l, v);
    }
    let Ok((v, _)) = lenient else { return };
    // Canonical JSON: parses back to the same value, and is a fixed point.
    let canon = to_canonical(&v);
    let back = JsonValue::parse(&canon).unwrap_or_else(|e| panic!("canonical text does not parse: {e}: {canon}"));
    assert_eq!(to_canonical(&back), canon);
    let root = JsonPath::root("x");
    if let Ok(s) = RequestedSchema::parse(&v, &root) {
        assert_eq!(RequestedSchema::parse(&s.to_json(), &root).as_ref(), Ok(&s));
    }
    if let Ok(a) = AnswerContent::parse(&v, &root) {
        assert_eq!(AnswerContent::parse(&a.to_json(), &root).as_ref(), Ok(&a));
    }
    // `[schema, answer]`: the answer checked against the schema.
    if let Some([s, a]) = v.as_array() {
        if let (Ok(s), Ok(a)) = (RequestedSchema::parse(s, &root), AnswerContent::parse(a, &root)) {
            let _ = s.validate(&a, &root);
        }
    }
    if let Ok(p) = CollectivePart::parse(&v) {
        assert_eq!(CollectivePart::parse(&p.to_json()).as_ref(), Ok(&p));
    }
    // A record's content, classified as from bob in a direct or a group conversation.
    if let Ok(c) = Content::from_json(&v) {
        assert_eq!(Content::from_json(&c.to_json()).as_ref(), Ok(&c));
        let alice = AgentAddress::parse("agent:alice").unwrap();
        let bob = AgentAddress::parse("agent:bob").unwrap();
        let conversation = if mode & 4 == 0 {
            Conversation::Direct { peer: bob.clone() }
        } else {
            let carol = AgentAddress::parse("agent:carol").unwrap();
            Conversation::Group(GroupAddress::canonical(&alice, &[bob.clone(), carol]).unwrap())
        };
        let now = if mode & 8 == 0 {
            1_800_000_000_000
        } else {
            u64::MAX - u64::from(mode >> 4)
        };
        let _ = classify(&c, &conversation, &bob, now);
    }
}

fn message_text(text: &str) {
    // The first line is the address (a bad one stands for `agent:bob`), the rest the text.
    let (to, text) = text.split_once('\n').unwrap_or(("agent:bob", text));
    let to = MessageAddressInput::parse(to).unwrap_or_else(|_| MessageAddressInput::parse("agent:bob").unwrap());
    if let Err(e) = parse_message_text(to, text) {
        let _ = e.to_string();
    }
}

fn ids(text: &str) {
    if let Ok(a) = AgentAddress::parse(text) {
        assert_eq!(AgentAddress::parse(&a.to_string()).as_ref().ok(), Some(&a));
    }
    if let Ok(g) = GroupAddress::parse(text) {
        assert_eq!(GroupAddress::parse(&g.to_string()).as_ref().ok(), Some(&g));
    }
    if let Ok(m) = MessageAddressInput::parse(text) {
        assert_eq!(MessageAddressInput::parse(&m.to_string()).as_ref().ok(), Some(&m));
        let me = AgentAddress::parse("agent:alice").unwrap();
        if let Ok(c) = m.canonical(&me) {
            let _ = c.to_string();
        }
    }
    if let Some(p) = PostId::parse(text) {
        assert_eq!(PostId::parse(p.as_str()).as_ref(), Some(&p));
    }
    if let Some(n) = Nonce::parse(text) {
        assert_eq!(Nonce::parse(n.as_str()).as_ref(), Some(&n));
    }
    if let Some(c) = CollectiveId::parse(text) {
        assert_eq!(CollectiveId::parse(c.as_str()).as_ref(), Some(&c));
    }
    if let Some(h) = RecordHash::parse(text) {
        assert_eq!(RecordHash::parse(h.as_str()).as_ref(), Some(&h));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    match mode & 3 {
        0 => json(mode, text),
        1 => message_text(text),
        2 => ids(text),
        _ => messages::check(mode, text),
    }
});
