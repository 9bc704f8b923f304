//! The released recovery against a scripted released server: after a reconnect, the
//! conversations active since the last record seen (`conversations/list`, its `cursor`
//! followed, a bounded number of pages) have their newest window read (`messages/list`), and
//! the rows go through the current recovery's path.

use super::records::{
    MAX_RECOVERY_CONVERSATIONS, MAX_RECOVERY_CURSOR_BYTES, MAX_RECOVERY_PAGES, RECOVERY_ATTEMPTS, RECOVERY_PAGE_LIMIT,
    RECOVERY_WINDOWS_IN_FLIGHT,
};
use super::scripted_tests::{alice, Script, TIMEOUT_MS};
use super::*;
use crate::session::GenerationChoice;
use serde_json::{json, Value};

const T0: &str = "2026-12-02T12:00:00.000Z";
const T1: &str = "2026-12-02T12:01:00.000Z";
const T2: &str = "2026-12-02T12:02:00.000Z";
const T3: &str = "2026-12-02T12:03:00.000Z";
const T4: &str = "2026-12-02T12:04:00.000Z";

fn row(id: &str, conv: &str, sender: &str, text: &str, at: &str) -> Value {
    json!({"id": id, "conversationId": conv, "senderId": sender,
        "parts": [{"type": "text", "text": text}], "createdAt": at})
}

/// A released endpoint, connected.
fn released(tune: impl FnOnce(&mut EndpointConfig)) -> Script {
    let mut s = Script::unconnected(|_| {});
    let mut cfg = EndpointConfig::new(alice());
    tune(&mut cfg);
    let session = SessionConfig {
        generation: GenerationChoice::Released,
        request_timeout_ms: TIMEOUT_MS,
        ..SessionConfig::default()
    };
    s.ep = Endpoint::new(cfg, session, Box::new(agentwire_core::SeededEntropy::new(7)));
    connect(&mut s);
    // The first connect's recovery: no conversation yet.
    let list = s.take("conversations/list").expect("the first connect's recovery");
    reply(&mut s, &list, json!({"conversations": []}));
    s
}

fn connect(s: &mut Script) {
    s.start_connect();
    let hello = s.take("auth/connect").expect("the released connect");
    reply(s, &hello, json!({"protocolVersion": "2026.425.3", "agentId": "alice"}));
    assert!(s.events.iter().any(|e| matches!(
        e,
        EndpointEvent::Connected {
            generation: Generation::Released
        }
    )));
}

fn reconnect(s: &mut Script) {
    s.ep.handle_close(s.now, 1006, "");
    s.pump();
    s.sent.clear();
    connect(s);
}

fn reply(s: &mut Script, request: &Value, result: Value) {
    let text = json!({"jsonrpc": "2.0", "type": "response", "id": request["id"], "result": result});
    s.ep.handle_text(s.now, &text.to_string());
    s.pump();
}

fn refuse(s: &mut Script, request: &Value, code: i64, message: &str) {
    let text = json!({"jsonrpc": "2.0", "type": "response", "id": request["id"],
        "error": {"code": code, "message": message}});
    s.ep.handle_text(s.now, &text.to_string());
    s.pump();
}

fn push(s: &mut Script, message: &Value) {
    let text = json!({"jsonrpc": "2.0", "type": "event", "event": "messages/received", "data": {"message": message}});
    s.ep.handle_text(s.now, &text.to_string());
    s.pump();
}

/// Answers the pending `conversations/get` with a dm of alice and bob.
fn dm(s: &mut Script) {
    let get = s.take("conversations/get").expect("a conversations/get");
    let id = get["params"]["conversationId"].clone();
    let ps: Vec<Value> = ["alice", "bob"]
        .iter()
        .map(|n| json!({"participant": {"type": "agent", "id": n}, "agentName": n}))
        .collect();
    reply(
        s,
        &get,
        json!({"conversation": {"id": id, "type": "dm"}, "participants": ps}),
    );
}

