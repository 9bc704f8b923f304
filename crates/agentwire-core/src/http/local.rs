//! Origins, and the rule every server meant for this machine only applies (the RKT reference
//! server, the local test peers; the relay's `http://` upstream): which `Host` and `Origin`
//! headers name this machine.
//!
//! A page on any site can open a WebSocket to `ws://127.0.0.1:PORT` (no CORS applies to
//! WebSockets; the browser sends the page's `Origin`), and after DNS rebinding it can send any
//! request to such a port under its own name (`Host: evil.example:PORT`). A local server answers
//! neither when it refuses a request whose `Host` is present and not [`is_loopback_host`], or
//! whose `Origin` is present and not [`is_loopback_origin`] (nor one it was told to allow):
//! [`allows_host`], [`allows_origin`]. A missing header is no browser's request (browsers always
//! send `Host`, and `Origin` on every WebSocket and cross-origin request), so native clients,
//! which send no `Origin`, are unaffected.

/// The names of this machine a `Host` or an origin may use: `127.0.0.1`, `localhost` and
/// `[::1]`, compared ASCII-case-insensitively.
pub const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// `host[:port]` split at the port: a bracketed IPv6 literal keeps its brackets; the port is
/// 1 to 5 digits that fit a `u16`. `None` for anything else (an empty host, a port that is empty
/// or not a number, text after `]`).
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')? + 1;
        authority.split_at(end)
    } else {
        match authority.find(':') {
            Some(i) => authority.split_at(i),
            None => (authority, ""),
        }
    };
    if host.is_empty() {
        return None;
    }
    match port.strip_prefix(':') {
        None if port.is_empty() => Some((host, None)),
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some((host, Some(p.parse().ok()?)))
        }
        Some(_) => None,
    }
}

/// The `host[:port]` of an origin as an `Origin` header carries it: `http://` or `https://`
/// (lowercase), a host of ASCII letters, digits, `-` and `.` or a bracketed IPv6 literal, an
/// optional port, and nothing after (no path, not even `/`; no credentials). `None` otherwise,
/// for `null` too.
pub fn origin_authority(origin: &str) -> Option<&str> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))?;
    let (host, _) = split_port(rest)?;
    let ok = match host.strip_prefix('[') {
        Some(v6) => {
            let v6 = v6.strip_suffix(']')?;
            !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
        }
        None => host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'),
    };
    ok.then_some(rest)
}

/// `scheme://host[:port]` in the exact form of an `Origin` header ([`origin_authority`]).
pub fn is_origin(origin: &str) -> bool {
    origin_authority(origin).is_some()
}

/// A `Host` header (`host[:port]`) naming this machine: one of [`LOOPBACK_HOSTS`], any case,
/// with or without a port. `localhost.evil.example`, `127.0.0.1.evil.example` and other names
/// are not, nor is a malformed value.
pub fn is_loopback_host(host: &str) -> bool {
    split_port(host).is_some_and(|(name, _)| LOOPBACK_HOSTS.iter().any(|l| l.eq_ignore_ascii_case(name)))
}

/// An origin (one [`is_origin`] takes) as a browser writes it in `Origin`, the form to compare
/// it in: lowercase, and without a default port (`:443` on `https`, `:80` on `http`). A list of
/// allowed origins written `https://App.example:443` matches the `https://app.example` a
/// browser sends once put in this form.
pub fn as_sent(origin: &str) -> String {
    let origin = origin.to_ascii_lowercase();
    let default = if origin.starts_with("https:") { ":443" } else { ":80" };
    match origin.strip_suffix(default) {
        Some(o) if !o.ends_with(':') => o.to_owned(),
        _ => origin,
    }
}

/// An `Origin` header of a page on this machine: `http(s)://` and a [`is_loopback_host`].
/// `null` (a sandboxed or `file:` page) is not.
pub fn is_loopback_origin(origin: &str) -> bool {
    origin_authority(origin).is_some_and(is_loopback_host)
}

/// Whether a local server answers a request with these `Host` values (every one it sent; none
/// is fine): each is [`is_loopback_host`]. A value that is not text should be passed as `""`.
pub fn allows_host<'a>(hosts: impl IntoIterator<Item = &'a str>) -> bool {
    hosts.into_iter().all(is_loopback_host)
}

