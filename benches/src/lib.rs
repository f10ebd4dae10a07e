//! Benchmarks. Not tests: they measure and print; results with their
//! commands go into `docs/benchmarks.md`.

/// `len` bytes of xorshift noise from `seed` (data no codec or checksum
/// can take a shortcut on; the same bytes for the same seed).
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
