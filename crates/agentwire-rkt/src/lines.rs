//! Reassembly of messages sent one line per WebSocket frame.
//!
//! `wscat` sends every line typed or pasted as its own message, blank lines included, so the
//! guide's "paste this into wscat" arrives as nine frames. A frame that is a lone start line
//! (`RKT/...` with no newline) begins line mode; each following frame is one more line until
//! the message is complete:
//! - without a body: at the blank line, unless the type carries a body (HELLO, REQUEST,
//!   MEMORY_SET, MEMORY_GET, PAY, AUTH) or `Content-Type`/`Content-Length` is set;
//! - with a body: when `Content-Length` bytes have arrived, or else when the brackets of the
//!   JSON body balance (strings and escapes respected; a body pasted over several lines works);
//! - a new start line ends a message still waiting for its body (a bodiless HELLO); so does the
//!   server's HELLO timeout before the session opens.
//!
//! A line starting with `{` or `[` right after the headers is taken as the body (a missing blank
//! line). The message then goes through the ordinary decoder.

use crate::codec::MessageType;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Headers,
    /// The blank line came and a body is expected (a message that can have none is complete at
    /// the blank line).
    AfterBlank,
    Body,
}

/// Tracks bracket depth of a JSON body as its lines arrive, so completeness is known without
/// parsing the body again for every line.
#[derive(Debug, Default, Clone, Copy)]
struct JsonScan {
    depth: u64,
    in_string: bool,
    escaped: bool,
    started: bool,
    done: bool,
}

impl JsonScan {
    /// Scans one line of a body. A JSON string cannot hold a raw line break, so a string ends
    /// with its line at the latest (an unterminated one is the decoder's error to report, not a
    /// reason to take the next lines, the next message's start line among them, into the
    /// body), and a body that is a string is complete on its line as any other scalar is.
    fn feed(&mut self, line: &str) {
        self.scan_line(line);
        if self.in_string && !self.started {
            self.done = true;
        }
        self.in_string = false;
        self.escaped = false;
    }

    fn scan_line(&mut self, line: &str) {
        for b in line.bytes() {
            if self.done {
                return;
            }
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => {
                        self.in_string = false;
                        self.done = !self.started;
                    }
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.depth += 1;
                    self.started = true;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.done = self.started && self.depth == 0;
                }
                b' ' | b'\t' | b'\r' => {}
                // A body that is not an object or array is complete on its line.
                _ if !self.started => self.done = true,
                _ => {}
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct LineAssembler {
    buf: String,
    body_start: usize,
    phase: Phase,
    active: bool,
    /// `Content-Length` of the message being assembled, read at its blank line.
    declared: Option<usize>,
    scan: JsonScan,
    /// How many messages were started: a driver restarts its timeout when this changes.
    starts: u64,
}

/// True for a frame that starts line mode.
pub(crate) fn starts_line_mode(frame: &str) -> bool {
    let f = frame.trim_end_matches(['\r', '\n']);
    f.starts_with("RKT/") && !f.contains('\n')
}

fn carries_body(kind: Option<MessageType>) -> bool {
    use MessageType::*;
    matches!(kind, Some(Hello | Request | MemorySet | MemoryGet | Pay | Auth))
}

impl LineAssembler {
    pub fn new() -> Self {
        LineAssembler {
            buf: String::new(),
            body_start: 0,
            phase: Phase::Headers,
            active: false,
            declared: None,
            scan: JsonScan::default(),
            starts: 0,
        }
    }

    pub fn is_active(&self) -> bool {
        self.active
    }

    pub fn starts(&self) -> u64 {
        self.starts
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Takes whatever has been collected (for a timeout or an overflow).
    pub fn take(&mut self) -> String {
        self.active = false;
        self.phase = Phase::Headers;
        std::mem::take(&mut self.buf)
    }

    fn header(&self, name: &str) -> Option<&str> {
        let head = &self.buf[..self.body_start.min(self.buf.len())];
        head.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }

    fn kind(&self) -> Option<MessageType> {
        let start = self.buf.lines().next()?;
        MessageType::parse(start.split_once(' ')?.1.trim())
    }

    fn begin_body(&mut self) {
        self.body_start = self.buf.len();
        self.phase = Phase::Body;
    }

    /// Appends a body line and says whether the body is complete.
    fn body_line(&mut self, line: &str) -> bool {
        self.buf.push_str(line);
        match self.declared {
            Some(n) => self.buf.len() - self.body_start >= n,
            None => {
                self.scan.feed(line);
                self.scan.done
            }
        }
    }

    /// Feeds one frame; returns the messages it completed (at most two: one ended by a new
    /// start line, and that one if it is complete by itself).
    pub fn push(&mut self, frame: &str) -> Vec<String> {
        let mut done = Vec::new();
        let frame = frame
            .strip_suffix("\r\n")
            .or_else(|| frame.strip_suffix('\n'))
            .unwrap_or(frame);
        for line in frame.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if starts_line_mode(line) && self.active && self.phase != Phase::Body {
                done.push(self.take());
            }
            if !self.active {
                if !starts_line_mode(line) {
                    continue;
                }
                self.active = true;
                self.starts += 1;
                self.phase = Phase::Headers;
                self.body_start = usize::MAX;
                self.declared = None;
                self.scan = JsonScan::default();
                self.buf.clear();
                self.buf.push_str(line);
                continue;
            }
            match self.phase {
                Phase::Headers if line.trim().is_empty() => {
                    self.buf.push_str("\n\n");
                    self.body_start = self.buf.len();
                    self.declared = self.header("Content-Length").and_then(|v| v.parse().ok());
                    let body_required = carries_body(self.kind())
                        || self.header("Content-Type").is_some()
                        || self.header("Content-Length").is_some();
                    if body_required {
                        self.phase = Phase::AfterBlank;
                    } else {
                        done.push(self.take());
                    }
                }
                Phase::Headers if line.trim_start().starts_with(['{', '[']) => {
                    self.buf.push_str("\n\n");
                    self.body_start = self.buf.len();
                    self.declared = self.header("Content-Length").and_then(|v| v.parse().ok());
                    self.begin_body();
                    if self.body_line(line) {
                        done.push(self.take());
                    }
                }
                Phase::Headers => {
                    self.buf.push('\n');
                    self.buf.push_str(line);
                }
                Phase::AfterBlank if line.trim().is_empty() => {}
                Phase::AfterBlank => {
                    self.begin_body();
                    if self.body_line(line) {
                        done.push(self.take());
                    }
                }
                Phase::Body => {
                    self.buf.push('\n');
                    if self.body_line(line) {
                        done.push(self.take());
                    }
                }
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> Vec<String> {
        let mut a = LineAssembler::new();
        lines.iter().flat_map(|l| a.push(l)).collect()
    }

    #[test]
    fn a_string_body_is_complete_on_its_line() {
        // It took the next message's start line into the body, which lost that message.
        let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", "\"hello\"", "RKT/1.0 DISCOVER"]);
        assert_eq!(out, ["RKT/1.0 REQUEST\nTTL: 30\n\n\"hello\""]);
        // Unterminated, it still ends with its line: a JSON string holds no line break.
        let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", "\"hel", "RKT/1.0 DISCOVER", ""]);
        assert_eq!(out, ["RKT/1.0 REQUEST\nTTL: 30\n\n\"hel", "RKT/1.0 DISCOVER\n\n"]);
        // A quote inside an object's string does not end the body early.
        let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", "{\"a\":\"}\",", "\"b\":1}"]);
        assert_eq!(out, ["RKT/1.0 REQUEST\nTTL: 30\n\n{\"a\":\"}\",\n\"b\":1}"]);
    }

