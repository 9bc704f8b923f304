//! Relay tokens: what lets a browser use Switch through the relay without the agent key.
//!
//! The app's backend mints a short-lived token ([`mint`], or `mintRelayToken` from the npm
//! package's `agentwire/relay-token`), the browser presents it, the relay checks it
//! ([`verify`]). The whole format, with its golden vectors, is in `docs/relay-token.md`.
//!
//! # Format
//!
//! `<payload>.<sig>`, where `payload` is the claims JSON (UTF-8) in base64url without padding
//! (RFC 4648 §5) and `sig` is HMAC-SHA256(secret, the ASCII bytes of `payload`), also base64url
//! without padding (43 characters). A token therefore only holds `A-Z a-z 0-9 - _ .`, fits an
//! HTTP header, a query parameter and a WebSocket subprotocol (`agentwire.token.<token>`), and
//! is at most [`MAX_TOKEN_LEN`] bytes.
//!
//! The claims are `{"agent_id": string, "exp": integer, "origin"?: string, "rooms"?: [string]}`.
//! [`mint`] writes them compact, keys in that order, optional keys omitted when absent, strings
//! escaped as `JSON.stringify` escapes them, so the JS helper mints the same bytes. [`verify`]
//! takes any key order and insignificant whitespace, but nothing else: no unknown key, no
//! duplicate key, no `null` for an optional claim, `exp` an integer (not `1e9`, not `1.0`),
//! nesting at most 2 deep.
//!
//! - `agent_id`: 1..=[`MAX_ID_LEN`] bytes of `A-Z a-z 0-9 - _ . :`.
//! - `exp`: Unix seconds, at most [`MAX_EXP`] (2^53 - 1, so JS reads it exactly). The token is
//!   expired when `now / 1000 >= exp` (`now` in milliseconds, floored to seconds).
//! - `origin`: the one browser origin allowed, as a browser serializes it in `Origin`:
//!   `scheme://host[:port]`, lowercase scheme (`[a-z][a-z0-9+.-]*`) and host (`[a-z0-9.-]+` or a
//!   bracketed IPv6 address), a port of 1 to 5 digits without a leading zero and at most 65535,
//!   nothing after; at most [`MAX_ORIGIN_LEN`] bytes. Absent: any origin the relay's allowlist
//!   takes.
//! - `rooms`: the rooms the browser may use, 1..=[`MAX_ROOMS`] distinct room ids, each
//!   1..=[`MAX_ID_LEN`] UTF-8 bytes with no `/`, no `,` and no control character (what the
//!   Switch engine accepts as a room id). Absent: every room of the agent.
//!
//! # Verification order
//!
//! [`verify`] checks, and reports the first failure as a [`TokenErrorKind`]:
//! 1. the secrets it was given: 1 or 2 (two while rotating: the new one and the old one), each
//!    at least [`MIN_SECRET_LEN`] bytes (`secret`; a configuration error, so reported whatever
//!    the token);
//! 2. the token is not empty (`missing`), at most [`MAX_TOKEN_LEN`] bytes and only of the
//!    token alphabet (`malformed`);
//! 3. exactly two non-empty parts, each canonical unpadded base64url, the signature 32 bytes
//!    (`malformed`);
//! 4. the signature, compared in constant time against the HMAC under every secret (`forged`);
//! 5. only then the claims, parsed and checked as above (`claims`);
//! 6. `now / 1000 >= exp` (`expired`), then `exp > now / 1000 + max_lifetime_s +`
//!    [`LIFETIME_LEEWAY_S`] (`lifetime`: tokens must be short-lived, so a long-lived one is
//!    refused even when correctly signed; the leeway lets a backend whose clock is a little ahead
//!    of the relay's mint `max_lifetime_s` exactly. Expiry itself has no leeway).
//!
//! Nothing here reads a clock: `now` is passed in. Error messages never hold a secret or a
//! signature (they may name the agent).

