//! Inbound classification of one complete, certified, remote-authored record, as a pure
//! function of its content, its conversation, its sender and the time.
//!
//! | the record | result |
//! |---|---|
//! | no collective part | `Multicast` with the content as is |
//! | a multicast part, and other parts | `Multicast` with the content without that part (the part may sit anywhere) |
//! | a multicast part only | `Consumed(OnlyCollectivePart)` |
//! | more than one collective part | `Consumed(DuplicatedPart)` |
//! | a collective part that does not parse, or a request / response / close not laid out as the spec says | `Consumed(MalformedPart)` |
//! | a gather request outside the direct conversation with its sender, an all_gather request outside a group conversation that has its sender | `Consumed(WrongConversation)` |
//! | a request whose id is not derived from its sender and nonce | `Consumed(IdNotDerived)` |
//! | a request whose deadline is more than 30 days and one hour away | `Consumed(DeadlineTooFar)` |
//! | an all_gather request past its deadline by at most an hour | `LateAllGatherRequest` (kept for its close, not presented) |
//! | any other request past its deadline (`deadlineAt <= now`) | `Consumed(PastDeadline)` |
//! | a request before its deadline | `Request`: a `collectiveRequest` candidate |
//! | a response | `Response` (consumed: the endpoint records it for its operation) |
//! | a close | `Close` (consumed: the endpoint applies it or logs it) |
//!
//! What needs the endpoint's state is not decided here: whether a request reuses the id of one
//! held from another post, whether a response or close matches an operation.

use super::address::{AgentAddress, GroupAddress};
use super::collective::{is_collective, AskOp, ClosePart, CollectivePart, RequestPart, ResponsePart};
use super::content::{Content, Part};
use super::errors::FieldIssue;
use super::send::{DEADLINE_GRACE_MS, MAX_DEADLINE_SECS};
use agentwire_core::Millis;

/// The conversation a record was certified in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    /// This agent's direct conversation with `peer`.
    Direct {
        peer: AgentAddress,
    },
    Group(GroupAddress),
}

/// A request as it arrived: the question and its part.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundRequest {
    pub question: String,
    pub part: RequestPart,
}

impl InboundRequest {
    pub fn op(&self) -> AskOp {
        self.part.op
    }
}

/// Why a record is consumed and logged without delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum ConsumeReason {
    /// A multicast whose only part is its collective part.
    OnlyCollectivePart,
    DuplicatedPart,
    /// The part, or the layout of the content around it, with each failing field.
    MalformedPart(Vec<FieldIssue>),
    WrongConversation,
    IdNotDerived,
    DeadlineTooFar,
    PastDeadline,
}

/// What a record is.
#[derive(Debug, Clone, PartialEq)]
pub enum Classified {
    /// A `multicast` item's content (without its collective part).
    Multicast(Content),
    /// A `collectiveRequest` candidate, before its deadline.
    Request(InboundRequest),
    /// An all_gather request past its deadline by at most an hour: recorded for its close, not
    /// presented.
    LateAllGatherRequest(InboundRequest),
    /// An answer: consumed, recorded for its operation.
    Response(ResponsePart),
    /// An all_gather close: consumed, applied or logged.
    Close(ClosePart),
    /// Consumed and logged.
    Consumed(ConsumeReason),
}

