use super::{parse, Kind, Reason, Value};
use proptest::prelude::*;
use serde_json::Value as J;

/// The tape's value as serde_json's (numbers compared through `to_f64` by `same`).
fn to_serde(v: Value<'_, '_>) -> J {
    match v.kind() {
        Kind::Null => J::Null,
        Kind::Bool => J::Bool(v.as_bool().unwrap()),
        Kind::Number => match (v.as_u64(), v.as_i64()) {
            (Some(u), _) => J::from(u),
            (None, Some(i)) => J::from(i),
            _ => J::from(v.as_f64().unwrap()),
        },
        Kind::String => J::String(v.as_str().unwrap().into_owned()),
        Kind::Array => J::Array(v.items().map(to_serde).collect()),
        Kind::Object => J::Object(v.members().map(|(k, v)| (k.text().into_owned(), to_serde(v))).collect()),
    }
}

fn same(a: &J, b: &J) -> bool {
    match (a, b) {
        // Neither parser rounds exactly (serde_json without `float_roundtrip`, ours by design).
        (J::Number(x), J::Number(y)) => close(x.as_f64().unwrap(), y.as_f64().unwrap()),
        (J::Array(x), J::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn close(x: f64, y: f64) -> bool {
    x == y || (x - y).abs() <= 1e-14 * x.abs().max(y.abs()) || (x.abs() < 1e-290 && y.abs() < 1e-290)
}

fn reason(text: &str) -> Reason {
    parse(text, 64).unwrap_err().reason
}

#[test]
fn reads_every_kind_of_value() {
    let t = parse(
        r#" {"a": [1, -2, 3.5e1, true, false, null], "b\u0041": "x\ny\ud83d\ude00", "c": {}} "#,
        8,
    )
    .unwrap();
    let r = t.root();
    assert_eq!(r.kind(), Kind::Object);
    let a: Vec<_> = r.get("a").unwrap().items().collect();
    assert_eq!(a.len(), 6);
    assert_eq!(a[0].as_u64(), Some(1));
    assert_eq!(a[1].as_i64(), Some(-2));
    assert_eq!(a[1].as_u64(), None);
    assert_eq!(a[2].as_f64(), Some(35.0));
    assert_eq!(a[2].as_i64(), None, "35.0 is written as a float");
    assert_eq!(
        (a[3].as_bool(), a[4].as_bool(), a[5].is_null()),
        (Some(true), Some(false), true)
    );
    assert_eq!(
        r.get("bA").unwrap().as_str().unwrap(),
        "x\ny\u{1f600}",
        "an escaped key matches its text"
    );
    assert_eq!(r.get("c").unwrap().members().count(), 0);
    assert_eq!(r.get("c").unwrap().raw(), "{}");
    assert!(r.get("zz").is_none());
    assert_eq!(r.get("a").unwrap().raw(), "[1, -2, 3.5e1, true, false, null]");
    assert_eq!(
        r.members().map(|(k, _)| k.text().into_owned()).collect::<Vec<_>>(),
        ["a", "bA", "c"]
    );
}

#[test]
fn integers_at_the_edges() {
    let n = |t: &str| parse(t, 1).unwrap().root().as_u64();
    let i = |t: &str| parse(t, 1).unwrap().root().as_i64();
    assert_eq!(n("18446744073709551615"), Some(u64::MAX));
    assert_eq!(n("18446744073709551616"), None);
    assert_eq!(i("-9223372036854775808"), Some(i64::MIN));
    assert_eq!(i("9223372036854775807"), Some(i64::MAX));
    assert_eq!(i("9223372036854775808"), None);
    assert_eq!(i("-0"), None, "serde_json reads -0 as a float");
    assert_eq!(n("-0"), None);
    assert_eq!(n("1e2"), None);
    assert_eq!(
        parse("123456789012345678901234567890", 1).unwrap().root().as_f64(),
        Some(1.2345678901234568e29)
    );
}

#[test]
fn floats_are_read_within_a_few_ulps() {
    for text in [
        "0",
        "-0.0",
        "1.5",
        "0.1",
        "3.14159e-5",
        "1e22",
        "1e23",
        "-2.5E+300",
        "1.7976931348623157e308",
        "4.9e-324",
        "2.2250738585072014e-308",
        "123.456e-7",
        "0.000000000000000000000000001234",
    ] {
        let ours = parse(text, 1).unwrap().root().as_f64().unwrap();
        let exact: f64 = text.parse().unwrap();
        assert!(close(ours, exact), "{text}: {ours} / {exact}");
    }
    assert_eq!(reason("1.8e308"), Reason::NumberOutOfRange);
    assert_eq!(reason("-1e309"), Reason::NumberOutOfRange);
    assert!(parse("1e-400", 1).is_ok(), "underflow is zero, as in serde_json");
}

#[test]
fn refusals_name_what_and_where() {
    assert_eq!(reason(""), Reason::Eof);
    assert_eq!(reason("[1,"), Reason::Eof);
    assert_eq!(reason("[1,]"), Reason::Unexpected);
    assert_eq!(reason("{\"a\" 1}"), Reason::Unexpected);
    assert_eq!(reason("{1:2}"), Reason::Unexpected);
    assert_eq!(reason("\"a\u{1}\""), Reason::Control);
    assert_eq!(reason(r#""\x""#), Reason::BadEscape);
    let e = parse(r#""ab\x""#, 1).unwrap_err();
    assert_eq!((e.reason, e.at), (Reason::BadEscape, 4), "the byte after the backslash");
    let e = parse(r#""ab\"#, 1).unwrap_err();
    assert_eq!((e.reason, e.at), (Reason::Eof, 4), "the end right after a backslash");
    assert_eq!(reason(r#""\u12g4""#), Reason::BadEscape);
    assert_eq!(reason(r#""\ud800""#), Reason::LoneSurrogate);
    assert_eq!(reason(r#""\udc00\ud800""#), Reason::LoneSurrogate);
    assert_eq!(reason(r#""\ud800\u0041""#), Reason::LoneSurrogate);
    // A high half pairs only with a `\u` escape right after it, and the first lone one is named.
    assert_eq!(reason(r#""\ud800\ndc00""#), Reason::LoneSurrogate);
    assert_eq!(reason(r#""\ud800xudc00""#), Reason::LoneSurrogate);
    let e = parse(r#""\udc00\ud800""#, 1).unwrap_err();
    assert_eq!((e.reason, e.at), (Reason::LoneSurrogate, 1));
    assert_eq!(reason("01"), Reason::Trailing);
    assert_eq!(reason("-"), Reason::Eof);
    assert_eq!(reason("-a"), Reason::BadNumber);
    assert_eq!(reason("1."), Reason::Eof);
    assert_eq!(reason("1.e5"), Reason::BadNumber);
    assert_eq!(reason("1e400"), Reason::NumberOutOfRange);
    assert_eq!(
        reason(&format!("1{}", "0".repeat(309))),
        Reason::NumberOutOfRange,
        "310 digits, no exponent"
    );
    for (text, why) in [
        ("1e", Reason::Eof),
        ("1E+", Reason::Eof),
        ("1ex", Reason::BadNumber),
        ("[1e-]", Reason::BadNumber),
    ] {
        assert_eq!(reason(text), why, "{text}");
    }
    assert_eq!(reason("tru"), Reason::Eof);
    assert_eq!(reason("trux"), Reason::Unexpected);
    assert_eq!(reason("tx"), Reason::Unexpected, "not a prefix of `true`, though short");
    assert_eq!(reason("{} {}"), Reason::Trailing);
    // A bracket closes only its own kind of container.
    for (text, at) in [("[1}", 2), (r#"{"a":1]"#, 6), (r#"[{"a":1]]"#, 7), ("[[1]}", 4)] {
        let e = parse(text, 64).unwrap_err();
        assert_eq!((e.reason, e.at), (Reason::Unexpected, at), "{text}");
    }
    let e = parse("[[[1]]]", 2).unwrap_err();
    assert_eq!((e.reason, e.at), (Reason::TooDeep, 2));
    assert!(parse("[[[1]]]", 3).is_ok());
    // Depth is nesting: containers side by side do not add up.
    assert!(parse(r#"[[1],[2],{"a":{}},[]]"#, 3).is_ok() && parse(r#"[[1],[2],{"a":1},[]]"#, 2).is_ok());
    assert_eq!(e.to_string(), "nested too deep at byte 2");
}

#[test]
fn lenient_texts_take_lone_surrogates_and_huge_numbers_and_mark_them() {
    use super::parse_lenient;
    let t = parse_lenient(
        r#"{"a":["\ud800x", 1e400, -1e999], "b":"\ud83d\ude00", "\udc00":"\ud800\u0041"}"#,
        4,
    )
    .unwrap();
    let r = t.root();
    let a: Vec<_> = r.get("a").unwrap().items().collect();
    assert_eq!(a[0].as_str().unwrap(), "\u{fffd}x");
    assert_eq!(
        (a[1].as_f64(), a[2].as_f64()),
        (Some(f64::INFINITY), Some(f64::NEG_INFINITY))
    );
    assert_eq!((a[1].kind(), a[1].as_u64()), (Kind::Number, None));
    assert!(a.iter().all(|v| v.lossy()) && r.get("a").unwrap().lossy() && r.lossy());
    assert!(!r.get("b").unwrap().lossy(), "a pair is whole");
    assert_eq!(
        r.get("\u{fffd}").unwrap().as_str().unwrap(),
        "\u{fffd}A",
        "a lone high half before another escape"
    );
    assert!(r.members().any(|(k, _)| k.lossy()));
    // The same texts, strictly: refused where they show.
    assert_eq!(reason(r#"["\ud800x"]"#), Reason::LoneSurrogate);
    assert_eq!(reason("[1e400]"), Reason::NumberOutOfRange);
    assert!(parse_lenient("[1e400", 4).is_err(), "syntax errors stay errors");
    assert!(!parse_lenient(r#"{"a":[1,"x"]}"#, 4).unwrap().root().lossy());
}

#[test]
fn deep_nesting_is_refused_without_recursion() {
    let deep = "[".repeat(1_000_000);
    assert_eq!(parse(&deep, usize::MAX).unwrap_err().reason, Reason::Eof);
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let t = parse(&deep, usize::MAX).unwrap();
    assert_eq!(t.root().items().count(), 1);
}

#[test]
fn odd_keys_are_unknown_or_repeated() {
    let t = parse(r#"{"a":1,"b":2}"#, 2).unwrap();
    assert!(t.root().odd_key(&["a", "b"]).is_none());
    assert_eq!(
        t.root().odd_key(&["a"]).map(|k| k.text().into_owned()).as_deref(),
        Some("b")
    );
    let t = parse(r#"{"a":1,"\u0061":2}"#, 2).unwrap();
    assert_eq!(
        t.root().odd_key(&["a", "b"]).map(|k| k.text().into_owned()).as_deref(),
        Some("a")
    );
    assert_eq!(t.root().get("a").unwrap().as_u64(), Some(1), "the first of two keys");
}

fn json_value() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<u64>().prop_map(J::from),
        any::<i64>().prop_map(J::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(J::from),
        any::<String>().prop_map(J::String),
        "[\"\\\\/\u{0}-\u{1f}\u{7f}\u{fffd}\u{10000}a]{0,12}".prop_map(J::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6).prop_map(|m| J::Object(m.into_iter().collect())),
        ]
    })
}

/// Text near JSON: fragments that break, escape and number in every way.
fn near_json() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("\"".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\\".to_string()),
        Just("\\u".to_string()),
        Just("d800".to_string()),
        Just("dc00".to_string()),
        Just("00e9".to_string()),
        Just("-".to_string()),
        Just("0".to_string()),
        Just("12".to_string()),
        Just(".".to_string()),
        Just("e".to_string()),
        Just("E+".to_string()),
        Just("400".to_string()),
        Just("true".to_string()),
        Just("nul".to_string()),
        Just("l".to_string()),
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\u{1}".to_string()),
        Just("é".to_string()),
        Just("n".to_string()),
        Just("/".to_string()),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn floats_near_the_exact_value(m in any::<u64>(), e in -320i32..300, frac in 0usize..20) {
        let digits = m.to_string();
        let cut = frac.min(digits.len());
        let (int, fraction) = digits.split_at(digits.len() - cut);
        let int = if int.is_empty() { "0" } else { int };
        let text = format!("{int}.{fraction}e{e}").replace(".e", "e");
        let exact: f64 = text.parse().unwrap();
        match parse(&text, 1) {
            Ok(t) => prop_assert!(close(t.root().as_f64().unwrap(), exact), "{}", text),
            Err(_) => prop_assert!(exact.abs() > 1.79e308, "{}", text),
        }
    }

    #[test]
    fn reads_what_serde_json_writes(v in json_value(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&v).unwrap() } else { serde_json::to_string(&v).unwrap() };
        let tape = parse(&text, 64).unwrap();
        prop_assert!(same(&to_serde(tape.root()), &v), "{text}");
        prop_assert_eq!(tape.root().raw(), text.trim());
    }

    #[test]
    fn accepts_exactly_what_serde_json_accepts(text in near_json()) {
        let ours = parse(&text, 100);
        let theirs = serde_json::from_str::<J>(&text);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}: {:?} / {:?}", text, ours.as_ref().err(), theirs.as_ref().err());
        if let (Ok(t), Ok(j)) = (ours, theirs) {
            prop_assert!(same(&to_serde(t.root()), &j));
        }
    }

    #[test]
    fn one_edit_away_from_json_is_judged_as_serde_json_judges(v in json_value(), at in any::<prop::sample::Index>(), b in any::<u8>(), cut in any::<bool>()) {
        let mut bytes = serde_json::to_vec(&v).unwrap();
        let i = at.index(bytes.len());
        if cut { bytes.truncate(i) } else if b.is_ascii() { bytes[i] = b } else { bytes.remove(i); }
        let Ok(text) = String::from_utf8(bytes) else { return Ok(()) };
        let ours = parse(&text, 100);
        let theirs = serde_json::from_str::<J>(&text);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}: {:?} / {:?}", text, ours.as_ref().err(), theirs.as_ref().err());
        if let (Ok(t), Ok(j)) = (ours, theirs) {
            prop_assert!(same(&to_serde(t.root()), &j), "{:?}: {:?} / {:?}", text, to_serde(t.root()), j);
        }
    }
}

#[test]
fn long_mantissas_shift_the_exponent_in_full() {
    // The value 1, written with two million zeros and an exponent taking them back.
    let one = format!("1{}e-2000000", "0".repeat(2_000_000));
    assert_eq!(parse(&one, 1).unwrap().root().as_f64(), Some(1.0));
    // 1e99999, written as a tiny fraction with a huge exponent: beyond f64.
    let huge = format!("0.{}1e1600000", "0".repeat(1_500_000));
    assert_eq!(reason(&huge), Reason::NumberOutOfRange);
}

#[test]
fn repeated_keys_past_the_sixty_fourth_allowed_one_are_found() {
    let names: Vec<String> = (0..70).map(|i| format!("k{i}")).collect();
    let allowed: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = parse(r#"{"k66":1,"k2":2}"#, 2).unwrap();
    assert!(
        t.root().odd_key(&allowed).is_none(),
        "k66 and k2 share a bit, not a name"
    );
    let t = parse(r#"{"k66":1,"k66":2}"#, 2).unwrap();
    assert_eq!(
        t.root().odd_key(&allowed).map(|k| k.text().into_owned()).as_deref(),
        Some("k66")
    );
}

#[test]
fn a_long_number_just_below_f64_max_is_read() {
    // The one known difference from serde_json without float_roundtrip (the module docs): it
    // overflows on these and refuses them; they are finite, and read here.
    for t in ["1.7976931348623156355e308", "17976931348623156385e289"] {
        let v = parse(t, 1).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(v.root().as_f64().map(f64::is_finite), Some(true), "{t}");
    }
    assert!(parse("1.8e308", 1).is_err());
}

#[test]
fn a_tape_and_its_values_show_their_text() {
    let text = r#" {"a": [1, null], "\u0062": "x"} "#;
    let t = parse(text, 4).unwrap();
    assert_eq!(t.text(), text);
    let r = t.root();
    assert_eq!(format!("{r:?}"), text.trim());
    let keys: Vec<String> = r.members().map(|(k, _)| format!("{k:?}")).collect();
    assert_eq!(keys, [r#""a""#, r#""\u0062""#], "keys as received");
    let a: Vec<_> = r.get("a").unwrap().items().collect();
    assert_eq!(format!("{:?}", a[1]), "null");
}

#[test]
fn a_key_repeated_at_any_position_of_the_allowed_ones_is_found() {
    let odd = |text: &str, allowed: &[&str]| {
        let t = parse(text, 2).unwrap();
        let k = t.root().odd_key(allowed).map(|k| k.text().into_owned());
        k
    };
    assert_eq!(odd(r#"{"b":1,"a":2,"b":3}"#, &["a", "b"]).as_deref(), Some("b"));
    // Position 64, the first past the bit set.
    let names: Vec<String> = (0..70).map(|i| format!("k{i}")).collect();
    let allowed: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(odd(r#"{"k64":1,"k0":2}"#, &allowed), None);
    assert_eq!(odd(r#"{"k64":1,"k64":2}"#, &allowed).as_deref(), Some("k64"));
}

#[test]
fn a_malformed_escape_becomes_u_fffd_not_a_panic() {
    // `unescape` reads only strings the parser checked; its documented fallback for any other
    // text, which no parsed text reaches.
    use super::unescape;
    assert_eq!(
        unescape("a\\é b"),
        "a\u{fffd}é b",
        "a backslash before a non-ASCII char"
    );
    assert_eq!(unescape("a\\"), "a\u{fffd}", "a backslash at the end");
    assert_eq!(unescape("a\\u12"), "a\u{fffd}", "a \\u escape cut short");
}