/// Whether a local server answers a request with these `Origin` values (every one it sent; none
/// is fine, as from a native client): each is [`is_loopback_origin`] or, ASCII-case-insensitively,
/// one of `also` (origins the server was configured to allow as well, compared [`as_sent`]: a
/// default port written in the list is none). A value that is not text
/// should be passed as `""`.
pub fn allows_origin<'a, A: AsRef<str>>(origins: impl IntoIterator<Item = &'a str>, also: &[A]) -> bool {
    origins
        .into_iter()
        .all(|o| is_loopback_origin(o) || also.iter().any(|a| as_sent(a.as_ref()).eq_ignore_ascii_case(o)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        for h in [
            "127.0.0.1",
            "127.0.0.1:7749",
            "localhost",
            "localhost:1",
            "LOCALHOST:7750",
            "LocalHost",
            "[::1]",
            "[::1]:65535",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "",
            "evil.example",
            "evil.example:7749",
            "localhost.evil.com",
            "localhost.evil.com:7749",
            "127.0.0.1.evil.com",
            "127.0.0.1.evil.com:7749",
            "evil.localhost.com",
            "127.0.0.2",
            "0.0.0.0:7749",
            "::1",
            "[::1",
            "[::2]:80",
            "[::1]x",
            "[::1]:",
            "localhost:",
            "localhost:99999",
            "localhost:123456",
            "localhost:+80",
            "localhost:80:80",
            ":7749",
            " localhost",
            "localhost.",
            "user@localhost",
            "null",
        ] {
            assert!(!is_loopback_host(h), "{h:?}");
        }
    }

    #[test]
    fn origins() {
        for o in [
            "http://127.0.0.1:7700",
            "https://127.0.0.1",
            "http://localhost:7700",
            "http://LOCALHOST:7700",
            "http://[::1]:80",
            "https://[::1]",
        ] {
            assert!(is_loopback_origin(o) && is_origin(o), "{o}");
        }
        for o in [
            "null",
            "",
            "http://evil.example",
            "http://localhost.evil.com:7700",
            "http://127.0.0.1.evil.com",
            "http://127.0.0.1:7700/",
            "http://127.0.0.1:7700/path",
            "HTTP://127.0.0.1:7700",
            "ws://127.0.0.1:7700",
            "file://",
            "chrome-extension://abc",
            "127.0.0.1:7700",
            "http://user@127.0.0.1",
            "http://127.0.0.1:",
            "http://127.0.0.1:99999",
            "http://[::1]x",
        ] {
            assert!(!is_loopback_origin(o), "{o:?}");
        }
        for o in ["https://app.example", "http://[fe80::1]:80", "https://a-b.c:443"] {
            assert!(is_origin(o) && !is_loopback_origin(o), "{o}");
        }
        for o in [
            "https://app.example/",
            "app.example",
            "https://",
            "https://a:99999",
            "https://a:",
            "null",
            "https://u@a",
            "https://[]",
            "https://[zz]",
        ] {
            assert!(!is_origin(o), "{o}");
        }
    }

    #[test]
    fn the_rule() {
        let none: [&str; 0] = [];
        // A missing header is no browser's request.
        assert!(allows_host(none) && allows_origin(none, &none));
        assert!(allows_host(["127.0.0.1:7749"]) && allows_host(["localhost:1", "[::1]:2"]));
        assert!(!allows_host(["evil.example:7749"]) && !allows_host(["127.0.0.1:1", "evil.example"]));
        // Not text: refused.
        assert!(!allows_host([""]) && !allows_origin([""], &none));
        assert!(allows_origin(["http://127.0.0.1:7700"], &none));
        assert!(!allows_origin(["http://evil.example"], &none) && !allows_origin(["null"], &none));
        // Allowed as written in a list (any case, a default port), compared as a browser sends it.
        assert!(allows_origin(["https://app.example"], &["https://App.Example:443"]));
        assert!(allows_origin(["http://app.example"], &["http://app.example:80"]));
        assert!(!allows_origin(["http://app.example"], &["http://app.example:443"]));
        let also = ["https://App.example", "null"];
        assert!(allows_origin(["https://app.example"], &also) && allows_origin(["null"], &also));
        assert!(!allows_origin(["https://app.example.evil"], &also));
        assert!(!allows_origin(["http://127.0.0.1", "http://evil.example"], &also));
    }
}