fn summary(id: &str, last: Option<&str>) -> Value {
    let mut c = json!({"id": id, "type": "dm", "unreadCount": 0,
        "participants": [{"type": "agent", "id": "alice"}, {"type": "agent", "id": "bob"}]});
    if let Some(t) = last {
        c["lastMessageTimestamp"] = json!(t);
    }
    c
}

/// The `messages/list` requests in flight, by conversation.
fn windows(s: &mut Script) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(w) = s.take("messages/list") {
        out.push(w);
    }
    out
}

fn window_of<'a>(ws: &'a [Value], conv: &str) -> &'a Value {
    ws.iter()
        .find(|w| w["params"]["conversationId"] == conv)
        .unwrap_or_else(|| panic!("no window of {conv}: {ws:?}"))
}

fn unreadable(s: &Script) -> Vec<String> {
    s.events
        .iter()
        .filter_map(|e| match e {
            EndpointEvent::Logged(LogEntry {
                kind: LogKind::Unreadable(why),
                ..
            }) => Some(why.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_released_reconnect_reads_back_the_conversations_active_since_the_last_record() {
    let mut s = released(|c| c.recovery_limit = 500);
    s.listen();
    push(&mut s, &row("m0", "c1", "bob", "zero", T0));
    dm(&mut s);
    assert_eq!(s.texts(), vec!["zero"]);
    reconnect(&mut s);
    assert!(
        s.take("agent/message/list").is_none(),
        "a released server has no such method"
    );
    let list = s.take("conversations/list").expect("the released recovery");
    assert_eq!(list["params"], json!({"limit": RECOVERY_PAGE_LIMIT}));
    // A live push overtakes the windows on the wire: it waits for them.
    push(&mut s, &row("m3", "c1", "bob", "three", T3));
    assert_eq!(s.texts(), vec!["zero"]);
    reply(
        &mut s,
        &list,
        json!({"conversations": [
            summary("c1", Some(T3)),
            summary("c2", Some("2026-12-02T11:59:59.000Z")),
            summary("c3", None),
        ]}),
    );
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 1, "c2 had no activity since m0, c3 has no message: {ws:?}");
    assert_eq!(ws[0]["params"], json!({"conversationId": "c1", "limit": 100}));
    reply(
        &mut s,
        &ws[0],
        json!({"messages": [
            row("m0", "c1", "bob", "zero", T0),
            row("m1", "c1", "bob", "one", T1),
            row("m2", "c1", "bob", "two", T2),
            row("m3", "c1", "bob", "three", T3),
        ], "hasMore": false}),
    );
    assert_eq!(s.texts(), vec!["zero", "one", "two", "three"], "in order, each once");
}

#[test]
fn a_released_recovery_merges_the_windows_oldest_first_and_bounds_those_in_flight() {
    let mut s = released(|_| {});
    s.listen();
    // Connected once, nothing seen: every conversation of the page with a message is read.
    reconnect(&mut s);
    let list = s.take("conversations/list").expect("the released recovery");
    let convs: Vec<Value> = (0..6).map(|i| summary(&format!("c{i}"), Some(T4))).collect();
    reply(&mut s, &list, json!({"conversations": convs}));
    let first = windows(&mut s);
    assert_eq!(first.len(), RECOVERY_WINDOWS_IN_FLIGHT, "{first:?}");
    // Answered out of order; each row later than the one before, across conversations.
    for (i, w) in first.iter().enumerate().rev() {
        let c = w["params"]["conversationId"].as_str().unwrap().to_owned();
        let at = format!("2026-12-02T12:0{i}:00.000Z");
        reply(
            &mut s,
            w,
            json!({"messages": [row(&format!("m-{c}"), &c, "bob", &c, &at)], "hasMore": false}),
        );
        assert!(s.texts().is_empty(), "nothing is queued before every window is read");
    }
    let rest = windows(&mut s);
    assert_eq!(rest.len(), 2);
    for (i, w) in rest.iter().enumerate() {
        let c = w["params"]["conversationId"].as_str().unwrap().to_owned();
        let at = format!("2026-12-02T12:1{i}:00.000Z");
        reply(
            &mut s,
            w,
            json!({"messages": [row(&format!("m-{c}"), &c, "bob", &c, &at)], "hasMore": false}),
        );
    }
    // Each conversation is looked up in turn as its record reaches the front.
    while s.sent.iter().any(|v| v["method"] == "conversations/get") {
        dm(&mut s);
    }
    assert_eq!(s.texts(), vec!["c0", "c1", "c2", "c3", "c4", "c5"]);
}

#[test]
fn a_record_dropped_for_overflow_on_a_released_server_is_read_back_by_the_next_recovery() {
    let mut s = released(|c| c.max_pending_records = 1);
    s.listen();
    push(&mut s, &row("m1", "c1", "bob", "one", T1));
    // m1 waits for its conversation; m2, in another conversation, finds the queue full.
    let two = row("m2", "c2", "bob", "two", T2);
    push(&mut s, &two);
    assert_eq!(s.logged("m2"), vec![&LogKind::RecordsOverflow]);
    dm(&mut s);
    // A later record is seen: c2's last message is older than it.
    push(&mut s, &row("m3", "c1", "bob", "three", T3));
    assert_eq!(s.texts(), vec!["one", "three"]);
    reconnect(&mut s);
    let list = s.take("conversations/list").expect("the released recovery");
    reply(
        &mut s,
        &list,
        json!({"conversations": [summary("c1", Some(T3)), summary("c2", Some(T2))]}),
    );
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 2, "c2 is read for the record dropped there: {ws:?}");
    reply(
        &mut s,
        window_of(&ws, "c2"),
        json!({"messages": [two], "hasMore": false}),
    );
    reply(
        &mut s,
        window_of(&ws, "c1"),
        json!({"messages": [row("m1", "c1", "bob", "one", T1), row("m3", "c1", "bob", "three", T3)], "hasMore": false}),
    );
    dm(&mut s);
    assert_eq!(s.texts(), vec!["one", "three", "two"], "m2 read back once");
    // Read back: the next recovery reads only what is newer than m3.
    reconnect(&mut s);
    let list = s.take("conversations/list").expect("the released recovery");
    reply(
        &mut s,
        &list,
        json!({"conversations": [summary("c1", Some(T3)), summary("c2", Some(T2))]}),
    );
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 1);
    assert_eq!(ws[0]["params"]["conversationId"], "c1");
}

#[test]
fn a_released_window_without_an_answer_is_retried_and_a_refused_one_is_logged() {
    let mut s = released(|_| {});
    s.listen();
    push(&mut s, &row("m0", "c1", "bob", "zero", T0));
    dm(&mut s);
    reconnect(&mut s);
    let list = s.take("conversations/list").expect("the released recovery");
    reply(
        &mut s,
        &list,
        json!({"conversations": [summary("c1", Some(T2)), summary("c9", Some(T2))]}),
    );
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 2);
    refuse(
        &mut s,
        window_of(&ws, "c9"),
        -32001,
        "Not a participant in this conversation",
    );
    assert!(
        unreadable(&s)
            .iter()
            .any(|w| w.contains("\"c9\"") && w.contains("Not a participant")),
        "{:?}",
        unreadable(&s)
    );
    push(&mut s, &row("m2", "c1", "bob", "two", T2));
    s.tick(); // c1's window times out
    assert_eq!(s.texts(), vec!["zero"], "the live push still waits");
    assert!(windows(&mut s).is_empty(), "not asked again at once");
    s.tick(); // the backoff is over
    let again = windows(&mut s);
    assert_eq!(again.len(), 1, "c1 asked again, c9 not");
    assert_eq!(again[0]["params"]["conversationId"], "c1");
    reply(
        &mut s,
        &again[0],
        json!({"messages": [row("m1", "c1", "bob", "one", T1), row("m2", "c1", "bob", "two", T2)], "hasMore": false}),
    );
    assert_eq!(s.texts(), vec!["zero", "one", "two"]);
}

