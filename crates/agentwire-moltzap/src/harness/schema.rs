//! [`RequestedSchema`]: the MCP elicitation form-mode grammar a gather's question is answered
//! in, and [`AnswerContent`] validation against it.
//!
//! The grammar is MCP 2025-06-18's `ElicitRequest.requestedSchema`, closed (a key not listed is
//! refused, so a schema means the same to every endpoint):
//!
//! ```text
//! schema    = { "$schema"?: string, "type": "object",
//!               "properties": { <name>: primitive, … },     (may be empty)
//!               "required"?: [ <name>, … ] }                (distinct names of properties)
//! primitive = { "type": "string", "title"?: string, "description"?: string,
//!               "minLength"?: n, "maxLength"?: n,           (whole numbers 0..=2^53-1, min ≤ max)
//!               "format"?: "email" | "uri" | "date" | "date-time" }
//!           | { "type": "string", "title"?, "description"?,
//!               "enum": [ string, … ],                      (non-empty, distinct)
//!               "enumNames"?: [ string, … ] }               (as many as enum)
//!           | { "type": "number" | "integer", "title"?, "description"?,
//!               "minimum"?: number, "maximum"?: number }    (minimum ≤ maximum)
//!           | { "type": "boolean", "title"?, "description"?, "default"?: boolean }
//! ```
//!
//! No nesting: a property is one of the primitives. Every failing path is reported with the
//! shape it expects (`properties.age.minimum: expected a number`).
//!
//! An answer ([`AnswerContent`]) is an object of strings, numbers and booleans. Against a schema:
//! each `required` name absent is *missing*, each name not in `properties` is *unexpected*, and
//! each value of the wrong type or outside its bounds is *invalid*, with what was expected.
//! Lengths count Unicode scalar values. Formats: `email` is `local@domain` (both non-empty, one
//! `@`, no whitespace); `uri` is an RFC 3986 scheme, `:`, and no whitespace; `date` is
//! `YYYY-MM-DD` (a real calendar day); `date-time` is RFC 3339 (`YYYY-MM-DDTHH:MM:SS`, optional
//! fraction, `Z` or `±HH:MM`).

use super::errors::FieldIssue;
use super::json::{JsonNumber, JsonObject, JsonPath, JsonValue};
use std::collections::{BTreeMap, BTreeSet};

/// A string property's `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl StringFormat {
    fn parse(s: &str) -> Option<StringFormat> {
        match s {
            "email" => Some(StringFormat::Email),
            "uri" => Some(StringFormat::Uri),
            "date" => Some(StringFormat::Date),
            "date-time" => Some(StringFormat::DateTime),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            StringFormat::Email => "an email address",
            StringFormat::Uri => "a URI",
            StringFormat::Date => "a date (YYYY-MM-DD)",
            StringFormat::DateTime => "an RFC 3339 date-time",
        }
    }
}

/// One property of a [`RequestedSchema`].
#[derive(Debug, Clone, PartialEq)]
pub enum PrimitiveSchema {
    String {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<StringFormat>,
    },
    Enum {
        values: Vec<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
}

/// A validated requested schema: the value as given (what the wire carries) and its reading.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedSchema {
    value: JsonObject,
    properties: BTreeMap<String, PrimitiveSchema>,
    required: BTreeSet<String>,
}

