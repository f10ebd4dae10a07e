//! CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and
//! final xor !0), the checksum of every block in the stripe format
//! (`docs/stripe-format.md`) and the file checksum `crc32c`. Engines: ISA-L's
//! `crc32_iscsi` (feature `isal`; ~50 GB/s here, 2.5x the `crc32c` crate,
//! `docs/benchmarks.md`) and a portable table one, which gives the same
//! values (tested against each other and against the `crc32c` crate).

/// The Castagnoli polynomial, bit-reflected (as the CRC register holds it).
pub const POLY: u32 = 0x82F6_3B78;

/// CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// CRC-32C of the bytes `crc` is the CRC-32C of, followed by `data`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    #[cfg(feature = "isal")]
    {
        crate::isal::crc32c_append(crc, data)
    }
    #[cfg(not(feature = "isal"))]
    {
        portable(crc, data)
    }
}

/// The byte-at-a-time table engine (where ISA-L is not linked; the
/// reference in tests).
pub fn portable(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in data {
        c = TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

const TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn check_values() {
        // The CRC-32C check value, and the empty input.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(portable(0, b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c_append(0x1234_5678, b""), 0x1234_5678);
        let big: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        assert_eq!(crc32c(&big), ::crc32c::crc32c(&big));
        assert_eq!(crc32c(&big), portable(0, &big));
    }

    proptest! {
        #[test]
        fn engines_agree_whole_and_appended(data in proptest::collection::vec(any::<u8>(), 0..20_000), cut in 0usize..20_000) {
            let cut = cut.min(data.len());
            let whole = ::crc32c::crc32c(&data);
            prop_assert_eq!(crc32c(&data), whole);
            prop_assert_eq!(portable(0, &data), whole);
            prop_assert_eq!(crc32c_append(crc32c(&data[..cut]), &data[cut..]), whole);
            prop_assert_eq!(portable(portable(0, &data[..cut]), &data[cut..]), whole);
        }
    }
}