#[test]
fn a_released_recovery_that_never_answers_gives_up_and_releases_the_live_pushes() {
    let mut s = released(|_| {});
    s.listen();
    push(&mut s, &row("m0", "c1", "bob", "zero", T0));
    dm(&mut s);
    reconnect(&mut s);
    assert!(s.take("conversations/list").is_some());
    push(&mut s, &row("m1", "c1", "bob", "one", T1));
    let mut asked = 1;
    while s.texts().len() == 1 {
        s.tick();
        if s.take("conversations/list").is_some() {
            asked += 1;
        }
        assert!(asked <= RECOVERY_ATTEMPTS, "asked {asked} times");
    }
    assert_eq!(asked, RECOVERY_ATTEMPTS);
    assert_eq!(s.texts(), vec!["zero", "one"]);
    assert!(
        unreadable(&s).iter().any(|w| w.contains("conversations/list")),
        "{:?}",
        unreadable(&s)
    );
}

#[test]
fn a_released_recovery_refused_or_cut_by_a_lost_connection() {
    // Refused: the live pushes go on alone, logged.
    let mut s = released(|_| {});
    s.listen();
    push(&mut s, &row("m0", "c1", "bob", "zero", T0));
    dm(&mut s);
    reconnect(&mut s);
    let list = s.take("conversations/list").unwrap();
    push(&mut s, &row("m1", "c1", "bob", "one", T1));
    refuse(&mut s, &list, -32603, "Internal error");
    assert_eq!(s.texts(), vec!["zero", "one"]);
    // Cut: the next connect recovers again from the list, the live pushes still waiting.
    reconnect(&mut s);
    let list = s.take("conversations/list").unwrap();
    reply(&mut s, &list, json!({"conversations": [summary("c1", Some(T3))]}));
    assert_eq!(windows(&mut s).len(), 1);
    push(&mut s, &row("m3", "c1", "bob", "three", T3));
    reconnect(&mut s);
    assert_eq!(s.texts(), vec!["zero", "one"]);
    let list = s.take("conversations/list").expect("recovered again");
    reply(&mut s, &list, json!({"conversations": [summary("c1", Some(T3))]}));
    let ws = windows(&mut s);
    reply(
        &mut s,
        &ws[0],
        json!({"messages": [row("m2", "c1", "bob", "two", T2), row("m3", "c1", "bob", "three", T3)], "hasMore": false}),
    );
    assert_eq!(s.texts(), vec!["zero", "one", "two", "three"]);
}