impl RequestedSchema {
    /// Validates `value`; the issues' paths start at `base` (`requestedSchema` in a message
    /// text, the value itself in a `schema-invalid` failure).
    pub fn parse(value: &JsonValue, base: &JsonPath) -> Result<RequestedSchema, Vec<FieldIssue>> {
        let mut issues = Vec::new();
        let Some(obj) = value.as_object() else {
            return Err(vec![FieldIssue::invalid(base.clone(), "an object schema")]);
        };
        for key in obj.keys() {
            if !matches!(key.as_str(), "$schema" | "type" | "properties" | "required") {
                issues.push(FieldIssue::unexpected(base.key(key)));
            }
        }
        if let Some(v) = obj.get("$schema") {
            if v.as_str().is_none() {
                issues.push(FieldIssue::invalid(base.key("$schema"), "a string"));
            }
        }
        match obj.get("type") {
            None => issues.push(FieldIssue::missing(base.key("type"))),
            Some(v) if v.as_str() == Some("object") => {}
            Some(_) => issues.push(FieldIssue::invalid(base.key("type"), "\"object\"")),
        }
        let mut properties = BTreeMap::new();
        match obj.get("properties") {
            None => issues.push(FieldIssue::missing(base.key("properties"))),
            Some(JsonValue::Object(props)) => {
                for (name, schema) in props {
                    if let Some(p) = primitive(schema, &base.key("properties").key(name), &mut issues) {
                        properties.insert(name.clone(), p);
                    }
                }
            }
            Some(_) => issues.push(FieldIssue::invalid(
                base.key("properties"),
                "an object of primitive schemas",
            )),
        }
        let mut required = BTreeSet::new();
        match obj.get("required") {
            None => {}
            Some(JsonValue::Array(names)) => {
                let props = obj.get("properties").and_then(JsonValue::as_object);
                for (i, n) in names.iter().enumerate() {
                    let path = base.key("required").index(i);
                    match n.as_str() {
                        None => issues.push(FieldIssue::invalid(path, "a property name")),
                        Some(n) if !props.is_some_and(|p| p.contains_key(n)) => {
                            issues.push(FieldIssue::invalid(path, "the name of a property"))
                        }
                        Some(n) if !required.insert(n.to_owned()) => {
                            issues.push(FieldIssue::invalid(path, "a name not listed before"))
                        }
                        Some(_) => {}
                    }
                }
            }
            Some(_) => issues.push(FieldIssue::invalid(base.key("required"), "an array of property names")),
        }
        if issues.is_empty() {
            Ok(RequestedSchema {
                value: obj.clone(),
                properties,
                required,
            })
        } else {
            Err(issues)
        }
    }

    /// The schema as given, for the wire.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::Object(self.value.clone())
    }

    pub fn properties(&self) -> &BTreeMap<String, PrimitiveSchema> {
        &self.properties
    }

    pub fn required(&self) -> &BTreeSet<String> {
        &self.required
    }

    /// Checks `content` against this schema; the issues' paths start at `base`.
    pub fn validate(&self, content: &AnswerContent, base: &JsonPath) -> Result<(), Vec<FieldIssue>> {
        let mut issues = Vec::new();
        for name in &self.required {
            if !content.0.contains_key(name) {
                issues.push(FieldIssue::missing(base.key(name)));
            }
        }
        for (name, value) in &content.0 {
            let path = base.key(name);
            match self.properties.get(name) {
                None => issues.push(FieldIssue::unexpected(path)),
                Some(schema) => {
                    if let Some(expected) = check_value(schema, value) {
                        issues.push(FieldIssue::invalid(path, expected));
                    }
                }
            }
        }
        issues.sort_by(|a, b| a.path.cmp(&b.path));
        if issues.is_empty() {
            Ok(())
        } else {
            Err(issues)
        }
    }
}

fn allowed(obj: &JsonObject, keys: &[&str], path: &JsonPath, issues: &mut Vec<FieldIssue>) {
    for key in obj.keys() {
        if !keys.contains(&key.as_str()) {
            issues.push(FieldIssue::unexpected(path.key(key)));
        }
    }
}

fn text_key(obj: &JsonObject, key: &str, path: &JsonPath, issues: &mut Vec<FieldIssue>) {
    if obj.get(key).is_some_and(|v| v.as_str().is_none()) {
        issues.push(FieldIssue::invalid(path.key(key), "a string"));
    }
}

fn number_key(obj: &JsonObject, key: &str, path: &JsonPath, issues: &mut Vec<FieldIssue>) -> Option<f64> {
    let v = obj.get(key)?;
    let n = v.as_number().map(JsonNumber::get);
    if n.is_none() {
        issues.push(FieldIssue::invalid(path.key(key), "a number"));
    }
    n
}

fn length_key(obj: &JsonObject, key: &str, path: &JsonPath, issues: &mut Vec<FieldIssue>) -> Option<u64> {
    let v = obj.get(key)?;
    let n = v.as_number().and_then(JsonNumber::as_safe_integer).filter(|n| *n >= 0);
    if n.is_none() {
        issues.push(FieldIssue::invalid(path.key(key), "a whole number of 0 or more"));
    }
    n.map(|n| n as u64)
}

