//! What a command refuses before anything is sent: an amount that is not positive and finite,
//! a message one byte over `max_message_size`. Found by mutation testing: each test fails with
//! one change to `client/commands.rs` that the other tests let through.
use agentwire_core::{ErrorKind, Outgoing, SeededEntropy};
use agentwire_rkt::*;
use serde_json::json;

const T0: u64 = 1_782_648_000_000;

fn ready(cfg: ClientConfig) -> ClientSession {
    let mut c = ClientSession::new(cfg, Box::new(SeededEntropy::new(1)));
    c.handle_open(T0);
    let Some(Outgoing::Text(hello)) = c.poll_transmit() else {
        panic!("no HELLO")
    };
    let id = hello.lines().find_map(|l| l.strip_prefix("Message-ID: ")).unwrap();
    let ack = format!(
        "RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: ack\nReply-To: {id}\nSession-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n\n{}",
        r#"{"agreed_version":1,"session_timeout":300}"#
    );
    c.handle_text(T0, &ack);
    while c.poll_transmit().is_some() {}
    while c.poll_event().is_some() {}
    c
}

fn cfg(max_message_size: usize) -> ClientConfig {
    ClientConfig {
        keepalive: false,
        max_message_size,
        ..Default::default()
    }
}

#[test]
fn pay_amount_must_be_positive_and_finite() {
    let mut c = ready(cfg(1 << 20));
    for amount in [0.0, -0.0, -1.0, -0.001, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        let e = c.pay(T0, amount, "RKTT", None, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{amount}");
        assert!(e.to_string().contains("positive finite"), "{amount}: {e}");
    }
    assert!(c.poll_transmit().is_none());
    c.pay(T0, f64::MIN_POSITIVE, "RKTT", None, None).unwrap();
    assert!(c.poll_transmit().is_some());
}

/// A message of exactly `max_message_size` bytes goes; one byte over, refused with `limit`
/// (the body alone fits: the headers make it too long).
#[test]
fn a_message_of_exactly_max_message_size_goes_and_one_byte_more_does_not() {
    let params = json!({"text": "x".repeat(200)});
    let send = |max: usize| {
        let mut c = ready(cfg(max));
        let r = c.request(T0, "echo", Some(params.clone()), RequestOptions::default());
        let out: Vec<_> = std::iter::from_fn(|| c.poll_transmit()).collect();
        (r, out)
    };
    let (r, out) = send(1 << 20);
    r.unwrap();
    let [Outgoing::Text(frame)] = &out[..] else {
        panic!("{out:?}")
    };
    let size = frame.len();
    let (r, out) = send(size);
    r.unwrap();
    assert_eq!(out, [Outgoing::Text(frame.clone())]);
    let (r, out) = send(size - 1);
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(
        e.to_string().contains(&format!(
            "message of {size} bytes exceeds max_message_size {}",
            size - 1
        )),
        "{e}"
    );
    assert!(out.is_empty(), "{out:?}");
}

/// `max_message_size()` is the limit the session applies (what a binding bounds an argument's
/// text by before reading it), not a constant.
#[test]
fn the_session_reports_the_max_message_size_it_applies() {
    for max in [300, 1 << 20] {
        assert_eq!(ready(cfg(max)).max_message_size(), max);
    }
}
