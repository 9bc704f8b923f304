//! The demo intents' data: deterministic, derived from the city name and the date.

use agentwire_core::{format_iso8601, Millis};
use serde_json::{json, Value};

const CONDITIONS: [&str; 6] = ["Sunny", "Partly cloudy", "Cloudy", "Rain", "Showers", "Windy"];

fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// `weather.current`: `{city, temperature, condition, humidity, wind_kph}` (°C). Seoul is the
/// guide's example: 24 and Sunny.
pub fn current(city: &str) -> Value {
    let h = fnv(&[city.to_lowercase().as_bytes()]);
    let (temperature, condition) = if city.eq_ignore_ascii_case("seoul") {
        (24, "Sunny")
    } else {
        (5 + (h % 31) as i64, CONDITIONS[(h >> 8) as usize % CONDITIONS.len()])
    };
    json!({
        "city": city,
        "temperature": temperature,
        "condition": condition,
        "humidity": 30 + (h >> 16) % 60,
        "wind_kph": (h >> 24) % 40,
    })
}

/// `weather.forecast`: one item per day from tomorrow, `{date, high, low, condition}`.
pub fn forecast(city: &str, days: u32, today: Millis) -> Vec<Value> {
    (1..=u64::from(days))
        .map(|d| {
            let date = format_iso8601((today - today % 86_400_000).saturating_add(d * 86_400_000))[..10].to_string();
            let h = fnv(&[city.to_lowercase().as_bytes(), date.as_bytes()]);
            let low = (h % 20) as i64;
            json!({
                "date": date,
                "high": low + 4 + ((h >> 8) % 10) as i64,
                "low": low,
                "condition": CONDITIONS[(h >> 16) as usize % CONDITIONS.len()],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_guide_shaped() {
        assert_eq!(current("Seoul")["temperature"], 24);
        assert_eq!(current("Seoul")["condition"], "Sunny");
        assert_eq!(current("Oslo"), current("Oslo"));
        let f = forecast("Seoul", 7, 1_782_648_000_000);
        assert_eq!(f.len(), 7);
        assert_eq!(f[0]["date"], "2026-06-29");
        assert_eq!(f[6]["date"], "2026-07-05");
        assert!(f.iter().all(|d| d["high"].as_i64() > d["low"].as_i64()));
        assert_eq!(f, forecast("Seoul", 7, 1_782_648_000_000 + 3_600_000));
    }

    #[test]
    fn a_city_gets_the_same_data_in_every_release_within_its_ranges() {
        assert_eq!(
            current("Oslo"),
            json!({"city": "Oslo", "temperature": 6, "condition": "Windy", "humidity": 40, "wind_kph": 21})
        );
        // Ten seconds past midnight UTC: the first day is still tomorrow.
        let f = forecast("Oslo", 2, 1_782_604_800_000 + 10_000);
        assert_eq!(
            f,
            [
                json!({"date": "2026-06-29", "high": 8, "low": 1, "condition": "Rain"}),
                json!({"date": "2026-06-30", "high": 20, "low": 11, "condition": "Rain"}),
            ]
        );
        for city in ["Oslo", "Lima", "Cairo", "Perth", "Quito", "Nuuk", "Baku", "Riga"] {
            let c = current(city);
            assert!((5..=35).contains(&c["temperature"].as_i64().unwrap()), "{c}");
            assert!((30..90).contains(&c["humidity"].as_u64().unwrap()), "{c}");
            assert!(c["wind_kph"].as_u64().unwrap() < 40, "{c}");
            for d in forecast(city, 7, 1_782_648_000_000) {
                let (high, low) = (d["high"].as_i64().unwrap(), d["low"].as_i64().unwrap());
                assert!((0..20).contains(&low) && (4..=13).contains(&(high - low)), "{d}");
                assert!(CONDITIONS.iter().any(|c| d["condition"] == *c), "{d}");
            }
        }
    }

    #[test]
    fn a_clock_at_the_end_of_time_gives_dates_not_a_panic() {
        let f = forecast("Seoul", 3, u64::MAX - 1);
        assert_eq!(f.len(), 3);
        assert_eq!(f[1]["date"], f[2]["date"], "the last day repeats; time ends there");
    }
}