fn primitive(value: &JsonValue, path: &JsonPath, issues: &mut Vec<FieldIssue>) -> Option<PrimitiveSchema> {
    const COMMON: [&str; 3] = ["type", "title", "description"];
    let Some(obj) = value.as_object() else {
        issues.push(FieldIssue::invalid(path.clone(), "a primitive schema object"));
        return None;
    };
    let before = issues.len();
    text_key(obj, "title", path, issues);
    text_key(obj, "description", path, issues);
    let schema = match obj.get("type").map(|t| t.as_str()) {
        None => {
            issues.push(FieldIssue::missing(path.key("type")));
            return None;
        }
        Some(Some("string")) if obj.contains_key("enum") => {
            allowed(obj, &[&COMMON[..], &["enum", "enumNames"]].concat(), path, issues);
            let mut values = Vec::new();
            match obj.get("enum").and_then(JsonValue::as_array) {
                Some(items) if !items.is_empty() => {
                    for (i, v) in items.iter().enumerate() {
                        match v.as_str() {
                            Some(s) if !values.iter().any(|x| x == s) => values.push(s.to_owned()),
                            Some(_) => issues.push(FieldIssue::invalid(
                                path.key("enum").index(i),
                                "a value not listed before",
                            )),
                            None => issues.push(FieldIssue::invalid(path.key("enum").index(i), "a string")),
                        }
                    }
                }
                _ => issues.push(FieldIssue::invalid(path.key("enum"), "a non-empty array of strings")),
            }
            if let Some(names) = obj.get("enumNames") {
                let len = obj.get("enum").and_then(JsonValue::as_array).map_or(0, <[_]>::len);
                match names.as_array() {
                    Some(n) if n.len() == len && n.iter().all(|x| x.as_str().is_some()) => {}
                    _ => issues.push(FieldIssue::invalid(
                        path.key("enumNames"),
                        format!("an array of {len} strings, one per enum value"),
                    )),
                }
            }
            PrimitiveSchema::Enum { values }
        }
        Some(Some("string")) => {
            allowed(
                obj,
                &[&COMMON[..], &["minLength", "maxLength", "format"]].concat(),
                path,
                issues,
            );
            let min_length = length_key(obj, "minLength", path, issues);
            let max_length = length_key(obj, "maxLength", path, issues);
            if let (Some(lo), Some(hi)) = (min_length, max_length) {
                if lo > hi {
                    issues.push(FieldIssue::invalid(
                        path.key("maxLength"),
                        "a number not below minLength",
                    ));
                }
            }
            let format = match obj.get("format") {
                None => None,
                Some(f) => {
                    let parsed = f.as_str().and_then(StringFormat::parse);
                    if parsed.is_none() {
                        issues.push(FieldIssue::invalid(
                            path.key("format"),
                            "\"email\", \"uri\", \"date\" or \"date-time\"",
                        ));
                    }
                    parsed
                }
            };
            PrimitiveSchema::String {
                min_length,
                max_length,
                format,
            }
        }
        Some(Some(t @ ("number" | "integer"))) => {
            allowed(obj, &[&COMMON[..], &["minimum", "maximum"]].concat(), path, issues);
            let minimum = number_key(obj, "minimum", path, issues);
            let maximum = number_key(obj, "maximum", path, issues);
            if let (Some(lo), Some(hi)) = (minimum, maximum) {
                if lo > hi {
                    issues.push(FieldIssue::invalid(path.key("maximum"), "a number not below minimum"));
                }
            }
            PrimitiveSchema::Number {
                integer: t == "integer",
                minimum,
                maximum,
            }
        }
        Some(Some("boolean")) => {
            allowed(obj, &[&COMMON[..], &["default"]].concat(), path, issues);
            if obj.get("default").is_some_and(|d| !matches!(d, JsonValue::Bool(_))) {
                issues.push(FieldIssue::invalid(path.key("default"), "a boolean"));
            }
            PrimitiveSchema::Boolean
        }
        Some(_) => {
            issues.push(FieldIssue::invalid(
                path.key("type"),
                "\"string\", \"number\", \"integer\" or \"boolean\"",
            ));
            return None;
        }
    };
    (issues.len() == before).then_some(schema)
}

