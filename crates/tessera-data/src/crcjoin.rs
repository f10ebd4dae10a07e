//! Joining CRC-32C values: the CRC of `A || B` from the CRCs of `A` and
//! `B` and the length of `B`. Appending `n` bytes multiplies the CRC
//! register by x^(8n) modulo the Castagnoli polynomial, so
//! `crc(A || B) = crc(A) * x^(8 |B|) + crc(B)` in GF(2)[x]/P (the pre- and
//! post-inversion cancel out). The factor for a length is computed once
//! (`Joiner::new`) and each join is then one 32-step product, instead of
//! the tens of microseconds `crc32c::crc32c_combine` spends rebuilding it
//! on every call.

use tessera_ec::crc::POLY;

/// The polynomial 1 in the reflected representation (x^0 is the top bit).
const ONE: u32 = 1 << 31;

/// `a * b mod P`, reflected representation.
fn mul(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    for bit in 0..32 {
        if a & (ONE >> bit) != 0 {
            product ^= b;
        }
        // b *= x
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    product
}

/// x^(8 * len) mod P, by squaring.
fn shift_of(len: u64) -> u32 {
    let mut result = ONE;
    // x^8: one byte.
    let mut power = mul(ONE >> 1, ONE >> 1); // x^2
    power = mul(power, power); // x^4
    power = mul(power, power); // x^8
    let mut n = len;
    while n != 0 {
        if n & 1 != 0 {
            result = mul(result, power);
        }
        power = mul(power, power);
        n >>= 1;
    }
    result
}

/// Joins CRCs of pieces that are `len` bytes long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Joiner {
    len: u64,
    shift: u32,
}

impl Joiner {
    pub fn new(len: u64) -> Joiner {
        Joiner {
            len,
            shift: shift_of(len),
        }
    }

    /// The length of the pieces it joins.
    pub fn piece_len(&self) -> u64 {
        self.len
    }

    /// The CRC of `A || B`, `B` being `len` bytes with CRC `crc_b`.
    pub fn join(&self, crc_a: u32, crc_b: u32) -> u32 {
        mul(self.shift, crc_a) ^ crc_b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_the_crc_of_the_concatenation() {
        let data: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (a, b) in [
            (0, 0),
            (0, 5),
            (5, 0),
            (1, 1),
            (3, 4096),
            (70_000 - 65_536, 65_536),
            (123, 45_678),
        ] {
            let (x, y) = (&data[..a], &data[a..a + b]);
            let j = Joiner::new(b as u64);
            assert_eq!(
                j.join(crc32c::crc32c(x), crc32c::crc32c(y)),
                crc32c::crc32c(&data[..a + b]),
                "{a} + {b}"
            );
            assert_eq!(
                j.join(crc32c::crc32c(x), crc32c::crc32c(y)),
                crc32c::crc32c_combine(crc32c::crc32c(x), crc32c::crc32c(y), b)
            );
        }
        // Large lengths (no data needed to compare with the crate's).
        for len in [1u64 << 20, 4 << 20, (1 << 32) + 7] {
            assert_eq!(
                Joiner::new(len).join(0x1234_5678, 0x9abc_def0),
                crc32c::crc32c_combine(0x1234_5678, 0x9abc_def0, len as usize)
            );
        }
    }
}
