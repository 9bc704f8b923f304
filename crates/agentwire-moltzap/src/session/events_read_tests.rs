//! The hand-written decoders of `events.rs` against the derived `Deserialize` they replace: the
//! old decoders are kept here, verbatim, to compare with.

use super::*;
use proptest::prelude::*;
use serde_json::json;
use serde_json::value::RawValue;

/// The decoders as they were, on derived `Deserialize`.
mod old {
    use super::*;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct HelloWire {
        #[serde(default)]
        protocol_version: Option<serde_json::Value>,
        #[serde(default)]
        agent_id: Option<serde_json::Value>,
        #[serde(default)]
        policy: Option<serde_json::Value>,
    }

    pub fn hello(raw: &str) -> Option<HelloOk> {
        if !raw.trim_start().starts_with('{') {
            return None;
        }
        let w: HelloWire = serde_json::from_str(raw).ok()?;
        let text = |v: Option<serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => Some(s),
            _ => None,
        };
        let heartbeat_interval_ms = w
            .policy
            .as_ref()
            .and_then(|p| p.get("heartbeatIntervalMs"))
            .and_then(serde_json::Value::as_u64);
        Some(HelloOk {
            raw: raw.to_string(),
            protocol_version: text(w.protocol_version),
            agent_id: text(w.agent_id),
            heartbeat_interval_ms,
        })
    }

    #[derive(Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Ids<'a> {
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
        #[serde(default, borrow)]
        conversation_id: Option<&'a RawValue>,
        #[serde(default, borrow)]
        sender_id: Option<&'a RawValue>,
        #[serde(default, borrow)]
        agent_id: Option<&'a RawValue>,
        #[serde(default, borrow)]
        status: Option<&'a RawValue>,
        #[serde(default, borrow)]
        message: Option<Box<Ids<'a>>>,
        #[serde(default, borrow)]
        conversation: Option<Box<Ids<'a>>>,
    }

    fn text(v: &Option<&RawValue>) -> Option<String> {
        v.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
    }

    /// Every routing field the events take from `payload`.
    pub fn routing(payload: &str) -> [Option<String>; 7] {
        let ids: Ids = if payload.starts_with('{') {
            serde_json::from_str(payload).unwrap_or_default()
        } else {
            Ids::default()
        };
        let m = ids.message.as_deref();
        [
            m.and_then(|m| text(&m.conversation_id)),
            m.and_then(|m| text(&m.id)),
            m.and_then(|m| text(&m.sender_id)),
            ids.conversation.as_deref().and_then(|c| text(&c.id)),
            text(&ids.conversation_id),
            text(&ids.agent_id),
            text(&ids.status),
        ]
    }

    #[derive(Deserialize)]
    struct MessageWrap {
        message: Message,
    }

    pub fn wrapped(json: &str) -> Option<Message> {
        serde_json::from_str::<MessageWrap>(json).ok().map(|w| w.message)
    }

    pub fn bare(json: &str) -> Option<Message> {
        serde_json::from_str::<Message>(json).ok()
    }
}

/// The routing fields `push_event` gives for `payload`, in the order of [`old::routing`].
fn routing(payload: &str) -> [Option<String>; 7] {
    let ev = |name: &str| push_event(name.to_string(), Some(payload.to_string()));
    let (mut conv, mut msg, mut sender) = (None, None, None);
    if let Event::MessageReceived {
        conversation_id,
        message_id,
        sender_id,
        ..
    } = ev("messages/received")
    {
        (conv, msg, sender) = (conversation_id, message_id, sender_id);
    }
    let conversation = |name| match ev(name) {
        Event::ConversationCreated { conversation_id, .. }
        | Event::ConversationUpdated { conversation_id, .. }
        | Event::ConversationArchived { conversation_id, .. }
        | Event::ConversationUnarchived { conversation_id, .. } => conversation_id,
        other => panic!("{other:?}"),
    };
    let created = conversation("conversations/created");
    assert_eq!(created, conversation("conversations/updated"));
    let archived = conversation("conversations/archived");
    assert_eq!(archived, conversation("conversations/unarchived"));
    let Event::PresenceChanged { agent_id, status, .. } = ev("presence/changed") else {
        panic!("not a presence event")
    };
    [conv, msg, sender, created, archived, agent_id, status]
}

/// A push routed from its payload on a tape (the one-pass path of a session) is the push routed
/// from the payload's text, for every name.
fn same_push_on_tape(text: &str) {
    let Ok(tape) = agentwire_core::json::read::parse_lenient(text, usize::MAX) else {
        return;
    };
    let raw = tape.root().raw().to_string();
    for name in PUSHES.into_iter().chain(["agents/other"]) {
        let on_tape = push_event_on(name.to_string(), Some(tape.root()));
        assert_eq!(
            on_tape,
            push_event(name.to_string(), Some(raw.clone())),
            "{name}: {text}"
        );
    }
    assert_eq!(
        push_event_on("presence/changed".into(), None),
        push_event("presence/changed".into(), None)
    );
}

