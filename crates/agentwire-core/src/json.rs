//! Checks on JSON text made before parsing it, shared by every engine's decoder.

/// True when arrays and objects in `b` nest deeper than `max` (strings skipped, escapes
/// honoured). Not a validator: it only bounds what a parser would recurse into.
pub fn nests_deeper_than(b: &[u8], max: usize) -> bool {
    // Fast path: nesting cannot exceed the number of `[` and `{` (a loop that vectorizes).
    if b.iter().map(|&c| usize::from(c == b'[' || c == b'{')).sum::<usize>() <= max {
        return false;
    }
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Appends `s` as a JSON string literal, escaped exactly as `serde_json` and `JSON.stringify`
/// escape it (so hand-written JSON matches theirs byte for byte).
pub fn push_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        // `i` is at an ASCII byte, so a char boundary.
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xf)] as char);
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::nests_deeper_than;

    #[test]
    fn depth_counts_only_structure() {
        assert!(!nests_deeper_than(br#"{"a":[[1]]}"#, 3));
        assert!(nests_deeper_than(br#"{"a":[[[1]]]}"#, 3));
        assert!(
            !nests_deeper_than(br#"{"a":"[[[[[[\"[[[["}"#, 1),
            "brackets in strings do not count"
        );
        assert!(
            !nests_deeper_than(b"[]".repeat(100).as_slice(), 1),
            "siblings are not nesting"
        );
        assert!(!nests_deeper_than(br#""\"#, 0), "an escape at the end does not overrun");
    }
}
