//! The collective part: one `data` part whose value is `{"org.social-harness/collective": …}`,
//! naming the operation a post carries. Shapes (keys exactly these, no other):
//!
//! | post | content | collective value |
//! |---|---|---|
//! | multicast | text, part | `{"kind":"operation","op":"multicast"}` |
//! | gather / all_gather request | question text, part | `{"kind":"operation","op":"gather"\|"all_gather","id","nonce","deadlineAt","requestedSchema"}` |
//! | response | part alone | `{"kind":"response","id","action":"accept","content"}` or `{"kind":"response","id","action":"decline"}` |
//! | all_gather close | part alone | `{"kind":"close","id","included":[record hash, …]}` |
//!
//! `id` is a [`CollectiveId`], `nonce` a [`Nonce`] (minted as 43 base64url characters; read as
//! any printable ASCII text of 1 to 256 bytes, since the id check hashes it as it is),
//! `deadlineAt` epoch milliseconds (a whole number, 0 to 2^53-1), `requestedSchema` a
//! [`RequestedSchema`], `content` an [`AnswerContent`], `included` distinct record hashes
//! ([`RecordHash`]: the transport's opaque text, 1 to 256 printable ASCII characters), at most 31
//! (a group's members other than the requester).
//!
//! The spec puts the operation in "one `data` part whose value is an object with the key
//! `org.social-harness/collective`". This endpoint writes that object with the key alone; on
//! input any other key beside it is ignored (the value under the key is read strictly). The
//! record is not rewritten: its hash and its content stay the parts as received.

use super::content::{Content, Part};
use super::errors::{FieldIssue, SendError};
use super::id::{CollectiveId, Nonce};
use super::json::{JsonObject, JsonPath, JsonValue};
use super::schema::{AnswerContent, RequestedSchema};
use std::fmt;

/// The key of the collective part's object.
pub const COLLECTIVE_KEY: &str = "org.social-harness/collective";

/// The largest `deadlineAt` (2^53 - 1: a number every JSON reader holds exactly).
pub const MAX_DEADLINE_AT: u64 = 9_007_199_254_740_991;

/// Which question a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AskOp {
    Gather,
    AllGather,
}

impl AskOp {
    pub fn as_str(self) -> &'static str {
        match self {
            AskOp::Gather => "gather",
            AskOp::AllGather => "all_gather",
        }
    }
}

impl fmt::Display for AskOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An answer: `accept` with content, or `decline`.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectiveResponse {
    Accept(AnswerContent),
    Decline,
}

impl CollectiveResponse {
    /// About the heap it takes, in bytes ([`AnswerContent::footprint`]).
    pub(crate) fn footprint(&self) -> usize {
        std::mem::size_of::<CollectiveResponse>()
            + match self {
                CollectiveResponse::Accept(content) => content.footprint(),
                CollectiveResponse::Decline => 0,
            }
    }
}

/// A transport record hash, as a close lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordHash(String);

impl RecordHash {
    /// 1 to 256 printable ASCII characters (no space), else `None`.
    pub fn parse(s: &str) -> Option<RecordHash> {
        ((1..=256).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())).then(|| RecordHash(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A hash the caller built within the rule (the endpoint's `rh_` + base64url digests).
    pub(crate) fn from_checked(s: String) -> RecordHash {
        debug_assert!(RecordHash::parse(&s).is_some());
        RecordHash(s)
    }
}

/// A gather or all_gather request's part.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestPart {
    pub op: AskOp,
    pub id: CollectiveId,
    pub nonce: Nonce,
    /// Epoch milliseconds.
    pub deadline_at: u64,
    pub requested_schema: RequestedSchema,
}

/// A response's part.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsePart {
    pub id: CollectiveId,
    pub response: CollectiveResponse,
}

/// An all_gather close's part.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosePart {
    pub id: CollectiveId,
    /// In member order.
    pub included: Vec<RecordHash>,
}

/// The operation a post carries.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectivePart {
    Multicast,
    Request(RequestPart),
    Response(ResponsePart),
    Close(ClosePart),
}

