//! The URLs users pass (a server's `ws://` URL, a Switch base URL), read one way by every target:
//! the native drivers, the npm package (through its wasm) and the CLI.
//!
//! [`parse`] takes what a URL parser in a browser takes where it matters to these protocols
//! (surrounding whitespace, a scheme in any case, an explicit default port, an empty path) and
//! refuses, as a message that does not quote the URL (the caller adds
//! [`crate::redact::url`]), what can never be dialed: a port outside 1..=65535 (an unreadable
//! port must not fall back to the default one), user information (`user:key@`: a driver would
//! drop it, and a key should not ride in a URL), a fragment, a host that is empty, not ASCII (its
//! `xn--` form is) or an IPv6 address outside brackets, a path beyond ASCII (percent-encoded it
//! is taken), spaces and control characters.

use std::fmt;

/// A URL as the drivers dial it ([`parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// One of the schemes [`parse`] was given, lowercase.
    pub scheme: &'static str,
    /// The host, ASCII lowercase; an IPv6 address in brackets.
    pub host: String,
    /// The port written, unless it is the scheme's default (80, or 443 for `https`/`wss`).
    pub port: Option<u16>,
    /// The path and query: `/` at least.
    pub path: String,
}

/// The WebSocket schemes.
pub const WS: [&str; 2] = ["ws", "wss"];
/// Every scheme a base URL may have: the same server answers HTTP and WebSockets.
pub const ANY: [&str; 4] = ["http", "https", "ws", "wss"];

impl Url {
    /// `https` or `wss`.
    pub fn tls(&self) -> bool {
        matches!(self.scheme, "https" | "wss")
    }

    /// The port to dial: the one written, or the scheme's default.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(if self.tls() { 443 } else { 80 })
    }

    /// `host[:port]`, the `Host` header: with the port only when it is not the scheme's default
    /// (RFC 9110 §7.2, RFC 6455 §4.1).
    pub fn authority(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority(), self.path)
    }
}

/// `url` split at its `scheme://`: `None` when it has none (`host:port/path`).
pub fn split_scheme(url: &str) -> Option<(&str, &str)> {
    // Not `split_once("://")`, whose substring searcher costs each npm entry 0.2 KB gzipped.
    let i = url.find(':')?;
    url[i + 1..].strip_prefix("//").map(|rest| (&url[..i], rest))
}

/// Reads `url`, whose scheme (any case) must be one of `schemes` ([`WS`] or [`ANY`]); see the
/// module docs. The error says what is wrong, without quoting the URL.
pub fn parse(url: &str, schemes: &[&'static str]) -> Result<Url, &'static str> {
    let url = url.trim();
    let (scheme, rest) = split_scheme(url).unwrap_or(("", url));
    let Some(&scheme) = schemes.iter().find(|s| s.eq_ignore_ascii_case(scheme)) else {
        return Err(if schemes.len() == WS.len() {
            "the scheme must be ws:// or wss://"
        } else {
            "the scheme must be http://, https://, ws:// or wss://"
        });
    };
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL has a space or a control character");
    }
    if rest.contains('#') {
        return Err("the URL may not carry a fragment (#)");
    }
    let end = rest.bytes().position(|b| b == b'/' || b == b'?').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err("the URL may not carry user information (user@ or user:key@)");
    }
    // The port follows the last `:` that is not inside brackets.
    let (host, port) = match authority.rfind(':').filter(|&i| !authority[i..].contains(']')) {
        Some(i) => (&authority[..i], &authority[i + 1..]),
        None => (authority, ""),
    };
    let name = |b: u8| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b);
    let v6 = |b: u8| b.is_ascii_hexdigit() || b == b':' || b == b'.';
    let ok = match host.as_bytes() {
        [b'[', inside @ .., b']'] => !inside.is_empty() && inside.iter().all(|&b| v6(b)),
        [b'[', ..] => false,
        bytes => bytes.iter().all(|&b| name(b)),
    };
    if host.is_empty() {
        return Err("the URL has no host");
    }
    if !host.is_ascii() {
        return Err("the host must be ASCII (a name in its xn-- form)");
    }
    if !ok {
        return Err("the host is not a name, nor an IPv6 address in brackets ([::1])");
    }
    let default = if matches!(scheme, "https" | "wss") { 443 } else { 80 };
    // Digits only, read in a u32 held at 65,536 (any value above is as wrong): `str::parse` takes
    // a `+`, and its u64 read cost each npm entry 44-90 B gzipped.
    let digits = port.bytes().try_fold(0u32, |n, b| {
        b.is_ascii_digit().then(|| (n * 10 + u32::from(b - b'0')).min(65536))
    });
    let port = match digits {
        // Empty: the default, as a browser reads `host:`.
        _ if port.is_empty() => None,
        Some(n @ 1..=65535) => Some(n as u16).filter(|&p| p != default),
        _ => return Err("the port must be a number in 1..=65535"),
    };
    if !path.is_ascii() {
        return Err("the path must be ASCII (percent-encoded beyond it)");
    }
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Ok(Url {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
        path,
    })
}

