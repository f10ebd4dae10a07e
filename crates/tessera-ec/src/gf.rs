//! GF(2^8) arithmetic with the polynomial x^8 + x^4 + x^3 + x^2 + 1
//! (0x11D), generator 2 — the field ISA-L uses. Tables are built at
//! compile time.

const POLY: u16 = 0x11D;

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & 0x100 != 0 {
            x ^= POLY;
        }
        i += 1;
    }
    let mut j = 255;
    while j < 512 {
        exp[j] = exp[j - 255];
        j += 1;
    }
    (exp, log)
}

const TABLES: ([u8; 512], [u8; 256]) = build_exp_log();
const EXP: [u8; 512] = TABLES.0;
const LOG: [u8; 256] = TABLES.1;

pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        return 0;
    }
    EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
}

/// Multiplicative inverse; `inv(0)` is 0 (as ISA-L's `gf_inv`).
pub fn inv(a: u8) -> u8 {
    if a == 0 {
        return 0;
    }
    EXP[255 - LOG[a as usize] as usize]
}

/// The 256-entry table of `c * x` for all x.
pub fn mul_table(c: u8) -> [u8; 256] {
    let mut t = [0u8; 256];
    for (x, v) in t.iter_mut().enumerate() {
        *v = mul(c, x as u8);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_laws() {
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1, "a={a}");
            assert_eq!(mul(a, 1), a);
        }
        // spot values of 0x11D arithmetic
        assert_eq!(mul(2, 0x80), 0x1D);
        assert_eq!(mul(3, 7), 9);
        for a in [3u8, 29, 200] {
            for b in [5u8, 77, 255] {
                assert_eq!(mul(a, b), mul(b, a));
            }
        }
    }
}