impl CollectivePart {
    /// The inner value (`{"kind",…}`).
    pub fn inner_json(&self) -> JsonValue {
        let id = |id: &CollectiveId| JsonValue::from(id.as_str());
        match self {
            CollectivePart::Multicast => JsonValue::object([("kind", "operation".into()), ("op", "multicast".into())]),
            CollectivePart::Request(r) => JsonValue::object([
                ("kind", "operation".into()),
                ("op", r.op.as_str().into()),
                ("id", id(&r.id)),
                ("nonce", r.nonce.as_str().into()),
                ("deadlineAt", JsonValue::Number(deadline_number(r.deadline_at))),
                ("requestedSchema", r.requested_schema.to_json()),
            ]),
            CollectivePart::Response(r) => {
                let mut pairs = vec![("kind", "response".into()), ("id", id(&r.id))];
                match &r.response {
                    CollectiveResponse::Accept(content) => {
                        pairs.push(("action", "accept".into()));
                        pairs.push(("content", content.to_json()));
                    }
                    CollectiveResponse::Decline => pairs.push(("action", "decline".into())),
                }
                JsonValue::object(pairs)
            }
            CollectivePart::Close(c) => JsonValue::object([
                ("kind", "close".into()),
                ("id", id(&c.id)),
                (
                    "included",
                    JsonValue::Array(c.included.iter().map(|h| h.as_str().into()).collect()),
                ),
            ]),
        }
    }

    /// The data part's value: `{"org.social-harness/collective": inner}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([(COLLECTIVE_KEY, self.inner_json())])
    }

    /// The data part.
    pub fn to_part(&self) -> Part {
        Part::Data(self.to_json())
    }

    /// Reads a data part's value that holds the collective key (see [`is_collective`]). Other
    /// keys of that object are ignored; the value under the collective key is read strictly,
    /// every failing field named (paths start at the collective key).
    pub fn parse(value: &JsonValue) -> Result<CollectivePart, Vec<FieldIssue>> {
        let base = JsonPath::root(COLLECTIVE_KEY);
        let Some(outer) = value.as_object() else {
            return Err(vec![FieldIssue::invalid(JsonPath::default(), "an object")]);
        };
        let Some(inner) = outer.get(COLLECTIVE_KEY) else {
            return Err(vec![FieldIssue::missing(base)]);
        };
        let Some(obj) = inner.as_object() else {
            return Err(vec![FieldIssue::invalid(base, "an object")]);
        };
        let mut r = Reader {
            obj,
            base: &base,
            issues: Vec::new(),
        };
        let part = match r.str("kind").as_deref() {
            Some("operation") => match r.str("op").as_deref() {
                Some("multicast") => {
                    r.only(&["kind", "op"]);
                    Some(CollectivePart::Multicast)
                }
                Some(op @ ("gather" | "all_gather")) => {
                    r.only(&["kind", "op", "id", "nonce", "deadlineAt", "requestedSchema"]);
                    let id = r.id();
                    let nonce = r.nonce();
                    let deadline_at = r.deadline_at();
                    let schema = r.schema();
                    match (id, nonce, deadline_at, schema) {
                        (Some(id), Some(nonce), Some(deadline_at), Some(requested_schema)) => {
                            Some(CollectivePart::Request(RequestPart {
                                op: if op == "gather" {
                                    AskOp::Gather
                                } else {
                                    AskOp::AllGather
                                },
                                id,
                                nonce,
                                deadline_at,
                                requested_schema,
                            }))
                        }
                        _ => None,
                    }
                }
                Some(_) => {
                    r.invalid("op", "\"multicast\", \"gather\" or \"all_gather\"");
                    None
                }
                None => None,
            },
            Some("response") => {
                let id = r.id();
                let response = match r.str("action").as_deref() {
                    Some("accept") => {
                        r.only(&["kind", "id", "action", "content"]);
                        r.answer().map(CollectiveResponse::Accept)
                    }
                    Some("decline") => {
                        r.only(&["kind", "id", "action"]);
                        Some(CollectiveResponse::Decline)
                    }
                    Some(_) => {
                        r.invalid("action", "\"accept\" or \"decline\"");
                        None
                    }
                    None => None,
                };
                match (id, response) {
                    (Some(id), Some(response)) => Some(CollectivePart::Response(ResponsePart { id, response })),
                    _ => None,
                }
            }
            Some("close") => {
                r.only(&["kind", "id", "included"]);
                let id = r.id();
                let included = r.included();
                match (id, included) {
                    (Some(id), Some(included)) => Some(CollectivePart::Close(ClosePart { id, included })),
                    _ => None,
                }
            }
            Some(_) => {
                r.invalid("kind", "\"operation\", \"response\" or \"close\"");
                None
            }
            None => None,
        };
        match part {
            Some(p) if r.issues.is_empty() => Ok(p),
            _ => Err(r.issues),
        }
    }
}

