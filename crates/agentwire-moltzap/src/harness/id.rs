//! Identities: [`PostId`] (opaque, minted per post), [`Nonce`] (minted as 32 random bytes,
//! base64url on the wire) and [`CollectiveId`] (derived from the requester and the nonce).
//!
//! `CollectiveId` = `col_` + base64url (unpadded) of
//! SHA-256(`org.social-harness/collective-id` ‖ 0x00 ‖ requester's `agent:` address ‖ 0x00 ‖
//! nonce), where the address and the nonce enter the hash as the UTF-8 bytes of their wire text
//! (the nonce as its 43 base64url characters, not the 32 bytes they encode). So the check on an
//! inbound request hashes the strings exactly as the record carries them, and a nonce another
//! implementation encoded differently (any printable ASCII text up to [`MAX_NONCE_LEN`] bytes)
//! is read as it is: the id check, not the nonce's form, decides.

use super::address::AgentAddress;
use agentwire_core::{base64url, Entropy};
use sha2::{Digest, Sha256};
use std::fmt;

/// The domain separator that starts the hash input of a [`CollectiveId`].
pub const COLLECTIVE_ID_DOMAIN: &str = "org.social-harness/collective-id";

/// An opaque post identity, minted before a send binds its intent: a UUID v4 from the entropy
/// input, a new one for every call. A recovered intent keeps the one it was bound with
/// ([`PostId::parse`] reads it back).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PostId(String);

impl PostId {
    /// A fresh identity (16 bytes of entropy).
    pub fn mint(entropy: &mut (impl Entropy + ?Sized)) -> PostId {
        PostId(entropy.uuid_v4())
    }

