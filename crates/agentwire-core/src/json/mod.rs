//! JSON shared by every engine: a reader without serde ([`read`]), checks made before parsing,
//! and string escaping for hand-written output.

pub mod fields;
pub mod read;
pub mod value;
pub mod write;

/// serde_json's recursion limit: the arrays and objects it decodes (rather than skips) nest at
/// most this deep, counted from the top of the text. Readers that must refuse what serde_json
/// refuses bound their depth with it.
pub const SERDE_DEPTH: usize = 127;

/// True when arrays and objects in `b` nest deeper than `max` (strings skipped, escapes
/// honoured). Not a validator: it only bounds what a parser would recurse into.
pub fn nests_deeper_than(b: &[u8], max: usize) -> bool {
    // Fast path: nesting cannot exceed the number of `[` and `{`.
    if openers(b) <= max {
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

/// The number of `[` and `{` in `b`, eight bytes at a time (wasm32 has no vector loop for the
/// byte-wise count): `[` (0x5b) and `{` (0x7b) differ only in bit 0x20.
fn openers(b: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const LOW7: u64 = ONES * 0x7f;
    const CASE: u64 = ONES * 0x20;
    const OPEN: u64 = ONES * b'{' as u64;
    let mut chunks = b.chunks_exact(8);
    let mut n = 0usize;
    for c in &mut chunks {
        let w = u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        // A zero byte in `x` is an opener; the high bit of each byte of `zero` is set exactly
        // for the zero bytes of `x` (no carries across bytes: each byte's low 7 bits + 0x7f).
        let x = (w | CASE) ^ OPEN;
        let zero = !(((x & LOW7) + LOW7) | x) & !LOW7;
        n += zero.count_ones() as usize;
    }
    n + chunks.remainder().iter().filter(|&&c| c | 0x20 == b'{').count()
}

/// An event's JSON object split for hosts that parse payloads lazily (JavaScript): the object
/// without its payload field, and that field's name and raw text. A host sets the field to the
/// raw text parsed as JSON, or to the text itself when it is not JSON (what the engines'
/// `to_json` does with a payload that is not JSON). The payload was bounded (size, depth) when
/// its frame was decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyJson<'a> {
    /// The event's JSON text without the payload field (all of it when `payload` is `None`).
    pub envelope: String,
    /// `(field, raw text)`: the payload to add; `None` when the event has none (or it is `null`,
    /// which `to_json` leaves out).
    pub payload: Option<(&'static str, &'a str)>,
}

/// True when `raw` is the JSON `null`, JSON whitespace around it allowed.
pub fn is_null(raw: &str) -> bool {
    raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r')) == "null"
}

/// Appends `s` as a JSON string literal, escaped exactly as `serde_json` and `JSON.stringify`
/// escape it (so hand-written JSON matches theirs byte for byte).
pub fn push_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let b = s.as_bytes();
    let mut start = 0;
    loop {
        // Up to the next byte to escape (ASCII, so a char boundary), copied in one go.
        let i = plain_run(b, start);
        out.push_str(s.get(start..i).unwrap_or(""));
        let Some(&c) = b.get(i) else { break };
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(HEX[usize::from(c >> 4)] as char);
                out.push(HEX[usize::from(c & 0xf)] as char);
            }
        }
        start = i + 1;
    }
    out.push('"');
}

/// The index of the first byte at or after `j` that is `"`, `\` or a control character (the
/// length of `b` when there is none), sixteen bytes at a time with SSE2 on x86-64 and with
/// `simd128` on wasm32 (the component and the wasip2 tests have it), else eight at a time:
/// where a JSON string ends, or has something to escape or unescape. `j` past the end gives `j`.
pub fn plain_run(b: &[u8], j: usize) -> usize {
    // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline).
    #[cfg(target_arch = "x86_64")]
    let found = unsafe { plain_run_simd(b, j) };
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let found = plain_run_simd(b, j);
    #[cfg(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128")))]
    let j = match found {
        Ok(found) => return found,
        Err(rest) => rest,
    };
    plain_run_swar(b, j)
}