/// The `conversations/list` request of the next page, asserting its cursor.
fn page(s: &mut Script, cursor: Option<&str>) -> Value {
    let list = s.take("conversations/list").expect("a conversations/list page");
    let mut params = json!({"limit": RECOVERY_PAGE_LIMIT});
    if let Some(c) = cursor {
        params["cursor"] = json!(c);
    }
    assert_eq!(list["params"], params);
    list
}

#[test]
fn a_released_recovery_follows_the_cursor_across_pages() {
    let mut s = released(|_| {});
    s.listen();
    push(&mut s, &row("m0", "c1", "bob", "zero", T0));
    dm(&mut s);
    reconnect(&mut s);
    let first = page(&mut s, None);
    push(&mut s, &row("m4", "c3", "bob", "four", T4));
    reply(
        &mut s,
        &first,
        json!({"conversations": [summary("c1", Some(T3)), summary("c2", Some("2026-12-02T11:00:00.000Z"))],
            "cursor": "p2"}),
    );
    assert!(windows(&mut s).is_empty(), "no window before the last page");
    let second = page(&mut s, Some("p2"));
    // c1 listed again (a conversation touched between the pages moves): read once.
    reply(
        &mut s,
        &second,
        json!({"conversations": [summary("c3", Some(T4)), summary("c1", Some(T3))]}),
    );
    assert!(s.take("conversations/list").is_none(), "no cursor: the last page");
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 2, "c1 and c3, each once: {ws:?}");
    reply(
        &mut s,
        window_of(&ws, "c3"),
        json!({"messages": [row("m2", "c3", "bob", "two", T2), row("m4", "c3", "bob", "four", T4)], "hasMore": false}),
    );
    reply(
        &mut s,
        window_of(&ws, "c1"),
        json!({"messages": [row("m1", "c1", "bob", "one", T1), row("m3", "c1", "bob", "three", T3)], "hasMore": false}),
    );
    while s.sent.iter().any(|v| v["method"] == "conversations/get") {
        dm(&mut s);
    }
    assert_eq!(s.texts(), vec!["zero", "one", "two", "three", "four"]);
    assert!(unreadable(&s).is_empty(), "{:?}", unreadable(&s));
}