    /// A stored or received identity: 1 to 128 printable ASCII characters (no space); `None`
    /// otherwise. Identities from other clients are kept as they are, whatever their form.
    pub fn parse(s: &str) -> Option<PostId> {
        ((1..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())).then(|| PostId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The longest nonce read on input, in bytes.
pub const MAX_NONCE_LEN: usize = 256;

/// A gather or all_gather request's nonce, as its wire text. Minted as 32 random bytes carried
/// as 43 base64url characters; read on input as any printable ASCII text (see [`Nonce::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Nonce(String);

impl Nonce {
    /// A fresh nonce from the entropy input.
    pub fn mint(entropy: &mut (impl Entropy + ?Sized)) -> Nonce {
        let mut b = [0u8; 32];
        entropy.fill(&mut b);
        Nonce::from_bytes(&b)
    }

    pub fn from_bytes(bytes: &[u8; 32]) -> Nonce {
        Nonce(base64url::encode(bytes))
    }

    /// The wire text as received: 1 to [`MAX_NONCE_LEN`] bytes of printable ASCII (0x20 to
    /// 0x7e, no control characters), else `None`. Any such text is kept exactly as it is,
    /// whatever its encoding, since the id is checked by hashing this text
    /// ([`CollectiveId::derives_from`]); what this endpoint mints is always the 43 base64url
    /// characters of 32 bytes ([`Nonce::is_minted_form`]).
    pub fn parse(s: &str) -> Option<Nonce> {
        ((1..=MAX_NONCE_LEN).contains(&s.len()) && s.bytes().all(|b| (0x20..=0x7e).contains(&b)))
            .then(|| Nonce(s.to_owned()))
    }

    /// True when the text is the form [`Nonce::mint`] makes: canonical unpadded base64url of
    /// exactly 32 bytes.
    pub fn is_minted_form(&self) -> bool {
        self.0.len() == 43 && base64url::decode(&self.0).is_ok_and(|b| b.len() == 32)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `col_` followed by 43 base64url characters: a SHA-256 digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CollectiveId(String);

impl CollectiveId {
    /// The id of the operation `requester` starts with `nonce` (see the module documentation).
    pub fn derive(requester: &AgentAddress, nonce: &Nonce) -> CollectiveId {
        let mut h = Sha256::new();
        h.update(COLLECTIVE_ID_DOMAIN.as_bytes());
        h.update([0]);
        h.update(requester.as_str().as_bytes());
        h.update([0]);
        h.update(nonce.as_str().as_bytes());
        CollectiveId(format!("col_{}", base64url::encode(&h.finalize())))
    }

    /// A random id, for a refusal that names no operation of its own (an answer refused
    /// before it matched a request).
    pub fn mint(entropy: &mut (impl Entropy + ?Sized)) -> CollectiveId {
        let mut b = [0u8; 32];
        entropy.fill(&mut b);
        CollectiveId(format!("col_{}", base64url::encode(&b)))
    }

    /// `col_` and the canonical base64url of 32 bytes, else `None`.
    pub fn parse(s: &str) -> Option<CollectiveId> {
        let rest = s.strip_prefix("col_")?;
        (rest.len() == 43 && base64url::decode(rest).is_ok_and(|b| b.len() == 32)).then(|| CollectiveId(s.to_owned()))
    }

    /// True when this is the id `requester` derives from `nonce`.
    pub fn derives_from(&self, requester: &AgentAddress, nonce: &Nonce) -> bool {
        *self == CollectiveId::derive(requester, nonce)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CollectiveId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_core::SeededEntropy;
    use proptest::prelude::*;

    #[test]
    fn distinct_calls_mint_distinct_post_ids() {
        let mut e = SeededEntropy::new(1);
        let (a, b) = (PostId::mint(&mut e), PostId::mint(&mut e));
        assert_ne!(a, b);
        assert_eq!(a.to_string(), a.as_str());
        assert_eq!(PostId::parse(a.as_str()), Some(a));
        assert_eq!(PostId::parse(""), None);
        assert_eq!(PostId::parse("a b"), None);
    }

    #[test]
    fn collective_id_vector() {
        // The nonce is 32 bytes 0x00..0x1f; the vector is also in tests/vectors/moltzap-harness/.
        let bytes: [u8; 32] = std::array::from_fn(|i| i as u8);
        let nonce = Nonce::from_bytes(&bytes);
        assert_eq!(nonce.as_str(), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
        let alice = AgentAddress::parse("agent:alice").unwrap();
        let id = CollectiveId::derive(&alice, &nonce);
        // sha256(b"org.social-harness/collective-id\0agent:alice\0AAEC...Hh8"), base64url.
        let mut h = Sha256::new();
        h.update(b"org.social-harness/collective-id\x00agent:alice\x00AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
        assert_eq!(id.as_str(), format!("col_{}", base64url::encode(&h.finalize())));
        assert_eq!(id.as_str(), "col_kneDoLySsE9a4305pOWapwnl273bbIt99n0dL02OgaM");
        assert_eq!(id.as_str().len(), 47);
        assert!(id.derives_from(&alice, &nonce));
        assert!(!id.derives_from(&AgentAddress::parse("agent:bob").unwrap(), &nonce));
        assert_eq!(CollectiveId::parse(id.as_str()), Some(id));
    }

    #[test]
    fn collective_id_parse_is_strict() {
        let ok = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
        assert!(CollectiveId::parse(&format!("col_{ok}")).is_some());
        assert!(CollectiveId::parse(&format!("col_{}", &ok[..42])).is_none());
        assert!(CollectiveId::parse(&format!("col_{ok}=")).is_none());
        // 43 characters that are not base64url.
        assert!(CollectiveId::parse(&format!("col_{}!", &ok[..42])).is_none());
        assert!(CollectiveId::parse(&format!("COL_{ok}")).is_none());
        assert!(CollectiveId::parse(ok).is_none());
    }

    /// Review finding "Nonce on input": any printable ASCII nonce is read as it is, and the id
    /// is checked by hashing that text.
    #[test]
    fn nonce_on_input_is_any_printable_ascii_text() {
        let ok = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
        let base64_32 = Nonce::parse(ok).unwrap();
        assert!(base64_32.is_minted_form());
        for other in [
            &ok[..42],
            &format!("{ok}="),
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9", // trailing bits
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
            "a nonce, with spaces & \"quotes\"",
            "~",
            &"x".repeat(MAX_NONCE_LEN),
        ] {
            let n = Nonce::parse(other).unwrap_or_else(|| panic!("{other}"));
            assert_eq!(n.as_str(), other);
            assert!(!n.is_minted_form(), "{other}");
        }
        for refused in [
            "",
            "tab\there",
            "line\n",
            "nul\0",
            "del\x7f",
            "café",
            &"x".repeat(MAX_NONCE_LEN + 1),
        ] {
            assert_eq!(Nonce::parse(refused), None, "{refused:?}");
        }
        // The id hashes the nonce's text as received: a hex nonce of the same 32 bytes is a
        // different nonce with a different id.
        let alice = AgentAddress::parse("agent:alice").unwrap();
        let hex = Nonce::parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f").unwrap();
        let id = CollectiveId::derive(&alice, &hex);
        let mut h = Sha256::new();
        h.update(b"org.social-harness/collective-id\x00agent:alice\x00000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
        assert_eq!(id.as_str(), format!("col_{}", base64url::encode(&h.finalize())));
        assert!(id.derives_from(&alice, &hex));
        assert!(!id.derives_from(&alice, &base64_32));
        assert!(!CollectiveId::derive(&alice, &base64_32).derives_from(&alice, &hex));
    }

    proptest! {
        #[test]
        fn parsers_take_any_text(s in any::<String>()) {
            let _ = (Nonce::parse(&s), CollectiveId::parse(&s), PostId::parse(&s));
        }

        #[test]
        fn printable_ascii_nonces_are_read_as_they_are(s in "[ -~]{1,256}") {
            let n = Nonce::parse(&s).unwrap();
            prop_assert_eq!(n.as_str(), s.as_str());
            let alice = AgentAddress::parse("agent:alice").unwrap();
            prop_assert!(CollectiveId::derive(&alice, &n).derives_from(&alice, &n));
        }

        #[test]
        fn minted_ids_parse(seed in any::<u64>()) {
            let mut e = SeededEntropy::new(seed);
            let n = Nonce::mint(&mut e);
            prop_assert!(n.is_minted_form());
            prop_assert_eq!(Nonce::parse(n.as_str()), Some(n.clone()));
            let id = CollectiveId::mint(&mut e);
            prop_assert_eq!(CollectiveId::parse(id.as_str()), Some(id));
        }
    }
}
