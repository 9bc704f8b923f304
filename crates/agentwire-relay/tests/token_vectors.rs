//! The relay token's golden vectors (`tests/vectors/relay-token/`): every case verifies as
//! expected, every valid case's token is minted byte for byte, every invalid claim is refused.

use agentwire_relay::token::{mint, unverified_exp, verify, Claims, TokenErrorKind};
use serde_json::Value;
use std::path::PathBuf;

fn load(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/relay-token")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn secret(v: &Value) -> Vec<u8> {
    if let Some(text) = v["utf8"].as_str() {
        return text.as_bytes().to_vec();
    }
    let hex = v["hex"].as_str().expect("a secret is {utf8} or {hex}");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn claims(v: &Value) -> Claims {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    Claims {
        agent_id: v["agent_id"].as_str().unwrap().to_string(),
        exp: v["exp"].as_u64().unwrap(),
        origin: v.get("origin").map(|o| o.as_str().unwrap().to_string()),
        rooms: v.get("rooms").map(strings),
    }
}

fn kind(name: &str) -> TokenErrorKind {
    [
        TokenErrorKind::Missing,
        TokenErrorKind::Malformed,
        TokenErrorKind::Forged,
        TokenErrorKind::Expired,
        TokenErrorKind::Lifetime,
        TokenErrorKind::Claims,
        TokenErrorKind::Secret,
    ]
    .into_iter()
    .find(|k| k.name() == name)
    .unwrap_or_else(|| panic!("unknown kind {name}"))
}

#[test]
fn vectors() {
    let cases = load("vectors.json");
    let cases = cases.as_array().unwrap();
    let (mut valid, mut refused) = (0, 0);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let minted_with = secret(&case["secret"]);
        let secrets: Vec<Vec<u8>> = match case.get("verify_secrets") {
            Some(list) => list.as_array().unwrap().iter().map(secret).collect(),
            None => vec![minted_with.clone()],
        };
        let secrets: Vec<&[u8]> = secrets.iter().map(Vec::as_slice).collect();
        let token = case["token"].as_str().unwrap();
        let now = case["now_ms"].as_u64().unwrap();
        let life = case["max_lifetime_s"].as_u64().unwrap();
        let got = verify(token, &secrets, now, life);
        if let Some(want) = case["expect"].get("claims") {
            let want = claims(want);
            assert_eq!(got.as_ref(), Ok(&want), "{name}");
            assert_eq!(mint(&minted_with, &want).as_deref(), Ok(token), "{name}: minted");
            // What a client reads to renew it in time, without the secret.
            assert_eq!(unverified_exp(token), Some(want.exp), "{name}: unverified exp");
            valid += 1;
        } else {
            let want = kind(case["expect"]["error"].as_str().unwrap());
            let e = got.expect_err(name);
            assert_eq!(e.kind, want, "{name}: {e}");
            refused += 1;
        }
    }
    assert!(valid >= 8 && refused >= 30, "{valid} valid, {refused} refused");
}

#[test]
fn invalid_claims_are_not_minted() {
    let file = load("invalid-claims.json");
    let good = secret(&file["secret"]);
    let ok = claims(&file["valid_claims"]);
    assert!(mint(&good, &ok).is_ok());
    let short = mint(&secret(&file["short_secret"]), &ok).unwrap_err();
    assert_eq!(short.kind, TokenErrorKind::Secret);
    let invalid = file["invalid"].as_array().unwrap();
    assert!(invalid.len() >= 20);
    for case in invalid {
        let name = case["name"].as_str().unwrap();
        let v = &case["claims"];
        // `exp` over u64 cannot be a `Claims`; 2^53 fits and must be refused.
        let e = mint(&good, &claims(v)).expect_err(name);
        assert_eq!(e.kind, TokenErrorKind::Claims, "{name}: {e}");
    }
}