/// Classifies a complete certified record authored by `sender` (not this agent) in
/// `conversation`, at `now` (epoch milliseconds).
pub fn classify(content: &Content, conversation: &Conversation, sender: &AgentAddress, now: Millis) -> Classified {
    let parts = content.parts();
    let mut found = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Part::Data(v) if is_collective(v)));
    let Some((at, Part::Data(value))) = found.next() else {
        return Classified::Multicast(content.clone());
    };
    if found.next().is_some() {
        return Classified::Consumed(ConsumeReason::DuplicatedPart);
    }
    let part = match CollectivePart::parse(value) {
        Ok(p) => p,
        Err(issues) => return Classified::Consumed(ConsumeReason::MalformedPart(issues)),
    };
    let layout = |expected: &str| {
        Classified::Consumed(ConsumeReason::MalformedPart(vec![FieldIssue::invalid(
            super::json::JsonPath::root("content"),
            expected,
        )]))
    };
    match part {
        CollectivePart::Multicast => {
            let rest: Vec<Part> = parts
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != at)
                .map(|(_, p)| p.clone())
                .collect();
            match Content::new(rest) {
                Ok(c) => Classified::Multicast(c),
                Err(_) => Classified::Consumed(ConsumeReason::OnlyCollectivePart),
            }
        }
        CollectivePart::Response(r) if parts.len() == 1 => Classified::Response(r),
        CollectivePart::Close(c) if parts.len() == 1 => Classified::Close(c),
        CollectivePart::Response(_) => layout("a response's collective part alone"),
        CollectivePart::Close(_) => layout("a close's collective part alone"),
        CollectivePart::Request(part) => {
            let [Part::Text(question), Part::Data(_)] = parts else {
                return layout("a request's question text, then its collective part");
            };
            let in_place = match (part.op, conversation) {
                (AskOp::Gather, Conversation::Direct { peer }) => peer == sender,
                (AskOp::AllGather, Conversation::Group(g)) => g.contains(sender),
                _ => false,
            };
            if !in_place {
                return Classified::Consumed(ConsumeReason::WrongConversation);
            }
            if !part.id.derives_from(sender, &part.nonce) {
                return Classified::Consumed(ConsumeReason::IdNotDerived);
            }
            let horizon = now.saturating_add(u64::from(MAX_DEADLINE_SECS) * 1000 + DEADLINE_GRACE_MS);
            if part.deadline_at > horizon {
                return Classified::Consumed(ConsumeReason::DeadlineTooFar);
            }
            let request = InboundRequest {
                question: question.clone(),
                part,
            };
            if request.part.deadline_at > now {
                Classified::Request(request)
            } else if request.op() == AskOp::AllGather
                && now < request.part.deadline_at.saturating_add(DEADLINE_GRACE_MS)
            {
                Classified::LateAllGatherRequest(request)
            } else {
                Classified::Consumed(ConsumeReason::PastDeadline)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::collective::{multicast_content, request_content, CollectiveResponse};
    use crate::harness::id::{CollectiveId, Nonce};
    use crate::harness::json::JsonValue;
    use crate::harness::send::build_request;

    const NOW: Millis = 1_800_000_000_000;
    const DAY: u64 = 86_400_000;
    const HOUR: u64 = 3_600_000;

    fn agent(n: &str) -> AgentAddress {
        AgentAddress::parse(&format!("agent:{n}")).unwrap()
    }

    fn group() -> Conversation {
        Conversation::Group(GroupAddress::canonical(&agent("alice"), &[agent("bob"), agent("carol")]).unwrap())
    }

    fn direct() -> Conversation {
        Conversation::Direct { peer: agent("alice") }
    }

    fn request(op: AskOp, deadline_at: u64) -> Content {
        let nonce = Nonce::from_bytes(&[7; 32]);
        let mut part = build_request(
            op,
            &agent("alice"),
            nonce,
            NOW,
            60,
            crate::harness::collective::tests::schema(),
        )
        .unwrap();
        part.deadline_at = deadline_at;
        request_content("ok?", part).unwrap()
    }

    fn consumed(c: Classified) -> ConsumeReason {
        match c {
            Classified::Consumed(r) => r,
            other => panic!("{other:?}"),
        }
    }

    /// Acceptance: "Multicast items carry the certified content without its collective part, and
    /// the endpoint consumes records it does not deliver."
    #[test]
    fn multicast_items_carry_the_content_without_the_collective_part() {
        let c = multicast_content("hi").unwrap();
        assert_eq!(
            classify(&c, &direct(), &agent("alice"), NOW),
            Classified::Multicast(Content::text("hi").unwrap())
        );
        // No collective part (another client's post): the content as is.
        let plain = Content::new(vec![Part::Text("a".into()), Part::Data(JsonValue::from(1))]).unwrap();
        assert_eq!(
            classify(&plain, &group(), &agent("bob"), NOW),
            Classified::Multicast(plain.clone())
        );
        // The part first: still removed.
        let first = Content::new(vec![
            crate::harness::collective::CollectivePart::Multicast.to_part(),
            Part::Text("x".into()),
        ])
        .unwrap();
        assert_eq!(
            classify(&first, &group(), &agent("bob"), NOW),
            Classified::Multicast(Content::text("x").unwrap())
        );
        let only = Content::new(vec![crate::harness::collective::CollectivePart::Multicast.to_part()]).unwrap();
        assert_eq!(
            consumed(classify(&only, &group(), &agent("bob"), NOW)),
            ConsumeReason::OnlyCollectivePart
        );
    }

    #[test]
    fn duplicated_and_malformed_parts_are_consumed() {
        let part = crate::harness::collective::CollectivePart::Multicast.to_part();
        let twice = Content::new(vec![Part::Text("a".into()), part.clone(), part]).unwrap();
        assert_eq!(
            consumed(classify(&twice, &direct(), &agent("alice"), NOW)),
            ConsumeReason::DuplicatedPart
        );
        let bad = JsonValue::parse(r#"{"org.social-harness/collective":{"kind":"operation","op":"poll"}}"#).unwrap();
        let bad = Content::new(vec![Part::Text("a".into()), Part::Data(bad)]).unwrap();
        assert!(matches!(
            consumed(classify(&bad, &direct(), &agent("alice"), NOW)),
            ConsumeReason::MalformedPart(_)
        ));
        // A request without its question, and a response with a text part.
        let mut parts = request(AskOp::Gather, NOW + 1).into_parts();
        parts.remove(0);
        let headless = Content::new(parts).unwrap();
        assert!(matches!(
            consumed(classify(&headless, &direct(), &agent("alice"), NOW)),
            ConsumeReason::MalformedPart(_)
        ));
        let resp = crate::harness::collective::CollectivePart::Response(ResponsePart {
            id: CollectiveId::derive(&agent("alice"), &Nonce::from_bytes(&[7; 32])),
            response: CollectiveResponse::Decline,
        });
        let chatty = Content::new(vec![Part::Text("no".into()), resp.to_part()]).unwrap();
        assert!(matches!(
            consumed(classify(&chatty, &direct(), &agent("bob"), NOW)),
            ConsumeReason::MalformedPart(_)
        ));
        let alone = Content::new(vec![resp.to_part()]).unwrap();
        assert!(matches!(
            classify(&alone, &direct(), &agent("bob"), NOW),
            Classified::Response(_)
        ));
        // A close alike: its part alone, nothing beside it (no test classified a close).
        let close = crate::harness::collective::ClosePart {
            id: CollectiveId::derive(&agent("alice"), &Nonce::from_bytes(&[7; 32])),
            included: vec![],
        };
        let part = crate::harness::collective::CollectivePart::Close(close.clone()).to_part();
        let alone = Content::new(vec![part.clone()]).unwrap();
        assert_eq!(
            classify(&alone, &group(), &agent("alice"), NOW),
            Classified::Close(close)
        );
        let chatty = Content::new(vec![Part::Text("done".into()), part]).unwrap();
        let ConsumeReason::MalformedPart(issues) = consumed(classify(&chatty, &group(), &agent("alice"), NOW)) else {
            panic!("a close with a text part")
        };
        assert_eq!(
            issues[0].to_string(),
            "content: expected a close's collective part alone"
        );
    }

    #[test]
    fn requests_before_their_deadline_are_candidates() {
        let g = classify(&request(AskOp::Gather, NOW + 1), &direct(), &agent("alice"), NOW);
        let Classified::Request(r) = g else { panic!("{g:?}") };
        assert_eq!((r.question.as_str(), r.op()), ("ok?", AskOp::Gather));
        let a = classify(&request(AskOp::AllGather, NOW + DAY), &group(), &agent("alice"), NOW);
        assert!(matches!(a, Classified::Request(_)));
    }

    #[test]
    fn requests_in_the_wrong_conversation_are_consumed() {
        let gather = request(AskOp::Gather, NOW + DAY);
        assert_eq!(
            consumed(classify(&gather, &group(), &agent("alice"), NOW)),
            ConsumeReason::WrongConversation
        );
        let elsewhere = Conversation::Direct { peer: agent("bob") };
        assert_eq!(
            consumed(classify(&gather, &elsewhere, &agent("alice"), NOW)),
            ConsumeReason::WrongConversation
        );
        let all = request(AskOp::AllGather, NOW + DAY);
        assert_eq!(
            consumed(classify(&all, &direct(), &agent("alice"), NOW)),
            ConsumeReason::WrongConversation
        );
        let outsider =
            Conversation::Group(GroupAddress::canonical(&agent("bob"), &[agent("carol"), agent("dave")]).unwrap());
        assert_eq!(
            consumed(classify(&all, &outsider, &agent("alice"), NOW)),
            ConsumeReason::WrongConversation
        );
    }

    #[test]
    fn a_request_whose_id_is_not_derived_from_its_sender_and_nonce_is_consumed() {
        // Sent by bob, but the id derives from alice.
        let c = request(AskOp::Gather, NOW + DAY);
        let bob = Conversation::Direct { peer: agent("bob") };
        assert_eq!(
            consumed(classify(&c, &bob, &agent("bob"), NOW)),
            ConsumeReason::IdNotDerived
        );
    }

    /// Review finding "Nonce on input": the spec's `id` "is `col_` followed by the base64url
    /// SHA-256 of `org.social-harness/collective-id`, a NUL, the requester's `agent:` address, a
    /// NUL and `nonce`". A nonce in another encoding is accepted when the id hashes it as
    /// received; a request whose id does not is still consumed.
    #[test]
    fn a_request_with_any_printable_nonce_is_checked_by_hashing_it_as_received() {
        let with_nonce = |nonce: &str, id_from: &str| {
            let mut part = build_request(
                AskOp::Gather,
                &agent("alice"),
                Nonce::parse(nonce).unwrap(),
                NOW,
                60,
                crate::harness::collective::tests::schema(),
            )
            .unwrap();
            part.id = CollectiveId::derive(&agent("alice"), &Nonce::parse(id_from).unwrap());
            // Through the wire form: the nonce is read back from the record's JSON.
            let json = request_content("ok?", part).unwrap().to_json();
            let text = crate::harness::canonical::to_canonical(&json);
            Content::from_json(&JsonValue::parse(&text).unwrap()).unwrap()
        };
        let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        for nonce in [
            b64,
            hex,
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            "n",
            "a \"quoted\" nonce ~",
        ] {
            let c = classify(&with_nonce(nonce, nonce), &direct(), &agent("alice"), NOW);
            let Classified::Request(r) = c else {
                panic!("{nonce}: {c:?}")
            };
            assert_eq!(r.part.nonce.as_str(), nonce);
        }
        // The same 32 bytes in another encoding are another nonce: the id must hash the text.
        assert_eq!(
            consumed(classify(&with_nonce(hex, b64), &direct(), &agent("alice"), NOW)),
            ConsumeReason::IdNotDerived
        );
        assert_eq!(
            consumed(classify(&with_nonce(b64, hex), &direct(), &agent("alice"), NOW)),
            ConsumeReason::IdNotDerived
        );
        // A nonce with a control character is not a nonce: the part is malformed.
        let bad = with_nonce("n", "n")
            .to_canonical()
            .replace(r#""nonce":"n""#, r#""nonce":"n\t""#);
        let bad = Content::from_json(&JsonValue::parse(&bad).unwrap()).unwrap();
        assert!(matches!(
            consumed(classify(&bad, &direct(), &agent("alice"), NOW)),
            ConsumeReason::MalformedPart(_)
        ));
    }

    #[test]
    fn deadlines_past_and_too_far() {
        let limit = NOW + 30 * DAY + HOUR;
        assert!(matches!(
            classify(&request(AskOp::Gather, limit), &direct(), &agent("alice"), NOW),
            Classified::Request(_)
        ));
        assert_eq!(
            consumed(classify(
                &request(AskOp::Gather, limit + 1),
                &direct(),
                &agent("alice"),
                NOW
            )),
            ConsumeReason::DeadlineTooFar
        );
        assert_eq!(
            consumed(classify(&request(AskOp::Gather, NOW), &direct(), &agent("alice"), NOW)),
            ConsumeReason::PastDeadline
        );
        // An all_gather request within the hour after its deadline is kept for its close.
        assert!(matches!(
            classify(&request(AskOp::AllGather, NOW), &group(), &agent("alice"), NOW),
            Classified::LateAllGatherRequest(_)
        ));
        assert!(matches!(
            classify(
                &request(AskOp::AllGather, NOW - HOUR + 1),
                &group(),
                &agent("alice"),
                NOW
            ),
            Classified::LateAllGatherRequest(_)
        ));
        assert_eq!(
            consumed(classify(
                &request(AskOp::AllGather, NOW - HOUR),
                &group(),
                &agent("alice"),
                NOW
            )),
            ConsumeReason::PastDeadline
        );
    }

    proptest::proptest! {
        #[test]
        fn any_content_classifies(v in crate::harness::canonical::tests::arb_json(), now in proptest::prelude::any::<u64>()) {
            let wrapped = JsonValue::Array(vec![
                JsonValue::object([("type", "text".into()), ("text", "q".into())]),
                JsonValue::object([("type", "data".into()), ("value", JsonValue::object([("org.social-harness/collective", v.clone())]))]),
            ]);
            for candidate in [v, wrapped] {
                let Ok(c) = Content::from_json(&candidate) else { continue };
                let collective = c.parts().iter().any(|p| matches!(p, Part::Data(v) if is_collective(v)));
                for conversation in [group(), direct()] {
                    let got = classify(&c, &conversation, &agent("alice"), now);
                    // Content without a collective part is a plain message, as it came.
                    if !collective {
                        proptest::prop_assert_eq!(&got, &Classified::Multicast(c.clone()));
                    }
                    // A request is one only with its collective part.
                    if let Classified::Request(_) = got {
                        proptest::prop_assert!(collective);
                    }
                    proptest::prop_assert_eq!(got, classify(&c, &conversation, &agent("alice"), now));
                }
            }
        }
    }
}
