//! The `harness` target's messages mode. `Message::parse` and `Message::from_wrapped` take
//! exactly the texts their derived `Deserialize` takes, and read the same message, and refuse
//! with kind `decode`.
//!
//! An endpoint, connected, takes the text as the params of a `messages/received` push (mode bit
//! 2 clear) or as the answer to its recovery's `agent/message/list` after a reconnect (bit 2
//! set). When the text is one JSON value (else it may end that frame and begin others), a push
//! ends in exactly one way: the session refuses the frame (a diagnostic), the
//! endpoint logs the message unreadable, or it reads a record and asks `conversations/get` for
//! its conversation. When the text is a strict JSON value, it reads a record exactly when the
//! text is `{"message": m}` with `m` an object whose `id`, `conversationId` and `senderId` are
//! non-empty strings of at most `MAX_RECORD_ID_BYTES`, whose `parts` is an array and whose
//! `postId` (or, without one, its `id`) is a post id; and it asks for that `conversationId`. A
//! recovery's answer logs one unreadable record for each row that is not such an `m` (one in
//! all when the answer is not strict JSON), and asks for the conversation of the first row that
//! is. The conversation is then answered (bit 3: a group, else a direct conversation with the
//! sender as `bob`) with the endpoint listening: the record is not dropped in silence (a
//! delivery, a log line naming a record, or the participants' names asked for).

use agentwire_core::{ErrorKind, SeededEntropy};
use agentwire_moltzap::harness::{
    AgentAddress, Endpoint, EndpointConfig, EndpointEvent, JsonValue, LogEntry, LogKind, PostId, MAX_RECORD_ID_BYTES,
};
use agentwire_moltzap::session::Message;
use agentwire_moltzap::{Credentials, SessionConfig};
use serde_json::{json, Value};

const NOW: u64 = 1_800_000_000_000;

#[derive(serde::Deserialize)]
struct Wrapped {
    message: Message,
}

fn decoders(text: &str) {
    let ours = Message::parse(text);
    assert_eq!(
        ours.as_ref().ok(),
        serde_json::from_str::<Message>(text).ok().as_ref(),
        "parse: {text}"
    );
    let wrapped = Message::from_wrapped(text);
    let theirs = serde_json::from_str::<Wrapped>(text).ok().map(|w| w.message);
    assert_eq!(wrapped.as_ref().ok(), theirs.as_ref(), "from_wrapped: {text}");
    for e in [ours.err(), wrapped.err()].into_iter().flatten() {
        assert_eq!(e.kind(), ErrorKind::Decode, "{e}");
    }
}

/// The record `m` makes, as its conversation id, when it makes one.
fn record(m: &JsonValue) -> Option<&str> {
    let JsonValue::Object(o) = m else { return None };
    let text = |k| match o.get(k) {
        Some(JsonValue::String(s)) if !s.is_empty() && s.len() <= MAX_RECORD_ID_BYTES => Some(s.as_str()),
        _ => None,
    };
    let (id, conv, _sender) = (text("id")?, text("conversationId")?, text("senderId")?);
    let post_ok = match o.get("postId") {
        Some(JsonValue::String(p)) => PostId::parse(p).is_some(),
        Some(JsonValue::Null) | None => PostId::parse(id).is_some(),
        Some(_) => false,
    };
    (matches!(o.get("parts"), Some(JsonValue::Array(_))) && post_ok).then_some(conv)
}

struct Run {
    ep: Endpoint,
    /// Requests sent and not answered: (id, method, params).
    pending: Vec<(String, String, Value)>,
    events: Vec<EndpointEvent>,
}

impl Run {
    fn pump(&mut self) {
        while let Some(out) = self.ep.poll_transmit() {
            let v: Value = serde_json::from_str(out.as_text().expect("a text frame")).expect("JSON sent");
            if let (Some(id), Some(m)) = (v["id"].as_str(), v["method"].as_str()) {
                self.pending.push((id.to_owned(), m.to_owned(), v["params"].clone()));
            }
        }
        while let Some(e) = self.ep.poll_event() {
            self.events.push(e);
        }
    }

