//! Keys and timestamps (UUIDs and the clock are `agentwire_peer_kit::ids`).

use agentwire_peer_kit::ids::{hex, now_ms, random_bytes};

/// `moltzap_agent_<16 hex>_<64 hex>`.
pub fn agent_key() -> String {
    format!(
        "moltzap_agent_{}_{}",
        hex(&random_bytes::<8>()),
        hex(&random_bytes::<32>())
    )
}

/// `2026-12-02T12:36:49.731Z` (what `Date.prototype.toISOString` writes).
pub fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// `iso(now_ms())`.
pub fn now_iso() -> String {
    iso(now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_796_215_009_731), "2026-12-02T12:36:49.731Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
        let k = agent_key();
        assert_eq!(k.len(), "moltzap_agent_".len() + 16 + 1 + 64);
    }
}
