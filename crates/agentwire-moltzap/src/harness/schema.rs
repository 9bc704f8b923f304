//! [`RequestedSchema`]: the MCP elicitation form-mode grammar a gather's question is answered
//! in, and [`AnswerContent`] validation against it.
//!
//! The grammar is MCP 2025-11-25's form-mode `ElicitRequestFormParams.requestedSchema`
//! (`PrimitiveSchemaDefinition`: `StringSchema`, `NumberSchema`, `BooleanSchema` and the
//! `EnumSchema`s: `UntitledSingleSelectEnumSchema`, `TitledSingleSelectEnumSchema`,
//! `LegacyTitledEnumSchema`, `UntitledMultiSelectEnumSchema`, `TitledMultiSelectEnumSchema`), a
//! superset of 2025-06-18's: every schema valid there is valid here. It is closed (a key not
//! listed is refused, so a schema means the same to every endpoint):
//!
//! ```text
//! schema    = { "$schema"?: string, "type": "object",
//!               "properties": { <name>: primitive, … },     (may be empty)
//!               "required"?: [ <name>, … ] }                (distinct names of properties)
//! primitive = { "type": "string", "title"?: string, "description"?: string,
//!               "minLength"?: n, "maxLength"?: n,           (whole numbers 0..=2^53-1, min ≤ max)
//!               "format"?: "email" | "uri" | "date" | "date-time",
//!               "default"?: string }
//!           | { "type": "string", "title"?, "description"?, (single-select, untitled or legacy)
//!               "enum": [ string, … ],                      (non-empty, distinct)
//!               "enumNames"?: [ string, … ],                (as many as enum)
//!               "default"?: string }
//!           | { "type": "string", "title"?, "description"?, (single-select, titled)
//!               "oneOf": [ option, … ],                     (non-empty, distinct consts)
//!               "default"?: string }
//!           | { "type": "number" | "integer", "title"?, "description"?,
//!               "minimum"?: number, "maximum"?: number,     (minimum ≤ maximum)
//!               "default"?: number }
//!           | { "type": "boolean", "title"?, "description"?, "default"?: boolean }
//!           | { "type": "array", "title"?, "description"?,  (multi-select)
//!               "minItems"?: n, "maxItems"?: n,             (whole numbers 0..=2^53-1, min ≤ max)
//!               "items": { "type": "string", "enum": [ string, … ] }   (non-empty, distinct)
//!                      | { "anyOf": [ option, … ] },        (non-empty, distinct consts)
//!               "default"?: [ string, … ] }
//! option    = { "const": string, "title": string }
//! ```
//!
//! A `string` object with `enum` is the enum shape, else one with `oneOf` the titled shape, else
//! the plain string shape; `items` with `anyOf` is the titled shape. No nesting: a property is one
//! of the primitives. A `default` must itself be a valid answer for its property (its length,
//! format, bounds, one of the values, distinct values within `minItems..maxItems`). Every failing
//! path is reported with the shape it expects (`properties.age.minimum: expected a number`); a key
//! the shape does not list is refused naming the shape and its keys
//! (`properties.a.pattern: expected no such key (a string schema takes only type, …)`).
//!
//! An answer ([`AnswerContent`]) is an object of strings, numbers, booleans and arrays of strings
//! (MCP's `ElicitResult.content`). Against a schema: each `required` name absent is *missing*,
//! each name not in `properties` is *unexpected*, and each value of the wrong type or outside its
//! bounds is *invalid*, with what was expected. A single-select field takes one of its `enum`
//! values or `oneOf` consts; a multi-select field takes an array of distinct values from its
//! `items.enum` or `items.anyOf` consts, as many as `minItems..maxItems` allow. Lengths count
//! Unicode scalar values. Formats: `email` is `local@domain` (both non-empty, one `@`, no
//! whitespace); `uri` is an RFC 3986 scheme, `:`, and no whitespace; `date` is `YYYY-MM-DD` (a
//! real calendar day); `date-time` is RFC 3339 (`YYYY-MM-DDTHH:MM:SS`, optional fraction, `Z` or
//! `±HH:MM`).