use agentwire_core::{base64url, json, Millis};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Deserializer};
use sha2::Sha256;
use std::fmt;

/// The longest token accepted (and minted), in bytes.
pub const MAX_TOKEN_LEN: usize = 4096;
/// The most rooms a token may list.
pub const MAX_ROOMS: usize = 64;
/// The shortest secret accepted, in bytes.
pub const MIN_SECRET_LEN: usize = 32;
/// The most secrets [`verify`] takes (the current one and the one being rotated out).
pub const MAX_SECRETS: usize = 2;
/// The longest agent id or room id, in UTF-8 bytes.
pub const MAX_ID_LEN: usize = 256;
/// The longest origin, in bytes.
pub const MAX_ORIGIN_LEN: usize = 256;
/// Clock skew allowed on the lifetime check (not on expiry), in seconds: a token minted with
/// a lifetime of exactly `max_lifetime_s` by a backend whose clock runs up to this much ahead
/// of the relay's still passes.
pub const LIFETIME_LEEWAY_S: u64 = 60;
/// The largest `exp`: 2^53 - 1, the largest integer a JS number holds exactly.
pub const MAX_EXP: u64 = (1 << 53) - 1;

/// The length of an HMAC-SHA256.
const SIG_LEN: usize = 32;
/// Object, then the `rooms` array.
const MAX_DEPTH: usize = 2;

type HmacSha256 = Hmac<Sha256>;

/// What a relay token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The agent the browser acts as.
    pub agent_id: String,
    /// Expiry, Unix seconds.
    pub exp: u64,
    /// The one browser origin allowed; `None`: any the relay allows.
    pub origin: Option<String>,
    /// The rooms allowed; `None`: all of the agent's.
    pub rooms: Option<Vec<String>>,
}

impl Claims {
    /// Claims for `agent_id` until `exp`, any origin, any room.
    pub fn new(agent_id: impl Into<String>, exp: u64) -> Self {
        Claims {
            agent_id: agent_id.into(),
            exp,
            origin: None,
            rooms: None,
        }
    }

    /// Whether the token lets the browser use `room`.
    pub fn allows_room(&self, room: &str) -> bool {
        self.rooms.as_ref().is_none_or(|rooms| rooms.iter().any(|r| r == room))
    }

    /// Whether the token lets a page of `origin` (the request's `Origin`, if it has one) use
    /// it: always when the token names no origin, else only that exact origin.
    pub fn allows_origin(&self, origin: Option<&str>) -> bool {
        match &self.origin {
            None => true,
            Some(own) => origin == Some(own.as_str()),
        }
    }

    /// Checks every claim against the rules in the module docs (kind `claims`).
    pub fn validate(&self) -> Result<(), TokenError> {
        check_agent_id(&self.agent_id)?;
        if self.exp > MAX_EXP {
            return Err(claims_error(format!("exp {} is over {MAX_EXP} (2^53 - 1)", self.exp)));
        }
        if let Some(origin) = &self.origin {
            check_origin(origin)?;
        }
        if let Some(rooms) = &self.rooms {
            check_rooms(rooms)?;
        }
        Ok(())
    }

    /// The compact JSON that [`mint`] signs.
    fn to_json(&self) -> String {
        let mut out = String::from("{\"agent_id\":");
        json::push_string(&mut out, &self.agent_id);
        out.push_str(",\"exp\":");
        out.push_str(&self.exp.to_string());
        if let Some(origin) = &self.origin {
            out.push_str(",\"origin\":");
            json::push_string(&mut out, origin);
        }
        if let Some(rooms) = &self.rooms {
            out.push_str(",\"rooms\":[");
            for (i, room) in rooms.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::push_string(&mut out, room);
            }
            out.push(']');
        }
        out.push('}');
        out
    }
}

