//! An incremental decoder of HTTP/1.1 `chunked` bodies: bytes in, split anywhere; data out.
//! Lines are bounded, so a hostile server cannot make it hold more than [`MAX_CHUNK_LINE`].

/// Longest chunk-size line or trailer line of a chunked body.
pub const MAX_CHUNK_LINE: usize = 4 << 10;

/// An incremental decoder of a `chunked` body: bytes in (split anywhere), data out.
#[derive(Debug, Default)]
pub struct Dechunker {
    state: ChunkState,
    /// The size or trailer line read so far.
    line: Vec<u8>,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum ChunkState {
    /// Reading a chunk-size line.
    #[default]
    Size,
    /// This many data bytes left in the chunk.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk, up to an empty one.
    Trailer,
    Done,
}

impl Dechunker {
    /// Whether the last chunk and its trailer have been read: the body is whole.
    pub fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Decodes `input`, appending the body's data to `out`. Bytes after the body's end are
    /// ignored. An error names what was malformed; the decoder is then of no further use.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        while !input.is_empty() {
            match self.state {
                ChunkState::Done => return Ok(()),
                ChunkState::Data(left) => {
                    let take = left.min(input.len() as u64) as usize;
                    out.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    self.state = if left == take as u64 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left - take as u64)
                    };
                }
                ChunkState::DataEnd => {
                    match input[0] {
                        b'\r' if self.line.is_empty() => self.line.push(b'\r'),
                        b'\n' => {
                            self.line.clear();
                            self.state = ChunkState::Size;
                        }
                        _ => return Err("chunk data is not followed by CRLF".into()),
                    }
                    input = &input[1..];
                }
                ChunkState::Size | ChunkState::Trailer => {
                    let Some(end) = input.iter().position(|&b| b == b'\n') else {
                        self.take_line(input)?;
                        return Ok(());
                    };
                    self.take_line(&input[..end])?;
                    input = &input[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    self.state = match self.state {
                        ChunkState::Size => match chunk_size(line)? {
                            0 => ChunkState::Trailer,
                            n => ChunkState::Data(n),
                        },
                        _ if line.is_empty() => ChunkState::Done,
                        _ => ChunkState::Trailer,
                    };
                }
            }
        }
        Ok(())
    }

    fn take_line(&mut self, part: &[u8]) -> Result<(), String> {
        if self.line.len() + part.len() > MAX_CHUNK_LINE {
            return Err(format!("a chunk line over {MAX_CHUNK_LINE} bytes"));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }
}

fn chunk_size(line: &[u8]) -> Result<u64, String> {
    let text = std::str::from_utf8(line).map_err(|_| "chunk size is not text".to_owned())?;
    let hex = text.split(';').next().unwrap_or("").trim();
    // Hex digits only (`from_str_radix` alone takes a leading `+`), any number
    // of them (RFC 9112 §7.1 `1*HEXDIG`): leading zeros do not count toward the
    // bound of fifteen significant digits.
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("bad chunk size {text:?}"));
    }
    let significant = hex.trim_start_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    if significant.len() > 15 {
        return Err(format!("bad chunk size {text:?}"));
    }
    u64::from_str_radix(significant, 16).map_err(|_| format!("bad chunk size {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dechunk_all(raw: &[u8], step: usize) -> Result<(Vec<u8>, bool), String> {
        let mut d = Dechunker::default();
        let mut out = Vec::new();
        for piece in raw.chunks(step.max(1)) {
            d.feed(piece, &mut out)?;
        }
        Ok((out, d.done()))
    }

    #[test]
    fn chunked_bodies_split_anywhere() {
        let raw = b"3\r\n{\"e\r\n2;ext=1\r\n\"}\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for step in 1..raw.len() {
            assert_eq!(dechunk_all(raw, step).unwrap(), (b"{\"e\"}".to_vec(), true), "{step}");
        }
        let lf_only = b"3\n{\"e\n0\n\n";
        assert_eq!(dechunk_all(lf_only, 1).unwrap(), (b"{\"e".to_vec(), true));
        assert_eq!(dechunk_all(b"5\r\nab", 1).unwrap(), (b"ab".to_vec(), false));
        for bad in [
            &b"zz\r\n"[..],
            b"3\r\nabcX",
            b"fffffffffffffffff\r\n",
            b"+3\r\nabc\r\n",
            b"-0\r\n",
            b"0x3\r\n",
        ] {
            assert!(dechunk_all(bad, 1).is_err(), "{bad:?}");
        }
        assert!(dechunk_all(&[b'1'; 5000], 7).is_err(), "bounded size line");
    }

    proptest::proptest! {
        /// Any body, cut into chunks of any sizes (hex in either case, with or without an
        /// extension) and fed in pieces of any size, comes out whole.
        #[test]
        fn any_chunking_reads_back(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
            cuts in proptest::collection::vec(1usize..80, 1..20),
            upper: bool,
            ext: bool,
            step in 1usize..40,
        ) {
            let mut raw = Vec::new();
            let (mut at, mut cut) = (0, cuts.iter().cycle());
            while at < body.len() {
                let n = (*cut.next().unwrap()).min(body.len() - at);
                let size = if upper { format!("{n:X}") } else { format!("{n:x}") };
                raw.extend_from_slice(size.as_bytes());
                if ext {
                    raw.extend_from_slice(b";x=1");
                }
                raw.extend_from_slice(b"\r\n");
                raw.extend_from_slice(&body[at..at + n]);
                raw.extend_from_slice(b"\r\n");
                at += n;
            }
            raw.extend_from_slice(b"0\r\n\r\n");
            proptest::prop_assert_eq!(dechunk_all(&raw, step).unwrap(), (body, true));
        }
    }
}