#[test]
fn a_released_recovery_lists_at_most_max_recovery_pages_and_says_more_may_have_activity() {
    let mut s = released(|c| c.max_pending_records = 1);
    s.listen();
    // m1 waits for its conversation; m2 finds the queue full: its marker needs a complete
    // recovery to be cleared.
    push(&mut s, &row("m1", "c0-0", "bob", "one", T1));
    push(&mut s, &row("m2", "c9", "bob", "two", T2));
    assert_eq!(s.logged("m2"), vec![&LogKind::RecordsOverflow]);
    dm(&mut s);
    reconnect(&mut s);
    let mut cursor: Option<String> = None;
    for p in 0..MAX_RECOVERY_PAGES {
        let list = page(&mut s, cursor.as_deref());
        // One more than the limit: a page is read to its limit.
        let convs: Vec<Value> = (0..=RECOVERY_PAGE_LIMIT)
            .map(|i| summary(&format!("c{p}-{i}"), Some(T4)))
            .collect();
        cursor = Some(format!("after-{p}"));
        reply(&mut s, &list, json!({"conversations": convs, "cursor": cursor}));
    }
    assert!(s.take("conversations/list").is_none(), "no page past the bound");
    assert!(
        unreadable(&s)
            .iter()
            .any(|w| w.contains("more conversations may have activity") && w.contains("not read back")),
        "{:?}",
        unreadable(&s)
    );
    let mut read = std::collections::HashSet::new();
    loop {
        let ws = windows(&mut s);
        if ws.is_empty() {
            break;
        }
        assert!(ws.len() <= RECOVERY_WINDOWS_IN_FLIGHT);
        for w in &ws {
            let c = w["params"]["conversationId"].as_str().unwrap().to_owned();
            assert!(
                !c.ends_with(&format!("-{RECOVERY_PAGE_LIMIT}")),
                "past a page's limit: {c}"
            );
            assert!(read.insert(c));
            reply(&mut s, w, json!({"messages": [], "hasMore": false}));
        }
    }
    assert_eq!(read.len(), MAX_RECOVERY_CONVERSATIONS as usize);
    // The recovery ended: a live push goes through; the listing was cut, so the next recovery
    // still reads from m2's time.
    push(&mut s, &row("m3", "c0-0", "bob", "three", T3));
    assert_eq!(s.texts(), vec!["one", "three"]);
    reconnect(&mut s);
    let list = page(&mut s, None);
    reply(
        &mut s,
        &list,
        json!({"conversations": [summary("c9", Some(T2)), summary("c0-0", Some(T3))]}),
    );
    assert_eq!(windows(&mut s).len(), 2, "c9 is read for the record dropped there");
}

