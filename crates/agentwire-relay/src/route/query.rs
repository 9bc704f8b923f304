//! The open URL's query, as the relay forwards it: parsed strictly (percent-decoding that must
//! be valid UTF-8, no repeated names), reduced to the parameters the spec names, and written
//! again with its own encoding, so nothing a browser puts in the query reaches the upstream
//! except those values.

use crate::TOKEN_QUERY;
use std::fmt::Write;

/// The open parameters of the spec; anything else (the relay `token` included) is dropped.
pub const FORWARDED: [&str; 11] = [
    "connection_id",
    "scope",
    "filter",
    "start_from",
    "rooms",
    "expected_generation",
    "spawn_capable",
    "protocol",
    "protocol_accepts",
    "client",
    "client_version",
];

/// Longest value of one parameter, in bytes (`rooms` may list many ids; the relay `token` is
/// left to the token's own checks).
pub const MAX_VALUE: usize = 256;
/// Longest `rooms` value, in bytes, decoded (63 rooms of 256 bytes and their commas; the engine allows 256
/// such rooms, which a server takes but the relay refuses with 4400).
pub const MAX_ROOMS_VALUE: usize = 16 * 1024;
/// Most parameters in one query.
const MAX_PARAMS: usize = 64;

/// A parsed query: (name, decoded value) in the order given.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Query(pub Vec<(String, String)>);

impl Query {
    /// Parses `raw` (without the `?`). `+` is a space, as in a form.
    pub fn parse(raw: &str) -> Result<Query, String> {
        let mut out: Vec<(String, String)> = Vec::new();
        for pair in raw.split('&').filter(|p| !p.is_empty()) {
            if out.len() == MAX_PARAMS {
                return Err(format!("more than {MAX_PARAMS} query parameters"));
            }
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(name).ok_or("a query parameter name is not valid percent-encoded UTF-8")?;
            let value =
                decode(value).ok_or_else(|| format!("the value of {name:?} is not valid percent-encoded UTF-8"))?;
            if out.iter().any(|(n, _)| *n == name) {
                return Err(format!("the query parameter {name:?} is repeated"));
            }
            // The relay token is checked by `token::verify` (at most `MAX_TOKEN_LEN` bytes of
            // the token alphabet), whose refusal is a 4401: a 4400 here would tell a client
            // that a new token cannot help. It is never forwarded, and the URL bounds it.
            if name != TOKEN_QUERY {
                if value.chars().any(char::is_control) {
                    return Err(format!("the value of {name:?} has a control character"));
                }
                if name == "rooms" && value.len() > MAX_ROOMS_VALUE {
                    return Err(format!(
                        "the value of \"rooms\" is {} bytes, more than the relay's {MAX_ROOMS_VALUE}: declare fewer rooms on the open URL, and subscribe to the others once it is open",
                        value.len()
                    ));
                }
                if name != "rooms" && value.len() > MAX_VALUE {
                    return Err(format!(
                        "the value of {name:?} is {} bytes, more than the relay's {MAX_VALUE}",
                        value.len()
                    ));
                }
            }
            out.push((name, value));
        }
        Ok(Query(out))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The `rooms` value split on commas, empty entries dropped.
    pub fn rooms(&self) -> Vec<&str> {
        self.get("rooms")
            .map(|r| r.split(',').map(str::trim).filter(|r| !r.is_empty()).collect())
            .unwrap_or_default()
    }

    /// The forwarded parameters, except those in `drop`, encoded again (`?` included unless
    /// empty). `rooms` is the list [`Query::rooms`] gives, the one the relay checks: trimmed,
    /// without empty entries, and left out when none is left.
    pub fn forward(&self, drop: &[&str]) -> String {
        let mut out = String::new();
        for (name, value) in &self.0 {
            if !FORWARDED.contains(&name.as_str()) || drop.contains(&name.as_str()) {
                continue;
            }
            let rooms = name == "rooms";
            let checked;
            let value = match rooms {
                true => {
                    checked = self.rooms().join(",");
                    if checked.is_empty() {
                        continue;
                    }
                    &checked
                }
                false => value,
            };
            out.push(if out.is_empty() { '?' } else { '&' });
            encode_into(&mut out, name, false);
            out.push('=');
            encode_into(&mut out, value, rooms);
        }
        out
    }
}

/// Percent-decoding of one component; `None` for a bad escape or bytes that are not UTF-8.
pub fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                // Two hex digits exactly (`from_str_radix` alone takes `+F` as 15).
                let hex = b.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Writes `s` with every byte but the unreserved ones (and `,` when `commas`) escaped.
fn encode_into(out: &mut String, s: &str, commas: bool) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (commas && b == b',') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_only_the_spec_parameters_encoded_again() {
        let q =
            Query::parse("connection_id=c-1&token=abc&rooms=r1,r%202&evil=1&start_from=42&client=a+b%26c=d").unwrap();
        assert_eq!(q.get("token"), Some("abc"));
        assert_eq!(q.rooms(), ["r1", "r 2"]);
        assert_eq!(
            q.forward(&[]),
            "?connection_id=c-1&rooms=r1,r%202&start_from=42&client=a%20b%26c%3Dd"
        );
        assert_eq!(q.forward(&["rooms", "client"]), "?connection_id=c-1&start_from=42");
        assert_eq!(Query::parse("").unwrap().forward(&[]), "");
    }

