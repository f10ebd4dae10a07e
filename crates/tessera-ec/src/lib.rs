//! Reed–Solomon erasure coding over GF(2^8) (polynomial 0x11D), with the
//! systematic Cauchy generator matrix of ISA-L's `gf_gen_cauchy1_matrix`:
//! the first k rows are the identity, row `i >= k` has `1 / (i ^ j)` in
//! column `j`. The matrix is part of Tessera's stored format forever
//! (`docs/stripe-format.md`): both engines here produce the same bytes.
//!
//! Engines: ISA-L (Debian's libisal, SIMD kernels; feature `isal`, the
//! default) and a portable Rust one used as the reference in tests and
//! where ISA-L is not linked. The CRC-32C of the stripe format comes from
//! here too ([`crc`]), with the same two engines.

mod codec;
pub mod crc;
mod gf;
#[cfg(feature = "isal")]
mod isal;
mod matrix;

pub use codec::{Codec, EcError, Engine, MAX_SHARDS};
pub use crc::{crc32c, crc32c_append};
