use super::*;
use proptest::prelude::*;

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
const OLD: &[u8] = b"fedcba9876543210fedcba9876543210";
const NOW: Millis = 1_750_000_000_500;
const NOW_S: u64 = 1_750_000_000;

fn claims() -> Claims {
    Claims {
        agent_id: "alice".into(),
        exp: NOW_S + 300,
        origin: Some("https://app.example.com".into()),
        rooms: Some(vec!["lobby".into(), "ops".into()]),
    }
}

/// A token over any payload text, signed with `secret` (what a buggy or hostile minter sends).
fn sign(secret: &[u8], json: &str) -> String {
    let payload = base64url::encode(json.as_bytes());
    let sig = HmacSha256::new_from_slice(secret)
        .unwrap()
        .chain_update(payload.as_bytes())
        .finalize()
        .into_bytes();
    format!("{payload}.{}", base64url::encode(&sig))
}

fn kind(r: Result<Claims, TokenError>) -> TokenErrorKind {
    r.expect_err("refused").kind
}

#[test]
fn mint_then_verify() {
    let token = mint(SECRET, &claims()).unwrap();
    assert!(token.bytes().all(is_token_byte));
    assert_eq!(token.split('.').nth(1).unwrap().len(), 43);
    assert_eq!(verify(&token, &[SECRET], NOW, 300).unwrap(), claims());
    let json = base64url::decode(token.split('.').next().unwrap()).unwrap();
    assert_eq!(
        String::from_utf8(json).unwrap(),
        format!(
            r#"{{"agent_id":"alice","exp":{},"origin":"https://app.example.com","rooms":["lobby","ops"]}}"#,
            NOW_S + 300
        )
    );
    let bare = Claims::new("alice", NOW_S + 1);
    let token = mint(SECRET, &bare).unwrap();
    let json = base64url::decode(token.split('.').next().unwrap()).unwrap();
    assert_eq!(
        json,
        format!(r#"{{"agent_id":"alice","exp":{}}}"#, NOW_S + 1).as_bytes()
    );
    assert_eq!(verify(&token, &[SECRET], NOW, 300).unwrap(), bare);
}

#[test]
fn rotation_takes_either_secret() {
    let old = mint(OLD, &claims()).unwrap();
    let new = mint(SECRET, &claims()).unwrap();
    for token in [&old, &new] {
        assert_eq!(verify(token, &[SECRET, OLD], NOW, 300).unwrap(), claims());
        assert_eq!(verify(token, &[OLD, SECRET], NOW, 300).unwrap(), claims());
    }
    assert_eq!(kind(verify(&old, &[SECRET], NOW, 300)), TokenErrorKind::Forged);
}

#[test]
fn secrets_are_checked_first() {
    let token = mint(SECRET, &claims()).unwrap();
    assert_eq!(kind(verify(&token, &[], NOW, 300)), TokenErrorKind::Secret);
    assert_eq!(
        kind(verify(&token, &[SECRET, OLD, SECRET], NOW, 300)),
        TokenErrorKind::Secret
    );
    assert_eq!(
        kind(verify(&token, &[SECRET, &SECRET[1..]], NOW, 300)),
        TokenErrorKind::Secret
    );
    assert_eq!(kind(verify("", &[b"short"], NOW, 300)), TokenErrorKind::Secret);
    assert_eq!(mint(&SECRET[1..], &claims()).unwrap_err().kind, TokenErrorKind::Secret);
    assert!(mint(&[0u8; MIN_SECRET_LEN], &claims()).is_ok(), "any bytes, 32 of them");
}

#[test]
fn expiry_and_lifetime_boundaries() {
    let c = Claims::new("alice", NOW_S + 60);
    let token = mint(SECRET, &c).unwrap();
    assert!(verify(&token, &[SECRET], (NOW_S + 59) * 1000 + 999, 60).is_ok());
    assert_eq!(
        kind(verify(&token, &[SECRET], (NOW_S + 60) * 1000, 60)),
        TokenErrorKind::Expired
    );
    assert_eq!(kind(verify(&token, &[SECRET], u64::MAX, 60)), TokenErrorKind::Expired);
    assert!(
        verify(&token, &[SECRET], NOW, 60).is_ok(),
        "exp == now + max is allowed"
    );
    // The lifetime check allows LIFETIME_LEEWAY_S of clock skew: a backend ahead of the relay
    // minting max_lifetime_s exactly.
    assert!(verify(&token, &[SECRET], NOW, 60 - LIFETIME_LEEWAY_S).is_ok());
    let skewed = mint(SECRET, &Claims::new("alice", NOW_S + 3600 + LIFETIME_LEEWAY_S)).unwrap();
    assert!(verify(&skewed, &[SECRET], NOW, 3600).is_ok(), "minted 60 s ahead");
    let beyond = mint(SECRET, &Claims::new("alice", NOW_S + 3600 + LIFETIME_LEEWAY_S + 1)).unwrap();
    assert_eq!(kind(verify(&beyond, &[SECRET], NOW, 3600)), TokenErrorKind::Lifetime);
    // The backend's clock 20 ms ahead, across a second: it mints at NOW_S + 1.010 s with a
    // lifetime of 3600 s, the relay checks at NOW_S + 0.990 s (refused before the leeway).
    let ahead = mint(SECRET, &Claims::new("alice", NOW_S + 1 + 3600)).unwrap();
    assert!(
        verify(&ahead, &[SECRET], NOW_S * 1000 + 990, 3600).is_ok(),
        "minted 20 ms ahead"
    );
    assert!(verify(&token, &[SECRET], 0, u64::MAX).is_ok(), "no overflow");
    let long = mint(SECRET, &Claims::new("alice", MAX_EXP)).unwrap();
    assert_eq!(kind(verify(&long, &[SECRET], NOW, 3600)), TokenErrorKind::Lifetime);
}

#[test]
fn malformed_tokens() {
    let token = mint(SECRET, &claims()).unwrap();
    let (payload, sig) = token.split_once('.').unwrap();
    let check = |t: &str, want: TokenErrorKind| {
        let e = verify(t, &[SECRET], NOW, 300).unwrap_err();
        assert_eq!(e.kind, want, "{t:?}: {e}");
    };
    check("", TokenErrorKind::Missing);
    check(&"a".repeat(MAX_TOKEN_LEN + 1), TokenErrorKind::Malformed);
    check(&format!("{payload}.{sig}="), TokenErrorKind::Malformed);
    check(&format!("{payload} .{sig}"), TokenErrorKind::Malformed);
    check(&format!("{payload}.{sig}.x"), TokenErrorKind::Malformed);
    check(&format!("{payload}.{sig}."), TokenErrorKind::Malformed);
    check(&format!(".{sig}"), TokenErrorKind::Malformed);
    check(&format!("{payload}."), TokenErrorKind::Malformed);
    check(payload, TokenErrorKind::Malformed);
    check(&format!("{payload}.{}", &sig[..42]), TokenErrorKind::Malformed);
    check(&format!("{payload}.{sig}AA"), TokenErrorKind::Malformed);
    check(&format!("{payload}A.{sig}"), TokenErrorKind::Malformed);
    check("é.x", TokenErrorKind::Malformed);
    // Standard base64's `+` and `/` are not base64url.
    check(&format!("+{}.{sig}", &payload[1..]), TokenErrorKind::Malformed);
    check(&format!("{payload}.{}/", &sig[..42]), TokenErrorKind::Malformed);
}

#[test]
fn forged_before_claims() {
    // Unknown claims under the wrong secret: `forged`, the claims are never read.
    let token = sign(OLD, r#"{"agent_id":"alice","exp":1,"admin":true}"#);
    assert_eq!(kind(verify(&token, &[SECRET], NOW, 300)), TokenErrorKind::Forged);
    // A valid payload under another token's signature.
    let a = mint(SECRET, &claims()).unwrap();
    let b = mint(SECRET, &Claims::new("mallory", NOW_S + 300)).unwrap();
    let spliced = format!("{}.{}", b.split('.').next().unwrap(), a.split('.').nth(1).unwrap());
    assert_eq!(kind(verify(&spliced, &[SECRET], NOW, 300)), TokenErrorKind::Forged);
}

#[test]
fn claims_are_parsed_strictly() {
    let exp = NOW_S + 10;
    let ok = |json: &str| verify(&sign(SECRET, json), &[SECRET], NOW, 300);
    // Any key order and whitespace are fine.
    let reordered = ok(&format!(r#" {{ "rooms" : ["r"], "exp" : {exp}, "agent_id" : "a" }} "#)).unwrap();
    assert_eq!(reordered.rooms, Some(vec!["r".to_string()]));
    assert_eq!(
        ok(&format!(r#"{{"agent_id":"\u0061","exp":{exp}}}"#)).unwrap().agent_id,
        "a"
    );
    for json in [
        format!(r#"{{"agent_id":"a","exp":{exp},"admin":true}}"#),
        format!(r#"{{"agent_id":"a","agent_id":"b","exp":{exp}}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"origin":null}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"rooms":null}}"#),
        format!(r#"{{"agent_id":"a","exp":"{exp}"}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp}.0}}"#),
        r#"{"agent_id":"a","exp":1.75e9}"#.to_string(),
        r#"{"agent_id":"a","exp":-1}"#.to_string(),
        r#"{"agent_id":"a","exp":18446744073709551616}"#.to_string(),
        format!(r#"{{"agent_id":7,"exp":{exp}}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"rooms":"r"}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"rooms":[1]}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"rooms":[["r"]]}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"rooms":[]}}"#),
        format!(r#"{{"agent_id":"a","exp":{exp},"origin":"https://x.com/"}}"#),
        format!(r#"{{"agent_id":"a/b","exp":{exp}}}"#),
        format!(r#"{{"agent_id":"","exp":{exp}}}"#),
        format!(r#"{{"exp":{exp}}}"#),
        r#"{"agent_id":"a"}"#.to_string(),
        format!(r#"{{"agent_id":"a","exp":{exp}}} x"#),
        format!(r#"[{{"agent_id":"a","exp":{exp}}}]"#),
        format!(
            r#"{{"agent_id":"a","exp":{exp},"x":{}}}"#,
            "[".repeat(200) + &"]".repeat(200)
        ),
        "null".to_string(),
        "".to_string(),
        "{".to_string(),
    ] {
        if json.is_empty() {
            // An empty payload is an empty part: malformed, before the signature.
            assert_eq!(kind(ok(&json)), TokenErrorKind::Malformed);
            continue;
        }
        let e = ok(&json).unwrap_err();
        assert_eq!(e.kind, TokenErrorKind::Claims, "{json}: {e}");
    }
    // Invalid UTF-8 in the payload, signed.
    let payload = base64url::encode(b"{\"agent_id\":\"\xff\",\"exp\":1}");
    let sig = HmacSha256::new_from_slice(SECRET)
        .unwrap()
        .chain_update(payload.as_bytes())
        .finalize()
        .into_bytes();
    let token = format!("{payload}.{}", base64url::encode(&sig));
    assert_eq!(kind(verify(&token, &[SECRET], NOW, 300)), TokenErrorKind::Claims);
}

#[test]
fn mint_refuses_invalid_claims() {
    let with = |f: &dyn Fn(&mut Claims)| {
        let mut c = claims();
        f(&mut c);
        mint(SECRET, &c)
    };
    type Edit = Box<dyn Fn(&mut Claims)>;
    let refused: Vec<(&str, Edit)> = vec![
        ("empty agent", Box::new(|c| c.agent_id.clear())),
        ("long agent", Box::new(|c| c.agent_id = "a".repeat(MAX_ID_LEN + 1))),
        ("agent slash", Box::new(|c| c.agent_id = "a/b".into())),
        ("agent space", Box::new(|c| c.agent_id = "a b".into())),
        ("agent unicode", Box::new(|c| c.agent_id = "é".into())),
        ("exp", Box::new(|c| c.exp = MAX_EXP + 1)),
        ("origin path", Box::new(|c| c.origin = Some("https://a.com/".into()))),
        ("origin upper", Box::new(|c| c.origin = Some("https://A.com".into()))),
        ("origin scheme", Box::new(|c| c.origin = Some("a.com".into()))),
        ("origin null", Box::new(|c| c.origin = Some("null".into()))),
        ("origin empty host", Box::new(|c| c.origin = Some("https://".into()))),
        ("origin port 0", Box::new(|c| c.origin = Some("https://a.com:0".into()))),
        (
            "origin port big",
            Box::new(|c| c.origin = Some("https://a.com:65536".into())),
        ),
        (
            "origin port lead",
            Box::new(|c| c.origin = Some("https://a.com:080".into())),
        ),
        (
            "origin port empty",
            Box::new(|c| c.origin = Some("https://a.com:".into())),
        ),
        (
            "origin userinfo",
            Box::new(|c| c.origin = Some("https://u@a.com".into())),
        ),
        ("origin query", Box::new(|c| c.origin = Some("https://a.com?x".into()))),
        ("origin v6 junk", Box::new(|c| c.origin = Some("http://[::1]x".into()))),
        ("origin v6 empty", Box::new(|c| c.origin = Some("http://[]".into()))),
        (
            "origin long",
            Box::new(|c| c.origin = Some(format!("https://{}", "a".repeat(MAX_ORIGIN_LEN)))),
        ),
        ("no rooms", Box::new(|c| c.rooms = Some(vec![]))),
        (
            "too many rooms",
            Box::new(|c| c.rooms = Some((0..=MAX_ROOMS).map(|i| i.to_string()).collect())),
        ),
        (
            "empty room",
            Box::new(|c| c.rooms = Some(vec!["a".into(), String::new()])),
        ),
        (
            "long room",
            Box::new(|c| c.rooms = Some(vec!["é".repeat(MAX_ID_LEN / 2 + 1)])),
        ),
        ("room slash", Box::new(|c| c.rooms = Some(vec!["a/b".into()]))),
        ("room comma", Box::new(|c| c.rooms = Some(vec!["a,b".into()]))),
        ("room control", Box::new(|c| c.rooms = Some(vec!["a\u{85}".into()]))),
        ("room twice", Box::new(|c| c.rooms = Some(vec!["a".into(), "a".into()]))),
        (
            "too long a token",
            Box::new(|c| c.rooms = Some((0..MAX_ROOMS).map(|i| format!("{i:0>50}")).collect())),
        ),
    ];
    for (name, f) in refused {
        let e = with(&*f).expect_err(name);
        assert_eq!(e.kind, TokenErrorKind::Claims, "{name}: {e}");
    }
    for origin in [
        "http://localhost:5173",
        "https://app.example.com",
        "http://127.0.0.1",
        "http://[::1]:8080",
        "chrome-extension://abcdef",
        "https://a.com:65535",
    ] {
        assert!(with(&|c| c.origin = Some(origin.into())).is_ok(), "{origin}");
    }
    assert!(with(&|c| c.rooms = Some(vec!["café \"main\" \\ ü".into()])).is_ok());
    assert!(with(&|c| c.agent_id = "a-Z_0.9:x".into()).is_ok());
    assert!(with(&|c| c.agent_id = "a".repeat(MAX_ID_LEN)).is_ok());
}

#[test]
fn messages_hold_neither_secret_nor_signature() {
    let token = mint(SECRET, &claims()).unwrap();
    let sig = token.split('.').nth(1).unwrap();
    let secret = std::str::from_utf8(SECRET).unwrap();
    let mut errors = vec![
        verify(&token, &[OLD], NOW, 300).unwrap_err(),
        verify(&token, &[SECRET], NOW + 10_000_000, 300).unwrap_err(),
        verify(&token, &[SECRET], NOW, 10).unwrap_err(),
        verify(&format!("{token}A"), &[SECRET], NOW, 300).unwrap_err(),
        verify(&format!("{token}.x"), &[SECRET], NOW, 300).unwrap_err(),
        verify(&token, &[&SECRET[..31]], NOW, 300).unwrap_err(),
    ];
    errors.push(mint(&SECRET[..31], &claims()).unwrap_err());
    for e in errors {
        let text = e.to_string();
        assert!(!text.contains(sig) && !text.contains(&sig[..20]), "{text}");
        assert!(!text.contains(secret) && !text.contains(&secret[..16]), "{text}");
        assert!(text.starts_with(&format!("relay token {}: ", e.kind.name())), "{text}");
    }
}

#[test]
fn unverified_exp_reads_exp_only() {
    let token = mint(SECRET, &claims()).unwrap();
    assert_eq!(unverified_exp(&token), Some(NOW_S + 300));
    // Unsigned, forged or expired: still read (the relay is the one that verifies).
    assert_eq!(unverified_exp(&sign(OLD, r#"{"agent_id":"a","exp":5}"#)), Some(5));
    assert_eq!(
        unverified_exp(&format!("{}.x", base64url::encode(br#"{"exp":7}"#))),
        Some(7)
    );
    let over = format!(
        "{}.x",
        base64url::encode(format!(r#"{{"exp":7,"p":"{}"}}"#, "a".repeat(4096)).as_bytes())
    );
    for not_a_token in [
        "sk_switch_agent_key".to_owned(),
        String::new(),
        format!("{}.x", base64url::encode(br#"{"exp":1.5}"#)),
        format!("{}.x", base64url::encode(br#"{"exp":"5"}"#)),
        format!("{}.x", base64url::encode(br#"{"exp":-5}"#)),
        format!("{}.x", base64url::encode(br#"{"agent_id":"a"}"#)),
        format!("{}.x", base64url::encode(br#"[{"exp":5}]"#)),
        format!("{}.x", base64url::encode(br#"{"a":[[[1]]],"exp":5}"#)),
        format!("{}.x", base64url::encode(b"\xff\xfe")),
        over,
    ] {
        assert_eq!(unverified_exp(&not_a_token), None, "{not_a_token:.60}");
    }
}

#[test]
fn kind_names() {
    let all = [
        (TokenErrorKind::Missing, "missing"),
        (TokenErrorKind::Malformed, "malformed"),
        (TokenErrorKind::Forged, "forged"),
        (TokenErrorKind::Expired, "expired"),
        (TokenErrorKind::Lifetime, "lifetime"),
        (TokenErrorKind::Claims, "claims"),
        (TokenErrorKind::Secret, "secret"),
    ];
    for (kind, name) in all {
        assert_eq!(kind.name(), name);
        assert_eq!(kind.to_string(), name);
    }
}

#[test]
fn allows() {
    let c = claims();
    assert!(c.allows_room("lobby") && c.allows_room("ops") && !c.allows_room("lobby2"));
    assert!(c.allows_origin(Some("https://app.example.com")));
    assert!(!c.allows_origin(Some("https://evil.example.com")) && !c.allows_origin(None));
    let any = Claims::new("alice", 1);
    assert!(any.allows_room("x") && any.allows_origin(None) && any.allows_origin(Some("https://x.com")));
}

fn valid_claims() -> impl Strategy<Value = Claims> {
    let origin =
        prop::option::of("(https?|ws|chrome-extension)://[a-z0-9-]{1,20}(\\.[a-z0-9]{1,10}){0,2}(:[1-9][0-9]{0,3})?");
    let rooms = prop::option::of(prop::collection::btree_set("[^/,\\p{Cc}]{1,20}", 1..8));
    ("[A-Za-z0-9._:-]{1,64}", 1..=MAX_EXP, origin, rooms).prop_map(|(agent_id, exp, origin, rooms)| Claims {
        agent_id,
        exp,
        origin,
        rooms: rooms.map(|r| r.into_iter().collect()),
    })
}

proptest! {
    #[test]
    fn roundtrip(claims in valid_claims(), ms in 0u64..1000, rotated in any::<bool>()) {
        let secret = if rotated { OLD } else { SECRET };
        let token = mint(secret, &claims).unwrap();
        prop_assert!(token.len() <= MAX_TOKEN_LEN && token.bytes().all(is_token_byte));
        let now = (claims.exp - 1) * 1000 + ms;
        prop_assert_eq!(verify(&token, &[SECRET, OLD], now, 1).unwrap(), claims.clone());
        prop_assert_eq!(verify(&token, &[SECRET, OLD], claims.exp * 1000 + ms, 1).unwrap_err().kind, TokenErrorKind::Expired);
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>(), now in any::<u64>(), life in any::<u64>()) {
        let _ = verify(&text, &[SECRET], now, life);
        let _ = verify(&text, &[SECRET, OLD], now, life);
    }

    #[test]
    fn arbitrary_token_text_is_refused(text in "[A-Za-z0-9_-]{1,300}\\.[A-Za-z0-9_.-]{1,60}", now in any::<u64>()) {
        prop_assert!(verify(&text, &[SECRET, OLD], now, u64::MAX).is_err());
    }

    #[test]
    fn any_single_change_is_refused(claims in valid_claims(), at in any::<prop::sample::Index>(), with in 0usize..65) {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
        let token = mint(SECRET, &claims).unwrap();
        let now = (claims.exp - 1) * 1000;
        let mut bytes = token.clone().into_bytes();
        let i = at.index(bytes.len());
        let mut c = ALPHABET[with % ALPHABET.len()];
        if c == bytes[i] {
            c = ALPHABET[(with + 1) % ALPHABET.len()];
        }
        bytes[i] = c;
        let changed = String::from_utf8(bytes).unwrap();
        prop_assert!(verify(&changed, &[SECRET], now, 1).is_err(), "{} -> {}", token, changed);
        let mut shorter = token.clone();
        shorter.remove(i);
        prop_assert!(verify(&shorter, &[SECRET], now, 1).is_err());
    }
}

/// Found by mutation testing: the `MAX_TOKEN_LEN` bound of `verify` was only exercised by a
/// one-part token (malformed anyway), so `>` → `==` (no bound) and `>` → `>=` (a minted token of
/// exactly `MAX_TOKEN_LEN` bytes refused) both survived. Likewise `mint`'s bound was only
/// exercised far above it, so a length computed 2 bytes short (`+ 1` → `- 1`) survived.
#[test]
fn token_length_bound_is_exact() {
    // Claims whose token is exactly MAX_TOKEN_LEN bytes: grow the last room one byte at a time.
    let room = |n: usize| "r".repeat(n);
    let mut rooms: Vec<String> = (0..14).map(|i| format!("{i}{}", room(200))).collect();
    let mut last = 1;
    let exact = loop {
        let mut c = Claims::new("alice", NOW_S + 300);
        let mut r = rooms.clone();
        r.push(room(last));
        c.rooms = Some(r);
        let json_len = c.to_json().len();
        let len = base64url::encoded_len(json_len) + 1 + 43;
        if len == MAX_TOKEN_LEN {
            break c;
        }
        assert!(len < MAX_TOKEN_LEN && last < MAX_ID_LEN, "no exact fit at {last}");
        last += 1;
    };
    let token = mint(SECRET, &exact).unwrap();
    assert_eq!(token.len(), MAX_TOKEN_LEN);
    assert_eq!(verify(&token, &[SECRET], NOW, 300).unwrap(), exact);
    assert_eq!(unverified_exp(&token), Some(NOW_S + 300));

    // One byte more of claims, all of them valid: the token would be MAX_TOKEN_LEN + 2 bytes
    // (unpadded base64url has no length 4n + 1, so + 1 cannot happen): not minted.
    let mut over = exact.clone();
    over.agent_id.push('x');
    assert!(over.validate().is_ok());
    assert_eq!(sign(SECRET, &over.to_json()).len(), MAX_TOKEN_LEN + 2);
    assert_eq!(mint(SECRET, &over).unwrap_err().kind, TokenErrorKind::Claims);

    // A well-formed token one room longer, correctly signed: refused for its length alone.
    rooms.push(room(200));
    rooms.push(room(200));
    let mut c = Claims::new("alice", NOW_S + 300);
    c.rooms = Some(rooms);
    let token = sign(SECRET, &c.to_json());
    assert!(token.len() > MAX_TOKEN_LEN);
    assert_eq!(kind(verify(&token, &[SECRET], NOW, 300)), TokenErrorKind::Malformed);
}

/// Found by mutation testing: nothing asserted that `is_token_byte` refuses a byte, so
/// `is_token_byte -> true` survived; the wasm binding's `check_token` relies on it to keep a
/// token that is not a valid subprotocol name (space, comma, CR/LF, `+ / =`) out of the header.
#[test]
fn token_alphabet_is_exact() {
    for b in 0..=255u8 {
        let expected = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        assert_eq!(is_token_byte(b), expected, "byte {b:#04x}");
    }
    let token = mint(SECRET, &claims()).unwrap();
    let spaced = format!("{} ", token);
    let e = verify(&spaced, &[SECRET], NOW, 300).unwrap_err();
    assert_eq!(e.kind, TokenErrorKind::Malformed);
    assert!(e.message.contains(&format!("byte {}", token.len())), "{}", e.message);
}

/// Found by mutation testing: the upper bounds of `rooms` (count and room length) were only
/// tested from above, so `>` → `>=` survived in both (a token with 64 rooms, or a 256-byte room,
/// refused though the contract allows it).
#[test]
fn rooms_bounds_are_inclusive() {
    let mut c = Claims::new("alice", NOW_S + 300);
    c.rooms = Some((0..MAX_ROOMS).map(|i| format!("room{i}")).collect());
    assert!(c.validate().is_ok());
    c.rooms = Some(vec!["r".repeat(MAX_ID_LEN)]);
    assert!(c.validate().is_ok());
    let token = mint(SECRET, &c).unwrap();
    assert_eq!(verify(&token, &[SECRET], NOW, 300).unwrap(), c);
}

/// Found by mutation testing: the origin rules were only tested by a few examples, so the
/// length bound taken as exclusive (`>` → `>=`), the scheme's first letter unchecked (`||` →
/// `&&`: `Https://a.com` taken), any non-empty bracketed text taken as an IPv6 address (`&&` →
/// `||`), a bracketed address without a port refused (arm `""` deleted) and a `+` before the port
/// taken (`&&` → `||`: `u32::from_str` reads `+80`) all survived.
#[test]
fn origins_are_checked_to_the_letter() {
    let origin = |o: &str| {
        let mut c = Claims::new("alice", NOW_S + 300);
        c.origin = Some(o.into());
        c.validate()
    };
    let longest = format!("https://{}", "a".repeat(MAX_ORIGIN_LEN - "https://".len()));
    assert_eq!(longest.len(), MAX_ORIGIN_LEN);
    assert!(origin(&longest).is_ok());
    assert!(origin(&format!("{longest}a")).is_err());
    for ok in [
        "http://[::1]",
        "http://[2001:db8::1]:443",
        "http://[::ffff:1.2.3.4]",
        "a://b",
    ] {
        assert!(origin(ok).is_ok(), "{ok}");
    }
    for bad in [
        "Https://a.com",
        "1https://a.com",
        "-a://a.com",
        "://a.com",
        "hTtps://a.com",
        "http://[abcd]",
        "http://[::g]",
        "http://[::1",
        "http://[::1]:",
        "http://[::1]:0",
        "https://a.com:+80",
        "https://a.com:-1",
        "https://a.com:8a",
        "https://a.com:123456",
        "https://a.com:99999",
    ] {
        let e = origin(bad).expect_err(bad);
        assert_eq!(e.kind, TokenErrorKind::Claims, "{bad}: {e}");
    }
    // And in a token: the signed claims are checked the same way.
    let token = sign(
        SECRET,
        &format!(r#"{{"agent_id":"a","exp":{},"origin":"Https://a.com"}}"#, NOW_S + 10),
    );
    assert_eq!(kind(verify(&token, &[SECRET], NOW, 300)), TokenErrorKind::Claims);
    let token = sign(
        SECRET,
        &format!(r#"{{"agent_id":"a","exp":{},"origin":"http://[::1]"}}"#, NOW_S + 10),
    );
    assert_eq!(
        verify(&token, &[SECRET], NOW, 300).unwrap().origin.as_deref(),
        Some("http://[::1]")
    );
}
