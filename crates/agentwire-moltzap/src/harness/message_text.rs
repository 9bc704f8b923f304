//! `parseMessageText`: a send read from a message's whole text.
//!
//! ```text
//! plain text                                                        multicast
//! {"gather": <question>, "deadline": <seconds>, "requestedSchema": <schema>}      gather
//! {"all_gather": <question>, "deadline": <seconds>, "requestedSchema": <schema>}  all_gather
//! {"action": "accept", "content": {...}}                            answer
//! {"action": "decline"}                                             answer
//! ```
//!
//! The text states an operation when the whole of it (JSON whitespace around it allowed) is
//! JSON text for an object with a `gather`, `all_gather` or `action` key. Anything else is a
//! multicast of the text as written: plain text, JSON that is not an object, an object without
//! those keys, JSON inside prose, and text that is not valid JSON syntax. An operation is then
//! checked as `SendInput` is, every failing field named, nothing sent:
//! - `gather` / `all_gather`: a string (the question); `deadline` a whole number of seconds
//!   from 1 to 2,592,000 (`30` and `30.0` alike); `requestedSchema` per [`RequestedSchema`];
//!   no other key.
//! - `action`: `"accept"` with `content` (an object of strings, numbers, booleans and arrays of
//!   strings, per [`AnswerContent`]), or `"decline"` without it; no other key.
//! - more than one of `gather`, `all_gather`, `action`: the first in that order states the
//!   operation and the others are unexpected.
//! - a key written twice, a number beyond `f64`, a lone surrogate escape: invalid where they
//!   occur (the text is JSON syntax, so it states the operation, but not a valid one).

use super::address::MessageAddressInput;
use super::collective::{AskOp, CollectiveResponse};
use super::errors::{FieldIssue, MessageTextError};
use super::json::{parse_lenient, JsonObject, JsonPath, JsonValue, ValueIssueKind};
use super::schema::{AnswerContent, RequestedSchema};
use super::send::{CollectiveOperation, SendInput, MAX_DEADLINE_SECS};

/// The send that `text`, written to `to`, states.
pub fn parse_message_text(to: MessageAddressInput, text: &str) -> Result<SendInput, MessageTextError> {
    let multicast = |to| SendInput::Message {
        to,
        text: text.to_owned(),
        collective: None,
    };
    let Ok((value, value_issues)) = parse_lenient(text) else {
        return Ok(multicast(to));
    };
    let Some(obj) = value.as_object() else {
        return Ok(multicast(to));
    };
    let Some(op_key) = ["gather", "all_gather", "action"]
        .into_iter()
        .find(|k| obj.contains_key(*k))
    else {
        return Ok(multicast(to));
    };
    let mut issues: Vec<FieldIssue> = value_issues
        .into_iter()
        .map(|i| {
            let expected = match i.kind {
                ValueIssueKind::DuplicateKey(_) => "a key written once",
                ValueIssueKind::NumberOutOfRange => "a finite number",
                ValueIssueKind::LoneSurrogate => "text without a lone surrogate escape",
                ValueIssueKind::TooDeep { .. } => "at most 128 levels of nesting",
            };
            FieldIssue::invalid(i.path, expected)
        })
        .collect();
    let input = if op_key == "action" {
        answer(to, obj, &mut issues)
    } else {
        ask(to, op_key, obj, &mut issues)
    };
    match input {
        Some(input) if issues.is_empty() => Ok(input),
        _ => Err(MessageTextError { issues }),
    }
}

fn only(obj: &JsonObject, keys: &[&str], issues: &mut Vec<FieldIssue>) {
    for k in obj.keys() {
        if !keys.contains(&k.as_str()) {
            issues.push(FieldIssue::unexpected(JsonPath::root(k)));
        }
    }
}

