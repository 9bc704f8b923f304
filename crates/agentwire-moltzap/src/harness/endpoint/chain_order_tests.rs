//! Sans-IO tests that a conversation's records are delivered in chain order across lost
//! connections and the recoveries after them (the spec: "the endpoint stores and delivers a
//! conversation's records in chain order").

use super::scripted_tests::{plain, Script};
use serde_json::json;

/// Connected, listening, with `m0` ("zero") of conversation `c1` delivered; then the connection
/// is lost and made again: a recovery is outstanding, and bob's `m1` is pushed live and held for
/// it; the connection is lost again before the recovery is answered, and made again.
fn held_across_a_lost_connection(recovery_limit: u32) -> (Script, serde_json::Value) {
    let mut s = Script::new(|c| c.recovery_limit = recovery_limit);
    s.listen();
    s.push(&plain("m0", "c1", "bob", "zero"));
    s.conversation("dm", &["alice", "bob"]);
    s.reconnect();
    assert!(s.take("agent/message/list").is_some(), "a recovery outstanding");
    s.push(&plain("m1", "c1", "bob", "one"));
    assert_eq!(s.texts(), vec!["zero"], "m1 waits for the window");
    s.reconnect();
    let list = s.take("agent/message/list").expect("the next connect's recovery");
    (s, list)
}

/// The window holds the newest two, m2 and m3: the held m1, older than both, comes first. It came
/// after them before (`zero, two, three, one`).
#[test]
fn a_live_record_held_across_a_lost_connection_precedes_a_window_that_does_not_hold_it() {
    let (mut s, list) = held_across_a_lost_connection(2);
    s.reply(
        &list,
        json!({"messages": [plain("m2", "c1", "bob", "two"), plain("m3", "c1", "bob", "three")], "hasMore": false}),
    );
    assert_eq!(s.texts(), vec!["zero", "one", "two", "three"]);
}

/// A window that holds the held record gives it its place, once.
#[test]
fn a_live_record_held_across_a_lost_connection_takes_its_place_in_a_window_that_holds_it() {
    let (mut s, list) = held_across_a_lost_connection(100);
    // Pushed on this connection while its recovery is outstanding: newer than the window.
    s.push(&plain("m4", "c1", "bob", "four"));
    let rows = ["zero", "one", "two", "three"]
        .iter()
        .enumerate()
        .map(|(i, t)| plain(&format!("m{i}"), "c1", "bob", t))
        .collect::<Vec<_>>();
    s.reply(&list, json!({"messages": rows, "hasMore": false}));
    assert_eq!(s.texts(), vec!["zero", "one", "two", "three", "four"]);
}

/// The first connect reads the recent window back too: a record posted before it is delivered
/// then, ahead of a push that waited for the window, and a later reconnect's window does not
/// bring it back. Before, the first connect read nothing, and m1 surfaced at the first
/// reconnect's recovery, after m2 (`two, one`).
#[test]
fn records_posted_before_the_first_connect_are_delivered_then_in_chain_order() {
    let mut s = Script::unconnected(|_| {});
    s.listen();
    let one = plain("m1", "c1", "bob", "one");
    let two = plain("m2", "c1", "bob", "two");
    s.connect();
    let list = s.take("agent/message/list").expect("the first connect's recovery");
    s.push(&two); // waits for the window
    assert!(s.texts().is_empty());
    s.reply(&list, json!({"messages": [one.clone()], "hasMore": false}));
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one", "two"]);
    s.reconnect();
    let list = s.take("agent/message/list").expect("a recovery");
    s.reply(&list, json!({"messages": [one, two], "hasMore": false}));
    assert_eq!(s.texts(), vec!["one", "two"], "each once");
}

/// With `recovery_limit` 0 no connect reads anything back, the first neither: pushes are
/// delivered as they come.
#[test]
fn a_recovery_limit_of_zero_reads_nothing_back_at_any_connect() {
    let mut s = Script::unconnected(|c| c.recovery_limit = 0);
    s.listen();
    s.connect();
    assert!(s.take("agent/message/list").is_none());
    s.push(&plain("m1", "c1", "bob", "one"));
    s.conversation("dm", &["alice", "bob"]);
    assert_eq!(s.texts(), vec!["one"]);
}
