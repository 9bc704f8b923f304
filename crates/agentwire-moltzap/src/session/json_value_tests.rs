//! `value_is_null` against the `serde_json::Value` parse it stands for.

use super::value_is_null;
use proptest::prelude::*;
use serde_json::Value;

/// Both read `text` alike: `null`, another value, or refused.
fn agree(text: &str) {
    let ours = value_is_null(text).ok();
    let theirs = serde_json::from_str::<Value>(text).ok().map(|v| v.is_null());
    assert_eq!(ours, theirs, "{text}");
}

const TOKEN: &str = "$serde_json::private::RawValue";

#[test]
fn a_text_is_refused_or_taken_as_a_value_parse_does() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep_objects = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    let mut texts: Vec<String> = [
        "null",
        " null ",
        "1",
        "-0",
        "1.5e3",
        "1e308",
        "1e309",
        "-1e999",
        "1e-999",
        "18446744073709551616",
        "\"x\"",
        "\"\\ud800\"",
        "\"\\ud83d\\ude00\"",
        "\"\\udc00\\ud800\"",
        "[1,\"\\ud800\"]",
        "{\"\\ud800\":1}",
        "{\"a\":1,\"\\ud800\":2}",
        "{\"a\":1,\"a\":2}",
        "{}",
        "[]",
        "[null]",
        "{\"a\":null}",
        "true",
        "[1e999]",
        "{\"a\":[1,{\"b\":2e5}]}",
        "",
        "x",
        "[1,]",
        "nul",
        "1 2",
        "\"\\u0000\"",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in [126, 127, 128, 129, 200] {
        texts.push(deep(n));
        texts.push(deep_objects(n));
    }
    // serde_json's raw-value token as a map's first key: its string is read as JSON text.
    for value in [
        r#""null""#,
        r#""[1]""#,
        r#""1e999""#,
        r#""\"\\ud800\"""#,
        r#""x""#,
        "1",
        "null",
        "[]",
        "{}",
        r#""{\"a\":null}""#,
        r#"" null ""#,
        r#""""#,
    ] {
        texts.push(format!(r#"{{"{TOKEN}":{value}}}"#));
        texts.push(format!(r#"{{"{TOKEN}":{value},"b":1}}"#));
        texts.push(format!(r#"{{"a":1,"{TOKEN}":{value}}}"#));
        texts.push(format!(r#"[{{"{TOKEN}":{value}}}]"#));
    }
    let nested = format!(r#"{{"{TOKEN}":"{{\"{TOKEN}\":\"null\"}}"}}"#);
    texts.push(nested.clone());
    texts.push(format!(r#"{{"{}":"null"}}"#, TOKEN.replace('$', "\\u0024")));
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
        "\"a\"",
        "\"\\ud800\"",
        "\"\\ud83d\\ude00\"",
        "1",
        "1e999",
        "-0",
        "1.5",
        "null",
        "true",
        "\"null\"",
        "\"[1]\"",
        "\"$serde_json::private::RawValue\"",
    ])
    .prop_map(String::from)
}

proptest! {
    #[test]
    fn any_text_is_refused_or_taken_as_a_value_parse_does(pieces in prop::collection::vec(piece(), 1..12)) {
        agree(&pieces.concat());
    }

    #[test]
    fn objects_are_refused_or_taken_as_a_value_parse_does(members in prop::collection::vec((piece(), piece()), 0..5)) {
        let body: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        agree(&format!("{{{}}}", body.join(",")));
        agree(&format!("[{}]", body.join(",")));
    }
}
