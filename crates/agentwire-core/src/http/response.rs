//! The head of an HTTP/1.1 answer: its status, its length and how its body is framed.

use crate::{Error, ErrorKind};

/// Most headers read from an answer's head.
const MAX_HEADERS: usize = 64;

/// A whole answer head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// The head's length in bytes, its blank line included: the body starts there.
    pub len: usize,
    pub framing: Framing,
}

/// How an answer's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body: a 1xx, 204 or 304 answer, or `Content-Length: 0`.
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`: read with a [`super::Dechunker`].
    Chunked,
    /// Up to the end of the connection.
    ToClose,
}

fn decode(m: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Decode, format!("HTTP answer: {m}"))
}

/// The answer's head, once `buf` holds all of it (`None` until then); a `decode` error names
/// what is malformed. The caller bounds how much it reads while this says `None`.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(decode(e)),
    };
    let status = response.code.ok_or_else(|| decode("no status"))?;
    // The transfer codings of every `Transfer-Encoding` header, in order: how many, how many
    // of them `chunked`, and whether the last is.
    let (mut codings, mut chunked, mut last_chunked) = (0usize, 0usize, false);
    let mut length = None;
    for h in response.headers.iter() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            for coding in h.value.split(|&b| b == b',') {
                let coding = coding.trim_ascii();
                if coding.is_empty() {
                    continue;
                }
                codings += 1;
                last_chunked = coding.eq_ignore_ascii_case(b"chunked");
                chunked += usize::from(last_chunked);
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .map(str::trim)
                .and_then(crate::decimal::parse_u64);
            let v = v.ok_or_else(|| decode("bad Content-Length"))?;
            // Two different lengths leave the body's end unknown (RFC 9112, 6.3).
            if length.is_some_and(|l| l != v) {
                return Err(decode("two different Content-Length headers"));
            }
            length = Some(v);
        }
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else if chunked > 1 {
        return Err(decode("chunked applied more than once"));
    } else if last_chunked {
        Framing::Chunked
    } else if codings > 0 {
        // RFC 9112, 6.3: a coding other than `chunked` last runs to the close, and overrides
        // any `Content-Length`.
        Framing::ToClose
    } else {
        match length {
            Some(0) => Framing::Empty,
            Some(n) => Framing::Length(n),
            None => Framing::ToClose,
        }
    };
    Ok(Some(Head { status, len, framing }))
}

/// Reads a head as its bytes arrive, for a driver that reads a socket: [`HeadReader::poll`]
/// after each read with everything read so far. [`parse_head`] reads the buffer from its start,
/// so calling it after every read costs the square of the head's length when the server sends
/// it a byte at a time (a 16 KiB head took 16,384 parses of 8 KiB on average); this parses only
/// once a blank line has arrived after the status line's first byte, or the buffer has doubled
/// since the last parse (so a malformed head is still refused within twice its bytes): at most
/// about three times the head's length is parsed in all.
#[derive(Debug, Default, Clone)]
pub struct HeadReader {
    /// The buffer's length at the last parse.
    parsed: usize,
    /// Bytes looked at for the blank line.
    searched: usize,
    /// A byte other than CR and LF was seen: empty lines before the status line are skipped.
    content: bool,
    /// After a line's LF: 1, and 2 after an LF and a CR.
    after_lf: u8,
    /// A blank line ends the head.
    ended: bool,
    /// Bytes handed to [`parse_head`] so far.
    bytes_parsed: u64,
}

impl HeadReader {
    pub fn new() -> HeadReader {
        HeadReader::default()
    }

    /// [`parse_head`] of `buf`, everything read so far (the last `poll`'s buffer with what came
    /// since appended), when it may have changed: `Ok(None)` while the head is not whole.
    pub fn poll(&mut self, buf: &[u8]) -> Result<Option<Head>, Error> {
        if buf.len() < self.searched {
            // Not the buffer it has seen grow: start again.
            *self = HeadReader::default();
        }
        for &b in &buf[self.searched..] {
            if self.ended {
                break;
            }
            if !self.content {
                self.content = !matches!(b, b'\r' | b'\n');
                continue;
            }
            (self.after_lf, self.ended) = match (self.after_lf, b) {
                (1 | 2, b'\n') => (0, true),
                (_, b'\n') => (1, false),
                (1, b'\r') => (2, false),
                _ => (0, false),
            };
        }
        self.searched = buf.len();
        let grown = buf.len() >= self.parsed.saturating_mul(2).max(1);
        if buf.len() == self.parsed || !(self.ended || grown) {
            return Ok(None);
        }
        self.parsed = buf.len();
        self.bytes_parsed += buf.len() as u64;
        parse_head(buf)
    }

    /// How many bytes [`parse_head`] was given so far, in all its calls.
    pub fn bytes_parsed(&self) -> u64 {
        self.bytes_parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Option<Head>, Error> {
        parse_head(text.as_bytes())
    }

    #[test]
    fn heads() {
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}").unwrap().unwrap();
        assert_eq!(
            h,
            Head {
                status: 200,
                len: 38,
                framing: Framing::Length(2)
            }
        );
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Chunked);
        assert_eq!(
            head("HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap().framing,
            Framing::ToClose
        );
        for empty in [
            "HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        ] {
            assert_eq!(head(empty).unwrap().unwrap().framing, Framing::Empty, "{empty}");
        }
        assert!(head("HTTP/1.1 200 OK\r\n").unwrap().is_none());
        assert!(head("garbage\r\n\r\n").is_err());
        assert!(head("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        for bad in ["+2", "-0", " ", "2 2", "0x2"] {
            let e = head(&format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}\r\n\r\n")).unwrap_err();
            assert_eq!(
                (e.kind, e.message.as_str()),
                (ErrorKind::Decode, "HTTP answer: bad Content-Length"),
                "{bad:?}"
            );
        }
        let twice = |a: u8, b: u8| format!("HTTP/1.1 200 OK\r\nContent-Length: {a}\r\nContent-Length: {b}\r\n\r\n");
        assert!(head(&twice(2, 3)).is_err());
        assert_eq!(head(&twice(2, 2)).unwrap().unwrap().framing, Framing::Length(2));
    }

    /// RFC 9112, 6.3: `chunked` frames the body only as the last coding; with another coding
    /// last the body runs to the close, whatever `Content-Length` says; `chunked` twice is
    /// refused (a sender must not apply it twice).
    #[test]
    fn transfer_codings() {
        let framing = |headers: &str| head(&format!("HTTP/1.1 200 OK\r\n{headers}\r\n")).map(|h| h.unwrap().framing);
        for chunked in [
            "Transfer-Encoding: chunked\r\n",
            "Transfer-Encoding: CHUNKED \r\n",
            "Transfer-Encoding: gzip, chunked\r\n",
            "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: ,chunked,\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        ] {
            assert_eq!(framing(chunked).unwrap(), Framing::Chunked, "{chunked:?}");
        }
        for to_close in [
            "Transfer-Encoding: gzip\r\n",
            "Transfer-Encoding: chunked, gzip\r\n",
            "Transfer-Encoding: xchunked\r\n",
            "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
        ] {
            assert_eq!(framing(to_close).unwrap(), Framing::ToClose, "{to_close:?}");
        }
        for twice in [
            "Transfer-Encoding: chunked, chunked\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        ] {
            let e = framing(twice).unwrap_err();
            assert_eq!(
                (e.kind, e.message.as_str()),
                (ErrorKind::Decode, "HTTP answer: chunked applied more than once"),
                "{twice:?}"
            );
        }
        // No body whatever the codings: a 1xx, 204 or 304 answer.
        for status in ["100 Continue", "103 Early Hints", "204 No Content", "304 Not Modified"] {
            let h = head(&format!(
                "HTTP/1.1 {status}\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n"
            ));
            assert_eq!(h.unwrap().unwrap().framing, Framing::Empty, "{status}");
        }
    }

    /// Every prefix of `raw` in turn, as a driver whose reads bring `step` bytes each: what the
    /// reader said first that was not `Ok(None)`, the prefix it said it at, and the bytes it parsed.
    fn trickle(raw: &[u8], step: usize) -> (Option<Result<Head, Error>>, usize, u64) {
        let mut r = HeadReader::new();
        let mut read = 0;
        while read < raw.len() {
            read = (read + step.max(1)).min(raw.len());
            match r.poll(&raw[..read]) {
                Ok(None) => {}
                Ok(Some(h)) => return (Some(Ok(h)), read, r.bytes_parsed()),
                Err(e) => return (Some(Err(e)), read, r.bytes_parsed()),
            }
        }
        (None, read, r.bytes_parsed())
    }

    /// A 16 KiB head (the native driver's bound) sent a byte at a time: parsed from its start
    /// for every byte, it cost 134 MB of parsing (64 ms); now at most three times its length,
    /// and its head is found at its last byte.
    #[test]
    fn a_head_trickled_byte_by_byte_is_not_parsed_again_for_every_byte() {
        let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
        while raw.len() < (16 << 10) - 300 {
            raw.extend_from_slice(b"x-pad: ");
            raw.extend(std::iter::repeat_n(b'a', 250));
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"content-length: 2\r\n\r\n");
        let (head, at, parsed) = trickle(&raw, 1);
        assert_eq!(head.unwrap().unwrap(), parse_head(&raw).unwrap().unwrap());
        assert_eq!(at, raw.len());
        assert!(
            parsed <= 3 * raw.len() as u64,
            "{parsed} bytes parsed for a head of {}",
            raw.len()
        );
        // Empty lines before the status line (which the parser skips) are no blank line that
        // ends the head: each of them is no reason to parse again.
        let raw = [b"\r\n".repeat(4 << 10).as_slice(), b"HTTP/1.1 204 No Content\n\n"].concat();
        let (head, at, parsed) = trickle(&raw, 1);
        assert_eq!(head.unwrap().unwrap().framing, Framing::Empty);
        assert_eq!(at, raw.len());
        assert!(
            parsed <= 3 * raw.len() as u64,
            "{parsed} bytes parsed for a head of {}",
            raw.len()
        );
    }

    /// A poll with nothing new read parses nothing, however often; a buffer shorter than the
    /// last one is not that buffer grown (the driver reads another answer into it): the reader
    /// starts again and reads it whole, from its first byte.
    #[test]
    fn a_poll_with_nothing_new_parses_nothing_and_a_shorter_buffer_starts_again() {
        let mut r = HeadReader::new();
        let cut = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        assert_eq!(r.poll(&cut[..20]).unwrap(), None);
        for _ in 0..3 {
            assert_eq!(r.poll(&cut[..30]).unwrap(), None);
            assert_eq!(r.bytes_parsed(), 20);
        }
        assert_eq!(r.poll(cut).unwrap(), None);
        assert_eq!(r.bytes_parsed(), 20 + cut.len() as u64);
        let whole = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert!(whole.len() < cut.len());
        assert_eq!(r.poll(whole).unwrap(), parse_head(whole).unwrap());
        assert_eq!(r.bytes_parsed(), whole.len() as u64);
    }

    /// A malformed head is still refused as it arrives: by the time twice its first bad byte has.
    #[test]
    fn a_trickled_malformed_head_is_refused_within_twice_its_bytes() {
        let raw = [b"HTTP/1.1 2x0 OK".as_slice(), &[b'a'; 4096]].concat();
        let (head, at, _) = trickle(&raw, 1);
        assert_eq!(head.unwrap().unwrap_err().kind, ErrorKind::Decode);
        assert!(at <= 2 * 11, "refused at byte {at}");
    }

    proptest::proptest! {
        /// Any bytes: no panic, and a complete head is no longer than what was read.
        #[test]
        fn any_head(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256), valid: bool) {
            let buf = if valid {
                [b"HTTP/1.1 200 OK\r\n".as_slice(), &bytes, b"\r\n\r\n"].concat()
            } else {
                bytes
            };
            if let Ok(Some(h)) = parse_head(&buf) {
                proptest::prop_assert!(h.len <= buf.len());
            }
        }

        /// Read in pieces of `step` bytes, the reader says what `parse_head` says of the prefix it
        /// says it at, and finds a whole head at the read that completes it.
        #[test]
        fn a_reader_says_what_parse_head_says(
            bytes in proptest::collection::vec(proptest::sample::select(b"HTP/1.0 20\r\n:ax".to_vec()), 0..200),
            valid: bool,
            step in 1usize..8,
        ) {
            let raw = if valid {
                [b"\r\nHTTP/1.1 200 OK\r\n".as_slice(), &bytes].concat()
            } else {
                bytes
            };
            let (said, at, _) = trickle(&raw, step);
            // The first read whose prefix parse_head completes or refuses.
            let reads = (1..).map(|k| (k * step).min(raw.len())).take(raw.len().div_ceil(step));
            let first = reads.map(|n| (n, parse_head(&raw[..n]))).find(|(_, r)| !matches!(r, Ok(None)));
            match (said, first) {
                (Some(Ok(h)), Some((n, Ok(Some(p))))) => proptest::prop_assert_eq!((h, at), (p, n)),
                (Some(Err(e)), Some((n, Err(p)))) => {
                    proptest::prop_assert_eq!(&e.message, &parse_head(&raw[..at]).unwrap_err().message);
                    proptest::prop_assert!(at >= n && p.kind == e.kind);
                }
                // A malformed head not yet refused: its buffer has not doubled since.
                (None, Some((_, Err(_)))) => {}
                (None, None) => {}
                (said, first) => proptest::prop_assert!(false, "reader {:?} at {}, parse_head {:?}", said, at, first),
            }
        }
    }
}