fn deadline_number(ms: u64) -> super::json::JsonNumber {
    // `deadline_at` is checked against MAX_DEADLINE_AT wherever it is made; clamp anyway.
    super::json::JsonNumber::new(ms.min(MAX_DEADLINE_AT) as f64).unwrap_or(super::json::JsonNumber::from(0u8))
}

/// True when `value` (a data part's value) is an object holding the collective key.
pub fn is_collective(value: &JsonValue) -> bool {
    value.as_object().is_some_and(|o| o.contains_key(COLLECTIVE_KEY))
}

struct Reader<'a> {
    obj: &'a JsonObject,
    base: &'a JsonPath,
    issues: Vec<FieldIssue>,
}

impl<'a> Reader<'a> {
    fn invalid(&mut self, key: &str, expected: &str) {
        self.issues.push(FieldIssue::invalid(self.base.key(key), expected));
    }

    fn get(&mut self, key: &str) -> Option<&'a JsonValue> {
        let obj: &'a JsonObject = self.obj;
        let v = obj.get(key);
        if v.is_none() {
            self.issues.push(FieldIssue::missing(self.base.key(key)));
        }
        v
    }

    fn only(&mut self, keys: &[&str]) {
        for k in self.obj.keys() {
            if !keys.contains(&k.as_str()) {
                self.issues.push(FieldIssue::unexpected(self.base.key(k)));
            }
        }
    }

    fn str(&mut self, key: &str) -> Option<String> {
        let s = self.get(key)?.as_str().map(str::to_owned);
        if s.is_none() {
            self.invalid(key, "a string");
        }
        s
    }

    fn id(&mut self) -> Option<CollectiveId> {
        let id = self.get("id")?.as_str().and_then(CollectiveId::parse);
        if id.is_none() {
            self.invalid("id", "col_ and 43 base64url characters");
        }
        id
    }

    fn nonce(&mut self) -> Option<Nonce> {
        let n = self.get("nonce")?.as_str().and_then(Nonce::parse);
        if n.is_none() {
            self.invalid("nonce", "1 to 256 printable ASCII characters");
        }
        n
    }

    fn deadline_at(&mut self) -> Option<u64> {
        let n = self
            .get("deadlineAt")?
            .as_number()
            .and_then(|n| n.as_safe_integer())
            .filter(|n| *n >= 0);
        if n.is_none() {
            self.invalid("deadlineAt", "epoch milliseconds (a whole number of 0 or more)");
        }
        n.map(|n| n as u64)
    }

    fn schema(&mut self) -> Option<RequestedSchema> {
        let v = self.get("requestedSchema")?;
        let base: &'a JsonPath = self.base;
        match RequestedSchema::parse(v, &base.key("requestedSchema")) {
            Ok(s) => Some(s),
            Err(e) => {
                self.issues.extend(e);
                None
            }
        }
    }

    fn answer(&mut self) -> Option<AnswerContent> {
        let v = self.get("content")?;
        let base: &'a JsonPath = self.base;
        match AnswerContent::parse(v, &base.key("content")) {
            Ok(a) => Some(a),
            Err(e) => {
                self.issues.extend(e);
                None
            }
        }
    }

    fn included(&mut self) -> Option<Vec<RecordHash>> {
        let path = self.base.key("included");
        let Some(items) = self.get("included")?.as_array() else {
            self.invalid("included", "an array of record hashes");
            return None;
        };
        if items.len() > super::address::MAX_GROUP_MEMBERS - 1 {
            self.invalid("included", "at most 31 record hashes");
            return None;
        }
        let mut out: Vec<RecordHash> = Vec::new();
        let before = self.issues.len();
        for (i, v) in items.iter().enumerate() {
            match v.as_str().and_then(RecordHash::parse) {
                Some(h) if out.contains(&h) => self
                    .issues
                    .push(FieldIssue::invalid(path.index(i), "a record hash not listed before")),
                Some(h) => out.push(h),
                None => self.issues.push(FieldIssue::invalid(path.index(i), "a record hash")),
            }
        }
        (self.issues.len() == before).then_some(out)
    }
}

