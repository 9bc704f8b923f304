//! [`SseParser`]: the WHATWG event-stream interpretation over chunks, with bounded memory.

use super::{SseError, SseErrorKind, SseEvent, SseLimits};
use memchr::{memchr, memchr2};

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Where the parser is while it discards the rest of an event that broke a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// Not skipping.
    No,
    /// Inside a skipped line.
    MidLine,
    /// Just after the terminator of a skipped line: another terminator ends the event.
    LineStart,
}

/// The incremental event-stream parser; the rules are in the [module documentation](super).
///
/// ```
/// use agentwire_switch::sse::{SseLimits, SseParser};
///
/// let mut parser = SseParser::new(SseLimits::default());
/// let mut out = Vec::new();
/// parser.feed(b"id: 7\nevent: message\nda", &mut out);
/// assert!(out.is_empty());
/// parser.feed(b"ta: {}\n\n: keepalive\n\n", &mut out);
/// let event = out.remove(0).unwrap();
/// assert_eq!((event.event.as_str(), event.data.as_str(), event.id.as_deref()), ("message", "{}", Some("7")));
/// assert_eq!((parser.last_event_id(), parser.comments()), (Some("7"), 1));
/// ```
#[derive(Debug, Clone)]
pub struct SseParser {
    limits: SseLimits,
    /// At the start of the stream: how many bytes of a BOM have been seen (and held). `None` once
    /// the stream has started.
    bom: Option<u8>,
    /// The unterminated tail of the last chunk (never more than `max_line_bytes`).
    line: Vec<u8>,
    /// The last chunk ended with a CR: an LF starting the next one is part of that terminator.
    after_cr: bool,
    skip: Skip,
    /// The data buffer: every `data:` value followed by '\n'. Bytes, decoded at dispatch.
    data: Vec<u8>,
    event_type: Vec<u8>,
    id: Option<String>,
    last_event_id: String,
    retry_ms: Option<u64>,
    comments: u64,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(SseLimits::default())
    }
}

impl SseParser {
    pub fn new(limits: SseLimits) -> Self {
        SseParser {
            limits,
            bom: Some(0),
            line: Vec::new(),
            after_cr: false,
            skip: Skip::No,
            data: Vec::new(),
            event_type: Vec::new(),
            id: None,
            last_event_id: String::new(),
            retry_ms: None,
            comments: 0,
        }
    }

    pub fn limits(&self) -> SseLimits {
        self.limits
    }