/// [`plain_run`] sixteen bytes at a time (SSE2): `Ok` with the index, or `Err` with where fewer
/// than sixteen bytes remain, for the eight-byte scan to finish. An `unsafe fn`, so that calling
/// the intrinsics compiles on Rust 1.85 (the workspace's `rust-version`; they are safe in a
/// `target_feature` function only from 1.87).
///
/// # Safety
/// The CPU has SSE2: every x86-64 CPU does.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn plain_run_simd(b: &[u8], mut j: usize) -> Result<usize, usize> {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let (quote, backslash, control) = (
        _mm_set1_epi8(b'"' as i8),
        _mm_set1_epi8(b'\\' as i8),
        _mm_set1_epi8(0x1f),
    );
    while let Some(chunk) = b.get(j..).and_then(|rest| rest.get(..16)) {
        // SAFETY: `chunk` is 16 readable bytes, and `_mm_loadu_si128` has no alignment requirement.
        let w = unsafe { _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>()) };
        // A control character is a byte at most 0x1f (unsigned): `min(w, 0x1f) == w`.
        let controls = _mm_cmpeq_epi8(_mm_min_epu8(w, control), w);
        let special = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(w, quote), _mm_cmpeq_epi8(w, backslash)),
            controls,
        );
        let mask = _mm_movemask_epi8(special);
        if mask != 0 {
            return Ok(j + mask.trailing_zeros() as usize);
        }
        j += 16;
    }
    Err(j)
}

/// [`plain_run`] sixteen bytes at a time (wasm `simd128`): as the SSE2 one.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn plain_run_simd(b: &[u8], mut j: usize) -> Result<usize, usize> {
    use core::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_load, v128_or};
    let (quote, backslash, space) = (u8x16_splat(b'"'), u8x16_splat(b'\\'), u8x16_splat(0x20));
    while let Some(chunk) = b.get(j..).and_then(|rest| rest.get(..16)) {
        // SAFETY: `chunk` is 16 readable bytes, and `v128.load` has no alignment requirement.
        let w = unsafe { v128_load(chunk.as_ptr().cast::<v128>()) };
        // `u8x16_lt` compares unsigned: a byte below 0x20 is a control character.
        let special = v128_or(v128_or(u8x16_eq(w, quote), u8x16_eq(w, backslash)), u8x16_lt(w, space));
        let mask = u8x16_bitmask(special);
        if mask != 0 {
            return Ok(j + mask.trailing_zeros() as usize);
        }
        j += 16;
    }
    Err(j)
}

