//! Entropy as an input, so that every engine run is reproducible in tests.

/// A source of random bytes, supplied by the driver (`getrandom`, `crypto.getRandomValues`, or a
/// seed in tests).
pub trait Entropy {
    fn fill(&mut self, buf: &mut [u8]);

    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        u64::from_le_bytes(b)
    }

    /// A random UUID v4 in its lowercase hyphenated form.
    fn uuid_v4(&mut self) -> String {
        let mut b = [0u8; 16];
        self.fill(&mut b);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        // Written digit by digit: an id per message, so no formatting machinery per byte.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(36);
        for (i, x) in b.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out.push('-');
            }
            out.push(HEX[usize::from(x >> 4)] as char);
            out.push(HEX[usize::from(x & 0x0f)] as char);
        }
        out
    }
}

/// A deterministic generator (SplitMix64): the same seed gives the same bytes. Fine for ids and
/// jitter; not for secrets.
#[derive(Debug, Clone)]
pub struct SeededEntropy(u64);

impl SeededEntropy {
    pub fn new(seed: u64) -> Self {
        SeededEntropy(seed)
    }

    fn step(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Entropy for SeededEntropy {
    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.step().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

impl<E: Entropy + ?Sized> Entropy for Box<E> {
    fn fill(&mut self, buf: &mut [u8]) {
        (**self).fill(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_uuid_is_v4() {
        let (mut a, mut b) = (SeededEntropy::new(7), SeededEntropy::new(7));
        assert_eq!(a.uuid_v4(), b.uuid_v4());
        let u = a.uuid_v4();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(u, b.uuid_v4().replace('0', "x"));
    }

    /// Bytes 0, 1, 2, ...: the digits land where RFC 9562 puts them, version and variant set.
    struct Counting;

    impl Entropy for Counting {
        fn fill(&mut self, buf: &mut [u8]) {
            for (i, b) in buf.iter_mut().enumerate() {
                *b = i as u8 * 0x11;
            }
        }
    }

    #[test]
    fn uuid_digits_groups_version_and_variant() {
        assert_eq!(Counting.uuid_v4(), "00112233-4455-4677-8899-aabbccddeeff");
    }

    /// SplitMix64 as published (Vigna's `splitmix64.c`): the first outputs for seed 1234567.
    #[test]
    fn seeded_is_splitmix64() {
        let mut e = SeededEntropy::new(1_234_567);
        let got: Vec<u64> = (0..5).map(|_| e.next_u64()).collect();
        assert_eq!(
            got,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    /// A boxed source (what drivers hold) gives its inner source's bytes.
    #[test]
    fn a_box_fills_from_what_it_holds() {
        let mut boxed: Box<dyn Entropy> = Box::new(SeededEntropy::new(7));
        let mut inner = SeededEntropy::new(7);
        let (mut a, mut b) = ([0u8; 13], [0u8; 13]);
        boxed.fill(&mut a);
        inner.fill(&mut b);
        assert_eq!(a, b);
        assert_eq!(boxed.next_u64(), inner.next_u64());
    }

    #[test]
    fn fill_handles_odd_lengths() {
        let mut e = SeededEntropy::new(1);
        let mut buf = [0u8; 13];
        e.fill(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
    }
}
