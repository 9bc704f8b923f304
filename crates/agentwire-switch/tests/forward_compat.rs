//! Forward compatibility (review A, 2026-12-07): a server newer than the client.
mod common;

use agentwire_core::ErrorKind;
use agentwire_switch::connection::{ConnectionConfig, Event, State, Transmit, Transport};
use agentwire_switch::SwitchError;
use common::*;

fn ws() -> ConnectionConfig {
    config(Transport::WebSocket)
}

/// Sound: an unknown eviction code keeps its raw code on the stop error, not retried.
#[test]
fn sound_unknown_eviction_code_is_kept() {
    let mut d = Driver::live_ws(ws(), 0, &[]);
    d.text(&evicted("quota_exceeded"));
    let (_, e) = d.drain();
    assert!(
        e.iter().any(|e| matches!(e, Event::Stopped { error: Some(err) } if err.code.as_deref() == Some("quota_exceeded") && err.kind == ErrorKind::Closed)),
        "{e:?}"
    );
}

/// Sound: keys in another order, escaped names, pretty-printing, unknown keys at every level.
#[test]
fn sound_serializer_variants() {
    let mut d = Driver::live_ws(ws(), 0, &[]);
    d.text(&format!(
        "{{\n \"id\": 1,\n \"new_top\": true,\n \"data\": {{\"sequence\": 1, \"payload\": {{}}, \"room_\\u0069d\": \"{ROOM}\", \"new_inner\": [1]}},\n \"event\": \"m\\u0065ssage\"\n}}"
    ));
    let ev = d.events();
    assert_eq!(sequences(&ev), vec![1], "{ev:?}");
}

/// The same refusal status, over the two wires, is one rule (review A). The spec
/// (switch-agent-connection.md:57): the server "sends a `refused` frame with a `status` and a
/// `detail`, then closes the socket with code 4000 plus that status": the status is an HTTP
/// status, and an HTTP refusal of the open reconnects on 408, 429 and 5xx. So does the same
/// status in a `refused` frame or a 4000 + status close (a newer server shedding load with
/// `refused {status: 503}` / 4503, or rate-limiting opens with 429 / 4429): a `Disconnected`
/// saying why, and a connect that gives up stops with the kind the HTTP refusal gives,
/// retryable. The other statuses stop, as before.
#[test]
fn a_transient_refusal_status_on_the_websocket_reconnects_as_over_http() {
    for (status, kind) in [
        (408u16, ErrorKind::Timeout),
        (429, ErrorKind::RateLimited),
        (503, ErrorKind::Remote),
    ] {
        // A live connection's reopen refused by an HTTP answer to the upgrade: reconnects.
        let mut h = Driver::live_ws(ws(), 0, &[]);
        h.conn.handle_close(h.now, 1006, "");
        h.drain();
        h.reopen();
        h.conn.handle_open_failed(h.now, Some(status), "");
        let (_, http_ev) = h.drain();
        assert!(
            matches!(&http_ev[..], [Event::Disconnected { .. }]),
            "{status} over HTTP: {http_ev:?}"
        );

        // The same status as a `refused` frame on the reopened socket.
        let mut d = Driver::live_ws(ws(), 0, &[]);
        d.conn.handle_close(d.now, 1006, "");
        d.drain();
        d.reopen();
        d.conn.handle_open(d.now);
        d.text(&format!(
            r#"{{"event":"refused","data":{{"status":{status},"detail":"try again later"}}}}"#
        ));
        let (_, ev) = d.drain();
        assert!(
            matches!(&ev[..], [Event::Disconnected { reason, .. }] if reason.contains(&format!("status {status}")) && reason.contains("try again later")),
            "{status} as a frame: {ev:?}"
        );
        // The close that follows the frame changes nothing: the reopen is already scheduled.
        d.conn.handle_close(d.now, 4000 + status, "");
        assert!(d.drain().1.is_empty());
        assert_eq!(d.conn.state(), State::Backoff);
        d.reopen();

        // And as the close alone, once live.
        let mut l = Driver::live_ws(ws(), 0, &[]);
        l.conn.handle_close(l.now, 4000 + status, "busy");
        let (_, ev) = l.drain();
        assert!(
            matches!(&ev[..], [Event::Disconnected { code: Some(c), reason, .. }] if *c == 4000 + status && reason.contains("busy")),
            "{} alone: {ev:?}",
            4000 + status
        );
        l.reopen();

        // A first connect that gives up on it stops with the kind the HTTP refusal gives.
        let mut cfg = ws();
        cfg.connect_attempts = Some(1);
        let (mut c, _) = Driver::opened(cfg);
        c.text(&format!(
            r#"{{"event":"refused","data":{{"status":{status},"detail":"later"}}}}"#
        ));
        let (_, ev) = c.drain();
        match &ev[..] {
            [Event::Stopped { error: Some(err) }] => {
                assert_eq!(
                    (err.kind, err.status, err.retryable),
                    (kind, Some(status), true),
                    "{err:?}"
                );
            }
            other => panic!("{status}: {other:?}"),
        }
    }
    // Not transient: stops, not retryable, with the kind an HTTP answer of that status has.
    for status in [400u16, 413, 418, 422] {
        let mut d = Driver::live_ws(ws(), 0, &[]);
        d.conn.handle_close(d.now, 4000 + status, "");
        let (_, ev) = d.drain();
        match &ev[..] {
            [Event::Stopped { error: Some(err) }] => {
                let http = SwitchError::http(status, "");
                assert_eq!((err.kind, err.retryable), (http.kind, false), "{status}: {err:?}");
            }
            other => panic!("{status}: {other:?}"),
        }
    }
}

/// A beat answered 409 with a `code` this client does not know reopens the stream, as
/// `no_stream` does (review A; it stopped for good). The spec's beat table
/// (switch-agent-connection.md:259): "409 | Refused, with a `code` in the body: `no_stream`,
/// `unfenced`, or `taken_over` | Reopen the stream, except on `taken_over`: stop".
#[test]
fn a_beat_409_with_an_unknown_code_reopens_the_stream() {
    let (mut d, _) = Driver::opened(config(Transport::Sse));
    d.conn.handle_bytes(
        d.now,
        format!("event: connection_state\ndata: {}\n\n", {
            let s = connection_state(None, 0, &[]);
            let v: serde_json::Value = serde_json::from_str(&s).unwrap();
            v["data"].to_string()
        })
        .as_bytes(),
    );
    d.drain();
    d.advance(2_000);
    let id = d
        .transmits()
        .into_iter()
        .find_map(|t| match t {
            Transmit::Http { id, .. } => Some(id),
            _ => None,
        })
        .expect("a beat");
    d.conn
        .handle_http_response(d.now, id, 409, r#"{"detail":"lease moved","code":"lease_expired"}"#);
    let (_, e) = d.drain();
    assert!(
        matches!(&e[..], [Event::Disconnected { reason, .. }] if reason.contains("lease moved") && reason.contains("lease_expired")),
        "{e:?}"
    );
    assert_eq!(d.conn.state(), State::Backoff);
    let path = d.reopen();
    assert!(path.contains("/events?"), "{path}");
}