/// A multicast's content: the text part, then the multicast part. What a send without
/// `collective` and a send with `{op: "multicast"}` both certify.
pub fn multicast_content(text: &str) -> Result<Content, SendError> {
    Content::new(vec![Part::Text(text.to_owned()), CollectivePart::Multicast.to_part()])
}

/// A request's content: the question, then the request part.
pub fn request_content(question: &str, request: RequestPart) -> Result<Content, SendError> {
    Content::new(vec![
        Part::Text(question.to_owned()),
        CollectivePart::Request(request).to_part(),
    ])
}

/// A response's content: the part alone.
pub fn response_content(response: ResponsePart) -> Result<Content, SendError> {
    Content::new(vec![CollectivePart::Response(response).to_part()])
}

/// A close's content: the part alone.
pub fn close_content(close: ClosePart) -> Result<Content, SendError> {
    Content::new(vec![CollectivePart::Close(close).to_part()])
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::harness::address::AgentAddress;

    pub(crate) fn nonce() -> Nonce {
        Nonce::from_bytes(&std::array::from_fn(|i| i as u8))
    }

    pub(crate) fn schema() -> RequestedSchema {
        let v =
            JsonValue::parse(r#"{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}"#).unwrap();
        RequestedSchema::parse(&v, &JsonPath::default()).unwrap()
    }

    fn issues(text: &str) -> Vec<String> {
        CollectivePart::parse(&JsonValue::parse(text).unwrap())
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn every_shape_round_trips() {
        let id = CollectiveId::derive(&AgentAddress::parse("agent:alice").unwrap(), &nonce());
        let mut answer = AnswerContent::default();
        answer
            .0
            .insert("ok".into(), crate::harness::schema::AnswerValue::Bool(true));
        answer.0.insert(
            "tags".into(),
            crate::harness::schema::AnswerValue::Strings(vec!["b".into(), "a".into()]),
        );
        for part in [
            CollectivePart::Multicast,
            CollectivePart::Request(RequestPart {
                op: AskOp::AllGather,
                id: id.clone(),
                nonce: nonce(),
                deadline_at: 1_790_000_000_000,
                requested_schema: schema(),
            }),
            CollectivePart::Response(ResponsePart {
                id: id.clone(),
                response: CollectiveResponse::Accept(answer),
            }),
            CollectivePart::Response(ResponsePart {
                id: id.clone(),
                response: CollectiveResponse::Decline,
            }),
            CollectivePart::Close(ClosePart {
                id,
                included: vec![RecordHash::parse("h1").unwrap(), RecordHash::parse("h2").unwrap()],
            }),
        ] {
            let v = part.to_json();
            assert!(is_collective(&v));
            assert_eq!(CollectivePart::parse(&v).unwrap(), part);
            let text = crate::harness::canonical::to_canonical(&v);
            assert_eq!(CollectivePart::parse(&JsonValue::parse(&text).unwrap()).unwrap(), part);
        }
        assert_eq!(
            crate::harness::canonical::to_canonical(&CollectivePart::Multicast.to_json()),
            r#"{"org.social-harness/collective":{"kind":"operation","op":"multicast"}}"#
        );
    }

    #[test]
    fn an_op_displays_as_its_name_and_a_response_weighs_its_answer() {
        assert_eq!(AskOp::Gather.to_string(), "gather");
        assert_eq!(AskOp::AllGather.to_string(), "all_gather");
        let node = std::mem::size_of::<CollectiveResponse>();
        assert_eq!(CollectiveResponse::Decline.footprint(), node);
        let mut answer = AnswerContent::default();
        answer.0.insert(
            "note".into(),
            crate::harness::schema::AnswerValue::String("x".repeat(1000)),
        );
        let weight = answer.footprint();
        assert!(weight > 1000);
        assert_eq!(CollectiveResponse::Accept(answer).footprint(), node + weight);
    }

    /// A close lists the other members' records: at most 31, a group's 32 less the requester.
    #[test]
    fn a_close_includes_at_most_31_record_hashes() {
        let close = |n: usize| {
            let hashes: Vec<String> = (0..n).map(|i| format!("\"h{i}\"")).collect();
            JsonValue::parse(&format!(
                r#"{{"{COLLECTIVE_KEY}":{{"kind":"close","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","included":[{}]}}}}"#,
                hashes.join(",")
            ))
            .unwrap()
        };
        let Ok(CollectivePart::Close(c)) = CollectivePart::parse(&close(31)) else {
            panic!("31 hashes refused")
        };
        assert_eq!(c.included.len(), 31);
        assert_eq!(
            CollectivePart::parse(&close(32))
                .unwrap_err()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [format!(
                "[\"{COLLECTIVE_KEY}\"].included: expected at most 31 record hashes"
            )]
        );
    }

    #[test]
    fn malformed_parts_name_their_fields() {
        let k = "org.social-harness/collective";
        assert_eq!(
            issues(&format!(
                r#"{{"{k}":{{"kind":"operation","op":"multicast","id":"x"}},"extra":1}}"#
            )),
            [format!("[\"{k}\"].id is unexpected")],
            "the key beside the collective key is not an issue"
        );
        assert_eq!(issues(r#"{"extra":1}"#), [format!("[\"{k}\"] is missing")]);
        assert_eq!(
            issues(&format!(
                r#"{{"{k}":{{"kind":"operation","op":"gather","id":"col_x","nonce":"n\u0007","deadlineAt":-1,"requestedSchema":{{"type":"object"}}}}}}"#
            )),
            [
                format!("[\"{k}\"].id: expected col_ and 43 base64url characters"),
                format!("[\"{k}\"].nonce: expected 1 to 256 printable ASCII characters"),
                format!("[\"{k}\"].deadlineAt: expected epoch milliseconds (a whole number of 0 or more)"),
                format!("[\"{k}\"].requestedSchema.properties is missing"),
            ]
        );
        assert_eq!(
            issues(&format!(
                r#"{{"{k}":{{"kind":"response","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","action":"decline","content":{{}}}}}}"#
            )),
            [format!("[\"{k}\"].content is unexpected")]
        );
        assert_eq!(
            issues(&format!(
                r#"{{"{k}":{{"kind":"response","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","action":"accept"}}}}"#
            )),
            [format!("[\"{k}\"].content is missing")]
        );
        assert_eq!(
            issues(&format!(
                r#"{{"{k}":{{"kind":"close","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","included":["a","a",""]}}}}"#
            )),
            [
                format!("[\"{k}\"].included[1]: expected a record hash not listed before"),
                format!("[\"{k}\"].included[2]: expected a record hash"),
            ]
        );
        assert_eq!(
            issues(&format!(r#"{{"{k}":{{"kind":"poll"}}}}"#)),
            [format!(
                "[\"{k}\"].kind: expected \"operation\", \"response\" or \"close\""
            )]
        );
        assert_eq!(
            issues(&format!(r#"{{"{k}":[]}}"#)),
            [format!("[\"{k}\"]: expected an object")]
        );
    }

    /// Review finding "The collective data part": the spec's part is "one `data` part whose
    /// value is an object with the key `org.social-harness/collective`". Other keys of that
    /// object are ignored on input; the part is written with the key alone; the received
    /// content (what the record hash covers) is kept as it arrived.
    #[test]
    fn keys_beside_the_collective_key_are_ignored_on_input_and_never_written() {
        let id = CollectiveId::derive(&AgentAddress::parse("agent:alice").unwrap(), &nonce());
        let close = CollectivePart::Close(ClosePart {
            id: id.clone(),
            included: vec![RecordHash::parse("h1").unwrap()],
        });
        for (text, expected) in [
            (
                format!(
                    r#"{{"x":1,"{COLLECTIVE_KEY}":{{"kind":"operation","op":"multicast"}},"z":{{"kind":"close"}}}}"#
                ),
                CollectivePart::Multicast,
            ),
            (
                format!(
                    r#"{{"{COLLECTIVE_KEY}":{{"kind":"close","id":"{id}","included":["h1"]}},"org.example/other":[null]}}"#
                ),
                close.clone(),
            ),
        ] {
            let value = JsonValue::parse(&text).unwrap();
            assert!(is_collective(&value));
            let part = CollectivePart::parse(&value).unwrap();
            assert_eq!(part, expected);
            // Written: the key alone.
            let written = part.to_json();
            assert_eq!(
                written.as_object().unwrap().keys().collect::<Vec<_>>(),
                [COLLECTIVE_KEY]
            );
            // Received: the content keeps the sibling keys, so its canonical text (and any hash
            // over the parts) is that of the parts as they arrived.
            let received = Content::new(vec![Part::Data(value.clone())]).unwrap();
            let canonical = received.to_canonical();
            assert_eq!(
                canonical,
                format!(
                    r#"[{{"type":"data","value":{}}}]"#,
                    crate::harness::canonical::to_canonical(&value)
                )
            );
            assert_ne!(canonical, Content::new(vec![part.to_part()]).unwrap().to_canonical());
        }
        // The value under the key is still read strictly.
        assert_eq!(
            issues(&format!(
                r#"{{"x":1,"{COLLECTIVE_KEY}":{{"kind":"operation","op":"multicast","x":1}}}}"#
            )),
            [format!("[\"{COLLECTIVE_KEY}\"].x is unexpected")]
        );
    }

    /// Review finding "Nonce on input": a request whose nonce is not 43 base64url characters is
    /// read, its nonce kept as the text it arrived as.
    #[test]
    fn a_request_with_a_nonce_in_another_encoding_is_read_as_it_is() {
        let k = COLLECTIVE_KEY;
        for nonce in [
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "n",
            "a nonce with \"quotes\" and spaces",
        ] {
            let mut text = String::new();
            agentwire_core::json::push_string(&mut text, nonce);
            let value = JsonValue::parse(&format!(
                r#"{{"{k}":{{"kind":"operation","op":"gather","id":"col_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","nonce":{text},"deadlineAt":1,"requestedSchema":{{"type":"object","properties":{{"ok":{{"type":"boolean"}}}}}}}}}}"#
            ))
            .unwrap();
            let Ok(CollectivePart::Request(r)) = CollectivePart::parse(&value) else {
                panic!("{nonce}")
            };
            assert_eq!(r.nonce.as_str(), nonce);
            assert!(!r.nonce.is_minted_form());
        }
    }

    /// Acceptance: "A send without `collective` and a send with `{op: "multicast"}` certify the
    /// same content: the text part, then the explicit multicast part."
    #[test]
    fn a_send_without_collective_and_with_op_multicast_certify_the_same_content() {
        use crate::harness::send::{CollectiveOperation, SendInput};
        let to = crate::harness::address::MessageAddressInput::parse("agent:bob").unwrap();
        let plain = SendInput::Message {
            to: to.clone(),
            text: "hello".into(),
            collective: None,
        };
        let explicit = SendInput::Message {
            to,
            text: "hello".into(),
            collective: Some(CollectiveOperation::Multicast),
        };
        let a = plain.multicast_content().unwrap().unwrap();
        let b = explicit.multicast_content().unwrap().unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.to_canonical(),
            r#"[{"text":"hello","type":"text"},{"type":"data","value":{"org.social-harness/collective":{"kind":"operation","op":"multicast"}}}]"#
        );
    }
}
