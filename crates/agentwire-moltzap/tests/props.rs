//! Properties: encode → decode is the identity for requests, responses and notifications of both
//! generations; decoding never panics on arbitrary text or bytes, nor on mutations of the
//! captured frames, and whatever it accepts survives its own re-encoding.

use agentwire_moltzap::{
    decode_bytes, decode_message, decode_message_with, encode_frame, raw, DecodeOptions, Frame, Generation, Id,
    Notification, Outcome, Request, Response, RpcError,
};
use proptest::prelude::*;
use serde_json::Value;

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{0,5}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn payload() -> impl Strategy<Value = Option<Box<serde_json::value::RawValue>>> {
    prop::option::of(json().prop_map(|v| raw(&v.to_string()).unwrap()))
}

fn generation() -> impl Strategy<Value = Generation> {
    prop_oneof![Just(Generation::Current), Just(Generation::Released)]
}

fn id(g: Generation) -> BoxedStrategy<Id> {
    let s = "\\PC{0,24}".prop_map(Id::Str);
    match g {
        Generation::Released => s.boxed(),
        Generation::Current => prop_oneof![s, any::<i64>().prop_map(Id::Num)].boxed(),
    }
}

fn rpc_error(g: Generation) -> impl Strategy<Value = RpcError> {
    let tag = match g {
        Generation::Current => prop::option::of("[A-Za-z]{1,12}").boxed(),
        Generation::Released => Just(None).boxed(),
    };
    (any::<i64>(), "\\PC{0,16}", payload(), tag).prop_map(|(code, message, data, tag)| {
        // `"data": null` decodes as no data.
        let data = data.filter(|d| d.get() != "null");
        RpcError {
            code,
            message,
            data,
            tag,
        }
    })
}

fn frame() -> impl Strategy<Value = (Generation, Frame)> {
    generation().prop_flat_map(|g| {
        let request = (id(g), "\\PC{0,16}", payload())
            .prop_map(|(id, method, params)| Frame::Request(Request { id, method, params }));
        let result = (id(g), json()).prop_map(|(id, v)| {
            Frame::Response(Response {
                id: Some(id),
                outcome: Outcome::Result(raw(&v.to_string()).unwrap()),
            })
        });
        let error = (prop::option::of(id(g)), rpc_error(g)).prop_map(|(id, e)| {
            Frame::Response(Response {
                id,
                outcome: Outcome::Error(e),
            })
        });
        let note =
            ("\\PC{0,16}", payload()).prop_map(|(name, params)| Frame::Notification(Notification { name, params }));
        (Just(g), prop_oneof![request, result, error, note])
    })
}

/// Whatever decodes must decode again, equal, from its own encoding.
fn reencodes(g: Generation, text: &str) {
    let opts = DecodeOptions {
        max_message_bytes: usize::MAX,
        ..DecodeOptions::default()
    };
    for f in decode_message(g, text).into_iter().flatten() {
        let wire = encode_frame(g, &f).unwrap_or_else(|e| panic!("{e}: {f:?} from {text:?}"));
        let again = decode_message_with(g, &wire, &opts);
        assert_eq!(again.len(), 1, "{wire}");
        assert_eq!(
            again[0].as_ref().unwrap_or_else(|e| panic!("{e}: {wire}")),
            &f,
            "{text:?} -> {wire}"
        );
    }
}

fn vector_lines() -> Vec<String> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/moltzap-2026.425");
    let mut lines = Vec::new();
    for e in std::fs::read_dir(dir).expect("vectors folder") {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        lines.extend(
            text.lines()
                .filter_map(|l| l.find('{').map(|at| l[at..].to_string()))
                .filter(|l| l.len() < 4096),
        );
    }
    assert!(!lines.is_empty());
    lines
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn encode_then_decode_is_identity((g, f) in frame()) {
        let wire = encode_frame(g, &f).unwrap();
        let back = decode_message(g, &wire);
        prop_assert_eq!(back.len(), 1);
        prop_assert_eq!(back[0].as_ref().unwrap(), &f);
    }

    #[test]
    fn batches_of_frames_decode_in_order(frames in prop::collection::vec(frame(), 1..6)) {
        let frames: Vec<Frame> = frames.into_iter().map(|(_, f)| f).filter(|f| match f {
            Frame::Request(q) => matches!(q.id, Id::Str(_)),
            Frame::Response(r) => !matches!(r.id, Some(Id::Num(_))),
            Frame::Notification(_) => true,
        }).collect();
        prop_assume!(!frames.is_empty());
        for g in [Generation::Current, Generation::Released] {
            let parts: Vec<String> = frames.iter().map(|f| encode_frame(g, f).unwrap()).collect();
            let batch = format!("[{}]", parts.join(","));
            let joined = parts.concat();
            for text in [batch, joined] {
                let back: Vec<Frame> = decode_message(g, &text).into_iter().map(|r| r.unwrap()).collect();
                // The released encoder drops `_tag`; compare without it there.
                let want: Vec<Frame> = frames.iter().cloned().map(|mut f| {
                    if let (Frame::Response(Response { outcome: Outcome::Error(e), .. }), Generation::Released) = (&mut f, g) {
                        e.tag = None;
                    }
                    f
                }).collect();
                prop_assert_eq!(&back, &want);
            }
        }
    }

    #[test]
    fn never_panics_on_text(s in "\\PC{0,200}", g in generation()) {
        let _ = decode_message(g, &s);
        reencodes(g, &s);
    }

    #[test]
    fn never_panics_on_bytes(b in prop::collection::vec(any::<u8>(), 0..200), g in generation()) {
        let _ = decode_bytes(g, &b);
    }

    #[test]
    fn never_panics_on_mutated_vectors(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        len in 0usize..8,
        insert in "[\\[\\]{}\",:0-9a-z\\\\ ]{0,4}",
        g in generation(),
    ) {
        let lines = vector_lines();
        let line = &lines[pick.index(lines.len())];
        let mut start = at.index(line.len() + 1);
        while !line.is_char_boundary(start) { start -= 1; }
        let mut end = (start + len).min(line.len());
        while !line.is_char_boundary(end) { end += 1; }
        let mutated = format!("{}{}{}", &line[..start], insert, &line[end..]);
        let _ = decode_message(g, &mutated);
        reencodes(g, &mutated);
        // Two of them concatenated, and in a batch.
        reencodes(g, &format!("{mutated}{line}"));
        reencodes(g, &format!("[{line},{mutated}]"));
    }
}
