//! A stable fingerprint of bytes, for results files: std's hashers are not stable across Rust
//! versions, so resumed and merged results could not be matched with them.

/// FNV-1a (64 bit) over `bytes`, as 16 hex digits.
pub fn fingerprint(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(bytes))
}

/// FNV-1a (64 bit) over `bytes` (Fowler, Noll & Vo; the published offset basis and prime).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a64::new();
    h.write(bytes);
    h.finish()
}

/// FNV-1a (64 bit) fed piece by piece: the same value as [`fnv1a64`] of the concatenation, with
/// no buffer holding it (a data set's rows are hashed in place).
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv1a64 {
    /// The published offset basis.
    pub fn new() -> Self {
        Fnv1a64(0xcbf2_9ce4_8422_2325)
    }
    /// Feeds `bytes`.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    /// The hash of everything fed so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn fnv1a_reference_values() {
        // The published FNV-1a 64 test vectors: "" and "a".
        assert_eq!(fingerprint(b""), "cbf29ce484222325");
        assert_eq!(fingerprint(b"a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn fed_in_pieces_is_the_hash_of_the_whole() {
        let mut h = super::Fnv1a64::new();
        h.write(b"foo");
        h.write(b"");
        h.write(b"bar");
        assert_eq!(h.finish(), super::fnv1a64(b"foobar"));
        assert_ne!(h.finish(), super::fnv1a64(b"barfoo"));
    }
}
