//! The ISA-L kernels (Debian `libisal-dev`): table setup and encode.
//! Tables are opaque, sized 32·k·rows as the library documents.
#![allow(unsafe_code)]

use std::os::raw::{c_int, c_uchar};

extern "C" {
    fn ec_init_tables(k: c_int, rows: c_int, a: *const c_uchar, gftbls: *mut c_uchar);
    fn ec_encode_data(
        len: c_int,
        k: c_int,
        rows: c_int,
        gftbls: *const c_uchar,
        data: *const *const c_uchar,
        coding: *mut *mut c_uchar,
    );
    #[cfg(test)]
    fn gf_gen_cauchy1_matrix(a: *mut c_uchar, m: c_int, k: c_int);
    fn crc32_iscsi(
        buffer: *const c_uchar,
        len: c_int,
        init_crc: std::os::raw::c_uint,
    ) -> std::os::raw::c_uint;
}

/// CRC-32C (see `crc.rs`) with ISA-L: `crc32_iscsi` works on the
/// un-inverted register, so the running CRC goes in and comes out
/// inverted; lengths beyond `c_int` are fed in pieces.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    for piece in data.chunks(1 << 30) {
        // SAFETY: `piece` is valid for its length, which fits in c_int.
        c = unsafe { crc32_iscsi(piece.as_ptr(), piece.len() as c_int, c) };
    }
    !c
}

/// Expanded multiplication tables for `rows` rows of `k` coefficients.
pub struct Tables {
    k: usize,
    rows: usize,
    tbl: Vec<u8>,
}

impl Tables {
    pub fn new(coeffs: &[u8], k: usize, rows: usize) -> Tables {
        assert_eq!(coeffs.len(), k * rows, "coefficient matrix shape");
        let mut tbl = vec![0u8; 32 * k * rows.max(1)];
        // SAFETY: `coeffs` holds k*rows bytes and `tbl` 32*k*rows bytes, the
        // sizes ec_init_tables reads and writes.
        unsafe { ec_init_tables(k as c_int, rows as c_int, coeffs.as_ptr(), tbl.as_mut_ptr()) };
        Tables { k, rows, tbl }
    }

    /// `outs[r] = sum_j coeff[r][j] * srcs[j]` over `len` bytes.
    pub fn apply(&self, srcs: &[&[u8]], outs: &mut [&mut [u8]], len: usize) {
        assert_eq!(srcs.len(), self.k);
        assert_eq!(outs.len(), self.rows);
        assert!(srcs.iter().all(|s| s.len() >= len) && outs.iter().all(|o| o.len() >= len));
        if len == 0 || self.rows == 0 {
            return;
        }
        let sp: Vec<*const u8> = srcs.iter().map(|s| s.as_ptr()).collect();
        let mut op: Vec<*mut u8> = outs.iter_mut().map(|o| o.as_mut_ptr()).collect();
        // SAFETY: k source and `rows` output pointers, each valid for `len`
        // bytes (checked above); the tables were built for this k × rows.
        unsafe {
            ec_encode_data(
                len as c_int,
                self.k as c_int,
                self.rows as c_int,
                self.tbl.as_ptr(),
                sp.as_ptr(),
                op.as_mut_ptr(),
            )
        };
    }
}

/// ISA-L's own Cauchy matrix, to prove ours is the same.
#[cfg(test)]
pub fn isal_cauchy(k: usize, m: usize) -> Vec<u8> {
    let mut a = vec![0u8; (k + m) * k];
    // SAFETY: `a` holds (k+m)*k bytes, the size gf_gen_cauchy1_matrix writes.
    unsafe { gf_gen_cauchy1_matrix(a.as_mut_ptr(), (k + m) as c_int, k as c_int) };
    a
}

#[cfg(test)]
mod tests {
    #[test]
    fn our_matrix_is_isals() {
        for (k, m) in [(1, 1), (2, 1), (4, 2), (8, 3), (10, 4), (16, 4), (28, 4)] {
            assert_eq!(
                super::isal_cauchy(k, m),
                crate::matrix::cauchy(k, m),
                "{k}+{m}"
            );
        }
    }
}
