//! Fuzzes `redact::url`, which error messages quote addresses through. Nothing may panic, and:
//! the text shown has no query or fragment (no `?`, no `#`) and no user information (no `@`
//! before the first `/` after the scheme); it is made of the input's own text before its first
//! `?` or `#` (a piece of it, then a later piece running to that point: nothing added, nothing
//! from the query); it is a fixed point (redacting it again changes nothing: what is left is
//! nothing the function would remove); it is borrowed exactly when nothing was removed, and a
//! text with no `@`, `?` or `#` is shown whole.
//!
//! Input: a mode byte, then lossy UTF-8 text. Mode bit 0 clear: the text is the URL. Set: the
//! text's lines are a scheme, user information, host, path, query and fragment, cleaned of the
//! characters that would end them early, and joined as a URL (bits 1-4: with a scheme, user
//! information, a query, a fragment); the text shown must be exactly scheme, host and path.
#![no_main]

use agentwire_core::redact::url;
use libfuzzer_sys::fuzz_target;
use std::borrow::Cow;

/// `scheme://` (the scheme maybe empty) or `//` at the start of `s`, the way `url` reads one.
fn has_scheme(s: &str) -> Option<usize> {
    let n = s
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || b"+-.".contains(c))
        .count();
    if s[n..].starts_with("://") {
        Some(n + 3)
    } else if s.starts_with("//") {
        Some(2)
    } else {
        None
    }
}

fn check(input: &str) -> String {
    let shown = url(input);
    let out: &str = &shown;
    assert!(
        !out.contains(['?', '#']),
        "a query or fragment kept: {input:?} -> {out:?}"
    );
    let authority = &out[has_scheme(out).unwrap_or(0)..];
    let authority = &authority[..authority.find('/').unwrap_or(authority.len())];
    assert!(!authority.contains('@'), "user information kept: {input:?} -> {out:?}");
    // Made of the input's text before the query: a piece, then a later piece up to that point.
    let before = &input[..input.find(['?', '#']).unwrap_or(input.len())];
    let pieces = (0..=out.len()).filter(|&i| out.is_char_boundary(i)).any(|i| {
        let (head, tail) = out.split_at(i);
        before.ends_with(tail) && before[..before.len() - tail.len()].contains(head)
    });
    assert!(
        pieces,
        "not made of the input's text before its query: {input:?} -> {out:?}"
    );
    assert_eq!(url(out), out, "not a fixed point: {input:?} -> {out:?}");
    match &shown {
        Cow::Borrowed(b) => assert!(std::ptr::eq(*b, input), "borrowed, not the input: {input:?} -> {b:?}"),
        Cow::Owned(o) => assert!(o.len() < input.len(), "owned, and nothing removed: {input:?} -> {o:?}"),
    }
    if !input.contains(['@', '?', '#']) {
        assert!(matches!(shown, Cow::Borrowed(_)), "{input:?} -> {out:?}");
    }
    shown.into_owned()
}

fn built(mode: u8, text: &str) {
    let mut parts = text.split('\n');
    let mut part = |drop: &[char]| parts.next().unwrap_or("").replace(drop, "");
    let scheme: String = part(&[])
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "+-.".contains(*c))
        .collect();
    let user = part(&['/', '?', '#']);
    let host = part(&['/', '?', '#', '@']);
    let path = part(&['?', '#']);
    let path = if path.is_empty() || path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    };
    let (query, fragment) = (part(&[]), part(&[]));
    let scheme = (mode & 2 != 0).then(|| if scheme.is_empty() { "s".to_owned() } else { scheme } + "://");
    let mut given = scheme.clone().unwrap_or_default();
    if mode & 4 != 0 {
        given += &format!("{user}@");
    }
    given += &format!("{host}{path}");
    if mode & 8 != 0 {
        given += &format!("?{query}");
    }
    if mode & 16 != 0 {
        given += &format!("#{fragment}");
    }
    let shown = check(&given);
    let expected = format!("{}{host}{path}", scheme.as_deref().unwrap_or(""));
    // Without a scheme, a host and path that begin like one (`a:` then `//u@b`) are read as a
    // URL once the user information is gone: not the reading checked here.
    if scheme.is_some() || has_scheme(&expected).is_none() {
        assert_eq!(shown, expected, "{given:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    if mode & 1 == 0 {
        check(&text);
    } else {
        built(mode, &text);
    }
});
