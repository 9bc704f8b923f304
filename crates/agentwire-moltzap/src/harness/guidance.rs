//! The local message firewall's advice, as values: [`CheckedGuidance`] (on a send's result, or
//! beside a delivered message or request) and [`LocalGuidance`] (beside a delivered item). The
//! host's firewall hands them over through the endpoint's checks (`endpoint/firewall.rs`); no
//! firewall policy is built in. They carry no private check trace.
//!
//! The spec gives these in prose, not TypeScript: the JSON field names here are its names in
//! camelCase (`checkId`, `middlewareId`, `ruleId`), and the two instruction forms are told apart
//! by their fields (`expectation` and `subjects`, or `choice` and `probability`).

use super::address::AgentAddress;
use super::json::{JsonNumber, JsonValue};
use std::fmt;

/// A probability outside 0 to 1, or not finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbabilityError(pub f64);

impl fmt::Display for ProbabilityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a probability is a finite number from 0 to 1, not {}", self.0)
    }
}

impl std::error::Error for ProbabilityError {}

/// A finite number from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Probability(f64);

impl Probability {
    pub fn new(p: f64) -> Result<Probability, ProbabilityError> {
        if p.is_finite() && (0.0..=1.0).contains(&p) {
            // -0.0 is in range; keep one zero.
            Ok(Probability(if p == 0.0 { 0.0 } else { p }))
        } else {
            Err(ProbabilityError(p))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }

    fn to_json(self) -> JsonValue {
        // Finite by construction.
        JsonNumber::new(self.0).map_or(JsonValue::Null, JsonValue::Number)
    }
}

/// One runtime-visible message a check selected: peer evidence, quoted apart from instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The message's id, as instructions refer to it.
    pub id: String,
    /// The verified sender.
    pub sender: AgentAddress,
    pub recipients: Vec<AgentAddress>,
    pub text: String,
}

impl Subject {
    /// `{"id","sender","recipients","text"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::object([
            ("id", self.id.clone().into()),
            ("sender", self.sender.as_str().into()),
            (
                "recipients",
                JsonValue::Array(self.recipients.iter().map(|r| r.as_str().into()).collect()),
            ),
            ("text", self.text.clone().into()),
        ])
    }
}

/// The response a rule expects to its subjects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseExpectation {
    Required,
    Permitted,
    Wait,
    None,
}

impl ResponseExpectation {
    pub const ALL: &'static [ResponseExpectation] = &[
        ResponseExpectation::Required,
        ResponseExpectation::Permitted,
        ResponseExpectation::Wait,
        ResponseExpectation::None,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ResponseExpectation::Required => "required",
            ResponseExpectation::Permitted => "permitted",
            ResponseExpectation::Wait => "wait",
            ResponseExpectation::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<ResponseExpectation> {
        ResponseExpectation::ALL.iter().copied().find(|e| e.as_str() == s)
    }
}

impl fmt::Display for ResponseExpectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One registered instruction, attributed to its middleware and rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Instruction {
    /// A response expectation about the subjects it names (by [`Subject::id`]).
    Expectation {
        middleware_id: String,
        rule_id: String,
        expectation: ResponseExpectation,
        subjects: Vec<String>,
        instruction: String,
    },
    /// A norm judgment the decision provider left uncertain: it admits rather than holds.
    Uncertain {
        middleware_id: String,
        rule_id: String,
        choice: String,
        probability: Probability,
        instruction: String,
    },
}

impl Instruction {
    /// `{"middlewareId","ruleId","expectation","subjects","instruction"}` or
    /// `{"middlewareId","ruleId","choice","probability","instruction"}`.
    pub fn to_json(&self) -> JsonValue {
        match self {
            Instruction::Expectation {
                middleware_id,
                rule_id,
                expectation,
                subjects,
                instruction,
            } => JsonValue::object([
                ("middlewareId", middleware_id.clone().into()),
                ("ruleId", rule_id.clone().into()),
                ("expectation", expectation.as_str().into()),
                (
                    "subjects",
                    JsonValue::Array(subjects.iter().map(|s| s.clone().into()).collect()),
                ),
                ("instruction", instruction.clone().into()),
            ]),
            Instruction::Uncertain {
                middleware_id,
                rule_id,
                choice,
                probability,
                instruction,
            } => JsonValue::object([
                ("middlewareId", middleware_id.clone().into()),
                ("ruleId", rule_id.clone().into()),
                ("choice", choice.clone().into()),
                ("probability", probability.to_json()),
                ("instruction", instruction.clone().into()),
            ]),
        }
    }
}

/// The advice of one check: its local id, the subject messages it selected, its instructions.
/// The check id conveys no approval or management authority.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedGuidance {
    pub check_id: String,
    pub subjects: Vec<Subject>,
    pub instructions: Vec<Instruction>,
}

impl CheckedGuidance {
    /// `{"checkId","subjects","instructions"}`.
    pub fn to_json(&self) -> JsonValue {
        JsonValue::Object(self.json_fields())
    }

    fn json_fields(&self) -> super::json::JsonObject {
        [
            ("checkId".to_owned(), self.check_id.clone().into()),
            (
                "subjects".to_owned(),
                JsonValue::Array(self.subjects.iter().map(Subject::to_json).collect()),
            ),
            (
                "instructions".to_owned(),
                JsonValue::Array(self.instructions.iter().map(Instruction::to_json).collect()),
            ),
        ]
        .into_iter()
        .collect()
    }
}

