//! Keeping credentials out of what is printed: `Debug` output and error messages.

use std::borrow::Cow;
use std::fmt;

/// Prints `<redacted>`: the `Debug` of a secret field (`.field("key", &Redacted)`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `Some(Redacted)` for a secret that is set, `None` for one that is not.
pub fn redacted<T>(secret: &Option<T>) -> Option<Redacted> {
    secret.as_ref().map(|_| Redacted)
}

/// `url` as an error message may quote it: without the user information (`user:pass@`) and
/// without the query and fragment, where a token or key may ride (`?token=…`). Scheme, host,
/// port and path stay. A text without a scheme (`host/path`) is read the same way, as is one
/// whose scheme is empty or left out before `//` (`://u:p@h` shows `://h`, `//u:p@h` shows
/// `//h`), and what is left once its user information is gone is read again
/// (`x@wss://u:p@h` shows `wss://h`): the text shown is one this function leaves as it is.
pub fn url(url: &str) -> Cow<'_, str> {
    // Bytes, not `str::find` with a `&str` pattern, whose searcher cost the Switch module 1.2 KB
    // gzipped. A scheme is letters, digits, `+`, `-` and `.` right before `://` (not a
    // `://` in the query); none at all before `://` or `//` still leaves an authority after it,
    // user information and all.
    let b = url.as_bytes();
    let scheme_chars = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || b"+-.".contains(c))
        .count();
    let scheme_len = if b[scheme_chars..].starts_with(b"://") {
        scheme_chars + 3
    } else if b.starts_with(b"//") {
        2
    } else {
        0
    };
    let (scheme, rest) = url.split_at(scheme_len);
    let end = rest.bytes().position(|c| c == b'?' || c == b'#').unwrap_or(rest.len());
    let kept = &rest[..end];
    let host_end = kept.bytes().position(|c| c == b'/').unwrap_or(kept.len());
    match (
        kept.as_bytes()[..host_end].iter().rposition(|&c| c == b'@'),
        end == rest.len(),
    ) {
        (None, true) => Cow::Borrowed(url),
        (None, false) => Cow::Owned(format!("{scheme}{kept}")),
        // Without a scheme, what follows the user information may begin with one (`x@a://u@h`):
        // read again. Once: its host part has no `@` left, and with a scheme nothing recurses.
        (Some(at), _) if scheme_len == 0 => Cow::Owned(self::url(&kept[at + 1..]).into_owned()),
        (Some(at), _) => Cow::Owned(format!("{scheme}{}", &kept[at + 1..])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for (given, shown) in [
            ("wss://h.example:8443/ws", "wss://h.example:8443/ws"),
            ("wss://h.example/ws?token=SECRET", "wss://h.example/ws"),
            ("https://user:SECRET@h.example/p#frag", "https://h.example/p"),
            ("http://u:p@h?api_key=SECRET", "http://h"),
            ("rkt://a@b@h:1/x?y", "rkt://h:1/x"),
            ("h.example/p?k=SECRET", "h.example/p"),
            ("user@host/path", "host/path"),
            ("bot:SECRET@h", "h"),
            ("h/p?token=SECRET&next=http://x", "h/p"),
            ("rkt://h:80#SECRET", "rkt://h:80"),
            ("", ""),
        ] {
            assert_eq!(url(given), shown, "{given}");
        }
        assert!(matches!(url("ws://h/p"), Cow::Borrowed(_)));
        // User information before a scheme: once it is gone, what is left is read again, so the
        // user information after the scheme goes too (it was kept: `a://u:SECRET@h/p`).
        assert_eq!(url("x@a://u:SECRET@h/p?q"), "a://h/p");
        assert_eq!(url("x@a://h:1/u@v"), "a://h:1/u@v");
        assert_eq!(format!("{:?}", redacted(&Some("k"))), "Some(<redacted>)");
        assert_eq!(format!("{:?}", redacted::<String>(&None)), "None");
    }

    /// A scheme left out but its `://` kept (`"{scheme}://bot:KEY@h"` with an empty `scheme`),
    /// or a network-path reference (`//bot:KEY@h`): the user information still goes. Found by
    /// mutation testing (`scheme_chars > 0` → `>=` survived: it takes the empty scheme, and
    /// `://u:SECRET@h` was quoted whole).
    #[test]
    fn user_information_after_an_empty_scheme_goes() {
        for (given, shown) in [
            ("://bot:SECRET@h.example/ws", "://h.example/ws"),
            ("://h.example/ws?token=SECRET", "://h.example/ws"),
            ("//bot:SECRET@h.example/ws", "//h.example/ws"),
            ("//h.example/ws#SECRET", "//h.example/ws"),
            ("x@://u:SECRET@h/p", "://h/p"),
            ("x@//u:SECRET@h/p", "//h/p"),
        ] {
            assert_eq!(url(given), shown, "{given}");
            assert_eq!(url(shown), shown, "{shown}: not a fixed point");
        }
        for kept in ["://h.example:1/p@q", "//h/u@v", "://", "//", ":/u@h"] {
            assert!(matches!(url(kept), Cow::Borrowed(_)), "{kept}");
        }
    }

    proptest::proptest! {
        /// Whatever the text: no panic, and nothing after a `?`, `#` or in user information is kept.
        #[test]
        fn never_keeps_a_query_or_userinfo(host in "[a-z.]{1,9}", path in "(/[a-z]{0,4}){0,2}", secret in "[A-Z]{4,8}") {
            let shown = url(&format!("wss://u:{secret}@{host}{path}?token={secret}#{secret}")).into_owned();
            proptest::prop_assert_eq!(&shown, &format!("wss://{host}{path}"));
            for any in [format!("{host}{path}?{secret}"), format!("u:{secret}@{host}{path}"), format!("{host}?t={secret}&u=ws://x")] {
                proptest::prop_assert!(!url(&any).contains(&secret), "{}", any);
            }
        }
    }
}
