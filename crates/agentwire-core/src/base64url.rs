//! Base64url without padding (RFC 4648 §5), strict on input.
//!
//! [`encode`] writes the URL-safe alphabet (`A-Z a-z 0-9 - _`) and no `=`. [`decode`] accepts
//! only what [`encode`] writes: no padding, no whitespace, no other alphabet, no length of the
//! form `4n + 1`, and the unused low bits of the last character zero, so every byte string has
//! exactly one encoding and every accepted text re-encodes to itself.

use std::fmt;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Why a text is not canonical unpadded base64url.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// A byte outside the alphabet (`=` included), at this offset.
    InvalidByte { index: usize },
    /// The length is `4n + 1`, which no byte string encodes to.
    InvalidLength,
    /// The last character carries bits that [`encode`] would have left zero.
    TrailingBits,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::InvalidByte { index } => {
                write!(f, "byte {index} is not in the base64url alphabet")
            }
            DecodeError::InvalidLength => f.write_str("base64url length of the form 4n+1"),
            DecodeError::TrailingBits => f.write_str("base64url with non-zero trailing bits (not canonical)"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The length of `encode` of `n` bytes.
pub const fn encoded_len(n: usize) -> usize {
    n / 3 * 4 + [0, 2, 3][n % 3]
}

/// `bytes` as unpadded base64url.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(encoded_len(bytes.len()));
    let push = |out: &mut String, sextet: u32| out.push(char::from(ALPHABET[(sextet & 63) as usize]));
    let mut chunks = bytes.chunks_exact(3);
    for c in &mut chunks {
        let n = u32::from(c[0]) << 16 | u32::from(c[1]) << 8 | u32::from(c[2]);
        for shift in [18, 12, 6, 0] {
            push(&mut out, n >> shift);
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            push(&mut out, n >> 18);
            push(&mut out, n >> 12);
        }
        [a, b] => {
            let n = u32::from(a) << 16 | u32::from(b) << 8;
            push(&mut out, n >> 18);
            push(&mut out, n >> 12);
            push(&mut out, n >> 6);
        }
        _ => {}
    }
    out
}

fn sextet(b: u8) -> Option<u32> {
    let v = match b {
        b'A'..=b'Z' => b - b'A',
        b'a'..=b'z' => b - b'a' + 26,
        b'0'..=b'9' => b - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// The bytes `text` encodes, if it is canonical unpadded base64url (see the module docs).
pub fn decode(text: &str) -> Result<Vec<u8>, DecodeError> {
    let b = text.as_bytes();
    if b.len() % 4 == 1 {
        // A byte outside the alphabet is the more useful report.
        return Err(first_invalid(b).unwrap_or(DecodeError::InvalidLength));
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3 + 2);
    let mut n = 0u32;
    let mut held = 0usize;
    for (index, &c) in b.iter().enumerate() {
        let v = sextet(c).ok_or(DecodeError::InvalidByte { index })?;
        n = n << 6 | v;
        held += 1;
        if held == 4 {
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
            n = 0;
            held = 0;
        }
    }
    match held {
        2 => {
            if n & 0xf != 0 {
                return Err(DecodeError::TrailingBits);
            }
            out.push((n >> 4) as u8);
        }
        3 => {
            if n & 0x3 != 0 {
                return Err(DecodeError::TrailingBits);
            }
            out.extend_from_slice(&[(n >> 10) as u8, (n >> 2) as u8]);
        }
        _ => {}
    }
    Ok(out)
}

fn first_invalid(b: &[u8]) -> Option<DecodeError> {
    b.iter()
        .position(|&c| sextet(c).is_none())
        .map(|index| DecodeError::InvalidByte { index })
}

#[cfg(test)]
mod tests {
    use super::{decode, encode, encoded_len, DecodeError};
    use proptest::prelude::*;

    #[test]
    fn rfc_4648_vectors_without_padding() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).unwrap(), plain.as_bytes());
        }
        assert_eq!(encode(&[0xfb, 0xff, 0xbf]), "-_-_");
        assert_eq!(decode("-_-_").unwrap(), [0xfb, 0xff, 0xbf]);
    }

    #[test]
    fn strict_on_input() {
        assert_eq!(decode("Zg=="), Err(DecodeError::InvalidByte { index: 2 }));
        assert_eq!(decode("Zm8="), Err(DecodeError::InvalidByte { index: 3 }));
        assert_eq!(decode("+/8"), Err(DecodeError::InvalidByte { index: 0 }));
        assert_eq!(decode("Zm 9v"), Err(DecodeError::InvalidByte { index: 2 }));
        assert_eq!(decode("Zm9vY"), Err(DecodeError::InvalidLength));
        assert_eq!(decode("Zm9v="), Err(DecodeError::InvalidByte { index: 4 }));
        assert_eq!(decode("Zh"), Err(DecodeError::TrailingBits));
        assert_eq!(decode("Zm9"), Err(DecodeError::TrailingBits));
        assert_eq!(decode("é"), Err(DecodeError::InvalidByte { index: 0 }));
        assert!(!DecodeError::TrailingBits.to_string().is_empty());
    }

    proptest! {
        #[test]
        fn roundtrip(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = encode(&bytes);
            prop_assert_eq!(text.len(), encoded_len(bytes.len()));
            prop_assert!(!text.contains('='));
            prop_assert_eq!(decode(&text).unwrap(), bytes);
        }

        #[test]
        fn accepted_text_is_canonical(text in "[A-Za-z0-9_=+/ -]{0,40}") {
            if let Ok(bytes) = decode(&text) {
                prop_assert_eq!(encode(&bytes), text);
            }
        }
    }
}