fn ask(to: MessageAddressInput, key: &str, obj: &JsonObject, issues: &mut Vec<FieldIssue>) -> Option<SendInput> {
    only(obj, &[key, "deadline", "requestedSchema"], issues);
    let question = obj.get(key).and_then(JsonValue::as_str);
    if question.is_none() {
        issues.push(FieldIssue::invalid(JsonPath::root(key), "the question (a string)"));
    }
    let deadline = match obj.get("deadline") {
        None => {
            issues.push(FieldIssue::missing(JsonPath::root("deadline")));
            None
        }
        Some(v) => {
            let d = v
                .as_number()
                .and_then(|n| n.as_safe_integer())
                .filter(|d| (1..=i64::from(MAX_DEADLINE_SECS)).contains(d));
            if d.is_none() {
                issues.push(FieldIssue::invalid(
                    JsonPath::root("deadline"),
                    "whole seconds from 1 to 2592000",
                ));
            }
            d.map(|d| d as u32)
        }
    };
    let schema = match obj.get("requestedSchema") {
        None => {
            issues.push(FieldIssue::missing(JsonPath::root("requestedSchema")));
            None
        }
        Some(v) => match RequestedSchema::parse(v, &JsonPath::root("requestedSchema")) {
            Ok(s) => Some(s),
            Err(e) => {
                issues.extend(e);
                None
            }
        },
    };
    let (question, deadline, requested_schema) = (question?, deadline?, schema?);
    Some(SendInput::Message {
        to,
        text: question.to_owned(),
        collective: Some(CollectiveOperation::Ask {
            op: if key == "gather" {
                AskOp::Gather
            } else {
                AskOp::AllGather
            },
            deadline,
            requested_schema,
        }),
    })
}