    #[test]
    fn rooms_are_forwarded_as_they_were_checked() {
        // Checked trimmed (`rooms()`), they went on as given: " r1" claimed upstream under a
        // token that allows "r1", or an upstream that does not trim reading another room.
        let q = Query::parse("connection_id=c&rooms=%20r1%20,,r%202%E3%80%80,%20").unwrap();
        assert_eq!(q.rooms(), ["r1", "r 2"]);
        assert_eq!(q.forward(&[]), "?connection_id=c&rooms=r1,r%202");
        // None left to check: none declared.
        for none in ["rooms=", "rooms=%20,,"] {
            assert_eq!(
                Query::parse(&format!("connection_id=c&{none}")).unwrap().forward(&[]),
                "?connection_id=c"
            );
        }
    }

    #[test]
    fn refuses_what_cannot_be_read_one_way() {
        for bad in [
            "a=%zz",
            "a=%e9",
            "a=%4",
            "a=1&a=2",
            "a=%0a",
            &format!("a={}", "x".repeat(300)),
        ] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..65).map(|i| format!("p{i}=1")).collect();
        // The token is the token's checks' business (a 4401, not a 4400), and never forwarded.
        let long = "t".repeat(5000);
        let q = Query::parse(&format!("token={long}&connection_id=c")).unwrap();
        assert_eq!(q.get("token"), Some(long.as_str()));
        assert_eq!(q.forward(&[]), "?connection_id=c");
        assert!(Query::parse(&many.join("&")).is_err());
    }

    #[test]
    fn a_rooms_value_over_the_bound_says_what_to_do() {
        // 256 rooms of 256 bytes pass the engine's checks, not the relay's bound.
        let rooms = vec!["r".repeat(256); 64].join(",");
        assert!(rooms.len() > MAX_ROOMS_VALUE);
        let e = Query::parse(&format!("connection_id=c&rooms={rooms}")).unwrap_err();
        assert!(
            e.contains(&rooms.len().to_string())
                && e.contains("16384")
                && e.contains("fewer rooms")
                && e.contains("subscribe"),
            "{e}"
        );
        let e = Query::parse(&format!("client={}", "x".repeat(300))).unwrap_err();
        assert!(e.contains("300 bytes") && e.contains("256"), "{e}");
        let e = Query::parse("client=a%0Ab").unwrap_err();
        assert!(e.contains("control character"), "{e}");
        let at_bound = vec!["r".repeat(255); 64].join(",");
        assert_eq!(at_bound.len(), MAX_ROOMS_VALUE - 1);
        assert_eq!(Query::parse(&format!("rooms={at_bound}")).unwrap().rooms().len(), 64);
    }

    #[test]
    fn values_of_exactly_the_bounds_pass() {
        let rooms = format!("{},{}", "r".repeat(MAX_ROOMS_VALUE - 257), "s".repeat(256));
        assert_eq!(rooms.len(), MAX_ROOMS_VALUE);
        assert_eq!(Query::parse(&format!("rooms={rooms}")).unwrap().rooms().len(), 2);
        assert!(Query::parse(&format!("rooms={rooms}s")).is_err());
        let client = "c".repeat(MAX_VALUE);
        assert_eq!(
            Query::parse(&format!("client={client}")).unwrap().get("client"),
            Some(client.as_str())
        );
        assert!(Query::parse(&format!("client={client}c")).is_err());
    }

    #[test]
    fn an_escape_is_two_hex_digits() {
        for bad in ["%+A", "%-1", "% a", "%+", "%", "%a"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
        assert_eq!(decode("%4a%4A+%2b").as_deref(), Some("JJ +"));
    }

    proptest::proptest! {
        #[test]
        fn decode_reads_back_what_encode_wrote(s in "\\PC*", commas: bool) {
            let mut e = String::new();
            encode_into(&mut e, &s, commas);
            proptest::prop_assert_eq!(decode(&e), Some(s));
        }

        /// What decodes has every `%` followed by two hex digits.
        #[test]
        fn decode_takes_only_well_formed_escapes(s in "[%+a-f0-9A-F\\-]{0,12}") {
            if decode(&s).is_some() {
                let b = s.as_bytes();
                for (i, _) in s.match_indices('%') {
                    proptest::prop_assert!(b.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)), "{}", s);
                }
            }
        }
    }

    #[test]
    fn a_forwarded_query_cannot_smuggle_a_separator() {
        let q = Query::parse("connection_id=a%26token%3Dx%23frag%2F..").unwrap();
        let f = q.forward(&[]);
        assert_eq!(f, "?connection_id=a%26token%3Dx%23frag%2F..");
        assert!(!f[1..].contains(['&', '#', '/', '?']));
    }
}
