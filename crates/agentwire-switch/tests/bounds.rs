//! The bounds every surface takes from the engine rather than keeping its own copy: how much of
//! a refused open's body counts (`REFUSAL_BODY_MAX`).

mod common;

use agentwire_core::http::REFUSAL_BODY_MAX;
use agentwire_switch::connection::{Event, Transport};
use agentwire_switch::SwitchError;
use common::*;

/// A `409 taken_over` naming 300 rooms (6.7 KB): the npm drivers handed the engine its first
/// 4,096 bytes, which are no JSON, and the connection took it for a retryable refusal without a
/// code; natively (64 KiB) it stopped for good. Whatever a driver hands over past
/// `REFUSAL_BODY_MAX`, the engine reads the same.
#[test]
fn a_refusal_means_what_its_first_refusal_body_max_bytes_say() {
    let rooms = |n: usize| {
        (0..n)
            .map(|i| format!("\"room-{i:04}-0000-0000\""))
            .collect::<Vec<_>>()
            .join(",")
    };
    let body = |n: usize| {
        format!(
            r#"{{"code":"taken_over","detail":{{"message":"another client took this connection over","rooms":[{}]}}}}"#,
            rooms(n)
        )
    };
    let refused = |body: &str| {
        let mut d = Driver::new(config(Transport::WebSocket));
        d.conn.start(d.now).unwrap();
        d.expect_open();
        d.conn.handle_open_failed(d.now, Some(409), body);
        match &d.events()[..] {
            [Event::Stopped { error: Some(e) }] => e.clone(),
            other => panic!("{other:?}"),
        }
    };
    let taken_over = body(300);
    assert_eq!(taken_over.len(), 6_695);
    let cut = agentwire_core::text::prefix(&taken_over, REFUSAL_BODY_MAX);
    let e = refused(cut);
    assert_eq!((e.code.as_deref(), e.retryable), (Some("taken_over"), false), "{e:?}");

    let long = body(4_000);
    assert!(long.len() > REFUSAL_BODY_MAX);
    let same = |e: &SwitchError| {
        (
            e.kind,
            e.status,
            e.code.clone(),
            e.retryable,
            e.message.clone(),
            e.detail.clone(),
        )
    };
    assert_eq!(
        same(&refused(&long)),
        same(&refused(agentwire_core::text::prefix(&long, REFUSAL_BODY_MAX))),
        "the engine reads no more than a driver hands over"
    );
}
