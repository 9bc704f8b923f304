//! Decoding and encoding rules of both generations (see docs/protocols/moltzap.md).

use agentwire_core::ErrorKind;
use agentwire_moltzap::{
    decode_bytes, decode_bytes_with, decode_message, decode_message_with, encode_frame, encode_notification,
    encode_request, encode_response, raw, DecodeOptions, EncodeError, Frame, FrameError, FrameErrorKind as K,
    Generation, Generation::*, Id, MoltZapError, Notification, Outcome, Request, Response, RpcError,
};

fn one(g: Generation, text: &str) -> Result<Frame, FrameError> {
    let mut v = decode_message(g, text);
    assert_eq!(v.len(), 1, "{text}: {v:?}");
    v.pop().unwrap()
}

fn err(g: Generation, text: &str) -> FrameError {
    one(g, text).expect_err(text)
}

#[test]
fn current_request_response_notification() {
    let f = one(Current, r#"{"jsonrpc":"2.0","id":"1","result":{}}"#).unwrap();
    let Frame::Response(r) = f else { panic!() };
    assert_eq!(r.id, Some(Id::from("1")));
    assert_eq!(r.result().unwrap().get(), "{}");

    let Frame::Response(r) = one(Current, r#"{"jsonrpc":"2.0","id":42,"result":null}"#).unwrap() else {
        panic!()
    };
    assert_eq!((r.id.clone(), r.result().unwrap().get()), (Some(Id::Num(42)), "null"));

    let Frame::Notification(n) = one(
        Current,
        r#"{"jsonrpc":"2.0","method":"agent/message/received","params":{"a":[1, 2]}}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        (n.name.as_str(), n.params.unwrap().get()),
        ("agent/message/received", r#"{"a":[1, 2]}"#)
    );

    let Frame::Notification(n) = one(Current, r#"{"jsonrpc":"2.0","method":"x"}"#).unwrap() else {
        panic!()
    };
    assert!(n.params.is_none());

    let Frame::Request(q) = one(Current, r#"{"jsonrpc":"2.0","id":-3,"method":"m","params":[1]}"#).unwrap() else {
        panic!()
    };
    assert_eq!(
        (q.id, q.method.as_str(), q.params.unwrap().get()),
        (Id::Num(-3), "m", "[1]")
    );
}

#[test]
fn current_error_tags_at_top_level_or_in_data() {
    let Frame::Response(r) = one(
        Current,
        r#"{"jsonrpc":"2.0","id":"1","error":{"code":-32000,"message":"no","_tag":"Unauthorized"}}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(r.error().unwrap().tag.as_deref(), Some("Unauthorized"));
    let Frame::Response(r) =
        one(Current, r#"{"jsonrpc":"2.0","id":"1","error":{"code":-1,"message":"no","data":{"_tag":"RateLimited","retryAfterMs":5}}}"#).unwrap()
    else {
        panic!()
    };
    let e = r.error().unwrap();
    assert_eq!(e.tag.as_deref(), Some("RateLimited"));
    assert_eq!(
        e.data.as_ref().unwrap().get(),
        r#"{"_tag":"RateLimited","retryAfterMs":5}"#
    );
    let typed = MoltZapError::remote(e, r.id.as_ref());
    assert_eq!((typed.kind(), typed.error.retryable), (ErrorKind::RateLimited, true));
    // data that is not an object, or a `_tag` that is not a string: no tag, no error.
    for data in [r#""x""#, "[1]", r#"{"_tag":5}"#] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":"1","error":{{"code":-1,"message":"no","data":{data}}}}}"#);
        let Frame::Response(r) = one(Current, &text).unwrap() else {
            panic!()
        };
        assert_eq!(r.error().unwrap().tag, None, "{data}");
    }
    // Nor one on the error object itself, in either generation; one of `data` is still read.
    for generation in [Current, Released] {
        for tag in ["5", "null", r#"{"_tag":"x"}"#, "[]"] {
            let text = format!(
                r#"{{"jsonrpc":"2.0","type":"response","id":"1","error":{{"code":-1,"message":"no","_tag":{tag},"data":{{"_tag":"RateLimited"}}}}}}"#
            );
            let Frame::Response(r) = one(generation, &text).unwrap() else {
                panic!()
            };
            let read = (generation == Current).then(|| "RateLimited".to_owned());
            assert_eq!(r.error().unwrap().tag, read, "{generation:?} {tag}");
        }
    }
}

#[test]
fn a_released_error_has_no_tag_and_survives_its_own_encoding() {
    // The released server sends no `_tag`; one there is read as nothing (the fuzz target `frame`
    // found a released error read with a tag that its encoding, rightly, does not write).
    for text in [
        r#"{"jsonrpc":"2.0","type":"response","id":"A-1","error":{"code":-32000,"message":"no","_tag":"event"}}"#,
        r#"{"jsonrpc":"2.0","type":"response","id":"A-1","error":{"code":-1,"message":"no","data":{"_tag":"RateLimited"}}}"#,
    ] {
        let frame = one(Released, text).unwrap();
        let Frame::Response(r) = &frame else { panic!() };
        assert_eq!(r.error().unwrap().tag, None, "{text}");
        let again = one(Released, &encode_frame(Released, &frame).unwrap()).unwrap();
        assert_eq!(again, frame);
    }
}

#[test]
fn batches_and_concatenation_keep_good_frames() {
    let text =
        r#"[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"1.0","id":2,"result":2},5,{"jsonrpc":"2.0","method":"n"}]"#;
    let v = decode_message(Current, text);
    assert_eq!(v.len(), 4);
    assert!(matches!(v[0], Ok(Frame::Response(_))));
    let e = v[1].clone().unwrap_err();
    assert_eq!((e.field(), e.id.clone()), ("jsonrpc", Some(Id::Num(2))));
    assert_eq!(v[2].clone().unwrap_err().kind, K::NotAnObject);
    assert!(matches!(v[3], Ok(Frame::Notification(_))));

    let text = r#"{"jsonrpc":"2.0","type":"event","event":"a"} {"jsonrpc":"2.0","type":"bogus"}{"jsonrpc":"2.0","type":"event","event":"b"}"#;
    let v = decode_message(Released, text);
    assert_eq!(v.len(), 3);
    assert!(v[0].is_ok() && v[1].is_err() && v[2].is_ok());

    // A syntax error ends the message; what came before it is kept.
    let v = decode_message(Released, r#"{"jsonrpc":"2.0","type":"event","event":"a"}{"jsonrpc":"#);
    assert_eq!(v.len(), 2);
    assert!(v[0].is_ok());
    assert!(matches!(v[1], Err(FrameError { kind: K::Syntax(_), .. })));

    assert_eq!(err(Current, "[]").kind, K::EmptyBatch);
}

#[test]
fn released_frames() {
    let Frame::Response(r) = one(
        Released,
        r#"{"jsonrpc":"2.0","type":"response","id":null,"error":{"code":-32700,"message":"Invalid JSON"}}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(r.id, None);
    assert_eq!(r.error().unwrap().code, -32700);
    let Frame::Notification(n) = one(
        Released,
        r#"{"jsonrpc":"2.0","type":"event","event":"presence/changed","data":{"s":1}}"#,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(
        (n.name.as_str(), n.params.unwrap().get()),
        ("presence/changed", r#"{"s":1}"#)
    );
    // The released generation needs `type`, and string ids.
    assert_eq!(
        err(Released, r#"{"jsonrpc":"2.0","id":"1","result":{}}"#).kind,
        K::MissingField("type")
    );
    assert_eq!(
        err(Released, r#"{"jsonrpc":"2.0","type":"response","id":1,"result":{}}"#).field(),
        "id"
    );
    assert_eq!(err(Released, r#"{"jsonrpc":"2.0","type":"ping"}"#).field(), "type");
    assert_eq!(
        err(Released, r#"{"jsonrpc":"2.0","type":"event","data":{}}"#).kind,
        K::MissingField("event")
    );
    // A current notification is not a released event, and `type` means nothing to the current generation.
    assert_eq!(
        err(Released, r#"{"jsonrpc":"2.0","type":"event","method":"x"}"#).kind,
        K::MissingField("event")
    );
    assert!(one(Current, r#"{"jsonrpc":"2.0","type":"response","id":"1","result":{}}"#).is_ok());
    // A released response's `result` is optional (`"result":<any>?`): with neither key it is a
    // success with `null` (a handler that returned nothing); current still needs one.
    let Frame::Response(r) = one(Released, r#"{"jsonrpc":"2.0","type":"response","id":"aw-5"}"#).unwrap() else {
        panic!()
    };
    assert_eq!(r.result().map(|v| v.get()), Some("null"));
    assert_eq!(
        err(Released, r#"{"jsonrpc":"2.0","type":"response","id":null}"#).kind,
        K::MissingField("result")
    );
}

#[test]
fn structural_errors_name_the_field() {
    let cases: &[(Generation, &str, &str)] = &[
        (Current, r#"{"id":"1","result":{}}"#, "jsonrpc"),
        (Current, r#"{"jsonrpc":2,"id":"1","result":{}}"#, "jsonrpc"),
        (
            Current,
            r#"{"jsonrpc":"2.0","id":"1","result":{},"error":{"code":1,"message":""}}"#,
            "frame",
        ),
        (Current, r#"{"jsonrpc":"2.0","id":"1"}"#, "result"),
        (Current, r#"{"jsonrpc":"2.0"}"#, "method"),
        (
            Current,
            r#"{"jsonrpc":"2.0","id":"1","method":"m","result":1}"#,
            "frame",
        ),
        (Current, r#"{"jsonrpc":"2.0","method":5}"#, "method"),
        (Current, r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#, "id"),
        (Current, r#"{"jsonrpc":"2.0","id":null,"result":1}"#, "id"),
        (Current, r#"{"jsonrpc":"2.0","result":1}"#, "id"),
        (Current, r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#, "id"),
        (
            Current,
            r#"{"jsonrpc":"2.0","id":99999999999999999999,"result":1}"#,
            "id",
        ),
        (Current, r#"{"jsonrpc":"2.0","id":true,"result":1}"#, "id"),
        (
            Current,
            r#"{"jsonrpc":"2.0","id":"1","error":{"code":"x","message":""}}"#,
            "error",
        ),
        (Current, r#"{"jsonrpc":"2.0","id":"1","error":{"code":1}}"#, "error"),
        (Current, r#"{"jsonrpc":"2.0","id":"1","error":"boom"}"#, "error"),
        (
            Current,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":"1","result":1}"#,
            "jsonrpc",
        ),
        (Released, r#"{"jsonrpc":"2.0","type":"response"}"#, "result"),
        (Released, r#"{"jsonrpc":"2.0","type":7}"#, "type"),
        (Current, "\"just a string\"", "frame"),
        (Current, "{not json", "message"),
        (Current, "   ", "message"),
    ];
    for (g, text, field) in cases {
        let e = err(*g, text);
        assert_eq!(e.field(), *field, "{text}: {e}");
        let typed = MoltZapError::frame(&e);
        assert_eq!(typed.kind(), ErrorKind::Decode, "{text}");
    }
    let e = err(Current, r#"{"jsonrpc":"2.0","id":"1","id":"2","result":1}"#);
    assert_eq!(e.kind, K::DuplicateKey("id".into()));
}

#[test]
fn errors_keep_the_id_they_could_read() {
    let e = err(
        Current,
        r#"{"jsonrpc":"2.0","id":"abc","result":{},"error":{"code":1,"message":""}}"#,
    );
    assert_eq!(e.id, Some(Id::from("abc")));
    let e = err(
        Released,
        r#"{"jsonrpc":"2.0","type":"response","id":"q","error":{"code":"bad"}}"#,
    );
    assert_eq!(e.id, Some(Id::from("q")));
    assert_eq!(MoltZapError::frame(&e).request_id, Some(Id::from("q")));
}

#[test]
fn unknown_keys_tolerated_unless_strict() {
    let text = r#"{"jsonrpc":"2.0","type":"request","id":"x2","method":"system/ping","params":{},"extra":1}"#;
    assert!(one(Released, text).is_ok());
    let strict = DecodeOptions {
        reject_unknown_keys: true,
        ..DecodeOptions::default()
    };
    let v = decode_message_with(Released, text, &strict);
    assert_eq!(v[0].clone().unwrap_err().kind, K::UnknownKey("extra".into()));
    // A known key on the wrong frame type counts as unknown too.
    let v = decode_message_with(
        Released,
        r#"{"jsonrpc":"2.0","type":"response","id":"1","result":{},"method":"m"}"#,
        &strict,
    );
    assert_eq!(v[0].clone().unwrap_err().kind, K::UnknownKey("method".into()));
    let v = decode_message_with(
        Current,
        r#"{"jsonrpc":"2.0","type":"request","id":"1","method":"m"}"#,
        &strict,
    );
    assert_eq!(v[0].clone().unwrap_err().kind, K::UnknownKey("type".into()));
    let v = decode_message_with(
        Released,
        r#"{"jsonrpc":"2.0","type":"request","id":"1","method":"m","params":{}}"#,
        &strict,
    );
    assert!(v[0].is_ok());
}

#[test]
fn limits() {
    // The default (8 MiB) takes a full agent/message/list window: 100 messages of 65,536 bytes.
    let window = format!(
        r#"{{"jsonrpc":"2.0","id":"1","result":"{}"}}"#,
        "x".repeat(100 * 65_536 + 100 * 1024)
    );
    assert!(one(Current, &window).is_ok());
    let big = format!(r#"{{"jsonrpc":"2.0","method":"n","params":"{}"}}"#, "x".repeat(8 << 20));
    let e = err(Current, &big);
    assert!(matches!(e.kind, K::TooLarge { limit: 8388608, .. }));
    assert_eq!(MoltZapError::frame(&e).kind(), ErrorKind::Limit);

    let deep = |n: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"n","params":{}{}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    assert!(one(Current, &deep(63)).is_ok());
    assert_eq!(err(Current, &deep(64)).kind, K::TooDeep { limit: 64 });
    // Many siblings are not depth.
    let wide = format!(
        r#"{{"jsonrpc":"2.0","method":"n","params":[{}[]]}}"#,
        "[{}],".repeat(200)
    );
    assert!(one(Current, &wide).is_ok());
    // Brackets inside strings do not count; escaped quotes do not end a string.
    let s = format!(r#"{{"jsonrpc":"2.0","method":"n","params":"\"{}"}}"#, "[".repeat(500));
    assert!(one(Current, &s).is_ok());
    // Far past serde_json's own recursion limit, with the depth check off: an error, no overflow.
    let off = DecodeOptions {
        max_depth: usize::MAX,
        ..DecodeOptions::default()
    };
    let v = decode_message_with(Current, &"[".repeat(200_000), &off);
    assert!(v[0].is_err());
    let v = decode_message_with(Current, &deep(100_000), &off);
    assert!(v[0].is_ok(), "raw payloads are skipped iteratively by serde_json");

    let long = format!(r#"{{"jsonrpc":"2.0","id":"{}","result":1}}"#, "i".repeat(257));
    assert_eq!(err(Current, &long).kind, K::IdTooLong { len: 257, limit: 256 });

    let few = DecodeOptions {
        max_frames: 2,
        ..DecodeOptions::default()
    };
    let v = decode_message_with(
        Current,
        r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","method":"c"}]"#,
        &few,
    );
    assert_eq!(v.len(), 3);
    assert_eq!(v[2].clone().unwrap_err().kind, K::TooManyFrames { limit: 2 });
}

#[test]
fn bytes_must_be_utf8() {
    let v = decode_bytes(Current, b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}");
    assert_eq!(v[0].clone().unwrap_err().kind, K::InvalidUtf8 { valid_up_to: 27 });
    assert!(decode_bytes(Current, br#"{"jsonrpc":"2.0","method":"n"}"#)[0].is_ok());
}

/// `max_message_bytes` is the largest message taken: a message of exactly that size decodes,
/// one byte more is `TooLarge`; for bytes, before their UTF-8 is checked.
#[test]
fn the_size_limit_takes_a_message_of_exactly_that_size() {
    let text = r#"{"jsonrpc":"2.0","method":"n"}"#;
    let exact = DecodeOptions {
        max_message_bytes: text.len(),
        ..DecodeOptions::default()
    };
    assert!(decode_message_with(Current, text, &exact)[0].is_ok());
    assert!(decode_bytes_with(Current, text.as_bytes(), &exact)[0].is_ok());
    let under = DecodeOptions {
        max_message_bytes: text.len() - 1,
        ..DecodeOptions::default()
    };
    let too_large = K::TooLarge {
        size: text.len(),
        limit: text.len() - 1,
    };
    assert_eq!(
        decode_message_with(Current, text, &under)[0].clone().unwrap_err().kind,
        too_large
    );
    assert_eq!(
        decode_bytes_with(Current, text.as_bytes(), &under)[0]
            .clone()
            .unwrap_err()
            .kind,
        too_large
    );
    // Too large and not UTF-8: the size is what is reported, before the bytes are read.
    let bad = b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}";
    let v = decode_bytes_with(
        Current,
        bad,
        &DecodeOptions {
            max_message_bytes: bad.len() - 1,
            ..DecodeOptions::default()
        },
    );
    assert_eq!(
        v[0].clone().unwrap_err().kind,
        K::TooLarge {
            size: bad.len(),
            limit: bad.len() - 1
        }
    );
}

#[test]
fn encoders_match_the_specs() {
    let params =
        raw(r#"{"agentKey":"moltzap_agent_abc123...","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}"#).unwrap();
    assert_eq!(
        encode_request(Current, &Id::from("1"), "agent/network/connect", Some(&params)).unwrap(),
        r#"{"jsonrpc":"2.0","id":"1","method":"agent/network/connect","params":{"agentKey":"moltzap_agent_abc123...","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}}"#
    );
    assert_eq!(
        encode_request(Current, &Id::Num(7), "m", None).unwrap(),
        r#"{"jsonrpc":"2.0","id":7,"method":"m"}"#
    );
    assert_eq!(
        encode_request(Released, &Id::Num(7), "m", None),
        Err(EncodeError::NumericIdInReleased)
    );
    let ok = Outcome::Result(raw("{}").unwrap());
    assert_eq!(
        encode_response(Current, Some(&Id::from("1")), &ok).unwrap(),
        r#"{"jsonrpc":"2.0","id":"1","result":{}}"#
    );
    assert_eq!(encode_response(Current, None, &ok), Err(EncodeError::ResultWithoutId));
    let mut e = RpcError::new(-32000, "Unauthorized");
    e.tag = Some("Unauthorized".into());
    assert_eq!(
        encode_response(Current, Some(&Id::Num(2)), &Outcome::Error(e.clone())).unwrap(),
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Unauthorized","_tag":"Unauthorized"}}"#
    );
    assert_eq!(
        encode_response(Released, None, &Outcome::Error(e)).unwrap(),
        r#"{"jsonrpc":"2.0","type":"response","id":null,"error":{"code":-32000,"message":"Unauthorized"}}"#
    );
    assert_eq!(
        encode_notification(Current, "a/b", None),
        r#"{"jsonrpc":"2.0","method":"a/b"}"#
    );
    assert_eq!(
        encode_notification(Released, "a/b", Some(&raw("[]").unwrap())),
        r#"{"jsonrpc":"2.0","type":"event","event":"a/b","data":[]}"#
    );
    assert_eq!(
        encode_request(Current, &Id::from("q\"\n"), "é", None).unwrap(),
        r#"{"jsonrpc":"2.0","id":"q\"\n","method":"é"}"#
    );
}

/// The depth limit is each frame's: a batch element or a concatenated value nested too deep is
/// that frame's `TooDeep`, with its id and shape when they can be read, and the others decode.
#[test]
fn depth_is_checked_per_frame() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep = nested(70);
    let v = decode_message(
        Current,
        &format!(
            r#"[{{"jsonrpc":"2.0","id":"a","result":1}},{{"jsonrpc":"2.0","method":"m","params":{deep}}},{{"jsonrpc":"2.0","method":"n"}},{{"jsonrpc":"2.0","id":"b","result":{deep}}}]"#
        ),
    );
    assert_eq!(v.len(), 4, "{v:?}");
    assert!(v[0].is_ok() && v[2].is_ok(), "{v:?}");
    let e = v[1].clone().unwrap_err();
    assert_eq!((e.kind, e.id, e.response), (K::TooDeep { limit: 64 }, None, false));
    let e = v[3].clone().unwrap_err();
    assert_eq!(
        (&e.kind, &e.id, e.response),
        (&K::TooDeep { limit: 64 }, &Some(Id::from("b")), true)
    );
    assert_eq!(MoltZapError::frame(&e).kind(), ErrorKind::Limit);

    let v = decode_message(
        Released,
        &format!(
            r#"{{"jsonrpc":"2.0","type":"response","id":"q","result":{deep}}} {{"jsonrpc":"2.0","type":"event","event":"e"}}"#
        ),
    );
    assert_eq!(v.len(), 2, "{v:?}");
    let e = v[0].clone().unwrap_err();
    assert_eq!(
        (&e.kind, &e.id, e.response),
        (&K::TooDeep { limit: 64 }, &Some(Id::from("q")), true)
    );
    assert!(v[1].is_ok());

    // The batch itself is not a level: an element may nest as deep as a lone frame.
    let at_limit = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{}}}"#, nested(63));
    assert!(one(Current, &at_limit).is_ok());
    let v = decode_message(Current, &format!("[{at_limit},{at_limit}]"));
    assert!(v.iter().all(Result::is_ok), "{v:?}");
    // In a message with a frame too deep, an empty batch is still `EmptyBatch`.
    let v = decode_message(
        Current,
        &format!(r#"[] {{"jsonrpc":"2.0","method":"m","params":{deep}}}"#),
    );
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].clone().unwrap_err().kind, K::EmptyBatch);
    assert_eq!(v[1].clone().unwrap_err().kind, K::TooDeep { limit: 64 });
    // Unclosed, it is the syntax error it is.
    let v = decode_message(Current, &"[".repeat(100));
    assert!(matches!(&v[..], [Err(FrameError { kind: K::Syntax(_), .. })]), "{v:?}");
    // Far deeper than any stack would take recursion: the split and the id read skip it.
    let abyss = nested(300_000);
    let v = decode_message(
        Current,
        &format!(r#"[{{"jsonrpc":"2.0","id":"c","result":{abyss}}},{{"jsonrpc":"2.0","method":"n"}}]"#),
    );
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].as_ref().unwrap_err().id, Some(Id::from("c")));
    assert!(v[1].is_ok(), "{v:?}");
}

#[test]
fn a_key_given_twice_keeps_the_id() {
    let e = err(Current, r#"{"jsonrpc":"2.0","id":"r","result":1,"result":2}"#);
    assert_eq!(
        (&e.kind, &e.id, e.response),
        (&K::DuplicateKey("result".into()), &Some(Id::from("r")), true)
    );
    let e = err(
        Released,
        r#"{"jsonrpc":"2.0","type":"response","id":"r","error":{},"error":{}}"#,
    );
    assert_eq!(
        (&e.kind, &e.id, e.response),
        (&K::DuplicateKey("error".into()), &Some(Id::from("r")), true)
    );
    // Not a duplicated id: which one was meant is unknown.
    let e = err(Current, r#"{"jsonrpc":"2.0","id":"r","id":"s","result":1}"#);
    assert_eq!((&e.kind, &e.id), (&K::DuplicateKey("id".into()), &None));
    // Nor when another key was given twice first.
    let e = err(Current, r#"{"jsonrpc":"2.0","id":"r","result":1,"result":2,"id":"s"}"#);
    assert_eq!((&e.kind, &e.id), (&K::DuplicateKey("result".into()), &None));
    let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
    let e = err(
        Current,
        &format!(r#"{{"jsonrpc":"2.0","id":"r","id":"s","result":{deep}}}"#),
    );
    assert_eq!((&e.kind, &e.id), (&K::TooDeep { limit: 64 }, &None));
}

/// A frame refused before it is decoded still says whether it is shaped as a response: `result`
/// or `error` present, or (released) `type: "response"`; a released request or event is not.
#[test]
fn a_refused_frame_says_whether_it_is_a_response() {
    let cases: &[(Generation, &str, bool)] = &[
        (
            Current,
            r#"{"jsonrpc":"2.0","id":"r","error":{"code":1,"message":""},"error":{}}"#,
            true,
        ),
        (Current, r#"{"jsonrpc":"2.0","id":"r","result":1,"result":2}"#, true),
        (
            Released,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","type":"response","id":"r"}"#,
            true,
        ),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"request","id":"r","method":"m","method":"n"}"#,
            false,
        ),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"event","event":"e","event":"f"}"#,
            false,
        ),
        (
            Current,
            r#"{"jsonrpc":"2.0","type":"response","id":"r","method":"m","method":"n"}"#,
            false,
        ),
    ];
    for (g, text, response) in cases {
        let e = err(*g, text);
        assert!(matches!(e.kind, K::DuplicateKey(_)), "{text}: {e}");
        assert_eq!(e.response, *response, "{text}");
    }
}

/// `jsonrpc` is compared as a string, not as text: `"2.\u0030"` is `"2.0"`, `"2.1"` is not.
#[test]
fn jsonrpc_is_read_as_a_string() {
    assert!(one(Current, r#"{"jsonrpc":"2.\u0030","method":"x"}"#).is_ok());
    assert!(one(Released, r#"{"jsonrpc":"\u0032.0","type":"event","event":"x"}"#).is_ok());
    for text in [
        r#"{"jsonrpc":"2.1","method":"x"}"#,
        r#"{"jsonrpc":"2.\u0031","method":"x"}"#,
    ] {
        assert_eq!(err(Current, text).field(), "jsonrpc", "{text}");
    }
}

/// Strict decoding takes every frame type with all of its keys, in both generations.
#[test]
fn strict_takes_every_frame_with_all_its_keys() {
    let strict = DecodeOptions {
        reject_unknown_keys: true,
        ..DecodeOptions::default()
    };
    let cases: &[(Generation, &str)] = &[
        (Current, r#"{"jsonrpc":"2.0","id":"1","method":"m","params":{}}"#),
        (Current, r#"{"jsonrpc":"2.0","id":"1","result":{}}"#),
        (
            Current,
            r#"{"jsonrpc":"2.0","id":"1","error":{"code":1,"message":"m"}}"#,
        ),
        (Current, r#"{"jsonrpc":"2.0","method":"n","params":{}}"#),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"request","id":"1","method":"m","params":{}}"#,
        ),
        (Released, r#"{"jsonrpc":"2.0","type":"response","id":"1","result":{}}"#),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"response","id":"1","error":{"code":1,"message":"m"}}"#,
        ),
        (Released, r#"{"jsonrpc":"2.0","type":"event","event":"e","data":{}}"#),
    ];
    for (g, text) in cases {
        let v = decode_message_with(*g, text, &strict);
        assert!(matches!(&v[..], [Ok(_)]), "{g:?} {text}: {v:?}");
    }
}

/// Strict decoding refuses each known key on a frame type that has no such key, naming it.
#[test]
fn strict_names_each_known_key_a_frame_type_has_not() {
    let strict = DecodeOptions {
        reject_unknown_keys: true,
        ..DecodeOptions::default()
    };
    let request = r#""jsonrpc":"2.0","type":"request","id":"1","method":"m""#;
    let cases: &[(Generation, String, &str)] = &[
        (
            Current,
            r#"{"jsonrpc":"2.0","id":"1","method":"m","type":"request"}"#.into(),
            "type",
        ),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"event","event":"e","id":"1"}"#.into(),
            "id",
        ),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"event","event":"e","method":"m"}"#.into(),
            "method",
        ),
        (
            Released,
            r#"{"jsonrpc":"2.0","type":"event","event":"e","params":{}}"#.into(),
            "params",
        ),
        (Released, format!(r#"{{{request},"result":{{}}}}"#), "result"),
        (Released, format!(r#"{{{request},"error":{{}}}}"#), "error"),
        (Released, format!(r#"{{{request},"event":"e"}}"#), "event"),
        (Released, format!(r#"{{{request},"data":{{}}}}"#), "data"),
    ];
    for (g, text, key) in cases {
        assert!(one(*g, text).is_ok(), "{g:?} {text}");
        let v = decode_message_with(*g, text, &strict);
        assert_eq!(
            v[0].clone().unwrap_err().kind,
            K::UnknownKey((*key).into()),
            "{g:?} {text}"
        );
    }
}

/// Each known key given twice is refused, naming it.
#[test]
fn each_known_key_given_twice_is_named() {
    for key in [
        "jsonrpc", "type", "id", "method", "params", "result", "error", "event", "data",
    ] {
        let text = format!(r#"{{"{key}":1,"jsonrpc":"2.0","id":"1","method":"m","{key}":2}}"#);
        assert_eq!(err(Current, &text).kind, K::DuplicateKey(key.into()), "{text}");
    }
}

/// An id: a string of at most `max_id_len` bytes (256 taken, 257 not), or in the current
/// generation an integer; the error says which the generation wants.
#[test]
fn ids_of_each_generation() {
    let at_limit = format!(r#"{{"jsonrpc":"2.0","id":"{}","result":1}}"#, "i".repeat(256));
    let Frame::Response(r) = one(Current, &at_limit).unwrap() else {
        panic!("{at_limit}")
    };
    assert_eq!(r.id, Some(Id::from("i".repeat(256))));
    let reason = |g, text| match err(g, text).kind {
        K::BadField { field: "id", reason } => reason,
        other => panic!("{text}: {other:?}"),
    };
    let current = r#"{"jsonrpc":"2.0","id":true,"result":1}"#;
    assert_eq!(reason(Current, current), "must be a string or an integer");
    for text in [
        r#"{"jsonrpc":"2.0","type":"response","id":true,"result":1}"#,
        r#"{"jsonrpc":"2.0","type":"response","id":7,"result":1}"#,
    ] {
        assert_eq!(
            reason(Released, text),
            "must be a string (released generation)",
            "{text}"
        );
    }
}

/// A generation's name, as the bindings and the connected event give it, and an id as text.
#[test]
fn generations_and_ids_have_their_names() {
    assert_eq!([Current.as_str(), Released.as_str()], ["current", "released"]);
    assert_eq!([Id::from("a1").to_string(), Id::from(-7).to_string()], ["a1", "-7"]);
}

/// Frames compare by every part (ids, names, codes, messages, tags, payloads as raw text), one
/// part at a time; a frame of one type never equals one of another.
#[test]
fn frames_are_equal_only_in_every_part() {
    let p = |json: &str| Some(raw(json).unwrap());
    let req = Request {
        id: Id::from("1"),
        method: "m".into(),
        params: p("{}"),
    };
    let note = Notification {
        name: "n".into(),
        params: p("{}"),
    };
    let error = RpcError {
        code: 1,
        message: "m".into(),
        data: p("{}"),
        tag: Some("T".into()),
    };
    let answer = |outcome| {
        Frame::Response(Response {
            id: Some(Id::from("1")),
            outcome,
        })
    };
    let frames = [
        Frame::Request(req.clone()),
        Frame::Notification(note.clone()),
        answer(Outcome::Result(raw("1").unwrap())),
        answer(Outcome::Error(error.clone())),
    ];
    for (i, a) in frames.iter().enumerate() {
        for (j, b) in frames.iter().enumerate() {
            assert_eq!(a == b, i == j, "{a:?} {b:?}");
        }
    }
    let requests = [
        Request {
            id: Id::from("2"),
            ..req.clone()
        },
        Request {
            method: "x".into(),
            ..req.clone()
        },
        Request {
            params: p("[]"),
            ..req.clone()
        },
        Request {
            params: None,
            ..req.clone()
        },
    ];
    for r in requests {
        assert_ne!(Frame::Request(r), frames[0]);
    }
    let notes = [
        Notification {
            name: "x".into(),
            ..note.clone()
        },
        Notification {
            params: p("[]"),
            ..note.clone()
        },
    ];
    for n in notes {
        assert_ne!(Frame::Notification(n), frames[1]);
    }
    assert_ne!(answer(Outcome::Result(raw("2").unwrap())), frames[2]);
    let errors = [
        RpcError {
            code: 2,
            ..error.clone()
        },
        RpcError {
            message: "x".into(),
            ..error.clone()
        },
        RpcError {
            data: None,
            ..error.clone()
        },
        RpcError {
            tag: None,
            ..error.clone()
        },
    ];
    for e in errors {
        assert_ne!(answer(Outcome::Error(e)), frames[3]);
    }
}
