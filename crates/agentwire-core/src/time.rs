//! Time as an input: milliseconds since the Unix epoch, and the ISO 8601 text the wire uses.

/// Milliseconds since 1970-01-01T00:00:00Z, passed in by the driver. A [`Clock`](crate::Clock)
/// gives at most `u64::MAX / 1000` (it counts in microseconds); the engines' deadlines are `now`
/// plus a span, saturating at `u64::MAX`, so only a span that large, or a `now` no `Clock`
/// gives, is cut short.
pub type Millis = u64;

/// A time given as an `f64` of milliseconds since the epoch (a JavaScript `number`:
/// `Date.now()`), as [`Millis`]: the fraction dropped, a time past `u64::MAX` as `u64::MAX`, and
/// NaN, ±infinity, zero and negative times as 0. The wasm bindings and the relay Worker take
/// their `now` through it.
pub fn millis_from_f64(ms: f64) -> Millis {
    if ms.is_finite() && ms > 0.0 {
        // `as` truncates toward zero and saturates at `u64::MAX`.
        ms as Millis
    } else {
        0
    }
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    // Howard Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `2026-06-28T12:00:00Z`, or `2026-06-28T12:00:00.123Z` when the milliseconds are not zero.
pub fn format_iso8601(ms: Millis) -> String {
    let secs = (ms / 1000) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let frac = ms % 1000;
    // Written digit by digit (a timestamp per message): no formatting machinery.
    let mut out = String::with_capacity(24);
    if y > 9999 {
        out.push_str(&y.to_string());
    } else {
        push_digits(&mut out, y, 4);
    }
    for (sep, v) in [('-', mo), ('-', d), ('T', h), (':', mi), (':', s)] {
        out.push(sep);
        push_digits(&mut out, v, 2);
    }
    if frac != 0 {
        out.push('.');
        push_digits(&mut out, frac as i64, 3);
    }
    out.push('Z');
    out
}

/// The last `width` decimal digits of `v` (0 <= v), zero-padded.
fn push_digits(out: &mut String, v: i64, width: u32) {
    let mut p = 10i64.pow(width - 1);
    while p > 0 {
        out.push(char::from(b'0' + (v / p % 10) as u8));
        p /= 10;
    }
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0i64, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0'))
    })
}