    /// Feeds one chunk of the body (any split: a chunk may end inside a line, inside a CRLF,
    /// inside a UTF-8 sequence); every event completed by it is appended to `out` in order, and
    /// so is one error for every event that broke a limit.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        let mut chunk = chunk;
        if let Some(held) = self.bom {
            let mut n = usize::from(held);
            while let Some(&expected) = BOM.get(n) {
                match chunk.split_first() {
                    None => {
                        self.bom = Some(n as u8);
                        return;
                    }
                    Some((&b, rest)) if b == expected => {
                        n += 1;
                        chunk = rest;
                    }
                    Some(_) => break,
                }
            }
            self.bom = None;
            if let Some(not_a_bom) = BOM.get(..n).filter(|_| n < BOM.len()) {
                self.process(not_a_bom, out);
            }
        }
        self.process(chunk, out);
    }

    /// The last-event-ID buffer (WHATWG: persisted across events; for the `Last-Event-ID`
    /// header on reconnect). `None` while it is empty (never set, or set by an empty `id:`).
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.last_event_id.as_str()).filter(|s| !s.is_empty())
    }

    /// The last valid `retry:` value seen, in ms.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The bytes held in partial state: the unterminated line, the data, event type and id of the
    /// event being read, and a partial BOM. Zero after a dispatch (or a comment between events);
    /// never more than `max_event_bytes + 3 * max_line_bytes + 2`.
    pub fn buffered_bytes(&self) -> usize {
        usize::from(self.bom.unwrap_or(0))
            + self.line.len()
            + self.data.len()
            + self.event_type.len()
            + self.id.as_ref().map_or(0, String::len)
    }

    /// Number of comment lines seen (keepalives) since creation.
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Forgets all partial state for a new stream (which may start with a BOM again); keeps
    /// [`last_event_id`](Self::last_event_id), [`retry_ms`](Self::retry_ms) and the comment count.
    pub fn reset(&mut self) {
        self.bom = Some(0);
        self.line = Vec::new();
        self.after_cr = false;
        self.skip = Skip::No;
        self.data = Vec::new();
        self.event_type = Vec::new();
        self.id = None;
    }

    fn process(&mut self, bytes: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        let mut rest = bytes;
        // (An empty chunk must leave a pending CR pending.)
        if let Some((&first, tail)) = rest.split_first() {
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            if self.skip != Skip::No {
                rest = self.skip_some(rest);
                continue;
            }
            let Some(end) = memchr2(b'\n', b'\r', rest) else {
                self.hold_partial(rest, out);
                return;
            };
            let (line, after) = rest.split_at(end);
            rest = self.after_terminator(after);
            let total = self.line.len() + line.len();
            if total > self.limits.max_line_bytes {
                empty(&mut self.line);
                self.too_large(
                    out,
                    format!("SSE line of {total} bytes"),
                    "max_line_bytes",
                    self.limits.max_line_bytes,
                );
                self.skip = Skip::LineStart;
            } else if self.line.is_empty() {
                self.complete_line(line, out);
            } else {
                let mut held = std::mem::take(&mut self.line);
                held.extend_from_slice(line);
                self.complete_line(&held, out);
                empty(&mut held);
                self.line = held;
            }
        }
    }

    /// `after` starts with the CR or LF that ends a line: returns what follows the terminator
    /// (CRLF counts as one; a CR at the end waits for the next chunk).
    fn after_terminator<'a>(&mut self, after: &'a [u8]) -> &'a [u8] {
        match after {
            [b'\r', b'\n', tail @ ..] => tail,
            [b'\r'] => {
                self.after_cr = true;
                &[]
            }
            [_, tail @ ..] => tail,
            [] => after,
        }
    }

    /// Keeps the unterminated end of a chunk, or gives up on the event when the line is too long.
    fn hold_partial(&mut self, tail: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        let total = self.line.len() + tail.len();
        if total > self.limits.max_line_bytes {
            empty(&mut self.line);
            let limit = self.limits.max_line_bytes;
            self.too_large(
                out,
                format!("SSE line of at least {total} bytes"),
                "max_line_bytes",
                limit,
            );
            self.skip = Skip::MidLine;
        } else {
            self.line.extend_from_slice(tail);
        }
    }

    /// Discards bytes of a skipped event; returns what is left after the blank line ending it,
    /// or after the last terminator found.
    fn skip_some<'a>(&mut self, rest: &'a [u8]) -> &'a [u8] {
        if self.skip == Skip::LineStart && matches!(rest.first(), Some(b'\n' | b'\r')) {
            self.skip = Skip::No;
            self.clear_event();
            return self.after_terminator(rest);
        }
        match memchr2(b'\n', b'\r', rest) {
            None => {
                self.skip = Skip::MidLine;
                &[]
            }
            Some(end) => {
                self.skip = Skip::LineStart;
                let (_, after) = rest.split_at(end);
                self.after_terminator(after)
            }
        }
    }

    fn complete_line(&mut self, line: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        match memchr(b':', line) {
            None if line.is_empty() => self.dispatch(out),
            None => self.field(line, b"", out),
            Some(0) => self.comments += 1,
            Some(colon) => {
                let (name, value) = line.split_at(colon);
                let value = value.get(1..).unwrap_or_default();
                let value = value.strip_prefix(b" ").unwrap_or(value);
                self.field(name, value, out);
            }
        }
    }

    fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<Result<SseEvent, SseError>>) {
        match name {
            b"data" => {
                let total = self.data.len() + value.len();
                if total > self.limits.max_event_bytes {
                    let limit = self.limits.max_event_bytes;
                    self.too_large(
                        out,
                        format!("SSE event data of at least {total} bytes"),
                        "max_event_bytes",
                        limit,
                    );
                    self.skip = Skip::LineStart;
                } else {
                    self.data.reserve(value.len() + 1);
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
            }
            b"event" => {
                empty(&mut self.event_type);
                self.event_type.extend_from_slice(value);
            }
            b"id" if memchr(0, value).is_none() => {
                let id = String::from_utf8_lossy(value);
                if self.last_event_id.capacity() > KEEP_BYTES {
                    self.last_event_id = String::new();
                }
                self.last_event_id.clear();
                self.last_event_id.push_str(&id);
                self.id = Some(id.into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = value
                    .iter()
                    .fold(0u64, |ms, d| ms.saturating_mul(10).saturating_add(u64::from(d - b'0')));
                self.retry_ms = Some(ms);
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Result<SseEvent, SseError>>) {
        let id = self.id.take();
        if self.data.is_empty() {
            empty(&mut self.event_type);
            return;
        }
        self.data.pop();
        let data = lossy(std::mem::take(&mut self.data));
        let event = if self.event_type.is_empty() {
            "message".to_owned()
        } else {
            lossy(std::mem::take(&mut self.event_type))
        };
        out.push(Ok(SseEvent { event, data, id }));
    }

    /// Reports the event as too large and drops what was read of it.
    fn too_large(&mut self, out: &mut Vec<Result<SseEvent, SseError>>, what: String, name: &str, limit: usize) {
        self.clear_event();
        out.push(Err(SseError {
            kind: SseErrorKind::TooLarge,
            message: format!("{what} exceeds the limit of {limit} bytes ({name}); the rest of the event is skipped"),
        }));
    }

    fn clear_event(&mut self) {
        empty(&mut self.data);
        empty(&mut self.event_type);
        self.id = None;
    }
}

/// The most a buffer keeps for reuse once emptied; one that grew past it (for a long line, a large
/// event) is freed, so one large event does not hold its size for the rest of the stream.
const KEEP_BYTES: usize = 64 << 10;

fn empty(buf: &mut Vec<u8>) {
    if buf.capacity() > KEEP_BYTES {
        *buf = Vec::new();
    } else {
        buf.clear();
    }
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(parser: &mut SseParser, chunks: &[&[u8]]) -> Vec<Result<SseEvent, SseError>> {
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out);
        }
        out
    }

    fn event(event: &str, data: &str, id: Option<&str>) -> Result<SseEvent, SseError> {
        Ok(SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        })
    }

    /// One large event (a line split over chunks, a long event name and id, data past the
    /// limit) does not leave the parser holding its size.
    #[test]
    fn buffers_grown_for_one_large_event_are_freed() {
        let capacities = |p: &SseParser| {
            [
                p.line.capacity(),
                p.data.capacity(),
                p.event_type.capacity(),
                p.last_event_id.capacity(),
            ]
        };
        let big = "x".repeat(600 << 10);
        let mut p = SseParser::default();
        let head = format!("event: {big}\nid: {big}\ndata: ");
        let out = parse(
            &mut p,
            &[head.as_bytes(), big.as_bytes(), b"\n\n", b"id: 1\ndata: ok\n\n"],
        );
        assert_eq!(out.len(), 2);
        assert!(capacities(&p).iter().all(|c| *c <= KEEP_BYTES), "{:?}", capacities(&p));
        let mut p = SseParser::default();
        let lines = format!("data: {big}\ndata: {big}\n\n");
        let out = parse(&mut p, &[lines.as_bytes(), b"data: ok\n\n"]);
        assert!(matches!(out.as_slice(), [Err(_), Ok(e)] if e.data == "ok"), "{out:?}");
        assert!(capacities(&p).iter().all(|c| *c <= KEEP_BYTES), "{:?}", capacities(&p));
    }

    #[test]
    fn limits_are_the_ones_given() {
        let limits = SseLimits {
            max_event_bytes: 10,
            max_line_bytes: 20,
        };
        assert_eq!(SseParser::new(limits).limits(), limits);
        assert_eq!(SseParser::default().limits(), SseLimits::default());
    }

    #[test]
    fn cr_at_the_end_of_a_chunk_waits_for_the_lf() {
        let mut p = SseParser::default();
        let out = parse(&mut p, &[b"data: a\r", b"\n\r", b"\ndata: b\r", b"\r"]);
        assert_eq!(out, vec![event("message", "a", None), event("message", "b", None)]);
        assert!(p.after_cr);
        assert_eq!(p.buffered_bytes(), 0);
    }

    #[test]
    fn empty_chunks_keep_a_pending_cr_and_a_partial_bom() {
        let mut p = SseParser::default();
        let out = parse(
            &mut p,
            &[
                b"\xEF",
                b"",
                b"\xBB\xBF",
                b"",
                b"data: a\r",
                b"",
                b"\n",
                b"",
                b"data: b\n\n",
            ],
        );
        assert_eq!(out, vec![event("message", "a\nb", None)]);
    }

    #[test]
    fn partial_bom_that_is_not_a_bom_is_data() {
        let mut p = SseParser::default();
        let out = parse(&mut p, &[b"\xEF", b"\xBB", b"x\n\ndata: y\n\n"]);
        // "\xEF\xBBx" is a field name (lossy), ignored; the next event is intact.
        assert_eq!(out, vec![event("message", "y", None)]);
        let mut p = SseParser::default();
        assert_eq!(
            parse(&mut p, &[b"\xEF\xBB", b"\xBFdata: z\n\n"]),
            vec![event("message", "z", None)]
        );
    }

    #[test]
    fn long_line_split_across_chunks_is_not_buffered() {
        let limits = SseLimits {
            max_event_bytes: 16,
            max_line_bytes: 12,
        };
        let mut p = SseParser::new(limits);
        let mut out = Vec::new();
        p.feed(b"id: 1\ndata: 0123", &mut out);
        assert!(out.is_empty());
        p.feed(b"456789", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(p.buffered_bytes(), 0);
        assert_eq!(p.skip, Skip::MidLine);
        p.feed(b"more\ndata: still skipped\n", &mut out);
        p.feed(b"\ndata: ok\n\n", &mut out);
        assert_eq!(out.len(), 2);
        assert!(matches!(&out[0], Err(e) if e.kind == SseErrorKind::TooLarge));
        assert_eq!(out[1], event("message", "ok", None));
        assert_eq!(p.last_event_id(), Some("1"));
    }

    #[test]
    fn data_limit_counts_the_joined_data() {
        let limits = SseLimits {
            max_event_bytes: 3,
            max_line_bytes: 64,
        };
        let mut p = SseParser::new(limits);
        // "a\nb" is 3 bytes: at the limit, accepted; "a\nbc" is over.
        let out = parse(&mut p, &[b"data: a\ndata: b\n\ndata: a\ndata: bc\ndata: x\n\n"]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], event("message", "a\nb", None));
        assert!(out[1].is_err());
    }

    /// The bytes of a BOM that did not complete stay where they were: they start the first
    /// line's field name (here making it unknown), they are not dropped.
    #[test]
    fn bytes_of_an_incomplete_bom_are_kept() {
        for chunks in [
            &[&b"\xEFdata: x\n\ndata: y\n\n"[..]][..],
            &[b"\xEF\xBB", b"data: x\n\ndata: y\n\n"],
            &[b"\xEF", b"\xBBdata: x\n\n", b"data: y\n\n"],
        ] {
            let mut p = SseParser::default();
            assert_eq!(parse(&mut p, chunks), vec![event("message", "y", None)], "{chunks:?}");
        }
    }

    /// `buffered_bytes` is the sum of every part held: a partial BOM, the unterminated line, the
    /// data (with its '\n'), the event type and the id.
    #[test]
    fn buffered_bytes_counts_each_part_held() {
        let mut p = SseParser::default();
        assert!(parse(&mut p, &[b"\xEF\xBB"]).is_empty());
        assert_eq!(p.buffered_bytes(), 2, "a partial BOM");
        assert!(parse(&mut p, &[b"\xBFid: 77\nevent: ev\ndata: abc\nda"]).is_empty());
        // "da" + "abc\n" + "ev" + "77"
        assert_eq!(p.buffered_bytes(), 2 + 4 + 2 + 2);
        assert_eq!(parse(&mut p, &[b"ta: d\n\n"]), vec![event("ev", "abc\nd", Some("77"))]);
        assert_eq!(p.buffered_bytes(), 0);
    }

    #[test]
    fn reset_drops_partial_event_but_keeps_last_event_id() {
        let mut p = SseParser::default();
        let out = parse(&mut p, &[b"id: 7\ndata: x\n\nid: 8\nevent: e\ndata: partial"]);
        assert_eq!(out, vec![event("message", "x", Some("7"))]);
        assert!(p.buffered_bytes() > 0);
        p.reset();
        assert_eq!(p.buffered_bytes(), 0);
        assert_eq!(p.last_event_id(), Some("8"));
        assert_eq!(
            parse(&mut p, &[b"\xEF\xBB\xBF\ndata: y\n\n"]),
            vec![event("message", "y", None)]
        );
    }
}