/// A primitive answer value.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerValue {
    String(String),
    Number(JsonNumber),
    Bool(bool),
}

impl From<AnswerValue> for JsonValue {
    fn from(v: AnswerValue) -> JsonValue {
        match v {
            AnswerValue::String(s) => JsonValue::String(s),
            AnswerValue::Number(n) => JsonValue::Number(n),
            AnswerValue::Bool(b) => JsonValue::Bool(b),
        }
    }
}

/// An `accept` answer's content: an object of primitive values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnswerContent(pub BTreeMap<String, AnswerValue>);

impl AnswerContent {
    /// An object whose values are strings, numbers or booleans; each other value is invalid
    /// (paths start at `base`).
    pub fn parse(value: &JsonValue, base: &JsonPath) -> Result<AnswerContent, Vec<FieldIssue>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![FieldIssue::invalid(
                base.clone(),
                "an object of strings, numbers and booleans",
            )]);
        };
        let mut out = BTreeMap::new();
        let mut issues = Vec::new();
        for (k, v) in obj {
            let a = match v {
                JsonValue::String(s) => AnswerValue::String(s.clone()),
                JsonValue::Number(n) => AnswerValue::Number(*n),
                JsonValue::Bool(b) => AnswerValue::Bool(*b),
                _ => {
                    issues.push(FieldIssue::invalid(base.key(k), "a string, number or boolean"));
                    continue;
                }
            };
            out.insert(k.clone(), a);
        }
        if issues.is_empty() {
            Ok(AnswerContent(out))
        } else {
            Err(issues)
        }
    }

    pub fn to_json(&self) -> JsonValue {
        JsonValue::Object(self.0.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect())
    }
}

/// `None` when `value` fits `schema`, else what was expected.
fn check_value(schema: &PrimitiveSchema, value: &AnswerValue) -> Option<String> {
    match (schema, value) {
        (
            PrimitiveSchema::String {
                min_length,
                max_length,
                format,
            },
            AnswerValue::String(s),
        ) => {
            let n = s.chars().count() as u64;
            let long_enough = min_length.is_none_or(|lo| n >= lo);
            let short_enough = max_length.is_none_or(|hi| n <= hi);
            if !long_enough || !short_enough {
                return Some(match (min_length, max_length) {
                    (Some(lo), Some(hi)) => format!("a string of {lo} to {hi} characters"),
                    (Some(lo), None) => format!("a string of at least {lo} characters"),
                    (None, Some(hi)) => format!("a string of at most {hi} characters"),
                    (None, None) => "a string".to_owned(),
                });
            }
            match format {
                Some(f) if !format_ok(*f, s) => Some(f.describe().to_owned()),
                _ => None,
            }
        }
        (PrimitiveSchema::String { .. }, _) => Some("a string".to_owned()),
        (PrimitiveSchema::Enum { values }, AnswerValue::String(s)) if values.contains(s) => None,
        (PrimitiveSchema::Enum { values }, _) => {
            let list: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
            Some(format!("one of {}", list.join(", ")))
        }
        (
            PrimitiveSchema::Number {
                integer,
                minimum,
                maximum,
            },
            value,
        ) => {
            let what = if *integer { "an integer" } else { "a number" };
            let bounds = match (minimum, maximum) {
                (Some(lo), Some(hi)) => format!("{what} from {} to {}", fmt_num(*lo), fmt_num(*hi)),
                (Some(lo), None) => format!("{what} of at least {}", fmt_num(*lo)),
                (None, Some(hi)) => format!("{what} of at most {}", fmt_num(*hi)),
                (None, None) => what.to_owned(),
            };
            let AnswerValue::Number(n) = value else {
                return Some(bounds);
            };
            let x = n.get();
            let ok =
                (!integer || x.fract() == 0.0) && minimum.is_none_or(|lo| x >= lo) && maximum.is_none_or(|hi| x <= hi);
            (!ok).then_some(bounds)
        }
        (PrimitiveSchema::Boolean, AnswerValue::Bool(_)) => None,
        (PrimitiveSchema::Boolean, _) => Some("a boolean".to_owned()),
    }
}