/// Reads a WebSocket URL as a browser's `WebSocket` constructor does: [`parse`] with [`ANY`],
/// `http://` taken as `ws://` and `https://` as `wss://`.
pub fn websocket(url: &str) -> Result<Url, &'static str> {
    let mut url = parse(url, &ANY)?;
    url.scheme = match url.scheme {
        "http" => "ws",
        "https" => "wss",
        ws => ws,
    };
    Ok(url)
}

/// Reads a base URL (`http(s)://host[:port][/prefix]`, or `ws(s)://`; no scheme is `http://`):
/// [`parse`], with no query, and the path without its trailing `/` (`""` for none), so that
/// `path + "/agents/..."` is the request path whether the user wrote `https://h/api/` or
/// `https://h/api`.
pub fn base(url: &str) -> Result<Url, &'static str> {
    let url = url.trim();
    let mut parsed = match split_scheme(url) {
        Some(_) => parse(url, &ANY)?,
        None => parse(&format!("http://{url}"), &ANY)?,
    };
    if parsed.path.contains('?') {
        return Err("a base URL may not carry a query");
    }
    parsed.path.truncate(parsed.path.trim_end_matches('/').len());
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(url: &str) -> Result<String, &'static str> {
        parse(url, &WS).map(|u| u.to_string())
    }

    #[test]
    fn what_users_write_is_read_as_a_browser_reads_it() {
        for (given, read) in [
            ("ws://h:1/ws", "ws://h:1/ws"),
            ("WSS://H.Example/ws", "wss://h.example/ws"),
            (" wss://h/ws\n", "wss://h/ws"),
            ("ws://h:80/ws", "ws://h/ws"),
            ("wss://h:443", "wss://h/"),
            ("wss://h:80", "wss://h:80/"),
            ("ws://h:", "ws://h/"),
            ("ws://h?x=1", "ws://h/?x=1"),
            ("ws://[::1]:9/p", "ws://[::1]:9/p"),
            ("ws://[::ffff:127.0.0.1]", "ws://[::ffff:127.0.0.1]/"),
            ("ws://h:09", "ws://h:9/"),
            ("ws://xn--bcher-kva.example/", "ws://xn--bcher-kva.example/"),
            ("ws://b%C3%BC.example/", "ws://b%c3%bc.example/"),
        ] {
            assert_eq!(ws(given).as_deref(), Ok(read), "{given:?}");
        }
        let u = parse("wss://h:443/x", &WS).unwrap();
        assert_eq!((u.authority().as_str(), u.port_or_default(), u.tls()), ("h", 443, true));
        let u = parse("ws://[::1]:8080", &WS).unwrap();
        assert_eq!((u.authority().as_str(), u.port_or_default()), ("[::1]:8080", 8080));
    }

    #[test]
    fn what_can_never_be_dialed_is_refused_with_what_is_wrong() {
        for (given, wrong) in [
            ("ws://h:65536/ws", "port"),
            ("ws://h:0/ws", "port"),
            ("ws://h:99999999999999999999999/ws", "port"),
            ("ws://h:+80/ws", "port"),
            ("ws://h:8a/ws", "port"),
            ("ws://u:SECRET@h/ws", "user information"),
            ("ws://u@h/ws", "user information"),
            ("ws://h/ws#f", "fragment"),
            ("ws://h/a b", "space"),
            ("ws://h/a\r\nX: y", "control"),
            ("ws://h/a\u{3000}b", "space"),
            ("ws://h/bücher", "path must be ASCII"),
            ("ws://", "no host"),
            ("ws://:80/", "no host"),
            ("ws:///p", "no host"),
            ("ws://bücher.example/", "ASCII"),
            ("ws://::1/", "brackets"),
            ("ws://fe80::1:80/", "brackets"),
            ("ws://[::1/", "brackets"),
            ("ws://[zz]/", "brackets"),
            ("ws://[::1]x/", "brackets"),
            ("ws://h\\x/", "not a name"),
            ("http://h/ws", "ws:// or wss://"),
            ("h/ws", "ws:// or wss://"),
            ("ftp://h", "ws:// or wss://"),
        ] {
            let e = ws(given).unwrap_err();
            assert!(e.contains(wrong), "{given:?}: {e}");
            assert!(!e.contains("SECRET") && !e.contains(given), "{e}");
        }
    }

    #[test]
    fn a_websocket_url_takes_http_as_a_browser_does() {
        for (given, read) in [
            ("http://h/ws", "ws://h/ws"),
            ("HTTPS://h:443/ws", "wss://h/ws"),
            ("https://h:80/ws", "wss://h:80/ws"),
            ("wss://h/ws", "wss://h/ws"),
        ] {
            assert_eq!(
                websocket(given).map(|u| u.to_string()).as_deref(),
                Ok(read),
                "{given:?}"
            );
        }
        assert!(websocket("ftp://h/ws").unwrap_err().contains("ws://"));
        assert!(websocket("/ws").is_err(), "a relative URL has no host to dial");
    }

    #[test]
    fn a_base_keeps_its_prefix_without_the_trailing_slash() {
        for (given, read, path) in [
            ("https://h/api/v1/", "https://h/api/v1", "/api/v1"),
            ("https://h/api/v1", "https://h/api/v1", "/api/v1"),
            ("https://h/", "https://h", ""),
            ("https://h", "https://h", ""),
            ("HTTP://127.0.0.1:7751", "http://127.0.0.1:7751", ""),
            ("127.0.0.1:7751/", "http://127.0.0.1:7751", ""),
            ("wss://h:443//", "wss://h", ""),
        ] {
            let u = base(given).unwrap();
            assert_eq!((u.to_string().as_str(), u.path.as_str()), (read, path), "{given:?}");
        }
        for (given, wrong) in [
            ("https://h/?q=1", "query"),
            ("https://h?q", "query"),
            ("https://h#f", "fragment"),
            ("https://h:0", "port"),
            ("ftp://h", "http://, https://"),
        ] {
            let e = base(given).unwrap_err();
            assert!(e.contains(wrong), "{given:?}: {e}");
        }
    }

    proptest::proptest! {
        /// Any text: no panic; an accepted URL reads back as itself, with a host, a path from `/`
        /// and nothing a request line or a `Host` header cannot carry.
        #[test]
        fn any_url(text in "\\PC*|((ws|WS|http)s?://)?[a-zA-Z0-9.:\\[\\]+@ /?#%\\r\\n-]{0,24}") {
            if let Ok(u) = parse(&text, &ANY) {
                let shown = u.to_string();
                proptest::prop_assert!(!u.host.is_empty() && u.path.starts_with('/'), "{u:?}");
                proptest::prop_assert!(shown.bytes().all(|b| b.is_ascii_graphic()), "{shown:?}");
                proptest::prop_assert_eq!(parse(&shown, &ANY), Ok(u));
            }
        }

        /// A port is taken as `decimal::parse_u64` reads it, when in 1..=65535.
        #[test]
        fn any_port(port in "0{0,3}[0-9]{0,6}|[0-9+a]{0,24}") {
            let taken = port.is_empty() || matches!(crate::decimal::parse_u64(&port), Some(1..=65535));
            proptest::prop_assert_eq!(parse(&format!("ws://h:{port}/"), &WS).is_ok(), taken);
        }
    }
}