use super::errors::FieldIssue;
use super::json::{object_footprint, JsonNumber, JsonObject, JsonPath, JsonValue};
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
    /// A single-select enum: its `enum` values (untitled, or titled by the legacy `enumNames`),
    /// or the `const` of each `oneOf` option (titled).
    Enum {
        values: Vec<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// A multi-select enum (`"type": "array"`): its `items.enum` values (untitled) or the `const`
    /// of each `items.anyOf` option (titled), and how many may be picked.
    MultiEnum {
        values: Vec<String>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
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
        closed(obj, &TOP, base, &mut issues);
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

    /// About the heap it takes, in bytes: the value as given, counted as
    /// [`JsonValue::footprint`] counts a tree, and its reading (each property's name and enum
    /// values, each required name), counted as [`AnswerContent::footprint`] counts strings. An
    /// enum of short values takes about twice its tree, ten times its text.
    pub(crate) fn footprint(&self) -> usize {
        const STRING: usize = std::mem::size_of::<String>();
        const ENTRY: usize = STRING + std::mem::size_of::<PrimitiveSchema>() + 16;
        let values = |p: &PrimitiveSchema| match p {
            PrimitiveSchema::Enum { values } | PrimitiveSchema::MultiEnum { values, .. } => {
                values.iter().map(|v| STRING + v.len()).sum()
            }
            _ => 0,
        };
        object_footprint(&self.value)
            + self
                .properties
                .iter()
                .map(|(k, p)| ENTRY + k.len() + values(p))
                .sum::<usize>()
            + self.required.iter().map(|r| STRING + 16 + r.len()).sum::<usize>()
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

/// An object shape of the grammar: what it is called and the keys it takes.
struct Shape {
    name: &'static str,
    keys: &'static [&'static str],
}

const TOP: Shape = Shape {
    name: "a requested schema",
    keys: &["$schema", "type", "properties", "required"],
};
const STRING: Shape = Shape {
    name: "a string schema",
    keys: &[
        "type",
        "title",
        "description",
        "minLength",
        "maxLength",
        "format",
        "default",
    ],
};
const ENUM: Shape = Shape {
    name: "an enum schema",
    keys: &["type", "title", "description", "enum", "enumNames", "default"],
};
const TITLED_ENUM: Shape = Shape {
    name: "a titled enum schema",
    keys: &["type", "title", "description", "oneOf", "default"],
};
const NUMBER: Shape = Shape {
    name: "a number schema",
    keys: &["type", "title", "description", "minimum", "maximum", "default"],
};
const BOOLEAN: Shape = Shape {
    name: "a boolean schema",
    keys: &["type", "title", "description", "default"],
};
const MULTI_ENUM: Shape = Shape {
    name: "a multi-select enum schema",
    keys: &[
        "type",
        "title",
        "description",
        "minItems",
        "maxItems",
        "items",
        "default",
    ],
};
const ITEMS: Shape = Shape {
    name: "an untitled items schema",
    keys: &["type", "enum"],
};
const TITLED_ITEMS: Shape = Shape {
    name: "a titled items schema",
    keys: &["anyOf"],
};
const OPTION: Shape = Shape {
    name: "an option",
    keys: &["const", "title"],
};

/// Refuses each key of `obj` that `shape` does not take, naming the shape and its keys.
fn closed(obj: &JsonObject, shape: &Shape, path: &JsonPath, issues: &mut Vec<FieldIssue>) {
    for key in obj.keys() {
        if !shape.keys.contains(&key.as_str()) {
            let (last, rest) = shape.keys.split_last().expect("a shape takes keys");
            let list = if rest.is_empty() {
                (*last).to_owned()
            } else {
                format!("{} and {last}", rest.join(", "))
            };
            issues.push(FieldIssue::invalid(
                path.key(key),
                format!("no such key ({} takes only {list})", shape.name),
            ));
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

/// `lo_key` and `hi_key` as whole numbers, `hi` not below `lo`.
fn length_bounds(
    obj: &JsonObject,
    (lo_key, hi_key): (&str, &str),
    path: &JsonPath,
    issues: &mut Vec<FieldIssue>,
) -> (Option<u64>, Option<u64>) {
    let lo = length_key(obj, lo_key, path, issues);
    let hi = length_key(obj, hi_key, path, issues);
    if let (Some(lo), Some(hi)) = (lo, hi) {
        if lo > hi {
            issues.push(FieldIssue::invalid(
                path.key(hi_key),
                format!("a number not below {lo_key}"),
            ));
        }
    }
    (lo, hi)
}

/// An `enum` list: non-empty, distinct strings.
fn enum_values(value: Option<&JsonValue>, path: &JsonPath, issues: &mut Vec<FieldIssue>) -> Vec<String> {
    let mut values = Vec::new();
    match value.map(JsonValue::as_array) {
        None => issues.push(FieldIssue::missing(path.clone())),
        Some(Some(items)) if !items.is_empty() => {
            // The values listed so far, for the duplicate check (a scan was quadratic).
            let mut seen = BTreeSet::new();
            for (i, v) in items.iter().enumerate() {
                match v.as_str() {
                    Some(s) if seen.insert(s) => values.push(s.to_owned()),
                    Some(_) => issues.push(FieldIssue::invalid(path.index(i), "a value not listed before")),
                    None => issues.push(FieldIssue::invalid(path.index(i), "a string")),
                }
            }
        }
        Some(_) => issues.push(FieldIssue::invalid(path.clone(), "a non-empty array of strings")),
    }
    values
}

/// A `oneOf` or `anyOf` list: non-empty, each `{"const": string, "title": string}`, the consts
/// distinct. Returns the consts.
fn options(value: Option<&JsonValue>, path: &JsonPath, issues: &mut Vec<FieldIssue>) -> Vec<String> {
    let mut values = Vec::new();
    let items = match value.map(JsonValue::as_array) {
        None => {
            issues.push(FieldIssue::missing(path.clone()));
            return values;
        }
        Some(Some(items)) if !items.is_empty() => items,
        Some(_) => {
            issues.push(FieldIssue::invalid(
                path.clone(),
                "a non-empty array of {\"const\": string, \"title\": string} options",
            ));
            return values;
        }
    };
    // The consts listed so far, for the duplicate check (a scan was quadratic).
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let at = path.index(i);
        let Some(obj) = item.as_object() else {
            issues.push(FieldIssue::invalid(
                at,
                "an option {\"const\": string, \"title\": string}",
            ));
            continue;
        };
        closed(obj, &OPTION, &at, issues);
        match obj.get("const").map(JsonValue::as_str) {
            None => issues.push(FieldIssue::missing(at.key("const"))),
            Some(Some(s)) if seen.insert(s) => values.push(s.to_owned()),
            Some(Some(_)) => issues.push(FieldIssue::invalid(at.key("const"), "a value not listed before")),
            Some(None) => issues.push(FieldIssue::invalid(at.key("const"), "a string")),
        }
        match obj.get("title") {
            None => issues.push(FieldIssue::missing(at.key("title"))),
            Some(_) => text_key(obj, "title", &at, issues),
        }
    }
    values
}

fn primitive(value: &JsonValue, path: &JsonPath, issues: &mut Vec<FieldIssue>) -> Option<PrimitiveSchema> {
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
            closed(obj, &ENUM, path, issues);
            let values = enum_values(obj.get("enum"), &path.key("enum"), issues);
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
        Some(Some("string")) if obj.contains_key("oneOf") => {
            closed(obj, &TITLED_ENUM, path, issues);
            PrimitiveSchema::Enum {
                values: options(obj.get("oneOf"), &path.key("oneOf"), issues),
            }
        }
        Some(Some("string")) => {
            closed(obj, &STRING, path, issues);
            let (min_length, max_length) = length_bounds(obj, ("minLength", "maxLength"), path, issues);
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
            closed(obj, &NUMBER, path, issues);
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
            closed(obj, &BOOLEAN, path, issues);
            PrimitiveSchema::Boolean
        }
        Some(Some("array")) => {
            closed(obj, &MULTI_ENUM, path, issues);
            let (min_items, max_items) = length_bounds(obj, ("minItems", "maxItems"), path, issues);
            let at = path.key("items");
            let values = match obj.get("items") {
                None => {
                    issues.push(FieldIssue::missing(at));
                    Vec::new()
                }
                Some(JsonValue::Object(items)) if items.contains_key("anyOf") => {
                    closed(items, &TITLED_ITEMS, &at, issues);
                    options(items.get("anyOf"), &at.key("anyOf"), issues)
                }
                Some(JsonValue::Object(items)) => {
                    closed(items, &ITEMS, &at, issues);
                    match items.get("type") {
                        None => issues.push(FieldIssue::missing(at.key("type"))),
                        Some(t) if t.as_str() == Some("string") => {}
                        Some(_) => issues.push(FieldIssue::invalid(at.key("type"), "\"string\"")),
                    }
                    enum_values(items.get("enum"), &at.key("enum"), issues)
                }
                Some(_) => {
                    issues.push(FieldIssue::invalid(
                        at,
                        "{\"type\": \"string\", \"enum\": [string, …]} or \
                         {\"anyOf\": [{\"const\": string, \"title\": string}, …]}",
                    ));
                    Vec::new()
                }
            };
            PrimitiveSchema::MultiEnum {
                values,
                min_items,
                max_items,
            }
        }
        Some(_) => {
            issues.push(FieldIssue::invalid(
                path.key("type"),
                "\"string\", \"number\", \"integer\", \"boolean\" or \"array\"",
            ));
            return None;
        }
    };
    // A default is checked as an answer would be, once the rest of the property is valid.
    if issues.len() == before {
        if let Some(d) = obj.get("default") {
            let expected = match AnswerValue::from_json(d) {
                Some(v) => check_value(&schema, &v),
                None => Some(expected_of(&schema)),
            };
            if let Some(expected) = expected {
                issues.push(FieldIssue::invalid(path.key("default"), expected));
            }
        }
    }
    (issues.len() == before).then_some(schema)
}

/// A primitive answer value: MCP `ElicitResult.content`'s `string | number | boolean | string[]`.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerValue {
    String(String),
    Number(JsonNumber),
    Bool(bool),
    /// A multi-select field's picks.
    Strings(Vec<String>),
}

impl AnswerValue {
    /// `value` as an answer value, if it is one.
    fn from_json(value: &JsonValue) -> Option<AnswerValue> {
        Some(match value {
            JsonValue::String(s) => AnswerValue::String(s.clone()),
            JsonValue::Number(n) => AnswerValue::Number(*n),
            JsonValue::Bool(b) => AnswerValue::Bool(*b),
            JsonValue::Array(items) => AnswerValue::Strings(
                items
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        })
    }
}

impl From<AnswerValue> for JsonValue {
    fn from(v: AnswerValue) -> JsonValue {
        match v {
            AnswerValue::String(s) => JsonValue::String(s),
            AnswerValue::Number(n) => JsonValue::Number(n),
            AnswerValue::Bool(b) => JsonValue::Bool(b),
            AnswerValue::Strings(items) => JsonValue::Array(items.into_iter().map(JsonValue::String).collect()),
        }
    }
}

/// An `accept` answer's content: an object of primitive values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnswerContent(pub BTreeMap<String, AnswerValue>);

impl AnswerContent {
    /// About the heap it takes, in bytes, as [`JsonValue::footprint`] counts a tree: a map
    /// entry's key and bookkeeping, and the strings' bytes (a multi-select's `["a","a",…]` takes
    /// about ten times its text).
    pub(crate) fn footprint(&self) -> usize {
        const STRING: usize = std::mem::size_of::<String>();
        const ENTRY: usize = STRING + std::mem::size_of::<AnswerValue>() + 16;
        let value = |v: &AnswerValue| match v {
            AnswerValue::String(s) => s.len(),
            AnswerValue::Strings(picks) => picks.iter().map(|s| STRING + s.len()).sum(),
            AnswerValue::Number(_) | AnswerValue::Bool(_) => 0,
        };
        self.0.iter().map(|(k, v)| ENTRY + k.len() + value(v)).sum()
    }

    /// An object whose values are strings, numbers, booleans or arrays of strings; each other
    /// value, and each item of an array that is not a string, is invalid (paths start at
    /// `base`).
    pub fn parse(value: &JsonValue, base: &JsonPath) -> Result<AnswerContent, Vec<FieldIssue>> {
        let Some(obj) = value.as_object() else {
            return Err(vec![FieldIssue::invalid(
                base.clone(),
                "an object of strings, numbers, booleans and arrays of strings",
            )]);
        };
        let mut out = BTreeMap::new();
        let mut issues = Vec::new();
        for (k, v) in obj {
            match AnswerValue::from_json(v) {
                Some(a) => {
                    out.insert(k.clone(), a);
                }
                None => match v {
                    JsonValue::Array(items) => {
                        for (i, _) in items.iter().enumerate().filter(|(_, x)| x.as_str().is_none()) {
                            issues.push(FieldIssue::invalid(base.key(k).index(i), "a string"));
                        }
                    }
                    _ => issues.push(FieldIssue::invalid(
                        base.key(k),
                        "a string, number, boolean or array of strings",
                    )),
                },
            }
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

fn quoted(values: &[String]) -> String {
    let list: Vec<String> = values.iter().map(|v| super::errors::quote(v)).collect();
    list.join(", ")
}

/// What `schema` expects of a value that is not an answer value at all (its type's wording).
fn expected_of(schema: &PrimitiveSchema) -> String {
    let other = match schema {
        PrimitiveSchema::Boolean => AnswerValue::Strings(Vec::new()),
        _ => AnswerValue::Bool(false),
    };
    check_value(schema, &other).unwrap_or_default()
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
        (PrimitiveSchema::Enum { values }, _) => Some(format!("one of {}", quoted(values))),
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
        (
            PrimitiveSchema::MultiEnum {
                values,
                min_items,
                max_items,
            },
            value,
        ) => {
            let fits = match value {
                AnswerValue::Strings(picked) => {
                    let n = picked.len() as u64;
                    let allowed: BTreeSet<&str> = values.iter().map(String::as_str).collect();
                    let mut seen = BTreeSet::new();
                    picked
                        .iter()
                        .all(|p| allowed.contains(p.as_str()) && seen.insert(p.as_str()))
                        && min_items.is_none_or(|lo| n >= lo)
                        && max_items.is_none_or(|hi| n <= hi)
                }
                _ => false,
            };
            let how_many = match (min_items, max_items) {
                (Some(lo), Some(hi)) => format!("{lo} to {hi} "),
                (Some(lo), None) => format!("at least {lo} "),
                (None, Some(hi)) => format!("at most {hi} "),
                (None, None) => String::new(),
            };
            (!fits).then(|| format!("an array of {how_many}distinct values from {}", quoted(values)))
        }
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
                "items: expected no such key (a requested schema takes only $schema, type, properties and required)",
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
                "properties.a.type: expected \"string\", \"number\", \"integer\", \"boolean\" or \"array\"",
                "properties.b.pattern: expected no such key (a string schema takes only type, title, \
                 description, minLength, maxLength, format and default)",
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
                "properties.h.minLength: expected no such key (an enum schema takes only type, title, \
                 description, enum, enumNames and default)",
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

    /// Every shape MCP 2025-11-25 adds, each with a valid `default`.
    const FORM_2025_11_25: &str = r#"{
        "type": "object",
        "properties": {
            "nick": {"type": "string", "minLength": 1, "format": "email", "default": "a@b.c"},
            "count": {"type": "integer", "minimum": 0, "maximum": 9, "default": 3},
            "ratio": {"type": "number", "default": 0.5},
            "size": {"type": "string", "enum": ["s", "m"], "default": "m"},
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "default": "b"},
            "tier": {"type": "string", "title": "Tier", "description": "d",
                     "oneOf": [{"const": "gold", "title": "Gold"}, {"const": "free", "title": "Free"}],
                     "default": "free"},
            "tags": {"type": "array", "title": "Tags", "description": "d", "minItems": 1, "maxItems": 2,
                     "items": {"type": "string", "enum": ["x", "y", "z"]}, "default": ["z", "x"]},
            "langs": {"type": "array",
                      "items": {"anyOf": [{"const": "en", "title": "English"}, {"const": "fr", "title": "French"}]},
                      "default": []},
            "ok": {"type": "boolean", "default": false}
        },
        "required": ["tier", "tags"]
    }"#;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn the_2025_11_25_shapes_and_defaults_are_accepted() {
        let s = schema(FORM_2025_11_25).unwrap();
        let p = s.properties();
        assert_eq!(p.len(), 9);
        assert_eq!(
            p["tier"],
            PrimitiveSchema::Enum {
                values: strings(&["gold", "free"])
            }
        );
        assert_eq!(
            p["legacy"],
            PrimitiveSchema::Enum {
                values: strings(&["a", "b"])
            }
        );
        assert_eq!(
            p["tags"],
            PrimitiveSchema::MultiEnum {
                values: strings(&["x", "y", "z"]),
                min_items: Some(1),
                max_items: Some(2)
            }
        );
        assert_eq!(
            p["langs"],
            PrimitiveSchema::MultiEnum {
                values: strings(&["en", "fr"]),
                min_items: None,
                max_items: None
            }
        );
        // The wire carries the schema as given.
        assert_eq!(s.to_json(), JsonValue::parse(FORM_2025_11_25).unwrap());
        // 2025-06-18 schemas stay valid.
        assert!(schema(FULL).is_ok());
    }

    #[test]
    fn each_new_shape_refuses_its_invalid_variants_naming_the_path() {
        let e = schema(
            r#"{"type":"object","properties":{
                "a":{"type":"string","oneOf":[]},
                "b":{"type":"string","minLength":1,"oneOf":[
                    {"const":"x","title":"X"},{"const":"x","title":"Y"},{"const":1,"title":2},
                    {"title":"Z","extra":1},{"const":"w"},"s"]},
                "c":{"type":"string","enum":["a"],"oneOf":[{"const":"a","title":"A"}]},
                "d":{"type":"array"},
                "e":{"type":"array","minItems":-1,"items":[{"type":"string"}]},
                "f":{"type":"array","minItems":3,"maxItems":1,"uniqueItems":true,
                     "items":{"type":"string","anyOf":[{"const":"a","title":"A"}]}},
                "g":{"type":"array","items":{"type":"number","enum":["x","x"],"title":"t"}},
                "h":{"type":"array","items":{"type":"string"}},
                "i":{"type":"array","items":{"anyOf":{}}},
                "j":{"type":"null"}
            }}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            [
                "properties.a.oneOf: expected a non-empty array of {\"const\": string, \"title\": string} options",
                "properties.b.minLength: expected no such key (a titled enum schema takes only type, title, \
                 description, oneOf and default)",
                "properties.b.oneOf[1].const: expected a value not listed before",
                "properties.b.oneOf[2].const: expected a string",
                "properties.b.oneOf[2].title: expected a string",
                "properties.b.oneOf[3].extra: expected no such key (an option takes only const and title)",
                "properties.b.oneOf[3].const is missing",
                "properties.b.oneOf[4].title is missing",
                "properties.b.oneOf[5]: expected an option {\"const\": string, \"title\": string}",
                "properties.c.oneOf: expected no such key (an enum schema takes only type, title, description, \
                 enum, enumNames and default)",
                "properties.d.items is missing",
                "properties.e.minItems: expected a whole number of 0 or more",
                "properties.e.items: expected {\"type\": \"string\", \"enum\": [string, …]} or \
                 {\"anyOf\": [{\"const\": string, \"title\": string}, …]}",
                "properties.f.uniqueItems: expected no such key (a multi-select enum schema takes only type, \
                 title, description, minItems, maxItems, items and default)",
                "properties.f.maxItems: expected a number not below minItems",
                "properties.f.items.type: expected no such key (a titled items schema takes only anyOf)",
                "properties.g.items.title: expected no such key (an untitled items schema takes only type and \
                 enum)",
                "properties.g.items.type: expected \"string\"",
                "properties.g.items.enum[1]: expected a value not listed before",
                "properties.h.items.enum is missing",
                "properties.i.items.anyOf: expected a non-empty array of {\"const\": string, \"title\": string} \
                 options",
                "properties.j.type: expected \"string\", \"number\", \"integer\", \"boolean\" or \"array\"",
            ]
        );
    }

    #[test]
    fn a_default_must_fit_its_property() {
        let e = schema(
            r#"{"type":"object","properties":{
                "s1":{"type":"string","maxLength":2,"default":"abc"},
                "s2":{"type":"string","format":"date","default":"2023-02-29"},
                "s3":{"type":"string","default":1},
                "n1":{"type":"integer","minimum":0,"maximum":10,"default":2.5},
                "n2":{"type":"number","default":"1"},
                "n3":{"type":"number","minimum":1,"default":null},
                "e1":{"type":"string","enum":["a","b"],"default":"c"},
                "t1":{"type":"string","oneOf":[{"const":"a","title":"A"}],"default":"A"},
                "m1":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a","a"]},
                "m2":{"type":"array","maxItems":1,
                      "items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"default":["a","b"]},
                "m3":{"type":"array","minItems":1,"items":{"type":"string","enum":["a"]},"default":"a"},
                "m4":{"type":"array","items":{"type":"string","enum":["a"]},"default":["a",1]},
                "m5":{"type":"array","items":{"type":"string","enum":["a"]},"default":["c"]},
                "b1":{"type":"boolean","default":null},
                "x":{"type":"string","maxLength":"2","default":"abc"}
            }}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            [
                "properties.b1.default: expected a boolean",
                "properties.e1.default: expected one of \"a\", \"b\"",
                "properties.m1.default: expected an array of distinct values from \"a\", \"b\"",
                "properties.m2.default: expected an array of at most 1 distinct values from \"a\", \"b\"",
                "properties.m3.default: expected an array of at least 1 distinct values from \"a\"",
                "properties.m4.default: expected an array of distinct values from \"a\"",
                "properties.m5.default: expected an array of distinct values from \"a\"",
                "properties.n1.default: expected an integer from 0 to 10",
                "properties.n2.default: expected a number",
                "properties.n3.default: expected a number of at least 1",
                "properties.s1.default: expected a string of at most 2 characters",
                "properties.s2.default: expected a date (YYYY-MM-DD)",
                "properties.s3.default: expected a string",
                "properties.t1.default: expected one of \"a\"",
                // A default is not checked against a property that is itself invalid.
                "properties.x.maxLength: expected a whole number of 0 or more",
            ]
        );
    }

    fn answer_issues(s: &RequestedSchema, text: &str) -> Vec<String> {
        s.validate(&answer(text), &JsonPath::root("content"))
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn multi_select_and_titled_answers_are_checked() {
        let s = schema(FORM_2025_11_25).unwrap();
        let ok: [&str; 0] = [];
        assert_eq!(answer_issues(&s, r#"{"tier":"gold","tags":["x","z"],"langs":[]}"#), ok);
        assert_eq!(
            answer_issues(
                &s,
                r#"{"tier":"free","tags":["y"],"langs":["fr","en"],"legacy":"a","size":"s"}"#
            ),
            ok
        );
        assert_eq!(
            answer_issues(
                &s,
                r#"{"tier":"Gold","tags":["x","x"],"langs":["de"],"legacy":"A","size":["s"]}"#
            ),
            [
                "content.langs: expected an array of distinct values from \"en\", \"fr\"",
                "content.legacy: expected one of \"a\", \"b\"",
                "content.size: expected one of \"s\", \"m\"",
                "content.tags: expected an array of 1 to 2 distinct values from \"x\", \"y\", \"z\"",
                "content.tier: expected one of \"gold\", \"free\"",
            ]
        );
        let too_few = "content.tags: expected an array of 1 to 2 distinct values from \"x\", \"y\", \"z\"";
        assert_eq!(answer_issues(&s, r#"{"tier":"gold","tags":[]}"#), [too_few]);
        assert_eq!(answer_issues(&s, r#"{"tier":"gold","tags":["x","y","z"]}"#), [too_few]);
        assert_eq!(answer_issues(&s, r#"{"tier":"gold","tags":"x"}"#), [too_few]);
        assert_eq!(
            answer_issues(&s, r#"{"tier":["gold"],"nick":["a@b.c"],"count":["1"],"ok":["x"]}"#),
            [
                "content.count: expected an integer from 0 to 9",
                "content.nick: expected a string",
                "content.ok: expected a boolean",
                "content.tags is missing",
                "content.tier: expected one of \"gold\", \"free\"",
            ]
        );
        // An answer's arrays hold strings only, each other item named.
        let e = AnswerContent::parse(
            &JsonValue::parse(r#"{"tags":["x",1,null],"b":[["x"]]}"#).unwrap(),
            &JsonPath::root("content"),
        )
        .unwrap_err();
        let e: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert_eq!(
            e,
            [
                "content.b[0]: expected a string",
                "content.tags[1]: expected a string",
                "content.tags[2]: expected a string",
            ]
        );
        let picks = answer(r#"{"tags":["y","x"]}"#);
        assert_eq!(picks.0["tags"], AnswerValue::Strings(strings(&["y", "x"])));
        assert_eq!(picks.to_json(), JsonValue::parse(r#"{"tags":["y","x"]}"#).unwrap());
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

    /// A schema weighs its value as given and its reading (each property's entry, name and enum
    /// values, each required name); an answer each entry, name and string.
    #[test]
    fn schemas_and_answers_weigh_their_entries_and_strings() {
        const STRING: usize = std::mem::size_of::<String>();
        const PROPERTY: usize = STRING + std::mem::size_of::<PrimitiveSchema>() + 16;
        const FIELD: usize = STRING + std::mem::size_of::<AnswerValue>() + 16;
        let s = schema(
            r#"{"type":"object","properties":{
                "ab":{"type":"string","enum":["x","yz"]},
                "c":{"type":"array","items":{"type":"string","enum":["w"]}},
                "n":{"type":"number"}
            },"required":["ab"]}"#,
        )
        .unwrap();
        let reading = (PROPERTY + 2 + (STRING + 1) + (STRING + 2))
            + (PROPERTY + 1 + (STRING + 1))
            + (PROPERTY + 1)
            + (STRING + 16 + 2);
        assert_eq!(s.footprint(), object_footprint(&s.value) + reading);
        let a = answer(r#"{"s":"abc","tags":["x","yz"],"n":1,"b":true}"#);
        let fields = (FIELD + 1 + 3) + (FIELD + 4 + (STRING + 1) + (STRING + 2)) + (FIELD + 1) + (FIELD + 1);
        assert_eq!(a.footprint(), fields);
    }

    /// A bound may equal its other: one length, one number, one count.
    #[test]
    fn equal_bounds_are_accepted() {
        let s = schema(
            r#"{"type":"object","properties":{
                "s":{"type":"string","minLength":2,"maxLength":2,"default":"ab"},
                "n":{"type":"number","minimum":1.5,"maximum":1.5,"default":1.5},
                "m":{"type":"array","minItems":1,"maxItems":1,"items":{"type":"string","enum":["a"]},"default":["a"]}
            }}"#,
        );
        assert_eq!(s.map(|s| s.properties().len()), Ok(3));
    }

    /// Each format at its edges: what it takes, and what it refuses a step past them.
    #[test]
    fn formats_take_their_edges_and_refuse_a_step_past() {
        use StringFormat::{Date, DateTime, Uri};
        let takes = [
            (Uri, "a+b-c.d:x"),
            (Date, "2000-02-29"),
            (Date, "2023-02-28"),
            (Date, "2024-01-31"),
            (DateTime, "2024-01-01T23:59:60Z"),
            (DateTime, "2024-01-01t00:00:00z"),
            (DateTime, "2024-01-01T00:00:00.123-23:59"),
        ];
        for (f, s) in takes {
            assert!(format_ok(f, s), "{f:?} {s}");
        }
        let refuses = [
            (Uri, "ab:x y"),
            (Uri, "ab:x\u{7f}"),
            (Uri, "a_b:x"),
            (Date, "1900-02-29"),
            (Date, "2024-04-31"),
            (Date, "+024-01-01"),
            (DateTime, "2024-01-01T24:00:00Z"),
            (DateTime, "2024-01-01T00:60:00Z"),
            (DateTime, "2024-01-01T00:00:61Z"),
            (DateTime, "2024-01-01T00:00.00Z"),
            (DateTime, "2024-01-01T00:00:00"),
            (DateTime, "2024-01-01T00:00:00*02:00"),
            (DateTime, "2024-01-01T00:00:00+02.00"),
            (DateTime, "2024-01-01T00:00:00+24:00"),
            (DateTime, "2024-01-01T00:00:00+00:60"),
        ];
        for (f, s) in refuses {
            assert!(!format_ok(f, s), "{f:?} {s}");
        }
    }

    /// An enum, a multi-select's `items.enum` and a `oneOf` of 40,000 values each are read, and a
    /// duplicate is still named at its index. (The check keeps a set of the values seen; how
    /// long it takes is not asserted: the quadratic one it replaced took 15 s here in a debug
    /// build, the set 0.3 s.)
    #[test]
    fn long_enums_are_checked_for_duplicates() {
        let n = 40_000;
        let values: Vec<String> = (0..n).map(|k| format!("\"{k:x}\"")).collect();
        let options: Vec<String> = (0..n).map(|k| format!(r#"{{"const":"{k:x}","title":"t"}}"#)).collect();
        let text = format!(
            r#"{{"type":"object","properties":{{
                "e":{{"type":"string","enum":[{v}]}},
                "m":{{"type":"array","items":{{"type":"string","enum":[{v}]}}}},
                "o":{{"type":"string","oneOf":[{o}]}}}}}}"#,
            v = values.join(","),
            o = options.join(",")
        );
        assert!(schema(&text).is_ok());
        let twice = text.replacen(r#""1","#, r#""0","#, 1);
        assert_eq!(
            schema(&twice).unwrap_err(),
            vec!["properties.e.enum[1]: expected a value not listed before"]
        );
    }
}
