//! The canonical encoding of a [`JsonValue`]: RFC 8785, the JSON Canonicalization Scheme (JCS).
//!
//! - No whitespace.
//! - Object members sorted by their keys compared as UTF-16 code units (not as UTF-8 bytes or
//!   code points: `"\u{e000}"` sorts after `"😀"`, whose first unit is the surrogate `0xD83D`).
//! - Strings escaped as ECMAScript's `JSON.stringify` escapes them: `\"`, `\\`, `\b`, `\f`,
//!   `\n`, `\r`, `\t`, other control characters as `\u00xx` (lowercase hex), everything else
//!   (including `/`, DEL and non-ASCII) as is.
//! - Numbers as ECMAScript's `Number.prototype.toString`: the shortest decimal digits that read
//!   back to the same `f64`, positional when the decimal exponent is in `-7 < e < 21`, else
//!   `d.ddde+N` / `d.ddde-N`; `-0` is `0`.
//!
//! The encoding is what the 32,768-byte content limit measures ([`super::content`]) and what the
//! golden vectors pin.

use super::json::JsonValue;

/// The canonical (RFC 8785) text of `value`.
pub fn to_canonical(value: &JsonValue) -> String {
    let mut out = String::new();
    write_canonical(&mut out, value);
    out
}

/// Appends the canonical text of `value` to `out`.
pub fn write_canonical(out: &mut String, value: &JsonValue) {
    match value {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(true) => out.push_str("true"),
        JsonValue::Bool(false) => out.push_str("false"),
        JsonValue::Number(n) => push_number(out, n.get()),
        JsonValue::String(s) => agentwire_core::json::push_string(out, s),
        JsonValue::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, v);
            }
            out.push(']');
        }
        JsonValue::Object(map) => {
            let mut members: Vec<_> = map.iter().collect();
            // BTreeMap order is UTF-8 byte order, which differs from UTF-16 order only when a
            // key has a character above U+FFFF; skip the re-sort when none does.
            if map.keys().any(|k| k.chars().any(|c| c > '\u{ffff}')) {
                members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            }
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                agentwire_core::json::push_string(out, k);
                out.push(':');
                write_canonical(out, v);
            }
            out.push('}');
        }
    }
}

/// `x` as ECMAScript's `Number.prototype.toString` writes it (`x` finite: NaN and the
/// infinities, which no [`JsonValue`] holds, are written `0`, never as text that is not JSON).
pub fn format_number(x: f64) -> String {
    let mut out = String::new();
    push_number(&mut out, x);
    out
}

