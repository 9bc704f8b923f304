//! Peer text quoted in an error message, cut to a bound: a server can send megabytes where a
//! name or a reason is expected, and a message should stay a message.

use std::borrow::Cow;

/// The most an error message quotes of one piece of a peer's text (a reason, a detail, a body,
/// a value), in bytes: every engine's bound.
pub const QUOTE_MAX: usize = 512;

/// The same bound for a name a peer gives (a message type, a header, a version).
pub const NAME_MAX: usize = 64;

/// `s` when it is at most `max` bytes; else its first `max` bytes or fewer (on a character
/// boundary), followed by `…`.
pub fn clip(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    Cow::Owned(format!("{}…", prefix(s, max)))
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary: for a
/// bound that must hold exactly (a close frame's 123-byte reason).
pub fn prefix(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::{clip, prefix};

    #[test]
    fn clips_on_a_character_boundary() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "abc…");
        // `é` is two bytes: a cut inside it moves back before it.
        assert_eq!(clip("aé", 2), "a…");
        assert_eq!(clip("ééé", 0), "…");
        assert_eq!((prefix("aé", 2), prefix("aé", 3), prefix("aé", 9)), ("a", "aé", "aé"));
    }
}