    /// Answers the pending request for `method` with `result` (text), if one is pending.
    fn answer(&mut self, method: &str, result: &str) -> bool {
        let Some(i) = self.pending.iter().position(|(_, m, _)| m == method) else {
            return false;
        };
        let (id, _, _) = self.pending.remove(i);
        self.ep.handle_text(
            NOW,
            &format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, json!(id)),
        );
        self.pump();
        true
    }

    fn connect(&mut self) {
        self.ep.handle_open(NOW);
        self.ep
            .connect(NOW, Credentials::AgentKey("moltzap_agent_k".into()))
            .expect("connect");
        self.pump();
        assert!(self.answer("agent/network/connect", "{}"), "no connect sent");
    }

    /// The conversations asked for (`conversations/get`) and not answered.
    fn asked(&self) -> Vec<String> {
        let asked = self.pending.iter().filter(|(_, m, _)| m == "conversations/get");
        asked
            .map(|(_, _, p)| p["conversationId"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn unreadable(&self) -> usize {
        let unreadable =
            |e: &&EndpointEvent| matches!(e, EndpointEvent::Logged(l) if matches!(l.kind, LogKind::Unreadable(_)));
        self.events.iter().filter(unreadable).count()
    }

    fn diagnosed(&self) -> bool {
        self.events.iter().any(|e| matches!(e, EndpointEvent::Diagnostic(_)))
    }
}

pub fn check(mode: u8, text: &str) {
    decoders(text);
    let cfg = EndpointConfig::new(AgentAddress::parse("agent:alice").unwrap());
    let mut run = Run {
        ep: Endpoint::new(cfg, SessionConfig::default(), Box::new(SeededEntropy::new(1))),
        pending: Vec::new(),
        events: Vec::new(),
    };
    run.connect();
    // Every connect reads the recent window back, the first too: nothing was posted before.
    assert!(
        run.answer("agent/message/list", r#"{"messages":[]}"#),
        "no recovery at the first connect"
    );
    // Text that is not one JSON value can end the frame it is put in and begin others: what
    // follows is checked for one value only.
    let one = serde_json::from_str::<Value>(text).is_ok();
    let strict = JsonValue::parse(text).ok();
    let expected: Option<&str> = if mode & 4 == 0 {
        run.events.clear();
        run.ep.handle_text(
            NOW,
            &format!(r#"{{"jsonrpc":"2.0","method":"messages/received","params":{text}}}"#),
        );
        run.pump();
        if !one {
            return;
        }
        let (asked, unreadable, diagnosed) = (run.asked(), run.unreadable(), run.diagnosed());
        let ways = usize::from(!asked.is_empty()) + unreadable + usize::from(diagnosed);
        assert_eq!(
            ways, 1,
            "{asked:?}, {unreadable} unreadable, diagnosed {diagnosed}: {:?}",
            run.events
        );
        if diagnosed {
            return;
        }
        let expected = match &strict {
            Some(JsonValue::Object(o)) => o.get("message").and_then(record),
            _ => None,
        };
        assert_eq!(asked.first().map(String::as_str), expected, "{text}");
        expected
    } else {
        run.ep.handle_close(NOW, 1006, "");
        run.pump();
        run.pending.clear();
        run.connect();
        run.events.clear();
        assert!(
            run.answer("agent/message/list", text),
            "no recovery after a reconnect: {:?}",
            run.pending
        );
        if !one || run.diagnosed() {
            return;
        }
        let rows: &[JsonValue] = match &strict {
            Some(JsonValue::Object(o)) => match o.get("messages") {
                Some(JsonValue::Array(rows)) => rows,
                _ => &[],
            },
            _ => &[],
        };
        let bad = if strict.is_some() {
            rows.iter().filter(|m| record(m).is_none()).count()
        } else {
            1
        };
        assert_eq!(run.unreadable(), bad, "{text}: {:?}", run.events);
        let expected = rows.iter().find_map(record);
        assert_eq!(run.asked().first().map(String::as_str), expected, "{text}");
        expected
    };
    // The conversation, answered: the record goes on to be classified.
    let Some(conv) = expected else { return };
    let sender = match &strict {
        Some(v) => find_sender(v, conv).unwrap_or("bob").to_owned(),
        None => return,
    };
    let mut people = vec![("alice", "alice"), (sender.as_str(), "bob")];
    if mode & 8 != 0 {
        people.push(("c-3", "carol"));
    }
    let participants: Vec<Value> = people
        .iter()
        .map(|(id, name)| json!({"participant": {"type": "agent", "id": id}, "agentName": name}))
        .collect();
    let kind = if mode & 8 == 0 { "dm" } else { "group" };
    let answer = json!({"conversation": {"id": conv, "type": kind}, "participants": participants});
    let _ = run.ep.listen();
    run.events.clear();
    assert!(run.answer("conversations/get", &answer.to_string()));
    // Not dropped in silence: delivered, logged, or waiting for the participants' names (two
    // participants answered with one id, when the sender is `alice` or `c-3`).
    let told = run.events.iter().any(|e| {
        matches!(
            e,
            EndpointEvent::Delivery(_) | EndpointEvent::Logged(LogEntry { record: Some(_), .. })
        )
    });
    let lookup = run.pending.iter().any(|(_, m, _)| m == "agents/lookup");
    assert!(told || lookup, "{text}: {:?}", run.events);
}

/// The sender of the first record of conversation `conv` in `v` (a push or a recovery's answer).
fn find_sender<'a>(v: &'a JsonValue, conv: &str) -> Option<&'a str> {
    let JsonValue::Object(o) = v else { return None };
    let rows: Vec<&JsonValue> = match (o.get("message"), o.get("messages")) {
        (Some(m), _) => vec![m],
        (None, Some(JsonValue::Array(rows))) => rows.iter().collect(),
        _ => return None,
    };
    let m = rows.into_iter().find(|m| record(m) == Some(conv))?;
    match m {
        JsonValue::Object(o) => match o.get("senderId") {
            Some(JsonValue::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}
