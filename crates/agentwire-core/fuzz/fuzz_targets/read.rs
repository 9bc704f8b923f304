//! Fuzzes the JSON reader (`json::read`) against serde_json: it must never panic, accept exactly
//! the texts serde_json accepts (nesting within serde_json's own limit of 128), read the same
//! values from them, and give every value's raw text back as a slice that parses to the same
//! value again. The lenient parse takes everything the strict one takes (and marks nothing in
//! it), and where the strict one refuses only a lone surrogate or a huge number, the lenient one
//! reads the text and marks it. The first byte picks a depth limit, so `TooDeep` is reached too.
#![no_main]

use agentwire_core::json::fields::Object;
use agentwire_core::json::read::{parse, parse_lenient, Kind, Reason, Value};
use libfuzzer_sys::fuzz_target;
use serde_json::Value as J;

fn same(ours: Value<'_, '_>, theirs: &J) -> bool {
    match (ours.kind(), theirs) {
        (Kind::Null, J::Null) => true,
        (Kind::Bool, J::Bool(b)) => ours.as_bool() == Some(*b),
        (Kind::Number, J::Number(n)) => {
            let (x, y) = (ours.as_f64().unwrap_or(f64::NAN), n.as_f64().unwrap_or(f64::NAN));
            (n.as_u64().is_none() || ours.as_u64() == n.as_u64())
                && (n.as_i64().is_none() || ours.as_i64() == n.as_i64())
                && (x == y || (x - y).abs() <= 1e-14 * x.abs().max(y.abs()) || (x.abs() < 1e-290 && y.abs() < 1e-290))
        }
        (Kind::String, J::String(s)) => ours.as_str().as_deref() == Some(s.as_str()),
        (Kind::Array, J::Array(a)) => ours.items().count() == a.len() && ours.items().zip(a).all(|(o, t)| same(o, t)),
        // serde_json keeps the last of a repeated key, `get` the first: compare key by key with
        // the last occurrence.
        (Kind::Object, J::Object(m)) => {
            ours.members().all(|(k, _)| {
                let last = ours
                    .members()
                    .filter(|(k2, _)| k2.text() == k.text())
                    .last()
                    .map(|(_, v)| v);
                m.get(k.text().as_ref()).zip(last).is_some_and(|(t, o)| same(o, t))
            }) && m.keys().all(|k| ours.get(k).is_some())
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&depth, input)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(input) else { return };
    let depth = usize::from(depth % 130);
    let ours = parse(text, depth);
    let theirs = serde_json::from_str::<J>(text);
    let lenient = parse_lenient(text, depth);
    match (&ours, &lenient) {
        (Ok(_), Ok(l)) => assert!(!l.root().lossy(), "marked in a strict text: {text:?}"),
        (Err(e), Ok(l)) => assert!(
            matches!(e.reason, Reason::LoneSurrogate | Reason::NumberOutOfRange) && l.root().lossy(),
            "{e}: {text:?}"
        ),
        (Err(s), Err(l)) => assert!(
            matches!(s.reason, Reason::LoneSurrogate | Reason::NumberOutOfRange) || s == l,
            "{s} / {l}: {text:?}"
        ),
        (Ok(_), Err(l)) => panic!("the lenient parse refuses a strict text ({l}): {text:?}"),
    }
    match (&ours, &theirs) {
        (Ok(t), Ok(j)) => {
            assert!(same(t.root(), j), "values differ: {text:?}");
            let raw = t.root().raw();
            assert_eq!(serde_json::from_str::<J>(raw).ok().as_ref(), Some(j));
            // The field readers never panic, whatever the object holds.
            if let Ok(o) = Object::lenient(t.root()) {
                for (k, _) in t.root().members() {
                    let _ = (
                        o.string("a"),
                        o.uint::<u32>("a"),
                        o.strings("a"),
                        o.f64("a"),
                        o.bool("a"),
                    );
                    let _ = Object::strict(t.root(), &["a", "b"]).map_err(|e| e.to_string());
                    let _ = k.text();
                }
            }
        }
        (Err(e), Ok(_)) => assert_eq!(
            e.reason,
            Reason::TooDeep,
            "refused what serde_json reads: {e}: {text:?}"
        ),
        // serde_json (without float_roundtrip) overflows on some numbers of more than 19 digits
        // just below f64::MAX, which are finite and read here (read.rs's module docs).
        (Ok(_), Err(e)) => assert!(
            e.to_string().contains("recursion limit") || e.to_string().contains("number out of range"),
            "read what serde_json refuses ({e}): {text:?}"
        ),
        (Err(_), Err(_)) => {}
    }
});