fn push_number(out: &mut String, x: f64) {
    if x == 0.0 || !x.is_finite() {
        out.push('0');
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` writes the shortest round-trip digits: `d[.ddd]e<exp>`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let (digits, exp) = break_tie_to_even(x.abs(), digits, exp);
    let k = digits.len() as i32;
    let n = exp + 1; // the decimal point sits after `n` digits
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

/// ECMAScript: when two shortest digit strings are equally close to `x`, the even one. Rust's
/// shortest formatting picks the one above (`1424953923781206.25` gives `…206.3`, JavaScript
/// `…206.2`). A tie means the exact decimal value of `x` has one digit more than the shortest
/// form, and that digit is 5; only then is the exact expansion (at most 767 significant digits)
/// written out and compared.
fn break_tie_to_even(x: f64, digits: String, exp: i32) -> (String, i32) {
    let k = digits.len();
    let near = format!("{:.*e}", k, x);
    if near.split_once('e').is_none_or(|(m, _)| !m.ends_with('5')) {
        return (digits, exp);
    }
    let exact = format!("{:.766e}", x);
    let Some((m, e)) = exact.split_once('e') else {
        return (digits, exp);
    };
    let exact_digits: String = m.chars().filter(|c| *c != '.').collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    if e.parse::<i32>().ok() != Some(exp) || exact_digits.len() != k + 1 || !exact_digits.ends_with('5') {
        return (digits, exp);
    }
    // The two neighbours: the exact digits cut to `k`, and that plus one in the last place.
    let low = &exact_digits[..k];
    let low_even = low
        .bytes()
        .last()
        .is_some_and(|d| matches!(d, b'0' | b'2' | b'4' | b'6' | b'8'));
    let (mut cand, mut cand_exp) = if low_even {
        (low.to_owned(), exp)
    } else {
        let mut b = low.as_bytes().to_vec();
        let mut i = b.len();
        loop {
            if i == 0 {
                b.insert(0, b'1');
                break;
            }
            i -= 1;
            if b[i] == b'9' {
                b[i] = b'0';
            } else {
                b[i] += 1;
                break;
            }
        }
        let carried = b.len() > k;
        (String::from_utf8(b).unwrap_or_default(), exp + i32::from(carried))
    };
    let trimmed = cand.trim_end_matches('0').len().max(1);
    cand.truncate(trimmed);
    if cand.is_empty() {
        cand_exp = exp;
        cand = digits.clone();
    }
    let reads_back = format!("0.{cand}e{}", cand_exp + 1).parse::<f64>().ok() == Some(x);
    if reads_back {
        (cand, cand_exp)
    } else {
        (digits, exp)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
    #[test]
    fn rfc8785_number_table() {
        for (bits, text) in [
            (0x0000000000000000u64, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ] {
            assert_eq!(format_number(f64::from_bits(bits)), text, "{bits:016x}");
        }
        // Ties whose lower neighbour is odd: the one above, as Rust writes it (`x.75` is
        // `x.8`, not `x.7`, `…215.9375` is `…215.938`, not `…215.936`).
        for (bits, text) in [
            (0x43143ff3c1cb095bu64, "1424953923781206.8"),
            (0x42ba17712ddd7ff0, "28687985401215.938"),
        ] {
            assert_eq!(format_number(f64::from_bits(bits)), text, "{bits:016x}");
        }
        // Next to a tie but no tie (the digit after the shortest is 5 only once rounded): the
        // nearer of the two, as Rust writes it, though the other reads back too. What
        // JavaScript's String(x) gives for these bit patterns.
        for (bits, text) in [
            (0x3f668ca619f3b61eu64, "0.0027526134650688447"),
            (0x41c20d356d518d76, "605711066.6371295"),
            (0x3fd56d4ffe0a4fd5, "0.33479690369244725"),
        ] {
            assert_eq!(format_number(f64::from_bits(bits)), text, "{bits:016x}");
        }
        // The two non-finite rows of the table cannot be a JsonValue at all.
        assert!(crate::harness::json::JsonNumber::new(f64::from_bits(0x7fffffffffffffff)).is_none());
        assert!(crate::harness::json::JsonNumber::new(f64::from_bits(0x7ff0000000000000)).is_none());
    }

    #[test]
    fn ecmascript_number_forms() {
        for (x, text) in [
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (123456.789, "123456.789"),
            (4.5, "4.5"),
            (0.002, "0.002"),
            (1e30, "1e+30"),
            (1e-27, "1e-27"),
        ] {
            assert_eq!(format_number(x), text);
        }
        // Not a JsonNumber, but never written as text that is not JSON (`NaN`, `inf`).
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(format_number(x), "0");
        }
    }

    /// RFC 8785 §3.2.4 (the sample input and its canonical output).
    #[test]
    fn rfc8785_sample() {
        let input = r#"{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
        let expected = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
                        \"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
        assert_eq!(to_canonical(&JsonValue::parse(input).unwrap()), expected);
    }

    /// RFC 8785 §3.2.3 (sorting by UTF-16 code units).
    #[test]
    fn rfc8785_sorting() {
        let input = r#"{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"#;
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
                        \"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\
                        \"😀\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(to_canonical(&JsonValue::parse(input).unwrap()), expected);
    }

    pub(crate) fn arb_json() -> impl Strategy<Value = JsonValue> {
        let leaf = prop_oneof![
            Just(JsonValue::Null),
            any::<bool>().prop_map(JsonValue::Bool),
            any::<f64>().prop_filter_map("finite", |x| crate::harness::json::JsonNumber::new(x)
                .map(JsonValue::Number)),
            any::<i32>().prop_map(JsonValue::from),
            any::<String>().prop_map(JsonValue::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(JsonValue::Array),
                prop::collection::vec((any::<String>(), inner), 0..6).prop_map(JsonValue::object),
            ]
        })
    }

    proptest! {
        #[test]
        fn parse_of_canonical_is_identity_and_canonical_is_idempotent(v in arb_json()) {
            let text = to_canonical(&v);
            let back = JsonValue::parse(&text).unwrap();
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(to_canonical(&back), text);
        }

        #[test]
        fn key_order_does_not_matter(pairs in prop::collection::btree_map(any::<String>(), arb_json(), 0..8)) {
            // The same members written in two orders parse to texts with one canonical form.
            let write = |members: Vec<(&String, &JsonValue)>| {
                let mut t = String::from("{");
                for (i, (k, v)) in members.into_iter().enumerate() {
                    if i > 0 {
                        t.push_str(" , ");
                    }
                    agentwire_core::json::push_string(&mut t, k);
                    t.push_str(": ");
                    t.push_str(&to_canonical(v));
                }
                t + "}"
            };
            let forward = write(pairs.iter().collect());
            let backward = write(pairs.iter().rev().collect());
            let a = to_canonical(&JsonValue::parse(&forward).unwrap());
            let b = to_canonical(&JsonValue::parse(&backward).unwrap());
            prop_assert_eq!(a, b);
        }

        #[test]
        fn numbers_round_trip(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
            let text = format_number(x);
            let back: f64 = text.parse().unwrap();
            prop_assert!(back == x);
        }

        #[test]
        fn arbitrary_text_never_panics(s in any::<String>()) {
            if let Ok(v) = JsonValue::parse(&s) {
                let c = to_canonical(&v);
                prop_assert_eq!(to_canonical(&JsonValue::parse(&c).unwrap()), c);
            }
        }
    }
}