    #[test]
    fn escapes_end_with_their_next_byte_and_a_cut_string_in_an_object_waits_for_the_close() {
        // `\"` and `\\` are one escape each: the string closes at the last quote and the object
        // with it, on this line.
        let body = r#"{"intent":"say \"hi\" \\"}"#;
        let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", body]);
        assert_eq!(out, [format!("RKT/1.0 REQUEST\nTTL: 30\n\n{body}")]);
        // A string inside an object that the line cuts ends there, but the object does not: the
        // body goes on to its closing bracket on the next line.
        let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", "{\"intent\":\"ech", "}"]);
        assert_eq!(out, ["RKT/1.0 REQUEST\nTTL: 30\n\n{\"intent\":\"ech\n}"]);
    }

    #[test]
    fn wscat_paste_of_the_guide_hello() {
        let out = feed(&[
            "RKT/1.0 HELLO",
            "Version: 1",
            "Message-ID: aaaaaaaa-0000-0000-0000-000000000001",
            "Session-ID: bbbbbbbb-0000-0000-0000-000000000001",
            "Timestamp: 2026-06-28T00:00:00Z",
            "TTL: 30",
            "User-Agent: wscat/test",
            "",
            "{\"min_version\":1,\"max_version\":1}",
        ]);
        assert_eq!(out.len(), 1);
        let m = crate::decode(&out[0], 1 << 20).unwrap();
        assert_eq!(m.kind, MessageType::Hello);
        assert_eq!(m.body.as_deref(), Some("{\"min_version\":1,\"max_version\":1}"));
    }

    #[test]
    fn bodiless_type_completes_at_blank_line_and_multiline_json_waits() {
        let out = feed(&["RKT/1.0 DISCOVER", "Version: 1", ""]);
        assert_eq!(out.len(), 1);
        let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", "{\"intent\":", "\"echo\"}"]);
        assert_eq!(
            out,
            vec!["RKT/1.0 REQUEST\nTTL: 30\n\n{\"intent\":\n\"echo\"}".to_string()]
        );
    }

    #[test]
    fn missing_blank_line_and_new_start_line() {
        let out = feed(&["RKT/1.0 HELLO", "TTL: 30", "{\"min_version\":1,\"max_version\":1}"]);
        assert_eq!(
            out,
            vec!["RKT/1.0 HELLO\nTTL: 30\n\n{\"min_version\":1,\"max_version\":1}".to_string()]
        );
        let out = feed(&["RKT/1.0 HELLO", "TTL: 30", "", "RKT/1.0 GOODBYE", "TTL: 30", ""]);
        assert_eq!(
            out,
            vec![
                "RKT/1.0 HELLO\nTTL: 30\n\n".to_string(),
                "RKT/1.0 GOODBYE\nTTL: 30\n\n".to_string()
            ]
        );
    }

    #[test]
    fn brackets_in_strings_do_not_count_and_long_bodies_stay_linear() {
        let out = feed(&[
            "RKT/1.0 REQUEST",
            "TTL: 30",
            "",
            "{\"intent\":\"echo\",\"params\":\"}]\\\"{\"",
            "}",
        ]);
        assert_eq!(out.len(), 1);
        assert!(out[0].ends_with("\"}]\\\"{\"\n}"), "{}", out[0]);
        let mut a = LineAssembler::new();
        for l in ["RKT/1.0 PAY", "TTL: 30", "", "["] {
            assert!(a.push(l).is_empty());
        }
        let t = std::time::Instant::now();
        for _ in 0..100_000 {
            assert!(a.push("1,").is_empty());
        }
        assert_eq!(a.push("1]").len(), 1);
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(a.starts(), 1);
    }

    #[test]
    fn content_length_decides() {
        let out = feed(&["RKT/1.0 PAY", "Content-Length: 2", "", "{}"]);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn nested_close_at_the_end_of_a_line_does_not_end_the_body() {
        // The inner object closes at the end of the first body line; the outer one only on the
        // next: the message is complete there, not before.
        let out = feed(&[
            "RKT/1.0 REQUEST",
            "TTL: 30",
            "",
            "{\"intent\":\"echo\",\"params\":{\"a\":[1]}",
            "}",
        ]);
        assert_eq!(
            out,
            vec!["RKT/1.0 REQUEST\nTTL: 30\n\n{\"intent\":\"echo\",\"params\":{\"a\":[1]}\n}".to_string()]
        );
    }

    #[test]
    fn indented_first_body_line_waits_for_the_close() {
        // Blanks before the opening bracket are not a scalar body.
        for indent in [" ", "\t", "  \t "] {
            let first = format!("{indent}{{\"intent\":");
            let out = feed(&["RKT/1.0 REQUEST", "TTL: 30", "", &first, "\"echo\"}"]);
            assert_eq!(
                out,
                vec![format!("RKT/1.0 REQUEST\nTTL: 30\n\n{first}\n\"echo\"}}")],
                "{indent:?}"
            );
        }
    }

    #[test]
    fn scalar_body_is_complete_on_its_line() {
        for body in ["42", "null", "true", "-1.5"] {
            let mut a = LineAssembler::new();
            for l in ["RKT/1.0 PAY", "TTL: 30", ""] {
                assert!(a.push(l).is_empty());
            }
            assert_eq!(a.push(body), vec![format!("RKT/1.0 PAY\nTTL: 30\n\n{body}")], "{body}");
            assert!(!a.is_active());
        }
    }

    #[test]
    fn content_type_or_length_makes_a_bodiless_type_wait_for_its_body() {
        for header in ["Content-Type: application/json", "content-length: 2"] {
            let mut a = LineAssembler::new();
            for l in ["RKT/1.0 DISCOVER", "TTL: 30", header, ""] {
                assert!(a.push(l).is_empty(), "{header}");
            }
            assert_eq!(
                a.push("{}"),
                vec![format!("RKT/1.0 DISCOVER\nTTL: 30\n{header}\n\n{{}}")]
            );
        }
    }

    #[test]
    fn content_length_counts_the_body_over_several_lines() {
        // 10 bytes, then "\n1}": 13 in all. Complete at 13, not at the first line.
        let mut a = LineAssembler::new();
        for l in ["RKT/1.0 PAY", "Content-Length: 13", "", "{\"amount\":"] {
            assert!(a.push(l).is_empty(), "{l}");
        }
        assert_eq!(
            a.push("1}"),
            vec!["RKT/1.0 PAY\nContent-Length: 13\n\n{\"amount\":\n1}".to_string()]
        );
    }

    #[test]
    fn blank_lines_before_the_body_are_not_part_of_it() {
        // Enter pressed twice before the body: the body (and its Content-Length) start at `{`.
        let out = feed(&["RKT/1.0 PAY", "Content-Length: 2", "", "", " ", "{}"]);
        assert_eq!(out, vec!["RKT/1.0 PAY\nContent-Length: 2\n\n{}".to_string()]);
    }

    #[test]
    fn frames_outside_line_mode_are_ignored() {
        let mut a = LineAssembler::new();
        assert!(a.push("hello").is_empty());
        assert!(!a.is_active());
    }
}
