//! Switch calls whose answer never came, through the component: `op-result` reads a gateway's
//! 502 by the request it answers, `op-failed` says whether a call that got no answer may be made
//! again (the engine's `agentwire_switch::unanswered`), and the host reports both.

use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::switch::{self, HttpRequest};
use agentwire_component_host::switch::SwitchSession;
use agentwire_component_host::{defaults, ErrorKind, Instance};
use agentwire_core::MAY_HAVE_RUN;
use std::io::{Read, Write};
use std::net::TcpListener;

const AGENT: &str = "alice";
const CONNECTION: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

fn op_request(i: &mut Instance, name: &str, args: &str) -> HttpRequest {
    let ops = i.engine.agentwire_engine_switch();
    ops.call_op_request(&mut i.store, AGENT, Some(CONNECTION), name, args)
        .unwrap()
        .unwrap()
}

/// Before, `op-result` had the status and body alone and took every gateway answer as one to a
/// post: a read's 502 was not retryable.
#[test]
fn op_result_reads_a_gateways_answer_by_its_request() {
    let mut i = runtime().instantiate().unwrap();
    let read = op_request(&mut i, "list_rooms", "{}");
    let post = op_request(&mut i, "post_message", r#"{"body":"order 1"}"#);
    let ops = i.engine.agentwire_engine_switch();
    let body = r#"{"detail":"the upstream did not answer in time"}"#;
    for status in [502, 504, 522] {
        for (request, retryable) in [(&read, true), (&post, false)] {
            let e = ops.call_op_result(&mut i.store, request, status, body).unwrap();
            let e = e.unwrap_err();
            assert_eq!((e.kind, e.code), (ErrorKind::Remote, Some(status.into())));
            assert_eq!(e.retryable, retryable, "{}", request.path);
            assert_eq!(e.message.ends_with(MAY_HAVE_RUN), !retryable, "{}", e.message);
        }
    }
    // The server's own 503 stays retryable; an answer is read as before.
    let e = ops.call_op_result(&mut i.store, &post, 503, "").unwrap().unwrap_err();
    assert!(e.retryable, "{e:?}");
    let ok = ops.call_op_result(&mut i.store, &post, 200, r#"{"result":{"event_id":"e1"}}"#);
    assert_eq!(ok.unwrap().unwrap(), r#"{"event_id":"e1"}"#);
    // A subscribe's answer has no `result`: read whole, by its request; its 502 is retryable.
    let sub = ops
        .call_subscribe_request(&mut i.store, AGENT, CONNECTION, "r1", false)
        .unwrap()
        .unwrap();
    let answer = r#"{"ok":true,"rooms":["r1"]}"#;
    let ok = ops.call_op_result(&mut i.store, &sub, 200, answer);
    assert_eq!(ok.unwrap().unwrap(), answer);
    assert!(
        ops.call_op_result(&mut i.store, &sub, 502, "")
            .unwrap()
            .unwrap_err()
            .retryable
    );
}

/// Before, a host whose call failed had no way to the engine's rule, and made its own error.
#[test]
fn op_failed_is_retryable_for_a_read_or_a_call_never_sent() {
    let mut i = runtime().instantiate().unwrap();
    let read = op_request(&mut i, "list_rooms", "{}");
    let post = op_request(&mut i, "post_message", r#"{"body":"order 1"}"#);
    let ops = i.engine.agentwire_engine_switch();
    let mut failed = |request: &HttpRequest, kind, sent| {
        ops.call_op_failed(&mut i.store, request, kind, "no answer in 10 s", sent)
            .unwrap()
    };
    for kind in [ErrorKind::Timeout, ErrorKind::Closed] {
        let e = failed(&post, kind, true);
        assert_eq!((e.kind, e.code, e.retryable), (kind, None, false));
        assert_eq!(e.message, format!("no answer in 10 s{MAY_HAVE_RUN}"));
        let e = failed(&read, kind, true);
        assert_eq!(
            (e.kind, e.retryable, e.message.as_str()),
            (kind, true, "no answer in 10 s")
        );
        let e = failed(&post, kind, false);
        assert_eq!(
            (e.kind, e.retryable, e.message.as_str()),
            (kind, true, "no answer in 10 s")
        );
    }
    // Any other kind keeps what it says.
    let e = failed(&post, ErrorKind::Auth, true);
    assert_eq!((e.kind, e.retryable), (ErrorKind::Auth, false));
}

/// A server on 127.0.0.1 that takes each connection, reads the request's head, and then answers
/// `reply` (none: closes without answering, with the body unread). Its base URL.
fn server(calls: usize, reply: Option<&'static str>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(calls) {
            let mut stream = stream.unwrap();
            let mut head = Vec::new();
            let mut byte = [0; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            if let Some(reply) = reply {
                // The answer, then the body read to the client's close (left unread, it would
                // reset the connection before the client read the answer).
                let _ = stream.write_all(reply.as_bytes());
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                let _ = stream.read_to_end(&mut head);
            }
        }
    });
    base
}

fn session(base: &str) -> SwitchSession {
    let config = switch::Config {
        transport: Some(switch::Transport::Websocket),
        ..defaults::switch(AGENT, CONNECTION)
    };
    SwitchSession::start(runtime(), base, "key", &config).unwrap()
}

/// The host hands the component the request with its answer or its failure: a post through a
/// gateway's 502 or cut after it was sent is final, a read is not, one never sent is not.
#[test]
fn the_host_reports_a_gateways_answer_and_a_lost_call_by_their_request() {
    let post = r#"{"body":"order 1"}"#;
    let gateway = server(2, Some("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"));
    let mut s = session(&gateway);
    let e = s.op("post_message", post).unwrap().unwrap_err();
    assert_eq!((e.code, e.retryable), (Some(502), false), "{e:?}");
    let e = s.op("list_rooms", "{}").unwrap().unwrap_err();
    assert_eq!((e.code, e.retryable), (Some(502), true), "{e:?}");

    let cut = server(2, None);
    let mut s = session(&cut);
    let e = s.op("post_message", post).unwrap().unwrap_err();
    assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, false), "{e:?}");
    assert!(e.message.ends_with(MAY_HAVE_RUN), "{}", e.message);
    let e = s.op("list_rooms", "{}").unwrap().unwrap_err();
    assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, true), "{e:?}");

    // Nobody listens: the connection was never made, the post never left.
    let gone = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", gone.local_addr().unwrap());
    drop(gone);
    let e = session(&base).op("post_message", post).unwrap().unwrap_err();
    assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, true), "{e:?}");
}
