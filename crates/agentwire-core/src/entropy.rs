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
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
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

    #[test]
    fn fill_handles_odd_lengths() {
        let mut e = SeededEntropy::new(1);
        let mut buf = [0u8; 13];
        e.fill(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
    }
}