/// Why a token was not minted or not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenErrorKind {
    /// No token at all (empty).
    Missing,
    /// Not of the token's form: too long, a byte outside the alphabet, not two parts, bad
    /// base64url, a signature of the wrong length.
    Malformed,
    /// Well formed, but signed by none of the secrets.
    Forged,
    /// Signed, but `exp` has passed.
    Expired,
    /// Signed, but `exp` is further away than the relay allows.
    Lifetime,
    /// Signed, but the claims are not valid (or, minting, the claims are refused).
    Claims,
    /// The secrets themselves: none, more than [`MAX_SECRETS`], or one shorter than
    /// [`MIN_SECRET_LEN`].
    Secret,
}

impl TokenErrorKind {
    /// The kind's name: `missing`, `malformed`, `forged`, `expired`, `lifetime`, `claims`,
    /// `secret`.
    pub fn name(&self) -> &'static str {
        match self {
            TokenErrorKind::Missing => "missing",
            TokenErrorKind::Malformed => "malformed",
            TokenErrorKind::Forged => "forged",
            TokenErrorKind::Expired => "expired",
            TokenErrorKind::Lifetime => "lifetime",
            TokenErrorKind::Claims => "claims",
            TokenErrorKind::Secret => "secret",
        }
    }
}

impl fmt::Display for TokenErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A refused token (or refused claims or secret), with a message that never holds a secret or
/// a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError {
    pub kind: TokenErrorKind,
    pub message: String,
}