fn agree(text: &str) {
    assert_eq!(HelloOk::parse(text).ok(), old::hello(text), "HelloOk: {text}");
    assert_eq!(routing(text), old::routing(text), "routing: {text}");
    same_push_on_tape(text);
    assert_eq!(Message::from_wrapped(text).ok(), old::wrapped(text), "wrapped: {text}");
    assert_eq!(Message::parse(text).ok(), old::bare(text), "bare: {text}");
}

#[test]
fn hello_ok_takes_the_known_fields_of_the_right_type() {
    let full = r#"{"protocolVersion":"2026.425.3","agentId":"a\u0031","policy":{"heartbeatIntervalMs":30000},"x":[1]}"#;
    let h = HelloOk::parse(full).unwrap();
    assert_eq!(
        h,
        HelloOk {
            raw: full.into(),
            protocol_version: Some("2026.425.3".into()),
            agent_id: Some("a1".into()),
            heartbeat_interval_ms: Some(30000)
        }
    );
    let h = HelloOk::parse("{}").unwrap();
    assert_eq!(
        (h.protocol_version, h.agent_id, h.heartbeat_interval_ms),
        (None, None, None)
    );
    // The wrong type is ignored, not refused.
    let h = HelloOk::parse(r#"{"protocolVersion":5,"agentId":null,"policy":{"heartbeatIntervalMs":-1}}"#).unwrap();
    assert_eq!(
        (h.protocol_version, h.agent_id, h.heartbeat_interval_ms),
        (None, None, None)
    );
    // A JSON value's repeated key counts the last time.
    let h = HelloOk::parse(r#"{"policy":{"heartbeatIntervalMs":1,"heartbeatIntervalMs":2}}"#).unwrap();
    assert_eq!(h.heartbeat_interval_ms, Some(2));
    for bad in [
        "[]",
        "\"x\"",
        "{",
        r#"{"agentId":"a","agentId":"b"}"#,
        r#"{"policy":null,"policy":{}}"#,
    ] {
        let e = HelloOk::parse(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Decode, "{bad}");
        assert_eq!(e.error.message, "HelloOk is not a JSON object");
    }
}

#[test]
fn routing_fields_need_the_shape_of_each_level() {
    let p = r#"{"message":{"id":"m","conversationId":"c","senderId":"s","parts":[]},"x":{"message":5}}"#;
    assert_eq!(
        routing(p),
        [
            Some("c".into()),
            Some("m".into()),
            Some("s".into()),
            None,
            None,
            None,
            None
        ]
    );
    let p = r#"{"conversationId":"c","agentId":7,"status":"away","message":null}"#;
    assert_eq!(
        routing(p),
        [None, None, None, None, Some("c".into()), None, Some("away".into())]
    );
    // serde's array form of the routing fields: by position.
    assert_eq!(
        routing(r#"{"message":["m","c",null],"agentId":"a"}"#),
        [
            Some("c".into()),
            Some("m".into()),
            None,
            None,
            None,
            Some("a".into()),
            None
        ]
    );
    // A routing key twice, or a `message` that is not an object or is an array of more items than
    // the routing fields, at any level: nothing is taken.
    for p in [
        r#"{"agentId":"a","status":"s","status":"t"}"#,
        r#"{"agentId":"a","message":"m"}"#,
        r#"{"agentId":"a","conversation":{"message":{"id":1,"id":2}}}"#,
        r#"{"agentId":"a","message":[1,2,3,4,5,6,7,8]}"#,
        r#"{"agentId":"a","message":["m","c","s",null,null,null,null,"x"]}"#,
    ] {
        assert_eq!(routing(p), <[Option<String>; 7]>::default(), "{p}");
    }
}

#[test]
fn message_reads_every_field_and_part() {
    let full = r#"{"message":{"id":"m","conversationId":"c","senderId":"s","replyToId":"r","createdAt":"t","postId":"p","parts":[
        {"type":"text","text":"hi"},
        {"type":"image","url":"u","altText":"a"},
        {"type":"image","url":"u","altText":null},
        {"type":"file","url":"u","name":"n","mimeType":"text/plain","size":3},
        {"type":"file","url":"u","name":"n"},
        {"type":"data","value":null},
        {"type":"data","value":{"k":[1,2.5]}},
        {"type":"video","anything":{"x":1}}
    ],"taggedEntities":[]}}"#;
    let m = Message::from_wrapped(full).unwrap();
    assert_eq!(
        m,
        Message {
            id: "m".into(),
            conversation_id: "c".into(),
            sender_id: "s".into(),
            reply_to_id: Some("r".into()),
            parts: vec![
                Part::text("hi"),
                Part::Image {
                    url: "u".into(),
                    alt_text: Some("a".into())
                },
                Part::Image {
                    url: "u".into(),
                    alt_text: None
                },
                Part::File {
                    url: "u".into(),
                    name: "n".into(),
                    mime_type: Some("text/plain".into()),
                    size: Some(3)
                },
                Part::File {
                    url: "u".into(),
                    name: "n".into(),
                    mime_type: None,
                    size: None
                },
                Part::data(json!(null)),
                Part::data(json!({"k": [1, 2.5]})),
                Part::Unknown,
            ],
            created_at: "t".into(),
            post_id: Some("p".into()),
        }
    );
    agree(full);
    let bare = r#"{"id":"m","conversationId":"c","senderId":"s","parts":[],"createdAt":"t","replyToId":null}"#;
    let m = Message::parse(bare).unwrap();
    assert_eq!((m.reply_to_id, m.post_id, m.parts.len()), (None, None, 0));
    // serde's array forms: the fields in order, the part's type first.
    let array = r#"[["m","c","s",null,[["text","hi"],["video"],["image","u"]],"t"]]"#;
    let m = Message::from_wrapped(array).unwrap();
    assert_eq!((m.id.as_str(), m.created_at.as_str(), m.post_id), ("m", "t", None));
    assert_eq!(
        m.parts,
        vec![
            Part::text("hi"),
            Part::Unknown,
            Part::Image {
                url: "u".into(),
                alt_text: None
            }
        ]
    );
    agree(array);
}

