//! Keys, event ids, timestamps, percent-decoding and mentions (UUIDs and the clock are
//! `agentwire_peer_kit::ids`).

use agentwire_peer_kit::ids::{hex, random_bytes};

/// `sk_switch_<48 hex>`.
pub(crate) fn agent_key() -> String {
    format!("sk_switch_{}", hex(&random_bytes::<24>()))
}

/// A Matrix-style event id: `$` and 43 base64url characters.
pub(crate) fn event_id() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = random_bytes::<33>();
    let mut out = String::with_capacity(44);
    out.push('$');
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
        for shift in [18, 12, 6, 0] {
            out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
        }
    }
    out.truncate(44);
    out
}

/// Decodes `%XX` escapes (and `+` as a space when `plus` is set); invalid escapes stay as they
/// are, invalid UTF-8 is replaced.
pub(crate) fn percent_decode(s: &str, plus: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hexval = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        match b[i] {
            b'%' if i + 2 < b.len() => match (hexval(b[i + 1]), hexval(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The query string as decoded `(name, value)` pairs.
pub(crate) fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .take(256)
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// True when `body` mentions `@name` as a whole word.
pub(crate) fn mentions(body: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let needle = format!("@{name}");
    let mut from = 0;
    while let Some(pos) = body[from..].find(&needle) {
        let end = from + pos + needle.len();
        let next = body[end..].chars().next();
        if !next.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            return true;
        }
        from = end;
    }
    false
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Milliseconds since the epoch of an ISO-8601 timestamp (`2026-05-20T20:55:00Z`, with optional
/// fraction and `Z`/`±HH:MM` offset; no offset means UTC; a bare date is midnight UTC).
pub(crate) fn parse_iso(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |t: &str| -> Option<i64> {
        if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let mut dp = date.split('-');
    let (y, mo, d) = (num(dp.next()?)?, num(dp.next()?)?, num(dp.next()?)?);
    if dp.next().is_some() || !(0..=9999).contains(&y) || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut ms = days_from_civil(y, mo, d) * 86_400_000;
    if time.is_empty() {
        return Some(ms);
    }
    let (clock, offset) = if let Some(t) = time.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = time.rfind(['+', '-']) {
        let (sign, off) = (if &time[i..=i] == "-" { -1 } else { 1 }, &time[i + 1..]);
        let (oh, om) = off.split_once(':').unwrap_or((off.get(..2)?, off.get(2..)?));
        let (oh, om) = (num(oh)?, num(om)?);
        if oh > 23 || om > 59 {
            return None;
        }
        (&time[..i], sign * (oh * 60 + om) * 60_000)
    } else {
        (time, 0)
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut tp = hms.split(':');
    let (h, mi) = (num(tp.next()?)?, num(tp.next()?)?);
    let sec = tp.next().map(num).unwrap_or(Some(0))?;
    if tp.next().is_some() || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let frac_ms = if frac.is_empty() {
        0
    } else {
        let digits = frac.get(..frac.len().min(3))?;
        num(digits)? * 10i64.pow(3 - digits.len() as u32)
    };
    ms += ((h * 60 + mi) * 60 + sec) * 1000 + frac_ms - offset;
    Some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(agent_key().len(), "sk_switch_".len() + 48);
        let e = event_id();
        assert_eq!(e.len(), 44);
        assert!(e.starts_with('$'));
        assert_eq!(percent_decode("a%2Cb+c%zz%4", true), "a,b c%zz%4");
        assert_eq!(percent_decode("%E2%80%94", false), "\u{2014}");
        assert!(mentions("hi @bob!", "bob") && !mentions("hi @bobby", "bob") && mentions("@bob", "bob"));
        assert_eq!(parse_iso("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_iso("2026-12-02T12:36:49.731Z"), Some(1_796_215_009_731));
        assert_eq!(parse_iso("2026-12-02T13:36:49.731+01:00"), Some(1_796_215_009_731));
        assert_eq!(parse_iso("2000-02-29"), Some(951_782_400_000));
        assert_eq!(parse_iso("nope"), None);
        assert_eq!(parse_iso("2026-13-01T00:00:00Z"), None);
        for hostile in [
            "99999999999999999-01-01",
            "2026-01-01T00:00:00+99999999999999999:00",
            "2026-01-01T00:00:00.\u{e9}",
        ] {
            assert_eq!(parse_iso(hostile), None, "{hostile}");
        }
    }
}