impl TokenError {
    fn new(kind: TokenErrorKind, message: impl Into<String>) -> Self {
        TokenError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "relay token {}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for TokenError {}

fn claims_error(message: impl Into<String>) -> TokenError {
    TokenError::new(TokenErrorKind::Claims, message)
}

fn malformed(message: impl Into<String>) -> TokenError {
    TokenError::new(TokenErrorKind::Malformed, message)
}

/// A token for `claims`, signed with `secret` (at least [`MIN_SECRET_LEN`] bytes). Refuses
/// claims that [`verify`] would refuse, and claims whose token would exceed [`MAX_TOKEN_LEN`].
pub fn mint(secret: &[u8], claims: &Claims) -> Result<String, TokenError> {
    check_secret(secret, "the secret")?;
    claims.validate()?;
    let json = claims.to_json();
    let len = base64url::encoded_len(json.len()) + 1 + base64url::encoded_len(SIG_LEN);
    if len > MAX_TOKEN_LEN {
        return Err(claims_error(format!(
            "the token for agent {} would be {len} bytes, over {MAX_TOKEN_LEN}",
            claims.agent_id
        )));
    }
    let payload = base64url::encode(json.as_bytes());
    let sig = new_mac(secret)?
        .chain_update(payload.as_bytes())
        .finalize()
        .into_bytes();
    Ok(format!("{payload}.{}", base64url::encode(&sig)))
}

/// The claims of `token` if one of `secrets` signed it, it is valid and unexpired at `now`
/// (milliseconds since the Unix epoch) and it expires within `max_lifetime_s` seconds of
/// `now` (plus [`LIFETIME_LEEWAY_S`] for clock skew). The order of the checks, and so which error a bad token gets, is in the module docs.
pub fn verify(token: &str, secrets: &[&[u8]], now: Millis, max_lifetime_s: u64) -> Result<Claims, TokenError> {
    if secrets.is_empty() || secrets.len() > MAX_SECRETS {
        return Err(TokenError::new(
            TokenErrorKind::Secret,
            format!("{} secrets given, expected 1 to {MAX_SECRETS}", secrets.len()),
        ));
    }
    for (i, secret) in secrets.iter().enumerate() {
        check_secret(secret, &format!("secret {}", i + 1))?;
    }

    if token.is_empty() {
        return Err(TokenError::new(TokenErrorKind::Missing, "no token"));
    }
    if token.len() > MAX_TOKEN_LEN {
        return Err(malformed(format!(
            "the token is {} bytes, over {MAX_TOKEN_LEN}",
            token.len()
        )));
    }
    if let Some(at) = token.bytes().position(|b| !is_token_byte(b)) {
        return Err(malformed(format!(
            "byte {at} of the token is not one of A-Z a-z 0-9 - _ ."
        )));
    }
    let mut parts = token.split('.');
    let (payload, sig) = match (parts.next(), parts.next(), parts.next()) {
        (Some(payload), Some(sig), None) if !payload.is_empty() && !sig.is_empty() => (payload, sig),
        _ => {
            return Err(malformed(format!(
                "{} parts, expected two non-empty parts `payload.signature`",
                token.split('.').count()
            )))
        }
    };
    let json = base64url::decode(payload).map_err(|e| malformed(format!("payload: {e}")))?;
    let sig = base64url::decode(sig).map_err(|e| malformed(format!("signature: {e}")))?;
    if sig.len() != SIG_LEN {
        return Err(malformed(format!(
            "the signature is {} bytes, expected {SIG_LEN}",
            sig.len()
        )));
    }

    let mut signed = false;
    for secret in secrets {
        // Every secret is tried (no early exit), each comparison in constant time.
        let ok = new_mac(secret)?
            .chain_update(payload.as_bytes())
            .verify_slice(&sig)
            .is_ok();
        signed |= ok;
    }
    if !signed {
        return Err(TokenError::new(
            TokenErrorKind::Forged,
            format!("the signature matches none of the {} secret(s)", secrets.len()),
        ));
    }

    let claims = parse_claims(&json)?;
    let now_s = now / 1000;
    if now_s >= claims.exp {
        return Err(TokenError::new(
            TokenErrorKind::Expired,
            format!("expired at {} (now {now_s}); agent {}", claims.exp, claims.agent_id),
        ));
    }
    if claims.exp > now_s.saturating_add(max_lifetime_s).saturating_add(LIFETIME_LEEWAY_S) {
        return Err(TokenError::new(
            TokenErrorKind::Lifetime,
            format!(
                // The numbers first: a WebSocket close reason keeps 123 bytes of it.
                "expires in {} s, more than the {max_lifetime_s} s allowed; agent {}",
                claims.exp - now_s,
                claims.agent_id
            ),
        ));
    }
    Ok(claims)
}

/// Whether `b` is of the token alphabet, `A-Z a-z 0-9 - _ .`: what a WebSocket subprotocol
/// name, an HTTP header and a query value all carry unchanged.
pub fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// The `exp` of `token` in Unix seconds, read **without verifying** the token: for a client
/// that holds a token and must renew it before it expires (the relay verifies it). `None` for
/// text whose first part is not base64url claims with an integer `exp` (an agent key given
/// instead of a token, for one). Unlike [`verify`] it checks neither the signature nor the
/// other claims, and it parses with `agentwire_core::json` (no derived `Deserialize`, so a
/// client that only reads `exp` pays for no claims parser).
pub fn unverified_exp(token: &str) -> Option<u64> {
    if token.len() > MAX_TOKEN_LEN {
        return None;
    }
    let payload = token.split('.').next()?;
    let claims = base64url::decode(payload).ok()?;
    let claims = std::str::from_utf8(&claims).ok()?;
    let tape = json::read::parse(claims, MAX_DEPTH).ok()?;
    tape.root().get("exp")?.as_u64()
}

fn new_mac(secret: &[u8]) -> Result<HmacSha256, TokenError> {
    // HMAC takes a key of any length; the error is unreachable but handled, not unwrapped.
    HmacSha256::new_from_slice(secret).map_err(|_| TokenError::new(TokenErrorKind::Secret, "unusable secret"))
}

fn check_secret(secret: &[u8], which: &str) -> Result<(), TokenError> {
    if secret.len() < MIN_SECRET_LEN {
        return Err(TokenError::new(
            TokenErrorKind::Secret,
            format!("{which} is {} bytes, expected at least {MIN_SECRET_LEN}", secret.len()),
        ));
    }
    Ok(())
}

fn check_agent_id(id: &str) -> Result<(), TokenError> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(claims_error(format!(
            "agent_id is {} bytes, expected 1 to {MAX_ID_LEN}",
            id.len()
        )));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
    {
        return Err(claims_error(format!(
            "agent_id {id:?} has a character outside A-Z a-z 0-9 - _ . :"
        )));
    }
    Ok(())
}

fn check_origin(origin: &str) -> Result<(), TokenError> {
    let bad = || {
        claims_error(format!(
            "origin {origin:?} is not scheme://host[:port] (lowercase, no path)"
        ))
    };
    if origin.len() > MAX_ORIGIN_LEN {
        return Err(claims_error(format!(
            "origin is {} bytes, over {MAX_ORIGIN_LEN}",
            origin.len()
        )));
    }
    let (scheme, rest) = origin.split_once("://").ok_or_else(bad)?;
    let mut s = scheme.bytes();
    if !s.next().is_some_and(|b| b.is_ascii_lowercase())
        || !s.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'.' | b'-'))
    {
        return Err(bad());
    }
    let port = if let Some(v6) = rest.strip_prefix('[') {
        let (addr, after) = v6.split_once(']').ok_or_else(bad)?;
        let addr_ok = !addr.is_empty()
            && addr.contains(':')
            && addr
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'a'..=b'f' | b':' | b'.'));
        if !addr_ok {
            return Err(bad());
        }
        match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(bad)?),
        }
    } else {
        let (host, port) = match rest.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        };
        let host_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.'));
        if !host_ok {
            return Err(bad());
        }
        port
    };
    if let Some(port) = port {
        let digits_ok =
            (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit()) && !port.starts_with('0');
        if !digits_ok || port.parse::<u32>().map_or(true, |p| p > 65_535) {
            return Err(bad());
        }
    }
    Ok(())
}