#[test]
fn message_errors_name_the_field() {
    let msg = |extra: &str| {
        format!(r#"{{"message":{{"id":"m","conversationId":"c","senderId":"s","createdAt":"t",{extra}}}}}"#)
    };
    for (text, field) in [
        (msg(r#""parts":[],"postId":5"#), "`postId` must be a string"),
        (msg(r#""parts":null"#), "`parts` is missing or null"),
        (msg(r#""parts":{}"#), "`parts` must be an array of parts"),
        (msg(r#""parts":[{"text":"x"}]"#), "`parts[0]`: `type` is missing"),
        (msg(r#""parts":[{"type":1}]"#), "`type` must be a string"),
        (msg(r#""parts":[{"type":"text"}]"#), "`text` is missing"),
        (
            msg(r#""parts":[{"type":"text","text":"a","text":"b"}]"#),
            "field `text` given twice",
        ),
        (
            msg(r#""parts":[{"type":"text","type":"text","text":"a"}]"#),
            "field `type` given twice",
        ),
        (msg(r#""parts":[{"type":"image"}]"#), "`url` is missing"),
        (
            msg(r#""parts":[{"type":"file","url":"u","name":"n","size":-1}]"#),
            "`size` must be",
        ),
        (msg(r#""parts":[{"type":"data"}]"#), "`value` is missing"),
        (msg(r#""parts":[],"id":"again""#), "field `id` given twice"),
        (msg(r#""parts":["text"]"#), "`parts[0]`: expected an object"),
        (r#"{"message":null}"#.to_string(), "`message` is missing or null"),
        (r#"{"message":{}"#.to_string(), "end of input"),
    ] {
        let e = Message::from_wrapped(&text).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Decode);
        assert!(
            e.error.message.starts_with("not {\"message\": Message}: ") && e.error.message.contains(field),
            "{text}: {}",
            e.error.message
        );
        assert_eq!(old::wrapped(&text), None, "the derive refused it too: {text}");
    }
    let e = Message::parse(r#"{"id":1}"#).unwrap_err();
    assert_eq!(e.error.message, "not a Message: `id` must be a string, not a number");
}

#[test]
fn decoded_values_nest_as_deep_as_serde_allows() {
    let nest = |n: usize, inner: &str| format!("{}{inner}{}", "[".repeat(n), "]".repeat(n));
    for n in [124, 125, 126, 127, 128] {
        agree(&format!(r#"{{"policy":{}}}"#, nest(n, "1")));
        agree(&format!(r#"{{"x":{},"agentId":"a"}}"#, nest(n + 100, "1")));
        let part = format!(r#"{{"type":"data","value":{}}}"#, nest(n - 3, "0"));
        let bare = format!(r#"{{"id":"m","conversationId":"c","senderId":"s","parts":[{part}],"createdAt":"t"}}"#);
        agree(&bare);
        agree(&format!(r#"{{"message":{bare}}}"#));
        let unknown = format!(r#"{{"type":"video","x":{}}}"#, nest(n - 2, "0"));
        agree(&bare.replace(&part, &unknown));
        // serde's array forms nest as their objects do.
        let array = format!(r#"["m","c","s",null,[["data",{}]],"t"]"#, nest(n - 3, "0"));
        agree(&array);
        agree(&format!("[{array}]"));
        // A chain of `message`s, or of `conversation`s: each level counts against the depth.
        for key in ["message", "conversation"] {
            let mut deep = r#"{"id":"x"}"#.to_string();
            for _ in 1..n {
                deep = format!(r#"{{"agentId":"a","{key}":{deep}}}"#);
            }
            agree(&deep);
        }
    }
    assert!(HelloOk::parse(&format!(r#"{{"policy":{}}}"#, nest(126, "1"))).is_ok());
    assert!(HelloOk::parse(&format!(r#"{{"policy":{}}}"#, nest(127, "1"))).is_err());
}

/// JSON texts with the keys and the edge values of every decoder here.
fn value(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop::sample::select(vec![
        "null",
        "true",
        "0",
        "-0",
        "30000",
        "1.5",
        "1e3",
        "18446744073709551616",
        "\"\"",
        "\"s\"",
        "\"e\\u0301\\n\"",
        "\"text\"",
        "\"image\"",
        "\"file\"",
        "\"data\"",
        "\"video\"",
        "[]",
        "{}",
        // What serde skips but does not decode, and the reader refuses: lone surrogates, numbers
        // beyond f64.
        "\"x\\ud83d\"",
        "\"\\udc00\"",
        "\"\\ud83d\\ude00\"",
        "1e400",
        "-123456789012345678901234567890e300",
    ])
    .prop_map(str::to_string);
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        3 => leaf,
        1 => prop::collection::vec(value(depth - 1), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
        2 => object(depth - 1),
    ]
    .boxed()
}

fn object(depth: u32) -> BoxedStrategy<String> {
    let key = prop::sample::select(vec![
        "protocolVersion",
        "agentId",
        "policy",
        "heartbeatIntervalMs",
        "id",
        "conversationId",
        "senderId",
        "status",
        "message",
        "conversation",
        "replyToId",
        "parts",
        "createdAt",
        "postId",
        "type",
        "text",
        "url",
        "altText",
        "name",
        "mimeType",
        "size",
        "value",
        "other",
        "i\\u0064",
        "\\udead",
    ]);
    prop::collection::vec((key, value(depth)), 0..7)
        .prop_map(|members| {
            let m: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{{}}}", m.join(","))
        })
        .boxed()
}

/// A Message that mostly decodes: the required fields, then members from [`object`] that may
/// override or repeat them, and parts of every type.
fn message() -> impl Strategy<Value = String> {
    let array = |n| prop::collection::vec(value(1), 0..n).prop_map(|v| format!("[{}]", v.join(",")));
    let part = prop_oneof![
        Just(r#"{"type":"text","text":"hi"}"#.to_string()),
        Just(r#"{"type":"file","url":"u","name":"n","size":7}"#.to_string()),
        Just(r#"{"type":"data","value":[{"a":1}]}"#.to_string()),
        Just(r#"["image","u"]"#.to_string()),
        Just(r#"["file","u","n",null,7]"#.to_string()),
        object(2),
        (value(0), array(5)).prop_map(|(tag, rest)| format!("[{tag},{}", &rest[1..]).replace(",]", "]")),
    ];
    let parts = prop::collection::vec(part, 0..4).prop_map(|p| format!("[{}]", p.join(",")));
    let object_form = (parts.clone(), object(2)).prop_map(|(parts, extra)| {
        let extra = extra.trim_start_matches('{').trim_end_matches('}').to_string();
        let extra = if extra.is_empty() { extra } else { format!(",{extra}") };
        format!(r#"{{"id":"m","conversationId":"c","senderId":"s","createdAt":"t","parts":{parts}{extra}}}"#)
    });
    // serde's array form: the fields in order, cut short or made too long.
    let array_form = (parts, value(1), 0..9usize).prop_map(|(parts, odd, n)| {
        let items = ["\"m\"", "\"c\"", "\"s\"", &odd, &parts, "\"t\"", "\"p\"", "1"];
        format!("[{}]", items[..n.min(items.len())].join(","))
    });
    prop_oneof![3 => object_form, 1 => array_form]
}

proptest! {
    #[test]
    fn the_decoders_agree_with_the_derive_on_any_object(text in object(3)) {
        agree(&text);
    }

    #[test]
    fn the_message_decoders_agree_with_the_derive(m in message(), wrap in any::<bool>()) {
        let text = if wrap { format!(r#"{{"message":{m}}}"#) } else { m };
        agree(&text);
    }
}