/// Parses RFC 3339 / ISO 8601 date-times as peers write them: `Z` or a `±HH:MM` offset, an
/// optional fraction of any length (JavaScript's `toISOString`, Python's `isoformat`, Go's
/// RFC 3339). Returns `None` for anything else, or a time before 1970.
pub fn parse_iso8601(text: &str) -> Option<Millis> {
    let s = text.trim().as_bytes();
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' || !matches!(s[10], b'T' | b't' | b' ') {
        return None;
    }
    if s[13] != b':' || s[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(s, 0, 4)?, digits(s, 5, 2)?, digits(s, 8, 2)?);
    let (h, mi, sec) = (digits(s, 11, 2)?, digits(s, 14, 2)?, digits(s, 17, 2)?);
    let days_in_month = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => return None,
    };
    if d < 1 || d > days_in_month || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ms = 0i64;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            if i - start < 3 {
                frac_ms = frac_ms * 10 + i64::from(s[i] - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return None;
        }
        for _ in n..3 {
            frac_ms *= 10;
        }
    }
    let offset_min = match s.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            let (oh, om) = (digits(rest, 0, 2)?, digits(rest, 3, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let m = oh * 60 + om;
            if *sign == b'+' {
                m
            } else {
                -m
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset_min * 60;
    let ms = secs.checked_mul(1000)?.checked_add(frac_ms)?;
    u64::try_from(ms).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: Millis = 1_782_648_000_000; // 2026-06-28T12:00:00Z

    #[test]
    fn a_javascript_time_is_whole_milliseconds_from_zero_to_the_max() {
        assert_eq!(millis_from_f64(T as f64), T);
        assert_eq!(millis_from_f64(T as f64 + 0.999), T);
        assert_eq!(millis_from_f64(0.5), 0);
        assert_eq!(millis_from_f64(1.0), 1);
        assert_eq!(millis_from_f64(9_007_199_254_740_991.0), 9_007_199_254_740_991);
        for nothing in [
            0.0,
            -0.0,
            -1.0,
            -0.5,
            f64::MIN,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(millis_from_f64(nothing), 0, "{nothing}");
        }
        for huge in [18_446_744_073_709_551_616.0, 1e30, f64::MAX] {
            assert_eq!(millis_from_f64(huge), u64::MAX, "{huge}");
        }
    }

    #[test]
    fn formats_like_the_guide() {
        assert_eq!(format_iso8601(T), "2026-06-28T12:00:00Z");
        assert_eq!(format_iso8601(T + 7), "2026-06-28T12:00:00.007Z");
        assert_eq!(format_iso8601(0), "1970-01-01T00:00:00Z");
        // The last day of a 400-year era.
        assert_eq!(format_iso8601(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(format_iso8601(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(format_iso8601(253_402_300_800_000), "10000-01-01T00:00:00Z");
        assert!(
            format_iso8601(u64::MAX).ends_with("-04-03T14:25:51.615Z"),
            "{}",
            format_iso8601(u64::MAX)
        );
    }

    #[test]
    fn parses_every_client_style() {
        assert_eq!(parse_iso8601("2026-06-28T12:00:00Z"), Some(T));
        assert_eq!(parse_iso8601("2026-06-28T12:00:00.123Z"), Some(T + 123));
        assert_eq!(parse_iso8601("2026-06-28T12:00:00.123456+00:00"), Some(T + 123));
        assert_eq!(parse_iso8601("2026-06-28T21:00:00+09:00"), Some(T));
        assert_eq!(parse_iso8601("2026-06-28T12:00:00.5Z"), Some(T + 500));
    }

    #[test]
    fn leap_days_offsets_and_leap_seconds_at_their_edges() {
        assert_eq!(parse_iso8601("2024-02-29T00:00:00Z"), Some(1_709_164_800_000));
        assert_eq!(parse_iso8601("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(parse_iso8601("2026-06-28T17:30:00+05:30"), Some(T));
        assert_eq!(parse_iso8601("2026-06-28T06:15:00-05:45"), Some(T));
        assert_eq!(parse_iso8601("2026-06-29T11:59:00+23:59"), Some(T));
        assert_eq!(parse_iso8601("2026-06-28t12:00:00z"), Some(T));
        assert_eq!(parse_iso8601("2026-06-28 12:00:00Z"), Some(T));
        // A leap second reads as the second before it.
        assert_eq!(parse_iso8601("2026-06-28T11:59:60Z"), Some(T - 1000));
        for bad in [
            "2026-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2026-06-28T12:00:00+24:00",
            "2026-06-28T12:00:00+00:60",
            "2026-06-28T11:59:61Z",
            "2026/06-28T12:00:00Z",
            "2026-06/28T12:00:00Z",
            "2026-06-28_12:00:00Z",
            "2026-06-28T12-00:00Z",
            "2026-06-28T12:00-00Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn refuses_nonsense() {
        for bad in [
            "",
            "2026-06-28",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-06-28T12:00:00",
            "2026-06-28T12:00:00.Z",
            "2026-06-28T12:00:00+9:00",
            "1969-12-31T23:59:59Z",
            "２０２６-06-28T12:00:00Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    /// Every day of the years around the calendar's edges (1970, 2000 and its leap day, the
    /// centuries 2100 and 2400, 9999), at its first and last millisecond, against a calendar
    /// counted day by day here: formatted as that date and parsed back to that time.
    #[test]
    fn every_day_around_the_calendars_edges_formats_and_parses_as_counted() {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let month_days = |y: i64, m: i64| match m {
            2 if leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        const DAY: u64 = 86_400_000;
        for (first, last) in [(1970, 1972), (1999, 2001), (2099, 2101), (2399, 2401), (9998, 9999)] {
            let mut day = (1970..first).map(|y| if leap(y) { 366 } else { 365 }).sum::<u64>();
            for y in first..=last {
                for m in 1..=12 {
                    for d in 1..=month_days(y, m) {
                        let date = format!("{y:04}-{m:02}-{d:02}");
                        let (start, end) = (day * DAY, day * DAY + DAY - 1);
                        let (first_ms, last_ms) = (format!("{date}T00:00:00Z"), format!("{date}T23:59:59.999Z"));
                        assert_eq!(format_iso8601(start), first_ms);
                        assert_eq!(format_iso8601(end), last_ms);
                        assert_eq!(parse_iso8601(&first_ms), Some(start), "{first_ms}");
                        assert_eq!(parse_iso8601(&last_ms), Some(end), "{last_ms}");
                        day += 1;
                    }
                }
            }
        }
    }

    /// Each field one past its range, the others valid, is refused on its own.
    #[test]
    fn each_field_past_its_range_alone_is_refused() {
        assert_eq!(parse_iso8601("2026-06-28T23:59:59Z"), Some(T + 43_199_000));
        for bad in [
            "2026-00-28T12:00:00Z",
            "2026-06-00T12:00:00Z",
            "2026-06-31T12:00:00Z",
            "2026-06-28T24:00:00Z",
            "2026-06-28T12:60:00Z",
            "2026-06-28T12:00:61Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_fraction_with_nothing_after_it_is_refused_not_read_past_the_end() {
        for bad in [
            "2026-06-28T12:00:00.1",
            "2026-06-28T12:00:00.123456",
            " 2026-06-28T12:00:00.5 ",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_offset_is_exactly_sign_hh_colon_mm() {
        assert_eq!(parse_iso8601("2026-06-28T21:00:00+09:00"), Some(T));
        for bad in [
            "2026-06-28T21:00:00+09000",
            "2026-06-28T21:00:00+09:000",
            "2026-06-28T21:00:00+09:0",
            "2026-06-28T21:00:00+0900",
            "2026-06-28T21:00:00+09:00Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn round_trips(ms in 0u64..253_402_300_799_999) {
            prop_assert_eq!(parse_iso8601(&format_iso8601(ms)), Some(ms));
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_iso8601(&s);
        }
    }
}
