//! Small matrices over GF(2^8), row-major.

use crate::gf;

/// ISA-L's `gf_gen_cauchy1_matrix(a, k + m, k)`.
pub fn cauchy(k: usize, m: usize) -> Vec<u8> {
    let rows = k + m;
    let mut a = vec![0u8; rows * k];
    for i in 0..k {
        a[i * k + i] = 1;
    }
    for i in k..rows {
        for j in 0..k {
            a[i * k + j] = gf::inv((i ^ j) as u8);
        }
    }
    a
}

/// Invert an n×n matrix (Gauss–Jordan); `None` if singular.
pub fn invert(m: &[u8], n: usize) -> Option<Vec<u8>> {
    let mut a = m.to_vec();
    let mut out = vec![0u8; n * n];
    for i in 0..n {
        out[i * n + i] = 1;
    }
    for col in 0..n {
        let pivot = (col..n).find(|&r| a[r * n + col] != 0)?;
        if pivot != col {
            for j in 0..n {
                a.swap(pivot * n + j, col * n + j);
                out.swap(pivot * n + j, col * n + j);
            }
        }
        let f = gf::inv(a[col * n + col]);
        for j in 0..n {
            a[col * n + j] = gf::mul(a[col * n + j], f);
            out[col * n + j] = gf::mul(out[col * n + j], f);
        }
        for r in 0..n {
            if r == col {
                continue;
            }
            let g = a[r * n + col];
            if g == 0 {
                continue;
            }
            for j in 0..n {
                a[r * n + j] ^= gf::mul(g, a[col * n + j]);
                out[r * n + j] ^= gf::mul(g, out[col * n + j]);
            }
        }
    }
    Some(out)
}

/// `a (r×n) * b (n×c)`.
pub fn multiply(a: &[u8], b: &[u8], r: usize, n: usize, c: usize) -> Vec<u8> {
    let mut out = vec![0u8; r * c];
    for i in 0..r {
        for j in 0..c {
            let mut acc = 0u8;
            for t in 0..n {
                acc ^= gf::mul(a[i * n + t], b[t * c + j]);
            }
            out[i * c + j] = acc;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_of_every_k_subset_exists_for_small_layouts() {
        // Every choice of k rows of the Cauchy matrix is invertible.
        for (k, m) in [(2, 1), (4, 2), (3, 3)] {
            let a = cauchy(k, m);
            let n = k + m;
            for mask in 0u32..(1 << n) {
                if mask.count_ones() as usize != k {
                    continue;
                }
                let rows: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
                let sub: Vec<u8> = rows
                    .iter()
                    .flat_map(|&r| a[r * k..(r + 1) * k].to_vec())
                    .collect();
                let inv = invert(&sub, k).expect("invertible");
                let id = multiply(&sub, &inv, k, k, k);
                for i in 0..k {
                    for j in 0..k {
                        assert_eq!(id[i * k + j], u8::from(i == j));
                    }
                }
            }
        }
    }
}