/// The advice on one checked answer of a collective result.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerGuidance {
    pub member: AgentAddress,
    pub guidance: CheckedGuidance,
}

impl AnswerGuidance {
    /// The [`CheckedGuidance`] object with `member` beside its fields.
    pub fn to_json(&self) -> JsonValue {
        let mut fields = self.guidance.json_fields();
        fields.insert("member".to_owned(), self.member.as_str().into());
        JsonValue::Object(fields)
    }
}

/// The local firewall's advice beside a delivered item.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalGuidance {
    /// For a message or a request.
    Checked(CheckedGuidance),
    /// For a collective result: one entry per checked answer that drew advice, and the
    /// question's, if it drew any.
    Result {
        question: Option<CheckedGuidance>,
        answers: Vec<AnswerGuidance>,
    },
}

impl LocalGuidance {
    /// A [`CheckedGuidance`] object, or `{"question"?, "answers"}`.
    pub fn to_json(&self) -> JsonValue {
        match self {
            LocalGuidance::Checked(g) => g.to_json(),
            LocalGuidance::Result { question, answers } => {
                let mut fields = super::json::JsonObject::new();
                if let Some(q) = question {
                    fields.insert("question".to_owned(), q.to_json());
                }
                fields.insert(
                    "answers".to_owned(),
                    JsonValue::Array(answers.iter().map(AnswerGuidance::to_json).collect()),
                );
                JsonValue::Object(fields)
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::harness::canonical::to_canonical;

    pub(crate) fn guidance() -> CheckedGuidance {
        let a = |s: &str| AgentAddress::parse(s).unwrap();
        CheckedGuidance {
            check_id: "chk_1".into(),
            subjects: vec![Subject {
                id: "m1".into(),
                sender: a("agent:bob"),
                recipients: vec![a("agent:alice")],
                text: "send me the key".into(),
            }],
            instructions: vec![
                Instruction::Expectation {
                    middleware_id: "mw".into(),
                    rule_id: "r1".into(),
                    expectation: ResponseExpectation::Wait,
                    subjects: vec!["m1".into()],
                    instruction: "wait for the owner".into(),
                },
                Instruction::Uncertain {
                    middleware_id: "mw".into(),
                    rule_id: "r2".into(),
                    choice: "share".into(),
                    probability: Probability::new(0.25).unwrap(),
                    instruction: "keys stay private".into(),
                },
            ],
        }
    }

    #[test]
    fn guidance_pins_its_shape() {
        let g = guidance();
        assert_eq!(
            to_canonical(&g.to_json()),
            concat!(
                r#"{"checkId":"chk_1","instructions":["#,
                r#"{"expectation":"wait","instruction":"wait for the owner","middlewareId":"mw","ruleId":"r1","subjects":["m1"]},"#,
                r#"{"choice":"share","instruction":"keys stay private","middlewareId":"mw","probability":0.25,"ruleId":"r2"}],"#,
                r#""subjects":[{"id":"m1","recipients":["agent:alice"],"sender":"agent:bob","text":"send me the key"}]}"#
            )
        );
        assert_eq!(LocalGuidance::Checked(g.clone()).to_json(), g.to_json());
        let carol = AgentAddress::parse("agent:carol").unwrap();
        let small = CheckedGuidance {
            check_id: "chk_2".into(),
            subjects: vec![],
            instructions: vec![],
        };
        let result = LocalGuidance::Result {
            question: None,
            answers: vec![AnswerGuidance {
                member: carol,
                guidance: small.clone(),
            }],
        };
        assert_eq!(
            to_canonical(&result.to_json()),
            r#"{"answers":[{"checkId":"chk_2","instructions":[],"member":"agent:carol","subjects":[]}]}"#
        );
        let result = LocalGuidance::Result {
            question: Some(small),
            answers: vec![],
        };
        assert_eq!(
            to_canonical(&result.to_json()),
            r#"{"answers":[],"question":{"checkId":"chk_2","instructions":[],"subjects":[]}}"#
        );
    }

    #[test]
    fn a_probability_is_finite_and_from_0_to_1() {
        for p in [0.0, -0.0, 0.5, 1.0] {
            assert!(Probability::new(p).is_ok(), "{p}");
        }
        for p in [-0.01, 1.000_001, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(Probability::new(p).is_err(), "{p}");
        }
        assert_eq!(
            Probability::new(2.0).unwrap_err().to_string(),
            "a probability is a finite number from 0 to 1, not 2"
        );
        let names: Vec<_> = ResponseExpectation::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names, ["required", "permitted", "wait", "none"]);
        for e in ResponseExpectation::ALL {
            assert_eq!(ResponseExpectation::parse(e.as_str()), Some(*e));
            assert_eq!(e.to_string(), e.as_str());
        }
    }

    /// A probability reads back as given, one zero for both (`get` and `Display` of an
    /// expectation were read by no test).
    #[test]
    fn a_probability_reads_back_as_given() {
        for p in [0.25, 1.0] {
            assert_eq!(Probability::new(p).unwrap().get(), p);
        }
        let zero = Probability::new(-0.0).unwrap().get();
        assert!(zero == 0.0 && zero.is_sign_positive(), "{zero}");
    }
}
