//! `rkt://` addresses to WebSocket URLs.
//!
//! The guide's rule (its LLM tool example): `rkt://host` is `ws://host:7749/rkt`. agentwire
//! keeps it and fills in what the guide leaves open:
//! - `rkt://host` → `ws://host:7749/rkt`; `rkt://host:port` → `ws://host:port/rkt`;
//!   `rkt://host/path` keeps the path; a query is kept.
//! - `rkts://host` → `wss://host:7749/rkt` (TLS).
//! - a bare `host[:port][/path]` is read as `rkt://...`.
//! - `ws://` and `wss://` URLs are returned unchanged.
//!
//! There is no DNS or registry lookup: the guide names an "RNS" but defines none.

/// The default RKT port.
pub const DEFAULT_PORT: u16 = 7749;
/// The default WebSocket path.
pub const DEFAULT_PATH: &str = "/rkt";

/// Why an address could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveError(pub String);

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ResolveError {}

pub fn resolve(address: &str) -> Result<String, ResolveError> {
    let address = address.trim();
    if address.contains(|c: char| c.is_whitespace() || c.is_control()) {
        // Not quoted: the address may hold a line break (escaping it costs 1 KB of Unicode tables).
        return Err(ResolveError("the address has a space or a control character".into()));
    }
    if address.contains('#') {
        return Err(ResolveError("an RKT address has no fragment (#)".into()));
    }
    if address.starts_with("ws://") || address.starts_with("wss://") {
        return Ok(address.to_string());
    }
    let (scheme, rest) = if let Some(r) = address.strip_prefix("rkts://") {
        ("wss", r)
    } else if let Some(r) = address.strip_prefix("rkt://") {
        ("ws", r)
    } else if address.contains("://") {
        return Err(ResolveError(format!(
            "`{}` is not an rkt://, rkts://, ws:// or wss:// address",
            agentwire_core::redact::url(address)
        )));
    } else {
        ("ws", address)
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    if authority.contains('@') {
        return Err(ResolveError(
            "an RKT address carries no user information (user@ or user:key@)".into(),
        ));
    }
    // (Spaces and control characters were refused above.)
    if authority.is_empty() || authority.starts_with(':') {
        let shown = agentwire_core::redact::url(address);
        return Err(ResolveError(format!("`{shown}` has no valid host")));
    }
    let has_port = match authority.rsplit_once(':') {
        Some((host, _)) if !host.ends_with(']') && host.contains(':') => false, // bare IPv6
        Some((_, port)) => {
            if !port.bytes().all(|b| b.is_ascii_digit()) || port.parse::<u16>().is_err() {
                return Err(ResolveError(format!("`{port}` is not a port")));
            }
            true
        }
        None => false,
    };
    let authority = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:{DEFAULT_PORT}")
    };
    let tail = if tail.is_empty() || tail.starts_with('?') {
        format!("{DEFAULT_PATH}{tail}")
    } else {
        tail.to_string()
    };
    Ok(format!("{scheme}://{authority}{tail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(resolve("rkt://weather.ai").unwrap(), "ws://weather.ai:7749/rkt");
        assert_eq!(resolve("weather.ai").unwrap(), "ws://weather.ai:7749/rkt");
        assert_eq!(resolve("rkt://localhost:9000").unwrap(), "ws://localhost:9000/rkt");
        assert_eq!(
            resolve("rkts://weather.ai/agents/w").unwrap(),
            "wss://weather.ai:7749/agents/w"
        );
        assert_eq!(resolve("rkt://[::1]").unwrap(), "ws://[::1]:7749/rkt");
        assert_eq!(resolve("rkt://[::1]:80").unwrap(), "ws://[::1]:80/rkt");
        assert_eq!(resolve("rkt://h?x=1").unwrap(), "ws://h:7749/rkt?x=1");
        assert_eq!(resolve("ws://localhost:7749/rkt").unwrap(), "ws://localhost:7749/rkt");
        for bad in [
            "http://x",
            "rkt://",
            "rkt://a:b",
            "rkt://u@h",
            "rkt://:7749",
            "rkt://a:99999",
            "rkt://a:+80",
            "rkt://a/p q",
            "rkt://a/p\r\nX: y",
            "ws://a/\0",
        ] {
            assert!(resolve(bad).is_err(), "{bad:?}");
        }
        // A refusal does not quote a credential.
        for bad in [
            "rkt://bot:SECRET@h",
            "bot:SECRET@h",
            "http://h/?key=SECRET",
            "rkt://:1?SECRET",
            "rkt://h:80#SECRET",
            "h/p?token=SECRET&next=http://x",
        ] {
            let e = resolve(bad).unwrap_err();
            assert!(!e.0.contains("SECRET"), "{e}");
        }
        // And says what is wrong, as it displays.
        let e = resolve("rkt://bot:SECRET@h").unwrap_err();
        assert!(e.0.contains("user information"), "{e}");
        assert_eq!(e.to_string(), e.0);
    }

    proptest::proptest! {
        /// Whatever the input: no panic, and a resolved URL is a ws:// or wss:// URL with a port
        /// of digits only and no space or control character (it goes into a request line).
        #[test]
        fn any_address(address in "\\PC*|(rkts?://)?[a-z0-9.:\\[\\]+@ /?\\r\\n-]{0,24}") {
            if let Ok(url) = resolve(&address) {
                proptest::prop_assert!(url.starts_with("ws://") || url.starts_with("wss://"), "{url}");
                proptest::prop_assert!(!url.contains(|c: char| c.is_whitespace() || c.is_control()), "{url:?}");
                if !address.trim().starts_with("ws") {
                    let authority = url.split("://").nth(1).unwrap_or("").split(['/', '?']).next().unwrap_or("");
                    let port = authority.rsplit_once(':').map_or("", |(_, p)| p);
                    proptest::prop_assert!(!port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()), "{url}");
                }
            }
        }

        /// `rkt://host:port/path` keeps host, port and path.
        #[test]
        fn keeps_what_it_is_given(host in "[a-z][a-z0-9.-]{0,15}", port: u16, path in "(/[a-z0-9._~-]{0,8}){0,3}") {
            let url = resolve(&format!("rkt://{host}:{port}{path}")).unwrap();
            let path = if path.is_empty() { DEFAULT_PATH.to_string() } else { path };
            proptest::prop_assert_eq!(url, format!("ws://{host}:{port}{path}"));
        }
    }
}
