//! Found by mutation testing: three mutants of `Dechunker` survived its unit tests.
//! - `_ if line.is_empty() => Done` guard → `true`: a trailer line ended the body (done() before
//!   the final CRLF arrived);
//! - `b'\r' if self.line.is_empty()` guard → `true`: `data\r\r\n` was taken as the CRLF;
//! - `take_line`'s `>` → `>=`: a line of exactly `MAX_CHUNK_LINE` bytes was refused.
//! - `chunk_size`'s `hex.len() > 15` → `==`, `>=`, and its `||` → `&&`: no test sized a chunk
//!   with fifteen or sixteen hex digits.

use agentwire_core::http::{Dechunker, MAX_CHUNK_LINE};

fn feed_all(pieces: &[&[u8]]) -> (Result<(), String>, Vec<u8>, bool) {
    let mut d = Dechunker::default();
    let mut out = Vec::new();
    for p in pieces {
        if let Err(e) = d.feed(p, &mut out) {
            return (Err(e), out, d.done());
        }
    }
    (Ok(()), out, d.done())
}

#[test]
fn a_trailer_line_does_not_end_the_body() {
    let (r, out, done) = feed_all(&[b"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n"]);
    assert_eq!((r, out.as_slice(), done), (Ok(()), &b"abc"[..], false));
    let (r, _, done) = feed_all(&[b"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n", b"\r\n"]);
    assert_eq!((r, done), (Ok(()), true));
}

#[test]
fn only_one_cr_before_the_lf_after_data() {
    let (r, _, _) = feed_all(&[b"3\r\nabc\r\r\n0\r\n\r\n"]);
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn a_line_of_exactly_the_bound_is_read() {
    // The line as take_line counts it: up to the LF, its CR included.
    let mut line = b"3;".to_vec();
    line.resize(MAX_CHUNK_LINE - 1, b'x');
    line.push(b'\r');
    assert_eq!(line.len(), MAX_CHUNK_LINE);
    let raw = [line.as_slice(), b"\nabc\r\n0\r\n\r\n"].concat();
    let (r, out, done) = feed_all(&[&raw]);
    assert_eq!((r, out.as_slice(), done), (Ok(()), &b"abc"[..], true));
    // One byte more is refused.
    let mut long = line.clone();
    long.insert(2, b'x');
    let raw = [long.as_slice(), b"\nabc\r\n0\r\n\r\n"].concat();
    assert!(feed_all(&[&raw]).0.is_err());
}

#[test]
fn a_size_of_fifteen_hex_digits_is_read_and_sixteen_refused() {
    // Fifteen digits: a chunk this large opens, and its first bytes come out.
    let (r, out, done) = feed_all(&[b"fffffffffffffff\r\nabc"]);
    assert_eq!((r, out.as_slice(), done), (Ok(()), &b"abc"[..], false));
    // Sixteen significant digits, though the value fits a u64: refused.
    for size in [&b"1000000000000000"[..], b"ffffffffffffffff"] {
        let raw = [size, b"\r\nabc\r\n0\r\n\r\n"].concat();
        let (r, out, _) = feed_all(&[&raw]);
        assert!(r.is_err() && out.is_empty(), "{size:?}: {r:?}");
    }
}

#[test]
fn leading_zeros_of_a_chunk_size_do_not_count_toward_its_bound() {
    // RFC 9112 §7.1: chunk-size = 1*HEXDIG, any length. A small size padded
    // with zeros is read, however many.
    let forty = [&[b'0'; 39][..], b"3"].concat();
    for size in [&b"0000000000000003"[..], &forty] {
        let raw = [size, b"\r\nabc\r\n0000000000000000000\r\n\r\n"].concat();
        let (r, out, done) = feed_all(&[&raw]);
        assert_eq!((r, out.as_slice(), done), (Ok(()), &b"abc"[..], true), "{size:?}");
    }
    // Padding does not hide a real overflow: sixteen significant digits after
    // the zeros are refused, with the same words.
    let padded = [&[b'0'; 24][..], b"1000000000000000"].concat();
    let raw = [padded.as_slice(), b"\r\nabc\r\n0\r\n\r\n"].concat();
    let (r, out, _) = feed_all(&[&raw]);
    let err = r.expect_err("sixteen significant digits");
    assert!(err.starts_with("bad chunk size"), "{err}");
    assert!(out.is_empty());
}
