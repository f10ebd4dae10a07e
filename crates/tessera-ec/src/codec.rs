//! The codec: encode k data shards into m parity shards, and rebuild any
//! missing shards from any k present ones.

use crate::{gf, matrix};

/// Most shards (k + m) a layout may have.
pub const MAX_SHARDS: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EcError {
    #[error("invalid layout {k}+{m} (need k >= 1, m >= 0, k + m <= {MAX_SHARDS})")]
    Layout { k: usize, m: usize },
    #[error("need at least {need} of {total} shards, have {have}")]
    TooFewShards {
        need: usize,
        have: usize,
        total: usize,
    },
    #[error("shard shapes do not match the layout: {0}")]
    Shape(String),
}

/// Which kernels do the arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Debian's libisal (SIMD).
    #[cfg(feature = "isal")]
    Isal,
    /// Portable table-driven Rust.
    Rust,
}

impl Engine {
    /// The fastest engine this build has.
    pub fn best() -> Engine {
        #[cfg(feature = "isal")]
        {
            Engine::Isal
        }
        #[cfg(not(feature = "isal"))]
        {
            Engine::Rust
        }
    }
}

/// Coefficient rows prepared for one engine.
enum Prepared {
    #[cfg(feature = "isal")]
    Isal(crate::isal::Tables),
    Rust {
        k: usize,
        rows: Vec<Vec<u8>>,
    },
}

impl Prepared {
    fn new(engine: Engine, coeffs: &[u8], k: usize, rows: usize) -> Prepared {
        match engine {
            #[cfg(feature = "isal")]
            Engine::Isal => Prepared::Isal(crate::isal::Tables::new(coeffs, k, rows)),
            Engine::Rust => Prepared::Rust {
                k,
                rows: coeffs
                    .chunks(k.max(1))
                    .take(rows)
                    .map(|r| r.to_vec())
                    .collect(),
            },
        }
    }

    fn apply(&self, srcs: &[&[u8]], outs: &mut [&mut [u8]], len: usize) {
        match self {
            #[cfg(feature = "isal")]
            Prepared::Isal(t) => t.apply(srcs, outs, len),
            Prepared::Rust { k, rows } => {
                debug_assert_eq!(srcs.len(), *k);
                for (row, out) in rows.iter().zip(outs.iter_mut()) {
                    let out = &mut out[..len];
                    out.fill(0);
                    for (c, src) in row.iter().zip(srcs) {
                        let src = &src[..len];
                        match *c {
                            0 => {}
                            1 => out.iter_mut().zip(src).for_each(|(o, s)| *o ^= s),
                            c => {
                                let t = gf::mul_table(c);
                                out.iter_mut()
                                    .zip(src)
                                    .for_each(|(o, s)| *o ^= t[*s as usize]);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A k+m Reed–Solomon code.
pub struct Codec {
    k: usize,
    m: usize,
    engine: Engine,
    /// (k+m) × k generator matrix (identity on top).
    matrix: Vec<u8>,
    parity: Prepared,
}

impl Codec {
    pub fn new(k: usize, m: usize) -> Result<Codec, EcError> {
        Codec::with_engine(k, m, Engine::best())
    }

    pub fn with_engine(k: usize, m: usize, engine: Engine) -> Result<Codec, EcError> {
        if k == 0 || k + m > MAX_SHARDS {
            return Err(EcError::Layout { k, m });
        }
        let matrix = matrix::cauchy(k, m);
        let parity = Prepared::new(engine, &matrix[k * k..], k, m);
        Ok(Codec {
            k,
            m,
            engine,
            matrix,
            parity,
        })
    }

    pub fn data_shards(&self) -> usize {
        self.k
    }

    pub fn parity_shards(&self) -> usize {
        self.m
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The generator matrix ((k+m) × k, row-major).
    pub fn matrix(&self) -> &[u8] {
        &self.matrix
    }

    /// Compute the m parity shards of k equal-length data shards.
    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) -> Result<(), EcError> {
        if data.len() != self.k || parity.len() != self.m {
            return Err(EcError::Shape(format!(
                "{} data and {} parity shards for {}+{}",
                data.len(),
                parity.len(),
                self.k,
                self.m
            )));
        }
        let len = data[0].len();
        if data.iter().any(|d| d.len() != len) || parity.iter().any(|p| p.len() != len) {
            return Err(EcError::Shape("shards of different lengths".into()));
        }
        check_len(len)?;
        self.parity.apply(data, parity, len);
        Ok(())
    }

    /// Rebuild the shards not marked `present`, in place, from any k
    /// present ones. All shards have the same length.
    pub fn reconstruct(&self, shards: &mut [&mut [u8]], present: &[bool]) -> Result<(), EcError> {
        let n = self.k + self.m;
        if shards.len() != n || present.len() != n {
            return Err(EcError::Shape(format!(
                "{} shards for {}+{}",
                shards.len(),
                self.k,
                self.m
            )));
        }
        let len = shards[0].len();
        if shards.iter().any(|s| s.len() != len) {
            return Err(EcError::Shape("shards of different lengths".into()));
        }
        check_len(len)?;
        let have = present.iter().filter(|p| **p).count();
        if have < self.k {
            return Err(EcError::TooFewShards {
                need: self.k,
                have,
                total: n,
            });
        }
        let missing: Vec<usize> = (0..n).filter(|i| !present[*i]).collect();
        if missing.is_empty() {
            return Ok(());
        }
        // Prefer data shards as sources: fewer multiplications.
        let chosen: Vec<usize> = (0..n).filter(|i| present[*i]).take(self.k).collect();
        let k = self.k;
        let sub: Vec<u8> = chosen
            .iter()
            .flat_map(|&r| self.matrix[r * k..(r + 1) * k].iter().copied())
            .collect();
        let inv = matrix::invert(&sub, k).ok_or_else(|| {
            EcError::Shape("decode matrix is singular (cannot happen for Cauchy)".into())
        })?;
        // Row for a missing shard i, over the chosen sources:
        // generator row i × inv (a data row i of the identity gives inv[i]).
        let rows: Vec<u8> = missing
            .iter()
            .flat_map(|&i| matrix::multiply(&self.matrix[i * k..(i + 1) * k], &inv, 1, k, k))
            .collect();
        let prepared = Prepared::new(self.engine, &rows, k, missing.len());
        // Split the shard slice into sources (read) and outputs (written).
        let mut srcs: Vec<&[u8]> = Vec::with_capacity(k);
        let mut outs: Vec<&mut [u8]> = Vec::with_capacity(missing.len());
        let mut src_slots: Vec<Option<&[u8]>> = vec![None; n];
        for (i, s) in shards.iter_mut().enumerate() {
            if present[i] {
                src_slots[i] = Some(&**s);
            } else {
                outs.push(&mut **s);
            }
        }
        for &c in &chosen {
            srcs.push(src_slots[c].expect("chosen shards are present"));
        }
        prepared.apply(&srcs, &mut outs, len);
        Ok(())
    }
}

fn check_len(len: usize) -> Result<(), EcError> {
    if len > i32::MAX as usize {
        return Err(EcError::Shape("shard longer than 2 GiB".into()));
    }
    Ok(())
}
