//! The verified blocks of a reader's last short read, kept for the reads
//! that follow. A block's CRC covers the whole block (1 MiB by default), so
//! any read of a few KiB reads and verifies its whole block; a client that
//! reads a file in short pieces (ROOT without its cache, the XRootD Python
//! bindings, `kXR_read`s of 4 KiB) would read and verify each block once
//! per piece. A short read instead reads the whole blocks it touches, keeps
//! them, and answers from them while the next short reads fall inside.
//!
//! The bytes kept were verified when read, and a reader's file does not
//! change under it (a new write is a new file), so an answer from them is
//! what reading again would give. What all readers of a pool keep together
//! is bounded ([`MAX_KEPT`]); beyond it, short reads read as before.

use crate::readdata::{BufPool, ReadData};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Reads shorter than this are short.
pub const SHORT: usize = 512 << 10;
/// Bytes all readers sharing a pool keep at most.
pub const MAX_KEPT: usize = 64 << 20;

/// Bytes counted against a pool's [`MAX_KEPT`] until dropped.
struct Charge {
    bytes: usize,
    kept: Arc<AtomicUsize>,
}

impl Charge {
    fn take(kept: &Arc<AtomicUsize>, bytes: usize) -> Option<Charge> {
        let mut now = kept.load(Ordering::Relaxed);
        loop {
            if now + bytes > MAX_KEPT {
                return None;
            }
            match kept.compare_exchange_weak(now, now + bytes, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Some(Charge {
                        bytes,
                        kept: Arc::clone(kept),
                    })
                }
                Err(v) => now = v,
            }
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.kept.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

struct Kept {
    /// File bytes `from..to` are `data`.
    from: u64,
    to: u64,
    data: ReadData,
    _charge: Charge,
}

/// One reader's kept blocks.
#[derive(Default)]
pub(crate) struct Recent {
    kept: Mutex<Option<Kept>>,
}

impl Recent {
    /// `len` bytes at `offset` from the kept blocks, copied into a buffer
    /// of `pool`; `None` when they are not all there.
    pub fn serve(&self, offset: u64, len: usize, pool: &Arc<BufPool>) -> Option<ReadData> {
        let g = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let k = g.as_ref()?;
        let end = offset.checked_add(len as u64)?;
        if offset < k.from || end > k.to {
            return None;
        }
        Some(part(&k.data, offset - k.from, len, pool))
    }

    /// Keep `data` (file bytes from `from`) if the pool's bound allows;
    /// what was kept before is dropped either way.
    pub fn keep(&self, from: u64, data: ReadData, kept: &Arc<AtomicUsize>) {
        let mut g = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        *g = None;
        *g = Charge::take(kept, data.held()).map(|charge| Kept {
            from,
            to: from + data.len() as u64,
            data,
            _charge: charge,
        });
    }
}

/// `len` bytes of `d` from `at`, copied into a buffer of `pool`.
pub(crate) fn part(d: &ReadData, at: u64, len: usize, pool: &Arc<BufPool>) -> ReadData {
    let mut buf = pool.take(len);
    let filled = d.copy_from(at, &mut buf);
    buf.truncate(filled);
    let mut out = ReadData::new(Arc::clone(pool));
    let id = out.adopt(buf);
    out.push(id, 0, filled);
    for s in d.sums() {
        out.push_sums(s.clone());
    }
    out
}
