//! Fuzzes `codec::decode`: it must never panic, and whatever it accepts must survive its own
//! re-encoding: `decode(encode(m)) == m`, except that `encode` adds the
//! `Content-Type: application/json` a body without one gets. The client's reading
//! (`decode_for_client`) takes whatever `decode` takes, as the same message, and more only for
//! a `Stream`, `Priority` or `Retry-After` value `decode` refuses; of a message `decode` refuses
//! for its unknown type, it refuses the same type, or the first fault after it.
#![no_main]

use agentwire_rkt::codec::{decode_for_client, DEFAULT_MAX_MESSAGE_SIZE};
use agentwire_rkt::{decode, encode, DecodeErrorKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // RKT travels in WebSocket text frames, which are UTF-8: other input is not a message.
    let Ok(text) = std::str::from_utf8(data) else { return };
    // A small limit sometimes, so the TooLarge path is fuzzed too.
    let limit = if data.first() == Some(&b'!') {
        64
    } else {
        DEFAULT_MAX_MESSAGE_SIZE
    };
    let (strict, client) = (decode(text, limit), decode_for_client(text, limit));
    match (&strict, &client) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text:?}"),
        (Err(a), Err(b)) if matches!(a.kind, DecodeErrorKind::UnknownType(_)) => {
            assert_eq!(a.message_type, b.message_type, "{text:?}");
            if let DecodeErrorKind::UnknownType(t) = &b.kind {
                assert_eq!(&a.kind, &b.kind, "{text:?}");
                assert_eq!(a.message_type.as_ref(), Some(t), "{text:?}");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{text:?}"),
        (Err(a), Ok(_)) => assert!(
            matches!(
                a.kind,
                DecodeErrorKind::BadHeaderValue {
                    name: "Stream" | "Priority" | "Retry-After",
                    ..
                }
            ),
            "decode {a:?}, decode_for_client took it\ninput: {text:?}"
        ),
        _ => panic!("decode {strict:?}, decode_for_client {client:?}\ninput: {text:?}"),
    }
    let Ok(msg) = strict else { return };
    let wire = encode(&msg);
    let mut expected = msg.clone();
    if expected.body.is_some() && expected.header("Content-Type").is_none() {
        expected.headers.set("Content-Type", "application/json");
    }
    match decode(&wire, usize::MAX) {
        Ok(again) => assert_eq!(
            again, expected,
            "re-decoded message differs\ninput: {text:?}\nencoded: {wire:?}"
        ),
        Err(e) => panic!("re-encoding does not decode: {e} ({e:?})\ninput: {text:?}\nencoded: {wire:?}"),
    }
    // Encoding is a fixed point after one round.
    assert_eq!(encode(&expected), wire);
});