fn answer(to: MessageAddressInput, obj: &JsonObject, issues: &mut Vec<FieldIssue>) -> Option<SendInput> {
    let response = match obj.get("action").and_then(JsonValue::as_str) {
        Some("accept") => {
            only(obj, &["action", "content"], issues);
            match obj.get("content") {
                None => {
                    issues.push(FieldIssue::missing(JsonPath::root("content")));
                    None
                }
                Some(v) => match AnswerContent::parse(v, &JsonPath::root("content")) {
                    Ok(c) => Some(CollectiveResponse::Accept(c)),
                    Err(e) => {
                        issues.extend(e);
                        None
                    }
                },
            }
        }
        Some("decline") => {
            only(obj, &["action"], issues);
            Some(CollectiveResponse::Decline)
        }
        _ => {
            only(obj, &["action", "content"], issues);
            issues.push(FieldIssue::invalid(
                JsonPath::root("action"),
                "\"accept\" or \"decline\"",
            ));
            None
        }
    };
    Some(SendInput::Response {
        to,
        response: response?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::schema::AnswerValue;
    use proptest::prelude::*;

    fn to() -> MessageAddressInput {
        MessageAddressInput::parse("group:bob,carol").unwrap()
    }

    fn errors(text: &str) -> Vec<String> {
        parse_message_text(to(), text)
            .unwrap_err()
            .issues
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn is_multicast_of(text: &str) -> bool {
        parse_message_text(to(), text)
            == Ok(SendInput::Message {
                to: to(),
                text: text.to_owned(),
                collective: None,
            })
    }

    const SCHEMA: &str = r#"{"type":"object","properties":{"ok":{"type":"boolean"}}}"#;

    /// Acceptance: "`parseMessageText` reads every operation shape, sends plain text and
    /// JSON-looking prose as a multicast, and refuses a malformed operation naming its fields."
    #[test]
    fn parse_message_text_reads_every_operation_shape() {
        for (key, op) in [("gather", AskOp::Gather), ("all_gather", AskOp::AllGather)] {
            let text = format!(
                r#"  {{"{key}": "Lunch?", "deadline": 3600.0, "requestedSchema": {SCHEMA}}}
"#
            );
            let Ok(SendInput::Message {
                text: q,
                collective: Some(CollectiveOperation::Ask { op: got, deadline, .. }),
                ..
            }) = parse_message_text(to(), &text)
            else {
                panic!("{text}")
            };
            assert_eq!((q.as_str(), got, deadline), ("Lunch?", op, 3600));
        }
        let accept = parse_message_text(to(), r#"{"action":"accept","content":{"ok":true,"n":2,"s":"x"}}"#).unwrap();
        let SendInput::Response {
            response: CollectiveResponse::Accept(c),
            ..
        } = accept
        else {
            panic!("{accept:?}")
        };
        assert_eq!(c.0["ok"], AnswerValue::Bool(true));
        assert_eq!(
            parse_message_text(to(), r#"{"action":"decline"}"#).unwrap(),
            SendInput::Response {
                to: to(),
                response: CollectiveResponse::Decline
            }
        );
    }

    #[test]
    fn plain_text_and_json_looking_prose_are_multicasts() {
        for text in [
            "hello",
            "",
            "   ",
            r#"I said {"gather": "x", "deadline": 1} earlier"#,
            r#"{"gather": "x", "deadline": 1} and more"#,
            r#"{"text": "an object without an operation key"}"#,
            r#"["gather", "deadline"]"#,
            r#""gather""#,
            "42",
            r#"{"gather": "unterminated"#,
            r#"{'gather': 'single quotes'}"#,
        ] {
            assert!(is_multicast_of(text), "{text}");
        }
    }

    #[test]
    fn a_malformed_operation_is_refused_naming_its_fields() {
        assert_eq!(
            errors(r#"{"gather": "q"}"#),
            ["deadline is missing", "requestedSchema is missing"]
        );
        assert_eq!(
            errors(
                r#"{"all_gather": 5, "deadline": 0, "requestedSchema": {"type":"object","properties":{"a":{"type":"object"}}}, "to": "x"}"#
            ),
            [
                "to is unexpected",
                "all_gather: expected the question (a string)",
                "deadline: expected whole seconds from 1 to 2592000",
                "requestedSchema.properties.a.type: expected \"string\", \"number\", \"integer\", \"boolean\" or \"array\"",
            ]
        );
        for bad in ["2592001", "1.5", "-1", "\"60\"", "1e400"] {
            let e = errors(&format!(
                r#"{{"gather": "q", "deadline": {bad}, "requestedSchema": {SCHEMA}}}"#
            ));
            assert!(e.iter().any(|m| m.starts_with("deadline: expected")), "{bad}: {e:?}");
        }
        assert!(parse_message_text(
            to(),
            &format!(r#"{{"gather":"q","deadline":2592000,"requestedSchema":{SCHEMA}}}"#)
        )
        .is_ok());
        assert_eq!(errors(r#"{"action":"accept"}"#), ["content is missing"]);
        assert_eq!(
            errors(r#"{"action":"decline","content":{}}"#),
            ["content is unexpected"]
        );
        assert_eq!(
            errors(r#"{"action":"cancel"}"#),
            ["action: expected \"accept\" or \"decline\""]
        );
        assert_eq!(
            errors(r#"{"action":"accept","content":{"a":[1],"b":null}}"#),
            [
                "content.a[0]: expected a string",
                "content.b: expected a string, number, boolean or array of strings"
            ]
        );
        assert_eq!(
            errors(&format!(
                r#"{{"gather":"q","action":"decline","deadline":5,"requestedSchema":{SCHEMA}}}"#
            )),
            ["action is unexpected"]
        );
        assert_eq!(
            errors(r#"{"action":"decline","action":"accept"}"#),
            ["action: expected a key written once"]
        );
        let e = parse_message_text(to(), r#"{"gather":"q"}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "send failed: the message states an invalid operation: deadline is missing; requestedSchema is missing"
        );
    }

    proptest! {
        #[test]
        fn any_text_is_a_send_or_a_named_refusal(s in any::<String>()) {
            match parse_message_text(to(), &s) {
                Ok(_) => {}
                Err(e) => prop_assert!(!e.issues.is_empty()),
            }
        }

        #[test]
        fn text_that_is_not_a_json_object_is_a_multicast(s in "[^{]*") {
            prop_assert!(is_multicast_of(&s));
        }
    }

    #[test]
    fn an_operation_with_a_value_nested_too_deep_is_refused_naming_it() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        let text = format!(
            r#"{{"gather":"q?","deadline":60,"requestedSchema":{{"type":"object","properties":{{}}}},"x":{deep}}}"#
        );
        let to = MessageAddressInput::parse("agent:bob").unwrap();
        let err = parse_message_text(to, &text).unwrap_err().to_string();
        assert!(err.contains("x is unexpected") && err.contains("nesting"), "{err}");
    }
}
