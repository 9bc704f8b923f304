//! `rkt://` addresses to WebSocket URLs.
//!
//! The guide's rule (its LLM tool example): `rkt://host` is `ws://host:7749/rkt`. agentwire
//! keeps it and fills in what the guide leaves open:
//! - `rkt://host` → `ws://host:7749/rkt`; `rkt://host:port` → `ws://host:port/rkt`;
//!   `rkt://host/path` keeps the path; a query is kept.
//! - `rkts://host` → `wss://host:7749/rkt` (TLS).
//! - a bare `host[:port][/path]` is read as `rkt://...`.
//! - `ws://` and `wss://` URLs are kept.
//! - every one is read as every target reads a URL ([`agentwire_core::url::parse`]): a scheme
//!   in any case, a port in 1..=65535 (a default one left out), no user information.
//!
//! There is no DNS or registry lookup: the guide names an "RNS" but defines none.

use agentwire_core::url;

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
    let invalid = |m: &str| ResolveError(format!("`{}`: {m}", agentwire_core::redact::url(address)));
    let (scheme, rest) = url::split_scheme(address).unwrap_or(("rkt", address));
    let is = |name: &str| scheme.eq_ignore_ascii_case(name);
    let scheme = if is("ws") || is("wss") {
        return url::parse(address, &url::WS).map(|u| u.to_string()).map_err(invalid);
    } else if is("rkt") {
        "ws"
    } else if is("rkts") {
        "wss"
    } else {
        return Err(invalid("not an rkt://, rkts://, ws:// or wss:// address"));
    };
    let mut url = url::parse(&format!("{scheme}://{rest}"), &url::WS).map_err(invalid)?;
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    // The port after the last `:` outside brackets: none written is RKT's; `h:` is refused, not
    // read as the `ws://` default (80) as `url::parse` reads it.
    match authority
        .rsplit_once(']')
        .map_or(authority, |(_, port)| port)
        .rsplit_once(':')
    {
        None => url.port = Some(DEFAULT_PORT),
        Some((_, "")) => return Err(invalid("the port is empty")),
        Some(_) => {}
    }
    if !tail.starts_with('/') {
        // As `replace_range(..1, DEFAULT_PATH)` (the path starts with `/`), without its splice
        // code (0.6 KB gzipped in agentwire/rkt).
        url.path.insert_str(1, &DEFAULT_PATH[1..]);
    }
    Ok(url.to_string())
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
        assert_eq!(resolve("rkt://[::1]:80").unwrap(), "ws://[::1]/rkt");
        assert_eq!(resolve("rkt://h?x=1").unwrap(), "ws://h:7749/rkt?x=1");
        assert_eq!(resolve("ws://localhost:7749/rkt").unwrap(), "ws://localhost:7749/rkt");
        // Schemes in any case, as a browser reads them; a default port left out of `Host`.
        assert_eq!(resolve("WSS://H:443/rkt").unwrap(), "wss://h/rkt");
        assert_eq!(resolve("RKT://h").unwrap(), "ws://h:7749/rkt");
        assert_eq!(resolve("Rkts://h:8443/").unwrap(), "wss://h:8443/");
        assert_eq!(resolve("ws://h:1?x").unwrap(), "ws://h:1/?x");
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
            "ws://a:65536/rkt",
            "WSS://a:0/rkt",
            "rkt://a:0",
            "ws://u:p@a/rkt",
            "rkt://::1",
            // An empty port is not RKT's default, nor the ws:// one.
            "rkt://h:",
            "h:",
            "rkts://h:/x",
            "rkt://[::1]:",
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
        /// with no space or control character (it goes into a request line), read back as itself.
        #[test]
        fn any_address(address in "\\PC*|(rkts?://)?[a-z0-9.:\\[\\]+@ /?\\r\\n-]{0,24}") {
            if let Ok(url) = resolve(&address) {
                proptest::prop_assert!(url.starts_with("ws://") || url.starts_with("wss://"), "{url}");
                proptest::prop_assert!(!url.contains(|c: char| c.is_whitespace() || c.is_control()), "{url:?}");
                let read = url::parse(&url, &url::WS).map(|u| u.to_string());
                proptest::prop_assert_eq!(read.as_deref(), Ok(url.as_str()));
            }
        }

        /// `rkt://host:port/path` keeps host, port and path.
        #[test]
        fn keeps_what_it_is_given(host in "[a-z][a-z0-9.-]{0,15}", port in 1..=u16::MAX, path in "(/[a-z0-9._~-]{0,8}){0,3}") {
            let url = resolve(&format!("rkt://{host}:{port}{path}")).unwrap();
            let path = if path.is_empty() { DEFAULT_PATH.to_string() } else { path };
            let port = if port == 80 { String::new() } else { format!(":{port}") };
            proptest::prop_assert_eq!(url, format!("ws://{host}{port}{path}"));
        }
    }
}
