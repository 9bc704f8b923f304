//! Agent keys taken out of text the relay did not write itself (an upstream's error body or
//! close reason, an exception) before it goes to a browser or a log line.
//!
//! Such text is often read only up to a bound. Cutting first and redacting after would leave
//! the part of a key before the cut unmatched, and that prefix would go out. So the Worker reads
//! the bound plus [`Redactor::margin`] bytes, and [`Redactor::redact_cut`] replaces every whole
//! key, then cuts, then takes out any tail of what is left that is the start of a key (the
//! upstream's text ended, or was cut, inside one).

/// What a key is replaced with.
pub const MARK: &str = "[key]";

/// The keys to take out of text, longest first (so a key that contains another goes whole).
#[derive(Clone, Default)]
pub struct Redactor {
    keys: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor").field("keys", &self.keys.len()).finish()
    }
}

impl Redactor {
    /// A redactor for `keys` (empty ones are ignored).
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        let mut keys: Vec<String> = keys.into_iter().filter(|k| !k.is_empty()).map(str::to_owned).collect();
        keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
        keys.dedup();
        Redactor { keys }
    }

    /// The longest key's length: read this many bytes past a bound, so that a key across the
    /// bound is read whole and [`redact_cut`](Self::redact_cut) can match it.
    pub fn margin(&self) -> usize {
        self.keys.first().map_or(0, String::len)
    }

    /// `text` with every key replaced by [`MARK`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for k in &self.keys {
            if out.contains(k.as_str()) {
                out = out.replace(k.as_str(), MARK);
            }
        }
        out
    }

    /// At most `max` bytes of `text` with no key in it, not even in part. `text` is the start of
    /// a longer text unless `complete` (read up to `max` + [`margin`](Self::margin) bytes of it).
    /// Every whole key is replaced first, then the text is cut to `max` bytes at a character
    /// boundary; when it was cut (or not complete), a tail that is the start of a key is taken
    /// out and marked.
    pub fn redact_cut(&self, text: &str, max: usize, complete: bool) -> String {
        let mut out = self.redact(text);
        let cut = !complete || out.len() > max;
        out.truncate(agentwire_core::text::prefix(&out, max).len());
        if cut {
            let tail = self.partial_tail(&out);
            if tail > 0 {
                out.truncate(out.len() - tail);
                if out.len() + MARK.len() <= max {
                    out.push_str(MARK);
                }
            }
        }
        out
    }

    /// The length of the longest tail of `text` that is a proper prefix of a key (0: none).
    fn partial_tail(&self, text: &str) -> usize {
        let t = text.as_bytes();
        let mut best = 0;
        for k in &self.keys {
            let k = k.as_bytes();
            for n in (best + 1..k.len()).rev() {
                if t.ends_with(&k[..n]) && text.is_char_boundary(t.len() - n) {
                    best = n;
                    break;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk_switch_secret_key_0001";

    #[test]
    fn whole_keys_are_replaced_longest_first() {
        let r = Redactor::new(["sk_a", "sk_abc", ""]);
        assert_eq!(r.margin(), 6);
        assert_eq!(r.redact("x sk_abc y sk_a z"), "x [key] y [key] z");
        assert_eq!(Redactor::new([]).redact("sk_a"), "sk_a");
        assert_eq!(Redactor::new([]).margin(), 0);
    }

    #[test]
    fn a_key_across_the_bound_is_taken_out_whole_before_the_cut() {
        let r = Redactor::new([KEY]);
        let max = 64;
        // The key starts anywhere from well before the bound to just before it.
        for at in 0..max {
            let body = format!("{}{KEY} and more", "x".repeat(at));
            let read = &body[..body.len().min(max + r.margin())];
            let out = r.redact_cut(read, max, read.len() == body.len());
            assert!(out.len() <= max, "{at}: {out}");
            for n in 2..=KEY.len() {
                assert!(!out.contains(&KEY[..n]), "{at}: {:?} in {out:?}", &KEY[..n]);
            }
            assert!(out.starts_with(&"x".repeat(at.min(max))), "{at}: {out}");
        }
    }

    #[test]
    fn a_text_that_ends_inside_a_key_loses_that_part() {
        let r = Redactor::new([KEY, "other_key_0000000000"]);
        // The upstream's text ended (or the read failed) inside a key.
        assert_eq!(r.redact_cut("detail: sk_switch_sec", 1000, false), "detail: [key]");
        assert_eq!(r.redact_cut("detail: other_k", 1000, false), "detail: [key]");
        // Cut at the bound inside a key that was not read whole (no margin): still taken out.
        assert_eq!(r.redact_cut(&format!("abc{}", &KEY[..12]), 10, false), "abc[key]");
        // No room for the mark: the part goes all the same.
        assert_eq!(r.redact_cut(&format!("abcdefg{}", &KEY[..8]), 9, false), "abcdefg");
        // A complete text within the bound is left as it is (only whole keys go).
        assert_eq!(
            r.redact_cut("ends with sk_switch_sec", 1000, true),
            "ends with sk_switch_sec"
        );
        assert_eq!(r.redact_cut("plain", 1000, false), "plain");
        // A cut never splits a character.
        assert_eq!(r.redact_cut("ééé", 5, true), "éé");
    }

    /// Found by mutation testing: no test cut a complete text, or had a key's start after
    /// non-ASCII text, so `out.len() > max` → `==` or `>=` and `t.len() - n` → `t.len() / n` (the
    /// tail's start, 36 / 12 = 3, inside an `é`: the tail missed) survived.
    #[test]
    fn a_cut_complete_text_and_a_tail_after_non_ascii_lose_the_part() {
        let r = Redactor::new([KEY]);
        // Complete, but longer than the bound: cut there, so the start of a key goes.
        assert_eq!(
            r.redact_cut("detail: sk_switch_sec and more", 20, true),
            "detail: [key]"
        );
        // Complete and exactly the bound: not cut, left as it is.
        let text = "ends with sk_switch_sec";
        assert_eq!(r.redact_cut(text, text.len(), true), text);
        // The start of a key after two-byte characters.
        let text = format!("{}{}", "é".repeat(12), &KEY[..12]);
        assert_eq!(r.redact_cut(&text, 1000, false), format!("{}[key]", "é".repeat(12)));
    }

    /// Found by mutation testing: nothing read the `Debug` (`fmt` → `Ok(())` survived), which is
    /// written by hand so that a `{:?}` of a relay's state never prints a key.
    #[test]
    fn debug_shows_how_many_keys_not_the_keys() {
        let r = Redactor::new([KEY, "other_key_0000000000"]);
        assert_eq!(format!("{r:?}"), "Redactor { keys: 2 }");
    }
}
