//! [`Content`]: a non-empty sequence of `{"type":"text","text"}` and `{"type":"data","value"}`
//! parts, whose canonical encoding fits [`MAX_CONTENT_BYTES`].
//!
//! What the limit measures: the byte length of the RFC 8785 encoding ([`super::canonical`]) of
//! the **whole content as certified**, the JSON array of its part objects, e.g.
//! `[{"text":"hi","type":"text"},{"type":"data","value":{"org.social-harness/collective":{…}}}]`.
//! So a send's text and its operation part count together, with JSON's quoting and escaping
//! (a newline in the text costs 2 bytes, a control character 6).

use super::canonical::write_canonical;
use super::errors::{FieldIssue, SendError};
use super::json::{JsonPath, JsonValue};

/// The most bytes a content's canonical encoding may take.
pub const MAX_CONTENT_BYTES: usize = 32_768;

/// One part of a [`Content`].
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Data(JsonValue),
}

impl Part {
    /// `{"type":"text","text"}` or `{"type":"data","value"}`.
    pub fn to_json(&self) -> JsonValue {
        match self {
            Part::Text(t) => JsonValue::object([("type", "text".into()), ("text", t.clone().into())]),
            Part::Data(v) => JsonValue::object([("type", "data".into()), ("value", v.clone())]),
        }
    }

    /// Exactly one of the two shapes (no other key); paths start at `path`.
    pub fn from_json(value: &JsonValue, path: &JsonPath) -> Result<Part, Vec<FieldIssue>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![FieldIssue::invalid(path.clone(), "a text or data part object")]);
        };
        let (payload, part): (&str, fn(&JsonValue) -> Option<Part>) = match obj.get("type").and_then(JsonValue::as_str)
        {
            Some("text") => ("text", |v| v.as_str().map(|s| Part::Text(s.to_owned()))),
            Some("data") => ("data", |v| Some(Part::Data(v.clone()))),
            Some(_) => return Err(vec![FieldIssue::invalid(path.key("type"), "\"text\" or \"data\"")]),
            None if obj.contains_key("type") => {
                return Err(vec![FieldIssue::invalid(path.key("type"), "\"text\" or \"data\"")])
            }
            None => return Err(vec![FieldIssue::missing(path.key("type"))]),
        };
        let key = if payload == "text" { "text" } else { "value" };
        let mut issues: Vec<FieldIssue> = obj
            .keys()
            .filter(|k| *k != "type" && *k != key)
            .map(|k| FieldIssue::unexpected(path.key(k)))
            .collect();
        match obj.get(key).map(part) {
            None => issues.push(FieldIssue::missing(path.key(key))),
            Some(None) => issues.push(FieldIssue::invalid(path.key(key), "a string")),
            Some(Some(p)) if issues.is_empty() => return Ok(p),
            Some(Some(_)) => {}
        }
        Err(issues)
    }
}

/// A non-empty sequence of parts within [`MAX_CONTENT_BYTES`].
#[derive(Debug, Clone, PartialEq)]
pub struct Content(Vec<Part>);

impl Content {
    /// `content-invalid` when `parts` is empty or its encoding is over the limit.
    pub fn new(parts: Vec<Part>) -> Result<Content, SendError> {
        if parts.is_empty() {
            return Err(SendError::content_invalid("the content has no part"));
        }
        let content = Content(parts);
        let len = content.canonical_len();
        if len > MAX_CONTENT_BYTES {
            return Err(SendError::content_invalid(format!(
                "the content takes {len} bytes, over the {MAX_CONTENT_BYTES}-byte limit"
            )));
        }
        Ok(content)
    }

    /// One text part.
    pub fn text(text: impl Into<String>) -> Result<Content, SendError> {
        Content::new(vec![Part::Text(text.into())])
    }

    pub fn parts(&self) -> &[Part] {
        &self.0
    }

    pub fn into_parts(self) -> Vec<Part> {
        self.0
    }

    /// The array of part objects.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::Array(self.0.iter().map(Part::to_json).collect())
    }

    /// The canonical (RFC 8785) text: what is certified and what the limit measures.
    pub fn to_canonical(&self) -> String {
        let mut out = String::new();
        write_canonical(&mut out, &self.to_json());
        out
    }

    /// The byte length of [`Content::to_canonical`].
    pub fn canonical_len(&self) -> usize {
        self.to_canonical().len()
    }

    /// A content as a record carries it: a non-empty array of parts, within the limit.
    pub fn from_json(value: &JsonValue) -> Result<Content, Vec<FieldIssue>> {
        let root = JsonPath::root("content");
        let Some(items) = value.as_array() else {
            return Err(vec![FieldIssue::invalid(root, "an array of parts")]);
        };
        let mut parts = Vec::new();
        let mut issues = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match Part::from_json(item, &root.index(i)) {
                Ok(p) => parts.push(p),
                Err(e) => issues.extend(e),
            }
        }
        if !issues.is_empty() {
            return Err(issues);
        }
        Content::new(parts).map_err(|e| vec![FieldIssue::invalid(root, e.cause)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_limit_measures_the_canonical_array() {
        // `[{"text":"…","type":"text"}]` is 27 bytes around the text.
        let frame = r#"[{"text":"","type":"text"}]"#.len();
        assert_eq!(frame, 27);
        let fits = "a".repeat(MAX_CONTENT_BYTES - frame);
        assert_eq!(Content::text(fits.clone()).unwrap().canonical_len(), MAX_CONTENT_BYTES);
        let over = Content::text(fits + "a").unwrap_err();
        assert_eq!(
            over.to_string(),
            "send failed: the content takes 32769 bytes, over the 32768-byte limit"
        );
        // Escapes count as written: a newline is two bytes.
        let newlines = "\n".repeat((MAX_CONTENT_BYTES - frame) / 2 + 1);
        assert!(Content::text(newlines).is_err());
        assert_eq!(
            Content::new(vec![]).unwrap_err().to_string(),
            "send failed: the content has no part"
        );
    }

    #[test]
    fn parts_are_closed() {
        let ok = JsonValue::parse(r#"[{"type":"text","text":"hi"},{"type":"data","value":{"a":[1]}}]"#).unwrap();
        let c = Content::from_json(&ok).unwrap();
        assert_eq!(c.to_json(), ok);
        assert_eq!(
            c.to_canonical(),
            r#"[{"text":"hi","type":"text"},{"type":"data","value":{"a":[1]}}]"#
        );
        let bad =
            JsonValue::parse(r#"[{"type":"text","text":1,"x":0},{"type":"image"},{"text":"a"},{"type":"data"},7,{"type":5},{"type":"text","text":"ok","y":0}]"#)
                .unwrap();
        let issues: Vec<String> = Content::from_json(&bad)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            issues,
            [
                "content[0].x is unexpected",
                "content[0].text: expected a string",
                "content[1].type: expected \"text\" or \"data\"",
                "content[2].type is missing",
                "content[3].value is missing",
                "content[4]: expected a text or data part object",
                // A type that is not a string is named as such, not as missing; a part whose
                // payload is good is still refused for a key it has beside it.
                "content[5].type: expected \"text\" or \"data\"",
                "content[6].y is unexpected",
            ]
        );
        assert!(Content::from_json(&JsonValue::Array(vec![])).is_err());
    }

    proptest! {
        #[test]
        fn from_json_takes_any_value(v in crate::harness::canonical::tests::arb_json()) {
            if let Ok(c) = Content::from_json(&v) {
                prop_assert_eq!(Content::from_json(&c.to_json()).unwrap(), c);
            }
        }
    }
}