#[test]
fn a_cursor_that_comes_back_ends_the_listing_and_the_pages_read_are_read_back() {
    let mut s = released(|_| {});
    s.listen();
    reconnect(&mut s);
    let mut cursor = None;
    // A server naming pages a, b, then a again: followed twice, not a third time.
    for (i, next) in ["a", "b", "a"].iter().enumerate() {
        let list = page(&mut s, cursor);
        reply(
            &mut s,
            &list,
            json!({"conversations": [summary(&format!("c{i}"), Some(T1))], "cursor": next}),
        );
        cursor = Some(next);
    }
    assert!(s.take("conversations/list").is_none(), "not followed again");
    assert!(
        unreadable(&s).iter().any(|w| w.contains(r#"the cursor "a" again"#)),
        "{:?}",
        unreadable(&s)
    );
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 3, "the three pages' conversations: {ws:?}");
    // A page naming itself is followed no further either.
    reconnect(&mut s);
    let list = page(&mut s, None);
    reply(&mut s, &list, json!({"conversations": [], "cursor": "x"}));
    let list = page(&mut s, Some("x"));
    reply(&mut s, &list, json!({"conversations": [], "cursor": "x"}));
    assert!(s.take("conversations/list").is_none());
}

#[test]
fn a_cursor_not_a_string_or_too_long_is_not_followed() {
    for cursor in [json!(20), json!("c".repeat(MAX_RECOVERY_CURSOR_BYTES + 1))] {
        let mut s = released(|_| {});
        s.listen();
        reconnect(&mut s);
        let list = page(&mut s, None);
        reply(
            &mut s,
            &list,
            json!({"conversations": [summary("c1", Some(T1))], "cursor": cursor}),
        );
        assert!(s.take("conversations/list").is_none(), "{cursor}");
        assert_eq!(windows(&mut s).len(), 1, "the page read is read back");
        assert!(
            unreadable(&s).iter().any(|w| w.contains("cursor")),
            "{:?}",
            unreadable(&s)
        );
    }
    // A null cursor is no cursor: the last page, nothing logged.
    let mut s = released(|_| {});
    reconnect(&mut s);
    let list = page(&mut s, None);
    reply(
        &mut s,
        &list,
        json!({"conversations": [summary("c1", Some(T1))], "cursor": null}),
    );
    assert_eq!(windows(&mut s).len(), 1);
    assert!(unreadable(&s).is_empty(), "{:?}", unreadable(&s));
}

#[test]
fn a_page_without_an_answer_mid_way_is_asked_again_and_one_refused_ends_the_listing() {
    let mut s = released(|_| {});
    s.listen();
    push(&mut s, &row("m0", "c1", "bob", "zero", T0));
    dm(&mut s);
    reconnect(&mut s);
    let list = page(&mut s, None);
    reply(
        &mut s,
        &list,
        json!({"conversations": [summary("c1", Some(T1))], "cursor": "p2"}),
    );
    let _lost = page(&mut s, Some("p2"));
    push(&mut s, &row("m2", "c1", "bob", "two", T2));
    s.tick(); // the second page times out
    assert!(s.take("conversations/list").is_none(), "not asked again at once");
    assert_eq!(s.texts(), vec!["zero"], "the live push still waits");
    s.tick(); // the backoff is over: the same page again, not the first
    let again = page(&mut s, Some("p2"));
    reply(
        &mut s,
        &again,
        json!({"conversations": [summary("c2", Some(T2))], "cursor": "p3"}),
    );
    // The third page is refused: the two pages read are still read back.
    let third = page(&mut s, Some("p3"));
    refuse(&mut s, &third, -32602, "Invalid parameters");
    assert!(
        unreadable(&s)
            .iter()
            .any(|w| w.contains("after page 2 of conversations/list") && w.contains("Invalid parameters")),
        "{:?}",
        unreadable(&s)
    );
    let ws = windows(&mut s);
    assert_eq!(ws.len(), 2, "{ws:?}");
    reply(
        &mut s,
        window_of(&ws, "c1"),
        json!({"messages": [row("m1", "c1", "bob", "one", T1), row("m2", "c1", "bob", "two", T2)], "hasMore": false}),
    );
    reply(&mut s, window_of(&ws, "c2"), json!({"messages": [], "hasMore": false}));
    assert_eq!(s.texts(), vec!["zero", "one", "two"]);
}
