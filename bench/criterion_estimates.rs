//! Criterion's estimates of this run, read back after its report so that a bench can print its
//! ratios (a case against its baseline, measured side by side in the same process). Shared by
//! the criterion benches through `#[path]`: criterion 0.5 gives no estimates to the program, only
//! the `new/estimates.json` it writes for each case.

use std::time::SystemTime;

/// The estimates written since [`Estimates::start`].
pub struct Estimates {
    since: SystemTime,
    dir: String,
}

impl Estimates {
    /// Call before the benches run: older estimates (an earlier run, a case filtered out now)
    /// are not read.
    pub fn start() -> Self {
        // Where criterion writes: $CRITERION_HOME, $CARGO_TARGET_DIR/criterion, else the
        // workspace's target/ (every bench's package is two levels below the workspace root).
        let dir = std::env::var("CRITERION_HOME").unwrap_or_else(|_| {
            let target = std::env::var("CARGO_TARGET_DIR")
                .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
            format!("{target}/criterion")
        });
        Self {
            since: SystemTime::now(),
            dir,
        }
    }

    /// The time per iteration of `group/name` in ns that criterion reports (its slope estimate,
    /// else the mean); none when the case did not run now (a filter, `--profile-time`, test
    /// mode).
    pub fn time_ns(&self, group: &str, name: &str) -> Option<f64> {
        // Criterion's directory names: these characters become `_`.
        let safe = |s: &str| s.replace(['?', '"', '/', '\\', '*', '<', '>', ':', '|', '^'], "_");
        let path = format!("{}/{}/{}/new/estimates.json", self.dir, safe(group), safe(name));
        if std::fs::metadata(&path).and_then(|m| m.modified()).ok()? < self.since {
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v["slope"]["point_estimate"]
            .as_f64()
            .or_else(|| v["mean"]["point_estimate"].as_f64())
    }

    /// Prints, for each `(case, baseline)` of `group`, both times and the ratio of speeds
    /// baseline time / case time (above 1 the case is faster, below 1 slower). Pairs that did
    /// not both run now are left out.
    pub fn print_ratios(&self, group: &str, pairs: &[(&str, &str)]) {
        let rows: Vec<_> = pairs
            .iter()
            .filter_map(|&(case, base)| Some((case, base, self.time_ns(group, case)?, self.time_ns(group, base)?)))
            .collect();
        if rows.is_empty() {
            return;
        }
        println!("\n{group}: speed against the baseline, this run (baseline time / case time; > 1 is faster)");
        for (case, base, c, b) in rows {
            println!(
                "  {case:<36} {:>9.3} µs  vs {base:<28} {:>9.3} µs  ratio {:.2}",
                c / 1e3,
                b / 1e3,
                b / c
            );
        }
    }
}
