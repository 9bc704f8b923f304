//! Peer text quoted in an error message, cut to a bound: a server can send megabytes where a
//! name or a reason is expected, and a message should stay a message; and peer text made safe
//! for a terminal or a log line ([`terminal_safe`]).

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

/// Whether `c` must not reach a terminal raw: a C0 control but tab (and newline when
/// `newline` is allowed), DEL, a C1 control (U+0080–U+009F: U+009B is a CSI, U+009D an OSC in
/// terminals that take 8-bit controls), or a bidirectional embedding, override or isolate
/// (U+202A–U+202E, U+2066–U+2069), which reorder the text shown around it.
fn is_unsafe(c: char, newline: bool) -> bool {
    match c {
        '\t' => false,
        '\n' => !newline,
        '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// `text` with every character a terminal would act on (`is_unsafe`) written as `\uXXXX`:
/// ESC as `\u001b`, U+009B as `\u009b`. Newlines are kept when `newline`. Inside a JSON string
/// that is the character's own escape, and outside one (JSON text has these characters raw
/// only in strings) the characters cannot occur, so JSON stays valid JSON with the same value;
/// in plain text it is a visible escape. Text without such characters is returned as it is.
pub fn terminal_safe(text: &str, newline: bool) -> Cow<'_, str> {
    let Some(first) = text.find(|c| is_unsafe(c, newline)) else {
        return Cow::Borrowed(text);
    };
    let mut safe = String::with_capacity(text.len() + 8);
    safe.push_str(&text[..first]);
    for c in text[first..].chars() {
        if is_unsafe(c, newline) {
            // Every unsafe character is in the Basic Multilingual Plane: four digits.
            safe.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_on_a_character_boundary() {
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("abcd", 3), "abc…");
        // `é` is two bytes: a cut inside it moves back before it.
        assert_eq!(clip("aé", 2), "a…");
        assert_eq!(clip("ééé", 0), "…");
        assert_eq!((prefix("aé", 2), prefix("aé", 3), prefix("aé", 9)), ("a", "aé", "aé"));
    }

    #[test]
    fn controls_are_escaped_visibly() {
        let hostile = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\rfake> \u{7f}";
        assert_eq!(
            terminal_safe(hostile, true),
            "\\u001b]0;PWNED\\u0007\\u001b[2J\\u000dfake> \\u007f"
        );
        assert_eq!(
            terminal_safe("\0\u{8}\u{b}\u{c}\u{1f}", true),
            "\\u0000\\u0008\\u000b\\u000c\\u001f"
        );
    }

    #[test]
    fn c1_controls_and_bidi_overrides_are_escaped() {
        assert_eq!(
            terminal_safe("a\u{80}b\u{9b}2J\u{9c}\u{9d}0;T\u{9f}", true),
            "a\\u0080b\\u009b2J\\u009c\\u009d0;T\\u009f"
        );
        assert_eq!(
            terminal_safe(
                "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}evil\u{2066}\u{2067}\u{2068}\u{2069}",
                true
            ),
            "\\u202a\\u202b\\u202c\\u202d\\u202eevil\\u2066\\u2067\\u2068\\u2069"
        );
        // Their neighbours are ordinary text.
        for c in ['\u{a0}', '\u{2029}', '\u{202f}', '\u{2065}', '\u{206a}', '\u{200f}'] {
            assert!(!is_unsafe(c, false), "{c:?}");
        }
    }

    #[test]
    fn tab_and_plain_unicode_pass_untouched() {
        let plain = "Seoul\t서울 — naïve 🦀 «ok» \\u001b as text";
        assert!(matches!(terminal_safe(plain, false), Cow::Borrowed(p) if p == plain));
        assert_eq!(terminal_safe("", false), "");
    }

    #[test]
    fn newlines_are_kept_only_where_lines_are_expected() {
        assert_eq!(terminal_safe("one\ntwo", true), "one\ntwo");
        assert_eq!(terminal_safe("one\ntwo", false), "one\\u000atwo");
    }

    #[test]
    fn json_stays_valid_json_with_the_same_value() {
        let value = serde_json::json!({
            "text": "c1:\u{9b}2J\u{9d}0;T\u{9c} esc:\u{1b}[2J del:\u{7f} \u{202e}evil\u{202c} \\u009b tab:\t ok 서울",
            "\u{9b}key": ["\u{2066}", 1],
        });
        for json in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            let safe = terminal_safe(&json, true);
            assert!(!safe.chars().any(|c| is_unsafe(c, true)), "{safe}");
            assert!(safe.contains("\\u009b2J") && safe.contains("\\u202e"), "{safe}");
            let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
            assert_eq!(back, value);
        }
    }
}
