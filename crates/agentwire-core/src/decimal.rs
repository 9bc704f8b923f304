//! Decimal numbers in text a peer sends (an SSE `id:`, a `Content-Length`): ASCII digits only.
//! Rust's `str::parse` also takes a leading `+` (`"+5"` is 5), which no wire format here
//! allows.

/// `s` as a `u64` when it is 1 or more ASCII digits whose value fits; `None` for anything else
/// (a sign, whitespace, an empty string, an overflow). Leading zeros are taken.
pub fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_u64;

    #[test]
    fn digits_only() {
        assert_eq!(parse_u64("0"), Some(0));
        assert_eq!(parse_u64("0042"), Some(42));
        assert_eq!(parse_u64("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "+5", "-5", " 5", "5 ", "5.0", "0x5", "18446744073709551616", "٥"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
        assert_eq!("+5".parse::<u64>(), Ok(5), "what this is for");
    }
}