fn check_rooms(rooms: &[String]) -> Result<(), TokenError> {
    if rooms.is_empty() || rooms.len() > MAX_ROOMS {
        return Err(claims_error(format!(
            "rooms lists {} rooms, expected 1 to {MAX_ROOMS} (omit it for every room)",
            rooms.len()
        )));
    }
    for (i, room) in rooms.iter().enumerate() {
        if room.is_empty() || room.len() > MAX_ID_LEN {
            return Err(claims_error(format!(
                "room {} is {} bytes, expected 1 to {MAX_ID_LEN}",
                i + 1,
                room.len()
            )));
        }
        if room.chars().any(|c| c == '/' || c == ',' || c.is_control()) {
            return Err(claims_error(format!(
                "room {} ({room:?}) has a `/`, a `,` or a control character",
                i + 1
            )));
        }
        if rooms.get(..i).is_some_and(|before| before.contains(room)) {
            return Err(claims_error(format!("room {room:?} is listed twice")));
        }
    }
    Ok(())
}

/// The claims as sent: no unknown or duplicate key, no `null` for an optional one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireClaims {
    agent_id: String,
    exp: u64,
    #[serde(default, deserialize_with = "present")]
    origin: Option<String>,
    #[serde(default, deserialize_with = "present")]
    rooms: Option<Vec<String>>,
}

/// An optional claim that, when its key is there, must hold a value (not `null`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn parse_claims(json: &[u8]) -> Result<Claims, TokenError> {
    if json::nests_deeper_than(json, MAX_DEPTH) {
        return Err(claims_error(format!("the claims nest deeper than {MAX_DEPTH}")));
    }
    let wire: WireClaims =
        serde_json::from_slice(json).map_err(|e| claims_error(format!("the claims are not valid: {e}")))?;
    let claims = Claims {
        agent_id: wire.agent_id,
        exp: wire.exp,
        origin: wire.origin,
        rooms: wire.rooms,
    };
    claims.validate()?;
    Ok(claims)
}

#[cfg(test)]
mod tests;
