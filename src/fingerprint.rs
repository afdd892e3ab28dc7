//! A stable fingerprint of bytes, for results files: std's hashers are not stable across Rust
//! versions, so resumed and merged results could not be matched with them.

/// FNV-1a (64 bit) over `bytes`, as 16 hex digits.
pub fn fingerprint(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(bytes))
}

/// FNV-1a (64 bit) over `bytes` (Fowler, Noll & Vo; the published offset basis and prime).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
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
}