/// [`plain_run`] eight bytes at a time in a `u64`, then a byte at a time.
fn plain_run_swar(b: &[u8], mut j: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    const QUOTE: u64 = ONES * b'"' as u64;
    const BACKSLASH: u64 = ONES * b'\\' as u64;
    const SPACE: u64 = ONES * 0x20;
    while let Some(&[c0, c1, c2, c3, c4, c5, c6, c7]) = b.get(j..).and_then(|rest| rest.get(..8)) {
        let w = u64::from_le_bytes([c0, c1, c2, c3, c4, c5, c6, c7]);
        let (q, s) = (w ^ QUOTE, w ^ BACKSLASH);
        // The high bit of a byte is set for a zero byte of `q` or `s`, or a byte of `w` below
        // 0x20; a borrow can set it falsely only above a byte that really is one, so the lowest
        // set bit (the first byte in the text) is exact.
        let special = (q.wrapping_sub(ONES) & !q | s.wrapping_sub(ONES) & !s | w.wrapping_sub(SPACE) & !w) & HIGH;
        if special != 0 {
            return j + (special.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    while b.get(j).is_some_and(|&c| c >= 0x20 && c != b'"' && c != b'\\') {
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::{is_null, nests_deeper_than, plain_run, plain_run_swar, push_string};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn push_string_escapes_as_serde_json_does(s in any::<String>(), ctrl in "[\\x00-\\x1f\"\\\\a-z]{0,40}") {
            for s in [&s, &ctrl, &format!("{ctrl}{s}{ctrl}")] {
                let mut out = String::new();
                push_string(&mut out, s);
                prop_assert_eq!(out, serde_json::to_string(s).unwrap());
            }
        }
    }

    /// The wasm tests are for the component's code, SIMD scan included: a `RUSTFLAGS` in the
    /// environment replaces `.cargo/config.toml`'s and would quietly drop it.
    #[cfg(target_arch = "wasm32")]
    #[test]
    fn wasm_tests_have_simd128() {
        assert!(
            cfg!(target_feature = "simd128"),
            "built without simd128 (RUSTFLAGS set?)"
        );
    }

    #[test]
    fn plain_run_stops_at_the_first_quote_backslash_or_control() {
        let naive = |b: &[u8], j: usize| {
            (j..b.len())
                .find(|&k| b[k] < 0x20 || b[k] == b'"' || b[k] == b'\\')
                .unwrap_or(b.len().max(j))
        };
        // Every special byte at every offset of words around it, with bytes that differ from the
        // specials by one bit and bytes above 0x7f before and after.
        for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for len in 0..40 {
                for at in 0..=len {
                    let mut b: Vec<u8> = (0..len)
                        .map(|k| [b'#', b'^', 0x21, 0xff, 0x80, b' ', b'a', 0x7f][k % 8])
                        .collect();
                    if at < len {
                        b[at] = special;
                    }
                    // A second special byte after the first: the first is the one found.
                    if at + 3 < len {
                        b[at + 3] = b'"';
                    }
                    for j in 0..=len + 2 {
                        assert_eq!(plain_run(&b, j), naive(&b, j), "{b:?} from {j}");
                        // The eight-byte scan alone: what the SIMD scans leave to it, and all of
                        // the scan on targets without them.
                        assert_eq!(plain_run_swar(&b, j), naive(&b, j), "swar: {b:?} from {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn openers_counts_every_bracket_and_brace_at_every_offset() {
        let naive = |b: &[u8]| b.iter().filter(|&&c| c == b'[' || c == b'{').count();
        let mut text: Vec<u8> = Vec::new();
        for i in 0..300u32 {
            // Every byte value, brackets at varying offsets, bytes that differ from them by one bit.
            text.push((i.wrapping_mul(37) % 256) as u8);
            if i % 7 == 0 {
                text.push(b'[');
            }
            if i % 11 == 0 {
                text.extend_from_slice(b"{;[}]\x5b\x7b");
            }
        }
        for start in 0..9 {
            for end in (start..text.len()).step_by(13) {
                assert_eq!(super::openers(&text[start..end]), naive(&text[start..end]));
            }
        }
        assert_eq!(super::openers(&[b'{'; 64]), 64);
        assert_eq!(super::openers(&[0xff; 64]), 0);
    }

    #[test]
    fn null_is_only_null() {
        for t in ["null", " null", "null\n", "\t\r\n null \n"] {
            assert!(is_null(t), "{t:?}");
        }
        for t in ["", "nul", "\"null\"", "null null", "\u{c}null", "[null]"] {
            assert!(!is_null(t), "{t:?}");
        }
    }

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
        // Past the fast path, the depth reached is compared, not only the total of openers.
        assert!(!nests_deeper_than(b"[[1],[2]]", 2) && nests_deeper_than(b"[[[1]],[2]]", 2));
        assert!(!nests_deeper_than(br#""\"#, 0), "an escape at the end does not overrun");
        // The same past the fast path (more openers than `max`): an unterminated string, with
        // or without an escape at its end, is scanned to the end and no further.
        for text in [&br#""[["#[..], br#""[[\"#, br#"["[\"#] {
            assert!(!nests_deeper_than(text, 1), "{text:?}");
        }
    }
}