fn fmt_num(x: f64) -> String {
    super::canonical::format_number(x)
}

fn format_ok(format: StringFormat, s: &str) -> bool {
    match format {
        StringFormat::Email => {
            let mut parts = s.split('@');
            let (Some(local), Some(domain), None) = (parts.next(), parts.next(), parts.next()) else {
                return false;
            };
            !local.is_empty() && !domain.is_empty() && !s.chars().any(char::is_whitespace)
        }
        StringFormat::Uri => {
            let Some((scheme, _)) = s.split_once(':') else {
                return false;
            };
            let mut b = scheme.bytes();
            b.next().is_some_and(|c| c.is_ascii_alphabetic())
                && b.all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
                && !s.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        StringFormat::Date => date_ok(s),
        StringFormat::DateTime => date_time_ok(s),
    }
}

fn digits(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

fn date_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&s[..4]), digits(&s[5..7]), digits(&s[8..10])) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn date_time_ok(s: &str) -> bool {
    let (Some(date), Some(rest)) = (s.get(..10), s.get(11..)) else {
        return false;
    };
    if !date_ok(date) || !matches!(s.as_bytes()[10], b'T' | b't') || rest.len() < 8 || !rest.as_bytes()[..8].is_ascii()
    {
        return false;
    }
    let b = rest.as_bytes();
    if b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(h), Some(mi), Some(sec)) = (digits(&rest[..2]), digits(&rest[3..5]), digits(&rest[6..8])) else {
        return false;
    };
    if h > 23 || mi > 59 || sec > 60 {
        return false;
    }
    let mut zone = &rest[8..];
    if let Some(frac) = zone.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        zone = &frac[n..];
    }
    match zone {
        "Z" | "z" => true,
        _ => {
            let z = zone.as_bytes();
            z.len() == 6
                && matches!(z[0], b'+' | b'-')
                && z[3] == b':'
                && digits(&zone[1..3]).is_some_and(|h| h <= 23)
                && digits(&zone[4..6]).is_some_and(|m| m <= 59)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn schema(text: &str) -> Result<RequestedSchema, Vec<String>> {
        RequestedSchema::parse(&JsonValue::parse(text).unwrap(), &JsonPath::default())
            .map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    const FULL: &str = r#"{
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "d", "minLength": 1, "maxLength": 5},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "color": {"type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "score": {"type": "number", "minimum": -1.5},
            "ok": {"type": "boolean", "default": true}
        },
        "required": ["name", "age"]
    }"#;

    #[test]
    fn the_form_mode_grammar_is_accepted() {
        let s = schema(FULL).unwrap();
        assert_eq!(s.properties().len(), 9);
        assert_eq!(s.required().len(), 2);
        assert!(schema(r#"{"type":"object","properties":{}}"#).is_ok());
    }

    #[test]
    fn every_failing_path_is_named_with_its_expected_shape() {
        assert_eq!(schema(r#"[]"#).unwrap_err(), ["(the value): expected an object schema"]);
        assert_eq!(
            schema(r#"{"type":"array","items":{}}"#).unwrap_err(),
            [
                "items is unexpected",
                "type: expected \"object\"",
                "properties is missing"
            ]
        );
        let e = schema(
            r#"{"type":"object","properties":{
                "a":{"type":"object"},
                "b":{"type":"string","minLength":-1,"maxLength":2.5,"format":"phone","pattern":"x"},
                "c":{"type":"integer","minimum":5,"maximum":1},
                "d":{"type":"boolean","default":"yes"},
                "e":{"type":"string","enum":[],"enumNames":["x"]},
                "f":{"title":1},
                "g":"string",
                "h":{"type":"string","enum":["x","x",1],"minLength":1}
            },"required":["a","zz","a",3]}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            [
                "properties.a.type: expected \"string\", \"number\", \"integer\" or \"boolean\"",
                "properties.b.pattern is unexpected",
                "properties.b.minLength: expected a whole number of 0 or more",
                "properties.b.maxLength: expected a whole number of 0 or more",
                "properties.b.format: expected \"email\", \"uri\", \"date\" or \"date-time\"",
                "properties.c.maximum: expected a number not below minimum",
                "properties.d.default: expected a boolean",
                "properties.e.enum: expected a non-empty array of strings",
                "properties.e.enumNames: expected an array of 0 strings, one per enum value",
                "properties.f.title: expected a string",
                "properties.f.type is missing",
                "properties.g: expected a primitive schema object",
                "properties.h.minLength is unexpected",
                "properties.h.enum[1]: expected a value not listed before",
                "properties.h.enum[2]: expected a string",
                "required[1]: expected the name of a property",
                "required[2]: expected a name not listed before",
                "required[3]: expected a property name",
            ]
        );
        // With a base path, as parseMessageText reports it.
        let e = RequestedSchema::parse(
            &JsonValue::parse(r#"{"properties":{}}"#).unwrap(),
            &JsonPath::root("requestedSchema"),
        );
        assert_eq!(e.unwrap_err()[0].to_string(), "requestedSchema.type is missing");
    }

    fn answer(text: &str) -> AnswerContent {
        AnswerContent::parse(&JsonValue::parse(text).unwrap(), &JsonPath::default()).unwrap()
    }

    #[test]
    fn answers_are_checked_field_by_field() {
        let s = schema(FULL).unwrap();
        let good = answer(
            r#"{"name":"Ann","email":"a@b.c","site":"https://x.y/z","day":"2024-02-29","at":"2026-06-28T12:00:00.5+02:00",
                "color":"red","age":30,"score":-1.5,"ok":false}"#,
        );
        assert_eq!(s.validate(&good, &JsonPath::default()), Ok(()));
        let bad = answer(
            r#"{"name":"Annabel","email":"a b@c","site":"no scheme","day":"2023-02-29","at":"2026-06-28 12:00:00Z",
                "color":"blue","score":-2,"ok":"yes","extra":1}"#,
        );
        let issues: Vec<String> = s
            .validate(&bad, &JsonPath::default())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            issues,
            [
                "age is missing",
                "at: expected an RFC 3339 date-time",
                "color: expected one of \"red\", \"green\"",
                "day: expected a date (YYYY-MM-DD)",
                "email: expected an email address",
                "extra is unexpected",
                "name: expected a string of 1 to 5 characters",
                "ok: expected a boolean",
                "score: expected a number of at least -1.5",
                "site: expected a URI",
            ]
        );
        let frac = answer(r#"{"name":"A","age":1.5}"#);
        assert_eq!(
            s.validate(&frac, &JsonPath::root("content")).unwrap_err()[0].to_string(),
            "content.age: expected an integer from 0 to 150"
        );
        let nested = AnswerContent::parse(
            &JsonValue::parse(r#"{"a":{"b":1},"c":null}"#).unwrap(),
            &JsonPath::root("content"),
        );
        assert_eq!(nested.unwrap_err().len(), 2);
    }

    proptest! {
        #[test]
        fn schema_parsing_takes_any_value(v in crate::harness::canonical::tests::arb_json()) {
            if let Ok(s) = RequestedSchema::parse(&v, &JsonPath::default()) {
                let _ = s.validate(&AnswerContent::default(), &JsonPath::default());
            }
            if let Ok(a) = AnswerContent::parse(&v, &JsonPath::default()) {
                prop_assert_eq!(AnswerContent::parse(&a.to_json(), &JsonPath::default()).unwrap(), a);
            }
        }

        #[test]
        fn formats_take_any_text(s in any::<String>(), t in "[0-9:T.Z+é-]{0,30}") {
            for f in [StringFormat::Email, StringFormat::Uri, StringFormat::Date, StringFormat::DateTime] {
                let _ = format_ok(f, &t);
                let _ = format_ok(f, &format!("2024-01-01T{t}"));
            }
            for f in [StringFormat::Email, StringFormat::Uri, StringFormat::Date, StringFormat::DateTime] {
                let _ = format_ok(f, &s);
            }
        }
    }
}
