//! Fuzzes relay token verification: it must never panic, never accept a token it was not given a
//! signature for, never put a secret or a signature in a message, and whatever it accepts must
//! be valid, unexpired, within the lifetime (plus `LIFETIME_LEEWAY_S`), and mint back to a token that verifies the same.
//!
//! Input: a flags byte, 8 bytes of `now` (ms, little-endian), 4 bytes of `max_lifetime_s`, then
//! the body. Flags bit 0: verify with two secrets (rotation) instead of one. Bit 1: the body is
//! claims JSON that the harness signs (with the second secret when bit 2 is set), so the claims
//! parser is reached; otherwise the body is the token itself (lossy UTF-8), which must be
//! refused since nothing signed it.
#![no_main]

use agentwire_core::base64url;
use agentwire_relay::token::{mint, verify, TokenErrorKind, LIFETIME_LEEWAY_S};
use hmac::{Hmac, Mac};
use libfuzzer_sys::fuzz_target;
use sha2::Sha256;

const SECRET: &[u8] = b"fuzz-secret-0123456789abcdef-0123";
const OLD: &[u8] = b"fuzz-secret-old-fedcba9876543210x";

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<13>() else {
        return;
    };
    let flags = head[0];
    let mut now = [0u8; 8];
    now.copy_from_slice(&head[1..9]);
    let now = u64::from_le_bytes(now);
    let mut life = [0u8; 4];
    life.copy_from_slice(&head[9..13]);
    let life = u64::from(u32::from_le_bytes(life));

    let secrets: &[&[u8]] = if flags & 1 != 0 { &[SECRET, OLD] } else { &[SECRET] };
    let signing = flags & 2 != 0;
    let token = if signing {
        let key = if flags & 4 != 0 { OLD } else { SECRET };
        let payload = base64url::encode(body);
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
        mac.update(payload.as_bytes());
        format!("{payload}.{}", base64url::encode(&mac.finalize().into_bytes()))
    } else {
        String::from_utf8_lossy(body).into_owned()
    };

    match verify(&token, secrets, now, life) {
        Ok(claims) => {
            assert!(signing, "accepted a token nobody signed: {token:?}");
            claims.validate().expect("accepted claims are valid");
            let now_s = now / 1000;
            // Within the lifetime, plus the leeway for clock skew `verify` allows.
            assert!(now_s < claims.exp && claims.exp <= now_s.saturating_add(life).saturating_add(LIFETIME_LEEWAY_S));
            let again = mint(SECRET, &claims).expect("accepted claims mint");
            assert_eq!(verify(&again, secrets, now, life).as_ref(), Ok(&claims));
        }
        Err(e) => {
            let text = e.to_string();
            assert!(!e.message.is_empty());
            for secret in [SECRET, OLD] {
                let has = |hay: &[u8]| hay.windows(secret.len()).any(|w| w == secret);
                // Unless the input itself spelled the secret (in a claim that is echoed).
                assert!(!has(text.as_bytes()) || has(body), "{text}");
            }
            if let Some((_, sig)) = token.rsplit_once('.') {
                // A signature's shape (43 base64url characters), so not the message's own words.
                if sig.len() == 43 && base64url::decode(sig).is_ok() {
                    assert!(!text.contains(sig), "{text}");
                }
            }
            if signing && e.kind == TokenErrorKind::Forged {
                // Signed with a secret the verifier holds: only a secret outside the list forges.
                assert!(flags & 4 != 0 && flags & 1 == 0, "{text}");
            }
        }
    }
});
