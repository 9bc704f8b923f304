//! `parse` against the `serde_json::from_str::<Value>` it stands for, in a build without
//! serde_json's `raw_value` (these tests have it on: the raw-value token is read through a
//! stand-in key of the same length, so errors point at the same columns).

use super::{parse, RAW_VALUE_TOKEN as TOKEN};
use proptest::prelude::*;
use serde_json::Value;

const STAND_IN: &str = "$serde_json::private::RawValuX";

/// The old serde path: a `Value` parse, the token read as a key.
fn serde_path(text: &str) -> Result<Value, serde_json::Error> {
    fn back(v: Value) -> Value {
        match v {
            Value::Array(items) => Value::Array(items.into_iter().map(back).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, v)| (if k == STAND_IN { TOKEN.to_owned() } else { k }, back(v)))
                    .collect(),
            ),
            Value::String(s) => Value::String(s.replace(STAND_IN, TOKEN)),
            v => v,
        }
    }
    assert!(!text.contains(STAND_IN));
    serde_json::from_str::<Value>(&text.replace(TOKEN, STAND_IN)).map(back)
}

/// Both read `text` alike: the same value (`-0.0` told from `0.0` by its text), or the same
/// error, word for word.
fn agree(text: &str) {
    match (parse(text), serde_path(text)) {
        (Ok(ours), Ok(theirs)) => {
            assert_eq!(ours, theirs, "{text}");
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
        (Err(ours), Err(theirs)) => {
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
            assert_eq!(ours.classify(), theirs.classify(), "{text}");
        }
        (ours, theirs) => panic!("{text}: {ours:?} but serde_json {theirs:?}"),
    }
}

#[test]
fn the_raw_value_token_is_a_key() {
    let text = format!(r#"{{"{TOKEN}":"[1]","a":2}}"#);
    assert_eq!(parse(&text).unwrap(), serde_json::json!({TOKEN: "[1]", "a": 2}));
    // A build with `raw_value` (these tests) reads it as the value of its string's text, and
    // refuses a second member.
    let alone = format!(r#"{{"{TOKEN}":"[1]"}}"#);
    assert_eq!(parse(&alone).unwrap(), serde_json::json!({TOKEN: "[1]"}));
    assert_eq!(serde_json::from_str::<Value>(&alone).unwrap(), serde_json::json!([1]));
    assert!(serde_json::from_str::<Value>(&text).is_err());
    let escaped = r#"{"$serde_json::private::RawValue":1}"#;
    assert_eq!(parse(escaped).unwrap(), serde_json::json!({TOKEN: 1}));
}

#[test]
fn a_text_is_read_as_a_value_parse_reads_it() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep_objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    let mut texts: Vec<String> = [
        "null",
        " null ",
        "1",
        "-1",
        "-0",
        "0.0",
        "-0.0",
        "1.5e3",
        "1E-3",
        "1e308",
        "1e309",
        "-1e999",
        "1e-999",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "0.1000000000000000055511151231257827",
        "1.7976931348623157e308",
        "2.2250738585072011e-308",
        "\"x\"",
        "\"\\ud800\"",
        "\"\\ud83d\\ude00\"",
        "\"\\udc00\\ud800\"",
        "\"a\\u0000b\\n\\\"\\\\\\/\"",
        "[1,\"\\ud800\"]",
        "{\"\\ud800\":1}",
        "{\"a\":1,\"\\ud800\":2}",
        "{\"a\":1,\"a\":2}",
        "{\"b\":1,\"a\":2}",
        "{}",
        "[]",
        "[null]",
        "{\"a\":null}",
        "true",
        "false",
        "[1e999]",
        "{\"a\":[1,{\"b\":2e5}]}",
        "",
        " ",
        "x",
        "[1,]",
        "{\"a\":1,}",
        "{1:1}",
        "{\"a\" 1}",
        "nul",
        "tru",
        "1 2",
        "01",
        "1.",
        "-",
        "\"\u{1}\"",
        "\"abc",
        "[1\n,\n2",
        "\"\\u0000\"",
        "\"\\x\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in [126, 127, 128, 129, 200] {
        texts.push(deep(n));
        texts.push(deep_objects(n));
    }
    // serde_json's raw-value token as a key: a key like any other.
    for value in [
        r#""null""#,
        r#""[1]""#,
        r#""1e999""#,
        r#""\"\\ud800\"""#,
        r#""x""#,
        r#""{\"a\":null}""#,
        r#"" null ""#,
        r#""""#,
        r#""\ud800""#,
        "1",
        "-1",
        "1.5",
        "1e3",
        "-0",
        "1e999",
        "true",
        "false",
        "null",
        "nul",
        "[]",
        "[1",
        "{}",
        "x",
        "",
    ] {
        texts.push(format!(r#"{{"{TOKEN}":{value}}}"#));
        texts.push(format!(r#"{{"{TOKEN}":{value},"b":1}}"#));
        texts.push(format!(r#"{{"{TOKEN}":{value}"#));
        texts.push(format!(r#"{{"a":1,"{TOKEN}":{value}}}"#));
        texts.push(format!(r#"[{{"{TOKEN}":{value}}}]"#));
        texts.push(format!("[\n{{\"{TOKEN}\" : {value} }} ]"));
    }
    texts.push(format!(r#"{{"{TOKEN}":"{{\"{TOKEN}\":\"null\"}}"}}"#));
    texts.push(format!(r#"{{"{TOKEN}":{{"{TOKEN}":1}}}}"#));
    for text in &texts {
        agree(text);
    }
}

fn piece() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\n",
        "\"a\"",
        "\"b\"",
        "\"\\ud800\"",
        "\"\\ud83d\\ude00\"",
        "\"\\n\"",
        "1",
        "-7",
        "1e999",
        "-0",
        "1.5",
        "2.5e-3",
        "18446744073709551616",
        "null",
        "true",
        "nul",
        "x",
        "\"null\"",
        "\"[1]\"",
        "\"{\\\"a\\\":1}\"",
        "\"$serde_json::private::RawValue\"",
    ])
    .prop_map(String::from)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_text_is_read_as_a_value_parse_reads_it(pieces in prop::collection::vec(piece(), 1..14)) {
        agree(&pieces.concat());
    }

    #[test]
    fn objects_are_read_as_a_value_parse_reads_them(members in prop::collection::vec((piece(), piece()), 0..5)) {
        let body: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        agree(&format!("{{{}}}", body.join(",")));
        agree(&format!("[{}]", body.join(",")));
    }

    #[test]
    fn numbers_are_read_as_a_value_parse_reads_them(
        int in "-?(0|[1-9][0-9]{0,25})",
        frac in "(\\.[0-9]{1,25})?",
        exp in "([eE][+-]?[0-9]{1,3})?",
    ) {
        let n = format!("{int}{frac}{exp}");
        agree(&n);
        agree(&format!(r#"{{"{TOKEN}":{n}}}"#));
        agree(&format!(r#"{{"{TOKEN}":"{n}"}}"#));
    }

    #[test]
    fn strings_are_read_as_a_value_parse_reads_them(s in "\\PC{0,8}", raw in "[a-z\\\\\"u0-9dD]{0,10}") {
        agree(&serde_json::to_string(&s).unwrap());
        agree(&format!("\"{raw}\""));
        agree(&format!("{{\"{raw}\":1}}"));
    }
}
