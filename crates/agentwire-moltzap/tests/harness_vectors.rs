//! `tests/vectors/moltzap-harness/vectors.json`: collective ids (of minted nonces and of nonces
//! received in other encodings), the canonical content of every post shape, collective parts read
//! leniently, and malformed collective parts (see that folder's README).

use agentwire_moltzap::harness::collective::{
    close_content, is_collective, multicast_content, request_content, response_content,
};
use agentwire_moltzap::harness::{
    to_canonical, AgentAddress, CollectiveId, CollectivePart, Content, JsonValue, Nonce, Part,
};
use std::path::PathBuf;

fn vectors() -> JsonValue {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/moltzap-harness/vectors.json");
    JsonValue::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn field<'a>(v: &'a JsonValue, key: &str) -> &'a JsonValue {
    &v.as_object().unwrap()[key]
}

fn text<'a>(v: &'a JsonValue, key: &str) -> &'a str {
    field(v, key).as_str().unwrap()
}

#[test]
fn collective_ids() {
    let v = vectors();
    for case in field(&v, "collectiveIds").as_array().unwrap() {
        let hex = text(case, "nonceBytesHex");
        let bytes: [u8; 32] = std::array::from_fn(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap());
        let nonce = Nonce::from_bytes(&bytes);
        assert_eq!(nonce.as_str(), text(case, "nonce"));
        assert_eq!(Nonce::parse(text(case, "nonce")), Some(nonce.clone()));
        let requester = AgentAddress::parse(text(case, "requester")).unwrap();
        let id = CollectiveId::derive(&requester, &nonce);
        assert_eq!(id.as_str(), text(case, "id"));
        assert_eq!(CollectiveId::parse(text(case, "id")), Some(id));
    }
}

/// Review finding "Nonce on input": a nonce another implementation encoded differently is read
/// as its text, and the id is the hash of that text.
#[test]
fn received_nonces_are_hashed_as_their_text() {
    let v = vectors();
    let cases = field(&v, "receivedNonces").as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for case in cases {
        let received = text(case, "nonce");
        let nonce = Nonce::parse(received).unwrap_or_else(|| panic!("{received}"));
        assert_eq!(nonce.as_str(), received);
        assert!(!nonce.is_minted_form(), "{received}");
        let requester = AgentAddress::parse(text(case, "requester")).unwrap();
        let id = CollectiveId::parse(text(case, "id")).unwrap();
        assert_eq!(CollectiveId::derive(&requester, &nonce), id, "{received}");
        assert!(id.derives_from(&requester, &nonce));
    }
}

/// Review finding "The collective data part": keys beside the collective key are ignored on
/// input; the part is written with the key alone.
#[test]
fn lenient_parts_read_as_the_key_alone() {
    let v = vectors();
    let cases = field(&v, "lenientParts").as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for case in cases {
        let name = text(case, "name");
        let value = field(case, "value");
        assert!(is_collective(value), "{name}");
        let part = CollectivePart::parse(value).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let reads = field(case, "reads");
        assert_eq!(to_canonical(&part.to_json()), to_canonical(reads), "{name}");
        assert_ne!(to_canonical(value), to_canonical(reads), "{name}");
        if let CollectivePart::Request(r) = &part {
            let alice = AgentAddress::parse("agent:alice").unwrap();
            assert!(r.id.derives_from(&alice, &r.nonce), "{name}");
        }
    }
}

#[test]
fn contents_are_canonical_and_rebuild_from_their_parts() {
    let v = vectors();
    let cases = field(&v, "contents").as_array().unwrap();
    assert_eq!(cases.len(), 8);
    for case in cases {
        let name = text(case, "name");
        let content = Content::from_json(field(case, "content")).unwrap();
        let canonical = text(case, "canonical");
        assert_eq!(content.to_canonical(), canonical, "{name}");
        assert_eq!(
            content.canonical_len() as f64,
            field(case, "bytes").as_number().unwrap().get(),
            "{name}"
        );
        // The same content parsed from its canonical text.
        assert_eq!(
            Content::from_json(&JsonValue::parse(canonical).unwrap()).unwrap(),
            content
        );
        // Read the part, then rebuild the content from the typed values.
        let parts = content.parts();
        let Some(Part::Data(value)) = parts.last() else {
            panic!("{name}")
        };
        assert!(is_collective(value));
        let rebuilt = match CollectivePart::parse(value).unwrap() {
            CollectivePart::Multicast => {
                let Part::Text(t) = &parts[0] else { panic!("{name}") };
                multicast_content(t)
            }
            CollectivePart::Request(r) => {
                let Part::Text(q) = &parts[0] else { panic!("{name}") };
                request_content(q, r)
            }
            CollectivePart::Response(r) => response_content(r),
            CollectivePart::Close(c) => close_content(c),
        };
        assert_eq!(rebuilt.unwrap().to_canonical(), canonical, "{name}");
    }
}

#[test]
fn malformed_parts_are_refused() {
    let v = vectors();
    for case in field(&v, "malformedParts").as_array().unwrap() {
        let value = field(case, "value");
        assert!(is_collective(value));
        assert!(CollectivePart::parse(value).is_err(), "{}", text(case, "name"));
    }
}
