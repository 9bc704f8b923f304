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
    }
}
